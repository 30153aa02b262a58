#!/usr/bin/env python3
"""A large audience: --streams event streams over --nodes nodes on one PostgreSQL, changed fast, then a node killed.

Run it inside Scripts/with-postgres.sh (127.0.0.1 only, bounded in time), after building the release binary:

    Scripts/with-postgres.sh Benchmarks/run audience [--nodes 7] [--streams 100000] [--rates 10,2]
                                                     [--seconds 60] [--binary PATH]

The streams are spread evenly over the nodes, each node's from a client process of its own (a process holds at
most 20,000 descriptors here) bound to a source address of its own (127.0.0.2, 127.0.0.3, ...), and each node
has room for a node's worth more (--max-connections: the streams over nodes - 1). The clients read as fast as
they can, check every changeset's `from` against the version the stream had (a gap) and count the versions a
catch-up covered (skipped), and stamp each event with the kernel's receive time. In turn:

1. Memory: each node's resident memory before and with its streams.
2. One change, PUT to one node: from the PUT to each stream's receive time, p50/p99/max, and streams missing it.
3. For each rate of --rates: that many changes a second for --seconds, PUT round the nodes on keep-alive
   connections: the PUTs' latency from when each was due (p50/p99/max), streams closed meanwhile (clients' count
   and the nodes' livelist_streams_closed_total), gaps, versions skipped, and the streams at the last version
   2 s after the last PUT was answered.
4. kill -9 of one node, with a change while its viewers are away and a change a second throughout: its viewers
   come back as EventSource does (after the stream's 2 s `retry:`, with their Last-Event-ID, to the live nodes in
   turn; a 503 backs off as livelist.js does): how long until each streams again (p50/p99/max), how many resumed
   with a diff rather than a reset, the writes and /healthz probes answered during the return, and the other
   viewers' fan-out of one change before the kill and during the return.
"""
import argparse
import collections
import concurrent.futures
import http.client
import multiprocessing
import os
import random
import re
import select
import socket
import threading
import time

import fanout as fanout_tools  # the stamped reads of fanout.py, beside this script
from livelist_tools import Server, create_database, default_binary, memory_kib, percentile, raise_open_files

DATABASE_URL = os.environ.get("LIVELIST_TEST_DATABASE_URL")
PSQL = os.environ.get("LIVELIST_TEST_PSQL", "psql")
EVENT = re.compile(rb"event: (\w+)\n(?:id: (\d+)\n)?(?:retry: \d+\n)?data: ([^\n]*)\n\n")
FROM = re.compile(rb'"from":(\d+),"version":(\d+)')
RETRY = 2.0


class Stream:
    __slots__ = ("sock", "port", "tail", "version", "state", "due", "tries", "seen", "lost_at", "back_at", "resumed")

    def __init__(self, port):
        self.port, self.tail, self.version, self.state, self.tries = port, b"", None, "new", 0
        self.seen, self.lost_at, self.back_at, self.resumed, self.sock, self.due = None, None, None, None, None, 0


