#!/usr/bin/env python3
"""The attacks of "hostile input, round three" on Examples/Board's sign-in (Benchmarks/run replay-attacks runs
them). The baseline Board signs in with a `board_user` cookie of its own and keeps ended sign-ins in a
hidden `signed-out` list; the candidate's uses the library (`livelist_signin` and `livelist_device`
cookies, sessions rotated at sign-in and sign-out, wrong passwords paced per account). Each attack
takes a livelist_tools.replay.Target and returns ({measure: value}, notes):

  logout-flood      file store: first as many sign-in + sign-out cycles as 90 s allow (at most 20,000;
                    each from a browser and an address of its own, under the per-address pace); then alice
                    signs in and out, and attacker connections (processes of their own) replay POST /logout
                    with her ended cookie and a valid session and CSRF token: 2, then 6 at 50 a second each
                    (the same load offered to both builds), then 6 as fast as answered; bob's GET
                    /lists/team p50 idle and under each flood (a client on these 2 cores: the unbounded
                    flood's own CPU slows it too); then the Board restarts on the same data, and her
                    ended cookie is tried again
  revocation-flood  PostgreSQL: 300 replayed sign-outs of one ended cookie, then 300 valid sign-outs (sign in
                    and out, 10 per address): rows added to livelist_revocations, and seconds; whether a
                    second node on the database refuses the ended cookie; then the table seeded to ~1 M rows
                    and the statements of a revocation EXPLAINed, and 20 replayed and 20 valid sign-outs
                    timed there
  planted-session   bob plants a session of his in alice's jar; she signs in and opens /lists/team/events; bob
                    posts /logout with his sign-in cookie, the planted session and its token: is she denied?
  password-timing   no per-address pace (LIVELIST_ACTION_RATE=0): 200 wrong 60 KB passwords for alice and 200
                    for unknown users, alternating, from 20 browsers that signed in as alice before (on the
                    candidate each has its own failure budget of 10 for alice); median time difference in µs
"""
import http.client
import json
import multiprocessing
import shutil
import statistics
import threading
import time
import urllib.parse

from livelist_tools import HOST, EventStream, create_database
from livelist_tools.replay import (SESSION_COOKIES, SIGN_IN_COOKIES, Browser, board_sign_in, board_sign_out, counts, cpu_seconds, events,
                            loopback, median, psql, start_board)

USERS = "alice:secret1,bob:secret2,carol:secret3"
RATE = 50  # replays a second per attacker connection in logout-flood's bounded floods


def cookie_header(*pairs):
    """A Cookie field of (name, value) pairs; None pairs left out."""
    return "; ".join(f"{name}={value}" for name, value in filter(None, pairs))


def needs_board(target):
    if not target.board:
        raise RuntimeError("no Board binary (build Examples/Board, or give --baseline-board / --candidate-board)")


# --- logout-flood --------------------------------------------------------------------------------------

def record_ended(port, seconds=90, limit=20_000, threads=4, first=1_000):
    """carol signs in and out as often as `seconds` allow (at most `limit`), each time from a new browser on
    a new address: (sign-outs done, failures, seconds)."""
    state = {"next": 0, "done": 0, "failed": []}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker():
        while time.monotonic() < deadline:
            with lock:
                if state["next"] >= limit:
                    return
                index = state["next"]
                state["next"] += 1
            browser = Browser(port, loopback(first + index))
            try:
                signed = board_sign_in(browser, "carol", "secret3")
                out = board_sign_out(browser) if signed == 303 else signed
            except (OSError, http.client.HTTPException) as error:
                out = type(error).__name__
            with lock:
                if out == 303:
                    state["done"] += 1
                else:
                    state["failed"].append(out)

    began = time.monotonic()
    workers = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(seconds + 60)
    return state["done"], state["failed"], time.monotonic() - began


