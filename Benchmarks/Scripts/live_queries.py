#!/usr/bin/env python3
"""Live queries under load: Examples/Desk on two nodes of one PostgreSQL, 10,000 event streams of the
customers' live query, 100 single-row commits a second from plain SQL clients; 127.0.0.1 only, bounded.

Run it inside Scripts/with-postgres.sh (a PostgreSQL of its own, and LIVELIST_TEST_PGCTL to restart it),
with a release build of the desk (swift build -c release --package-path Examples/Desk --product desk):

    Scripts/with-postgres.sh Benchmarks/run live-queries [--quick] [--skip-recovery] [--binary PATH]

Before the nodes start it creates the desk's table `tickets` (the schema and CHECKs of Lists.swift, and an
index on `customer` unless --no-index) with --rows rows (100,000) over --customers customers (1,000:
c0000..c0999, as many rows each), every customer in DESK_USERS (role customer). Each customer signs in on
each node (one session per node, from a loopback address of its own), then reader processes (raw
sockets, epoll, the kernel's receive time of each event: SO_TIMESTAMPNS) open --streams streams of
/lists/tickets/events (10 per customer, split over the nodes), each with its customer's cookies.
--writers (4) processes commit --rate (100) changes a second for --duration (60) s, each
`UPDATE tickets SET title = 'm-SEQ' WHERE id = ID` on a connection of its own in autocommit, a random
ticket (each writer its own tickets, so that one ticket's changes commit in order), logged with the
time right after the commit returned.

1. Load: deliveries (each change times the streams of its customer) expected and received, superseded
   (a later change of the ticket came first: coalesced), lost, out of order (a ticket's marks out of
   commit order, or a change shown after one whose writer began only after it had committed), and
   commit-to-receipt p50/p99/max. A mark counts as received when it first appears in an event of the
   stream (a changeset may carry several). The floor in the same run: the writers send
   `SELECT pg_notify(...)` in the same transaction (one simple query, no trigger), and a plain LISTEN
   client (the wire protocol on a raw socket, kernel receive times too) hears it.
2. Statements per change (livelist_live_query_statements_total of both nodes, over the changes
   committed): the same load with one stream per customer, then with all --streams.
3. A no-op UPDATE (title = title) of 100 viewed tickets must publish no changeset; INSERTs and UPDATEs
   of customer zz-nobody (no viewer) must run no statement and change no group.
4. Recovery (unless --skip-recovery): during a second load, node B is killed (SIGKILL) at 20 s and
   started again on its port at 25 s (its streams reconnect with Last-Event-ID, as a browser's do), and
   PostgreSQL is stopped and started at 40 s. Ten seconds after the load, every customer's page on every
   node must equal the customer's rows in the database, and every stream must show each ticket's latest
   title. Prints the commits that failed (the writers retry), and how long each node took to serve
   again.

Prints one Markdown table per part, and the CPU that each party used during the main load (2 cores:
the readers, writers and PostgreSQL share them with the nodes). --quick: 1,000 streams, 20 s loads (the
recovery's events scaled to its length).

Usage: Benchmarks/run live-queries [--nodes 2] [--customers 1000] [--rows 100000] [--streams 10000]
                                   [--rate 100] [--duration 60] [--writers 4] [--readers 2]
                                   [--binary PATH] [--quick] [--skip-recovery] [--no-index]
"""
import argparse
import bisect
import collections
import errno
import heapq
import importlib.util
import http.client
import json
import os
import random
import re
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import livelist_tools as tools
except ImportError:  # not installed (Scripts/setup does): this checkout's copy
    sys.path.insert(0, os.path.join(HERE, "..", "..", "Tools", "python"))
    import livelist_tools as tools
from livelist_tools.replay import Browser, board_sign_in, loopback

HOST = "127.0.0.1"
CHANNEL = "live_queries_floor"
NOBODY = "zz-nobody"
# Linux's SO_TIMESTAMPNS (Python does not name it) and the struct timespec it carries.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
STAMP = struct.Struct("@qq")
MARK = re.compile(rb"#(\d+) m-(\d+)")
TITLE = re.compile(r"#(\d+) ([^<]*)<")
RESET = re.compile(rb'"op":\s*"reset"')


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))] if ordered else float("nan")


def customer_name(index):
    return f"c{index:04d}"


def password(index):
    return f"pw-{index:04d}"


# --- The readers: event streams on raw sockets ---------------------------------------------------------

WAIT, CONNECTING, HEAD, OPEN = range(4)


class Stream:
    """One event stream of a reader: its socket, its parsers' state, what it saw."""
    __slots__ = ("sid", "port", "source", "cookie", "sock", "state", "head", "raw", "chunk", "chunked", "sse", "last_id",
                 "retry", "count", "opened", "disconnects", "refusals", "connect_failures")

    def __init__(self, sid, port, source, cookie):
        self.sid, self.port, self.source, self.cookie = sid, port, source, cookie
        self.sock, self.state = None, WAIT
        self.head, self.raw, self.chunk, self.chunked, self.sse = b"", b"", 0, True, b""
        self.last_id, self.retry, self.count = None, 2.0, 0
        self.opened, self.disconnects, self.refusals, self.connect_failures = [], 0, {}, 0


def dechunk(stream, data):
    """The body bytes in `data` (HTTP/1.1 chunked, or as they come when the answer was not chunked)."""
    if not stream.chunked:
        return data
    raw = stream.raw + data
    out, at = [], 0
    while True:
        if stream.chunk > 0:
            take = min(stream.chunk, len(raw) - at)
            if take <= 0:
                break
            out.append(raw[at:at + take])
            at += take
            stream.chunk -= take
            if stream.chunk == 0:
                stream.chunk = -1  # its CRLF
        elif stream.chunk < 0:
            if len(raw) - at < 2:
                break
            at += 2
            stream.chunk = 0
        else:
            end = raw.find(b"\r\n", at)
            if end < 0:
                break
            size = int(raw[at:end].split(b";")[0] or b"0", 16)
            at = end + 2
            if size == 0:
                break
            stream.chunk = size
    stream.raw = raw[at:]
    return b"".join(out)


