"""Fixtures of the package's own tests: a small HTTP server on 127.0.0.1 that answers what a test tells
it, so that the clients here are tested without the livelist binary."""
import http.server
import threading

import pytest


class Canned(http.server.BaseHTTPRequestHandler):
    """Answers every GET with the server's `answer`: (status, headers, body chunks); chunks are flushed one
    by one, as an event stream is."""

    def do_GET(self):
        status, headers, chunks = self.server.answer(self.path)
        self.server.seen.append((self.path, dict(self.headers)))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()

    def log_message(self, *_):  # quiet: pytest shows failures, not request logs
        pass


@pytest.fixture
def canned():
    """A started server on a free loopback port; set `.answer` to a function of the path."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Canned)
    server.daemon_threads = True
    server.seen = []
    server.answer = lambda path: (200, {"Content-Length": "2"}, [b"ok"])
    # A short poll, so that shutdown() at the end of each test is quick.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()
