#!/usr/bin/env bash
# HTTP throughput on 127.0.0.1, in one bounded run: LiveList's HTTPServer, a Hummingbird 2 reference
# server and nginx (one worker, then two) serve the same bytes, a 20,000-byte HTML body from memory at
# /body and a static file at /static/livelist.js, each measured with `wrk -t1 -c64 -d5s` (keep-alive).
# A second table compares the real `livelist` binary's page of a 100-cell list with nginx serving the
# same page bytes from a file. Prints Markdown: requests/s, p50/p99 latency, server CPU per request
# (utime+stime of every server process from /proc, before and after each run), the CPU used by other
# processes during the run, and ratios, all medians of three runs (the runs of one round interleave the
# servers so that background load spreads over all of them).
#
#   Scripts/bench-http.sh [--no-build] [--runs N] [--duration SECONDS] [--connections N] [--skip-page]
#
# Needs wrk and nginx (Debian packages; installed with apt-get when missing and running as root).
# Builds in release (Benchmarks/HTTPServerBench, Benchmarks/HummingbirdReference and livelist), holding
# /tmp/livelist-swift.lock only while building; --no-build uses what is built. Every server it starts is
# stopped on exit; each wrk run is bounded by --duration; the whole run takes about 3 minutes.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=1
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-build) build=0 ;;
        *) args+=("$1") ;;
    esac
    shift
done

for tool in wrk nginx; do
    if ! command -v "$tool" >/dev/null 2>&1 && ! [[ -x /usr/sbin/$tool ]]; then
        if [[ $(id -u) -eq 0 ]]; then
            echo "Installing $tool…" >&2
            apt-get update -qq >&2 && apt-get install -y -qq "$tool" >&2
        else
            echo "bench-http: $tool is missing (apt-get install $tool)" >&2
            exit 1
        fi
    fi
done

if [[ $build -eq 1 ]]; then
    echo "Building http-bench-server, hummingbird-bench-server and livelist (release)…" >&2
    flock /tmp/livelist-swift.lock swift build -c release --package-path "$repo_root/Benchmarks/HTTPServerBench" >&2
    flock /tmp/livelist-swift.lock swift build -c release --package-path "$repo_root/Benchmarks/HummingbirdReference" >&2
    flock /tmp/livelist-swift.lock swift build -c release --package-path "$repo_root" --product livelist >&2
fi
bench_bin="$(swift build -c release --package-path "$repo_root/Benchmarks/HTTPServerBench" --show-bin-path)"
hummingbird_bin="$(swift build -c release --package-path "$repo_root/Benchmarks/HummingbirdReference" --show-bin-path)"
main_bin="$(swift build -c release --package-path "$repo_root" --show-bin-path)"

export BENCH_REPO="$repo_root" BENCH_BIN="$bench_bin" HUMMINGBIRD_BIN="$hummingbird_bin" MAIN_BIN="$main_bin"
export BENCH_NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
exec python3 - "${args[@]+"${args[@]}"}" <<'PYTHON'
import argparse, json, os, re, resource, shutil, signal, socket, statistics, subprocess, sys, tempfile, time
import urllib.request

parser = argparse.ArgumentParser(prog="bench-http.sh")
parser.add_argument("--runs", type=int, default=3)
parser.add_argument("--duration", type=int, default=5)
parser.add_argument("--connections", type=int, default=64)
parser.add_argument("--skip-page", action="store_true")
options = parser.parse_args()

REPO, BIN, HB_BIN, MAIN_BIN, NGINX = (os.environ[k] for k in ("BENCH_REPO", "BENCH_BIN", "HUMMINGBIRD_BIN", "MAIN_BIN", "BENCH_NGINX"))
TICK = os.sysconf("SC_CLK_TCK")
work = tempfile.mkdtemp(prefix="bench-http-")
os.chmod(work, 0o755)  # nginx workers run as nobody
started = []  # Popen objects, stopped at exit


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url, headers=None, data=None, method="GET"):
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, dict(response.headers), response.read()


def wait_ready(url, process, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"bench-http: server for {url} exited with {process.returncode}")
        try:
            fetch(url)
            return
        except Exception:
            time.sleep(0.1)
    raise SystemExit(f"bench-http: {url} not ready after {seconds} s")


def start(command, **kwargs):
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "server.log"), "ab"), **kwargs)
    started.append(process)
    return process


def stop(process):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def process_tree(pid):
    """The pid and its children (nginx's workers)."""
    pids = [pid]
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
        pids += [int(p) for p in out.split()]
    except FileNotFoundError:
        pass
    return pids


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
        except FileNotFoundError:
            pass
    return total


def machine_busy_ticks():
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values[:8]) - idle


def to_ms(text):
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def run_wrk(url, pid, headers=()):
    pids = process_tree(pid)
    load = os.getloadavg()[0]
    command = ["wrk", "-t1", f"-c{options.connections}", f"-d{options.duration}s", "--latency", "--timeout", "5s"]
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
    server_ticks = after_cpu - before_cpu
    wrk_seconds = (after_children.ru_utime + after_children.ru_stime) - (before_children.ru_utime + before_children.ru_stime)
    other_ticks = (after_busy - before_busy) - server_ticks - wrk_seconds * TICK
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50": to_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)),
        "p99": to_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)),
        "cpu_us": server_ticks / TICK * 1e6 / max(requests, 1),
        "other": max(other_ticks, 0) / TICK / options.duration * 100,  # % of one core
        "load": load,
    }