def reader_role():
    """A reader process: orders on stdin, one JSON line each, answers on stdout. `add` queues streams
    [sid, port, source address, cookie] (opened at most 128 at a time); a closed stream reconnects after
    the server's retry time with Last-Event-ID; `drain` answers the events seen since the last drain and
    each stream's state; `port` moves streams to a new port; `stop` ends it. It exits on its own after
    two hours, or when its parent's pipe closes."""
    orders = sys.stdin.fileno()
    answers = sys.stdout.fileno()
    poller = select.epoll()
    poller.register(orders, select.EPOLLIN)
    streams, by_fd, due, events = {}, {}, [], []
    pending = b""
    in_flight = [0]
    deadline = time.monotonic() + 7200

    def answer(obj):
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(answers, view):]

    def drop(stream, why, later=None):
        if stream.sock is not None:
            try:
                poller.unregister(stream.sock.fileno())
            except (OSError, ValueError):
                pass
            by_fd.pop(stream.sock.fileno(), None)
            stream.sock.close()
            stream.sock = None
        if stream.state in (CONNECTING, HEAD):
            in_flight[0] -= 1
        if why == "closed":
            stream.disconnects += 1
        elif why == "connect":
            stream.connect_failures += 1
        stream.state = WAIT
        stream.head, stream.raw, stream.chunk, stream.sse = b"", b"", 0, b""
        heapq.heappush(due, (time.monotonic() + (stream.retry if later is None else later), stream.sid))

    def start(stream):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        try:
            s.bind((stream.source, 0))
        except OSError:
            pass
        s.setblocking(False)
        stream.sock, stream.state = s, CONNECTING
        in_flight[0] += 1
        by_fd[s.fileno()] = stream
        code = s.connect_ex((HOST, stream.port))
        poller.register(s.fileno(), select.EPOLLOUT)
        if code not in (0, errno.EINPROGRESS):
            drop(stream, "connect")

    def event(stream, block, stamp):
        name = data = None
        for line in block.split(b"\n"):
            if line.startswith(b":"):
                continue
            field, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if field == b"event":
                name = value
            elif field == b"id":
                stream.last_id = value.decode()
            elif field == b"data":
                data = value
            elif field == b"retry":
                try:
                    stream.retry = int(value) / 1000
                except ValueError:
                    pass
        if name != b"patch" or data is None:
            return
        index = stream.count
        stream.count += 1
        marks = [int(n) for pair in MARK.findall(data) for n in pair]
        reset = bool(RESET.search(data))
        if marks or reset:
            events.append((stream.sid, index, stamp, 1 if reset else 0, marks))

    def readable(stream):
        try:
            data, ancillary, _, _ = stream.sock.recvmsg(65536, socket.CMSG_SPACE(STAMP.size))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data, ancillary = b"", []
        if not data:
            drop(stream, "closed" if stream.state == OPEN else "connect")
            return
        stamp = None
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds, nanoseconds = STAMP.unpack(value[:STAMP.size])
                stamp = seconds * 1_000_000_000 + nanoseconds
        stamp = stamp or time.time_ns()
        if stream.state == HEAD:
            stream.head += data
            end = stream.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = stream.head[:end], stream.head[end + 4:]
            try:
                status = int(head.split(b" ", 2)[1])
            except (IndexError, ValueError):
                status = 0
            if status != 200:
                stream.refusals[str(status)] = stream.refusals.get(str(status), 0) + 1
                drop(stream, "refused", later=2.0)
                return
            stream.state = OPEN
            in_flight[0] -= 1
            stream.opened.append(time.time())
            stream.chunked = b"chunked" in head.lower()
            stream.head = b""
        body = dechunk(stream, data)
        if not body:
            return
        stream.sse += body.replace(b"\r\n", b"\n")
        while True:
            end = stream.sse.find(b"\n\n")
            if end < 0:
                break
            block, stream.sse = stream.sse[:end], stream.sse[end + 2:]
            event(stream, block, stamp)

    def writable(stream):
        code = stream.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            drop(stream, "connect")
            return
        request = (f"GET /lists/tickets/events HTTP/1.1\r\nHost: {HOST}:{stream.port}\r\nAccept: text/event-stream\r\n"
                   f"Cookie: {stream.cookie}\r\n" + (f"Last-Event-ID: {stream.last_id}\r\n" if stream.last_id else "") + "\r\n")
        try:
            stream.sock.send(request.encode())
        except OSError:
            drop(stream, "connect")
            return
        stream.state = HEAD
        poller.modify(stream.sock.fileno(), select.EPOLLIN)

    def summary():
        return {s.sid: [s.state, s.last_id, s.disconnects, s.connect_failures, s.refusals, s.opened] for s in streams.values()}

    while time.monotonic() < deadline:
        now = time.monotonic()
        while due and due[0][0] <= now and in_flight[0] < 128:
            _, sid = heapq.heappop(due)
            stream = streams[sid]
            if stream.state == WAIT and stream.sock is None:
                start(stream)
        for fd, mask in poller.poll(0.02 if due else 0.2):
            if fd == orders:
                chunk = os.read(orders, 1 << 20)
                if not chunk:
                    return
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    order = json.loads(line)
                    if order["op"] == "add":
                        for sid, port, source, cookie in order["streams"]:
                            streams[sid] = Stream(sid, port, source, cookie)
                            heapq.heappush(due, (time.monotonic(), sid))
                        answer({"added": len(order["streams"])})
                    elif order["op"] == "status":
                        states = collections.Counter(s.state for s in streams.values())
                        answer({"open": states[OPEN], "total": len(streams)})
                    elif order["op"] == "drain":
                        answer({"events": events, "streams": summary()})
                        events = []
                    elif order["op"] == "port":
                        for stream in streams.values():
                            if stream.port == order["old"]:
                                stream.port = order["new"]
                        answer({"moved": True})
                    elif order["op"] == "stop":
                        for stream in streams.values():
                            if stream.sock is not None:
                                stream.sock.close()
                        answer({"stopped": True})
                        return
                continue
            stream = by_fd.get(fd)
            if stream is None:
                continue
            try:
                if stream.state == CONNECTING:
                    writable(stream)
                elif stream.state in (HEAD, OPEN):
                    readable(stream)
            except (ValueError, IndexError) as error:  # a framing this reader does not follow: counted, reopened
                stream.refusals[f"unreadable {type(error).__name__}"] = stream.refusals.get(f"unreadable {type(error).__name__}", 0) + 1
                drop(stream, "closed")


class Reader:
    """A reader process (this script with --role reader), spoken to one JSON line at a time."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--role", "reader"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.buffer = b""

    def send(self, order):
        self.process.stdin.write((json.dumps(order) + "\n").encode())

    def receive(self, seconds=120):
        deadline = time.monotonic() + seconds
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([fd], [], [], max(0, left))
            if not readable:
                raise RuntimeError("a reader did not answer in time")
            chunk = os.read(fd, 1 << 22)
            if not chunk:
                raise RuntimeError("a reader exited")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def ask(self, order, seconds=120):
        self.send(order)
        return self.receive(seconds)

    def close(self):
        try:
            if self.process.poll() is None:
                self.ask({"op": "stop"}, 20)
        except (RuntimeError, OSError, ValueError):
            pass
        tools.stop_process(self.process, 10)


class Readers:
    """The reader processes together; what their streams saw, kept across drains."""

    def __init__(self, count):
        self.readers = [Reader() for _ in range(count)]
        self.where = {}
        # sid -> {seq: (stamp ns, event index)}: each mark's first appearance on the stream.
        self.first = collections.defaultdict(dict)
        # sid -> {ticket: (event index, seq)}: what the stream shows of each ticket now (its last event).
        self.latest = collections.defaultdict(dict)
        self.resets = collections.Counter()
        self.state = {}

    def add(self, specs):
        for index, spec in enumerate(specs):
            self.where[spec[0]] = index % len(self.readers)
        for number, reader in enumerate(self.readers):
            mine = [spec for spec in specs if self.where[spec[0]] == number]
            reader.ask({"op": "add", "streams": mine})

    def open_count(self):
        counts = [reader.ask({"op": "status"}) for reader in self.readers]
        return sum(c["open"] for c in counts), sum(c["total"] for c in counts)

    def wait_open(self, seconds):
        deadline = time.monotonic() + seconds
        while True:
            opened, total = self.open_count()
            if opened == total or time.monotonic() > deadline:
                return opened, total
            time.sleep(0.5)

    def drain(self):
        """Takes every reader's events since the last drain; returns how many patch events carried marks."""
        for reader in self.readers:
            reader.send({"op": "drain"})
        count = 0
        for reader in self.readers:
            answer = reader.receive(300)
            for sid, index, stamp, reset, marks in answer["events"]:
                count += 1
                if reset:
                    self.resets[sid] += 1
                first, latest = self.first[sid], self.latest[sid]
                for at in range(0, len(marks), 2):
                    ticket, seq = marks[at], marks[at + 1]
                    if seq not in first:
                        first[seq] = (stamp, index)
                    if ticket not in latest or latest[ticket][0] <= index:
                        latest[ticket] = (index, seq)
            for sid, state in answer["streams"].items():
                self.state[int(sid)] = state
        return count

    def move(self, old, new):
        for reader in self.readers:
            reader.ask({"op": "port", "old": old, "new": new})

    def close(self):
        for reader in self.readers:
            reader.close()


