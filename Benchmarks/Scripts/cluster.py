#!/usr/bin/env python3
"""Several nodes on one PostgreSQL against one node, on 127.0.0.1 only, bounded in time, in one run.

Run it inside Scripts/with-postgres.sh, which starts a PostgreSQL of its own and exports its URL:

    Scripts/with-postgres.sh Benchmarks/run cluster [--streams 1000] [--rounds 5] [--binary PATH]

1. Fan-out: one PUT's event to 3 × N streams spread over three nodes sharing the database, against
   3N streams on one node with the embedded file store (the baseline). Each stream's arrival is timed
   from the moment the PUT is sent (its commit included). p50/p99/max in ms: medians of --rounds rounds.
2. PUT throughput with 8 writers on keep-alive connections (writes.py's load): the file store
   (the baseline), one node on PostgreSQL, and three nodes on PostgreSQL with the writers spread over
   them; all on one list, then each writer on a list of its own. PUTs per second, medians of --rounds
   runs of --seconds, and the ratio to the file store.

Prints both as Markdown tables. Under `LIVELIST_TEST_PG_TLS=both Scripts/with-postgres.sh`, the database
takes TLS and clear-text connections alike: the PostgreSQL setups then run twice in the same run, over
TLS with sslmode=verify-full and without TLS, and each TLS row gives its ratio to the clear-text one.

Build the release binary first: swift build -c release --product livelist.
"""
import argparse
import collections
import os
import resource
import statistics
import sys
import time

import fanout as fanout_tools  # the measures of fanout.py and writes.py, beside this script
import writes as write_tools
from livelist_tools import Server, create_database, default_binary

DATABASE_URL = os.environ.get("LIVELIST_TEST_DATABASE_URL")
PSQL = os.environ.get("LIVELIST_TEST_PSQL", "psql")


CLEAR_URL = os.environ.get("LIVELIST_TEST_DATABASE_URL_CLEAR")


def fresh_database(label, url=None):
    return create_database(url or DATABASE_URL, PSQL, "bench_" + label)


def postgres_setups():
    """(label suffix, database URL) of each way to reach the database in this run."""
    if not CLEAR_URL:
        return [("", DATABASE_URL)]
    return [(" without TLS", CLEAR_URL), (", TLS verify-full", DATABASE_URL)]


def start_nodes(binary, count, database):
    return [Server(binary, "--no-demo", "--max-connections", "20000", *(["--database-url", database] if database else []))
            for _ in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=default_binary(), help="the livelist binary (default: the release build)")
    parser.add_argument("--streams", type=int, default=1000, help="streams per node of the cluster (default 1,000)")
    parser.add_argument("--rounds", type=int, default=5, help="fan-out rounds and throughput runs (default 5)")
    parser.add_argument("--seconds", type=float, default=3, help="length of one throughput run (default 3)")
    parser.add_argument("--writers", type=int, default=8, help="concurrent writers (default 8)")
    args = parser.parse_args()
    if not DATABASE_URL:
        sys.exit("bench-cluster: run it inside Scripts/with-postgres.sh (LIVELIST_TEST_DATABASE_URL is not set)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    print(f"## Fan-out of one change ({args.rounds} rounds, medians; ms from the PUT sent to each stream's event)\n")
    print("| setup | streams | p50 | p99 | max |")
    print("|---|---:|---:|---:|---:|")
    fanout_results = {}
    fanout_setups = [("one node, file store", 1, None)] + [
        ("three nodes, PostgreSQL" + suffix, 3, fresh_database("fan", url)) for suffix, url in postgres_setups()]
    for label, count, database in fanout_setups:
        per_node = args.streams * 3 // count
        nodes = start_nodes(args.binary, count, database)
        try:
            fanout_tools.put(nodes[0].port, "fan", ["a", "start"])
            time.sleep(0.5)
            p50, p99, worst = fanout_tools.fanout([node.port for node in nodes], "fan", per_node, args.rounds)
        finally:
            for node in nodes:
                node.close()
        fanout_results[label] = (p50, p99)
        print(f"| {label} | {count} × {per_node} | {p50:.1f} | {p99:.1f} | {worst:.1f} |", flush=True)

    print(f"\n## PUT throughput ({args.writers} writers, medians of {args.rounds} runs of {args.seconds:g} s; ratio to the file store)\n")
    print("| setup | one list | ratio | a list per writer | ratio |")
    print("|---|---:|---:|---:|---:|")
    baseline = None
    write_results = {}
    write_setups = [("one node, file store", 1, None)] + [
        (f"{nodes} PostgreSQL" + suffix, count, url) for nodes, count in (("one node,", 1), ("three nodes,", 3))
        for suffix, url in postgres_setups()]
    for label, count, url in write_setups:
        database = fresh_database("put", url) if url else None
        nodes = start_nodes(args.binary, count, database)
        try:
            results = []
            for shared in (True, False):
                runs, failures = [], collections.Counter()
                for _ in range(args.rounds):
                    rate, failed = write_tools.run([node.port for node in nodes], args.writers, args.seconds, shared)
                    runs.append(rate)
                    failures += failed
                if failures:
                    statuses = ", ".join(f"{count} × {status}" for status, count in sorted(failures.items()))
                    print(f"<!-- {label}, {'one list' if shared else 'a list per writer'}: writes failed ({statuses}) -->")
                results.append(statistics.median(runs))
        finally:
            for node in nodes:
                node.close()
        baseline = baseline or results
        write_results[label] = results
        print(f"| {label} | {results[0]:.0f} | {results[0] / baseline[0]:.2f} | {results[1]:.0f} | {results[1] / baseline[1]:.2f} |",
              flush=True)

    if CLEAR_URL:
        print("\n## TLS (verify-full) ÷ without TLS, same run\n")
        print("| measure | without TLS | TLS | ratio |")
        print("|---|---:|---:|---:|")
        clear, tls = fanout_results["three nodes, PostgreSQL without TLS"], fanout_results["three nodes, PostgreSQL, TLS verify-full"]
        for name, index in (("fan-out p50 ms, three nodes", 0), ("fan-out p99 ms, three nodes", 1)):
            print(f"| {name} | {clear[index]:.1f} | {tls[index]:.1f} | {tls[index] / clear[index]:.2f} |")
        for nodes in ("one node,", "three nodes,"):
            clear, tls = write_results[f"{nodes} PostgreSQL without TLS"], write_results[f"{nodes} PostgreSQL, TLS verify-full"]
            for name, index in (("one list", 0), ("a list per writer", 1)):
                print(f"| PUT/s, {nodes.rstrip(',')}, {name} | {clear[index]:.0f} | {tls[index]:.0f} | {tls[index] / clear[index]:.2f} |")


if __name__ == "__main__":
    main()
