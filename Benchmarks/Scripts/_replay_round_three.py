#!/usr/bin/env python3
"""The attacks of "hostile input, round three" on the bare livelist server (Benchmarks/run replay-attacks runs
them; the Board's are in Benchmarks/Scripts/_replay_board.py). Each takes a livelist_tools.replay.Target, starts what it
needs (fresh servers, nginx), stops it, and returns ({measure: value}, notes):

  keyed-actions     one client pipelining 200,000 POST /lists/todo/actions of an unknown type, each with a
                    fresh 200-character Idempotency-Key: resident memory before, after 100,000, after 200,000;
                    with the default pace (10 a second after 40), then again with none (--action-rate 0)
  proxy-flood       behind nginx (docs/nginx.conf; the candidate with --trusted-proxy 127.0.0.1, the baseline
                    as documented then, with none), clients from distinct loopback addresses: an attacker's
                    25 actions a second for 10 s, and meanwhile one action from each of 8 others (204 or 429);
                    then on the Board behind nginx, 45 wrong passwords for bob and 45 for alice from the
                    attacker (127.0.0.2, then 127.0.0.3), and at once alice's right password from her own
                    browser (one that signed in before: the candidate's device cookie), and bob's from a
                    new browser
  tokenless-stream  a stream of todo and pangram opened with the read token and no cookie; an attacker with
                    neither POSTs changes to /events/TOKEN: statuses, and pangram's patches after
  read-cookie       two sign-ins at /signin: are the livelist_reader cookies equal, do they carry Max-Age,
                    and does the first still read after POST /signout
  account-pace      45 wrong read tokens at POST /signin, from 127.0.1.1 to 127.0.1.45: 401s and 429s
  visibility-batch  CPU seconds of 100 batched visibility reports of 1,000 keys on a 100,000-cell JSON list,
                    sent as fast as answered, with the default pace and with none
  large-patch       CPU seconds of a PATCH of 10,000 moves to "first" on a 100,000-cell JSON list, of the
                    same PATCH with its last operation invalid (422), and of the PUT that makes that change
"""
import json
import random
import re
import socket
import threading
import time

from livelist_tools import HOST, EventStream, Server, memory_kib
from livelist_tools.replay import Browser, Nginx, board_sign_in, board_sign_out, counts, cpu_seconds, events, loopback, start_board

READ_TOKEN = "round-three-read-token"


def json_headers(token):
    """The headers of a JSON action with the page's CSRF token."""
    return {"Content-Type": "application/json", "X-CSRF-Token": token}


# --- keyed-actions ---------------------------------------------------------------------------------

