#!/usr/bin/env python3
"""What a change to a large JSON list costs, on 127.0.0.1 only, bounded in count and time.

Four tables (Markdown), each with its baseline from the same run:

1. PATCH by list size: one-cell operations (update a cell's text, append a cell, prepend one, remove
   one) on a list of 1,000 cells and on one of 100,000, with the file store and (when a database is
   given) PostgreSQL. Each figure is the median of --samples requests on a keep-alive connection: the
   latency the client sees (the store's fsync or round trip included) and the server's CPU per
   request (the CPU time of all its threads, from /proc/PID/task/*/schedstat, over the samples). The ratio is 100k / 1k.
2. PUT that changes one cell of a 10,000-cell list: this build against --before (an older build, such
   as the previous release's binary), same run, file store.
3. PATCH of N and 8N operations (500 and 4,000 updates of different cells) on the 100,000-cell
   list: the cost of a patch grows with its operations, linearly (about 8×).
4. Store bytes per one-cell PATCH on the 100,000-cell list: what the server passed to write(2) (wchar of
   /proc/PID/io: its files, and with PostgreSQL its database connection; its HTTP answers go out with
   sendmsg(2), which wchar does not count), over as many patches as two compactions take (the log is
   compacted once it holds more bytes than the body it follows; PostgreSQL's base likewise).

Usage: Benchmarks/run patch [--binary PATH] [--before PATH] [--database URL] [--samples 25]
A database URL (or LIVELIST_TEST_DATABASE_URL, as Scripts/with-postgres.sh sets it) adds the PostgreSQL
rows; LIVELIST_TEST_PSQL makes a fresh database for each server. Every server is stopped on exit.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

import livelist_tools as tools

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--binary", default=None, help="the livelist binary (default: the release build)")
parser.add_argument("--before", default=None, help="an older livelist binary for the PUT comparison")
parser.add_argument("--database", default=os.environ.get("LIVELIST_TEST_DATABASE_URL"), help="a PostgreSQL URL for the database rows")
parser.add_argument("--samples", type=int, default=25, help="requests per figure (default 25)")
parser.add_argument("--max-seconds", type=float, default=240, help="the longest the bytes measurement of one store runs (default 240)")
parser.add_argument("--skip-bytes", action="store_true", help="skip the third table")
options = parser.parse_args()
BINARY = options.binary or tools.default_binary()
TOKEN = "bench-patch-token"


class Raw:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, port):
        self.socket = socket.create_connection((tools.HOST, port), timeout=120)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def send(self, method, path, body=b""):
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        started = time.perf_counter()
        self.socket.sendall(head + body)
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        header, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        length = 0
        for line in header.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(self.buffer) < length:
            self._read()
        answer, self.buffer = self.buffer[:length], self.buffer[length:]
        elapsed = time.perf_counter() - started
        status = int(header.split(b" ", 2)[1])
        return status, answer, elapsed

    def _read(self):
        chunk = self.socket.recv(1 << 20)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        self.buffer += chunk

    def close(self):
        self.socket.close()


def cpu_seconds(pid):
    """The CPU time of every thread of the process, in nanoseconds' precision (schedstat), as seconds."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(open(f"/proc/{pid}/task/{task}/schedstat").read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


