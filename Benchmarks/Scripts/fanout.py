#!/usr/bin/env python3
"""Fan-out latency and idle-stream memory of the LiveList server, on 127.0.0.1 only, bounded in time.

Starts the release `livelist` binary (build it first: swift build -c release --product livelist; or
--binary, or LIVELIST_BINARY) with an empty data folder and opens --idle (18,900) idle event streams,
reading the server's resident memory (VmRSS) before and with them: bytes per idle stream (goal at most
512). Then, for each N of --streams, opens N event streams on one JSON list from this process, PUTs a
one-cell change and takes, per stream, the kernel's receive time of its event (SO_TIMESTAMPNS), counted
from the moment the PUT is handed to the kernel (the durable write included). Prints Markdown: p50/p99/max
milliseconds per N (medians of --rounds rounds), beside the goals (1,000 streams: p99 under 5 ms;
10,000: p99 under 25 ms).

Usage: Benchmarks/run fanout [--streams 1000,10000] [--rounds 5] [--idle 18900] [--binary PATH] [--before PATH]
"""
import argparse
import os
import select
import socket
import statistics
import struct
import sys
import threading
import time

import livelist_tools as tools


def put(port, name, cells, started=None):
    """PUTs one section of `cells`; `started` (a list) gets the wall-clock nanoseconds at which the
    request was handed to the kernel."""
    body = '{"sections":[{"id":"s","cells":[' + ",".join(
        '{"id":"c%d","text":"%s"}' % (i, text) for i, text in enumerate(cells)) + ']}]}'
    request = (f"PUT /lists/{name} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        if started is not None:
            started.append(time.time_ns())
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


# Linux's SO_TIMESTAMPNS (asm-generic/socket.h; also SCM_TIMESTAMPNS), which Python does not name, and
# the struct timespec it carries.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
STAMP = struct.Struct("@qq")


def open_streams(port, name, count, path=None):
    """Opens `count` event streams (blocking sockets, then non-blocking) and reads their heads. Each
    socket asks the kernel to stamp what it receives (SO_TIMESTAMPNS), so that an event's arrival is
    the kernel's receive time, whatever this process was doing then."""
    streams = []
    path = path or f"/lists/{name}/events"
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode()
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
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




def receive(sock, size=65536):
    """Up to `size` bytes waiting on `sock` and the kernel's receive time of the last of them (ns, wall clock)."""
    data, ancillary, _, _ = sock.recvmsg(size, socket.CMSG_SPACE(STAMP.size))
    stamp = None
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            seconds, nanoseconds = STAMP.unpack(value[:STAMP.size])
            stamp = seconds * 1_000_000_000 + nanoseconds
    return data, stamp


def fanout(ports, name, count, rounds):
    """`count` streams on each of `ports` (servers sharing the list), the change PUT to the first.
    A stream's arrival is the kernel's receive time of the segment that completed the round's event,
    counted from the moment the PUT was handed to the kernel; one epoll loop reads them afterwards."""
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
        started = []
        writer = threading.Thread(target=put, args=(port, name, ["a", marker.decode()], started))
        writer.start()
        # Nothing is read while the server fans out: the kernel stamps each segment as it arrives, so
        # this process stays off the two cores the server needs until the write has been answered
        # and the streams have been quiet for a moment.
        writer.join()
        time.sleep(0.2 + count / 20000)
        deadline = time.perf_counter() + 60
        while pending and time.perf_counter() < deadline:
            for fd, _ in poller.poll(1):
                try:
                    data, stamp = receive(by_fd[fd])
                except BlockingIOError:
                    continue
                if fd not in pending:
                    continue
                pending[fd] += data
                if marker in pending[fd]:
                    arrivals.append(stamp)
                    del pending[fd]
        if pending:
            raise RuntimeError(f"{len(pending)} of {len(streams)} streams never got round {round_}")
        if None in arrivals:
            raise RuntimeError("the kernel gave no receive time (SO_TIMESTAMPNS)")
        latencies = sorted((t - started[0]) / 1e6 for t in arrivals)
        p50s.append(latencies[len(latencies) // 2])
        p99s.append(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))])
        maxima.append(latencies[-1])
        time.sleep(0.3)
    for s in streams:
        s.close()
    return statistics.median(p50s), statistics.median(p99s), statistics.median(maxima)


