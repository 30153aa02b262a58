#!/usr/bin/env python3
"""Live queries: how a node learns, in commit order, which rows other clients committed, by statement
triggers and NOTIFY or by logical decoding, against no mechanism at all; a PostgreSQL 15 of its own on
127.0.0.1, bounded in time (about 4 minutes with the defaults, 1.5 with --quick).

It starts its own PostgreSQL (initdb into a temporary folder, trust authentication, 127.0.0.1 and a free
port, wal_level=logical; as root it runs as `postgres`), fills `tickets` with --rows rows of --customers
customers, and measures, one after another on that server:

  baseline  no mechanism: what the writers and the database cost alone
  A         statement-level triggers that NOTIFY `livelist_rows` (live_query_trigger.sql beside this
            script, installed as it is); each node LISTENs
  B1        logical decoding (test_decoding), one slot per node polled every --poll-ms (50) with
            pg_logical_slot_get_changes
  B2        logical decoding, one slot per node streamed by pg_recvlogical --start -f -

Cases, one Markdown table each, every mechanism beside the baseline of the same run:
  steady    --writers (4) connections commit single-row UPDATEs (a random ticket's title, priority and
            status) at --rate (100) a second in all for --duration (20) s, while --consumers (1) nodes
            consume. Each title is unique (writer and sequence number), so every commit is matched to its
            receipt by each node: lost, out of order, latency from the writer's COMMIT returning to the
            node's receipt (negative when the node heard of it first), the writers' UPDATE+COMMIT time,
            and the database's CPU time (utime+stime of the postmaster and its children, those that ended
            included) during the load and one second after it. For A the routing columns are customer and
            title here (the title is what matches a commit to its notification).
            Out of order counts a change received after one that it certainly committed before: one whose
            COMMIT was sent after the earlier one's COMMIT had returned (that covers each writer's own
            sequence, and every pair of commits that did not overlap).
  flat out  the same writers without a rate, for --flat-out (5) s: commits a second, and whether the
            nodes keep up (NOTIFY serializes committing transactions that notify on one lock).
  bursts    one transaction updating --burst-rows (1,000) rows of as many customers, then of 10 customers,
            --bursts (3) times each, with A routing on customer alone: the payload (does it fall back to
            {"t":"tickets"}, "anything may have changed"?) and the time until the node has it all.
  retention a slot that no node consumes, under the steady load for --retention (20) s: the WAL it keeps
            (pg_replication_slots, pg_wal_lsn_diff), and what catching up then costs; and the WAL of one
            updated row with REPLICA IDENTITY DEFAULT and FULL (decoding shows a row's old routing values
            only with FULL).
  privileges A's triggers under a role with only INSERT, UPDATE and DELETE on a table (TRUNCATE for
            TRUNCATE), and B under a role with REPLICATION and no superuser.
and, at the end, what each mechanism needs from a managed PostgreSQL.

Writers and nodes are processes of their own (times are CLOCK_MONOTONIC, shared by all of them); every
wait is bounded, and the PostgreSQL is stopped and its folder removed whatever happens. Needs Debian's
`postgresql` (15: /usr/lib/postgresql/15/bin, pg_recvlogical included) and psycopg 3 (`pip install
"psycopg[binary]"`).

Usage: Benchmarks/run live-query-mechanisms [--quick] [--rows 100000] [--customers 1000] [--writers 4]
           [--rate 100] [--duration 20] [--flat-out 5] [--bursts 3] [--burst-rows 1000] [--retention 20]
           [--consumers 1] [--poll-ms 50]
"""
import argparse
import json
import multiprocessing
import os
import random
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import livelist_tools as tools
except ImportError:  # not installed (Scripts/setup installs it): this checkout's copy
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tools", "python"))
    import livelist_tools as tools

try:
    import psycopg
except ImportError:
    psycopg = None

HERE = os.path.dirname(os.path.abspath(__file__))
TRIGGER_SQL = os.path.join(HERE, "live_query_trigger.sql")
PG_BIN = os.environ.get("LIVELIST_PG_BIN", "/usr/lib/postgresql/15/bin")
CHANNEL = "livelist_rows"
WRITER_ROLE = "livelist_writer"        # SELECT and UPDATE on tickets (the WHERE needs SELECT)
NODE_ROLE = "livelist_node"            # LOGIN REPLICATION, no superuser: LISTEN (A), slots (B)
RESTRICTED_ROLE = "livelist_restricted"  # INSERT, UPDATE, DELETE, TRUNCATE on one table, nothing else
PRIORITIES = ("low", "normal", "high", "urgent")
STATUSES = ("open", "pending", "solved", "closed")
UPDATE = "UPDATE tickets SET title = %s, priority = %s, status = %s WHERE id = %s"
# test_decoding's line for a change of tickets, and the title in it (a quote is doubled inside).
DECODED = re.compile(r"^table public\.tickets: (INSERT|UPDATE|DELETE): ")
TITLE = re.compile(r"title\[text\]:'((?:[^']|'')*)'")
DECODING_OPTIONS = {"include-xids": "0", "include-timestamp": "1", "skip-empty-xacts": "1"}
MECHANISMS = ("baseline", "A", "B1", "B2")
LABELS = {"baseline": "baseline (none)", "A": "A triggers + NOTIFY", "B1": "B1 decoding, polled",
          "B2": "B2 decoding, pg_recvlogical", "again": "baseline again (drift)"}
