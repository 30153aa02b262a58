#!/usr/bin/env python3
"""Races writers against the real binary, many rounds, on 127.0.0.1 only, bounded in time.

Each round releases its clients together (a barrier) against one server:
  create    12 PUTs creating one new list: exactly one 201, no version acknowledged twice, the served
            state is the write with the highest acknowledged version
  put/del   a PUT against a DELETE of an existing list: different versions, the later one decides
  limit     20 creates of different lists on a server with --max-lists 5: exactly 5 created
and, at the end, a restart: every list serves what was acknowledged before it.
Prints one table row per race; exits non-zero on any violation.

Usage: Benchmarks/run stress-writes [--rounds 50] [--binary PATH] [--seconds 240]
"""
import argparse
import json
import shutil
import sys
import threading
import time

import livelist_tools as tools
from livelist_tools import Server, default_binary


def request(port, method, path, body=None):
    status, _, answer = tools.request(port, method, path, body, {"Content-Type": "application/json"} if body is not None else None)
    return status, answer


def state(ids, writer):
    return json.dumps({"sections": [{"id": "s", "cells": [{"id": i, "text": writer} for i in ids]}]})


def race(count, body):
    """Runs body(index) on `count` threads released together; returns their results in order."""
    barrier = threading.Barrier(count)
    results = [None] * count

    def run(index):
        barrier.wait()
        try:
            results[index] = body(index)
        except Exception as error:  # a refused connection is a result too
            results[index] = (0, str(error).encode())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def version_of(answer):
    status, body = answer
    return json.loads(body)["version"] if 200 <= status < 300 else None


def served(port, name):
    status, _, body = tools.request(port, "GET", "/lists/" + name, headers={"Accept": "application/json"})
    if status != 200:
        return None
    snapshot = json.loads(body)
    return snapshot["version"], json.dumps(snapshot["state"], sort_keys=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=50, help="rounds of each race (the limit race: a tenth of them)")
    parser.add_argument("--binary", default=default_binary(), help="the livelist binary (default: the release build)")
    parser.add_argument("--seconds", type=float, default=240, help="stop starting rounds after this long")
    args = parser.parse_args()
    deadline = time.time() + args.seconds
    rows = []
    violations = []
    expected = {}

    server = Server(args.binary, "--no-demo")
    data = server.data
    try:
        created_201, duplicates, rounds = 0, 0, 0
        for round_ in range(args.rounds):
            if time.time() > deadline:
                break
            name = f"c{round_}"
            answers = race(12, lambda i: request(server.port, "PUT", "/lists/" + name, state(["a", f"b{i}"], f"w{i}")))
            ones = sum(1 for status, _ in answers if status == 201)
            versions = [v for v in map(version_of, answers) if v is not None]
            dup = len(versions) - len(set(versions))
            created_201 += ones
            duplicates += dup
            rounds += 1
            last = max(range(12), key=lambda i: version_of(answers[i]) or 0)
            now = served(server.port, name)
            want = json.dumps(json.loads(state(["a", f"b{last}"], f"w{last}")), sort_keys=True)
            if ones != 1 or dup or now is None or now[1] != want or now[0] != version_of(answers[last]):
                violations.append(f"create round {round_}: {answers} served {now}")
            expected[name] = now
        rows.append(("create", rounds, 12, f"{created_201} (want {rounds})", duplicates))

        dup_total, rounds = 0, 0
        for round_ in range(args.rounds):
            if time.time() > deadline:
                break
            name = f"pd{round_}"
            request(server.port, "PUT", "/lists/" + name, state(["a"], "first"))
            answers = race(2, lambda i: request(server.port, "PUT", "/lists/" + name, state(["b"], "put")) if i == 0
                           else request(server.port, "DELETE", "/lists/" + name))
            put_v, del_v = version_of(answers[0]), version_of(answers[1])
            rounds += 1
            if put_v is not None and put_v == del_v:
                dup_total += 1
            now = served(server.port, name)
            if (now is not None) != ((put_v or 0) > (del_v or 0)):
                violations.append(f"put/del round {round_}: {answers} served {now}")
            expected[name] = now
        rows.append(("put/del", rounds, 2, "-", dup_total))
    finally:
        server.stop()

    # A restart serves exactly what was acknowledged.
    restarted = Server(args.binary, "--no-demo", data=data)
    try:
        lost = [name for name, now in expected.items() if served(restarted.port, name) != now]
        if lost:
            violations.append(f"changed across the restart: {lost[:5]}")
        rows.append(("restart", 1, 1, "-", f"{len(lost)} changed of {len(expected)}"))
    finally:
        restarted.stop()
        shutil.rmtree(data, ignore_errors=True)

    created, rounds = 0, 0
    for round_ in range(max(1, args.rounds // 10)):
        if time.time() > deadline:
            break
        with Server(args.binary, "--no-demo", "--max-lists", "5") as limited:
            answers = race(20, lambda i: request(limited.port, "PUT", f"/lists/l{i}", state(["a"], "w")))
            ones = sum(1 for status, _ in answers if status == 201)
            created += ones
            rounds += 1
            if ones != 5:
                violations.append(f"limit round {round_}: {ones} lists created with --max-lists 5")
    rows.append(("limit", rounds, 20, f"{created} (want {5 * rounds})", 0))

    print("| race | rounds | clients | 201 answers | duplicate versions |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    if violations:
        print("\nVIOLATIONS:", *(v[:300] for v in violations[:20]), sep="\n  ")
        sys.exit(1)


if __name__ == "__main__":
    main()