def nginx_server(workers, routes, name, connections=4096):
    prefix = os.path.join(work, name)
    os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
    locations = "\n".join(routes)
    config = f"""
worker_processes {workers};
worker_rlimit_nofile 30000;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections {connections}; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    charset_types text/html text/css application/javascript text/javascript;
    access_log off;
    sendfile on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    server {{
        listen 127.0.0.1:{{port}};
{locations}
    }}
}}
"""
    port = free_port()
    path = os.path.join(prefix, "nginx.conf")
    with open(path, "w") as f:
        f.write(config.replace("{port}", str(port)))
    process = start([NGINX, "-p", prefix, "-c", path, "-g", "daemon off;"])
    return process, port


def median_row(results):
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def fmt_int(value):
    return f"{value:,.0f}"


def check_same(url, expected, label):
    status, headers, body = fetch(url)
    if status != 200 or body != expected:
        raise SystemExit(f"bench-http: {label} {url} answered {status} with {len(body)} bytes, not the expected {len(expected)}")


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
    for dirpath, dirnames, filenames in os.walk(work):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    with open(static_path, "rb") as f:
        static_bytes = f.read()

    routes = [("/body", "body (20,000 B, memory)", body), ("/static/livelist.js", f"static file ({len(static_bytes):,} B)", static_bytes)]
    servers = {}

    port = free_port()
    process = start([os.path.join(BIN, "http-bench-server"), "--port", str(port), "--body", body_path, "--root", root])
    servers["LiveList HTTPServer"] = (process, port)
    port = free_port()
    process = start([os.path.join(HB_BIN, "hummingbird-bench-server"), "--port", str(port), "--body", body_path, "--root", root])
    servers["Hummingbird 2.28.1"] = (process, port)
    nginx_routes = [
        f"        location = /body {{ default_type text/html; charset utf-8; alias {body_path}; }}",
        f"        location /static/ {{ root {root}; }}",
    ]
    servers["nginx, 1 worker"] = nginx_server(1, nginx_routes, "nginx1")
    servers["nginx, 2 workers"] = nginx_server(2, nginx_routes, "nginx2")
    for name, (process, port) in servers.items():
        wait_ready(f"http://127.0.0.1:{port}/body", process)
        for path, _, expected in routes:
            check_same(f"http://127.0.0.1:{port}{path}", expected, name)
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
        stop(process)
    started.clear()

    if not options.skip_page:
        data = os.path.join(work, "data")
        os.makedirs(data)
        port = free_port()
        livelist = start([os.path.join(MAIN_BIN, "livelist"), "--port", str(port), "--data", data, "--no-demo",
                          "--public", os.path.join(REPO, "Public"), "--templates", os.path.join(REPO, "Templates")])
        wait_ready(f"http://127.0.0.1:{port}/healthz", livelist)
        cells = [{"id": f"c{i}", "text": f"Cell number {i}", "detail": f"detail {i}"} for i in range(100)]
        state = {"sections": [{"id": "main", "header": "Benchmark", "cells": cells}]}
        status, _, answer = fetch(f"http://127.0.0.1:{port}/lists/bench", data=json.dumps(state).encode(),
                                  method="PUT", headers={"Content-Type": "application/json"})
        if status // 100 != 2:
            raise SystemExit(f"bench-http: PUT answered {status}: {answer[:200]!r}")
        status, headers, page = fetch(f"http://127.0.0.1:{port}/lists/bench", headers={"Accept": "text/html"})
        cookie = headers.get("Set-Cookie", "").split(";")[0]
        page_headers = [f"Cookie: {cookie}"] if cookie else []
        status, _, page = fetch(f"http://127.0.0.1:{port}/lists/bench", headers=dict(h.split(": ", 1) for h in page_headers))
        page_path = os.path.join(work, "page.html")
        with open(page_path, "wb") as f:
            f.write(page)
        os.chmod(page_path, 0o644)
        nginx, nginx_port = nginx_server(1, [
            f"        location = /lists/bench {{ default_type text/html; charset utf-8; alias {page_path}; }}"], "nginx-page")
        wait_ready(f"http://127.0.0.1:{nginx_port}/lists/bench", nginx)
        page_results = {"livelist (100-cell page)": [], "nginx, 1 worker (same bytes)": []}
        targets = {"livelist (100-cell page)": (livelist, port, page_headers),
                   "nginx, 1 worker (same bytes)": (nginx, nginx_port, [])}
        for round_ in range(options.runs):
            for name, (process, p, extra) in targets.items():
                result = run_wrk(f"http://127.0.0.1:{p}/lists/bench", process.pid, extra)
                page_results[name].append(result)
                log(f"  round {round_ + 1} {name}: {result['rps']:,.0f} req/s, {result['cpu_us']:.1f} µs CPU/req, load {result['load']:.2f}")
        base = median_row(page_results["nginx, 1 worker (same bytes)"])
        print(f"### A rendered LiveList page ({len(page):,} B, 100 cells), medians of {options.runs} runs (goal: at least 0.5 of nginx)\n")
        print("| server | req/s | p50 ms | p99 ms | server CPU µs/req | req/s ÷ nginx 1w | CPU ÷ nginx 1w | other CPU % | load (1 min) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, results_ in page_results.items():
            m = median_row(results_)
            loads = [r["load"] for r in results_]
            print(f"| {name} | {fmt_int(m['rps'])} | {m['p50']:.2f} | {m['p99']:.2f} | {m['cpu_us']:.1f} | "
                  f"{m['rps'] / base['rps']:.2f} | {m['cpu_us'] / base['cpu_us']:.2f} | {m['other']:.0f} | {min(loads):.2f}–{max(loads):.2f} |")
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"\nAfter the run: {uptime}")
finally:
    for process in started:
        stop(process)
    shutil.rmtree(work, ignore_errors=True)
PYTHON