def replay_logouts(port, source, cookie, token, stop_at, rate, results):
    """An attacker's connection: POST /logout with the same cookies and token until `stop_at`, at most
    `rate` a second (None: as fast as answered). In a process of its own, so that it does not share this
    interpreter's lock with the timed client."""
    browser = Browser(port, source)
    statuses = []
    began = time.monotonic()
    while time.monotonic() < stop_at:
        if rate:
            time.sleep(max(0.0, began + len(statuses) / rate - time.monotonic()))
        try:
            statuses.append(browser.form("/logout", {"csrf": token}, keep=True, headers={"Cookie": cookie})[0])
        except (OSError, http.client.HTTPException) as error:
            statuses.append(type(error).__name__)
    results.put(statuses)


def page_times(browser, seconds):
    """Milliseconds of each GET /lists/team on one keep-alive connection during `seconds`."""
    times = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        began = time.perf_counter()
        status, _, _ = browser.request("GET", "/lists/team", keep=True)
        if status != 200:
            raise RuntimeError(f"bob's GET /lists/team answered {status}")
        times.append((time.perf_counter() - began) * 1000)
    return times


def logout_flood(target):
    """Replayed sign-outs of an ended cookie against a signed-in user's page views (see the module)."""
    needs_board(target)
    context = multiprocessing.get_context("fork")
    values, notes = {}, []
    board = start_board(target.board, users=USERS)
    data = board.data
    board.owns_data = False
    try:
        port = board.port
        recorded, failed, took = record_ended(port)
        notes.append(f"{recorded:,} ended sign-ins recorded first in {took:.0f} s ({len(failed)} cycles failed: {counts(failed)[:60]})")
        values["ended sign-ins recorded first"] = f"{recorded:,}"
        alice = Browser(port, loopback(0))
        board_sign_in(alice, "alice", "secret1")
        ended = alice.cookie(SIGN_IN_COOKIES)
        board_sign_out(alice)
        bob = Browser(port, loopback(1))
        board_sign_in(bob, "bob", "secret2")
        idle = page_times(bob, 3)
        p50 = {"idle": median(idle)}
        for attackers, rate in ((2, RATE), (6, RATE), (6, None)):
            results = context.Queue()
            stop_at = time.monotonic() + 7
            processes = []
            for index in range(attackers):
                attacker = Browser(port, loopback(10 + index))
                token = attacker.csrf("/login")
                cookie = cookie_header(ended, attacker.cookie(SESSION_COOKIES))
                process = context.Process(target=replay_logouts, args=(port, attacker.source, cookie, token, stop_at, rate, results))
                process.start()
                processes.append(process)
            time.sleep(1)
            cpu = cpu_seconds(board.process.pid)
            timed = page_times(bob, 5)
            cpu = cpu_seconds(board.process.pid) - cpu
            replies = []
            for process in processes:
                replies += results.get(timeout=30)
                process.join(10)
            p50[(attackers, rate)] = median(timed)
            notes.append(f"{attackers} attackers {f'at {rate}/s each' if rate else 'unbounded'}: {len(replies):,} replays in 7 s "
                         f"({counts(replies)}); bob p50 {median(timed):.2f} ms, p90 {statistics.quantiles(timed, n=10)[-1]:.2f} ms "
                         f"over {len(timed)} GETs; server CPU {cpu:.1f} s in those 5 s")
        values[f"bob's p50 ms: idle / 2 / 6 attackers at {RATE}/s each"] = " / ".join(
            f"{p50[key]:.2f}" for key in ("idle", (2, RATE), (6, RATE)))
        values["bob's p50 ms: 6 attackers unbounded"] = f"{p50[(6, None)]:.2f}"
        before = Browser(port).request("GET", "/api/me", headers={"Cookie": cookie_header(ended)})[0]
        bob.close()
        board.stop()
        board = start_board(target.board, data=data, users=USERS)
        after = Browser(board.port).request("GET", "/api/me", headers={"Cookie": cookie_header(ended)})[0]
        values["alice's ended cookie: GET /api/me before / after a restart"] = f"{before} / {after}"
    finally:
        board.close()
        shutil.rmtree(data, ignore_errors=True)
    return values, "; ".join(notes)