# --- Writers and the LISTEN floor -------------------------------------------------------------------------

def writer_role(config):
    """A writer process: its share of the changes, each at its due time, in autocommit; a change that
    fails is retried (on a new connection when needed) until it commits or the phase's end plus 30 s.
    Logs one JSON line per change: [seq, id, sent ns, commit ns or null, [[failure ns, error], ...]]."""
    import psycopg
    c = json.loads(config)
    rng = random.Random(c["seed"])
    count = int(c["rate"] * c["duration"])
    give_up = c["start"] + c["duration"] + 30
    per_writer = c["rows"] // c["writers"]

    def connect():
        while time.time() < give_up:
            try:
                return psycopg.connect(c["url"], autocommit=True, connect_timeout=3)
            except psycopg.Error:
                time.sleep(0.1)
        return None

    connection = connect()
    print("ready", flush=True)
    with open(c["out"], "w") as out:
        for k in range(c["index"], count, c["writers"]):
            due = c["start"] + k / c["rate"]
            if due > c["start"] + c["duration"]:
                break
            wait = due - time.time()
            if wait > 0:
                time.sleep(wait)
            seq = c["seq_base"] + k
            ticket = rng.randrange(per_writer) * c["writers"] + c["index"] + 1
            sql = f"UPDATE tickets SET title = 'm-{seq}' WHERE id = {ticket}"
            if c["notify"]:
                sql += f"; SELECT pg_notify('{CHANNEL}', '{seq}')"
            failures, sent, committed = [], time.time_ns(), None
            while committed is None and time.time() < give_up:
                try:
                    if connection is None or connection.closed:
                        connection = connect()
                        if connection is None:
                            break
                    sent = time.time_ns()
                    connection.execute(sql)
                    committed = time.time_ns()
                except psycopg.Error as error:
                    failures.append([time.time_ns(), str(error).strip().split("\n")[0][:120]])
                    try:
                        connection.close()
                    except Exception:
                        pass
                    connection = None
                    time.sleep(0.05)
            out.write(json.dumps([seq, ticket, sent, committed, failures]) + "\n")
    if connection is not None:
        connection.close()


def listener_role(config):
    """The floor: a plain LISTEN client on the wire protocol (trust authentication), its socket stamped
    by the kernel (SO_TIMESTAMPNS) as the readers' are. Writes [seq, receive ns] per notification to
    `out` when stdin closes or says stop."""
    c = json.loads(config)
    url = urllib.parse.urlsplit(c["url"])
    s = socket.create_connection((url.hostname, url.port or 5432), timeout=10)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    params = f"user\0{url.username or 'postgres'}\0database\0{url.path.lstrip('/')}\0\0".encode()
    s.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
    buffer = b""
    received = []

    def messages(stamp):
        nonlocal buffer
        while len(buffer) >= 5:
            kind, length = buffer[0:1], struct.unpack("!i", buffer[1:5])[0]
            if len(buffer) < 1 + length:
                return
            body, buffer = buffer[5:1 + length], buffer[1 + length:]
            yield kind, body, stamp

    def until_ready():
        nonlocal buffer
        while True:
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("the database closed the connection")
            buffer += chunk
            for kind, body, _ in messages(None):
                if kind == b"R" and struct.unpack("!i", body[:4])[0] != 0:
                    raise RuntimeError("the database asks for a password (trust authentication expected)")
                if kind == b"E":
                    raise RuntimeError(f"the database refused: {body[:200]!r}")
                if kind == b"Z":
                    return

    until_ready()
    query = f"LISTEN {CHANNEL}\0".encode()
    s.sendall(b"Q" + struct.pack("!i", 4 + len(query)) + query)
    until_ready()
    s.setblocking(False)
    print("ready", flush=True)
    stdin = sys.stdin.fileno()
    while True:
        readable, _, _ = select.select([s, stdin], [], [], 1)
        if stdin in readable:  # closed, or anything said: the end
            break
        if s in readable:
            try:
                data, ancillary, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(STAMP.size))
            except BlockingIOError:
                continue
            if not data:
                break
            stamp = time.time_ns()
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    seconds, nanoseconds = STAMP.unpack(value[:STAMP.size])
                    stamp = seconds * 1_000_000_000 + nanoseconds
            buffer += data
            for kind, body, at in messages(stamp):
                if kind == b"A":
                    payload = body[4:].split(b"\0")[1]
                    received.append([int(payload), at])
    with open(c["out"], "w") as out:
        json.dump(received, out)


class Helper:
    """A writer or the listener: this script with --role, waited for until it says ready."""

    def __init__(self, role, config):
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--role", role, "--config", json.dumps(config)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)

    def ready(self, seconds=30):
        readable, _, _ = select.select([self.process.stdout], [], [], seconds)
        if not readable or not self.process.stdout.readline().startswith(b"ready"):
            raise RuntimeError(f"a helper ({self.process.args[3]}) did not start")

    def finish(self, seconds):
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            tools.stop_process(self.process, 5, kill=True)


# --- The nodes, the database, /metrics ------------------------------------------------------------------------

class Node:
    """A desk node: started by start() (on `port`, 0 for a free one), killed by kill()."""

    def __init__(self, label, binary, database, users):
        self.label, self.binary = label, binary
        self.env = dict(os.environ, LIVELIST_DATABASE_URL=database, DESK_USERS=users, LIVELIST_HOST=HOST)
        self.env.pop("LIVELIST_DATA", None)
        self.server, self.port = None, None

    def start(self, port=0):
        began = time.monotonic()
        if self.server is not None:
            self.server.close(kill=True)
        self.server = tools.Server(self.binary, env=dict(self.env, LIVELIST_PORT=str(port)), resources=False, timeout=120)
        self.port = self.server.port
        return time.monotonic() - began

    def kill(self):
        self.server.stop(kill=True)

    @property
    def pid(self):
        return self.server.process.pid

    def close(self):
        if self.server is not None:
            self.server.close()
            self.server = None


COUNTERS = ("statements", "changed", "groups", "failures", "changesets", "patches", "resets", "coalesced", "streams")


def metrics(nodes):
    """The live query's counters and the changesets, summed over `nodes` (each /metrics from loopback)."""
    wanted = {"livelist_live_query_statements_total": "statements", "livelist_live_query_changed_groups_total": "changed",
              "livelist_live_query_groups": "groups", "livelist_live_query_failures_total": "failures",
              "livelist_changesets_total": "changesets", "livelist_patches_sent_total": "patches",
              "livelist_resets_sent_total": "resets", "livelist_coalesced_viewers_total": "coalesced",
              "livelist_streams_open": "streams"}
    total = collections.Counter()
    for node in nodes:
        with urllib.request.urlopen(f"http://{HOST}:{node.port}/metrics", timeout=30) as answer:
            text = answer.read().decode()
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            name, _, value = line.rpartition(" ")
            base, _, labels = name.partition("{")
            if base in wanted and (not labels or 'list="tickets"' in labels):
                total[wanted[base]] += float(value)
    return total


