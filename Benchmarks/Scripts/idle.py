#!/usr/bin/env python3
"""Resident memory per idle keep-alive connection, LiveList's HTTPServer beside nginx (one worker).

Holds N (default 10,000) keep-alive connections from this one process against the HTTPServer
benchmark executable (http-bench-server of Benchmarks/HTTPServerBench), each having completed one
request for a small static file, and reads the server's RSS (VmRSS of /proc/PID/status, KiB) before and
after; then the same against nginx with one worker (master + worker: the baseline). Prints a Markdown
table: RSS before, RSS with the connections, how many are still open, and RSS per connection (KiB and
bytes). Goal: under 2 KiB per idle keep-alive connection.

Raises RLIMIT_NOFILE itself (the servers inherit it). Only 127.0.0.1; every wait is bounded. Needs nginx;
builds http-bench-server in release unless --no-build or --server-bin.

    Benchmarks/run idle [--connections 10000] [--no-build | --server-bin PATH] [--hold 3]
"""
import argparse
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import livelist_tools as tools

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--connections", type=int, default=10_000, help="idle connections held (default 10,000)")
parser.add_argument("--hold", type=float, default=3.0, help="seconds to wait idle before reading RSS")
parser.add_argument("--no-build", action="store_true", help="use the release http-bench-server already built")
parser.add_argument("--server-bin", help="an http-bench-server binary to use instead of building one")
options = parser.parse_args()


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


wanted = options.connections * 2 + 1024
wanted = min(tools.raise_open_files(wanted), wanted)
if wanted < options.connections + 256:
    sys.exit(f"bench-idle: RLIMIT_NOFILE hard limit {wanted} is too low for {options.connections} connections")

package = os.path.join(tools.ROOT, "Benchmarks", "HTTPServerBench")
if options.server_bin:
    server_bin = os.path.abspath(options.server_bin)
else:
    if not options.no_build:
        log("Building http-bench-server (release)…")
        tools.build_release(package)
    server_bin = os.path.join(tools.release_dir(package), "http-bench-server")
if not os.access(server_bin, os.X_OK):
    sys.exit(f"bench-idle: no executable at {server_bin}")
nginx = tools.nginx_binary()

work = tempfile.mkdtemp(prefix="bench-idle-")
os.chmod(work, 0o755)
body_path = os.path.join(work, "body.html")
with open(body_path, "wb") as f:
    f.write(b"<p>idle</p>\n")
www = os.path.join(work, "www")
os.makedirs(www)
with open(os.path.join(www, "small.txt"), "wb") as f:
    f.write(b"small\n")
for path in (www, body_path, os.path.join(www, "small.txt")):
    os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)


REQUEST = b"GET /small.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def open_idle(port, count, deadline):
    """Opens `count` connections, sends one request on each and reads its whole response.
    Returns the open sockets (each now idle on keep-alive)."""
    selector = selectors.DefaultSelector()
    sockets = []
    done = 0
    batch = 500
    while len(sockets) < count:
        pending = {}
        for _ in range(min(batch, count - len(sockets))):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            selector.register(s, selectors.EVENT_WRITE)
            pending[s] = b""
            sockets.append(s)
        while pending:
            if time.time() > deadline:
                sys.exit(f"bench-idle: timed out with {done} of {count} connections served")
            for key, events in selector.select(timeout=1):
                s = key.fileobj
                if events & selectors.EVENT_WRITE:
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        sys.exit(f"bench-idle: connect failed: {os.strerror(err)}")
                    s.send(REQUEST)
                    selector.modify(s, selectors.EVENT_READ)
                    continue
                data = s.recv(65536)
                if not data:
                    sys.exit("bench-idle: server closed a connection")
                pending[s] += data
                head, sep, rest = pending[s].partition(b"\r\n\r\n")
                if sep:
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    if len(rest) >= length:
                        if not head.startswith(b"HTTP/1.1 200"):
                            sys.exit(f"bench-idle: unexpected answer {head[:60]!r}")
                        selector.unregister(s)
                        del pending[s]
                        done += 1
    selector.close()
    return sockets


def rss_kib(pids):
    return sum(tools.memory_kib(pid) for pid in pids)


def measure(name, process, pids_of, port):
    tools.wait_ready(port, "/small.txt", process, seconds=20, error=lambda message: SystemExit(f"bench-idle: {message}"))
    time.sleep(0.5)
    before = rss_kib(pids_of())
    started = time.time()
    sockets = open_idle(port, options.connections, time.time() + 120)
    opened = time.time() - started
    time.sleep(options.hold)
    # Every connection must still be open (the server's idle timeout is far longer than the hold).
    alive = 0
    for s in sockets:
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                continue
        except BlockingIOError:
            pass
        alive += 1
    after = rss_kib(pids_of())
    for s in sockets:
        s.close()
    per = (after - before) * 1024 / options.connections
    log(f"  {name}: RSS {before} KiB -> {after} KiB with {alive} of {options.connections} open ({opened:.1f} s to open)")
    return before, after, alive, per


rows = []
started = []
try:
    port = tools.free_port()
    server = subprocess.Popen([server_bin, "--port", str(port), "--body", body_path,
                               "--root", www], stdout=subprocess.DEVNULL)
    started.append(server)
    rows.append(("LiveList HTTPServer (http-bench-server)",) + measure("HTTPServer", server, lambda: [server.pid], port))
    tools.stop_process(server)
    time.sleep(1)

    port = tools.free_port()
    prefix = os.path.join(work, "nginx")
    os.makedirs(os.path.join(prefix, "logs"))
    config = tools.nginx_conf(prefix, f"""
    access_log off;
    keepalive_timeout 120;
    server {{
        listen 127.0.0.1:{port};
        location / {{ root {www}; }}
    }}""", connections=options.connections * 2, rlimit=wanted)
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(config)
    nginx_process = subprocess.Popen([nginx, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf")])
    started.append(nginx_process)
    rows.append(("nginx, 1 worker (master + worker)",)
                + measure("nginx", nginx_process, lambda: tools.process_tree(nginx_process.pid), port))
finally:
    for process in started:
        tools.stop_process(process)
    shutil.rmtree(work, ignore_errors=True)

uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
print(f"### Idle keep-alive connections: {options.connections:,} held from one client, each after one request\n")
print("| server | RSS before (KiB) | RSS with the connections (KiB) | still open | RSS per connection | goal |")
print("|---|---:|---:|---:|---:|---|")
for name, before, after, alive, per in rows:
    goal = "< 2 KiB" if name.startswith("LiveList") else "(reference)"
    print(f"| {name} | {before:,} | {after:,} | {alive:,} | {per / 1024:.2f} KiB ({per:,.0f} B) | {goal} |")
print(f"\nAfter the run: {uptime}")