# --- revocation-flood ----------------------------------------------------------------------------------

REVOCATION_STATEMENTS = [
    # What PostgresListStore.recordRevocation runs for each revocation, then what every node polls.
    ("INSERT", "INSERT INTO livelist_revocations (origin, kind, subject) VALUES ('explain', 'identity', 'alice')"),
    ("DELETE", "DELETE FROM livelist_revocations WHERE recorded_at < now() - interval '1 hour'"),
    # What a node of schema 4 runs instead, once a minute and never per revocation: one batch of the
    # housekeeping pass (PostgresListStore+Housekeeping.swift), at most 10,000 rows.
    ("housekeeping batch", "WITH gone AS (DELETE FROM livelist_revocations WHERE id = ANY(ARRAY("
                           "SELECT id FROM livelist_revocations WHERE id <= (SELECT id FROM livelist_revocations "
                           "WHERE recorded_at < now() - interval '1 hour' ORDER BY recorded_at DESC LIMIT 1) "
                           "AND id < (SELECT max(id) FROM livelist_revocations) ORDER BY id LIMIT 10000)) RETURNING 1) "
                           "SELECT count(*) FROM gone"),
    ("poll", "SELECT id, origin, kind, subject, (SELECT min(id) FROM livelist_revocations) FROM livelist_revocations "
             "WHERE id > (SELECT max(id) FROM livelist_revocations) - 1 ORDER BY id LIMIT 500"),
]


def explain(target, url, statement):
    """The plan's first line and its execution time, run in a transaction rolled back."""
    out = psql(target, url, ["BEGIN", f"EXPLAIN (ANALYZE, COSTS OFF) {statement}", "ROLLBACK"])
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    scans = [line.split(" on ")[0].replace("->", "").strip() for line in lines if "Scan" in line]
    timing = next((line.split(":")[1].strip() for line in lines if line.startswith("Execution Time")), "?")
    return f"{', '.join(dict.fromkeys(scans)) or lines[0].split(' (')[0]}: {timing}"


