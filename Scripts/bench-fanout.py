#!/usr/bin/env python3
"""Fan-out and idle-stream memory of the LiveList server, on 127.0.0.1 only, bounded in time.

Starts the release `livelist` binary (build it first: swift build -c release --product livelist), opens
N event streams on one JSON list from this process, then PUTs a one-cell change and timestamps, per
stream, the arrival of its event, counted from the moment the PUT is sent (persistence included).
Prints a Markdown table of p50/p99/max per N, and the server's resident memory per idle stream.

Usage: Scripts/bench-fanout.py [--streams 1000,5000] [--rounds 5] [--idle 10000] [--binary PATH]
"""
import argparse
import asyncio
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


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


async def open_stream(port, name):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    writer.write(f"GET /lists/{name}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise RuntimeError(f"stream answered {head[:80]!r}")
    return reader, writer


async def wait_event(reader, marker):
    """Reads until a data line containing `marker`; returns the arrival time."""
    buffer = b""
    while marker not in buffer:
        chunk = await reader.read(65536)
        if not chunk:
            raise RuntimeError("stream ended")
        buffer += chunk
    return time.perf_counter()


async def fanout(port, name, count, rounds):
    streams = []
    for start in range(0, count, 500):
        streams += await asyncio.gather(*(open_stream(port, name) for _ in range(start, min(count, start + 500))))
    await asyncio.sleep(0.5)
    p99s, p50s, maxima = [], [], []
    for round_ in range(rounds):
        marker = f"round-{count}-{round_}".encode()
        waits = [asyncio.create_task(wait_event(reader, marker)) for reader, _ in streams]
        await asyncio.sleep(0.2)
        sent = time.perf_counter()
        await asyncio.get_running_loop().run_in_executor(None, put, port, name, ["a", marker.decode()])
        arrivals = await asyncio.wait_for(asyncio.gather(*waits), timeout=60)
        latencies = sorted((t - sent) * 1000 for t in arrivals)
        p50s.append(latencies[len(latencies) // 2])
        p99s.append(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))])
        maxima.append(latencies[-1])
        await asyncio.sleep(0.3)
    for _, writer in streams:
        writer.close()
    return statistics.median(p50s), statistics.median(p99s), statistics.median(maxima)


async def idle_memory(port, name, pid, count):
    await asyncio.sleep(1)
    before = rss_kib(pid)
    streams = []
    for start in range(0, count, 500):
        streams += await asyncio.gather(*(open_stream(port, name) for _ in range(start, min(count, start + 500))))
    await asyncio.sleep(2)
    after = rss_kib(pid)
    for _, writer in streams:
        writer.close()
    return before, after


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", default="1000,5000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--idle", type=int, default=10000)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/release/livelist"))
    args = parser.parse_args()
    counts = [int(x) for x in args.streams.split(",") if x]

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(counts + [args.idle]) * 2 + 1000
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    if not os.path.exists(args.binary):
        sys.exit(f"bench-fanout: build the server first: swift build -c release --product livelist ({args.binary} missing)")

    data = tempfile.mkdtemp(prefix="livelist-fanout-")
    port = free_port()
    server = subprocess.Popen(
        [args.binary, "--port", str(port), "--data", data, "--no-demo", "--log-level", "warning",
         "--public", os.path.join(ROOT, "Public"), "--templates", os.path.join(ROOT, "Templates")],
        stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        put(port, "fan", ["a"])
        put(port, "idle", ["a"])
        print(f"## Fan-out: one changed cell to N open streams (medians of {args.rounds} rounds)\n")
        print("| streams | p50 ms | p99 ms | max ms | goal |")
        print("|---:|---:|---:|---:|---|")
        goals = {1000: "p99 < 25 ms", 5000: "all within 100 ms"}
        for count in counts:
            p50, p99, worst = asyncio.run(fanout(port, "fan", count, args.rounds))
            print(f"| {count:,} | {p50:.1f} | {p99:.1f} | {worst:.1f} | {goals.get(count, '')} |")
        if args.idle:
            before, after = asyncio.run(idle_memory(port, "idle", server.pid, args.idle))
            per = (after - before) * 1024 / args.idle
            print(f"\n## Idle streams\n\n{args.idle:,} idle event streams: server RSS {before / 1024:.1f} MiB before, "
                  f"{after / 1024:.1f} MiB with them open: **{per:.0f} bytes per stream** (goal < 4,096).")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
