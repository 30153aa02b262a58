#!/usr/bin/env python3
"""PUT throughput with concurrent writers, on 127.0.0.1 only, bounded in time.

For each binary given (e.g. the build before a change and the one after, in one run), starts it with an
empty data folder and runs 8 writers, each on a keep-alive connection, for a few seconds: all on one
list, then each on a list of its own. Every PUT changes the list (a new version, an fsync). Prints a
Markdown table: acknowledged PUTs per second, the median of --rounds runs, the ratio of each binary to
the first (the baseline), and the writes answered with an error.

Usage: Benchmarks/run writes [--binary PATH ...] [--writers 8] [--seconds 3] [--rounds 5]
"""
import argparse
import collections
import http.client
import json
import statistics
import threading
import time

from livelist_tools import Server, default_binary


def body(step, writer):
    return json.dumps({"sections": [{"id": "s", "cells": [
        {"id": f"c{i}", "text": f"w{writer} step {step}"} for i in range(20)]}]})


def run(ports, writers, seconds, shared):
    """PUTs per second of `writers` threads for `seconds`, on one list or one each; the writers are
    spread over `ports` (servers sharing their lists). Returns the rate and the failed writes, counted
    by status."""
    stop = time.time() + seconds
    counts = [0] * writers
    errors = []
    barrier = threading.Barrier(writers)

    def writer(index):
        connection = http.client.HTTPConnection("127.0.0.1", ports[index % len(ports)], timeout=30)
        name = "shared" if shared else f"own{index}"
        step = 0
        barrier.wait()
        while time.time() < stop:
            step += 1
            connection.request("PUT", "/lists/" + name, body=body(step, index), headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            if response.status >= 300:
                errors.append(response.status)
                continue
            counts[index] += 1
        connection.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    began = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.time() - began), collections.Counter(errors)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", action="append", help="a livelist binary (repeat to compare; the first is the baseline)")
    parser.add_argument("--writers", type=int, default=8, help="concurrent writers, one keep-alive connection each (default 8)")
    parser.add_argument("--seconds", type=float, default=3, help="length of one run (default 3)")
    parser.add_argument("--rounds", type=int, default=5, help="runs per binary and case (default 5)")
    args = parser.parse_args()
    binaries = args.binary or [default_binary()]
    results = {}
    failures = {}
    for round_ in range(args.rounds):
        # Alternate the binaries within each round, so that machine noise falls on all of them.
        for binary in binaries:
            with Server(binary, "--no-demo") as server:
                for shared in (True, False):
                    rate, refused = run([server.port], args.writers, args.seconds, shared)
                    results.setdefault((binary, shared), []).append(rate)
                    failures[(binary, shared)] = failures.get((binary, shared), 0) + sum(refused.values())
    print(f"PUTs per second, {args.writers} writers, median of {args.rounds} runs of {args.seconds:g} s")
    print("Acknowledged PUTs only; 'failed' counts writes answered with an error over all runs.")
    print("| binary | one list | ratio | failed | own list each | ratio | failed |")
    print("|---|---|---|---|---|---|---|")
    base = {shared: statistics.median(results[(binaries[0], shared)]) for shared in (True, False)}
    for binary in binaries:
        one = statistics.median(results[(binary, True)])
        own = statistics.median(results[(binary, False)])
        print(f"| {binary} | {one:.0f} | {one / base[True]:.2f} | {failures[(binary, True)]} | {own:.0f} | {own / base[False]:.2f} | {failures[(binary, False)]} |")


if __name__ == "__main__":
    main()
