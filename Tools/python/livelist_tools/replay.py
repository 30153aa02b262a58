"""What the attacks of Benchmarks/Scripts/_replay_round_three.py and _replay_board.py share (standard library only):

  Target                       one build under test: its livelist binary, its Board binary, a PostgreSQL
  Browser                      an HTTP client with a cookie jar and a loopback source address of its own
  loopback                     the Nth loopback source address (127.0.0.2 and up: Linux routes 127/8 on lo)
  start_board, Nginx           Examples/Board on a free port; nginx configured as docs/nginx.conf in front
  cpu_seconds, median, events  /proc/PID/stat, statistics, SSE events read within a time
  psql                         statements through psql
  rss_mb, put_json, session, … the helpers of the first eight attacks (Benchmarks/Scripts/replay_attacks.py)

Everything listens on, or talks to, 127.0.0.x; every process started here is stopped by its owner.
"""
import http.client
import json
import os
import queue
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.parse

from livelist_tools import HOST, ROOT, Server, free_port, memory_kib, nginx_binary, nginx_conf, request, stop_process, wait_ready

TIMEOUT = 30  # seconds, for any ordinary request
SIGN_IN_COOKIES = ("livelist_signin", "__Host-livelist_signin", "board_user")
SESSION_COOKIES = ("livelist_session", "__Host-livelist_session")


class Target:
    """One build: `label` (baseline or candidate), its livelist binary, its Board binary (or None), and
    the PostgreSQL to make databases in (`database`: an admin URL, `psql`: the client), or None."""

    def __init__(self, label, binary, board=None, database=None, psql=None):
        self.label, self.binary, self.board, self.database, self.psql = label, binary, board, database, psql

    @property
    def is_candidate(self):
        return self.label == "candidate"


def loopback(index):
    """Client `index`'s own loopback source address: 127.0.0.2 for 0, then up (127.0.0.250, 127.0.1.1, …);
    never 127.0.0.1, the address of the servers and of nginx."""
    k = index + 1
    return f"127.{k // 62500}.{k // 250 % 250}.{k % 250 + 1}"


class Browser:
    """Requests from one loopback `source` address to `port`, with a cookie jar kept from Set-Cookie (a
    cookie set with Max-Age=0 is removed). `keep=True` reuses one connection (reopened when the server
    closed it)."""

    def __init__(self, port, source=None, cookies=None):
        self.port, self.source = port, source
        self.cookies = dict(cookies or {})
        self.connection = None

    def _connect(self, timeout):
        source = (self.source, 0) if self.source else None
        return http.client.HTTPConnection(HOST, self.port, timeout=timeout, source_address=source)

    def request(self, method, path, body=None, headers=None, keep=False, timeout=TIMEOUT, cookies=True):
        """(status, headers, body bytes)."""
        headers = dict(headers or {})
        if cookies and self.cookies and "Cookie" not in headers:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        if isinstance(body, str):
            body = body.encode()
        for attempt in range(2):
            connection = self.connection if keep and self.connection else self._connect(timeout)
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                connection.close()
                self.connection = None
                if not keep or attempt:
                    raise
            finally:
                if not keep:
                    connection.close()
        if keep:
            self.connection = connection if not response.will_close else None
        self.remember(response.headers)
        return response.status, response.headers, data

    def remember(self, headers):
        for value in headers.get_all("Set-Cookie") or []:
            pair, _, attributes = value.partition(";")
            name, _, content = pair.strip().partition("=")
            if re.search(r"(?i)max-age=0\b", attributes):
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = content

    def form(self, path, fields, keep=False, headers=None):
        return self.request("POST", path, urllib.parse.urlencode(fields),
                            dict({"Content-Type": "application/x-www-form-urlencoded"}, **(headers or {})), keep=keep)

    def csrf(self, path):
        """GETs `path` and returns the CSRF token of its form (or its meta tag)."""
        status, _, page = self.request("GET", path)
        found = re.search(rb'name="csrf" value="([^"]*)"', page) or re.search(rb'name="livelist-csrf" content="([^"]*)"', page)
        if not found:
            raise RuntimeError(f"GET {path} answered {status} with no CSRF token")
        return found.group(1).decode()

    def cookie(self, names):
        """The first of the cookies `names` held, as (name, value), or None."""
        return next(((name, self.cookies[name]) for name in names if name in self.cookies), None)

    def close(self):
        if self.connection:
            self.connection.close()
            self.connection = None


