"""LiveList behind nginx, configured by docs/nginx.conf (run by test_proxy.sh; Scripts/setup installs nginx).

Starts, on free loopback ports and with temporary directories:
  - server A: the debug binary with --write-token and a one-second heartbeat, behind nginx A;
  - server B: the same binary without a write token, behind nginx B;
  - a header recorder (a tiny HTTP server) behind nginx C, to see what nginx sends upstream.
Each nginx runs docs/nginx.conf with only the values on its "# test: NAME" lines substituted, included
in a minimal main configuration (pid, error log and temporary paths in its own prefix), as a
foreground process. Everything started is stopped at the end; the whole run is bounded.
"""

import http.server
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import livelist_tools as tools  # Tools/python, installed by Scripts/setup

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

BINARY = os.environ.get("LIVELIST_BINARY", os.path.join(ROOT, ".build", "debug", "livelist"))
NGINX = tools.nginx_binary()
TOKEN = "proxy-test-token"
TIME_LIMIT = 120
# The lines of docs/nginx.conf the test may change, and how: marker -> (pattern on that line, replacement).
MARKERS = {
    "upstream": (r"\bserver\s+[^;\s]+;", lambda values: f"server 127.0.0.1:{values['upstream']};"),
    "listen": (r"\blisten\s+[^;]+;", lambda values: f"listen 127.0.0.1:{values['listen']};"),
    "access_log": (r"\baccess_log\s+\S+", lambda values: f"access_log {values['access_log']}"),
}

passed = []
cleanups = []


class TestFailure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def ok(message):
    passed.append(message)
    print(f"   ok: {message}", flush=True)