def pipeline_keyed(server, total=200_000, window=2_000, batch=500, seconds=150):
    """Pipelines `total` unknown actions with fresh 200-character keys on one connection (at most
    `window` unanswered): (RSS MB before, after total/2, after total, statuses, seconds)."""
    browser = Browser(server.port)
    token = browser.csrf("/lists/todo")
    cookie = "; ".join(f"{name}={value}" for name, value in browser.cookies.items())
    body = b'{"type":"nope"}'
    head = (f"POST /lists/todo/actions HTTP/1.1\r\nHost: {HOST}:{server.port}\r\nContent-Type: application/json\r\n"
            f"Cookie: {cookie}\r\nX-CSRF-Token: {token}\r\nContent-Length: {len(body)}\r\nIdempotency-Key: ").encode()
    filler = b"k" * 190
    sock = socket.create_connection((HOST, server.port), timeout=60)
    state = {"answered": 0, "closed": False, "statuses": {}}
    changed = threading.Condition()

    def reader():
        buffer, position = b"", 0
        try:
            while True:
                data = sock.recv(1 << 18)
                if not data:
                    break
                buffer = buffer[position:] + data
                position, answered = 0, 0
                while True:
                    end = buffer.find(b"\r\n\r\n", position)
                    if end < 0:
                        break
                    length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", buffer[position:end + 2])
                    stop = end + 4 + (int(length.group(1)) if length else 0)
                    if stop > len(buffer):
                        break
                    status = buffer[position + 9:position + 12].decode(errors="replace")
                    state["statuses"][status] = state["statuses"].get(status, 0) + 1
                    answered += 1
                    position = stop
                with changed:
                    state["answered"] += answered
                    changed.notify_all()
        except OSError:
            pass
        with changed:
            state["closed"] = True
            changed.notify_all()

    threading.Thread(target=reader, daemon=True).start()
    pid = server.process.pid
    before = memory_kib(pid) / 1024
    middle = None
    began = time.monotonic()
    deadline = began + seconds
    sent = 0
    try:
        while sent < total and time.monotonic() < deadline:
            with changed:
                changed.wait_for(lambda: state["closed"] or sent - state["answered"] < window, timeout=30)
                if sent == total // 2:
                    changed.wait_for(lambda: state["closed"] or state["answered"] >= sent, timeout=30)
                    middle = memory_kib(pid) / 1024
                if state["closed"]:
                    break
            count = min(batch, total - sent)
            sock.sendall(b"".join(head + b"%010d" % index + filler + b"\r\n\r\n" + body for index in range(sent, sent + count)))
            sent += count
        with changed:
            changed.wait_for(lambda: state["closed"] or state["answered"] >= sent, timeout=30)
    finally:
        elapsed = time.monotonic() - began
        sock.close()
    time.sleep(1)
    after = memory_kib(pid) / 1024
    return before, middle, after, state, sent, elapsed


def keyed_actions(target):
    """200,000 unknown actions with fresh Idempotency-Keys: memory with the default pace, and with none."""
    values, notes = {}, []
    for label, extra in (("default pace", ()), ("--action-rate 0", ("--action-rate", "0"))):
        with Server(target.binary, *extra) as server:
            before, middle, after, state, sent, elapsed = pipeline_keyed(server)
        mid = f"{middle:.0f}" if middle is not None else "-"
        values[f"RSS MB before / 100k / 200k ({label})"] = f"{before:.0f} / {mid} / {after:.0f}"
        answers = ", ".join(f"{n}x {s}" for s, n in sorted(state["statuses"].items()))
        notes.append(f"{label}: {state['answered']:,} of {sent:,} answered in {elapsed:.0f} s ({answers})"
                     + ("; the server closed the connection" if state["closed"] and state["answered"] < 200_000 else ""))
        if label == "default pace":
            values["answers (default pace)"] = answers
    return values, "; ".join(notes)


# --- proxy-flood -------------------------------------------------------------------------------------

def toggle(browser, token, keep=False):
    status, _, _ = browser.request("POST", "/lists/todo/actions", json.dumps({"type": "toggle", "cell": "2"}),
                                   json_headers(token), keep=keep)
    return status


def proxy_actions(target):
    """The action flood through nginx: the 8 bystanders' statuses and the attacker's."""
    extra = ("--trusted-proxy", "127.0.0.1") if target.is_candidate else ()
    with Server(target.binary, *extra) as server, Nginx(server.port) as nginx:
        attacker = Browser(nginx.port, loopback(0))
        attacker_token = attacker.csrf("/lists/todo")
        others = [Browser(nginx.port, loopback(1 + index)) for index in range(8)]
        tokens = [browser.csrf("/lists/todo") for browser in others]
        flood = []

        def attack():
            start = time.monotonic()
            for index in range(250):  # 25 a second for 10 s
                time.sleep(max(0.0, start + index / 25 - time.monotonic()))
                flood.append(toggle(attacker, attacker_token, keep=True))

        thread = threading.Thread(target=attack, daemon=True)
        thread.start()
        time.sleep(5)
        bystanders = [toggle(browser, token) for browser, token in zip(others, tokens)]
        thread.join(30)
        attacker.close()
    return bystanders, flood


