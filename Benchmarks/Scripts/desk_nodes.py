#!/usr/bin/env python3
"""Examples/Desk on two nodes of one PostgreSQL: how long a ticket filed on one node takes to reach the
customer's own view ("My tickets") streamed by the other, on 127.0.0.1 only, bounded in count and time.
On PostgreSQL the desk keeps its tickets in a table of its own and both lists are live queries over it
(docs/LIVE-QUERIES.md): a filing is one row written, which every node hears and shows.

Run it inside Scripts/with-postgres.sh, which starts a PostgreSQL of its own and exports its URL:

    Scripts/with-postgres.sh python3 Benchmarks/Scripts/desk_nodes.py [--changes 200] [--binary PATH]

alice signs in on node A and on node B; her stream of /lists/tickets (a live query of her rows) is opened
on node B; she files --changes tickets on node A one after another, each waiting for the last one's event.
Each latency is from the moment the filing is sent (its commit included) to the arrival of the event that
shows it on B. Printed as a Markdown table: p50, p99, max, lost, out of order, and the writes: rows in the
desk's table (one per filing) and what LiveList stored of either list (no state). The baseline in the same run is the same measure on one node (A's own
stream), so the table shows what the second node adds.

Build the example first: swift build --package-path Examples/Desk --product desk (-c release for figures).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

from livelist_tools import Server, create_database
from livelist_tools.replay import Browser, board_sign_in
from livelist_tools.sse import EventStream

HOST = "127.0.0.1"
DATABASE_URL = os.environ.get("LIVELIST_TEST_DATABASE_URL")
PSQL = os.environ.get("LIVELIST_TEST_PSQL", "psql")


def start_desk(binary, database):
    env = dict(os.environ, LIVELIST_DATABASE_URL=database, DESK_USERS="alice:secret1:customer,carol:secret2:agent",
               LIVELIST_HOST=HOST, LIVELIST_PORT="0")
    return Server(binary, env=env, resources=False, timeout=60)


def measure(writer_port, reader_port, changes, label):
    """Files `changes` tickets on writer_port; times their arrival on reader_port's stream of alice's tickets."""
    writer, reader = Browser(writer_port), Browser(reader_port)
    for browser in (writer, reader):
        status = board_sign_in(browser, "alice", "secret1")
        if status != 303:
            sys.exit(f"desk_nodes: alice could not sign in on port {browser.port}: {status}")
    stream = EventStream(HOST, reader_port, "/lists/tickets/events", {"Cookie": "; ".join(f"{k}={v}" for k, v in reader.cookies.items())},
                         error=RuntimeError)
    if stream.response.status != 200:
        sys.exit(f"desk_nodes: GET /lists/tickets/events on {reader_port}: {stream.response.status}")
    latencies, lost, disorder, last_seen = [], 0, 0, -1
    try:
        for index in range(changes):
            mark = f"{label}-{index}-{time.monotonic_ns()}"
            token = writer.csrf("/tickets/new")
            sent = time.monotonic()
            status, _, _ = writer.form("/tickets/new", {"csrf": token, "title": mark, "priority": "normal"}, keep=True)
            if status != 303:
                sys.exit(f"desk_nodes: filing a ticket answered {status}")
            deadline = sent + 10
            while True:
                try:
                    arrived, _, data = stream.next_event(max(0.01, deadline - time.monotonic()))
                except Exception:
                    lost += 1
                    break
                if data and mark in data:
                    latencies.append((arrived - sent) * 1000)
                    numbers = [int(n) for n in re.findall(rf"{label}-(\d+)-", data)]
                    if numbers and max(numbers) < last_seen:
                        disorder += 1
                    last_seen = max(numbers + [last_seen])
                    break
                if time.monotonic() > deadline:
                    lost += 1
                    break
    finally:
        stream.connection.close()
        writer.close()
        reader.close()
    return latencies, lost, disorder


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))] if ordered else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "..", "Examples", "Desk", ".build", "debug", "desk"))
    parser.add_argument("--changes", type=int, default=200)
    args = parser.parse_args()
    if not DATABASE_URL:
        sys.exit("desk_nodes: run it inside Scripts/with-postgres.sh (no LIVELIST_TEST_DATABASE_URL)")
    database = create_database(DATABASE_URL, PSQL, "desk_nodes")
    nodes = [start_desk(os.path.abspath(args.binary), database) for _ in range(2)]
    try:
        rows = []
        for label, writer, reader in (("one-node", nodes[0], nodes[0]), ("two-nodes", nodes[0], nodes[1])):
            latencies, lost, disorder = measure(writer.port, reader.port, args.changes, label)
            rows.append((label, latencies, lost, disorder))
        def count(sql):
            done = subprocess.run([PSQL, database, "-qAtc", sql], capture_output=True, text=True, timeout=60)
            return done.stdout.strip() if done.returncode == 0 else f"? ({done.stderr.strip()})"
        tickets = count("SELECT count(*) FROM tickets")
        stored = count("SELECT count(*) FROM livelist_lists WHERE name IN ('queue', 'tickets') AND content IS NOT NULL")
    finally:
        for node in nodes:
            node.close(kill=True)
    print(f"\nExamples/Desk: a ticket filed on node A reaching alice's own view, {args.changes} changes each\n")
    print("| streamed by | p50 ms | p99 ms | max ms | lost | out of order |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, latencies, lost, disorder in rows:
        print(f"| {'node A (baseline)' if label == 'one-node' else 'node B'} | {statistics.median(latencies):.1f} | "
              f"{percentile(latencies, 0.99):.1f} | {max(latencies):.1f} | {lost} | {disorder} |")
    base = statistics.median(rows[0][1])
    print(f"\nnode B's p50 is {statistics.median(rows[1][1]) / base:.2f}x node A's. The desk's table holds {tickets} rows after "
          f"{2 * args.changes} filings (one write each); LiveList stored a state for {stored} of its two lists.")


if __name__ == "__main__":
    main()
