#!/usr/bin/env python3
"""HTTP throughput on 127.0.0.1, in one bounded run (Benchmarks/run http installs wrk and nginx, builds, then runs this).

First table: LiveList's HTTPServer (http-bench-server of Benchmarks/HTTPServerBench), a Hummingbird 2
reference server (Benchmarks/HummingbirdReference) and nginx (one worker, then two) serve the same
bytes, a 20,000-byte HTML body from memory at /body and a static file at /static/livelist.js, each
measured with `wrk -t1 -c64 -d5s` (keep-alive). Second table: the real `livelist` binary's routes beside
nginx (one worker) serving the very same bytes from files: the page of a 100-cell list
(without a session cookie, so that each view mints one; with a cookie; as JSON), a static file (plain
and gzip, nginx with gzip_static and the same gzip bytes), /healthz and changes?since. Every nginx runs
as its users tune it, its fastest: files from `root`, `sendfile on; tcp_nopush on; access_log off;`, no
charset filter, keep-alive connections never closed by count (see nginx_server). --compare BIN
adds a second livelist binary (an older build) to the same interleaved rounds. --access adds the same
binary with `--read-token` to the rounds, its requests carrying the token, and a third table: what the
access gate costs on the page routes (the read token is the gate's own `authenticate` and rule: such a
list leaves the event loop's cached-page path for the gate, then answers from the same cached parts).

Prints Markdown: requests/s, p50/p99 latency (ms), server CPU per request (µs, utime+stime of every
server process from /proc before and after each run; the routes table also gives the user part, where a
change to the server's own code shows through the kernel's noise), the CPU used by other processes
during the run (% of one core), and ratios to nginx with one worker (the baseline; the first table also
to Hummingbird), all medians of three runs (the runs of one round interleave the servers so that
background load spreads over all of them).

With --one-core, the routes table runs every server on CPU 0 (livelist with one event loop) and wrk on
CPU 1: one core each for LiveList and nginx's one worker, so that req/s ratios do not depend on how the
64 connections happened to spread over LiveList's loops (one per processor by default).

Needs wrk and nginx. Uses the release builds under each package's .build/release. Every server it
starts is stopped on exit; each wrk run is bounded by --duration; the whole run takes about 6 minutes
(3 with --skip-servers).
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

import livelist_tools as tools

parser = argparse.ArgumentParser(prog="Benchmarks/run http", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--no-build", action="store_true",
                    help="use the release builds there are (Benchmarks/run http builds them otherwise; this script never builds)")
parser.add_argument("--runs", type=int, default=3, help="rounds; each cell is the median of them (default 3)")
parser.add_argument("--duration", type=int, default=5, help="seconds of each wrk run (default 5)")
parser.add_argument("--connections", type=int, default=64, help="wrk's keep-alive connections (default 64)")
parser.add_argument("--skip-page", action="store_true", help="skip the second table (the livelist binary's routes)")
parser.add_argument("--skip-servers", action="store_true", help="skip the first table (HTTPServer, Hummingbird, nginx)")
parser.add_argument("--livelist", help="the livelist binary to measure (default: the release build)")
parser.add_argument("--compare", help="a second livelist binary measured in the same rounds")
parser.add_argument("--access", action="store_true",
                    help="routes table: also the binary with --read-token (requests with the token), and the gate's cost")
parser.add_argument("--one-core", action="store_true",
                    help="routes table: every server on CPU 0 (livelist with LIVELIST_EVENT_LOOPS=1), wrk on CPU 1")
options = parser.parse_args()

REPO = tools.ROOT
BIN = tools.release_dir(os.path.join(REPO, "Benchmarks", "HTTPServerBench"))
HB_BIN = tools.release_dir(os.path.join(REPO, "Benchmarks", "HummingbirdReference"))
NGINX = tools.nginx_binary()
TICK = os.sysconf("SC_CLK_TCK")
# --one-core: the routes table's servers on CPU 0, wrk on CPU 1, so that each server has one core, as
# nginx with one worker has, whatever way its connections spread over its threads.
PIN = ["taskset", "-c", "0"] if options.one_core else []
started = []  # Popen objects, stopped at exit


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def failure(message):
    return SystemExit(f"bench-http: {message}")


def executable(path, what):
    if not os.access(path, os.X_OK):
        raise failure(f"no {what} at {path}: build it (Benchmarks/run http without --no-build does)")
    return path


def fetch(port, path, headers=None, data=None, method="GET"):
    return tools.request(port, method, path, data, headers, timeout=10)


def start(command, **kwargs):
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "server.log"), "ab"), **kwargs)
    started.append(process)
    return process


def cpu_ticks(pids):
    """User and system ticks of the processes (utime and stime, fields 14 and 15 of /proc/PID/stat)."""
    user = system = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            user += int(fields[11])
            system += int(fields[12])
        except FileNotFoundError:
            pass
    return user, system


def machine_busy_ticks():
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values[:8]) - idle


def to_ms(text):
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def run_wrk(url, pid, headers=()):
    pids = tools.process_tree(pid)
    load = os.getloadavg()[0]
    command = ["wrk", "-t1", f"-c{options.connections}", f"-d{options.duration}s", "--latency", "--timeout", "5s"]
    if options.one_core:
        command = ["taskset", "-c", "1"] + command
    for header in headers:
        command += ["-H", header]
    before_cpu, before_busy = cpu_ticks(pids), machine_busy_ticks()
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(command + [url], capture_output=True, text=True, timeout=options.duration + 30).stdout
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    after_cpu, after_busy = cpu_ticks(pids), machine_busy_ticks()
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    if errors or socket_errors:
        log(f"  warning: {url}: {errors.group(0) if errors else ''} {socket_errors.group(0) if socket_errors else ''}")
    # The server's own work shows in its user time; its system time (the socket copies, mostly) moves
    # more from round to round with the machine.
    user_ticks = after_cpu[0] - before_cpu[0]
    server_ticks = user_ticks + after_cpu[1] - before_cpu[1]
    wrk_seconds = (after_children.ru_utime + after_children.ru_stime) - (before_children.ru_utime + before_children.ru_stime)
    other_ticks = (after_busy - before_busy) - server_ticks - wrk_seconds * TICK
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50": to_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)),
        "p99": to_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)),
        "cpu_us": server_ticks / TICK * 1e6 / max(requests, 1),
        "user_us": user_ticks / TICK * 1e6 / max(requests, 1),
        "other": max(other_ticks, 0) / TICK / options.duration * 100,  # % of one core
        "load": load,
    }


def nginx_server(workers, site, name, locations=(), connections=4096, pin=()):
    """nginx as its users tune it, serving `site` from `root`: the directives of the issue's reference
    (`worker_processes`, `sendfile on; tcp_nopush on; access_log off;`), the MIME types every install
    includes, a default type of text/html for the files without an extension (the page and /healthz),
    and keep-alive connections never closed by request count (LiveList closes none either). No charset
    filter. `locations` are extra location blocks (gzip_static for the gzip route)."""
    prefix = os.path.join(work, name)
    os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
    port = tools.free_port()
    extra = "".join(f"\n        {location}" for location in locations)
    config = tools.nginx_conf(prefix, f"""
    include /etc/nginx/mime.types;
    default_type text/html;
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port};
        root {site};{extra}
    }}""", workers=workers, connections=connections, rlimit=30000)
    path = os.path.join(prefix, "nginx.conf")
    with open(path, "w") as f:
        f.write(config)
    process = start(list(pin) + [NGINX, "-p", prefix, "-c", path])
    return process, port


def median_row(results):
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def fmt_int(value):
    return f"{value:,.0f}"


def check_same(port, path, expected, label):
    status, _, body = fetch(port, path)
    if status != 200 or body != expected:
        raise failure(f"{label} http://127.0.0.1:{port}{path} answered {status} with {len(body)} bytes, not the expected {len(expected)}")


def open_to_all(folder):
    """Folders 755 and files 644 (nginx's workers run as nobody)."""
    os.chmod(folder, 0o755)
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


def servers_table(body_path, body, root, static_bytes):
    """HTTPServer, Hummingbird and nginx with one and two workers, on the same two routes."""
    routes = [("/body", "body (20,000 B, memory)", body), ("/static/livelist.js", f"static file ({len(static_bytes):,} B)", static_bytes)]
    servers = {}
    for label, binary in (("LiveList HTTPServer", executable(os.path.join(BIN, "http-bench-server"), "http-bench-server")),
                          ("Hummingbird 2.28.1", executable(os.path.join(HB_BIN, "hummingbird-bench-server"), "hummingbird-bench-server"))):
        port = tools.free_port()
        servers[label] = (start([binary, "--port", str(port), "--body", body_path, "--root", root]), port)
    # nginx serves the same two files from one folder: /body (no extension: text/html) and the script.
    site = os.path.join(work, "servers-site")
    os.makedirs(os.path.join(site, "static"))
    with open(os.path.join(site, "body"), "wb") as f:
        f.write(body)
    with open(os.path.join(site, "static", "livelist.js"), "wb") as f:
        f.write(static_bytes)
    open_to_all(site)
    servers["nginx, 1 worker"] = nginx_server(1, site, "nginx1")
    servers["nginx, 2 workers"] = nginx_server(2, site, "nginx2")
    for name, (process, port) in servers.items():
        tools.wait_ready(port, "/body", process, error=failure)
        for path, _, expected in routes:
            check_same(port, path, expected, name)
    log(f"All four servers serve the same bytes; {options.runs} rounds of wrk -t1 -c{options.connections} -d{options.duration}s")

    results = {(name, path): [] for name in servers for path, _, _ in routes}
    for round_ in range(options.runs):
        for name, (process, port) in servers.items():
            for path, _, _ in routes:
                result = run_wrk(f"http://127.0.0.1:{port}{path}", process.pid)
                results[(name, path)].append(result)
                log(f"  round {round_ + 1} {name} {path}: {result['rps']:,.0f} req/s, {result['cpu_us']:.1f} µs CPU/req, "
                    f"other CPU {result['other']:.0f}%, load {result['load']:.2f}")

    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"### HTTP servers: wrk -t1 -c{options.connections} -d{options.duration}s on 127.0.0.1, medians of {options.runs} runs\n")
    print("| body | server | req/s | p50 ms | p99 ms | server CPU µs/req | req/s ÷ nginx 1w | req/s ÷ Hummingbird | CPU ÷ nginx 1w | other CPU % | load (1 min) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for path, label, _ in routes:
        base = median_row(results[("nginx, 1 worker", path)])
        hb = median_row(results[("Hummingbird 2.28.1", path)])
        for name in servers:
            m = median_row(results[(name, path)])
            loads = [r["load"] for r in results[(name, path)]]
            print(f"| {label} | {name} | {fmt_int(m['rps'])} | {m['p50']:.2f} | {m['p99']:.2f} | {m['cpu_us']:.1f} | "
                  f"{m['rps'] / base['rps']:.2f} | {m['rps'] / hb['rps']:.2f} | {m['cpu_us'] / base['cpu_us']:.2f} | "
                  f"{m['other']:.0f} | {min(loads):.2f}–{max(loads):.2f} |")
    print(f"\n`other CPU %`: CPU used by processes other than the server and wrk during the run, in % of one core. "
          f"After the run: {uptime}\n")
    for process in list(started):
        tools.stop_process(process, 15)
    started.clear()


def routes_table(static_bytes):
    """The livelist binary's routes (and a --compare binary's) beside nginx serving the same bytes."""
    binaries = {"LiveList": options.livelist or executable(os.path.join(tools.release_dir(), "livelist"), "livelist")}
    if options.compare:
        binaries["LiveList (compare)"] = options.compare
    if options.access:
        binaries[GATED] = binaries["LiveList"]
    servers = {}
    cookie_header = {}
    for label, binary in binaries.items():
        token = ["--read-token", READ_TOKEN] if label == GATED else []
        bearer = {"Authorization": "Bearer " + READ_TOKEN} if label == GATED else {}
        data = os.path.join(work, "data-" + str(len(servers)))
        os.makedirs(data)
        # One core: one event loop (a binary from before --event-loops ignores the variable and runs
        # its default, one loop per processor, on that one CPU).
        server = tools.Server(binary, "--no-demo", *token, data=data, prefix=PIN, error=failure,
                              env=dict(os.environ, LIVELIST_EVENT_LOOPS="1") if options.one_core else None)
        started.append(server.process)
        port = server.port
        cells = [{"id": f"c{i}", "text": f"Cell number {i}", "detail": f"detail {i}"} for i in range(100)]
        state = {"sections": [{"id": "main", "header": "Benchmark", "cells": cells}]}
        status, _, answer = fetch(port, "/lists/bench", data=json.dumps(state).encode(),
                                  method="PUT", headers={"Content-Type": "application/json"})
        if status // 100 != 2:
            raise failure(f"PUT answered {status}: {answer[:200]!r}")
        status, headers, _ = fetch(port, "/lists/bench", headers=dict(bearer, Accept="text/html"))
        if status != 200:
            raise failure(f"{label}: the page answered {status}")
        cookie_header[label] = "Cookie: " + (headers.get("Set-Cookie") or "").split(";")[0]
        servers[label] = (server.process, port)

    # The bytes nginx serves: those the (first) livelist binary answers.
    first_port = servers["LiveList"][1]
    _, _, page = fetch(first_port, "/lists/bench", headers={"Cookie": cookie_header["LiveList"].split(": ", 1)[1]})
    _, _, snapshot = fetch(first_port, "/lists/bench", headers={"Accept": "application/json"})
    _, headers, script_gzip = fetch(first_port, "/livelist.js", headers={"Accept-Encoding": "gzip"})
    if headers.get("Content-Encoding") != "gzip":
        raise failure("livelist.js was not answered with gzip")
    _, _, changes = fetch(first_port, "/lists/bench/changes?since=1")
    site = os.path.join(work, "site")
    os.makedirs(os.path.join(site, "lists"))
    # From `root`, by the files' own names: the page and /healthz have no extension (text/html), the
    # JSON ones end in .json; only the gzip route needs a location of its own (gzip_static).
    files = {"lists/bench": page, "lists/bench.json": snapshot, "livelist.js": static_bytes,
             "livelist.js.gz": script_gzip, "changes.json": changes, "healthz": b"ok\n"}
    for name, content in files.items():
        with open(os.path.join(site, name), "wb") as f:
            f.write(content)
    open_to_all(site)
    nginx, nginx_port = nginx_server(1, site, "nginx-routes", locations=["location = /livelist.js { gzip_static on; }"], pin=PIN)
    tools.wait_ready(nginx_port, "/healthz", nginx, error=failure)
    servers["nginx, 1 worker"] = (nginx, nginx_port)
    check_same(nginx_port, "/lists/bench", page, "nginx")
    _, headers, body_ = fetch(nginx_port, "/livelist.js", headers={"Accept-Encoding": "gzip"})
    if headers.get("Content-Encoding") != "gzip" or body_ != script_gzip:
        raise failure("nginx does not serve the same gzip bytes of livelist.js")

    # (label, LiveList path, nginx path, extra headers for LiveList, extra headers for nginx)
    cases = [
        (f"page, no cookie ({len(page):,} B)", "/lists/bench", "/lists/bench", [], []),
        ("page, session cookie", "/lists/bench", "/lists/bench", ["COOKIE"], []),
        (f"page as JSON ({len(snapshot):,} B)", "/lists/bench", "/lists/bench.json", ["Accept: application/json"], []),
        (f"static livelist.js ({len(files['livelist.js']):,} B)", "/livelist.js", "/livelist.js", [], []),
        (f"static livelist.js, gzip ({len(script_gzip):,} B)", "/livelist.js", "/livelist.js", ["Accept-Encoding: gzip"], ["Accept-Encoding: gzip"]),
        ("/healthz", "/healthz", "/healthz", [], []),
        (f"changes?since=1 ({len(changes):,} B)", "/lists/bench/changes?since=1", "/changes.json", [], []),
    ]
    page_results = {(label, name): [] for label, *_ in cases for name in servers}
    for round_ in range(options.runs):
        for label, path, nginx_path, extra, nginx_extra in cases:
            for name, (process, port) in servers.items():
                if name.startswith("nginx"):
                    url, headers_ = f"http://127.0.0.1:{port}{nginx_path}", nginx_extra
                else:
                    url = f"http://127.0.0.1:{port}{path}"
                    headers_ = [cookie_header[name] if h == "COOKIE" else h for h in extra]
                    if name == GATED:
                        headers_ = headers_ + ["Authorization: Bearer " + READ_TOKEN]
                result = run_wrk(url, process.pid, headers_)
                page_results[(label, name)].append(result)
                log(f"  round {round_ + 1} {label} {name}: {result['rps']:,.0f} req/s, {result['cpu_us']:.1f} µs CPU/req, load {result['load']:.2f}")
    print(f"### livelist routes beside nginx (1 worker, sendfile, the same bytes from files), wrk -t1 -c{options.connections} "
          f"-d{options.duration}s, medians of {options.runs} interleaved rounds"
          + (", every server on CPU 0 (livelist with one event loop), wrk on CPU 1" if options.one_core else "") + "\n")
    print("| route | server | req/s | p50 ms | p99 ms | server CPU µs/req | of it user µs/req | req/s ÷ nginx 1w | CPU ÷ nginx 1w | other CPU % | load (1 min) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, *_ in cases:
        base = median_row(page_results[(label, "nginx, 1 worker")])
        for name in servers:
            m = median_row(page_results[(label, name)])
            loads = [r["load"] for r in page_results[(label, name)]]
            print(f"| {label} | {name} | {fmt_int(m['rps'])} | {m['p50']:.2f} | {m['p99']:.2f} | {m['cpu_us']:.1f} | {m['user_us']:.1f} | "
                  f"{m['rps'] / base['rps']:.2f} | {m['cpu_us'] / base['cpu_us']:.2f} | {m['other']:.0f} | {min(loads):.2f}–{max(loads):.2f} |")
    if options.access:
        print(f"\n### The access gate on the list routes: `{GATED}` ÷ `LiveList`, same rounds\n")
        print("| route | req/s without | req/s with the gate | ratio | CPU µs/req without | with | ratio |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, path, *_ in cases:
            if not path.startswith("/lists/"):
                continue
            plain, gated = median_row(page_results[(label, "LiveList")]), median_row(page_results[(label, GATED)])
            print(f"| {label} | {fmt_int(plain['rps'])} | {fmt_int(gated['rps'])} | {gated['rps'] / plain['rps']:.2f} | "
                  f"{plain['cpu_us']:.1f} | {gated['cpu_us']:.1f} | {gated['cpu_us'] / plain['cpu_us']:.2f} |")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\nAfter the run: {uptime}")


GATED = "LiveList, read token"
READ_TOKEN = "bench-read-token"
work = tempfile.mkdtemp(prefix="bench-http-")
try:
    # The bytes: a 20,000-byte HTML body and a static file (the project's own script).
    row = "<tr><td class=\"cell\">LiveList benchmark row {:05d}</td><td>{}</td></tr>\n"
    html = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>bench</title></head><body><table>\n"
    index = 0
    while len(html) < 20_000 - 120:
        html += row.format(index, "x" * (index % 17))
        index += 1
    html += "</table></body></html>\n"
    html = html[:20_000 - 1]
    body = (html + " " * (20_000 - len(html) - 1) + "\n").encode()
    assert len(body) == 20_000
    body_path = os.path.join(work, "body.html")
    with open(body_path, "wb") as f:
        f.write(body)
    root = os.path.join(work, "www")
    os.makedirs(os.path.join(root, "static"))
    static_path = os.path.join(root, "static", "livelist.js")
    shutil.copyfile(os.path.join(REPO, "Public", "livelist.js"), static_path)
    open_to_all(work)
    with open(static_path, "rb") as f:
        static_bytes = f.read()
    if not options.skip_servers:
        servers_table(body_path, body, root, static_bytes)
    if not options.skip_page:
        routes_table(static_bytes)
finally:
    for process in started:
        tools.stop_process(process, 15)
    shutil.rmtree(work, ignore_errors=True)
