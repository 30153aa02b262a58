#!/usr/bin/env python3
"""What the scripts of Scripts/ and the tests of Tests/Cluster and Tests/Proxy share, standard library only:

  free_port, stop_process, process_tree, memory_kib, raise_open_files   ports, processes, /proc
  release_dir, build_release, default_binary, nginx_binary              where the binaries are
  request, wait_ready                                                    one HTTP request; polling until 200
  Server                                                                 the livelist binary on a free port
  EventStream                                                            an SSE stream read on a thread
  CuttingProxy                                                           a TCP proxy that cuts its connections
  nginx_conf, create_database                                            nginx and PostgreSQL for tests

Everything listens on, or talks to, 127.0.0.1 unless told otherwise. Python imports it from beside it
(Tests/ put the Scripts folder on sys.path); shell scripts take a free port from it:

    python3 Scripts/livelist_tools.py free-port
"""
import argparse
import collections
import http.client
import os
import queue
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"
# The lock that every Swift build on the machine holds (Scripts/bench-http.sh, Scripts/check-examples.sh).
BUILD_LOCK = "/tmp/livelist-swift-build.lock"


# --- Ports, processes, /proc ----------------------------------------------------------------------------

def free_port(host=HOST):
    """A TCP port that is free on `host` now (the kernel's choice)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def stop_process(process, seconds=20, kill=False):
    """SIGTERM (SIGKILL with `kill`) and a wait of `seconds`, then SIGKILL. True when the process ended on
    the first signal in time (or had ended before), False when it had to be killed."""
    if process.poll() is not None:
        return True
    process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False


def process_tree(pid):
    """`pid` and its children (nginx's workers)."""
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return [pid]
    return [pid] + [int(child) for child in out.split()]


def memory_kib(pid, field="VmRSS"):
    """A field of /proc/PID/status in KiB: VmRSS (resident memory) by default, VmHWM for its peak."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


def raise_open_files(wanted):
    """Raises this process's RLIMIT_NOFILE to `wanted` (the servers it starts inherit it): the hard limit
    too where allowed (as root), else up to the hard limit. Returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return soft
    if hard != resource.RLIM_INFINITY and hard < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            return wanted
        except (ValueError, OSError):  # raising the hard limit needs CAP_SYS_RESOURCE
            wanted = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return wanted


# --- Binaries -------------------------------------------------------------------------------------------

def release_dir(package=ROOT):
    """Where `swift build -c release` puts the products of `package` (SwiftPM's .build/release link)."""
    return os.path.join(package, ".build", "release")


def build_release(package=ROOT, product=None):
    """`swift build -c release` of `package` (one product, or all) under the machine-wide build lock,
    its output on standard error. Returns release_dir(package)."""
    command = ["flock", BUILD_LOCK, "swift", "build", "-c", "release", "--package-path", package]
    subprocess.run(command + (["--product", product] if product else []), check=True, stdout=sys.stderr, timeout=3600)
    return release_dir(package)


def default_binary():
    """The livelist binary the scripts run: $LIVELIST_BINARY, else the release build."""
    return os.environ.get("LIVELIST_BINARY") or os.path.join(release_dir(), "livelist")


def nginx_binary():
    """$LIVELIST_NGINX, else nginx on PATH, else Debian's /usr/sbin/nginx."""
    return os.environ.get("LIVELIST_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"


# --- HTTP -----------------------------------------------------------------------------------------------

# When set (an ssl.SSLContext), request() and EventStream speak HTTPS with it.
TLS_CONTEXT = None


def connect(host, port, timeout):
    """An HTTP connection, or HTTPS with TLS_CONTEXT when that is set."""
    if TLS_CONTEXT is not None:
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=TLS_CONTEXT)
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


# --- The server -----------------------------------------------------------------------------------------

class Server:
    """The livelist binary on 127.0.0.1. It picks its own port (`--port 0`), read from its banner
    ("serving on http://127.0.0.1:PORT", logged at the info level, which it is started with: an `extra`
    --log-level above info hides the banner). Its data folder is `data`, or a temporary one that close()
    removes; Public/ and Templates/ are this checkout's unless `resources` is false. Its output is read
    on a thread, the last lines kept for failure reports (log_text). `prefix` goes before the command
    (taskset, say). Failing to start raises `error`. Stopped by stop(), close() or the end of `with`."""

    def __init__(self, binary, *extra, data=None, env=None, prefix=(), resources=True, timeout=30, error=RuntimeError):
        self.data = data or tempfile.mkdtemp(prefix="livelist-script-")
        self.owns_data = data is None
        self.lines = collections.deque(maxlen=400)
        self.port = None
        command = [*prefix, binary, "--host", HOST, "--port", "0", "--data", self.data, "--log-level", "info"]
        if resources:
            command += ["--public", os.path.join(ROOT, "Public"), "--templates", os.path.join(ROOT, "Templates")]
        self.started = time.monotonic()
        self.process = subprocess.Popen(command + list(extra), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, env=env)
        announced = queue.Queue()
        threading.Thread(target=self._read_output, args=(announced,), daemon=True).start()
        try:
            self.port = announced.get(timeout=timeout)
        except queue.Empty:
            pass
        if self.port is None:
            try:
                exited = self.process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                exited = None
            self.close(kill=True)
            why = f"exited with status {exited}" if exited is not None else f"announced no port within {timeout:g} s"
            raise error(f"{binary} {why}: {self.log_text()}")

    def _read_output(self, announced):
        """Keeps reading the server's output, so that it never blocks on a full pipe."""
        for line in iter(self.process.stderr.readline, b""):
            text = line.decode(errors="replace")
            self.lines.append(text)
            if self.port is None:
                found = re.search(r"serving on http://127\.0\.0\.1:(\d+)", text)
                if found:
                    announced.put(int(found.group(1)))
        announced.put(None)

    def log_text(self, limit=3000):
        """The end of what the server wrote."""
        return "".join(self.lines)[-limit:]

    def stop(self, kill=False, seconds=20):
        """See stop_process."""
        return stop_process(self.process, seconds, kill)

    def close(self, kill=False):
        self.stop(kill)
        if self.owns_data:
            shutil.rmtree(self.data, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


# --- Server-Sent Events ---------------------------------------------------------------------------------

class EventStream:
    """An SSE stream read on a thread: every line with its arrival time, in a queue. Failures raise
    `error` (the calling script's own exception type)."""

    def __init__(self, host, port, path, headers=None, error=AssertionError):
        self.error = error
        self.connection = connect(host, port, 30)
        self.connection.request("GET", path, headers=dict({"Accept": "text/event-stream"}, **(headers or {})))
        self.response = self.connection.getresponse()
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            while True:
                line = self.response.readline()
                if not line:
                    break
                self.lines.put((time.monotonic(), line.decode().rstrip("\r\n")))
        except Exception:  # closed under the reader: the stream is over
            pass
        self.lines.put((time.monotonic(), None))

    def next_event(self, seconds, kind="patch"):
        """The next event of `kind` as (arrival time, id, data), or (arrival time, None, comment) for a
        heartbeat when kind is "comment"."""
        deadline = time.monotonic() + seconds
        fields = {}
        while True:
            try:
                arrived, line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise self.error(f"no {kind} within {seconds} s")
            if line is None:
                raise self.error(f"the stream ended before a {kind}")
            if line.startswith(":"):
                if kind == "comment":
                    return arrived, None, line
                continue
            if line == "":
                if fields.get("event") == kind:
                    return arrived, fields.get("id"), fields.get("data")
                fields = {}
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value

    def close(self):
        try:
            self.connection.sock and self.connection.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()


class CuttingProxy:
    """A TCP proxy on a free port of `host` in front of `host`:`port` that cuts every connection it
    carries when told, and then closes the connections it is offered until it is restored: what a
    client sees when its network drops for a while. It keeps the head of each request it carried
    (`requests`: the request line and the header fields, names in lower case), to tell what a client
    sent when it came back (`Last-Event-ID`). Stopped by close()."""

    def __init__(self, port, host=HOST):
        self.target = (host, port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, 0))
        self.listener.listen(64)
        self.host, self.port = host, self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.pairs, self.requests, self.down, self.closed = set(), [], False, False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            with self.lock:
                refused = self.down or self.closed
            if refused:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            pair = (client, upstream)
            with self.lock:
                self.pairs.add(pair)
            threading.Thread(target=self._pump, args=(client, upstream, pair, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, pair, False), daemon=True).start()

    def _pump(self, source, sink, pair, requests):
        pending, body = b"", 0  # the bytes of requests not read yet; what is left of a body
        while True:
            try:
                data = source.recv(65536)
                if not data:
                    break
                if requests:
                    pending += data
                    while True:  # every request of a kept-alive connection
                        skipped = min(body, len(pending))
                        pending, body = pending[skipped:], body - skipped
                        if body or b"\r\n\r\n" not in pending:
                            break
                        head, pending = pending.split(b"\r\n\r\n", 1)
                        body = self._record(head)
                sink.sendall(data)
            except OSError:
                break
        self._end(pair)

    def _record(self, head):
        """Keeps a request's head; returns the length of its body."""
        line, *fields = head.decode("latin-1").split("\r\n")
        headers = {}
        for field in fields:
            name, _, value = field.partition(":")
            headers[name.strip().lower()] = value.strip()
        with self.lock:
            self.requests.append({"line": line, "headers": headers})
        return int(headers.get("content-length") or 0)

    def _end(self, pair):
        with self.lock:
            if pair not in self.pairs:
                return
            self.pairs.discard(pair)
        for end in pair:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def requests_to(self, path):
        """The heads of the requests for `path` (query included) so far."""
        with self.lock:
            return [r for r in self.requests if r["line"].split(" ")[1:2] == [path]]

    def cut(self):
        """Cuts every connection it carries; connections offered from now on are closed at once."""
        with self.lock:
            self.down = True
            pairs = list(self.pairs)
        for pair in pairs:
            self._end(pair)

    def restore(self):
        """Carries new connections again."""
        with self.lock:
            self.down = False

    def close(self):
        with self.lock:
            self.closed = True
        self.listener.close()
        self.cut()


# --- nginx and PostgreSQL -------------------------------------------------------------------------------

def nginx_conf(prefix, http, workers=1, connections=1024, rlimit=None, error_log=None, log_level="warn"):
    """A main nginx configuration for a foreground nginx (`nginx -p PREFIX -c FILE`) that writes nothing
    outside `prefix` (pid, error log, temporary bodies), with `http` (indented directives) in its http
    block."""
    temp = "".join(f"    {kind}_temp_path {prefix}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"daemon off;\nworker_processes {workers};\n"
            + (f"worker_rlimit_nofile {rlimit};\n" if rlimit else "")
            + f"pid {prefix}/nginx.pid;\nerror_log {error_log or prefix + '/logs/error.log'} {log_level};\n"
            + f"events {{ worker_connections {connections}; }}\nhttp {{\n{temp}{http.rstrip()}\n}}\n")


def create_database(url, psql, label):
    """A new database named after `label` on the PostgreSQL at `url`, made with `psql`; returns its URL."""
    name = f"{label}_{os.getpid()}_{random.randrange(1 << 30)}"
    subprocess.run([psql, url, "-qc", f"CREATE DATABASE {name}"], check=True, capture_output=True)
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(path="/" + name))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["free-port"], help="free-port: print a free TCP port on 127.0.0.1")
    parser.parse_args()
    print(free_port())


if __name__ == "__main__":
    main()
