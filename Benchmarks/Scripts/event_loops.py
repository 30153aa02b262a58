#!/usr/bin/env python3
"""The two event-loop backends of LiveList's HTTPServer side by side: epoll (the Linux default) and
poll(2) (LIVELIST_EVENT_LOOP=poll, and every other system), in one bounded run on 127.0.0.1.

Two http-bench-server processes (release build of Benchmarks/HTTPServerBench, one per backend, same loop count)
serve a /healthz-like answer (a 3-byte body from memory at /body). Each is measured with
`wrk -t1 -cC -dDs --latency` (keep-alive), first alone, then with IDLE extra keep-alive
connections held open beside the C active ones (each idle connection has completed one request),
which is where poll's O(open connections) per wait shows. The runs of one round interleave the
backends so that background load on a shared machine spreads over both. Prints a Markdown table:
medians over the rounds of requests/s, p50/p99 latency and server CPU per request (utime+stime of
the server process from /proc, before and after each run), and the poll/epoll ratio.

    Benchmarks/run event-loops [--no-build] [--rounds 3] [--duration 5]
        [--connections 64] [--idle 2000] [--loops N] [--baseline-bin OLD/http-bench-server]

Needs wrk (Scripts/setup bench installs it). Builds with `swift build -c release` in that package unless
--no-build, holding /tmp/livelist-swift.lock (the lock of every swift build on the machine) while it
builds. Every server it starts is stopped on exit.
"""
import argparse, os, re, resource, socket, statistics, subprocess, sys, tempfile, time

import livelist_tools as tools

HERE = os.path.join(tools.ROOT, "Benchmarks", "HTTPServerBench")

parser = argparse.ArgumentParser(prog="Benchmarks/run event-loops")
parser.add_argument("--no-build", action="store_true")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--duration", type=int, default=5)
parser.add_argument("--connections", type=int, default=64)
parser.add_argument("--idle", type=int, default=2000, help="idle keep-alive connections in the second scenario (0: skip it)")
parser.add_argument("--baseline-bin", help="an older http-bench-server binary (no --event-loop flag), measured as a third "
                    "server 'baseline' on its own default backend: the before of a before/after comparison")
parser.add_argument("--loops", type=int, default=None, help="event loops per server (default: the server's, one per core)")
options = parser.parse_args()

if not options.no_build:
    subprocess.run(["flock", tools.BUILD_LOCK, "swift", "build", "-c", "release", "--package-path", HERE], check=True, stdout=sys.stderr)
bin_dir = subprocess.run(["swift", "build", "-c", "release", "--package-path", HERE, "--show-bin-path"],
                         check=True, capture_output=True, text=True).stdout.strip()
server_bin = os.path.join(bin_dir, "http-bench-server")

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
wanted = options.idle * 2 + 1024
if soft < wanted:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))

work = tempfile.mkdtemp(prefix="bench-event-loops-")
body = os.path.join(work, "healthz.txt")
with open(body, "w") as f:
    f.write("ok\n")
os.mkdir(os.path.join(work, "www"))

servers = {}


def start(backend):
    binary = options.baseline_bin if backend == "baseline" else server_bin
    # stdbuf: an older binary does not flush the line that names its port.
    command = ["stdbuf", "-oL", binary, "--port", "0", "--body", body, "--root", os.path.join(work, "www")]
    if backend != "baseline":
        command += ["--event-loop", backend]
    if options.loops:
        command += ["--loops", str(options.loops)]
    environment = {key: value for key, value in os.environ.items() if key != "LIVELIST_EVENT_LOOP"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sys.stderr, text=True, env=environment)
    line = process.stdout.readline()
    match = re.match(r"listening (\d+)", line)
    if not match:
        raise SystemExit(f"{backend}: the server did not start: {line!r}")
    return process, int(match.group(1))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def to_ms(text):
    match = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    value = float(match.group(1))
    return {"us": value / 1000, "ms": value, "s": value * 1000, "m": value * 60000}[match.group(2)]


def wrk(port, pid):
    before = cpu_seconds(pid)
    out = subprocess.run(["wrk", "-t1", f"-c{options.connections}", f"-d{options.duration}s", "--latency",
                          f"http://127.0.0.1:{port}/body"], capture_output=True, text=True,
                         timeout=options.duration + 30).stdout
    cpu = cpu_seconds(pid) - before
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    # The latency distribution's lines ("     50%    1.23ms"), not the stdev percentages.
    p50 = to_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = to_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: .*", out)
    if errors:
        print(f"warning: {errors.group(0)}", file=sys.stderr)
    requests = rate * options.duration
    return rate, p50, p99, cpu / requests * 1e6 if requests else float("nan")


def open_idle(port, count):
    """Opens `count` keep-alive connections, each after one answered request; returns them."""
    held = []
    request = b"GET /body HTTP/1.1\r\nHost: bench\r\n\r\n"
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port))
        connection.sendall(request)
        held.append(connection)
    for connection in held:
        connection.settimeout(10)
        data = b""
        while b"\r\n\r\n" not in data or not data.endswith(b"ok\n"):
            chunk = connection.recv(4096)
            if not chunk:
                raise SystemExit("an idle connection was closed before its answer")
            data += chunk
    return held


results = {}
backends = ("epoll", "poll") + (("baseline",) if options.baseline_bin else ())
try:
    for backend in backends:
        servers[backend] = start(backend)
    scenarios = [("alone", 0)] + ([(f"+{options.idle} idle", options.idle)] if options.idle else [])
    for scenario, idle in scenarios:
        held = {backend: open_idle(port, idle) for backend, (_, port) in servers.items()} if idle else {}
        for round_index in range(options.rounds):
            order = backends if round_index % 2 == 0 else tuple(reversed(backends))
            for backend in order:
                process, port = servers[backend]
                results.setdefault((scenario, backend), []).append(wrk(port, process.pid))
                print(f"{scenario} round {round_index + 1} {backend}: {results[(scenario, backend)][-1][0]:.0f} req/s", file=sys.stderr)
        for connections in held.values():
            for connection in connections:
                connection.close()
        time.sleep(0.5)
finally:
    for process, _ in servers.values():
        process.terminate()
        process.wait(timeout=10)

load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
print(f"wrk -t1 -c{options.connections} -d{options.duration}s, GET /body (3 bytes), medians of {options.rounds} "
      f"interleaved rounds; loops per server: {options.loops or 'one per core'} on {os.cpu_count()} cores; {load}\n")
print("| scenario | backend | requests/s | p50 ms | p99 ms | server CPU µs/request | requests/s vs epoll |")
print("|---|---|---:|---:|---:|---:|---:|")
for scenario, _ in scenarios:
    base = statistics.median(r[0] for r in results[(scenario, "epoll")])
    for backend in backends:
        runs = results[(scenario, backend)]
        rate = statistics.median(r[0] for r in runs)
        p50 = statistics.median(r[1] for r in runs)
        p99 = statistics.median(r[2] for r in runs)
        cpu = statistics.median(r[3] for r in runs)
        print(f"| {scenario} | {backend} | {rate:,.0f} | {p50:.2f} | {p99:.2f} | {cpu:.1f} | {rate / base:.2f} |")