# The loads run the baseline first and again last: the second tells how far the machine drifted.
LOAD_ORDER = (("baseline", "baseline"), ("A", "A"), ("B1", "B1"), ("B2", "B2"), ("again", "baseline"))


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def wait_until(moment):
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)


# --- The database --------------------------------------------------------------------------------------

class Postgres:
    """A PostgreSQL of this script's own in a temporary folder (see the module's docstring); stop()
    stops it and removes the folder, and may be called more than once."""

    def __init__(self):
        for tool in ("initdb", "pg_ctl", "postgres", "pg_recvlogical"):
            if not os.access(os.path.join(PG_BIN, tool), os.X_OK):
                sys.exit(f"live-query-mechanisms: no {PG_BIN}/{tool}: apt-get install -y postgresql (PostgreSQL 15)")
        self.as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.folder = tempfile.mkdtemp(prefix="livelist-live-query.")
        self.data = os.path.join(self.folder, "data")
        self.port = tools.free_port()
        self.started = False
        self.pid = None
        try:
            os.chmod(self.folder, 0o755)
            if self.as_owner:
                shutil.chown(self.folder, "postgres")
            self.run("initdb", "-A", "trust", "-U", "postgres", "-D", self.data)
            options = (f"-c listen_addresses={tools.HOST} -c port={self.port} -c unix_socket_directories={self.folder} "
                       "-c wal_level=logical -c max_replication_slots=4 -c max_wal_senders=4 -c max_connections=50")
            self.started = True
            self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.folder, "log"), "-w", "-t", "60", "-o", options, "start")
            with open(os.path.join(self.data, "postmaster.pid")) as pid_file:
                self.pid = int(pid_file.readline())
        except BaseException:
            self.stop()
            raise

    def run(self, tool, *arguments):
        subprocess.run(self.as_owner + [os.path.join(PG_BIN, tool), *arguments], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=120)

    def url(self, user="postgres"):
        return f"postgresql://{user}@{tools.HOST}:{self.port}/postgres?sslmode=disable"

    def dsn(self, user):
        """The keyword form, for pg_recvlogical's -d."""
        return f"host={tools.HOST} port={self.port} user={user} dbname=postgres sslmode=disable"

    def cpu_seconds(self):
        """utime+stime of the postmaster and every process it runs, plus those of its children that have
        ended (the postmaster's cutime+cstime), in seconds."""
        ticks = 0
        for pid in tools.process_tree(self.pid):
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile: counted in the postmaster's cutime
                continue
            ticks += int(fields[11]) + int(fields[12])
            if pid == self.pid:
                ticks += int(fields[13]) + int(fields[14])
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.started:
            self.started = False
            try:
                self.run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "-t", "30", "stop")
            except (subprocess.SubprocessError, OSError) as error:
                log(f"live-query-mechanisms: pg_ctl stop failed ({error}); killing the postmaster")
                if self.pid:
                    try:
                        os.kill(self.pid, signal.SIGKILL)
                    except OSError:
                        pass
        shutil.rmtree(self.folder, ignore_errors=True)


def admin(database):
    return psycopg.connect(database.url(), autocommit=True)


def prepare(database, options):
    """Roles, the trigger functions, and tickets with its rows."""
    with admin(database) as conn:
        conn.execute(f"CREATE ROLE {WRITER_ROLE} LOGIN")
        conn.execute(f"CREATE ROLE {NODE_ROLE} LOGIN REPLICATION")
        conn.execute(f"CREATE ROLE {RESTRICTED_ROLE} LOGIN")
        with open(TRIGGER_SQL) as sql:
            conn.execute(sql.read())
        conn.execute("CREATE TABLE tickets (id bigint PRIMARY KEY, customer text NOT NULL, title text NOT NULL, "
                     "priority text NOT NULL, status text NOT NULL)")
        conn.execute("INSERT INTO tickets SELECT g, 'customer-' || lpad((g %% %s)::text, 4, '0'), 'ticket ' || g, "
                     "(ARRAY['low', 'normal', 'high', 'urgent'])[1 + g %% 4], (ARRAY['open', 'pending', 'solved', 'closed'])[1 + g %% 4] "
                     "FROM generate_series(0, %s - 1) AS g", (options.customers, options.rows))
        conn.execute(f"GRANT SELECT, UPDATE ON tickets TO {WRITER_ROLE}")
        # Every row updated once and vacuumed: each page has room, so that single-row updates are in the
        # same steady state (HOT or not) from the first case to the last.
        conn.execute("UPDATE tickets SET status = status")
        conn.execute("VACUUM ANALYZE tickets")
        conn.execute("CHECKPOINT")


# --- Writers and nodes (processes of their own) -------------------------------------------------------