def kernel_floor(count, size, rounds, senders=2):
    """The same measure without a server: `senders` processes (one per core the server has loops on)
    each send `size` bytes to their share of `count` loopback TCP connections, released together, and
    another process holds the receiving ends, whose arrivals the kernel stamps as it does the server's.
    What one small write to each of N sockets costs on this machine, whatever the server: the fastest
    any fan-out here can be."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    commands, results = os.pipe(), os.pipe()
    receiver_pid = os.fork()
    if receiver_pid == 0:
        listener_address = listener.getsockname()
        listener.close()
        os.close(commands[1])
        os.close(results[0])
        receiving = []
        for _ in range(count):
            receiver = socket.create_connection(listener_address)
            receiver.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            receiver.setblocking(False)
            receiving.append(receiver)
        with os.fdopen(results[1], "w") as answers, os.fdopen(commands[0], "r") as orders:
            answers.write("ready\n")
            answers.flush()
            for _ in orders:
                stamps = []
                for receiver in receiving:
                    got, stamp = 0, None
                    while got < size:
                        try:
                            data, stamp = receive(receiver)
                        except BlockingIOError:
                            select.select([receiver], [], [], 5)
                            continue
                        got += len(data)
                    stamps.append(stamp)
                answers.write(" ".join(map(str, stamps)) + "\n")
                answers.flush()
        os._exit(0)
    sending = []
    for _ in range(count):
        sender, _ = listener.accept()
        sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sending.append(sender)
    listener.close()
    orders, answers = os.fdopen(commands[1], "w"), os.fdopen(results[0], "r")
    os.close(commands[0])
    os.close(results[1])
    assert answers.readline().strip() == "ready"
    payload = b"x" * size
    p50s, p99s, maxima = [], [], []
    for _ in range(rounds):
        start_read, start_write = os.pipe()
        children = []
        for index in range(senders):
            child = os.fork()
            if child == 0:
                os.read(start_read, 1)
                for sender in sending[index::senders]:
                    sender.send(payload)
                os._exit(0)
            children.append(child)
        time.sleep(0.2)
        started = time.time_ns()
        os.write(start_write, b"g" * senders)
        for child in children:
            os.waitpid(child, 0)
        os.close(start_read)
        os.close(start_write)
        orders.write("go\n")
        orders.flush()
        latencies = sorted((int(t) - started) / 1e6 for t in answers.readline().split())
        p50s.append(latencies[len(latencies) // 2])
        p99s.append(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))])
        maxima.append(latencies[-1])
        time.sleep(0.2)
    orders.close()
    os.waitpid(receiver_pid, 0)
    answers.close()
    for sender in sending:
        sender.close()
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
    parser.add_argument("--streams", default="1000,10000", help="comma-separated stream counts N (default 1000,10000)")
    parser.add_argument("--rounds", type=int, default=5, help="changes per N; the table shows their medians (default 5)")
    parser.add_argument("--idle", type=int, default=18900,
                        help="idle streams for the memory measure; 0 skips it (default 18,900: about what a limit of 20,000 descriptors leaves the server, which keeps 5 %% in reserve)")
    parser.add_argument("--binary", default=tools.default_binary(), help="the livelist binary (default: the release build)")
    parser.add_argument("--no-floor", action="store_true", help="skip the kernel's floor (the same sends without a server)")
    parser.add_argument("--before", help="a second livelist binary (an older build), measured the same way after this one")
    args = parser.parse_args()
    counts = [int(x) for x in args.streams.split(",") if x]

    if not os.path.exists(args.binary):
        sys.exit(f"bench-fanout: build the server first: swift build -c release --product livelist ({args.binary} missing)")
    # Each process holds one descriptor per stream (the server and this one), with some to spare.
    tools.raise_open_files(max(counts + [args.idle]) + 500)
    floors = {} if args.no_floor else {count: kernel_floor(count, 300, args.rounds) for count in counts}

    binaries = [("this build", args.binary)] + ([("--before", args.before)] if args.before else [])
    results = {}
    for label, binary in binaries:
        # One server at a time, each fresh: idle memory first (measured after the fan-out rounds, it
        # would only show the allocator reusing what their closed streams freed), then the rounds.
        with tools.Server(binary, "--no-demo") as server:
            port = server.port
            put(port, "fan", ["a"])
            put(port, "idle", ["a"])
            idle = idle_memory(port, "idle", server.process.pid, args.idle) if args.idle else None
            results[label] = ({count: fanout([port], "fan", count, args.rounds) for count in counts}, idle)

    print(f"## Fan-out: one changed cell to N open streams (medians of {args.rounds} rounds)\n")
    print("Each figure runs from the PUT handed to the kernel (the durable write included) to the kernel's")
    print("receive time of the event on a stream. The floor: two processes write 300 bytes to each of N loopback")
    print("sockets, with no server (the least one write to each socket costs on this machine).\n")
    print("| streams | server | p50 ms | p99 ms | max ms | floor p50 | floor p99 | p99 / floor | goal |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    goals = {1000: "p99 < 5 ms", 10000: "p99 < 25 ms"}
    for count in counts:
        floor = floors.get(count)
        for label, _ in binaries:
            p50, p99, worst = results[label][0][count]
            columns = f"{floor[0]:.1f} | {floor[1]:.1f} | {p99 / floor[1]:.2f}x" if floor else "- | - | -"
            print(f"| {count:,} | {label} | {p50:.1f} | {p99:.1f} | {worst:.1f} | {columns} | {goals.get(count, '')} |")
    if args.idle:
        print(f"\n## Idle streams\n\n{args.idle:,} idle event streams (goal: at most 512 bytes each)\n")
        print("| server | RSS before | RSS with them | bytes per stream |")
        print("|---|---:|---:|---:|")
        for label, _ in binaries:
            before, after = results[label][1]
            print(f"| {label} | {before / 1024:.1f} MiB | {after / 1024:.1f} MiB | **{(after - before) * 1024 / args.idle:.0f}** |")


if __name__ == "__main__":
    main()