def proxy_sign_ins(target):
    """Wrong passwords through nginx on the Board, then alice's right one from her own browser."""
    env = {"LIVELIST_TRUSTED_PROXIES": "127.0.0.1"} if target.is_candidate else {}
    with start_board(target.board, env=env) as board, Nginx(board.port) as nginx:
        alice = Browser(nginx.port, loopback(20))
        first = board_sign_in(alice, "alice", "secret1")
        board_sign_out(alice)
        alice_token = alice.csrf("/login")
        wrong = {}
        # Each account's 45 from an address of the attacker's own: from one address, the address's pace
        # would refuse most of the second 45 before the account's was reached.
        for index, user in enumerate(("bob", "alice")):
            attacker = Browser(nginx.port, loopback(index))
            token = attacker.csrf("/login")
            wrong[user] = [attacker.form("/login", {"user": user, "password": "guess", "csrf": token, "next": "/"}, keep=True)[0]
                           for _ in range(45)]
            attacker.close()
        right = alice.form("/login", {"user": "alice", "password": "secret1", "csrf": alice_token, "next": "/"})[0]
        newcomer = board_sign_in(Browser(nginx.port, loopback(21)), "bob", "secret2")
    return first, wrong, right, newcomer


def proxy_flood(target):
    """Behind nginx: one attacker's actions and wrong passwords against other clients' (see the module)."""
    bystanders, flood = proxy_actions(target)
    values = {"8 bystanders' actions during the flood": f"{bystanders.count(204)}x 204, {bystanders.count(429)}x 429"
              + (f", {len(bystanders) - bystanders.count(204) - bystanders.count(429)} other" if set(bystanders) - {204, 429} else "")}
    notes = (f"trusted proxy: {'127.0.0.1' if target.is_candidate else 'none'}; attacker's 250 actions: {counts(flood)}; "
             f"bystanders: {counts(bystanders)}")
    if not target.board:
        values["alice's sign-in after 90 wrong ones"] = "no Board binary"
        return values, notes
    first, wrong, right, newcomer = proxy_sign_ins(target)
    values["attacker's 45 wrong for bob / for alice"] = f"{counts(wrong['bob'])} / {counts(wrong['alice'])}"
    values["alice's sign-in after 90 wrong ones"] = str(right)
    values["bob's sign-in from a new browser"] = str(newcomer)
    notes += f"; alice's first sign-in (to be remembered): {first}"
    return values, notes


# --- tokenless-stream ----------------------------------------------------------------------------------

def pangram_patches(found):
    return sum(1 for kind, data in found if kind == "patch" and '"list":"pangram"' in data.replace(" ", ""))


def tokenless_stream(target):
    """A stream opened with the read token and no cookie, changed by someone with neither."""
    with Server(target.binary, "--read-token", READ_TOKEN, "--access-log", "--demo-interval", "0.25") as server:
        stream = EventStream(HOST, server.port, "/events?list=todo&list=pangram", {"Authorization": f"Bearer {READ_TOKEN}"},
                             error=RuntimeError)
        try:
            opened, _ = events(stream, 2.5)
            token = next((json.loads(data).get("stream") for kind, data in opened if kind == "stream"), None)
            source = "its first event"
            if not token:
                logged = re.findall(r"/events/([0-9a-f]{32})", server.log_text(20000))
                token, source = (logged[-1], "the access log") if logged else ("0" * 32, "none issued: a made-up one")
            attacker = Browser(server.port, loopback(0))
            headers = {"Content-Type": "application/json"}
            first = attacker.request("POST", f"/events/{token}", json.dumps({"drop": ["todo"], "add": ["todo"]}), headers)[0]
            second = attacker.request("POST", f"/events/{token}", json.dumps({"drop": ["pangram"]}), headers)[0]
            settling, _ = events(stream, 0.5)  # what was on its way when the changes were made
            after, ended = events(stream, 3)
        finally:
            stream.close()
    before_count, after_count = pangram_patches(opened), pangram_patches(after)
    emptied = any(kind == "patch" and '"list":"todo"' in data and '"sections":[]' in data for kind, data in settling + after)
    kinds = counts([kind for kind, _ in after])
    return ({"attacker's two changes (status)": f"{first}, {second}",
             "pangram patches 2.5 s before / 3 s after": f"{before_count} / {after_count}"},
            f"token from {source}; pangram patches in the 0.5 s after the changes: {pangram_patches(settling)}; events in the "
            f"3 s after that: {kinds}; the victim's todo {'was' if emptied else 'was not'} reset to empty"
            + ("; the stream ended" if ended else ""))