def writer_main(url, tag, index, writers, rate, start_at, stop_at, rows, results):
    """Commits single-row UPDATEs from start_at to stop_at, this writer's share of `rate` a second (as fast
    as it can when rate is 0), each with the title TAG + wINDEX-SEQ; puts ("writer", index, [(seq,
    started, commit sent, commit returned)], errors) on `results`."""
    rng = random.Random(index)
    records, errors, seq = [], 0, 0
    try:
        with psycopg.connect(url) as conn:
            cur = conn.cursor()
            cur.execute("SELECT 1")
            conn.commit()
            wait_until(start_at)
            while True:
                if rate:
                    wait_until(start_at + (index + seq * writers) / rate)
                if time.monotonic() >= stop_at:
                    break
                started = time.monotonic()
                try:
                    cur.execute(UPDATE, (f"{tag}w{index}-{seq}", rng.choice(PRIORITIES), rng.choice(STATUSES), rng.randrange(rows)),
                                prepare=True)
                    sent = time.monotonic()
                    conn.commit()
                    records.append((seq, started, sent, time.monotonic()))
                except psycopg.Error as error:
                    errors += 1
                    if errors <= 3:
                        log(f"  writer {index}: {error}")
                    conn.rollback()
                seq += 1
    except psycopg.Error as error:
        log(f"  writer {index} failed: {error}")
        errors += 1
    results.put(("writer", index, records, errors))


def consumer_main(kind, url, dsn, slot, poll, index, ready, stop, received, deadline, results):
    """One node: A listens, B1 polls its slot every `poll` s, B2 streams it with pg_recvlogical. Records
    (title, receipt time) for each title of tickets it hears of, until `stop` is set (or `deadline`); puts
    ("consumer", index, {receipts, others, messages, bytes, error}) on `results`, `others` being A's
    notifications without titles (the fallback, or routing on customer alone): (receipt time, bytes,
    payload). `received` counts both as they come (the parent waits for the last ones)."""
    receipts, others, messages, size, error = [], [], 0, 0, None

    def decoded(line, moment):
        nonlocal messages, size
        messages += 1
        size += len(line)
        if DECODED.match(line):
            found = TITLE.search(line)
            receipts.append((found.group(1).replace("''", "'") if found else "?", moment))
            received.value += 1

    try:
        if kind == "A":
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"LISTEN {CHANNEL}")
                ready.set()
                while not stop.is_set() and time.monotonic() < deadline:
                    for notify in conn.notifies(timeout=0.05):
                        moment = time.monotonic()
                        messages += 1
                        size += len(notify.payload.encode())
                        titles = json.loads(notify.payload).get("k", {}).get("title")
                        if titles is None:  # the fallback, or routing without the title
                            others.append((moment, len(notify.payload.encode()), notify.payload))
                            received.value += 1
                        # An UPDATE's payload has the old titles too: the score keeps each title's first.
                        for title in titles or ():
                            receipts.append((title, moment))
                            received.value += 1
        elif kind == "B1":
            arguments = ", ".join(f"'{name}', '{value}'" for name, value in DECODING_OPTIONS.items())
            with psycopg.connect(url, autocommit=True) as conn:
                query = f"SELECT data FROM pg_logical_slot_get_changes('{slot}', NULL, NULL, {arguments})"
                due = time.monotonic()
                while not stop.is_set() and time.monotonic() < deadline:
                    rows = conn.execute(query).fetchall()
                    moment = time.monotonic()
                    for (line,) in rows:
                        decoded(line, moment)
                    ready.set()
                    due += poll
                    wait_until(due)
        else:
            command = [os.path.join(PG_BIN, "pg_recvlogical"), "-d", dsn, "--slot", slot, "--start", "-f", "-", "-s", "1"]
            for name, value in DECODING_OPTIONS.items():
                command += ["-o", f"{name}={value}"]
            with tempfile.TemporaryFile() as errors:
                process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors)
                ready.set()
                pending = b""
                try:
                    while not stop.is_set() and time.monotonic() < deadline:
                        readable, _, _ = select.select([process.stdout], [], [], 0.05)
                        if not readable:
                            continue
                        chunk = os.read(process.stdout.fileno(), 1 << 20)
                        moment = time.monotonic()
                        if not chunk:
                            errors.seek(0)
                            error = "pg_recvlogical ended: " + errors.read().decode(errors="replace").strip()[-300:]
                            break
                        *lines, pending = (pending + chunk).split(b"\n")
                        for line in lines:
                            decoded(line.decode(), moment)
                finally:
                    process.send_signal(signal.SIGINT)  # its clean stop: a last feedback, then exit
                    try:
                        process.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
    except Exception as failure:  # reported with the results
        error = f"{type(failure).__name__}: {failure}"
        ready.set()
    results.put(("consumer", index, {"receipts": receipts, "others": others, "messages": messages, "bytes": size,
                                     "error": error}))


# --- One mechanism under one load ---------------------------------------------------------------------

