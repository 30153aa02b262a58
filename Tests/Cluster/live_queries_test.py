"""Live queries end to end: Examples/Desk on two nodes of one PostgreSQL keeps its tickets in a table of its
own, and rows that psql writes reach the pages and streams they concern, on both nodes (run by
Tests/Cluster/test_cluster.sh, which starts the database with Scripts/with-postgres.sh and builds the desk).

Each test makes a database of its own and starts two desk binaries on free loopback ports, as the example's
docs say (LIVELIST_HOST, LIVELIST_PORT, LIVELIST_DATA, LIVELIST_DATABASE_URL, DESK_USERS). Everything
started is stopped; the run is bounded.
"""

import collections
import concurrent.futures
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import livelist_tools as tools  # Tools/python, installed by Scripts/setup

from cluster_test import ROOT, PSQL, BoardNode, TestFailure, check, make_database, wait_until

DESK = os.environ.get("LIVELIST_DESK_BINARY", os.path.join(ROOT, "Examples", "Desk", ".build", "debug", "desk"))
USERS = "alice:secret1:customer,bob:secret2:customer,carol:secret3:agent"
TIME_LIMIT = 240


class DeskNode(BoardNode):
    """One Examples/Desk process sharing `database` (BoardNode's sign-in and calls serve it as they are)."""

    def __init__(self, database):
        # As BoardNode starts the board (whose __init__ is not called: it would start a board).
        self.data = tempfile.mkdtemp(prefix="livelist-desk-")
        self.port = tools.free_port()
        env = dict(os.environ, LIVELIST_HOST=tools.HOST, LIVELIST_PORT=str(self.port), LIVELIST_DATA=self.data,
                   LIVELIST_DATABASE_URL=database, DESK_USERS=USERS)
        self.lines = collections.deque(maxlen=200)
        self.process = subprocess.Popen([DESK], cwd=self.data, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        threading.Thread(target=lambda: [self.lines.append(line.decode(errors="replace"))
                                         for line in iter(self.process.stdout.readline, b"")], daemon=True).start()
        tools.wait_ready(self.port, "/healthz", self.process, seconds=60, interval=0.05, error=TestFailure)

    def json(self, path, cookies):
        status, _, text = self.call("GET", path, cookies, headers={"Accept": "application/json"})
        return status, text

    def metric(self, name):
        _, _, text = self.call("GET", "/metrics")
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return None


def psql(database, sql):
    done = subprocess.run([PSQL, database, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True, timeout=60)
    check(done.returncode == 0, f"psql {sql!r}: {done.stderr}")
    return done.stdout


def wait_for(stream, wanted, seconds=10, unwanted=()):
    """The data of the first event of `stream` that holds every text of `wanted`; none may hold `unwanted`."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        check(left > 0, f"no event with {wanted} within {seconds} s")
        _, _, data = stream.next_event(max(0.01, left))
        for text in unwanted:
            check(text not in (data or ""), f"an event carried {text!r}: {data}")
        if data and all(text in data for text in wanted):
            return data


class Desk:
    """Two desk nodes on a database of their own, alice's stream of her tickets on B, carol's of the queue on A."""

    def __init__(self):
        self.database = make_database()
        self.nodes = []
        for _ in range(2):
            self.nodes.append(DeskNode(self.database))
        self.a, self.b = self.nodes
        self.alice = self.b.sign_in("alice", "secret1")
        self.alice = self.alice[0] + [self.alice[1]]
        self.carol = self.a.sign_in("carol", "secret3")
        self.carol = self.carol[0] + [self.carol[1]]
        self.mine = self.b.stream("/lists/tickets/events", self.alice)
        self.queue = self.a.stream("/lists/queue/events", self.carol)

    def close(self):
        for stream in (self.mine, self.queue):
            stream.close()
        for node in self.nodes:
            node.close()


def test_rows_written_by_psql_reach_the_pages_they_concern_on_every_node(desk):
    psql(desk.database, "INSERT INTO tickets VALUES (1001, 'alice', 'Written by psql', 'urgent', 'open')")
    wait_for(desk.mine, ["Written by psql"])
    wait_for(desk.queue, ["Written by psql"])
    psql(desk.database, "UPDATE tickets SET title = 'Renamed by psql' WHERE id = 1001")
    wait_for(desk.mine, ["Renamed by psql"])
    wait_for(desk.queue, ["Renamed by psql"])
    # Bob's row: the queue shows it, alice's stream and page never do.
    psql(desk.database, "INSERT INTO tickets VALUES (1002, 'bob', 'Bobs own', 'low', 'open')")
    wait_for(desk.queue, ["Bobs own"])
    # One transaction, two of alice's rows: they arrive together.
    psql(desk.database, "BEGIN; INSERT INTO tickets VALUES (1003, 'alice', 'First of two', 'low', 'open'); "
                        "INSERT INTO tickets VALUES (1004, 'alice', 'Second of two', 'low', 'open'); COMMIT;")
    wait_for(desk.mine, ["First of two", "Second of two"], unwanted=["Bob"])
    for node in desk.nodes:
        status, page = node.json("/lists/tickets", desk.alice)
        check(status == 200 and "Second of two" in page and "Bob" not in page, f"alice's tickets on {node.port}: {status} {page[:300]}")
    psql(desk.database, "DELETE FROM tickets WHERE id = 1001")
    wait_until(lambda: "Renamed by psql" not in desk.b.json("/lists/tickets", desk.alice)[1], 10, "the deleted row stayed on alice's page")
    wait_until(lambda: "Renamed by psql" not in desk.a.json("/lists/queue", desk.carol)[1], 10, "the deleted row stayed in the queue")


def test_a_ticket_filed_on_one_node_reaches_the_other_and_psql_sees_it(desk):
    cookies, token = desk.a.csrf("/tickets/new", desk.alice)
    status, headers, _ = desk.a.call("POST", "/tickets/new", cookies, f"csrf={token}&title=Filed+on+A&priority=normal")
    check(status == 303 and "/tickets" in (headers.get("Location") or ""), f"filing on A: {status}")
    wait_for(desk.mine, ["Filed on A"])
    wait_for(desk.queue, ["Filed on A"])
    rows = psql(desk.database, "SELECT customer, priority, status FROM tickets WHERE title = 'Filed on A'")
    check(rows.strip() == "alice|normal|open", f"the row psql reads: {rows!r}")


def test_a_query_that_fails_takes_its_lists_out_of_service_not_the_node(desk):
    psql(desk.database, "ALTER TABLE tickets RENAME COLUMN title TO subject")
    psql(desk.database, "INSERT INTO tickets VALUES (1005, 'alice', 'After the rename', 'low', 'open')")
    wait_until(lambda: desk.b.json("/lists/tickets", desk.alice)[0] == 503, 10, "alice's tickets never went out of service")
    status, body = desk.b.json("/lists/tickets", desk.alice)
    check("list_unavailable" in body and "subject" not in body, f"the 503 says why without the database's words: {body}")
    check(desk.b.metric('livelist_live_query_out_of_service{list="tickets"}') == 1, "the metric says the list is out of service")
    status, _, _ = desk.b.call("GET", "/healthz")
    check(status == 200, f"the node stays healthy: {status}")
    psql(desk.database, "ALTER TABLE tickets RENAME COLUMN subject TO title")
    wait_until(lambda: desk.b.json("/lists/tickets", desk.alice)[0] == 200, 15, "alice's tickets never came back")
    wait_for(desk.mine, ["After the rename"], seconds=15)


TESTS = [
    test_rows_written_by_psql_reach_the_pages_they_concern_on_every_node,
    test_a_ticket_filed_on_one_node_reaches_the_other_and_psql_sees_it,
    test_a_query_that_fails_takes_its_lists_out_of_service_not_the_node,
]


def run(test):
    start = time.monotonic()
    desk = None
    try:
        desk = Desk()
        test(desk)
        return test.__name__, None, time.monotonic() - start
    except Exception as error:  # noqa: BLE001  (reported with the nodes' logs)
        logs = "\n".join(f"--- desk {node.port}:\n{node.log_text()}" for node in (desk.nodes if desk else []))
        return test.__name__, f"{type(error).__name__}: {error}\n{logs}", time.monotonic() - start
    finally:
        if desk:
            desk.close()


def main():
    selected = sys.argv[1:]
    signal.alarm(TIME_LIMIT)
    chosen = [t for t in TESTS if not selected or any(s in t.__name__ for s in selected)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(run, chosen))
    failures = 0
    for name, failure, seconds in results:
        print(f"{'ok  ' if failure is None else 'FAIL'} {name} ({seconds:.1f} s)")
        if failure:
            failures += 1
            print(failure)
    print(f"live query tests: {len(results) - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
