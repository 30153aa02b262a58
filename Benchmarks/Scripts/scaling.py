#!/usr/bin/env python3
"""How the server's costs grow with the size of what it holds: each measure at N and at 8N, with the
ratio of the two (a linear cost gives about 8, a quadratic one about 64).

    Benchmarks/run scaling [--no-build | --server-bin PATH] [--quick] [--skip-100k]

Measures, against the release `livelist` binary on a free 127.0.0.1 port with a temporary data folder:

- list decode+apply: one `PUT /lists/NAME` creating a list of N cells (N = 4,000 and 32,000; and
  100,000 alone);
- session creation: one stream opened with a new session while the session table holds N sessions
  (N = 2,500 and 20,000); every session is real: its cookie comes from the `Set-Cookie` of a page view
  and it enters the table when a stream opens with it;
- stream close: closing N streams that wait on lists that do not exist (`GET /events?list=missing1&…`),
  until the server has handled every close (N = 1,000 and 8,000);
- startup: from starting the process to the first `/healthz` answer, with a data folder holding one list
  of N cells (N = 4,000 and 32,000; and 100,000 alone);
- windowed lists (docs/PROTOCOL.md, "Windowed lists"), on the list of N cells: a range of 100 cells from
  its middle (`GET /lists/NAME/cells?from=N/2&count=100`, median of 20), a page that starts at its
  middle cell (`?at=KEY`, once warm: median of 20), and every key (`cells?keys=1`, the first answer of a
  version, which encodes them; a PATCH makes each run's version new).

Each cell is the median of 3 runs, in ms or s. Every wait has a timeout, the whole run has a time
budget, and the server is killed on exit. Prints a Markdown table: each measure at N and at 8N, and
their ratio.
"""
import argparse
import atexit
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time

import _scaling_http  # beside this script
import livelist_tools as tools
from _scaling_http import Client, Timeout, abort, open_stream

HOST = tools.HOST

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--no-build", action="store_true", help="use the release binary already built")
parser.add_argument("--server-bin", help="a livelist binary to use instead of building one")
parser.add_argument("--quick", action="store_true", help="N/4 everywhere, for a smoke run")
parser.add_argument("--skip-100k", action="store_true", help="leave out the 100,000-cell PUT and startup")
parser.add_argument("--step-timeout", type=float, default=300, help="seconds any one step may take")
parser.add_argument("--budget", type=float, default=1800, help="seconds the whole run may take")
options = parser.parse_args()
_scaling_http.STEP_TIMEOUT = options.step_timeout

