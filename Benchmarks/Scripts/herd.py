#!/usr/bin/env python3
"""A node's death and its viewers' return: kill -9 of one of several nodes on one PostgreSQL.

Run it inside Scripts/with-postgres.sh (127.0.0.1 only, bounded in time):

    Scripts/with-postgres.sh Benchmarks/run herd [--nodes 4] [--streams 3000] [--binary PATH] [--before PATH]

Starts --nodes release nodes on a fresh database, opens --streams event streams on one list to each, and
kills one node with SIGKILL, then changes the list while its viewers are away. They come back as a
browser's do: EventSource retries by itself after the stream's `retry:` (no jitter), with the
`Last-Event-ID` it saw last, through a load balancer that picks the live nodes in turn; a viewer
refused (503) backs off as livelist.js does, min(30 s, 1 s x 2^tries) x (0.75 to 1.25). Two runs: with a
node's worth of headroom (--max-connections leaves the others room for every viewer of the killed node,
as docs/DEPLOYMENT.md sizes them), and without (room for about a fifth of them). Prints, per run: how
long after the kill the killed node's viewers streamed again (p50/p99/max, and how many did within the
run), how many of those resumed with a diff (the change they missed) or with a reset, the 503s they got, a write and /healthz on a surviving node amid the return (and, every 0.25 s through
the return, a /healthz, /metrics or write to it: how many were answered 2xx), and the fan-out of one change
to the other nodes' viewers before the kill (the baseline) and during the return, from the PUT to the
kernel's receive time (p50/p99).
"""
import argparse
import collections
import heapq
import os
import random
import re
import select
import socket
import time

import fanout as fanout_tools
from livelist_tools import Server, create_database, default_binary, percentile, raise_open_files

DATABASE_URL = os.environ.get("LIVELIST_TEST_DATABASE_URL")
PSQL = os.environ.get("LIVELIST_TEST_PSQL", "psql")
# The `retry:` a node's streams carry (ServerConfiguration.retryMilliseconds, not a flag).
RETRY_MS = 2000
REQUEST = "GET /lists/herd/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
ID = re.compile(rb"\nid: (\d+)\n")
PATCH = re.compile(rb"event: patch\n(?:id: \d+\n)?data: ([^\n]*)\n")


class Viewer:
    """One browser's stream: its socket, the node it is on, and what it waits for."""

    def __init__(self, sock, port):
        self.sock, self.port, self.buffer, self.tries, self.state = sock, port, b"", 0, "streaming"
        self.last_id, self.resumed = None, None  # the last event id seen; "diff" or "reset" once back

    def head(self):
        """The request, with the Last-Event-ID an EventSource sends when it reconnects."""
        resume = f"Last-Event-ID: {self.last_id}\r\n" if self.last_id else ""
        return (REQUEST + resume + "\r\n").encode()


def request(port, method, path, body=None):
    """One request on a connection of its own: (status, seconds)."""
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        payload = body.encode() if body else b""
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {len(payload)}\r\n"
        s.sendall((head + ("Content-Type: application/json\r\n" if body else "") + "\r\n").encode() + payload)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    request.last = data[-400:]
    return int(data.split(b" ", 2)[1]), time.perf_counter() - started


def change(port, marker):
    return request(port, "PUT", "/lists/herd", '{"sections":[{"id":"s","cells":[{"id":"a","text":"%s"}]}]}' % marker)