class Mechanism:
    """Installs a mechanism, runs its nodes during a load, removes it."""

    def __init__(self, database, kind, options, routing=("customer", "title")):
        self.database, self.kind, self.options, self.routing = database, kind, options, routing
        self.slots = [f"livelist_node_{i}" for i in range(options.consumers)] if kind in ("B1", "B2") else []
        self.context = multiprocessing.get_context("spawn")
        self.results = self.context.Queue()
        self.nodes = []

    def __enter__(self):
        with admin(self.database) as conn:
            if self.kind == "A":
                conn.execute("SELECT livelist_watch('tickets', VARIADIC %s)", (list(self.routing),))
        with psycopg.connect(self.database.url(NODE_ROLE), autocommit=True) as conn:
            for slot in self.slots:  # as the node's role: REPLICATION is enough
                conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (slot,))
        if self.kind == "baseline":
            return self
        deadline = time.monotonic() + 600
        for index in range(self.options.consumers):
            ready, stop, received = self.context.Event(), self.context.Event(), self.context.Value("q", 0, lock=False)
            slot = self.slots[index] if self.slots else None
            process = self.context.Process(target=consumer_main, daemon=True, args=(
                self.kind, self.database.url(NODE_ROLE), self.database.dsn(NODE_ROLE), slot, self.options.poll_ms / 1000,
                index, ready, stop, received, deadline, self.results))
            process.start()
            self.nodes.append((process, ready, stop, received))
        for _, ready, _, _ in self.nodes:
            if not ready.wait(60):
                raise RuntimeError(f"{self.kind}: a node did not start")
        if self.kind == "B2":  # streaming once the walsender holds each slot
            with admin(self.database) as conn:
                limit = time.monotonic() + 30
                while conn.execute("SELECT count(*) FROM pg_replication_slots WHERE active AND slot_name = ANY(%s)",
                                   (self.slots,)).fetchone()[0] < len(self.slots):
                    if time.monotonic() > limit:
                        raise RuntimeError("B2: pg_recvlogical did not start streaming")
                    time.sleep(0.05)
        return self

    def received(self):
        return [received.value for _, _, _, received in self.nodes]

    def finish(self):
        """Stops the nodes; their results (consumer_main's), by node."""
        for _, _, stop, _ in self.nodes:
            stop.set()
        found = {}
        limit = time.monotonic() + 60
        while len(found) < len(self.nodes) and time.monotonic() < limit:
            try:
                message = self.results.get(timeout=1)
            except Exception:  # queue.Empty
                continue
            if message[0] == "consumer":
                found[message[1]] = message[2]
        for process, _, _, _ in self.nodes:
            process.join(15)
            if process.is_alive():
                process.kill()
        self.nodes = []
        missing = {"receipts": [], "others": [], "messages": 0, "bytes": 0, "error": "no result"}
        return [found.get(i, missing) for i in range(self.options.consumers)] if self.kind != "baseline" else []

    def __exit__(self, *failure):
        for process, _, stop, _ in self.nodes:
            stop.set()
            process.join(15)
            if process.is_alive():
                process.kill()
        with admin(self.database) as conn:
            if self.kind == "A":
                conn.execute("SELECT livelist_unwatch('tickets')")
            for slot in self.slots:
                limit = time.monotonic() + 30
                while True:  # a walsender may hold the slot for a moment after pg_recvlogical exits
                    try:
                        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                        break
                    except psycopg.errors.ObjectInUse:
                        if time.monotonic() > limit:
                            raise
                        time.sleep(0.1)
        return False


def run_writers(database, mechanism, options, rate, seconds, tag):
    """The writers for `seconds` at `rate` (0: flat out), their titles starting with `tag` (unique to the
    load: A's payloads name the old titles too, which must not match an earlier load's); returns (commits
    {title: (writer, seq, started, sent, returned)}, errors, elapsed, db cpu seconds over the load and one
    second after it)."""
    context = mechanism.context
    results = context.Queue()
    start_at = time.monotonic() + 3  # time to spawn and connect
    stop_at = start_at + seconds
    writers = [context.Process(target=writer_main, daemon=True, args=(
        database.url(WRITER_ROLE), tag, i, options.writers, rate, start_at, stop_at, options.rows, results))
        for i in range(options.writers)]
    for process in writers:
        process.start()
    wait_until(start_at)
    cpu = database.cpu_seconds()
    commits, errors, done = {}, 0, 0
    while done < len(writers):
        _, index, records, failed = results.get(timeout=max(5, stop_at - time.monotonic() + 60))
        errors += failed
        done += 1
        for seq, started, sent, returned in records:
            commits[f"{tag}w{index}-{seq}"] = (index, seq, started, sent, returned)
    for process in writers:
        process.join(15)
    wait_until(stop_at + 1)
    cpu = database.cpu_seconds() - cpu
    return commits, errors, seconds, cpu


def drain(mechanism, expected, seconds):
    """Waits until every node has `expected` receipts, or for `seconds` at most."""
    limit = time.monotonic() + seconds
    while time.monotonic() < limit and any(count < expected for count in mechanism.received()):
        time.sleep(0.05)