def create_table(url, rows, customers, index):
    import psycopg
    per = rows // customers
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("""
            CREATE TABLE tickets (id bigint PRIMARY KEY, customer text NOT NULL, title text NOT NULL,
                priority text NOT NULL CHECK (priority IN ('low', 'normal', 'urgent')), status text NOT NULL CHECK (status IN ('open', 'closed')))""")
        connection.execute(f"""
            INSERT INTO tickets (id, customer, title, priority, status)
            SELECT i, 'c' || lpad(((i - 1) / {per})::text, 4, '0'), 't-' || i, (ARRAY['low', 'normal', 'urgent'])[1 + i % 3],
                   CASE WHEN i % 10 = 0 THEN 'closed' ELSE 'open' END
            FROM generate_series(1, {per * customers}) AS i""")
        if index:
            connection.execute("CREATE INDEX tickets_customer ON tickets (customer)")
        connection.execute("VACUUM ANALYZE tickets")


def database_titles(url):
    """{customer: {id: title}} for every ticket."""
    import psycopg
    titles = collections.defaultdict(dict)
    with psycopg.connect(url, autocommit=True) as connection:
        for customer, ticket, title in connection.execute("SELECT customer, id, title FROM tickets"):
            titles[customer][ticket] = title
    return titles


# --- CPU accounting ---------------------------------------------------------------------------------------

def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def children(parent):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == parent:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


def machine_ticks():
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]


def postmaster_pid():
    pgctl = os.environ.get("LIVELIST_TEST_PGCTL")
    try:
        with open(os.path.join(os.path.dirname(pgctl), "data", "postmaster.pid")) as pidfile:
            return int(pidfile.readline())
    except (OSError, ValueError, TypeError):
        return None


class CPU:
    """CPU used by each party between start() and stop(), in cores."""

    def __init__(self, parties):
        self.parties = parties  # {label: callable returning pids}

    def sample(self):
        ticks = {label: {pid: cpu_ticks(pid) for pid in pids()} for label, pids in self.parties.items()}
        return time.monotonic(), machine_ticks(), ticks

    def start(self):
        self.before = self.sample()

    def stop(self):
        after = self.sample()
        seconds = after[0] - self.before[0]
        hz = os.sysconf("SC_CLK_TCK")
        used = {}
        for label in self.parties:
            old, new = self.before[2][label], after[2][label]
            used[label] = sum(new[pid] - old.get(pid, 0) for pid in new) / hz / seconds
        total = (after[1][0] - self.before[1][0])
        idle = (after[1][1] - self.before[1][1])
        cores = os.cpu_count() or 1
        busy = (total - idle) / total * cores if total else 0
        used["everything else on the machine"] = max(0.0, busy - sum(used.values()))
        used["idle"] = idle / total * cores if total else 0
        return used


# --- The benchmark ------------------------------------------------------------------------------------------

