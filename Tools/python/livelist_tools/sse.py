"""Server-Sent Events: a stream read on a thread, its events taken one at a time."""
import queue
import socket
import threading
import time

from .web import connect


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
