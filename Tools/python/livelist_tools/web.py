"""One HTTP request on a connection of its own, and polling a server until it answers 200."""
import http.client
import time

import livelist_tools
from .paths import HOST


def connect(host, port, timeout):
    """An HTTP connection, or HTTPS when livelist_tools.TLS_CONTEXT (an ssl.SSLContext) is set: read at
    each call from the package, where a script sets it (`livelist_tools.TLS_CONTEXT = context`)."""
    context = livelist_tools.TLS_CONTEXT
    if context is not None:
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    return http.client.HTTPConnection(host, port, timeout=timeout)


def request(port, method, path, body=None, headers=None, timeout=30, host=HOST):
    """One request on a connection of its own: (status, headers, body bytes); the headers are an
    http.client.HTTPMessage (names case-insensitive, get_all for repeated ones)."""
    connection = connect(host, port, timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def wait_ready(port, path="/healthz", process=None, seconds=30, host=HOST, interval=0.1, error=RuntimeError):
    """Asks GET `path` until it answers 200 and returns the seconds that took; raises `error` when
    `process` (if given) exits first or after `seconds`."""
    began = time.monotonic()
    deadline = began + seconds
    last = "no answer"
    while True:
        if process is not None and process.poll() is not None:
            raise error(f"the server for port {port} exited with status {process.returncode}")
        try:
            status, _, _ = request(port, "GET", path, timeout=max(0.05, min(2.0, deadline - time.monotonic())), host=host)
            if status == 200:
                return time.monotonic() - began
            last = f"status {status}"
        except (OSError, http.client.HTTPException) as failure:
            last = str(failure) or type(failure).__name__
        if time.monotonic() > deadline:
            raise error(f"GET {path} on {host}:{port} did not answer 200 within {seconds:g} s (last: {last})")
        time.sleep(interval)
