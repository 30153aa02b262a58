#!/usr/bin/env python3
"""Several nodes on one PostgreSQL against one node, on 127.0.0.1 only, bounded in time, in one run.

Run it inside Scripts/with-postgres.sh, which starts a PostgreSQL of its own and exports its URL:

    Scripts/with-postgres.sh Scripts/bench-cluster.py [--streams 1000] [--rounds 5] [--binary PATH]

1. Fan-out: one PUT's event to 3 × N streams spread over three nodes sharing the database, against
   3N streams on one node with the embedded file store (the baseline). Each stream's arrival is timed
   from the moment the PUT is sent (its commit included). p50/p99/max in ms: medians of --rounds rounds.
2. PUT throughput with 8 writers on keep-alive connections (bench-writes.py's load): the file store
   (the baseline), one node on PostgreSQL, and three nodes on PostgreSQL with the writers spread over
   them; all on one list, then each writer on a list of its own. PUTs per second, medians of --rounds
   runs of --seconds, and the ratio to the file store.

Prints both as Markdown tables.

Build the release binary first: swift build -c release --product livelist.
"""
import argparse
import importlib.util
import os
import resource
import statistics
import sys
import time

from livelist_tools import Server, create_database, default_binary


def load(name):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), os.path.join(os.path.dirname(__file__), name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fanout_tools = load("bench-fanout")
write_tools = load("bench-writes")

DATABASE_URL = os.environ.get("LIVELIST_TEST_DATABASE_URL")
PSQL = os.environ.get("LIVELIST_TEST_PSQL", "psql")


def fresh_database(label):
    return create_database(DATABASE_URL, PSQL, "bench_" + label)


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
    for label, count, database in (("one node, file store", 1, None), ("three nodes, PostgreSQL", 3, fresh_database("fan"))):
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
    for label, count, use_database in (("one node, file store", 1, False), ("one node, PostgreSQL", 1, True),
                                       ("three nodes, PostgreSQL", 3, True)):
        database = fresh_database("put") if use_database else None
        nodes = start_nodes(args.binary, count, database)
        try:
            results = []
            for shared in (True, False):
                runs, failures = [], 0
                for _ in range(args.rounds):
                    rate, failed = write_tools.run([node.port for node in nodes], args.writers, args.seconds, shared)
                    runs.append(rate)
                    failures += failed
                if failures:
                    print(f"<!-- {label}: {failures} writes failed -->")
                results.append(statistics.median(runs))
        finally:
            for node in nodes:
                node.close()
        baseline = baseline or results
        print(f"| {label} | {results[0]:.0f} | {results[0] / baseline[0]:.2f} | {results[1]:.0f} | {results[1] / baseline[1]:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
