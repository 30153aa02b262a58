"""Two livelist nodes through PgBouncer in session mode, sized as docs/DEPLOYMENT.md ("Connection poolers")
says, under writes (run by Tests/Cluster/test_cluster.sh, which starts the database with
Scripts/with-postgres.sh).

PgBouncer's `default_pool_size` bounds the server connections of one user and database; in session mode a
node holds one for each connection it opens, for as long as the connection lives: its pool
(`--database-pool`), its listener, and one more at start-up and while it chooses a server again. So each
node gets `default_pool_size / nodes - 2` pooled connections. With 24 writers per node PUTting for 12 s,
no write may fail (no 5xx); the p50 and p99 of the writes are printed.

PgBouncer (Debian's `pgbouncer`, which Scripts/setup installs) runs on a free loopback port in
a temporary folder, as the user `postgres` when run as root (it refuses to run as root). With arguments
(Tests/Cluster/test_cluster.sh passes its own), it runs only when one of them is part of its name.
LIVELIST_PGBOUNCER_NODE_POOL=16 gives each node the default pool, which PgBouncer cannot serve: some
writes then wait past the node's deadline and are answered 504.
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import livelist_tools as tools  # Tools/python, installed by Scripts/setup

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

BINARY = os.environ.get("LIVELIST_BINARY", os.path.join(ROOT, ".build", "debug", "livelist"))
DATABASE_URL = os.environ["LIVELIST_TEST_DATABASE_URL"]
PSQL = os.environ["LIVELIST_TEST_PSQL"]
TLS = os.environ.get("LIVELIST_TEST_TLS")

NODES = 2
WRITERS = 24
SECONDS = 12
# PgBouncer's defaults, as in the setup that stalled writes with the node's default pool of 16.
DEFAULT_POOL_SIZE = 20
MAX_CLIENT_CONN = 100
# docs/DEPLOYMENT.md: each node holds its pool, its listener, and one connection while it starts or
# chooses a server again.
NODE_POOL = int(os.environ.get("LIVELIST_PGBOUNCER_NODE_POOL", DEFAULT_POOL_SIZE // NODES - 2))


class TestFailure(Exception):
    pass


def pgbouncer_binary():
    for candidate in (shutil.which("pgbouncer"), "/usr/sbin/pgbouncer"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise TestFailure("pgbouncer is not installed: run Scripts/setup (Debian's pgbouncer)")


class PgBouncer:
    """PgBouncer in session mode on a free loopback port, in a temporary folder, in front of `database`
    (a URL of the test's PostgreSQL)."""

    def __init__(self, database):
        binary = pgbouncer_binary()
        self.folder = tempfile.mkdtemp(prefix="livelist-pgbouncer-")
        os.chmod(self.folder, 0o755)
        self.port = tools.free_port()
        target = urllib.parse.urlsplit(database)
        name = target.path.lstrip("/")
        server = f"host={target.hostname} port={target.port} dbname={name} user={target.username}"
        tls = ""
        if TLS:
            tls = f"server_tls_sslmode = verify-full\nserver_tls_ca_file = {TLS}/ca.crt\n"
        with open(os.path.join(self.folder, "users.txt"), "w") as users:
            users.write(f'"{target.username}" ""\n')
        self.config = os.path.join(self.folder, "pgbouncer.ini")
        with open(self.config, "w") as config:
            config.write(f"""[databases]
livelist = {server}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.folder}/users.txt
pool_mode = session
default_pool_size = {DEFAULT_POOL_SIZE}
max_client_conn = {MAX_CLIENT_CONN}
logfile = {self.folder}/pgbouncer.log
pidfile = {self.folder}/pgbouncer.pid
{tls}""")
        command = [binary, self.config]
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
            for entry in os.listdir(self.folder):
                shutil.chown(os.path.join(self.folder, entry), "postgres")
            command = ["runuser", "-u", "postgres", "--"] + command
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection((tools.HOST, self.port), timeout=1):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise TestFailure(f"pgbouncer did not start: {self.log_text()}")
                time.sleep(0.05)
        self.url = f"postgres://{target.username}@127.0.0.1:{self.port}/livelist?sslmode=disable"

    def log_text(self):
        try:
            with open(os.path.join(self.folder, "pgbouncer.log")) as log:
                return log.read()[-3000:]
        except OSError:
            return self.process.stderr.read().decode(errors="replace") if self.process.poll() is not None else ""

    def close(self):
        tools.stop_process(self.process, 10)
        shutil.rmtree(self.folder, ignore_errors=True)


def writer(port, name, until, results):
    """PUTs `name` on the node at `port` until `until` (one connection, kept alive), recording each
    write's status and seconds."""
    connection = http.client.HTTPConnection(tools.HOST, port, timeout=30)
    count = 0
    try:
        while time.monotonic() < until:
            count += 1
            body = json.dumps({"sections": [{"id": "s", "cells": [{"id": str(i), "text": f"{count}-{i}"} for i in range(3)]}]})
            started = time.monotonic()
            try:
                connection.request("PUT", f"/lists/{name}", body=body, headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                results.append((response.status, time.monotonic() - started))
            except (OSError, http.client.HTTPException) as failure:
                results.append((f"error: {failure}", time.monotonic() - started))
                connection.close()
                connection = http.client.HTTPConnection(tools.HOST, port, timeout=30)
    finally:
        connection.close()


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def test_two_nodes_through_pgbouncer_in_session_mode_never_stall_writes():
    database = tools.create_database(DATABASE_URL, PSQL, "pgbouncer")
    bouncer = PgBouncer(database)
    nodes = []
    try:
        for _ in range(NODES):
            nodes.append(tools.Server(BINARY, "--database-url", bouncer.url, "--database-pool", str(NODE_POOL), "--no-demo",
                                      timeout=60, error=TestFailure))
        for node in nodes:
            tools.wait_ready(node.port, "/readyz", node.process, seconds=30, error=TestFailure)
        # The pool's size and use are in /metrics, as a scraper reads them.
        metrics = tools.request(nodes[0].port, "GET", "/metrics")[2].decode()
        if f"livelist_database_pool_connections {NODE_POOL}\n" not in metrics or "livelist_database_pool_busy " not in metrics:
            raise TestFailure(f"/metrics does not give the pool's size {NODE_POOL} and use:\n{metrics}")
        results = []
        until = time.monotonic() + SECONDS
        threading.Timer(SECONDS / 2, lambda: print("  /readyz of a node under the writes:",
                                                    tools.request(nodes[0].port, "GET", "/readyz")[2].decode().replace("\n", " | "))).start()
        threads = [threading.Thread(target=writer, args=(node.port, f"w{n}-{i}", until, results), daemon=True)
                   for n, node in enumerate(nodes) for i in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(SECONDS + 60)
        failed = [status for status, _ in results if not isinstance(status, int) or status >= 500]
        seconds = [elapsed for status, elapsed in results if isinstance(status, int) and status < 500]
        summary = (f"{len(results)} writes by {NODES} nodes x {WRITERS} writers in {SECONDS} s through PgBouncer session mode "
                   f"(default_pool_size {DEFAULT_POOL_SIZE}, --database-pool {NODE_POOL}): "
                   f"p50 {percentile(seconds, 0.5) * 1000:.0f} ms, p99 {percentile(seconds, 0.99) * 1000:.0f} ms, "
                   f"{len(failed)} failed")
        print(summary)
        if failed or not seconds:
            statuses = {}
            for status in failed:
                statuses[status] = statuses.get(status, 0) + 1
            raise TestFailure(f"{summary}: {statuses}\n" + "\n".join(f"--- node {n.port}\n{n.log_text()}" for n in nodes)
                              + f"\n--- pgbouncer\n{bouncer.log_text()}")
        unexpected = [status for status, _ in results if status not in (200, 201)]
        if unexpected:
            raise TestFailure(f"{summary}: statuses other than 200 and 201: {sorted(set(unexpected))}")
    finally:
        for node in nodes:
            node.close()
        bouncer.close()
        subprocess.run([PSQL, DATABASE_URL, "-qc", f"DROP DATABASE IF EXISTS {urllib.parse.urlsplit(database).path.lstrip('/')} WITH (FORCE)"],
                       capture_output=True)


def main():
    name = test_two_nodes_through_pgbouncer_in_session_mode_never_stall_writes.__name__
    if sys.argv[1:] and not any(part in name for part in sys.argv[1:]):
        return
    started = time.monotonic()
    try:
        test_two_nodes_through_pgbouncer_in_session_mode_never_stall_writes()
    except TestFailure as failure:
        print(f"FAIL test_two_nodes_through_pgbouncer_in_session_mode_never_stall_writes ({time.monotonic() - started:.1f} s)\n{failure}")
        sys.exit(1)
    print(f"ok   test_two_nodes_through_pgbouncer_in_session_mode_never_stall_writes ({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