def run(binary, database, nodes, streams, room, retry_ms, seconds):
    servers = [Server(binary, "--no-demo", "--max-connections", str(room), "--database-url", database) for _ in range(nodes)]
    try:
        ports = [s.port for s in servers]
        fanout_tools.put(ports[0], "herd", ["start"])
        viewers = [Viewer(sock, port) for port in ports for sock in fanout_tools.open_streams(port, "herd", streams)]
        for v in viewers:
            v.sock.setsockopt(socket.SOL_SOCKET, fanout_tools.SO_TIMESTAMPNS, 1)
        poller = select.epoll()
        by_fd = {}

        def watch(v, events=select.EPOLLIN):
            by_fd[v.sock.fileno()] = v
            poller.register(v.sock.fileno(), events)

        for v in viewers:
            watch(v)
        due = []  # (when, id, viewer) of the viewers waiting to reconnect, soonest first
        arrivals = {}  # marker -> {id(viewer): the kernel's receive time of the event on its stream}

        probes = []  # (kind, status) of the writes and probes sent to a survivor through the return

        def probe_survivor(now):
            """Every 0.25 s after the kill, a /healthz, a /metrics or a write (to a list nobody watches)."""
            if not killed or now < probe_survivor.due:
                return
            kind = ("healthz", "metrics", "write", "healthz")[len(probes) % 4]
            try:
                if kind == "write":
                    status, _ = request(ports[-1], "PUT", "/lists/herd-writes", '{"sections":[{"id":"s","cells":[]}]}')
                else:
                    status, _ = request(ports[-1], "GET", "/" + kind)
            except (OSError, IndexError, ValueError):  # reset, or closed with no answer
                status = 0
            probes.append((kind, status, now - killed[0]))
            probe_survivor.due = now + 0.25
        probe_survivor.due = 0
        killed = []

        def pump(until, done=None):
            """Reads and reconnects until `until` (perf_counter), or until `done()`."""
            while time.perf_counter() < until:
                now = time.perf_counter()
                probe_survivor(now)
                while due and due[0][0] <= now:
                    connect(heapq.heappop(due)[2])
                for fd, events in poller.poll(0.01):
                    v = by_fd.get(fd)
                    if v is not None:
                        step(v, events)
                if done and done():
                    return

        def connect(v):
            alive = [p for p in ports if servers[ports.index(p)].process.poll() is None]
            v.port = alive[connect.turn % len(alive)]
            connect.turn += 1
            v.sock = socket.socket()
            v.sock.setblocking(False)
            v.sock.setsockopt(socket.SOL_SOCKET, fanout_tools.SO_TIMESTAMPNS, 1)
            v.sock.connect_ex(("127.0.0.1", v.port))
            v.buffer = b""
            try:
                # As a browser does, the head follows the connection at once (on loopback the
                # connection is usually made by now); else when the socket turns writable.
                v.sock.send(v.head())
                v.state = "head"
                watch(v)
            except OSError:
                v.state = "connecting"
                watch(v, select.EPOLLOUT)
        connect.turn = 0

        def lost(v, refused):
            poller.unregister(v.sock.fileno())
            del by_fd[v.sock.fileno()]
            v.sock.close()
            now = time.perf_counter()
            if refused:
                v.refusals = getattr(v, "refusals", 0) + 1
                v.due = now + min(30.0, 2 ** v.tries) * random.uniform(0.75, 1.25)
                v.tries += 1
            else:
                v.due = now + retry_ms / 1000
            v.state = "waiting"
            heapq.heappush(due, (v.due, id(v), v))

        def step(v, events):
            if v.state == "connecting":
                if v.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    return lost(v, True)
                v.sock.send(v.head())
                v.state = "head"
                poller.modify(v.sock.fileno(), select.EPOLLIN)
                return
            try:
                data, stamp = fanout_tools.receive(v.sock)
            except BlockingIOError:
                return
            except OSError:
                data, stamp = b"", None
            if not data:
                return lost(v, v.state == "head")
            v.buffer = (v.buffer + data)[-4096:]
            if v.state == "head" and b"\r\n\r\n" in v.buffer:
                if b" 200 " not in v.buffer.split(b"\r\n")[0]:
                    return lost(v, True)
                v.state, v.back = "streaming", time.perf_counter()
                v.buffer = v.buffer[v.buffer.index(b"\r\n\r\n") + 4:]
                v.resuming = v.last_id is not None
            if v.state == "streaming":
                ids = ID.findall(v.buffer)
                if ids:
                    v.last_id = int(ids[-1])
                if getattr(v, "resuming", False) and (patch := PATCH.search(v.buffer)):
                    # The first changeset after the return: a catch-up diff, or a reset.
                    v.resumed, v.resuming = ("reset" if b'"op":"reset"' in patch.group(1) else "diff"), False
            for marker in arrivals:
                if id(v) not in arrivals[marker] and marker.encode() in v.buffer:
                    arrivals[marker][id(v)] = stamp

        def fan(marker, port, on):
            """Changes the list on `port`; the arrival times of its event on the streams in `on`."""
            arrivals[marker] = {}
            started = time.time_ns()
            status, _ = change(port, marker)
            if status != 200:
                return status, status
            pump(time.perf_counter() + 10, lambda: all(id(v) in arrivals[marker] for v in on))
            times = [(arrivals[marker][id(v)] - started) / 1e6 for v in on if arrivals[marker].get(id(v))]
            if len(times) < len(on):
                raise RuntimeError(f"{len(on) - len(times)} of {len(on)} streams never got {marker}")
            return percentile(times, 0.5), percentile(times, 0.99)

        pump(time.perf_counter() + 0.5)
        others = [v for v in viewers if v.port != ports[0]]
        before = fan("before-kill", ports[1], others)
        victims = [v for v in viewers if v.port == ports[0]]
        killed_at = time.perf_counter()
        servers[0].process.kill()
        killed.append(killed_at)
        # A change while its viewers are away: each must resume with it, as a diff while the log holds it.
        pump(killed_at + 0.2)
        change(ports[1], "while-away")
        # The return: the change lands as the first viewers come back, on the others' streams.
        pump(killed_at + retry_ms / 1000 + 0.1)
        during = fan("during-return", ports[1], others)
        # A write and a probe to a surviving node amid the return (a full one, in the run without room).
        write, write_seconds = change(ports[-1], "amid-the-return")
        health, health_seconds = request(ports[-1], "GET", "/healthz")
        pump(killed_at + seconds)
        # What the survivors counted: connections refused at accept, and streams refused on the reserve.
        counted = {"connections": 0, "streams": 0}
        for port in ports[1:]:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                text = b"".join(iter(lambda: s.recv(65536), b"")).decode(errors="replace")
            for line in text.splitlines():
                for kind in counted:
                    if line.startswith(f"livelist_{kind}_refused_total "):
                        counted[kind] += int(float(line.split()[1]))
        resumed = collections.Counter(v.resumed for v in victims if v.state == "streaming" and getattr(v, "back", 0) > killed_at)
        back = [v.back - killed_at for v in victims if v.state == "streaming" and getattr(v, "back", 0) > killed_at]
        refusals = sum(getattr(v, "refusals", 0) for v in victims)
        for v in viewers:
            v.sock.close()
        return {"before": before, "during": during, "back": back, "victims": len(victims), "refusals": refusals,
                "resumed": resumed, "refused_viewers": sum(1 for v in victims if getattr(v, "refusals", 0)), "counted": counted,
                "write": (write, write_seconds * 1000), "health": (health, health_seconds * 1000),
                "probes": (sum(1 for _, status, _ in probes if 200 <= status < 300), len(probes)),
                "unanswered": [(kind, status, round(at, 2)) for kind, status, at in probes if not 200 <= status < 300]}
    finally:
        for s in servers:
            s.close()


