#!/usr/bin/env python3
"""An overloaded node: more changes than it can send to every stream. 127.0.0.1 only, bounded in time.

Starts the release `livelist` binary (build it first: swift build -c release --product livelist; or
--binary, or LIVELIST_BINARY) with an empty data folder, opens --streams (10,000) event streams on one
JSON list from --readers (2) reader processes (raw sockets and epoll, each reading as fast as it can, which
on a small machine is slower than the node writes: the overload), then PUTs a changed cell --rate (10)
times a second for --duration (30) seconds from a writer of its own. Two seconds after the last change it
asks each reader which version every stream has seen last, and reads /metrics.

Prints a Markdown table, one row per binary (this build, and --before, an older build measured the same
way in the same run as the baseline): streams, changes/s achieved, duration (until the last PUT was
answered), PUT p50/p99 (from when each was due, so that a PUT that waited for a writer thread counts the
wait), streams closed by reason (livelist_streams_closed_total), livelist_streams_overflowed_total, what
the readers saw closed, writes deferred for the stream budget (livelist_stream_writes_deferred_total),
versions skipped (livelist_coalesced_viewers_total), and streams at the last version 2 s after the last
PUT was answered (of those open), and the peak of the kernel's TCP memory meanwhile (/proc/net/sockstat,
the whole machine's: the readers' receive buffers too). Every wait is bounded; the servers it starts
are stopped, and the readers exit with it.

Usage: Benchmarks/run overload [--streams 10000] [--rate 10] [--duration 30] [--text 16] [--readers 2]
                               [--binary PATH] [--before PATH]
"""
import argparse
import concurrent.futures
import json
import os
import re
import select
import socket
import sys
import threading
import time
import urllib.request

import livelist_tools as tools

LIST = "overload"
ID = re.compile(rb"\nid: (\d+)\n")


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def document(round_, size, cells=20):
    """The list's document: `cells` cells, one of which changes every round to a text of about `size` bytes."""
    return {"sections": [{"id": "s", "cells": [
        {"id": f"c{i}", "text": f"cell {i} round {round_}".ljust(size, "x") if i == round_ % cells else f"cell {i}"}
        for i in range(cells)]}]}