def board_sign_in(browser, user, password, next_path="/"):
    """GET /login, then POST /login: the status (303 signed in, 401 wrong, 429 paced)."""
    token = browser.csrf("/login")
    status, _, _ = browser.form("/login", {"user": user, "password": password, "csrf": token, "next": next_path})
    return status


def board_sign_out(browser):
    """GET / (its form's CSRF token), then POST /logout: the status."""
    token = browser.csrf("/")
    status, _, _ = browser.form("/logout", {"csrf": token})
    return status


def start_board(binary, data=None, database=None, env=None, users="alice:secret1,bob:secret2"):
    """Examples/Board on a free port of 127.0.0.1 (its port read from the library's banner), its lists in
    `data` (a new temporary folder that close() removes when None) or in the PostgreSQL `database`."""
    folder = data or tempfile.mkdtemp(prefix="livelist-board-")
    environment = dict(os.environ, LIVELIST_HOST=HOST, LIVELIST_PORT="0", LIVELIST_DATA=folder, BOARD_USERS=users)
    environment.pop("LIVELIST_DATABASE_URL", None)
    if database:
        environment["LIVELIST_DATABASE_URL"] = database
    environment.update(env or {})
    server = Server(binary, data=folder, env=environment, resources=False, timeout=60)
    server.owns_data = data is None
    return server