def score(commits, node_results):
    """Latencies and counts over every node's receipts."""
    latencies, received, lost, disorder, duplicates, messages, size, errors = [], 0, 0, 0, 0, 0, 0, []
    for node in node_results:
        messages += node["messages"]
        size += node["bytes"]
        if node["error"]:
            errors.append(node["error"])
        seen = set()
        ordered = []
        for title, moment in node["receipts"]:
            commit = commits.get(title)
            if commit is None:
                continue
            if title in seen:
                duplicates += 1
                continue
            seen.add(title)
            ordered.append(commit)
            latencies.append((moment - commit[4]) * 1000)
        received += len(seen)
        lost += len(commits) - len(seen)
        # In receipt order: a change is out of order when a change received after it had returned from
        # COMMIT before this one's COMMIT was sent (so it certainly committed first).
        later_returned = float("inf")
        for commit in reversed(ordered):
            if later_returned < commit[3]:
                disorder += 1
            later_returned = min(later_returned, commit[4])
    return {"latencies": latencies, "received": received, "lost": lost, "disorder": disorder, "duplicates": duplicates,
            "messages": messages, "bytes": size, "errors": errors}


def checkpoint(database):
    """The same start for every case: a checkpoint (the first change of each page after it writes the
    whole page to the WAL)."""
    with admin(database) as conn:
        conn.execute("CHECKPOINT")


def load_case(database, options, rate, seconds, name):
    """Each mechanism under the writers' load; {key of LOAD_ORDER: row}."""
    rows = {}
    for key, kind in LOAD_ORDER:
        checkpoint(database)
        log(f"  {key}: {options.writers} writers, {f'{rate:g}/s' if rate else 'flat out'} for {seconds:g} s")
        with Mechanism(database, kind, options) as mechanism:
            commits, errors, elapsed, cpu = run_writers(database, mechanism, options, rate, seconds, f"{name}-{key}-")
            drain(mechanism, len(commits), options.drain)
            row = score(commits, mechanism.finish())
        writes = [(c[4] - c[2]) * 1000 for c in commits.values()]
        row.update(committed=len(commits), errors=errors, rate=len(commits) / elapsed, cpu=cpu,
                   write_p50=tools.percentile(writes, 0.5), write_p99=tools.percentile(writes, 0.99))
        if row["errors"]:
            log(f"  {key}: node errors: {row['errors']}")
        rows[key] = row
    return rows