def put(port, round_, size=16, timeout=120):
    """PUTs round `round_`'s document; (seconds it took, the version answered or None)."""
    body = json.dumps(document(round_, size)).encode()
    head = (f"PUT /lists/{LIST} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    started = time.perf_counter()
    data = b""
    try:
        with socket.create_connection((tools.HOST, port), timeout=timeout) as s:
            s.sendall(head + body)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return time.perf_counter() - started, None
    took = time.perf_counter() - started
    _, _, answer = data.partition(b"\r\n\r\n")
    try:
        return took, json.loads(answer)["version"]
    except (ValueError, KeyError):
        return took, None


def reader(port, count, ready, orders, answers):
    """A reader process: opens `count` streams, says "ready", reads them until told "report", then
    writes each stream's last event id (-1 once closed) and exits; exits on its own after 600 s."""
    streams = {}
    request = f"GET /lists/{LIST}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode()
    poller = select.epoll()
    for _ in range(count):
        for attempt in range(5):
            try:
                s = socket.create_connection((tools.HOST, port), timeout=30)
                s.sendall(request)
                break
            except ConnectionError:
                # The listen queue overflowed for a moment: try again.
                time.sleep(0.1 * (attempt + 1))
        else:
            raise RuntimeError("could not open a stream")
        s.setblocking(False)
        streams[s.fileno()] = [s, b"", 0]
        poller.register(s.fileno(), select.EPOLLIN)
    os.write(ready, b"ready\n")
    deadline = time.monotonic() + 600
    closed = 0
    while time.monotonic() < deadline:
        for fd, _ in poller.poll(0.05):
            entry = streams[fd]
            try:
                data = entry[0].recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                poller.unregister(fd)
                entry[0].close()
                entry[2] = -1
                closed += 1
                continue
            text = entry[1] + data
            found = ID.findall(text)
            if found:
                entry[2] = int(found[-1])
            entry[1] = text[-32:]
        readable, _, _ = select.select([orders], [], [], 0)
        if readable:
            order = os.read(orders, 64)
            if not order or b"report" in order:
                break
    os.write(answers, (json.dumps([entry[2] for entry in streams.values()]) + "\n").encode())
    os._exit(0)


def metrics(port):
    """The node's /metrics as {name with labels: value}."""
    with urllib.request.urlopen(f"http://{tools.HOST}:{port}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                values[name] = float(value)
            except ValueError:
                pass
    return values


def tcp_memory_pages():
    """The pages the kernel's TCP sockets hold now (the `mem` of /proc/net/sockstat), 0 where unknown."""
    try:
        with open("/proc/net/sockstat") as sockstat:
            for line in sockstat:
                if line.startswith("TCP:"):
                    fields = line.split()
                    return int(fields[fields.index("mem") + 1])
    except (OSError, ValueError):
        pass
    return 0


def run(binary, options):
    """One node under the overload; the row of the table."""
    with tools.Server(binary, "--no-demo") as server:
        port = server.port
        put(port, 0)
        shares = [options.streams // options.readers + (1 if i < options.streams % options.readers else 0)
                  for i in range(options.readers)]
        children = []
        for share in shares:
            ready_r, ready_w = os.pipe()
            orders_r, orders_w = os.pipe()
            answers_r, answers_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    reader(port, share, ready_w, orders_r, answers_w)
                except BaseException as error:
                    log(f"bench-overload: reader failed: {error!r}")
                finally:
                    os._exit(1)
            os.close(ready_w)
            os.close(orders_r)
            os.close(answers_w)
            children.append((pid, ready_r, orders_w, answers_r))
        for _, ready_r, _, _ in children:
            readable, _, _ = select.select([ready_r], [], [], 300)
            if not readable or not os.read(ready_r, 16):
                raise SystemExit("bench-overload: a reader did not open its streams")
        time.sleep(2)
        before = metrics(port)
        log(f"  {binary}: {before.get('livelist_streams_open', 0):.0f} streams open; writing {options.rate}/s for {options.duration} s")
        latencies, versions = [], []
        lock = threading.Lock()

        def change(round_, due):
            # From when the change was due: a PUT that waited for a writer thread waited all the same.
            _, version = put(port, round_, options.text)
            took = time.perf_counter() - due
            with lock:
                latencies.append(took)
                if version is not None:
                    versions.append(version)

        # The kernel's TCP memory (every socket's buffers, this machine's), sampled while the changes go.
        peak = [tcp_memory_pages()]
        sampling = threading.Event()

        def sample():
            while not sampling.wait(0.25):
                peak[0] = max(peak[0], tcp_memory_pages())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        rounds = int(options.rate * options.duration)
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
            for round_ in range(1, rounds + 1):
                due = started + (round_ - 1) / options.rate
                wait = due - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                pool.submit(change, round_, due)
        elapsed = time.perf_counter() - started
        time.sleep(2)
        sampling.set()
        sampler.join()
        after = metrics(port)
        last = max(versions) if versions else None
        seen = []
        for _, _, orders_w, answers_r in children:
            os.write(orders_w, b"report\n")
        for pid, _, _, answers_r in children:
            data = b""
            while not data.endswith(b"\n"):
                readable, _, _ = select.select([answers_r], [], [], 60)
                chunk = os.read(answers_r, 1 << 20) if readable else b""
                if not chunk:
                    break
                data += chunk
            seen += json.loads(data or b"[]")
            os.waitpid(pid, 0)
        lines = server.log_text(20000).splitlines()
    notices = [line for line in lines if "closed an event stream" in line]
    closed = {key.split('"')[1]: after[key] - before.get(key, 0)
              for key in after if key.startswith("livelist_streams_closed_total{")}
    return {
        "streams": len(seen),
        "rate": len(latencies) / elapsed if elapsed else 0,
        "duration": elapsed,
        "p50": tools.percentile(latencies, 0.5) * 1000,
        "p99": tools.percentile(latencies, 0.99) * 1000,
        "failed": rounds - len(versions),
        "closed": {reason: int(value) for reason, value in closed.items() if value},
        "overflowed": int(after.get("livelist_streams_overflowed_total", 0) - before.get("livelist_streams_overflowed_total", 0)),
        "seen_closed": sum(1 for version in seen if version < 0),
        "deferred": int(after.get("livelist_stream_writes_deferred_total", 0) - before.get("livelist_stream_writes_deferred_total", 0)),
        "coalesced": int(after.get("livelist_coalesced_viewers_total", 0) - before.get("livelist_coalesced_viewers_total", 0)),
        "open": sum(1 for version in seen if version >= 0),
        "current": sum(1 for version in seen if last is not None and version >= last),
        "notices": notices[-3:],
        "tcp_mib": peak[0] * 4096 / (1 << 20),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=10_000, help="event streams, at most 40,000 (default 10,000)")
    parser.add_argument("--rate", type=float, default=10, help="changes a second, at most 100 (default 10)")
    parser.add_argument("--duration", type=float, default=30, help="seconds of changes, at most 120 (default 30)")
    parser.add_argument("--text", type=int, default=16, help="bytes of the cell each change rewrites, at most 65,536 (default 16)")
    parser.add_argument("--readers", type=int, default=2, help="reader processes (default 2)")
    parser.add_argument("--binary", default=tools.default_binary(), help="the livelist binary (default: the release build)")
    parser.add_argument("--before", help="a second livelist binary (an older build), measured the same way after this one")
    options = parser.parse_args()
    if not (0 < options.streams <= 40_000 and 0 < options.rate <= 100 and 0 < options.duration <= 120 and 0 < options.readers <= 8
            and 0 < options.text <= 65_536):
        sys.exit("bench-overload: at most 40,000 streams, 100 changes/s, 120 s and 8 readers")
    if options.streams / options.readers > 18_000:
        sys.exit("bench-overload: at most 18,000 streams per reader process (its descriptors); add --readers")
    if not os.path.exists(options.binary):
        sys.exit(f"bench-overload: build the server first: swift build -c release --product livelist ({options.binary} missing)")
    # The server holds one descriptor per stream; each reader its share.
    tools.raise_open_files(min(options.streams + 500, 20_000))
    binaries = [("this build", options.binary)] + ([("--before", options.before)] if options.before else [])
    rows = [(label, run(binary, options)) for label, binary in binaries]

    print(f"## Overload: {options.streams:,} streams, {options.rate:g} changes/s for {options.duration:g} s "
          f"(each rewrites a cell of {options.text:,} bytes), one node\n")
    print("| server | streams | changes/s | duration | PUT p50 ms | PUT p99 ms | PUTs failed | streams closed by reason | "
          "overflowed | closed as the readers saw | writes deferred | versions skipped (coalesced) | at the last version 2 s after | "
          "peak kernel TCP memory |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for label, row in rows:
        closed = ", ".join(f"{reason} {count:,}" for reason, count in sorted(row["closed"].items())) or "none"
        print(f"| {label} | {row['streams']:,} | {row['rate']:.1f} | {row['duration']:.1f} s | {row['p50']:.1f} | {row['p99']:.1f} | "
              f"{row['failed']} | {closed} | {row['overflowed']:,} | {row['seen_closed']:,} | {row['deferred']:,} | {row['coalesced']:,} | "
              f"{row['current']:,} of {row['open']:,} open | {row['tcp_mib']:,.0f} MiB |")
    for label, row in rows:
        for line in row["notices"]:
            print(f"\n{label}, log: `{line.strip()[:300]}`")


if __name__ == "__main__":
    main()