# --- read-cookie and account-pace ---------------------------------------------------------------------

def read_cookie(target):
    """Two sign-ins with the read token; then a sign-out, and the first cookie tried again."""
    with Server(target.binary, "--read-token", READ_TOKEN) as server:
        cookies, lines, browsers = [], [], []
        for index in range(2):
            browser = Browser(server.port, loopback(index))
            token = browser.csrf("/signin")
            status, headers, _ = browser.form("/signin", {"csrf": token, "token": READ_TOKEN, "next": "/"})
            line = next((value for value in headers.get_all("Set-Cookie") or [] if value.startswith("livelist_reader=")), "")
            cookies.append(line.split(";", 1)[0].partition("=")[2])
            lines.append(line)
            browsers.append(browser)
        old = Browser(server.port, loopback(5), {"livelist_reader": cookies[0]})
        before = old.request("GET", "/lists/todo", headers={"Accept": "application/json"})[0]
        out = browsers[0].form("/signout", {"csrf": browsers[0].csrf("/signin")})[0]
        after = old.request("GET", "/lists/todo", headers={"Accept": "application/json"})[0]
    age = re.search(r"(?i)max-age=(\d+)", lines[0])
    return ({"two sign-ins' livelist_reader cookies": "equal" if cookies[0] == cookies[1] else "different",
             "Max-Age of the cookie": age.group(1) + " s" if age else "none (browser session)",
             "POST /signout, then the old cookie reads": f"{out}, then {after}"},
            f"Set-Cookie: {re.sub(r'=[^;]{12,}', '=…', lines[0])}; the old cookie read {before} before the sign-out")


def account_pace(target):
    """45 wrong read tokens at POST /signin, one from each of 127.0.1.1 to 127.0.1.45."""
    with Server(target.binary, "--read-token", READ_TOKEN) as server:
        statuses = []
        for index in range(1, 46):
            browser = Browser(server.port, f"127.0.1.{index}")
            token = browser.csrf("/signin")
            statuses.append(browser.form("/signin", {"csrf": token, "token": f"wrong-{index}", "next": "/"})[0])
    return ({"45 wrong tokens from 45 addresses: 401 / 429": f"{statuses.count(401)} / {statuses.count(429)}"},
            f"statuses in order: {''.join({401: '.', 429: 'P'}.get(status, '?') for status in statuses)} (. 401, P 429); "
            f"{counts(statuses)}")


# --- visibility-batch and large-patch -----------------------------------------------------------------

def put_list(port, name, cells, method="PUT", body=None):
    """The status of a PUT of list `name` with one section of `cells`, or of `method` with `body`."""
    payload = body if body is not None else json.dumps({"sections": [{"id": "s", "cells": cells}]})
    return Browser(port).request(method, "/lists/" + name, payload, {"Content-Type": "application/json"}, timeout=300)[0]


def measured(server, action):
    """(result of action(), server CPU seconds, wall seconds)."""
    cpu, began = cpu_seconds(server.process.pid), time.monotonic()
    result = action()
    return result, cpu_seconds(server.process.pid) - cpu, time.monotonic() - began