class Bench:
    def __init__(self, options):
        self.options = options
        self.url = os.environ["LIVELIST_TEST_DATABASE_URL"]
        self.pgctl = os.environ.get("LIVELIST_TEST_PGCTL")
        self.per = options.rows // options.customers
        self.per_customer = max(1, options.streams // options.customers)
        self.seq = 0
        self.nodes, self.readers, self.helpers = [], None, []
        self.jars = {}
        self.streams = {}  # sid -> (customer, node index)
        self.by_customer = collections.defaultdict(list)
        self.opened_at = {}  # sid -> wall time it was first asked for
        self.changes = []  # every logged change of the run
        self.started = {}  # each load's start (wall clock)
        self.temp = tempfile.mkdtemp(prefix="live-queries-")
        self.output = []

    def say(self, text=""):
        self.output.append(text)

    # Setup -------------------------------------------------------------------------------------------

    def setup(self):
        o = self.options
        self.database = tools.create_database(self.url, os.environ.get("LIVELIST_TEST_PSQL", "psql"), "live_queries")
        began = time.monotonic()
        create_table(self.database, o.rows, o.customers, not o.no_index)
        log(f"live-queries: {self.per * o.customers:,} tickets over {o.customers:,} customers in {time.monotonic() - began:.1f} s")
        users = ",".join(f"{customer_name(c)}:{password(c)}:customer" for c in range(o.customers))
        self.readers = Readers(o.readers)
        for n in range(o.nodes):
            node = Node("AB"[n] if n < 2 else str(n), os.path.abspath(o.binary), self.database, users)
            took = node.start()
            log(f"live-queries: node {node.label} on port {node.port} ({took:.1f} s)")
            self.nodes.append(node)
        began = time.monotonic()

        def sign_in(work):
            n, c = work
            browser = Browser(self.nodes[n].port, source=loopback(c))
            for attempt in range(6):
                status = board_sign_in(browser, customer_name(c), password(c))
                if status == 303:
                    self.jars[(n, c)] = dict(browser.cookies)
                    return
                time.sleep(0.5 * (attempt + 1))
            raise RuntimeError(f"{customer_name(c)} could not sign in on node {self.nodes[n].label}: {status}")

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(sign_in, [(n, c) for n in range(o.nodes) for c in range(o.customers)]))
        log(f"live-queries: {o.customers:,} customers signed in on each node in {time.monotonic() - began:.1f} s")

    def open_streams(self, slots):
        """Opens stream slot j (0 <= j < per_customer) of every customer for each j in `slots`."""
        specs = []
        for j in slots:
            for c in range(self.options.customers):
                sid = c * self.per_customer + j
                n = (c + j) % len(self.nodes)
                cookie = "; ".join(f"{k}={v}" for k, v in self.jars[(n, c)].items())
                specs.append([sid, self.nodes[n].port, loopback(c), cookie])
                self.streams[sid] = (c, n)
                self.by_customer[c].append(sid)
                self.opened_at[sid] = time.time()
        began = time.monotonic()
        self.readers.add(specs)
        opened, total = self.readers.wait_open(300)
        log(f"live-queries: {opened:,} of {total:,} streams open ({time.monotonic() - began:.1f} s for {len(specs):,})")
        if opened < total:
            self.say(f"**Only {opened:,} of {total:,} streams opened within 300 s.**\n")
        time.sleep(1)
        self.readers.drain()
        return time.monotonic() - began

    # A load ---------------------------------------------------------------------------------------------

    def load(self, label, duration, notify, events=(), floor=False):
        """--rate changes a second for `duration` s from --writers writers; `events` are (second, callable)
        run on this thread at their time. Returns the changes logged."""
        o = self.options
        listener = None
        if floor:
            listener = Helper("listener", {"url": self.database, "out": os.path.join(self.temp, f"{label}-floor.json")})
            listener.ready()
        writers = []
        start = time.time() + 2.0
        base = self.seq
        for w in range(o.writers):
            config = {"index": w, "writers": o.writers, "url": self.database, "start": start, "rate": o.rate, "duration": duration,
                      "seq_base": base, "rows": self.per * o.customers, "notify": notify, "seed": zlib.crc32(f"{label}-{w}".encode()),
                      "out": os.path.join(self.temp, f"{label}-{w}.jsonl")}
            writers.append(Helper("writer", config))
        self.helpers = writers + ([listener] if listener else [])
        for writer in writers:
            writer.ready(60)
        self.seq += int(o.rate * duration) + 1
        log(f"live-queries: {label}: {o.rate:g} changes/s for {duration:g} s")
        for second, action in sorted(events, key=lambda e: e[0]):
            wait = start + second - time.time()
            if wait > 0:
                time.sleep(wait)
            action()
        wait = start + duration - time.time()
        if wait > 0:
            time.sleep(wait)
        for writer in writers:
            writer.finish(60)
        changes = []
        for w in range(o.writers):
            with open(os.path.join(self.temp, f"{label}-{w}.jsonl")) as logged:
                for line in logged:
                    seq, ticket, sent, committed, failures = json.loads(line)
                    changes.append({"seq": seq, "ticket": ticket, "customer": (ticket - 1) // self.per, "sent": sent,
                                    "committed": committed, "failures": failures, "label": label})
        changes.sort(key=lambda change: change["seq"])
        self.changes += changes
        self.started[label] = start
        floor_stamps = None
        if listener:
            time.sleep(0.5)
            listener.finish(20)
            with open(os.path.join(self.temp, f"{label}-floor.json")) as received:
                floor_stamps = dict((seq, stamp) for seq, stamp in json.load(received))
        self.helpers = []
        return changes, start, floor_stamps

    def touches(self, changes):
        """Over the committed `changes`: how many nodes had a stream of the changed customer open, summed."""
        nodes = {c: len({self.streams[sid][1] for sid in sids}) for c, sids in self.by_customer.items()}
        return sum(nodes.get(change["customer"], 0) for change in changes if change["committed"] is not None)

    def missing(self, changes):
        """The deliveries of `changes` not seen yet (neither received nor superseded)."""
        count = 0
        for change in changes:
            if change["committed"] is None:
                continue
            for sid in self.by_customer[change["customer"]]:
                if change["seq"] in self.readers.first[sid]:
                    continue
                seen = self.readers.latest[sid].get(change["ticket"])
                if seen is None or seen[1] <= change["seq"]:
                    count += 1
        return count

    def stragglers(self, changes, seconds=10):
        """Drains the readers until every delivery of `changes` is in, or `seconds` passed."""
        deadline = time.monotonic() + seconds
        while True:
            time.sleep(0.5)
            self.readers.drain()
            left = self.missing(changes)
            if left == 0 or time.monotonic() > deadline:
                return left

    def analyse(self, changes, floor_stamps=None):
        """Deliveries of `changes` to the streams of their customers that were open before they committed."""
        latencies, floor, timed = [], [], []
        expected = received = superseded = lost = disorder = 0
        committed = [c for c in changes if c["committed"] is not None]
        seqs = {c["seq"]: c for c in committed}
        per_stream = collections.defaultdict(list)
        for change in committed:
            for sid in self.by_customer[change["customer"]]:
                if self.opened_at[sid] * 1e9 > change["sent"]:
                    continue
                expected += 1
                first = self.readers.first[sid].get(change["seq"])
                if first is not None:
                    received += 1
                    latencies.append((first[0] - change["committed"]) / 1e6)
                    timed.append((change["committed"], latencies[-1]))
                    per_stream[sid].append((first[1], change))
                    continue
                seen = self.readers.latest[sid].get(change["ticket"])
                if seen is not None and seen[1] > change["seq"]:
                    superseded += 1
                else:
                    lost += 1
            if floor_stamps is not None and change["seq"] in floor_stamps:
                floor.append((floor_stamps[change["seq"]] - change["committed"]) / 1e6)
        # Out of order, per stream: a ticket's marks against commit order (one writer per ticket, so its
        # seq order), and a change shown after one that its writer began only once it had committed.
        for sid, shown in per_stream.items():
            shown.sort(key=lambda item: item[0])
            last_of_ticket = {}
            indexes = [index for index, _ in shown]
            best_sent = []  # the latest send time among marks shown at or before each position
            running = 0
            for _, change in shown:
                running = max(running, change["sent"])
                best_sent.append(running)
            for position, (index, change) in enumerate(shown):
                wrong = False
                previous = last_of_ticket.get(change["ticket"])
                if previous is not None and previous > change["seq"]:
                    wrong = True
                last_of_ticket[change["ticket"]] = max(previous or 0, change["seq"])
                # Marks shown in strictly earlier events.
                earlier = bisect.bisect_left(indexes, index)
                if earlier and best_sent[earlier - 1] > change["committed"]:
                    wrong = True
                disorder += wrong
        return {"committed": len(committed), "issued": len(changes), "expected": expected, "received": received,
                "superseded": superseded, "lost": lost, "disorder": disorder, "latencies": latencies, "floor": floor,
                "failed_attempts": sum(len(c["failures"]) for c in changes), "seqs": seqs, "timed": timed}

    # Parts -------------------------------------------------------------------------------------------------

    def header(self):
        o = self.options
        try:
            commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            commit = "?"
        import psycopg
        with psycopg.connect(self.database, autocommit=True) as connection:
            version = connection.execute("SHOW server_version").fetchone()[0]
        self.say(f"# Live queries: {len(self.nodes)} desk nodes, PostgreSQL {version} on loopback\n")
        self.say(f"Checkout {commit}, binary {o.binary}; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start; "
                 f"{self.per * o.customers:,} tickets over {o.customers:,} customers, "
                 f"{'an index on tickets.customer' if not o.no_index else 'no index on tickets.customer (as the desk makes its table)'}; "
                 f"{o.streams:,} streams from {o.readers} reader processes; {o.writers} writers.\n")

    def run(self):
        o = self.options
        self.setup()
        self.header()
        baseline_slots = [0]
        all_slots = list(range(self.per_customer))
        open_seconds = self.open_streams(baseline_slots)
        rows1, cpu_rows = [], []
        parties = {f"node {node.label}": (lambda node=node: [node.pid]) for node in self.nodes}
        postmaster = postmaster_pid()
        parties["PostgreSQL"] = lambda: ([postmaster] + children(postmaster)) if postmaster else []
        parties["readers"] = lambda: [r.process.pid for r in self.readers.readers]
        parties["writers and the LISTEN client"] = lambda: [h.process.pid for h in self.helpers]

        def measured(label, streams):
            """The load with the CPU of each party measured from its second second to just before its end."""
            cpu, held = CPU(parties), {}
            before = metrics(self.nodes)
            changes, start, floor = self.load(label, o.duration, notify=True, floor=True,
                                              events=[(1, cpu.start), (o.duration - 0.5, lambda: held.setdefault("used", cpu.stop()))])
            left = self.stragglers(changes)
            after = metrics(self.nodes)
            result = self.analyse(changes, floor)
            result["touches"] = self.touches(changes)
            result["start"] = start
            rows1.append((streams, result, before, after, left))
            cpu_rows.append((streams, held.get("used", {})))

        # Part 1 and 2: one stream per customer, then all of them; the same load on each.
        if self.per_customer > 1:
            measured("one-per-customer", len(baseline_slots) * o.customers)
            open_seconds = self.open_streams(all_slots[1:])
        measured("all-streams", len(all_slots) * o.customers)
        self.report_load(rows1, open_seconds)
        self.report_cpu(cpu_rows)
        self.no_ops()
        if not o.skip_recovery:
            self.recovery()

    def report_load(self, rows, open_seconds):
        o = self.options
        self.say(f"## 1. Load: {o.rate:g} single-row UPDATEs/s for {o.duration:g} s from {o.writers} writers, "
                 f"{o.customers:,} customers x {self.per:,} tickets, {len(self.nodes)} nodes\n")
        self.say("| streams | changes committed | deliveries expected | received | superseded (coalesced) | lost | out of order | "
                 "p50 ms | p99 ms | max ms | LISTEN floor p50 / p99 ms | p99 / floor p99 |")
        self.say("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for streams, r, _, _, _ in rows:
            lat, floor = r["latencies"], r["floor"]
            p99, f99 = percentile(lat, 0.99), percentile(floor, 0.99)
            # The writer notes its commit once COMMIT's answer is read: the notification may come first
            # (a floor at or below zero), so the ratio is shown only where the floor is measurable.
            ratio = (f"{p99 / f99:,.0f}x" if floor and lat and f99 >= 0.05 else "n/a (floor under 0.05 ms)") + f"; p99 - floor p99 {p99 - f99:.1f} ms"
            self.say(f"| {streams:,} | {r['committed']:,} of {r['issued']:,} | {r['expected']:,} | {r['received']:,} | {r['superseded']:,} | "
                     f"{r['lost']:,} | {r['disorder']:,} | {percentile(lat, 0.5):.1f} | {p99:.1f} | {max(lat) if lat else float('nan'):.1f} | "
                     f"{percentile(floor, 0.5):.2f} / {f99:.2f} ({len(floor):,} heard) | {ratio} |")
        for streams, r, _, _, _ in rows:
            windows = collections.defaultdict(list)
            for committed, latency in r["timed"]:
                windows[int((committed / 1e9 - r["start"]) // 10)].append(latency)
            self.say(f"\n{streams:,} streams, p99 ms by 10 s of commits: " + ", ".join(
                f"{10 * w}-{10 * w + 10} s {percentile(v, 0.99):.0f}" for w, v in sorted(windows.items())))
        streams, r, _, _, _ = rows[-1]
        p99 = percentile(r["latencies"], 0.99)
        verdict = "met" if p99 < 250 and r["lost"] == 0 and r["disorder"] == 0 else "NOT met"
        self.say(f"\nGoal at {streams:,} streams (p99 < 250 ms, 0 lost, 0 out of order): {verdict}. Latency is from the "
                 "moment the writer's COMMIT returned to the kernel's receive time of the event that first showed the mark; "
                 "the floor is the same for a LISTEN client hearing a pg_notify sent in the same transaction. "
                 f"The streams opened in {open_seconds:.1f} s.\n")
        self.say("## 2. Statements per change (both nodes)\n")
        self.say("| streams | changes committed | statements | per change | nodes viewing the changed customer, per change | "
                 "statements per change and viewing node | groups held | changed groups | changesets | events sent | events sent per change |")
        self.say("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        figures = []
        for streams, r, before, after, _ in rows:
            d = {k: after[k] - before[k] for k in COUNTERS}
            n = max(1, r["committed"])
            per_node = d["statements"] / max(1, r["touches"])
            figures.append((streams, d["statements"] / n, per_node))
            self.say(f"| {streams:,} | {r['committed']:,} | {d['statements']:,.0f} | {d['statements'] / n:.3f} | {r['touches'] / n:.2f} | "
                     f"{per_node:.3f} | {after['groups']:,.0f} | {d['changed']:,.0f} | {d['changesets']:,.0f} | "
                     f"{d['patches']:,.0f} | {d['patches'] / n:.1f} |")
        if len(figures) > 1:
            (sa, _, ra), (sb, _, rb) = figures[0], figures[-1]
            self.say(f"\nStatements per change and node that views the changed customer: {ra:.3f} with {sa:,} streams, {rb:.3f} with "
                     f"{sb:,} ({'does not grow' if rb <= ra * 1.1 + 0.01 else 'GROWS'} with viewers; the bound is 1). With one stream "
                     "per customer each customer is viewed on one node only, so the statements per change of the two rows differ by "
                     "the nodes that hold the customer's group, not by the viewers.\n")
        else:
            self.say("\nOne stream per customer only (--streams equals --customers): no second row to compare.\n")

    def report_cpu(self, rows):
        rows = [(streams, used) for streams, used in rows if used]
        if not rows:
            return
        names = list(rows[0][1])
        self.say(f"### CPU during each load (cores, of {os.cpu_count()}; the machine's other processes included)\n")
        self.say("| streams | " + " | ".join(names) + " |")
        self.say("|---:|" + "---:|" * len(names))
        for streams, used in rows:
            self.say(f"| {streams:,} | " + " | ".join(f"{used.get(name, 0):.2f}" for name in names) + " |")
        self.say("")

    def no_ops(self):
        import psycopg
        o = self.options
        rng = random.Random(7)
        rows = []
        with psycopg.connect(self.database, autocommit=True) as connection:
            # (a) the same title again, for 100 tickets of viewed customers
            self.readers.drain()
            before = metrics(self.nodes)
            ids = rng.sample(range(1, self.per * o.customers + 1), 100)
            for ticket in ids:
                connection.execute(f"UPDATE tickets SET title = title WHERE id = {ticket}")
                time.sleep(0.01)
            after = self.settle(before)
            events = self.readers.drain()
            rows.append(("(a) `UPDATE tickets SET title = title` of 100 viewed tickets", 100, before, after, events,
                         after["changesets"] == before["changesets"] and after["patches"] == before["patches"]))
            # (b) rows of a customer nobody views: 50 INSERTs, then 50 UPDATEs
            before = metrics(self.nodes)
            first = self.per * o.customers + 1
            for k in range(50):
                connection.execute(f"INSERT INTO tickets (id, customer, title, priority, status) "
                                   f"VALUES ({first + k}, '{NOBODY}', 'n-{k}', 'normal', 'open')")
            for k in range(50):
                connection.execute(f"UPDATE tickets SET title = 'n2-{k}' WHERE id = {first + k}")
            after = self.settle(before)
            events = self.readers.drain()
            rows.append((f"(b) 50 INSERTs and 50 UPDATEs of customer `{NOBODY}` (no viewer)", 100, before, after, events,
                         after["statements"] == before["statements"] and after["changed"] == before["changed"]))
        self.say("## 3. No-op and unselected changes (both nodes)\n")
        self.say("| changes | commits | statements | changed groups | changesets | events sent | events received | as it should |")
        self.say("|---|---:|---:|---:|---:|---:|---:|---|")
        for label, count, before, after, events, good in rows:
            d = {k: after[k] - before[k] for k in COUNTERS}
            self.say(f"| {label} | {count} | +{d['statements']:,.0f} | +{d['changed']:,.0f} | +{d['changesets']:,.0f} | "
                     f"+{d['patches']:,.0f} | {events:,} | {'yes' if good else 'NO'} |")
        self.say("\n(a) must publish no changeset (statements may run); (b) must run no statement and change no group.\n")

    def settle(self, before, seconds=10):
        """/metrics once the statements stop growing (two readings 0.5 s apart alike), at most `seconds`."""
        deadline = time.monotonic() + seconds
        time.sleep(1)
        last = metrics(self.nodes)
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = metrics(self.nodes)
            if now["statements"] == last["statements"] and now["changesets"] == last["changesets"]:
                return now
            last = now
        return last

    def recovery(self):
        o = self.options
        scale = o.duration / 60
        kill_at, restart_at, pg_at = 20 * scale, 25 * scale, 40 * scale
        victim = self.nodes[1] if len(self.nodes) > 1 else self.nodes[0]
        timeline = {}
        probes = []  # (wall time, node label, status or error)
        gauges = []  # (wall time, node label, livelist_store_up, livelist_live_query_out_of_service)
        stop = threading.Event()

        def probe():
            # Each node's page of customer 0 (JSON), five times a second.
            while not stop.is_set():
                for n, node in enumerate(self.nodes):
                    began = time.time()
                    try:
                        status, _, _ = Browser(node.port, source=loopback(0), cookies=self.jars[(n, 0)]).request(
                            "GET", "/lists/tickets", headers={"Accept": "application/json"}, timeout=2)
                    except (OSError, http.client.HTTPException) as error:
                        status = type(error).__name__
                    probes.append((began, node.label, status))
                    # And its gauges: the store reachable, the live query in service.
                    try:
                        with urllib.request.urlopen(f"http://{HOST}:{node.port}/metrics", timeout=2) as answer:
                            text = answer.read().decode()
                        up = re.search(r"^livelist_store_up (\S+)$", text, re.M)
                        out = re.search(r'^livelist_live_query_out_of_service\{list="tickets"\} (\S+)$', text, re.M)
                        gauges.append((began, node.label, up and float(up.group(1)), out and float(out.group(1))))
                    except (OSError, http.client.HTTPException):
                        pass
                stop.wait(0.2)

        def kill():
            timeline["kill"] = time.time()
            victim.kill()
            log(f"live-queries: killed node {victim.label} (SIGKILL)")

        def restart():
            port = victim.port
            timeline["restart"] = time.time()
            try:
                victim.start(port)
            except RuntimeError:
                victim.start(0)
                self.readers.move(port, victim.port)
            timeline["announced"] = time.time()
            log(f"live-queries: node {victim.label} started again on port {victim.port} "
                f"({timeline['announced'] - timeline['restart']:.1f} s)")

        def restart_database():
            timeline["pg_stop"] = time.time()
            done = subprocess.run([self.pgctl, "stop"], capture_output=True, text=True, timeout=120)
            timeline["pg_stopped"] = time.time()
            done2 = subprocess.run([self.pgctl, "start"], capture_output=True, text=True, timeout=120)
            timeline["pg_started"] = time.time()
            log(f"live-queries: PostgreSQL stopped ({done.returncode}) and started ({done2.returncode}) in "
                f"{timeline['pg_started'] - timeline['pg_stop']:.1f} s")

        events = [(kill_at, kill), (restart_at, restart)]
        if self.pgctl:
            events.append((pg_at, restart_database))
        watcher = threading.Thread(target=probe, daemon=True)
        watcher.start()
        try:
            changes, start, _ = self.load("recovery", o.duration, notify=False, events=events)
            time.sleep(10)
        finally:
            stop.set()
            watcher.join(10)
        self.readers.drain()
        after = metrics(self.nodes)
        result = self.analyse(changes)
        # The pages, against the database.
        titles = database_titles(self.database)
        page_mismatch = collections.Counter()
        page_errors = collections.Counter()
        examples = []

        def check_page(work):
            n, c = work
            browser = Browser(self.nodes[n].port, source=loopback(c), cookies=self.jars[(n, c)])
            try:
                status, _, body = browser.request("GET", "/lists/tickets", headers={"Accept": "application/json"}, timeout=30)
            except (OSError, http.client.HTTPException) as error:
                return n, c, f"error {type(error).__name__}", None
            if status != 200:
                return n, c, f"status {status}", None
            shown = {}
            for section in json.loads(body).get("sections", []):
                for cell in section.get("cells", []):
                    found = TITLE.search(cell.get("html", ""))
                    if found:
                        shown[int(found.group(1))] = found.group(2)
            return n, c, None, shown

        with ThreadPoolExecutor(8) as pool:
            for n, c, error, shown in pool.map(check_page, [(n, c) for n in range(len(self.nodes)) for c in range(o.customers)]):
                label = self.nodes[n].label
                if error:
                    page_errors[label] += 1
                    if len(examples) < 5:
                        examples.append(f"node {label}, {customer_name(c)}: {error}")
                    continue
                want = titles.get(customer_name(c), {})
                if shown != want:
                    page_mismatch[label] += 1
                    if len(examples) < 5:
                        wrong = sorted(t for t in set(want) | set(shown) if want.get(t) != shown.get(t))[:3]
                        examples.append(f"node {label}, {customer_name(c)}: " + ", ".join(
                            f"#{t} shows {shown.get(t)!r}, database {want.get(t)!r}" for t in wrong))
        # Every stream's final state, for every ticket changed after the stream opened (committed changes
        # of the whole run): it must show the ticket's title in the database.
        latest_change = {}
        for change in self.changes:
            if change["committed"] is not None:
                latest_change[change["ticket"]] = change
        stale = collections.Counter()
        checked = collections.Counter()
        stale_examples = []
        for ticket, change in latest_change.items():
            title = titles.get(customer_name(change["customer"]), {}).get(ticket)
            for sid in self.by_customer[change["customer"]]:
                if self.opened_at[sid] * 1e9 > change["sent"]:
                    continue
                label = self.nodes[self.streams[sid][1]].label
                checked[label] += 1
                seen = self.readers.latest[sid].get(ticket)
                shows = f"m-{seen[1]}" if seen else None
                if shows != title:
                    stale[label] += 1
                    if len(stale_examples) < 5:
                        stale_examples.append(f"stream {sid} (node {label}, {customer_name(change['customer'])}): #{ticket} shows "
                                              f"{shows!r}, database {title!r} (committed {(change['committed'] - self.started[change['label']] * 1e9) / 1e9:.1f} s "
                                              f"into the {change['label']} load)")
        states = self.readers.state
        not_open = collections.Counter(self.nodes[self.streams[sid][1]].label for sid, s in states.items() if s[0] != OPEN)
        reconnects = collections.Counter()
        refusals = collections.Counter()
        reopened = []
        for sid, (state, _, disconnects, _, refused, opened) in states.items():
            label = self.nodes[self.streams[sid][1]].label
            reconnects[label] += disconnects
            for status, count in refused.items():
                refusals[f"{status} on node {label}"] += count
            if self.streams[sid][1] == self.nodes.index(victim):
                later = [t for t in opened if t > timeline.get("kill", 0)]
                if later:
                    reopened.append(later[0])
        # Serving again: the probes' non-200 spans, per node.
        spans = collections.defaultdict(list)
        for label in (node.label for node in self.nodes):
            down = None
            for t, who, status in sorted(p for p in probes if p[1] == label):
                if status != 200 and down is None:
                    down = (t, status)
                elif status == 200 and down is not None:
                    spans[label].append((down[0], t, down[1]))
                    down = None
            if down is not None:
                spans[label].append((down[0], None, down[1]))
        first_after = {}
        if "pg_started" in timeline:
            for sid, first in self.readers.first.items():
                label = self.nodes[self.streams[sid][1]].label
                for seq, (stamp, _) in first.items():
                    change = result["seqs"].get(seq)
                    if change and change["sent"] > timeline["pg_started"] * 1e9:
                        if label not in first_after or stamp < first_after[label]:
                            first_after[label] = stamp
        failures = [f for c in changes for f in c["failures"]]
        failed_changes = [c for c in changes if c["failures"]]
        self.say(f"## 4. Recovery: node {victim.label} killed at {kill_at:.0f} s and started at {restart_at:.0f} s, PostgreSQL "
                 f"restarted at {pg_at:.0f} s, during a {o.duration:g} s load\n")

        def at(t):
            return f"{t - start:.1f} s" if t else "never"

        self.say("| what | outcome |")
        self.say("|---|---|")
        self.say(f"| changes | {result['committed']:,} committed of {result['issued']:,} issued; {len(failures):,} failed attempts "
                 f"({len(failed_changes):,} changes retried until they committed"
                 + (f", between {at(min(f[0] for f in failures) / 1e9)} and {at(max(f[0] for f in failures) / 1e9)}" if failures else "")
                 + (f"; first error: `{failures[0][1]}`" if failures else "") + ") |")
        lat = result["latencies"]
        self.say(f"| deliveries during the load | {result['expected']:,} expected, {result['received']:,} shown (live, or in a reconnect's reset), {result['superseded']:,} "
                 f"only in a later state, {result['lost']:,} never shown; out of order {result['disorder']:,}; p50 {percentile(lat, 0.5):.0f} ms, "
                 f"p99 {percentile(lat, 0.99):.0f} ms, max {max(lat) if lat else float('nan'):.0f} ms |")
        if "restart" in timeline:
            took = sorted(t - timeline["restart"] for t in reopened)
            self.say(f"| node {victim.label} after SIGKILL | started again in {timeline['announced'] - timeline['restart']:.1f} s (banner); "
                     f"{len(reopened):,} of {sum(1 for s in self.streams.values() if s[1] == self.nodes.index(victim)):,} of its streams "
                     f"reopened, all within {took[-1]:.1f} s of the start (median {percentile(took, 0.5):.1f} s) |" if took else
                     f"| node {victim.label} after SIGKILL | started again in {timeline['announced'] - timeline['restart']:.1f} s; no stream reopened |")
        if "pg_started" in timeline:
            self.say(f"| PostgreSQL | stopped in {timeline['pg_stopped'] - timeline['pg_stop']:.1f} s, started in "
                     f"{timeline['pg_started'] - timeline['pg_stopped']:.1f} s (at {at(timeline['pg_started'])}) |")
            for node in self.nodes:
                t = first_after.get(node.label)
                self.say(f"| node {node.label} after the database restart | first change committed after it shown on its streams "
                         f"{'%.2f s' % (t / 1e9 - timeline['pg_started']) if t else 'never'} after PostgreSQL was up again |")
        for node in self.nodes:
            text = "; ".join(f"{at(a)} to {at(b)} ({status})" for a, b, status in spans[node.label]) or "never"
            self.say(f"| node {node.label}: its page (JSON) not 200 | {text} |")
            for column, name in ((2, "livelist_store_up 0"), (3, "livelist_live_query_out_of_service 1")):
                runs, since = [], None
                for sample in sorted(g for g in gauges if g[1] == node.label):
                    bad = sample[column] is not None and (sample[column] == 0 if column == 2 else sample[column] == 1)
                    if bad and since is None:
                        since = sample[0]
                    elif not bad and since is not None:
                        runs.append(f"{at(since)} to {at(sample[0])}")
                        since = None
                if since is not None:
                    runs.append(f"{at(since)} to the end")
                self.say(f"| node {node.label}: {name} (/metrics, sampled every 0.2 s) | {'; '.join(runs) or 'never'} |")
        self.say("| pages 10 s after the load | " + ", ".join(
            f"node {node.label}: {o.customers - page_mismatch[node.label] - page_errors[node.label]:,} of {o.customers:,} equal the database"
            + (f" ({page_errors[node.label]} not served)" if page_errors[node.label] else "") for node in self.nodes) + " |")
        self.say("| streams' final state | " + ", ".join(
            f"node {node.label}: {checked[node.label] - stale[node.label]:,} of {checked[node.label]:,} (stream, changed ticket) show the latest title"
            for node in self.nodes) + " |")
        self.say("| streams | " + ", ".join(f"node {node.label}: {not_open[node.label]:,} not open at the end, "
                                          f"{reconnects[node.label]:,} disconnects over the run" for node in self.nodes)
                 + (f"; refused: {', '.join(f'{v:,}x {k}' for k, v in refusals.items())}" if refusals else "") + " |")
        self.say(f"| live query failures (/metrics, both nodes, whole run) | {after['failures']:,.0f} |")
        self.say("")
        for node in self.nodes:
            said = []
            for line in node.server.log_text(60000).splitlines():
                if re.search(r"tickets:|database|live query", line) and line not in said:
                    said.append(line)
            for line in said[-6:]:
                self.say(f"- node {node.label}'s log: `{line.strip()[:240]}`")
        for line in examples + stale_examples:
            self.say(f"- {line}")
        self.say("")

    def close(self):
        for helper in self.helpers:
            tools.stop_process(helper.process, 5, kill=True)
        if self.readers:
            self.readers.close()
        for node in self.nodes:
            node.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2, help="desk nodes on the one database (default 2)")
    parser.add_argument("--customers", type=int, default=1000, help="customers, each signed in on every node (default 1,000)")
    parser.add_argument("--rows", type=int, default=100_000, help="tickets, as many per customer (default 100,000)")
    parser.add_argument("--streams", type=int, default=None, help="event streams, as many per customer (default 10,000)")
    parser.add_argument("--rate", type=float, default=100, help="changes a second, all writers together (default 100)")
    parser.add_argument("--duration", type=float, default=None, help="seconds of each load (default 60)")
    parser.add_argument("--writers", type=int, default=4, help="writer connections (default 4)")
    parser.add_argument("--readers", type=int, default=2, help="reader processes (default 2)")
    parser.add_argument("--binary", default=os.path.join(HERE, "..", "..", "Examples", "Desk", ".build", "release", "desk"),
                        help="the desk binary (default: its release build)")
    parser.add_argument("--quick", action="store_true", help="1,000 streams and 20 s loads: a smoke run")
    parser.add_argument("--skip-recovery", action="store_true", help="leave out part 4")
    parser.add_argument("--no-index", action="store_true", help="no index on tickets.customer (as the desk creates its table)")
    parser.add_argument("--role", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.role == "reader":
        return reader_role()
    if options.role == "writer":
        return writer_role(options.config)
    if options.role == "listener":
        return listener_role(options.config)
    options.streams = options.streams or (1000 if options.quick else 10_000)
    options.duration = options.duration or (20 if options.quick else 60)
    if not (1 <= options.nodes <= 4 and 1 <= options.customers <= 4000 and options.rows >= options.customers
            and options.customers <= options.streams <= 40_000 and options.streams % options.customers == 0
            and 0 < options.rate <= 1000 and 5 <= options.duration <= 300 and 1 <= options.writers <= 32 and 1 <= options.readers <= 8):
        sys.exit("live-queries: 1-4 nodes, 1-4,000 customers, at least a row per customer, streams a multiple of the customers "
                 "(at most 40,000), at most 1,000 changes/s, 5-300 s, 1-32 writers, 1-8 readers")
    if not os.environ.get("LIVELIST_TEST_DATABASE_URL"):
        sys.exit("live-queries: run it inside Scripts/with-postgres.sh (no LIVELIST_TEST_DATABASE_URL)")
    if not os.path.exists(options.binary):
        sys.exit(f"live-queries: build the desk first: swift build -c release --package-path Examples/Desk --product desk "
                 f"({options.binary} missing)")
    if importlib.util.find_spec("psycopg") is None:
        sys.exit('live-queries: needs psycopg 3: python3 -m pip install "psycopg[binary]"')
    tools.raise_open_files(min(options.streams + 2000, 65_536))
    bench = Bench(options)
    try:
        bench.run()
    finally:
        bench.close()
        print("\n".join(bench.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