class Clients:
    """One client process's streams (run in the child): opens them, reads them, answers the parent's asks."""

    def __init__(self, source, ports, home, count, pipe):
        self.source, self.ports, self.home, self.pipe = source, ports, home, pipe
        self.poller, self.by_fd, self.streams, self.waiting = select.epoll(), {}, [], []
        self.target, self.counts = None, {"gaps": 0, "skipped": 0, "resets": 0, "closed": 0, "refused": 0}
        self.dead, self.turn = set(), 0
        for _ in range(count):
            self.streams.append(Stream(home))

    def connect(self, stream):
        sock = socket.socket()
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, fanout_tools.SO_TIMESTAMPNS, 1)
        sock.bind((self.source, 0))
        sock.connect_ex(("127.0.0.1", stream.port))
        stream.sock, stream.state, stream.tail = sock, "connecting", b""
        self.by_fd[sock.fileno()] = stream
        self.poller.register(sock.fileno(), select.EPOLLOUT)

    def head(self, stream):
        resume = f"Last-Event-ID: {stream.version}\r\n" if stream.version is not None else ""
        return (f"GET /lists/audience/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n{resume}\r\n").encode()

    def lose(self, stream, refused):
        self.poller.unregister(stream.sock.fileno())
        del self.by_fd[stream.sock.fileno()]
        stream.sock.close()
        now = time.time()
        if refused:
            self.counts["refused"] += 1
            stream.due = now + min(30.0, 2 ** stream.tries) * random.uniform(0.75, 1.25)
            stream.tries += 1
        else:
            if stream.state == "streaming":
                self.counts["closed"] += 1
                stream.lost_at = stream.lost_at or now
            stream.due = now + RETRY
        stream.state = "waiting"
        self.waiting.append(stream)

    def step(self, stream, events):
        if stream.state == "connecting":
            if stream.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                return self.lose(stream, True)
            stream.sock.send(self.head(stream))
            stream.state = "head"
            self.poller.modify(stream.sock.fileno(), select.EPOLLIN)
            return
        try:
            data, stamp = fanout_tools.receive(stream.sock, 262144)
        except BlockingIOError:
            return
        except OSError:
            data, stamp = b"", None
        if not data:
            return self.lose(stream, stream.state == "head")
        buffer = stream.tail + data
        if stream.state == "head":
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                stream.tail = buffer[-8192:]
                return
            if b" 200 " not in buffer[:buffer.find(b"\r\n")]:
                return self.lose(stream, True)
            stream.state, stream.tries, buffer = "streaming", 0, buffer[end + 4:]
            if stream.lost_at is not None:
                stream.back_at, stream.resumed = time.time(), "pending"
        last = buffer.rfind(b"\n\n")
        if last < 0:
            stream.tail = buffer
            return
        for name, _, data in EVENT.findall(buffer, 0, last + 2):
            if name != b"patch":
                if name == b"stream" and (match := re.search(rb'"version":(\d+)', data)):
                    stream.version = int(match.group(1)) if stream.version is None else stream.version
                continue
            match = FROM.search(data)
            if not match:
                continue
            start, version = int(match.group(1)), int(match.group(2))
            reset = b'"op":"reset"' in data
            if stream.resumed == "pending":
                stream.resumed = "reset" if reset else "diff"
            elif reset:
                self.counts["resets"] += 1
            elif stream.version is not None and start != stream.version:
                self.counts["gaps"] += 1
            elif stream.version is not None:
                self.counts["skipped"] += version - start - 1  # versions a catch-up covered
            stream.version = version
            if self.target is not None and stream.seen is None and version >= self.target:
                stream.seen = stamp
        stream.tail = buffer[last + 2:]

    def answer(self, ask):
        kind, value = ask
        if kind == "open":
            # A few hundred at a time, as visitors arrive, rather than past the nodes' listen backlog at once.
            self.opening = list(self.streams)
            return None
        if kind == "opened":
            return sum(1 for s in self.streams if s.state == "streaming")
        if kind == "watch":
            self.target = value
            for stream in self.streams:
                stream.seen = None
            return None
        if kind == "arrivals":
            return [s.seen for s in self.streams if s.seen is not None], sum(1 for s in self.streams if s.seen is None)
        if kind == "counts":
            versions = [s.version for s in self.streams if s.state == "streaming"]
            return dict(self.counts), sum(1 for v in versions if v == value), len(versions)
        if kind == "dead":
            self.dead.add(value)
            return None
        if kind == "returns":
            gone = [s for s in self.streams if s.lost_at is not None]
            return [(s.back_at - s.lost_at) if s.back_at else None for s in gone], [s.resumed for s in gone]
        if kind == "close":
            for stream in self.streams:
                if stream.sock:
                    stream.sock.close()
            return None
        raise ValueError(kind)

    def run(self):
        self.poller.register(self.pipe.fileno(), select.EPOLLIN)
        self.opening = []
        while True:
            now = time.time()
            if self.opening:
                pending = sum(1 for s in self.streams if s.state in ("connecting", "head"))
                for _ in range(max(0, 300 - pending)):
                    if self.opening:
                        self.connect(self.opening.pop())
            if self.waiting:
                due, self.waiting = [s for s in self.waiting if s.due <= now], [s for s in self.waiting if s.due > now]
                for stream in due:
                    alive = [p for p in self.ports if p not in self.dead]
                    stream.port = stream.port if stream.port not in self.dead else alive[self.turn % len(alive)]
                    self.turn += 1
                    self.connect(stream)
            for fd, events in self.poller.poll(0.01):
                if fd == self.pipe.fileno():
                    ask = self.pipe.recv()
                    self.pipe.send(self.answer(ask))
                    if ask[0] == "close":
                        return
                    continue
                stream = self.by_fd.get(fd)
                if stream is not None:
                    self.step(stream, events)


def client_process(source, ports, home, count, pipe, nice):
    raise_open_files(count + 1000)
    os.nice(nice)
    Clients(source, ports, home, count, pipe).run()


def ask_all(pipes, kind, value=None):
    for pipe in pipes:
        pipe.send((kind, value))
    return [pipe.recv() for pipe in pipes]