def shown(fanned):
    """p50 / p99 of a change's fan-out, or the status that refused its PUT."""
    p50, p99 = fanned
    return f"{p50:.1f} / {p99:.1f}" if isinstance(p50, float) else f"PUT refused {p50}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=default_binary(), help="the livelist binary (default: the release build)")
    parser.add_argument("--nodes", type=int, default=4, help="nodes on the database (default 4)")
    parser.add_argument("--streams", type=int, default=3000, help="event streams per node (default 3,000)")
    parser.add_argument("--seconds", type=float, default=20, help="how long after the kill each run watches (default 20)")
    parser.add_argument("--before", help="a second livelist binary (an older build), run the same way after this one")
    args = parser.parse_args()
    if not DATABASE_URL:
        raise SystemExit("bench-herd: run inside Scripts/with-postgres.sh (LIVELIST_TEST_DATABASE_URL is unset)")
    total = args.nodes * args.streams
    raise_open_files(2 * total + 2000)
    # A node admits about 95 % of --max-connections as streams (the rest is its reserve).
    roomy = int((args.streams + args.streams / (args.nodes - 1)) / 0.95) + 200
    tight = int((args.streams + args.streams / (args.nodes - 1) / 5) / 0.95) + 50
    results = []
    binaries = [("this build", args.binary)] + ([("--before", args.before)] if args.before else [])
    for label, room in (("with a node of headroom", roomy), ("without headroom", tight)):
        for build, binary in binaries:
            database = create_database(DATABASE_URL, PSQL, "herd")
            results.append((f"{label}, {build}", room, run(binary, database, args.nodes, args.streams, room, RETRY_MS, args.seconds)))
    print(f"## A node killed: {args.nodes} nodes x {args.streams:,} streams, retry {RETRY_MS} ms, watched {args.seconds:.0f} s\n")
    print("| run | --max-connections | viewers back | back after p50 / p99 / max s | 503s (viewers) "
          "| others' fan-out p50 / p99 ms, before | during the return | PUT to a survivor | its /healthz | back with a diff / a reset | probes and writes to it answered | refused at accept / streams refused |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, room, r in results:
        back = r["back"]
        print(f"| {label} | {room:,} | {len(back):,} of {r['victims']:,} | {percentile(back, .5):.2f} / {percentile(back, .99):.2f} / "
              f"{max(back) if back else float('nan'):.2f} | {r['refusals']:,} ({r['refused_viewers']:,}) "
              f"| {shown(r['before'])} | {shown(r['during'])} "
              f"| {r['write'][0]} in {r['write'][1]:.0f} ms | {r['health'][0]} in {r['health'][1]:.0f} ms "
              f"| {r['resumed']['diff']:,} / {r['resumed']['reset']:,} | {r['probes'][0]:,} of {r['probes'][1]:,} "
              f"| {r['counted']['connections']:,} / {r['counted']['streams']:,} |")


    for label, _, r in results:
        if r["unanswered"]:
            print(f"\n{label}: not answered 2xx (kind, status, seconds after the kill): {r['unanswered']}")


if __name__ == "__main__":
    main()