def print_load(title, rows, options):
    base = rows["baseline"]
    nodes = options.consumers
    print(f"\n## {title}\n")
    print("| mechanism | committed | commits/s | received | lost | out of order | latency p50 / p99 / max ms | "
          "writer UPDATE+COMMIT p50 / p99 ms | × baseline p50 / p99 | DB CPU s | × baseline | messages (bytes) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind, mechanism in LOAD_ORDER:
        row = rows[kind]
        writer = f"{row['write_p50']:.2f} / {row['write_p99']:.2f}"
        ratio = f"{row['write_p50'] / base['write_p50']:.2f} / {row['write_p99'] / base['write_p99']:.2f}"
        cpu = f"{row['cpu'] / base['cpu']:.2f}" if base["cpu"] else "–"
        if mechanism == "baseline":
            print(f"| {LABELS[kind]} | {row['committed']:,} | {row['rate']:.0f} | – | – | – | – | {writer} | {ratio} | "
                  f"{row['cpu']:.2f} | {cpu} | – |")
            continue
        latencies = row["latencies"]
        latency = (f"{tools.percentile(latencies, 0.5):.1f} / {tools.percentile(latencies, 0.99):.1f} / {max(latencies):.1f}"
                   if latencies else "–")
        # A's payloads name old titles too; a change that B delivered twice would show here.
        extra = f" ({row['duplicates']} twice)" if row["duplicates"] and kind != "A" else ""
        print(f"| {LABELS[kind]} | {row['committed']:,} | {row['rate']:.0f} | {row['received']:,}{extra} | {row['lost']:,} | "
              f"{row['disorder']:,} | {latency} | {writer} | {ratio} | {row['cpu']:.2f} | {cpu} | "
              f"{row['messages']:,} ({row['bytes'] / 1024:,.0f} KiB) |")
    if nodes > 1:
        print(f"\nreceived, lost and out of order are summed over the {nodes} nodes (each should receive every change).")
    failed = {kind: rows[kind]["errors"] for kind in MECHANISMS if rows[kind]["errors"]}  # the baselines have no nodes
    for kind, errors in failed.items():
        print(f"\n{kind}: a node failed: {errors[0][:300]}")


# --- Bursts -------------------------------------------------------------------------------------------

def burst_ids(options, customers):
    """--burst-rows ticket ids of `customers` different customers (a ticket's customer is its id modulo
    --customers)."""
    per = options.burst_rows // customers
    return [c + options.customers * j for j in range(per) for c in range(customers)][:options.burst_rows]


def burst_case(database, options):
    """Per mechanism and burst shape: one transaction updating --burst-rows rows, --bursts times, with A
    routing on customer alone; {(kind, shape): measures}."""
    shapes = [("distinct", options.burst_rows), ("ten", 10)]
    rows = {}
    for kind in MECHANISMS:
        checkpoint(database)
        log(f"  {kind}: bursts of {options.burst_rows:,} rows")
        with Mechanism(database, kind, options, routing=("customer",)) as mechanism:
            marks, expected = [], 0
            with psycopg.connect(database.url(WRITER_ROLE)) as conn:
                for shape, customers in shapes:
                    ids = burst_ids(options, customers)
                    for rep in range(options.bursts):
                        time.sleep(0.3)
                        started = time.monotonic()
                        conn.execute("UPDATE tickets SET title = %s || id WHERE id = ANY(%s)", (f"b{shape}{rep}-", ids))
                        conn.commit()
                        marks.append((shape, customers, rep, started, time.monotonic()))
                        # Each burst alone: the node has it all before the next one starts.
                        expected += 1 if kind == "A" else len(ids)
                        if kind != "baseline":
                            drain(mechanism, expected, 10)
            node = (mechanism.finish() or [None])[0]  # the first node's
        for number, (shape, customers, rep, started, returned) in enumerate(marks):
            entry = rows.setdefault((kind, shape), {"customers": customers, "writes": [], "first": [], "last": [],
                                                    "received": []})
            entry["writes"].append((returned - started) * 1000)
            if node is None:
                continue
            until = marks[number + 1][3] if number + 1 < len(marks) else float("inf")
            if kind == "A":
                got = [(moment, describe(size, payload)) for moment, size, payload in node["others"] if started <= moment < until]
            else:
                prefix = f"b{shape}{rep}-"
                got = [(moment, "") for title, moment in node["receipts"] if title.startswith(prefix)]
            if got:
                entry["first"].append((got[0][0] - returned) * 1000)
                entry["last"].append((got[-1][0] - returned) * 1000)
            entry["received"].append(f"{len(got)} notification(s) of {got[0][1]}" if kind == "A" and got
                                     else f"{len(got):,} decoded rows")
    return rows


def describe(size, payload):
    """One of A's notifications, in short."""
    keys = json.loads(payload).get("k")
    return f"{size:,} bytes, {len(keys['customer']):,} customers" if keys else f"{size:,} bytes: `{payload}`, the fallback"


def print_bursts(rows, options):
    print(f"\n## Bursts: one transaction updating {options.burst_rows:,} rows, {options.bursts} time(s) each shape "
          "(A routes on customer alone; times from the writer's COMMIT returning, medians)\n")
    print("| mechanism | customers in the burst | UPDATE+COMMIT ms | × baseline | first receipt ms | all received ms | "
          "what the node received (first burst) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for shape in ("distinct", "ten"):
        base = statistics.median(rows[("baseline", shape)]["writes"])
        for kind in MECHANISMS:
            entry = rows[(kind, shape)]
            write = statistics.median(entry["writes"])
            first = f"{statistics.median(entry['first']):.1f}" if entry["first"] else "–"
            last = f"{statistics.median(entry['last']):.1f}" if entry["last"] else "–"
            what = entry["received"][0] if kind != "baseline" and entry["received"] else "–"
            print(f"| {LABELS[kind]} | {entry['customers']:,} | {write:.1f} | {write / base:.2f} | {first} | {last} | {what} |")


# --- WAL retention ------------------------------------------------------------------------------------

def retention_case(database, options):
    """Under the steady load, with A's triggers installed: a slot that no node consumes, and a node that
    listens but sits in an open transaction (a session in a transaction reads no notification, so the
    queue cannot drop what it has not read); then the WAL of one row by replica identity."""
    checkpoint(database)
    out = {}
    slot = "livelist_abandoned"
    log(f"  retention: an unread slot and a stalled listener, {options.rate:g}/s for {options.retention:g} s")
    with admin(database) as conn, psycopg.connect(database.url(NODE_ROLE)) as stalled:
        conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (slot,))
        conn.execute("SELECT livelist_watch('tickets', 'customer', 'title')")
        stalled.execute(f"LISTEN {CHANNEL}")
        stalled.commit()
        stalled.execute("SELECT 1")  # and it stays in that transaction
        start_lsn = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        try:
            with Mechanism(database, "baseline", options) as mechanism:
                commits, errors, elapsed, _ = run_writers(database, mechanism, options, options.rate, options.retention, "retention-")
            out["queue"] = conn.execute("SELECT pg_notification_queue_usage()").fetchone()[0]
            stalled.rollback()
            conn.execute("SELECT livelist_unwatch('tickets')")
            conn.execute("CHECKPOINT")  # a checkpoint would remove older WAL: the slot keeps it
            row = conn.execute(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), pg_wal_lsn_diff(pg_current_wal_lsn(), %s), "
                "wal_status FROM pg_replication_slots WHERE slot_name = %s", (start_lsn, slot)).fetchone()
            out.update(commits=len(commits), seconds=elapsed, retained=int(row[0]), written=int(row[1]), status=row[2])
            started = time.monotonic()
            changes = conn.execute("SELECT count(*) FROM pg_logical_slot_get_changes(%s, NULL, NULL, 'skip-empty-xacts', '1')",
                                   (slot,)).fetchone()[0]
            out.update(catch_up=time.monotonic() - started, catch_up_rows=changes)
        finally:
            conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        # The WAL of one updated row: a first pass writes the pages whole (after the checkpoint), the
        # second is measured, then the same with REPLICA IDENTITY FULL (the old row in the WAL too).
        sizes = {}
        for identity in ("DEFAULT", "FULL"):
            conn.execute(f"ALTER TABLE tickets REPLICA IDENTITY {identity}")
            for step in ("warm", "measured"):
                before = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
                with conn.transaction():
                    conn.execute("UPDATE tickets SET title = %s || id WHERE id < 1000", (f"wal-{identity}-{step}-",))
                sizes[identity] = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (before,)).fetchone()[0] / 1000
        conn.execute("ALTER TABLE tickets REPLICA IDENTITY DEFAULT")
    out["per_row"] = sizes
    return out