def put(connection, text):
    body = '{"sections":[{"id":"s","cells":[{"id":"a","text":"%s"}]}]}' % text
    connection.request("PUT", "/lists/audience", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status, int(response.getheader("ETag", '"0"').strip('W/"') or 0)


def metrics(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def fan(pipes, port, text, version):
    """One change PUT to `port`, the list then at `version`: its status, the ms from the PUT to each stream's
    receive time, and how many streams of `pipes` never got it."""
    ask_all(pipes, "watch", version)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.connect()
    started = time.time_ns()
    status, version = put(connection, text)
    connection.close()
    deadline = time.time() + 15
    while time.time() < deadline:
        answers = ask_all(pipes, "arrivals")
        if sum(missing for _, missing in answers) == 0:
            break
        time.sleep(0.2)
    stamps = [stamp for seen, _ in answers for stamp in seen]
    times = [(stamp - started) / 1e6 for stamp in stamps]
    return status, times, sum(missing for _, missing in answers), version


def shown(times):
    return f"{percentile(times, .5):,.0f} / {percentile(times, .99):,.0f} / {max(times) if times else float('nan'):,.0f}"


class Writer:
    """PUTs to the list round the nodes, each on a keep-alive connection of its own thread."""

    def __init__(self, ports):
        self.ports, self.local = ports, threading.local()

    def __call__(self, port, text):
        connections = self.local.__dict__.setdefault("connections", {})
        for attempt in range(2):
            try:
                if port not in connections:
                    connections[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                return put(connections[port], text)
            except (OSError, http.client.HTTPException):
                connections.pop(port, None)
        return 0, 0


def changes(writer, ports, rate, seconds, label):
    """`rate` changes a second for `seconds`, round `ports`: the latencies from when each was due (ms), the
    statuses, and the newest version a PUT answered."""
    started, latencies, statuses, newest = time.perf_counter(), [], [], 0
    count = int(rate * seconds)

    def one(index):
        due = started + index / rate
        time.sleep(max(0.0, due - time.perf_counter()))
        status, version = writer(ports[index % len(ports)], f"{label}-{index}")
        return (time.perf_counter() - due) * 1000, status, version

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        for latency, status, version in pool.map(one, range(count)):
            latencies.append(latency)
            statuses.append(status)
            newest = max(newest, version)
    return latencies, statuses, newest


def node_counts(ports, names):
    totals = collections.Counter()
    for port in ports:
        for name, value in metrics(port).items():
            if any(name.startswith(prefix) for prefix in names):
                totals[name] += value
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=default_binary(), help="the livelist binary (default: the release build)")
    parser.add_argument("--nodes", type=int, default=7, help="nodes on the database (default 7)")
    parser.add_argument("--streams", type=int, default=100_000, help="event streams in all (default 100,000)")
    parser.add_argument("--rates", default="10,2", help="changes a second to run, in turn (default 10,2)")
    parser.add_argument("--seconds", type=float, default=60, help="how long each rate runs (default 60)")
    parser.add_argument("--return-seconds", type=float, default=15, help="how long the return is watched (default 15)")
    parser.add_argument("--client-nice", type=int, default=19,
                        help="the client processes' niceness (default 19: the viewers stand for browsers on other machines, "
                             "so the nodes come first for the cores; 0 to share them evenly)")
    args = parser.parse_args()
    if not DATABASE_URL:
        raise SystemExit("audience: run inside Scripts/with-postgres.sh (LIVELIST_TEST_DATABASE_URL is unset)")
    per_node = args.streams // args.nodes
    room = per_node * args.nodes // (args.nodes - 1) + 300
    raise_open_files(room + 2000)
    database = create_database(DATABASE_URL, PSQL, "audience")
    servers = [Server(args.binary, "--no-demo", "--max-connections", str(room), "--database-url", database) for _ in range(args.nodes)]
    ports = [s.port for s in servers]
    processes, pipes = [], []
    try:
        version = put(http.client.HTTPConnection("127.0.0.1", ports[0], timeout=30), "start")[1]
        idle = [memory_kib(s.process.pid) * 1024 for s in servers]
        for index, port in enumerate(ports):
            mine, theirs = multiprocessing.Pipe()
            process = multiprocessing.Process(target=client_process, args=(f"127.0.0.{index + 2}", ports, port, per_node, theirs, args.client_nice), daemon=True)
            process.start()
            processes.append(process)
            pipes.append(mine)
        opening = time.perf_counter()
        ask_all(pipes, "open")
        while sum(ask_all(pipes, "opened")) < per_node * args.nodes and time.perf_counter() - opening < 120:
            time.sleep(0.5)
        opened = sum(ask_all(pipes, "opened"))
        opened_in = time.perf_counter() - opening
        time.sleep(2)
        held = [memory_kib(s.process.pid) * 1024 for s in servers]
        grown = sum(h - i for h, i in zip(held, idle))
        print(f"## {opened:,} streams over {args.nodes} nodes (--max-connections {room:,} each), opened in {opened_in:.1f} s\n")
        print(f"Memory: the nodes grew from {sum(idle) / 2**20:.1f} to {sum(held) / 2**20:.1f} MiB, {grown / 2**20:.1f} MiB for the "
              f"streams ({grown / max(1, opened):.0f} B a stream; per node {', '.join(f'{(h - i) / 2**20:.1f}' for h, i in zip(held, idle))} MiB)\n")

        status, times, missing, version = fan(pipes, ports[0], "one", version + 1)
        print(f"One change (PUT {status}): PUT to receive p50 / p99 / max {shown(times)} ms, {missing:,} streams missed it\n")

        writer = Writer(ports)
        print("| changes/s | PUTs (answered) | PUT from due p50 / p99 / max ms | streams closed: clients / nodes | gaps "
              "| resets | versions skipped | nodes' coalesced viewers | at the last version 2 s after | open |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        closed_names = ("livelist_streams_closed_total", "livelist_coalesced_viewers_total")
        for rate in [float(r) for r in args.rates.split(",")]:
            before_clients = ask_all(pipes, "counts", 0)
            before_nodes = node_counts(ports, closed_names)
            latencies, statuses, version = changes(writer, ports, rate, args.seconds, f"r{rate:g}")
            time.sleep(2)
            after = ask_all(pipes, "counts", version)
            after_nodes = node_counts(ports, closed_names)
            delta = {k: sum(a[0][k] for a in after) - sum(b[0][k] for b in before_clients) for k in after[0][0]}
            nodes_closed = sum(v - before_nodes[k] for k, v in after_nodes.items() if k.startswith("livelist_streams_closed_total"))
            coalesced = sum(v - before_nodes[k] for k, v in after_nodes.items() if k.startswith("livelist_coalesced"))
            print(f"| {rate:g} | {len(statuses):,} ({sum(1 for s in statuses if 200 <= s < 300):,}) | {shown(latencies)} "
                  f"| {delta['closed']:,} / {nodes_closed:,.0f} | {delta['gaps']:,} | {delta['resets']:,} | {delta['skipped']:,} | {coalesced:,.0f} "
                  f"| {sum(a[1] for a in after):,} | {sum(a[2] for a in after):,} |")

        # A node killed: the others' fan-out before, its viewers' return.
        others = pipes[1:]
        _, before, _, version = fan(others, ports[1], "before-kill", version + 1)
        servers[0].process.kill()
        killed = time.time()
        ask_all(pipes, "dead", ports[0])
        time.sleep(0.3)
        away, version = put(http.client.HTTPConnection("127.0.0.1", ports[1], timeout=30), "while-away")
        probes, during = [], None
        while time.time() < killed + args.return_seconds:
            if during is None and time.time() > killed + RETRY + 0.3:
                _, during, _, version = fan(others, ports[1], "during-return", version + 1)
            kind = ("healthz", "write", "healthz", "metrics")[len(probes) % 4]
            try:
                connection = http.client.HTTPConnection("127.0.0.1", ports[-1], timeout=30)
                if kind == "write":  # to a list nobody watches, so that the viewers' versions stay the list's
                    connection.request("PUT", "/lists/audience-writes", '{"sections":[]}', {"Content-Type": "application/json"})
                else:
                    connection.request("GET", "/" + kind)
                status = connection.getresponse().status
                connection.close()
            except (OSError, http.client.HTTPException):
                status = 0
            probes.append(status)
            time.sleep(0.25)
        backs, resumed = [], collections.Counter()
        for times_back, kinds in ask_all(pipes[:1], "returns"):
            backs += times_back
            resumed.update(kinds)
        back = [b for b in backs if b is not None]
        final = ask_all(pipes, "counts", version)
        refused = final[0][0]["refused"]
        print(f"\nA node killed with SIGKILL ({len(backs):,} viewers; PUT while they were away: {away}):\n")
        print(f"- back on the others: {len(back):,} within {args.return_seconds:.0f} s, after p50 / p99 / max "
              f"{percentile(back, .5):.2f} / {percentile(back, .99):.2f} / {max(back) if back else float('nan'):.2f} s; "
              f"resumed with a diff {resumed['diff']:,}, with a reset {resumed['reset']:,}; connections refused or failed on the way {refused:,}")
        print(f"- the others' fan-out p50 / p99 / max: {shown(before)} ms before, {shown(during or [])} ms during the return")
        print(f"- writes and probes to a survivor every 0.25 s: {sum(1 for s in probes if 200 <= s < 300):,} of {len(probes):,} answered 2xx")
        print(f"- at the last version at the end: {sum(a[1] for a in final):,} of {sum(a[2] for a in final):,} open streams; "
              f"gaps {sum(a[0]['gaps'] for a in final):,}, resets {sum(a[0]['resets'] for a in final):,} in all")
    finally:
        for pipe in pipes:
            try:
                pipe.send(("close", None))
            except OSError:
                pass
        for process in processes:
            process.join(5)
            if process.is_alive():
                process.kill()
        for server in servers:
            server.close()


if __name__ == "__main__":
    main()