class Nginx:
    """nginx in the foreground, configured as docs/nginx.conf (the lines marked `# test:` substituted:
    upstream 127.0.0.1:UPSTREAM, listen 127.0.0.1:FREE, the access log in its own prefix). Stopped by close()."""

    def __init__(self, upstream):
        self.prefix = tempfile.mkdtemp(prefix="livelist-nginx-")
        os.chmod(self.prefix, 0o755)
        self.port = free_port()
        self.access_log = os.path.join(self.prefix, "access.log")
        values = {"upstream": f"server 127.0.0.1:{upstream};", "listen": f"listen 127.0.0.1:{self.port};",
                  "access_log": f"access_log {self.access_log}"}
        patterns = {"upstream": r"\bserver\s+[^;\s]+;", "listen": r"\blisten\s+[^;]+;", "access_log": r"\baccess_log\s+\S+"}
        lines = []
        with open(os.path.join(ROOT, "docs", "nginx.conf")) as file:
            for line in file.read().split("\n"):
                marker = re.search(r"#\s*test:\s*(\S+)\s*$", line)
                if marker and not line.lstrip().startswith("#"):
                    line = re.sub(patterns[marker[1]], values[marker[1]], line[:marker.start()]).rstrip()
                lines.append(line)
        site = os.path.join(self.prefix, "livelist.conf")
        with open(site, "w") as file:
            file.write("\n".join(lines))
        main = os.path.join(self.prefix, "nginx.conf")
        with open(main, "w") as file:
            file.write(nginx_conf(self.prefix, f"    include {site};", connections=512, error_log=os.path.join(self.prefix, "error.log")))
        command = [nginx_binary(), "-p", self.prefix + "/", "-e", os.path.join(self.prefix, "error.log"), "-c", main]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_ready(self.port, process=self.process, seconds=20)
        except Exception as error:
            with open(os.path.join(self.prefix, "error.log"), errors="replace") as log:
                why = log.read()[-300:]
            self.close()
            raise RuntimeError(f"nginx did not start: {error}: {why}")

    def close(self):
        stop_process(self.process, 10)
        shutil.rmtree(self.prefix, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def cpu_seconds(pid):
    """User plus system CPU time of process `pid` so far, in seconds (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median(values):
    return statistics.median(values) if values else float("nan")


def counts(values):
    """'3x 204, 1x 429' for a list of statuses."""
    found = {}
    for value in values:
        found[value] = found.get(value, 0) + 1
    return ", ".join(f"{n}x {value}" for value, n in sorted(found.items(), key=lambda item: str(item[0]))) or "none"


def events(stream, seconds):
    """The events (kind, data) that `stream` (a livelist_tools.EventStream) delivers within `seconds`,
    and whether it ended."""
    deadline = time.monotonic() + seconds
    found, fields, data = [], {}, []
    while True:
        try:
            _, line = stream.lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            return found, False
        if line is None:
            return found, True
        if line.startswith(":"):
            continue
        if line == "":
            if fields or data:
                found.append((fields.get("event", "message"), "\n".join(data)))
            fields, data = {}, []
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        else:
            fields[name] = value


def psql(target, url, statements):
    """The output of one statement, or of several run one after another in one session (a list), through
    psql (tuples only, unaligned)."""
    statements = [statements] if isinstance(statements, str) else statements
    command = [target.psql, url, "-qtA"] + [part for statement in statements for part in ("-c", statement)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"psql: {done.stderr.strip()[:200]}")
    return done.stdout.strip()


# --- The first eight attacks' helpers (Benchmarks/Scripts/replay_attacks.py) --------------------------

def rss_mb(pid):
    """The resident memory of process `pid`, in MB (VmRSS of /proc/PID/status)."""
    return memory_kib(pid) / 1024


def put_json(port, name, document, timeout=TIMEOUT):
    """PUT /lists/NAME with a JSON document: (status, decoded answer or its text)."""
    body = json.dumps(document, ensure_ascii=False).encode()
    status, _, answer = request(port, "PUT", "/lists/" + name, body,
                                {"Content-Type": "application/json"}, timeout)
    try:
        return status, json.loads(answer)
    except ValueError:
        return status, answer.decode(errors="replace")


def list_version(port, name):
    """The version of list NAME, from its JSON snapshot."""
    status, _, body = request(port, "GET", "/lists/" + name, headers={"Accept": "application/json"})
    if status != 200:
        raise RuntimeError(f"GET /lists/{name} (JSON) answered {status}")
    return json.loads(body)["version"]


def session(port):
    """A session on the todo page: (cookie "NAME=VALUE", CSRF token, page bytes)."""
    status, headers, page = request(port, "GET", "/lists/todo")
    if status != 200:
        raise RuntimeError(f"GET /lists/todo answered {status}")
    cookie = None
    for value in headers.get_all("Set-Cookie") or []:
        pair = value.split(";", 1)[0].strip()
        if pair.split("=", 1)[0].endswith("session"):
            cookie = pair
    token = re.search(rb'<meta name="livelist-csrf" content="([^"]*)"', page)
    if not cookie or not token:
        raise RuntimeError("the todo page gave no session cookie or no CSRF token")
    return cookie, token.group(1).decode(), len(page)


def action_headers(cookie, token):
    return {"Content-Type": "application/json", "Cookie": cookie, "X-CSRF-Token": token}


def status_line(data):
    """The first line of an answer, or None when nothing came."""
    if not data:
        return None
    return data.split(b"\r\n", 1)[0].decode(errors="replace")


def raw_exchange(port, head, body=b"", timeout=TIMEOUT):
    """Sends `head` and `body` on a raw socket, then reads the answer's first bytes. Returns its status
    line, or "connection closed" when the server cut the connection with no answer, or "no answer"
    when nothing came within `timeout`."""
    sock = socket.create_connection((HOST, port), timeout=timeout)
    try:
        try:
            sock.sendall(head)
            view = memoryview(body)
            for start in range(0, len(view), 1 << 16):
                sock.sendall(view[start:start + (1 << 16)])
        except (BrokenPipeError, ConnectionResetError):
            pass  # The server may have answered before it stopped reading: look for that answer.
        try:
            data = sock.recv(4096)
        except socket.timeout:
            return "no answer"
        except ConnectionResetError:
            data = b""
        return status_line(data) or "connection closed"
    finally:
        sock.close()