def written(pid):
    for line in open(f"/proc/{pid}/io"):
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def list_body(count, changed=None):
    cells = [{"id": f"c{i}", "text": "t"} for i in range(count)]
    if changed is not None:
        cells[count // 2]["text"] = f"v{changed}"
    return json.dumps({"sections": [{"id": "s", "cells": cells}]}, separators=(",", ":")).encode()


def fresh_database(label):
    psql = os.environ.get("LIVELIST_TEST_PSQL")
    if not psql:
        return options.database
    name = f"bench_patch_{label}_{os.getpid()}"
    subprocess.run([psql, options.database, "-qc", f"DROP DATABASE IF EXISTS {name}"], check=True, capture_output=True)
    subprocess.run([psql, options.database, "-qc", f"CREATE DATABASE {name}"], check=True, capture_output=True)
    parts = urllib.parse.urlsplit(options.database)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def start(store, binary=BINARY, label="x"):
    env = dict(os.environ)
    env.pop("LIVELIST_DATABASE_URL", None)
    if store == "postgres":
        env["LIVELIST_DATABASE_URL"] = fresh_database(label)
    server = tools.Server(binary, "--write-token", TOKEN, "--no-demo", "--max-cells", "200000", env=env)
    server.database_url = env.get("LIVELIST_DATABASE_URL")
    return server


OPERATIONS = {
    "update": lambda i, n: {"op": "update", "cell": {"id": f"c{n // 2}", "text": f"u{i}"}},
    "append": lambda i, n: {"op": "upsert", "cell": {"id": f"a{i}", "text": "a"}, "section": "s"},
    "prepend": lambda i, n: {"op": "upsert", "cell": {"id": f"p{i}", "text": "p"}, "section": "s", "position": "first"},
    "remove": lambda i, n: {"op": "remove", "cell": f"p{i}"},
}


def patch_body(operation):
    return json.dumps({"ops": [operation]}, separators=(",", ":")).encode()


def measure_sizes(store):
    """{(operation, size): (median latency ms, cpu µs per request)}"""
    results = {}
    for size in (1_000, 100_000):
        with start(store, label=f"sizes{size}") as server:
            client = Raw(server.port)
            status, answer, _ = client.send("PUT", "/lists/big", list_body(size))
            if status not in (200, 201):
                raise RuntimeError(f"PUT of {size} cells: {status} {answer[:200]}")
            for i in range(5):
                client.send("PATCH", "/lists/big", patch_body(OPERATIONS["update"](1000 + i, size)))
            for name, make in OPERATIONS.items():
                latencies = []
                before = cpu_seconds(server.process.pid)
                for i in range(options.samples):
                    status, answer, elapsed = client.send("PATCH", "/lists/big", patch_body(make(i, size)))
                    if status != 200 or b'"skipped":0' not in answer:
                        raise RuntimeError(f"PATCH {name} on {size} cells: {status} {answer[:200]}")
                    latencies.append(elapsed)
                cpu = (cpu_seconds(server.process.pid) - before) / options.samples
                results[(name, size)] = (statistics.median(latencies) * 1000, cpu * 1e6)
            client.close()
    return results


def measure_put(binary):
    with start("file", binary) as server:
        client = Raw(server.port)
        client.send("PUT", "/lists/ten", list_body(10_000))
        for i in range(3):
            client.send("PUT", "/lists/ten", list_body(10_000, changed=1000 + i))
        latencies = []
        before = cpu_seconds(server.process.pid)
        for i in range(options.samples):
            status, answer, elapsed = client.send("PUT", "/lists/ten", list_body(10_000, changed=i))
            if status != 200:
                raise RuntimeError(f"PUT: {status} {answer[:200]}")
            latencies.append(elapsed)
        cpu = (cpu_seconds(server.process.pid) - before) / options.samples
        client.close()
        return statistics.median(latencies) * 1000, cpu * 1e6


def measure_scaling(count):
    """One PATCH of `count` update operations (each on another cell) on the 100,000-cell list, file
    store: median latency and CPU per request over 9 requests."""
    with start("file", label="scaling") as server:
        client = Raw(server.port)
        client.send("PUT", "/lists/big", list_body(100_000))
        # The first patch builds the list's index: not part of what N operations cost.
        client.send("PATCH", "/lists/big", patch_body(OPERATIONS["update"](0, 100_000)))
        latencies = []
        before = cpu_seconds(server.process.pid)
        for round in range(9):
            body = json.dumps({"ops": [{"op": "update", "cell": {"id": f"c{(k * 7919) % 100_000}", "text": f"r{round}"}}
                                       for k in range(count)]}, separators=(",", ":")).encode()
            status, answer, elapsed = client.send("PATCH", "/lists/big", body)
            if status != 200:
                raise RuntimeError(f"PATCH of {count} operations: {status} {answer[:200]}")
            latencies.append(elapsed)
        cpu = (cpu_seconds(server.process.pid) - before) / 9
        client.close()
        return statistics.median(latencies) * 1000, cpu * 1e6


def compactions_seen(store, server, database_url, state):
    """How many compactions of `big` happened so far (a log that shrank; a base that moved)."""
    if store == "file":
        path = os.path.join(server.data, "lists", "big.log")
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if size < state.get("size", 0):
            state["count"] = state.get("count", 0) + 1
        state["size"] = size
    else:
        psql = os.environ.get("LIVELIST_TEST_PSQL", "psql")
        base = subprocess.run([psql, database_url, "-tAc", "SELECT base_version FROM livelist_lists WHERE name = 'big'"],
                              check=True, capture_output=True, text=True).stdout.strip()
        if state.get("base") is not None and base != state["base"]:
            state["count"] = state.get("count", 0) + 1
        state["base"] = base
    return state.get("count", 0)


def measure_bytes(store):
    with start(store, label="bytes") as server:
        env_url = server.database_url
        client = Raw(server.port)
        status, _, _ = client.send("PUT", "/lists/big", list_body(100_000))
        assert status in (200, 201), status
        state = {}
        compactions_seen(store, server, env_url, state)
        pid = server.process.pid
        written_before = written(pid)
        started = time.monotonic()
        patches = 0
        while compactions_seen(store, server, env_url, state) < 2:
            for _ in range(500 if store == "file" else 2000):
                status, answer, _ = client.send("PATCH", "/lists/big", patch_body(OPERATIONS["update"](patches, 100_000)))
                if status != 200:
                    raise RuntimeError(f"PATCH: {status} {answer[:200]}")
                patches += 1
            if time.monotonic() - started > options.max_seconds:
                break
        # The answers go out with sendmsg(2), which wchar does not count: wchar is what went to files
        # (and, with PostgreSQL, to the database's socket, which its client writes with write(2)),
        # plus the event loop's 8-byte wake-ups and any log line.
        store_bytes = written(pid) - written_before
        client.close()
        return patches, state.get("count", 0), store_bytes / patches, time.monotonic() - started


def main():
    stores = ["file"] + (["postgres"] if options.database else [])
    print(f"binary: {BINARY}; samples: {options.samples}; stores: {', '.join(stores)}\n")
    print("## PATCH of one cell, by list size (median latency; server CPU per request)\n")
    print("| store | operation | 1k cells | 100k cells | 100k / 1k | CPU 1k | CPU 100k | CPU 100k / 1k |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for store in stores:
        results = measure_sizes(store)
        for name in OPERATIONS:
            (small, small_cpu), (large, large_cpu) = results[(name, 1_000)], results[(name, 100_000)]
            print(f"| {store} | {name} | {small:.2f} ms | {large:.2f} ms | {large / small:.2f}× "
                  f"| {small_cpu:.0f} µs | {large_cpu:.0f} µs | {large_cpu / small_cpu:.2f}× |", flush=True)
    if options.before:
        print("\n## PUT that changes one cell of a 10,000-cell list (file store; median latency, server CPU per request)\n")
        print("| binary | latency | CPU | speed-up (latency) | speed-up (CPU) |")
        print("|---|---:|---:|---:|---:|")
        before, after = measure_put(options.before), measure_put(BINARY)
        print(f"| before ({options.before}) | {before[0]:.2f} ms | {before[1]:.0f} µs | 1.00× | 1.00× |")
        print(f"| after ({BINARY}) | {after[0]:.2f} ms | {after[1]:.0f} µs | {before[0] / after[0]:.2f}× | {before[1] / after[1]:.2f}× |", flush=True)
    print("\n## PATCH of N and 8N operations on the 100,000-cell list (file store; median of 9)\n")
    print("| operations | latency | CPU | latency / N's | CPU / N's |")
    print("|---:|---:|---:|---:|---:|")
    small, large = measure_scaling(500), measure_scaling(4_000)
    print(f"| 500 | {small[0]:.2f} ms | {small[1]:.0f} µs | 1.00× | 1.00× |")
    print(f"| 4,000 | {large[0]:.2f} ms | {large[1]:.0f} µs | {large[0] / small[0]:.2f}× | {large[1] / small[1]:.2f}× |", flush=True)
    if not options.skip_bytes:
        print("\n## Store bytes per one-cell PATCH on a 100,000-cell list (compaction once the log outgrows the body)\n")
        print("| store | patches | compactions | bytes per patch | seconds |")
        print("|---|---:|---:|---:|---:|")
        for store in stores:
            patches, compactions, per_patch, seconds = measure_bytes(store)
            print(f"| {store} | {patches} | {compactions} | {per_patch:.0f} B | {seconds:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