STARTED = time.monotonic()
scale = 4 if options.quick else 1
LIST_SIZES = (4_000 // scale, 32_000 // scale)
SESSION_SIZES = (2_500 // scale, 20_000 // scale)
STREAM_SIZES = (1_000 // scale, 8_000 // scale)
BIG_LIST = 100_000
SESSION_PROBES = 200  # new-session stream opens per measurement
RUNS = 3


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def check_budget():
    if time.monotonic() - STARTED > options.budget:
        raise Timeout(f"the run exceeded its budget of {options.budget:.0f} s")


# --- The binary ---------------------------------------------------------------------------------------

if options.server_bin:
    server_bin = os.path.abspath(options.server_bin)
else:
    if not options.no_build:
        log("Building livelist (release)…")
        tools.build_release(product="livelist")
    server_bin = os.path.join(tools.release_dir(), "livelist")
if not os.access(server_bin, os.X_OK):
    sys.exit(f"bench-scaling: no executable at {server_bin}")

# Streams hold one descriptor each here and in the server (which inherits this limit).
tools.raise_open_files(max(STREAM_SIZES) + 1024)

WORK = tempfile.mkdtemp(prefix="bench-scaling-")
servers = []


def cleanup():
    for server in servers:
        server.stop(seconds=10)
    shutil.rmtree(WORK, ignore_errors=True)


atexit.register(cleanup)
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, lambda *_: sys.exit(130))


# --- The server -----------------------------------------------------------------------------------------


def start_server(data):
    """The server on `data` and the seconds from starting its process to its first `/healthz` answer."""
    server = tools.Server(server_bin, "--no-demo", "--heartbeat", "600", data=data, timeout=options.step_timeout, error=Timeout)
    servers.append(server)
    try:
        tools.wait_ready(server.port, "/healthz", server.process, seconds=options.step_timeout, interval=0.005, error=Timeout)
    except Timeout:
        server.stop(seconds=10)
        raise
    return server, time.monotonic() - server.started


def list_body(cells, seed):
    sections = []
    per_section = 500
    for start in range(0, cells, per_section):
        sections.append({
            "id": f"s{start // per_section}",
            "header": f"Section {start // per_section}",
            "cells": [{"id": f"c{seed}-{i}", "text": f"Item {i} of run {seed}", "detail": "d" if i % 3 == 0 else None}
                      for i in range(start, min(cells, start + per_section))],
        })
    return json.dumps({"sections": sections}).encode()


def timed_put(client, name, cells, seed):
    body = list_body(cells, seed)
    started = time.monotonic()
    status, _, answer = client.request("PUT", f"/lists/{name}", body, [("Content-Type", "application/json")])
    elapsed = time.monotonic() - started
    if status not in (200, 201):
        raise RuntimeError(f"PUT {name}: {status} {answer[:300]!r}")
    return elapsed


# --- The measures ---------------------------------------------------------------------------------------


def measure_lists(cells):
    """PUT decode+apply of `cells` cells (3 runs), then startup with a data folder holding those cells."""
    data = tempfile.mkdtemp(prefix=f"lists-{cells}-", dir=WORK)
    server, _ = start_server(data)
    client = Client(server.port)
    puts = []
    for run in range(RUNS):
        check_budget()
        puts.append(timed_put(client, f"bench-{run}", cells, run))
        log(f"  PUT {cells} cells: {puts[-1]:.3f} s")
    windowed = measure_windowed(client, f"bench-{RUNS - 1}", cells, RUNS - 1)
    for run in range(RUNS - 1):
        status, _, _ = client.request("DELETE", f"/lists/bench-{run}")
        if status not in (200, 204):
            raise RuntimeError(f"DELETE bench-{run}: {status}")
    client.close()
    server.stop(seconds=10)
    starts = []
    for _ in range(RUNS):
        check_budget()
        server, seconds = start_server(data)
        starts.append(seconds)
        server.stop(seconds=10)
        log(f"  startup with {cells} cells: {starts[-1]:.3f} s")
    return statistics.median(puts), statistics.median(starts), windowed


def timed_get(client, path, headers=()):
    started = time.monotonic()
    status, _, answer = client.request("GET", path, b"", list(headers))
    elapsed = time.monotonic() - started
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {answer[:300]!r}")
    return elapsed


def measure_windowed(client, name, cells, seed):
    """The range route, a page at a cell and every key, on the list `name` of `cells` cells."""
    middle = cells // 2
    ranges = [timed_get(client, f"/lists/{name}/cells?from={middle}&count=100") for _ in range(20)]
    timed_get(client, f"/lists/{name}?at=c{seed}-{middle}", [("Accept", "text/html")])  # builds the index
    pages = [timed_get(client, f"/lists/{name}?at=c{seed}-{middle}", [("Accept", "text/html")]) for _ in range(20)]
    keys = []
    for run in range(RUNS):
        patch = json.dumps({"ops": [{"op": "update", "cell": {"id": f"c{seed}-{run}", "text": f"changed {run}"}}]}).encode()
        status, _, answer = client.request("PATCH", f"/lists/{name}", patch, [("Content-Type", "application/json")])
        if status != 200:
            raise RuntimeError(f"PATCH {name}: {status} {answer[:300]!r}")
        keys.append(timed_get(client, f"/lists/{name}/cells?from=0&count=0&keys=1"))
    log(f"  windowed, {cells} cells: range {statistics.median(ranges) * 1000:.2f} ms, ?at= page "
        f"{statistics.median(pages) * 1000:.2f} ms, keys {statistics.median(keys) * 1000:.1f} ms")
    return statistics.median(ranges), statistics.median(pages), statistics.median(keys)


def measure_big_list():
    """One PUT of BIG_LIST cells and one startup with them; None for a step that timed out."""
    data = tempfile.mkdtemp(prefix="lists-big-", dir=WORK)
    server, _ = start_server(data)
    client = Client(server.port)
    check_budget()
    try:
        put = timed_put(client, "big", BIG_LIST, 0)
        log(f"  PUT {BIG_LIST} cells: {put:.3f} s")
    except (Timeout, TimeoutError):
        log(f"  PUT {BIG_LIST} cells: timed out after {options.step_timeout:.0f} s")
        server.stop(seconds=10)
        return None, None
    client.close()
    server.stop(seconds=10)
    check_budget()
    try:
        server, start = start_server(data)
        server.stop(seconds=10)
        log(f"  startup with {BIG_LIST} cells: {start:.3f} s")
    except (Timeout, TimeoutError) as error:
        log(f"  startup with {BIG_LIST} cells: {error or f'timed out after {options.step_timeout:.0f} s'}")
        start = None
    return put, start


def session_cookie(client, page):
    status, headers, _ = client.request("GET", page, headers=[("Accept", "text/html")])
    if status != 200:
        raise RuntimeError(f"GET {page}: {status}")
    for name, value in headers:
        if name == "set-cookie" and value.startswith("livelist_session="):
            return value.split(";", 1)[0]
    raise RuntimeError(f"GET {page} set no session cookie")


def session_count(client):
    status, _, body = client.request("GET", "/metrics")
    match = re.search(rb"^livelist_sessions (\d+)$", body, re.M)
    if status != 200 or not match:
        raise RuntimeError("no livelist_sessions in /metrics")
    return int(match.group(1))


def measure_sessions(count):
    """Seconds per stream opened with a new session while the table holds `count` sessions."""
    server, _ = start_server(tempfile.mkdtemp(prefix=f"sessions-{count}-", dir=WORK))
    client = Client(server.port)
    client.request("PUT", "/lists/s", json.dumps({"sections": [{"id": "a", "cells": [{"id": "x", "text": "x"}]}]}).encode(),
                   [("Content-Type", "application/json")])
    # Fill the table: a page view mints a cookie, a stream opened with it enters the session.
    for index in range(count):
        if index % 1000 == 0:
            check_budget()
        cookie = session_cookie(client, "/lists/s")
        abort(open_stream(server.port, "/lists/s/events", cookie))
    # The table is filled when every close has been seen; wait for the count to settle.
    deadline = time.monotonic() + options.step_timeout
    while session_count(client) < count:
        if time.monotonic() > deadline:
            raise Timeout("the session table did not fill in time")
        time.sleep(0.05)
    rounds = []
    for _ in range(RUNS):
        check_budget()
        cookies = [session_cookie(client, "/lists/s") for _ in range(SESSION_PROBES)]
        started = time.monotonic()
        for cookie in cookies:
            abort(open_stream(server.port, "/lists/s/events", cookie))
        # One plain request after the last open, so that its work is over.
        client.request("GET", "/healthz")
        rounds.append((time.monotonic() - started) / SESSION_PROBES)
    held = session_count(client)
    log(f"  sessions {count} (table holds {held}): {[f'{r * 1e3:.3f} ms' for r in rounds]}")
    client.close()
    server.stop(seconds=10)
    return statistics.median(rounds)


def streams_open(client, timeout):
    status, _, body = client.request("GET", "/metrics", timeout=timeout)
    match = re.search(rb"^livelist_streams_open (\d+)$", body, re.M)
    if status != 200 or not match:
        raise RuntimeError("no livelist_streams_open in /metrics")
    return int(match.group(1))


def measure_stream_close(count):
    """Seconds from closing `count` streams waiting on missing lists until the server handled them."""
    server, _ = start_server(tempfile.mkdtemp(prefix=f"streams-{count}-", dir=WORK))
    client = Client(server.port)
    path = "/events?list=missing1&list=missing2&list=missing3"
    results = []
    for _ in range(RUNS):
        check_budget()
        socks = []
        deadline = time.monotonic() + options.step_timeout
        for _ in range(count):
            socks.append(open_stream(server.port, path, deadline=deadline))
        while streams_open(client, options.step_timeout) < count:
            if time.monotonic() > deadline:
                raise Timeout("streams did not open in time")
            time.sleep(0.05)
        started = time.monotonic()
        for sock in socks:
            abort(sock)
        # /metrics reads the stream gauge, then waits for the registry actor: its answer showing no
        # stream, followed by one more answer, comes after the closes' work on the registry.
        deadline = started + options.step_timeout
        while streams_open(client, options.step_timeout) > 0:
            if time.monotonic() > deadline:
                raise Timeout("streams did not close in time")
            time.sleep(0.002)
        streams_open(client, options.step_timeout)
        results.append(time.monotonic() - started)
        log(f"  close {count} streams: {results[-1]:.3f} s")
    client.close()
    server.stop(seconds=10)
    return statistics.median(results)


# --- The table ------------------------------------------------------------------------------------------


def seconds(value):
    return f"{value * 1e3:.2f} ms" if value < 1 else f"{value:.2f} s"


def main():
    log(f"Server: {server_bin}")
    rows = []
    try:
        log("List decode+apply and startup…")
        small = measure_lists(LIST_SIZES[0])
        large = measure_lists(LIST_SIZES[1])
        rows.append(("list PUT (decode+apply)", LIST_SIZES, small[0], large[0]))
        log("Session creation…")
        sessions = [measure_sessions(n) for n in SESSION_SIZES]
        rows.append(("stream open, new session", SESSION_SIZES, sessions[0], sessions[1]))
        log("Stream close…")
        closes = [measure_stream_close(n) for n in STREAM_SIZES]
        rows.append(("close streams waiting on missing lists", STREAM_SIZES, closes[0], closes[1]))
        rows.append(("startup (data of N cells)", LIST_SIZES, small[1], large[1]))
        rows.append(("range of 100 cells (windowed list)", LIST_SIZES, small[2][0], large[2][0]))
        rows.append(("page at a cell, ?at=KEY (warm)", LIST_SIZES, small[2][1], large[2][1]))
        rows.append(("every key, first answer of a version", LIST_SIZES, small[2][2], large[2][2]))
        big = None
        if not options.skip_100k:
            log(f"{BIG_LIST} cells…")
            big = measure_big_list()
    except (Timeout, TimeoutError) as error:
        log(f"bench-scaling: {error or 'a step timed out'}; printing what was measured")
        big = None
    print(f"Median of {RUNS} runs; release build; 127.0.0.1. Totals growing linearly give a ratio near 8;")
    print("the session row is the cost of one open, so a constant cost gives about 1 and a linear one 8; so are the")
    print("range and ?at= rows (one request; the list has N/500 sections, which they walk).\n")
    print("| measure | N | time at N | 8N | time at 8N | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (n, n8), at_n, at_8n in rows:
        print(f"| {name} | {n:,} | {seconds(at_n)} | {n8:,} | {seconds(at_8n)} | {at_8n / at_n:.1f} |")
    if big:
        def shown(value):
            return seconds(value) if value is not None else f"over {options.step_timeout:.0f} s (timed out)"
        print(f"\n{BIG_LIST:,} cells: PUT {shown(big[0])}, startup {shown(big[1])} (one run each).")


main()