def print_retention(out, options):
    hour = out["retained"] / out["seconds"] * 3600
    queue = out["queue"]
    full = f"{out['seconds'] / queue / 3600:,.0f} h" if queue else "–"
    print(f"\n## Retention: {out['commits']:,} single-row UPDATEs at {options.rate:g}/s for {out['seconds']:g} s with a logical "
          "slot that no node consumes (B), and A's triggers with a listener stuck in an open transaction\n")
    print("| WAL written | B: retained by the slot after a CHECKPOINT | wal_status | at this rate an hour | "
          "catching up: pg_logical_slot_get_changes | WAL per updated row, identity DEFAULT / FULL | "
          "A: NOTIFY queue used | A: queue full (8 GB) at this rate in |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    print(f"| {out['written'] / 2**20:.1f} MiB | {out['retained'] / 2**20:.1f} MiB | {out['status']} | {hour / 2**30:.2f} GiB | "
          f"{out['catch_up'] * 1000:,.0f} ms for {out['catch_up_rows']:,} rows | "
          f"{out['per_row']['DEFAULT']:.0f} / {out['per_row']['FULL']:.0f} bytes | {queue:.2e} | {full} |")
    print("\nmax_slot_wal_keep_size is -1 (unlimited) by default: the slot keeps its WAL until the disk is full. "
          "The NOTIFY queue keeps what its slowest listener has not read; once full, a commit that notifies fails.")


# --- Privileges ---------------------------------------------------------------------------------------

def privilege_check(database):
    """A's triggers under a role with only INSERT, UPDATE, DELETE (and TRUNCATE) on a table, and a slot
    created and read by a REPLICATION role that is no superuser; lines of the report."""
    lines = []
    with admin(database) as conn:
        conn.execute("CREATE TABLE privilege_check (id int PRIMARY KEY, customer text NOT NULL, note text)")
        conn.execute("SELECT livelist_watch('privilege_check', 'customer')")
        conn.execute(f"GRANT INSERT, UPDATE, DELETE, TRUNCATE ON privilege_check TO {RESTRICTED_ROLE}")
    try:
        with psycopg.connect(database.url(NODE_ROLE), autocommit=True) as listener, \
                psycopg.connect(database.url(RESTRICTED_ROLE), autocommit=True) as writer:
            listener.execute(f"LISTEN {CHANNEL}")
            statements = ["INSERT INTO privilege_check VALUES (1, 'alice', 'a'), (2, 'bob', 'b')",
                          "UPDATE privilege_check SET note = 'changed'",
                          "DELETE FROM privilege_check",
                          "TRUNCATE privilege_check"]
            for statement in statements:
                try:
                    writer.execute(statement)
                    payloads = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
                    lines.append(f"`{statement.split()[0]}`: {'`' + payloads[0] + '`' if payloads else 'no notification'}")
                except psycopg.Error as error:
                    lines.append(f"`{statement.split()[0]}` failed: {str(error).strip()}")
        with psycopg.connect(database.url(NODE_ROLE), autocommit=True) as node:
            try:
                node.execute("SELECT pg_create_logical_replication_slot('privilege_check', 'test_decoding', true)")
                count = node.execute("SELECT count(*) FROM pg_logical_slot_get_changes('privilege_check', NULL, NULL)").fetchone()[0]
                lines.append(f"B: `{NODE_ROLE}` (LOGIN REPLICATION, no superuser) created a temporary slot and read it ({count} rows)")
            except psycopg.Error as error:
                lines.append(f"B: `{NODE_ROLE}` could not use a slot: {str(error).strip()}")
    finally:
        with admin(database) as conn:
            conn.execute("DROP TABLE privilege_check")
    return lines


