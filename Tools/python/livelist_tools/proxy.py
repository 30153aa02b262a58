"""A TCP proxy that cuts its connections on demand: a network that drops for a while."""
import socket
import threading

from .paths import HOST


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
