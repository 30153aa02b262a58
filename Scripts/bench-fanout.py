#!/usr/bin/env python3
"""Fan-out latency and idle-stream memory of the LiveList server, on 127.0.0.1 only, bounded in time.

Starts the release `livelist` binary (build it first: swift build -c release --product livelist; or
--binary, or LIVELIST_BINARY) with an empty data folder and opens --idle (10,000) idle event streams,
reading the server's resident memory (VmRSS) before and with them: bytes per idle stream (goal under
4,096). Then, for each N of --streams, opens N event streams on one JSON list from this process, PUTs a
one-cell change and timestamps, per stream, the arrival of its event, counted from the moment the PUT is
sent (persistence included). Prints Markdown: p50/p99/max milliseconds per N (medians of --rounds
rounds), beside the goals (1,000 streams: p99 under 25 ms; 5,000: all within 100 ms).

Usage: Scripts/bench-fanout.py [--streams 1000,5000] [--rounds 5] [--idle 10000] [--binary PATH]
"""
import argparse
import os
import select
import socket
import statistics
import sys
import threading
import time

import livelist_tools as tools


def put(port, name, cells):
    body = '{"sections":[{"id":"s","cells":[' + ",".join(
        '{"id":"c%d","text":"%s"}' % (i, text) for i, text in enumerate(cells)) + ']}]}'
    request = (f"PUT /lists/{name} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    if status >= 300:
        raise RuntimeError(f"PUT answered {status}: {data[-300:]!r}")


def open_streams(port, name, count):
    """Opens `count` event streams (blocking sockets, then non-blocking) and reads their heads."""
    streams = []
    request = f"GET /lists/{name}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode()
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(request)
        streams.append(s)
    for s in streams:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                raise RuntimeError("stream closed before its head")
            head += chunk
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(f"stream answered {head[:80]!r}")
        s.setblocking(False)
    return streams


def fanout(ports, name, count, rounds):
    """`count` streams on each of `ports` (servers sharing the list), the change PUT to the first.
    One epoll loop reads every stream; each stream's arrival time is taken when epoll reports it
    and its bytes hold the round's marker (a lean client, so that it measures the server)."""
    port = ports[0]
    streams = [s for each in ports for s in open_streams(each, name, count)]
    by_fd = {s.fileno(): s for s in streams}
    poller = select.epoll()
    for s in streams:
        poller.register(s.fileno(), select.EPOLLIN)
    time.sleep(0.5)
    # Drain anything already sent (retry lines, heartbeats).
    for fd, _ in poller.poll(0.1):
        try:
            by_fd[fd].recv(65536)
        except BlockingIOError:
            pass
    p50s, p99s, maxima = [], [], []
    for round_ in range(rounds):
        marker = f"round-{len(ports)}-{count}-{round_}".encode()
        pending = {fd: b"" for fd in by_fd}
        arrivals = []
        sent = time.perf_counter()
        writer = threading.Thread(target=put, args=(port, name, ["a", marker.decode()]))
        writer.start()
        deadline = sent + 60
        while pending and time.perf_counter() < deadline:
            for fd, _ in poller.poll(1):
                if fd not in pending:
                    try:
                        by_fd[fd].recv(65536)
                    except BlockingIOError:
                        pass
                    continue
                try:
                    data = by_fd[fd].recv(65536)
                except BlockingIOError:
                    continue
                now = time.perf_counter()
                pending[fd] += data
                if marker in pending[fd]:
                    arrivals.append(now)
                    del pending[fd]
        writer.join()
        if pending:
            raise RuntimeError(f"{len(pending)} of {len(streams)} streams never got round {round_}")
        latencies = sorted((t - sent) * 1000 for t in arrivals)
        p50s.append(latencies[len(latencies) // 2])
        p99s.append(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))])
        maxima.append(latencies[-1])
        time.sleep(0.3)
    for s in streams:
        s.close()
    return statistics.median(p50s), statistics.median(p99s), statistics.median(maxima)


def idle_memory(port, name, pid, count):
    time.sleep(1)
    before = tools.memory_kib(pid)
    streams = open_streams(port, name, count)
    time.sleep(2)
    after = tools.memory_kib(pid)
    for s in streams:
        s.close()
    return before, after


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", default="1000,5000", help="comma-separated stream counts N (default 1000,5000)")
    parser.add_argument("--rounds", type=int, default=5, help="changes per N; the table shows their medians (default 5)")
    parser.add_argument("--idle", type=int, default=10000, help="idle streams for the memory measure; 0 skips it (default 10,000)")
    parser.add_argument("--binary", default=tools.default_binary(), help="the livelist binary (default: the release build)")
    args = parser.parse_args()
    counts = [int(x) for x in args.streams.split(",") if x]

    tools.raise_open_files(max(counts + [args.idle]) * 2 + 1000)
    if not os.path.exists(args.binary):
        sys.exit(f"bench-fanout: build the server first: swift build -c release --product livelist ({args.binary} missing)")

    with tools.Server(args.binary, "--no-demo") as server:
        port = server.port
        put(port, "fan", ["a"])
        put(port, "idle", ["a"])
        # Idle memory first, on the fresh server: measured after the fan-out rounds, it would only show
        # the allocator reusing what their closed streams freed (0 bytes per stream).
        idle = idle_memory(port, "idle", server.process.pid, args.idle) if args.idle else None
        print(f"## Fan-out: one changed cell to N open streams (medians of {args.rounds} rounds)\n")
        print("| streams | p50 ms | p99 ms | max ms | goal |")
        print("|---:|---:|---:|---:|---|")
        goals = {1000: "p99 < 25 ms", 5000: "all within 100 ms"}
        for count in counts:
            p50, p99, worst = fanout([port], "fan", count, args.rounds)
            print(f"| {count:,} | {p50:.1f} | {p99:.1f} | {worst:.1f} | {goals.get(count, '')} |")
        if idle:
            before, after = idle
            per = (after - before) * 1024 / args.idle
            print(f"\n## Idle streams\n\n{args.idle:,} idle event streams: server RSS {before / 1024:.1f} MiB before, "
                  f"{after / 1024:.1f} MiB with them open: **{per:.0f} bytes per stream** (goal < 4,096).")


if __name__ == "__main__":
    main()