def visibility_batch(target, cells=100_000, reports=100, keys=1_000):
    """100 batched visibility reports of 1,000 random keys each on a 100,000-cell JSON list, with the
    default pace and with none (--action-rate 0, which also lifts the candidate's pace of reported cells)."""
    values, notes = {}, []
    for label, extra in (("default pace", ()), ("--action-rate 0", ("--action-rate", "0"))):
        with Server(target.binary, *extra) as server:
            status = put_list(server.port, "long", [{"id": f"c{index}", "text": "x"} for index in range(cells)])
            if status not in (200, 201):
                raise RuntimeError(f"PUT of {cells:,} cells answered {status}")
            browser = Browser(server.port)
            token = browser.csrf("/lists/todo")
            generator = random.Random(3)
            bodies = [json.dumps({"type": "visible", "cells": "\u0000".join(f"c{k}" for k in generator.sample(range(cells), keys))})
                      for _ in range(reports)]
            statuses, cpu, wall = measured(server, lambda: [
                browser.request("POST", "/lists/long/actions", body, json_headers(token), keep=True)[0] for body in bodies])
            browser.close()
        values[f"CPU s of 100 reports of 1,000 keys ({label})"] = f"{cpu:.2f} ({statuses.count(204)}x 204)"
        notes.append(f"{label}: {counts(statuses)} in {wall:.2f} s")
    return values, "; ".join(notes) + f"; a JSON list of {cells:,} cells (its cells take visibility reports)"


def large_patch(target, cells=100_000, moves=10_000):
    """A PATCH of 10,000 moves to first, the same with its last operation invalid, and the PUT of its result."""
    original = [{"id": f"c{index}", "text": f"cell {index}"} for index in range(cells)]
    moved = original[cells - moves:]
    ops = [{"op": "upsert", "cell": cell, "position": "first"} for cell in moved]
    invalid = ops[:-1] + [{"op": "upsert", "cell": {"id": "new", "text": "x"}, "position": {"after": "no-such-cell"}}]
    result = moved[::-1] + original[:cells - moves]
    with Server(target.binary) as server:
        port = server.port
        if put_list(port, "big", original) not in (200, 201):
            raise RuntimeError("the PUT of the list failed")
        patched, patch_cpu, patch_wall = measured(server, lambda: put_list(port, "big", None, "PATCH", json.dumps({"ops": ops})))
        refused, refused_cpu, refused_wall = measured(server, lambda: put_list(port, "big", None, "PATCH", json.dumps({"ops": invalid})))
        put_list(port, "big", original)
        whole, put_cpu, put_wall = measured(server, lambda: put_list(port, "big", result))
    return ({"CPU s: PATCH of 10,000 moves / same, last op invalid / PUT": f"{patch_cpu:.2f} / {refused_cpu:.2f} / {put_cpu:.2f}",
             "statuses": f"{patched} / {refused} / {whole}"},
            f"wall s: {patch_wall:.2f} / {refused_wall:.2f} / {put_wall:.2f}; {cells:,}-cell JSON list, "
            f"the last {moves:,} cells moved first one by one (the PUT makes the same change)")


# (name, function(target), measures shown in the table; the first one carries an error)
ATTACKS = [
    ("keyed-actions", keyed_actions, ["RSS MB before / 100k / 200k (default pace)", "answers (default pace)",
                                      "RSS MB before / 100k / 200k (--action-rate 0)"]),
    ("proxy-flood", proxy_flood, ["8 bystanders' actions during the flood", "attacker's 45 wrong for bob / for alice",
                                  "alice's sign-in after 90 wrong ones", "bob's sign-in from a new browser"]),
    ("tokenless-stream", tokenless_stream, ["attacker's two changes (status)", "pangram patches 2.5 s before / 3 s after"]),
    ("read-cookie", read_cookie, ["two sign-ins' livelist_reader cookies", "Max-Age of the cookie",
                                  "POST /signout, then the old cookie reads"]),
    ("account-pace", account_pace, ["45 wrong tokens from 45 addresses: 401 / 429"]),
    ("visibility-batch", visibility_batch, ["CPU s of 100 reports of 1,000 keys (default pace)",
                                            "CPU s of 100 reports of 1,000 keys (--action-rate 0)"]),
    ("large-patch", large_patch, ["CPU s: PATCH of 10,000 moves / same, last op invalid / PUT", "statuses"]),
]