def sign_outs(port, count, base, per_address=10):
    """`count` sign-in + sign-out cycles of carol, `per_address` from each address: (statuses, seconds)."""
    began = time.monotonic()
    statuses = []
    for index in range(count):
        browser = Browser(port, loopback(base + index // per_address))
        signed = board_sign_in(browser, "carol", "secret3")
        statuses.append(board_sign_out(browser) if signed == 303 else f"sign-in {signed}")
    return statuses, time.monotonic() - began


def replays(port, ended, count, base, per_address=30):
    """`count` POST /logout with the ended cookie, each address with its own session: (statuses, seconds)."""
    browsers = [Browser(port, loopback(base + index)) for index in range(-(-count // per_address))]
    tokens = [browser.csrf("/login") for browser in browsers]
    # The same cookies every time (a sign-out's answer may rotate the session: the replay ignores it).
    cookies = [cookie_header(ended, browser.cookie(SESSION_COOKIES)) for browser in browsers]
    began = time.monotonic()
    statuses = []
    for index in range(count):
        slot = index // per_address
        statuses.append(browsers[slot].form("/logout", {"csrf": tokens[slot]}, headers={"Cookie": cookies[slot]}, keep=True)[0])
    return statuses, time.monotonic() - began


def revocation_flood(target):
    """Sign-outs, replayed and valid, and what they leave in livelist_revocations (see the module)."""
    needs_board(target)
    if not target.database:
        raise RuntimeError("no PostgreSQL: run under Scripts/with-postgres.sh, or give --database-url")
    url = create_database(target.database, target.psql, f"replay_{target.label}")
    rows = lambda: int(psql(target, url, "SELECT count(*) FROM livelist_revocations"))
    kinds = lambda: psql(target, url, "SELECT string_agg(kind || ' ' || n, ', ') FROM "
                                      "(SELECT kind, count(*) AS n FROM livelist_revocations GROUP BY kind ORDER BY kind) k")
    values, notes = {}, []
    with start_board(target.board, database=url, users=USERS) as board:
        port = board.port
        alice = Browser(port, loopback(0))
        board_sign_in(alice, "alice", "secret1")
        ended = alice.cookie(SIGN_IN_COOKIES)
        board_sign_out(alice)
        start = rows()
        replayed, replay_seconds = replays(port, ended, 300, 10)
        after_replays = rows()
        valid, valid_seconds = sign_outs(port, 300, 100)
        after_valid = rows()
        values["rows added by 300 replayed sign-outs (seconds)"] = f"{after_replays - start} ({replay_seconds:.1f} s)"
        values["rows added by 300 valid sign-outs (seconds)"] = f"{after_valid - after_replays} ({valid_seconds:.1f} s)"
        notes.append(f"replays: {counts(replayed)}; valid sign-outs: {counts(valid)}; rows by kind: {kinds()}")
        with start_board(target.board, database=url, users=USERS) as other:
            elsewhere = Browser(other.port).request("GET", "/api/me", headers={"Cookie": cookie_header(ended)})[0]
        here = Browser(port).request("GET", "/api/me", headers={"Cookie": cookie_header(ended)})[0]
        values["alice's ended cookie: GET /api/me here / on a 2nd node"] = f"{here} / {elsewhere}"
        schema = psql(target, url, "SELECT max(version) FROM livelist_schema")
        indexes = psql(target, url, "SELECT string_agg(indexdef, '; ') FROM pg_indexes WHERE tablename = 'livelist_revocations'")
        began = time.monotonic()
        psql(target, url, ["INSERT INTO livelist_revocations (id, origin, kind, subject) "
                           "SELECT -g, 'seed', 'seed', 'seed' || g FROM generate_series(1, 1000000) g",
                           "ANALYZE livelist_revocations"])
        seeded = time.monotonic() - began
        plans = {name: explain(target, url, statement) for name, statement in REVOCATION_STATEMENTS}
        values["at ~1 M rows: DELETE of each revocation"] = plans["DELETE"]
        late_replays, late_replay_seconds = replays(port, ended, 20, 190)
        late, late_seconds = sign_outs(port, 20, 200)
        values["at ~1 M rows: s per replayed / valid sign-out"] = f"{late_replay_seconds / 20:.3f} / {late_seconds / 20:.3f}"
        notes.append(f"schema version {schema}; indexes: {indexes}; seeded 1,000,000 rows (negative ids, "
                     f"kind 'seed', which no node reads) in {seeded:.1f} s; plans: "
                     + "; ".join(f"{name}: {plan}" for name, plan in plans.items())
                     + f"; there, 20 replays: {counts(late_replays)}, 20 sign-outs: {counts(late)}")
    return values, "; ".join(notes)


# --- planted-session -----------------------------------------------------------------------------------

def planted_session(target):
    """A session planted by bob in alice's jar, and bob's sign-out with it (see the module)."""
    needs_board(target)
    with start_board(target.board) as board:
        port = board.port
        planter = Browser(port, loopback(0))
        planted_token = planter.csrf("/login")
        planted = planter.cookie(SESSION_COOKIES)
        bob = Browser(port, loopback(1))
        board_sign_in(bob, "bob", "secret2")
        alice = Browser(port, loopback(2), dict([planted]))
        signed = board_sign_in(alice, "alice", "secret1")
        rotated = alice.cookie(SESSION_COOKIES) != planted
        stream = EventStream(HOST, port, "/lists/team/events", {"Cookie": cookie_header(*alice.cookies.items())}, error=RuntimeError)
        try:
            opened, _ = events(stream, 1)
            bob_cookies = cookie_header(bob.cookie(SIGN_IN_COOKIES), planted)
            out = planter.form("/logout", {"csrf": planted_token}, headers={"Cookie": bob_cookies})[0]
            found, ended = events(stream, 3)
            denied = any(kind == "denied" for kind, _ in found)
            proof = ""
            if not denied and not ended:
                token = alice.csrf("/lists/team")
                posted = alice.request("POST", "/lists/team/actions", json.dumps({"type": "post", "text": "still here"}),
                                       {"Content-Type": "application/json", "X-CSRF-Token": token})[0]
                later, _ = events(stream, 3)
                proof = f"; alice's post {posted}, then her stream got: {counts([kind for kind, _ in later])}"
        finally:
            stream.close()
    verdict = "denied" if denied else "closed" if ended else "stays open"
    return ({"alice's stream after bob's sign-out": verdict, "bob's POST /logout": str(out)},
            f"alice's sign-in {signed}, session {'rotated' if rotated else 'kept (the planted one)'}; her stream's first second: "
            f"{counts([kind for kind, _ in opened])}; after bob's sign-out: {counts([kind for kind, _ in found])}{proof}")


# --- password-timing -----------------------------------------------------------------------------------

def password_timing(target, attempts=200, devices=20, size=60_000, warmup=20):
    """Wrong 60 KB passwords for alice and for unknown users, alternating (see the module)."""
    needs_board(target)
    with start_board(target.board, env={"LIVELIST_ACTION_RATE": "0"}) as board:
        port = board.port
        browsers = []
        for index in range(devices):
            browser = Browser(port, loopback(index))
            board_sign_in(browser, "alice", "secret1")
            for name in SIGN_IN_COOKIES:  # wrong passwords come with the session (and device cookie) only
                browser.cookies.pop(name, None)
            browsers.append((browser, browser.csrf("/login")))
        password = "p" * size
        times = {"alice": [], "unknown": []}
        statuses = []

        def attempt(browser, token, user):
            body = urllib.parse.urlencode({"user": user, "password": password, "csrf": token, "next": "/"})
            began = time.perf_counter()
            status = browser.request("POST", "/login", body, {"Content-Type": "application/x-www-form-urlencoded"}, keep=True)[0]
            return status, (time.perf_counter() - began) * 1e6

        for index in range(warmup):
            attempt(*browsers[index % devices], f"w{index:04d}")
        for index in range(attempts):
            browser, token = browsers[index % devices]
            for who in (("alice", "unknown") if index % 2 == 0 else ("unknown", "alice")):
                status, micros = attempt(browser, token, "alice" if who == "alice" else f"x{index:04d}")
                statuses.append(status)
                times[who].append(micros)
        for browser, _ in browsers:
            browser.close()
    difference = median(times["alice"]) - median(times["unknown"])
    return ({"median µs, alice minus unknown user": f"{difference:+.0f}"},
            f"medians: alice {median(times['alice']):.0f} µs, unknown {median(times['unknown']):.0f} µs; "
            f"{attempts} each, {size:,}-byte passwords; statuses {counts(statuses)}")


# (name, function(target), measures shown in the table; the first one carries an error)
ATTACKS = [
    ("logout-flood", logout_flood, [f"bob's p50 ms: idle / 2 / 6 attackers at {RATE}/s each", "bob's p50 ms: 6 attackers unbounded",
                                    "ended sign-ins recorded first",
                                    "alice's ended cookie: GET /api/me before / after a restart"]),
    ("revocation-flood", revocation_flood, ["rows added by 300 replayed sign-outs (seconds)", "rows added by 300 valid sign-outs (seconds)",
                                            "alice's ended cookie: GET /api/me here / on a 2nd node",
                                            "at ~1 M rows: DELETE of each revocation", "at ~1 M rows: s per replayed / valid sign-out"]),
    ("planted-session", planted_session, ["alice's stream after bob's sign-out", "bob's POST /logout"]),
    ("password-timing", password_timing, ["median µs, alice minus unknown user"]),
]
