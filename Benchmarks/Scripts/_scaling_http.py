"""HTTP over plain sockets for scaling.py: keep-alive requests with Content-Length bodies, event streams
opened and reset. Kept apart so that scaling.py stays within the house's 450 lines."""
import socket
import time

HOST = "127.0.0.1"
# Seconds any one step may take: scaling.py sets it from its --step-timeout.
STEP_TIMEOUT = 300.0


class Timeout(Exception):
    pass


def read_head(sock, deadline):
    """Reads a response head; returns (status, headers as a list of (lowercased name, value), rest)."""
    data = b""
    while b"\r\n\r\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout("no response head in time")
        sock.settimeout(remaining)
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed before the response head")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip().lower(), value.strip()))
    return status, headers, rest


def header(headers, name):
    for key, value in headers:
        if key == name:
            return value
    return None


class Client:
    """One keep-alive connection for plain requests (Content-Length bodies only)."""

    def __init__(self, port):
        self.port = port
        self.sock = None

    def connect(self):
        self.sock = socket.create_connection((HOST, self.port), timeout=STEP_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def request(self, method, path, body=b"", headers=(), timeout=None):
        if self.sock is None:
            self.connect()
        deadline = time.monotonic() + (timeout or STEP_TIMEOUT)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in headers]
        if body or method in ("PUT", "POST"):
            lines.append(f"Content-Length: {len(body)}")
        self.sock.settimeout(max(0.001, deadline - time.monotonic()))
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        status, response_headers, rest = read_head(self.sock, deadline)
        length = int(header(response_headers, "content-length") or 0)
        while len(rest) < length:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout(f"{method} {path}: body not read in time")
            self.sock.settimeout(remaining)
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("connection closed inside a body")
            rest += chunk
        if (header(response_headers, "connection") or "").lower() == "close":
            self.close()
        return status, response_headers, rest[:length]

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def abort(sock):
    """Closes with a reset, so that thousands of closes leave no TIME_WAIT behind on loopback."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


def open_stream(port, path, cookie=None, deadline=None):
    """Opens an event stream and returns its socket once the 200 head has arrived."""
    sock = socket.create_connection((HOST, port), timeout=STEP_TIMEOUT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request = f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nAccept: text/event-stream\r\n"
    if cookie:
        request += f"Cookie: {cookie}\r\n"
    sock.sendall((request + "\r\n").encode("latin-1"))
    status, _, _ = read_head(sock, deadline or time.monotonic() + STEP_TIMEOUT)
    if status != 200:
        abort(sock)
        raise RuntimeError(f"{path}: status {status}")
    return sock