def wait_for_port(port, process, what, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise TestFailure(f"{what} exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TestFailure(f"{what} did not listen on 127.0.0.1:{port} within {seconds} s")


def stop(process, what, expect_zero=False):
    if not tools.stop_process(process, 10):
        raise TestFailure(f"{what} did not stop within 10 s of SIGTERM")
    if expect_zero and process.returncode != 0:
        raise TestFailure(f"{what} exited with status {process.returncode} after SIGTERM")


# ---------------------------------------------------------------- processes

def start_server(directory, name, arguments):
    """The livelist binary on a free loopback port (from its banner), stopped when the tests end."""
    server = tools.Server(BINARY, *arguments, data=os.path.join(directory, name), timeout=20, error=TestFailure)
    cleanups.append(lambda: stop(server.process, name))
    return server


def nginx_site(values):
    """docs/nginx.conf with the marked values substituted; fails when the markers drift."""
    with open(os.path.join(ROOT, "docs", "nginx.conf")) as file:
        lines = file.read().split("\n")
    seen = []
    for index, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            continue
        match = re.search(r"#\s*test:\s*(\S+)\s*$", line)
        if not match:
            check(not re.search(r"#\s*test:", line), f"docs/nginx.conf:{index + 1}: a malformed test marker")
            continue
        name = match[1]
        check(name in MARKERS, f"docs/nginx.conf:{index + 1}: unknown marker {name!r} (known: {sorted(MARKERS)})")
        check(name not in seen, f"docs/nginx.conf:{index + 1}: marker {name!r} appears twice")
        seen.append(name)
        pattern, replacement = MARKERS[name]
        directive = line[:match.start()]
        check(len(re.findall(pattern, directive)) == 1,
              f"docs/nginx.conf:{index + 1}: the {name} line no longer fits its substitution: {line.strip()}")
        lines[index] = re.sub(pattern, replacement(values), directive).rstrip()
    missing = sorted(set(MARKERS) - set(seen))
    check(not missing, f"docs/nginx.conf: markers missing: {missing}")
    text = "\n".join(lines)
    # What the events must not depend on the server for: the proxy itself never buffers them, and waits
    # longer than a heartbeat (15 s by default) before it gives up on a quiet stream.
    block = re.search(r"location\s+~\s+\S*events\S*\s*\{([^}]*)\}", text)
    check(block, "docs/nginx.conf: no location for the event streams")
    check(re.search(r"^\s*proxy_buffering\s+off;", block[1], re.M), "docs/nginx.conf: the events location lacks proxy_buffering off")
    timeout = re.search(r"^\s*proxy_read_timeout\s+(\d+)(s|m)?;", block[1], re.M)
    check(timeout and int(timeout[1]) * (60 if timeout[2] == "m" else 1) > 15,
          "docs/nginx.conf: the events location needs a proxy_read_timeout above the 15 s heartbeat")
    return text


class Nginx:
    """nginx in the foreground with docs/nginx.conf in front of `upstream`, in its own prefix."""

    def __init__(self, directory, name, upstream):
        self.prefix = os.path.join(directory, name)
        os.makedirs(self.prefix)
        os.chmod(self.prefix, 0o755)
        self.port = tools.free_port()
        self.access_log = os.path.join(self.prefix, "access.log")
        site = os.path.join(self.prefix, "livelist.conf")
        with open(site, "w") as file:
            file.write(nginx_site({"upstream": upstream, "listen": self.port, "access_log": self.access_log}))
        # The main configuration: only what a site file leaves to nginx.conf.
        main = os.path.join(self.prefix, "nginx.conf")
        with open(main, "w") as file:
            file.write(tools.nginx_conf(self.prefix, f"    include {site};", connections=256,
                                        error_log=os.path.join(self.prefix, "error.log"), log_level="info"))
        command = [NGINX, "-p", self.prefix + "/", "-e", os.path.join(self.prefix, "error.log"), "-c", main]
        tested = subprocess.run(command + ["-t"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
        check(tested.returncode == 0, f"nginx -t refuses docs/nginx.conf: {tested.stderr.strip()}")
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        cleanups.append(lambda: stop(self.process, f"nginx {name}"))
        wait_for_port(self.port, self.process, f"nginx {name}")

    def error_log(self):
        try:
            with open(os.path.join(self.prefix, "error.log")) as file:
                return file.read()[-3000:]
        except OSError:
            return ""


class Recorder:
    """An HTTP/1.1 upstream that records the requests nginx sends it and answers 200."""

    def __init__(self):
        self.requests = queue.Queue()
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def read_body(self):
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def answer(self):
                body = self.read_body()
                recorder.requests.put((self.command, self.path, self.request_version, dict(self.headers.items()),
                                       self.headers.get_all("X-Forwarded-For") or [], body))
                reply = b"recorded\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_GET = do_PUT = answer

            def log_message(self, *arguments):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        cleanups.append(self.server.shutdown)


# ---------------------------------------------------------------- HTTP

def request(port, method, path, body=None, headers=None):
    status, response_headers, answer = tools.request(port, method, path, body, headers, timeout=10)
    return status, response_headers, answer.decode()


def put(port, name, state, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return request(port, "PUT", f"/lists/{name}", json.dumps(state), headers)


def state(*texts):
    return {"sections": [{"id": "s", "cells": [{"id": f"c{index}", "text": text} for index, text in enumerate(texts)]}]}


class EventStream(tools.EventStream):
    """An SSE stream through the proxy, closed when the tests end."""

    def __init__(self, port, path, headers=None):
        super().__init__("127.0.0.1", port, path, headers, error=TestFailure)
        cleanups.append(self.close)


# ---------------------------------------------------------------- the tests

def test_pages_and_json(proxy):
    status, headers, body = request(proxy.port, "GET", "/")
    check(status == 200 and "text/html" in headers.get("Content-Type", ""), f"GET / through nginx: {status}")
    status, headers, body = request(proxy.port, "GET", "/lists/todo")
    check(status == 200 and 'data-list="todo"' in body, f"GET /lists/todo through nginx: {status}")
    script = re.search(r"/livelist\.js\?v=[0-9a-f]+", body)
    check(script and request(proxy.port, "GET", script[0])[0] == 200, "the page's script through nginx")
    status, headers, body = request(proxy.port, "GET", "/lists/todo", headers={"Accept": "application/json"})
    check(status == 200 and "application/json" in headers.get("Content-Type", ""), f"JSON of /lists/todo through nginx: {status}")
    check(json.loads(body).get("list") == "todo", "the JSON snapshot names its list")
    check(request(proxy.port, "GET", "/healthz")[:1] == (200,), "GET /healthz through nginx")
    ok("page, client script, JSON snapshot and /healthz pass through nginx")


def test_writes_with_token(proxy):
    status, headers, body = put(proxy.port, "proxied", state("one"))
    check(status == 401 and json.loads(body).get("error") == "unauthorized", f"PUT without the token through nginx: {status} {body}")
    status, _, body = put(proxy.port, "proxied", state("one"), token="wrong")
    check(status == 401, f"PUT with a wrong token through nginx: {status}")
    status, headers, body = put(proxy.port, "proxied", state("one"), token=TOKEN)
    check(status == 201 and headers.get("ETag") == '"1"', f"PUT with the token through nginx: {status} {body}")
    ok("PUT through nginx: 401 without or with a wrong token, 201 with the token")


def test_stream_unbuffered(proxy):
    stream = EventStream(proxy.port, "/lists/proxied/events")
    check(stream.response.status == 200 and stream.response.getheader("Content-Type", "").startswith("text/event-stream"),
          f"GET /lists/proxied/events through nginx: {stream.response.status}")
    # The heartbeat (one second on this server) comes through at once, as everything on the stream must.
    stream.next_event(3, kind="comment")
    for round in range(3):
        sent = time.monotonic()
        status, headers, _ = put(proxy.port, "proxied", state("one", f"two {round}"), token=TOKEN)
        check(status == 200, f"PUT replacing the list: {status}")
        version = headers["ETag"].strip('"')
        arrived, event_id, data = stream.next_event(2)
        check(event_id == version, f"the event after PUT version {version} has id {event_id}")
        check(json.loads(data)["version"] == int(version), "the event carries the new version")
        delay = arrived - sent
        check(delay < 0.5, f"the event arrived {delay:.2f} s after the PUT: buffered by the proxy?")
    stream.close()
    ok(f"events arrive through nginx at once (last after {delay * 1000:.0f} ms), heartbeats too")


def test_resume(proxy):
    # A list large enough that the server answers a resume with the changes rather than a reset (it
    # sends whichever is smaller).
    texts = [f"cell {index}" for index in range(40)]
    status, headers, _ = put(proxy.port, "resumable", state(*texts), token=TOKEN)
    check(status == 201, f"PUT creating the list to resume: {status}")
    version = int(headers["ETag"].strip('"'))
    for change in range(2):
        texts[change] = f"changed {change}"
        status, headers, _ = put(proxy.port, "resumable", state(*texts), token=TOKEN)
    latest = int(headers["ETag"].strip('"'))
    check(latest == version + 2, f"two more versions after {version}: {latest}")
    stream = EventStream(proxy.port, "/lists/resumable/events", headers={"Last-Event-ID": str(version)})
    _, event_id, data = stream.next_event(3)
    changeset = json.loads(data)
    check(event_id == str(latest) and changeset["from"] == version and changeset["version"] == latest,
          f"resume from Last-Event-ID {version}: id {event_id}, from {changeset['from']}")
    check(all(op["op"] == "reload" for op in changeset["ops"]) and len(changeset["ops"]) == 2,
          f"resume through nginx sent {[op['op'] for op in changeset['ops']]}, not the two reloads")
    stream.close()
    # The multiplexed stream resumes the same way: its id is the version vector.
    stream = EventStream(proxy.port, "/events?list=resumable", headers={"Last-Event-ID": f"resumable:{version}"})
    _, event_id, data = stream.next_event(3)
    changeset = json.loads(data)
    check(event_id == f"resumable:{latest}" and changeset["from"] == version, f"multiplexed resume: id {event_id}")
    texts[2] = "changed 2"
    put(proxy.port, "resumable", state(*texts), token=TOKEN)
    _, event_id, _ = stream.next_event(2)
    check(event_id == f"resumable:{latest + 1}", f"the multiplexed stream goes on live: id {event_id}")
    stream.close()
    ok(f"resume through nginx: Last-Event-ID {version} gives the changes {version} to {latest}, on both kinds of stream")


def test_forwarded_headers(recorder_proxy, recorder):
    request(recorder_proxy.port, "GET", "/lists/x/events", headers={"Last-Event-ID": "7", "X-Forwarded-For": "203.0.113.9"})
    method, path, version, headers, forwarded, _ = recorder.requests.get(timeout=5)
    check(version == "HTTP/1.1", f"nginx speaks {version} to the upstream, not HTTP/1.1")
    check(headers.get("Last-Event-ID") == "7", "Last-Event-ID is not forwarded")
    check(forwarded == ["127.0.0.1"], f"X-Forwarded-For upstream is {forwarded}, expected only the client's address")
    check(headers.get("X-Real-IP") == "127.0.0.1", f"X-Real-IP upstream is {headers.get('X-Real-IP')}")
    check(headers.get("Connection", "").lower() != "close", "nginx closes upstream connections (no keep-alive)")
    request(recorder_proxy.port, "PUT", "/lists/x", body="{}", headers={"Authorization": "Bearer abc", "Content-Type": "application/json"})
    method, path, version, headers, forwarded, body = recorder.requests.get(timeout=5)
    check(method == "PUT" and headers.get("Authorization") == "Bearer abc" and body == b"{}", "a PUT with its token and body is forwarded")
    with open(recorder_proxy.access_log) as file:
        check("127.0.0.1" in file.read(), "the access log names the client")
    ok("upstream: HTTP/1.1 keep-alive, Last-Event-ID and Authorization forwarded, X-Forwarded-For set (a client's own replaced)")


def test_no_token_refuses_proxied_writes(directory):
    server = start_server(directory, "server-without-token", ["--no-demo"])
    proxy = Nginx(directory, "nginx-b", server.port)
    status, _, body = put(proxy.port, "proxied", state("one"))
    check(status == 403 and json.loads(body).get("error") == "writes_need_token", f"PUT through nginx to a server without a token: {status} {body}")
    status, _, body = request(proxy.port, "DELETE", "/lists/proxied")
    check(status == 403, f"DELETE through nginx to a server without a token: {status}")
    status, _, _ = put(server.port, "direct", state("one"))
    check(status == 201, f"PUT straight from loopback to the server without a token: {status}")
    ok("a server without a token refuses writes through nginx (403) and takes them from loopback (201)")
    stop(proxy.process, "nginx-b")
    stop(server.process, "server without a token", expect_zero=True)


def main():
    if not os.access(BINARY, os.X_OK):
        print(f"proxy test: {BINARY} is missing; build it first (swift build, or Scripts/test)", file=sys.stderr)
        return 1
    started = time.monotonic()
    directory = tempfile.mkdtemp(prefix="livelist-proxy-")
    os.chmod(directory, 0o755)
    proxies = []
    try:
        server = start_server(directory, "server-with-token", ["--write-token", TOKEN, "--heartbeat", "1"])
        proxy = Nginx(directory, "nginx-a", server.port)
        proxies.append(proxy)
        test_pages_and_json(proxy)
        test_writes_with_token(proxy)
        test_stream_unbuffered(proxy)
        test_resume(proxy)
        recorder = Recorder()
        recorder_proxy = Nginx(directory, "nginx-c", recorder.port)
        proxies.append(recorder_proxy)
        test_forwarded_headers(recorder_proxy, recorder)
        test_no_token_refuses_proxied_writes(directory)
        stop(proxy.process, "nginx-a")
        stop(server.process, "server with a token", expect_zero=True)
    except TestFailure as failure:
        print(f"proxy test FAILED: {failure}", file=sys.stderr)
        for proxy in proxies:
            log = proxy.error_log()
            if "[error]" in log or "[emerg]" in log:
                print(f"--- {proxy.prefix}/error.log\n{log}", file=sys.stderr)
        return 1
    finally:
        for cleanup in reversed(cleanups):
            try:
                cleanup()
            except Exception:
                pass
        shutil.rmtree(directory, ignore_errors=True)
    print(f"proxy test: {len(passed)} checks passed in {time.monotonic() - started:.1f} s", flush=True)
    return 0


def out_of_time(signum, frame):
    raise TestFailure(f"out of time ({TIME_LIMIT} s)")


def terminated(signum, frame):
    raise TestFailure(f"stopped by signal {signum}")


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, out_of_time)
    signal.signal(signal.SIGTERM, terminated)
    signal.alarm(TIME_LIMIT)
    sys.exit(main())