SUMMARY = """
## What each mechanism needs from a managed PostgreSQL

- A (triggers + NOTIFY): nothing beyond what the application's migrations already have: plpgsql (always
  there), CREATE FUNCTION in a schema, and ownership of each watched table to create its triggers. The
  writers need no privilege more (see above); no server parameter, no restart, no extension. Each node
  needs one session-level connection that stays open for LISTEN: a direct one, or through a pooler in
  session mode (a transaction-mode pooler does not deliver notifications). Nothing is kept for a node that
  is not listening, so a node that reconnects re-runs all its queries; and NOTIFY's queue (8 GB) fills if
  a listening session stops reading while it is connected, after which commits that NOTIFY fail.
- B (logical decoding): wal_level=logical, a parameter that needs a restart and, on most managed services,
  a provider-specific flag; max_replication_slots and max_wal_senders for one slot per node (a slot has one
  reader); a role with REPLICATION (or the service's equivalent role); B2 a replication connection
  (pg_recvlogical), which poolers do not carry. Every slot decodes the whole database's WAL (every table,
  every application in it), and a slot that no node reads keeps WAL without bound unless
  max_slot_wal_keep_size is set: an abandoned slot of a node that died fills the disk. Slots do not follow
  a failover to a standby in PostgreSQL 15 (failover slots came in 17), so after one every node starts
  over all the same. test_decoding shows a row's old routing values only under REPLICA IDENTITY FULL,
  which makes every update write the old row to the WAL too.
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="at most 5 s loads, 2 s flat out, 5 s retention, 1 burst of each shape")
    parser.add_argument("--rows", type=int, default=100_000, help="tickets (default 100,000)")
    parser.add_argument("--customers", type=int, default=1_000, help="customers the tickets belong to (default 1,000)")
    parser.add_argument("--writers", type=int, default=4, help="writer connections (default 4)")
    parser.add_argument("--rate", type=float, default=100, help="commits a second, all writers together (default 100)")
    parser.add_argument("--duration", type=float, default=20, help="seconds of the steady load (default 20)")
    parser.add_argument("--flat-out", type=float, default=5, help="seconds of writing without a rate, 0: none (default 5)")
    parser.add_argument("--bursts", type=int, default=3, help="bursts of each shape, 0: none (default 3)")
    parser.add_argument("--burst-rows", type=int, default=1_000, help="rows a burst updates (default 1,000)")
    parser.add_argument("--retention", type=float, default=20, help="seconds of load with an unread slot, 0: none (default 20)")
    parser.add_argument("--consumers", type=int, default=1, help="nodes consuming each mechanism, at most 3 (default 1)")
    parser.add_argument("--poll-ms", type=float, default=50, help="B1's polling period (default 50)")
    parser.add_argument("--drain", type=float, default=5, help="seconds the nodes have to catch up after a load (default 5)")
    options = parser.parse_args()
    if options.quick:
        options.duration, options.retention = min(options.duration, 5), min(options.retention, 5)
        options.bursts, options.flat_out = min(options.bursts, 1), min(options.flat_out, 2)
    if not (1 <= options.writers <= 16 and 0 < options.rate <= 5_000 and 0 < options.duration <= 120 and 0 <= options.flat_out <= 30
            and 0 <= options.bursts <= 10 and 0 <= options.retention <= 120 and 1 <= options.consumers <= 3
            and 1_000 <= options.rows <= 10_000_000 and 10 <= options.customers <= 10_000 and 10 <= options.poll_ms <= 10_000
            and 10 <= options.burst_rows <= min(options.rows, 100_000) and 0 < options.drain <= 30):
        sys.exit("live-query-mechanisms: at most 16 writers, 5,000 commits/s, 120 s loads, 30 s flat out, 3 consumers")
    if options.burst_rows > options.customers * (options.rows // options.customers):
        sys.exit("live-query-mechanisms: --burst-rows needs as many tickets")
    if psycopg is None:
        sys.exit('live-query-mechanisms: needs psycopg 3: python3 -m pip install "psycopg[binary]"')

    # SIGTERM and SIGHUP end the script as Ctrl-C does: through the finally that stops the database.
    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)

    began = time.monotonic()
    database = Postgres()
    try:
        version = subprocess.run([os.path.join(PG_BIN, "postgres"), "--version"], capture_output=True, text=True).stdout.split()[2]
        log(f"== PostgreSQL {version} on {tools.HOST}:{database.port} (in {database.folder}); {options.rows:,} tickets")
        prepare(database, options)
        privileges = privilege_check(database)
        log("== steady load")
        steady = load_case(database, options, options.rate, options.duration, "steady")
        flat = None
        if options.flat_out:
            log("== flat out")
            flat = load_case(database, options, 0, options.flat_out, "flat")
        bursts = None
        if options.bursts:
            log("== bursts")
            bursts = burst_case(database, options)
        retention = None
        if options.retention:
            log("== retention")
            retention = retention_case(database, options)
    finally:
        for child in multiprocessing.active_children():
            child.kill()
        database.stop()

    print(f"# Live-query mechanisms: PostgreSQL {version}, {options.rows:,} tickets of {options.customers:,} customers, "
          f"{options.writers} writers, {options.consumers} node(s); wal_level=logical throughout, fsync on\n")
    print("Latency is from the writer's COMMIT returning to the node's receipt (negative: the node heard first). "
          f"A routes on customer and title here; B1 polls every {options.poll_ms:g} ms. DB CPU: every PostgreSQL "
          "process, during the load and 1 s after it.")
    print_load(f"Steady: single-row UPDATEs at {options.rate:g}/s for {options.duration:g} s", steady, options)
    if flat:
        print_load(f"Flat out: single-row UPDATEs as fast as {options.writers} writers go, for {options.flat_out:g} s", flat, options)
    if bursts:
        print_bursts(bursts, options)
    if retention:
        print_retention(retention, options)
    print("\n## Privileges\n")
    print(f"A, under `{RESTRICTED_ROLE}` with only INSERT, UPDATE, DELETE and TRUNCATE on a watched table "
          "(no SELECT), a node listening:\n")
    for line in privileges:
        print(f"- {line}")
    print(SUMMARY.rstrip())
    log(f"== done in {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM or SIGHUP: the database is stopped by then
        log(f"live-query-mechanisms: interrupted ({stop or 'Ctrl-C'})")
        sys.exit(130)
