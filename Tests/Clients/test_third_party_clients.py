"""Third-party SSE clients against the real server, through a proxy that cuts the connection before the
first change (docs/PROTOCOL.md, "Stream framing"): httpx-sse and sseclient-py, on a list's own stream
and on the multiplexed one. Neither library reconnects by itself, so each test does what a client of
them writes: it keeps the id of the last event the library yielded and sends it back as Last-Event-ID.
Changes made while the client is away must all arrive, in order, and every event the library yields
must carry JSON (no empty event for a heartbeat or for the stream's opening).

Environment: LIVELIST_BINARY (default .build/debug/livelist). Run by Scripts/test; alone:
python3 -m pytest -q Tests/Clients (Scripts/setup installs httpx, httpx-sse, sseclient-py, urllib3 and pytest)."""
import json
import os
import queue
import threading
import time
from pathlib import Path

import pytest

import livelist_tools as tools  # Tools/python, installed by Scripts/setup

REPO = Path(__file__).resolve().parents[2]

BINARY = os.environ.get("LIVELIST_BINARY") or str(REPO / ".build" / "debug" / "livelist")


# --- The server, the proxy, writes ---------------------------------------------------------------------

@pytest.fixture
def server():
    if not os.path.exists(BINARY):
        pytest.fail(f"no livelist binary at {BINARY} (build it, or set LIVELIST_BINARY)")
    # Heartbeats every 0.2 s: several pass while a client reads.
    with tools.Server(BINARY, "--no-demo", "--heartbeat", "0.2", error=AssertionError) as running:
        yield running


@pytest.fixture
def proxy(server):
    cutting = tools.CuttingProxy(server.port)
    yield cutting
    cutting.close()


def put(server, name, cells):
    body = json.dumps({"sections": [{"id": "s", "cells": [{"id": c, "text": c} for c in cells]}]})
    status, _, answer = tools.request(server.port, "PUT", f"/lists/{name}", body.encode(), {"Content-Type": "application/json"})
    assert status in (200, 201), answer
    return json.loads(answer)["version"]


def add(server, name, cell, after=None):
    """A PATCH that inserts `cell` (after the cell `after`, else last): one version."""
    op = {"op": "upsert", "cell": {"id": cell, "text": cell}, "section": "s"}
    if after:
        op["position"] = {"after": after}
    status, _, answer = tools.request(server.port, "PATCH", f"/lists/{name}", json.dumps({"ops": [op]}).encode(),
                                      {"Content-Type": "application/json"})
    assert status == 200, answer
    return json.loads(answer)["version"]


def snapshot(server, name):
    status, _, body = tools.request(server.port, "GET", f"/lists/{name}", headers={"Accept": "application/json"})
    assert status == 200
    document = json.loads(body)
    return document["version"], [[s["key"], [[c["key"], c["html"]] for c in s["cells"]]] for s in document["sections"]]


# --- A client's model of a list: changesets applied in order (docs/PROTOCOL.md, "Changesets") ---------

class Model:
    def __init__(self, version, sections):
        self.version, self.sections = version, sections  # [[section key, [[cell key, html], …]], …]

    def _section(self, key):
        return next(s for s in self.sections if s[0] == key)

    def _take(self, cell):
        for section in self.sections:
            for index, (key, html) in enumerate(section[1]):
                if key == cell:
                    del section[1][index]
                    return html
        raise AssertionError(f"no cell {cell!r}")

    @staticmethod
    def _after(items, after):
        return 0 if after is None else next(i for i, item in enumerate(items) if item[0] == after) + 1

    def apply(self, changeset):
        """Applies a changeset whose `from` is this model's version (a reset from anywhere newer)."""
        ops = changeset["ops"]
        if len(ops) == 1 and ops[0]["op"] == "reset":
            assert changeset["version"] > self.version
            self.sections = [[s["key"], [[c["key"], c["html"]] for c in s["cells"]]] for s in ops[0]["sections"]]
            self.version = changeset["version"]
            return
        assert changeset["from"] == self.version, f"a gap: changeset {changeset['from']}→{changeset['version']} on version {self.version}"
        for op in ops:
            kind = op["op"]
            if kind == "deleteSection":
                self.sections.remove(self._section(op["section"]))
            elif kind == "insertSection":
                self.sections.insert(self._after(self.sections, op["after"]), [op["section"], []])
            elif kind == "moveSection":
                moved = self._section(op["section"])
                self.sections.remove(moved)
                self.sections.insert(self._after(self.sections, op["after"]), moved)
            elif kind == "delete":
                self._take(op["cell"])
            elif kind in ("insert", "move"):
                html = op["html"] if kind == "insert" else self._take(op["cell"])
                cells = self._section(op["section"])[1]
                cells.insert(self._after(cells, op["after"]), [op["cell"], html])
            elif kind == "reload":
                cell = next(c for s in self.sections for c in s[1] if c[0] == op["cell"])
                cell[1] = op["html"]
            else:
                raise AssertionError(f"an operation these tests do not make: {op!r}")
        self.version = changeset["version"]


# --- The clients ---------------------------------------------------------------------------------------

class Reader:
    """One connection of a client library, read on a thread: every event it yields, as (event name,
    id, data), in a queue; None once the connection ends."""

    def __init__(self, library, url, last_event_id):
        self.events, self.library = queue.Queue(), library
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        threading.Thread(target=getattr(self, "_" + library), args=(url, headers), daemon=True).start()

    def _httpx_sse(self, url, headers):
        import httpx
        from httpx_sse import connect_sse
        try:
            with httpx.Client(timeout=httpx.Timeout(10, read=None)) as client:
                with connect_sse(client, "GET", url, headers=headers) as source:
                    for sse in source.iter_sse():
                        # httpx-sse's id is the last id seen, as the WHATWG rules keep it.
                        self.events.put((sse.event, sse.id, sse.data))
        except Exception:  # the cut
            pass
        self.events.put(None)

    def _sseclient_py(self, url, headers):
        import sseclient
        import urllib3
        try:
            response = urllib3.PoolManager().request("GET", url, headers=headers, preload_content=False, timeout=urllib3.Timeout(connect=10, read=None))
            for event in sseclient.SSEClient(response).events():
                # sseclient-py's id is the event's own (None without an id field).
                self.events.put((event.event, event.id, event.data))
        except Exception:  # the cut
            pass
        self.events.put(None)

    def take(self, seconds):
        """The next event, or None when the connection ended; fails after `seconds`."""
        try:
            return self.events.get(timeout=seconds)
        except queue.Empty:
            raise AssertionError(f"{self.library}: nothing within {seconds} s") from None


class Client:
    """A client of one library: models of its lists, the last event id it saw, every event it got."""

    def __init__(self, library, url, models):
        self.library, self.url, self.models = library, url, models
        self.last_id, self.got, self.reader = None, [], None

    def connect(self):
        self.reader = Reader(self.library, self.url, self.last_id)

    def handle(self, item):
        kind, event_id, data = item
        try:
            document = json.loads(data)
        except ValueError:
            raise AssertionError(f"{self.library} yielded an event whose data is not JSON: {item!r} (after {self.got!r})") from None
        self.got.append((kind, event_id, document))
        if event_id:
            self.last_id = event_id
        if kind == "patch":
            self.models[document["list"]].apply(document)

    def read_until(self, done, seconds=10):
        deadline = time.monotonic() + seconds
        while not done():
            try:
                item = self.reader.take(max(0.01, deadline - time.monotonic()))
            except AssertionError:
                versions = {name: model.version for name, model in self.models.items()}
                raise AssertionError(f"{self.library}: changes lost; the lists stay at {versions}, after {self.got!r}") from None
            assert item is not None, f"{self.library}: the stream ended early; got {self.got!r}"
            self.handle(item)

    def read_for(self, seconds, stop=lambda: False):
        """Whatever arrives within `seconds` (heartbeats pass meanwhile), or until `stop` holds."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not stop():
            try:
                item = self.reader.events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return
            if item is None:
                return
            self.handle(item)

    def drain_cut(self):
        """Reads what the cut connection yielded before it ended."""
        while (item := self.reader.take(5)) is not None:
            self.handle(item)


LIBRARIES = ["httpx_sse", "sseclient_py"]


def cut_and_resume(server, proxy, client, changes_while_away, caught_up, change_after):
    """Opens the stream, reads what comes for a while (the opening, heartbeats), cuts it before any
    change, makes `changes_while_away`, reconnects with the last id seen, reads until `caught_up`
    holds, then makes `change_after`."""
    client.connect()
    client.read_for(5, stop=lambda: client.got)  # connected: the first event came (the library may take a while)
    client.read_for(0.5)  # heartbeats
    proxy.cut()
    client.drain_cut()
    for change in changes_while_away:
        change()
    proxy.restore()
    client.connect()
    client.read_until(caught_up)
    client.read_for(0.5)  # heartbeats
    change_after()


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_lists_stream_loses_no_change_across_a_cut(server, proxy, library):
    first = put(server, "one", ["a"])
    version, sections = snapshot(server, "one")
    assert version == first
    client = Client(library, f"http://127.0.0.1:{proxy.port}/lists/one/events", {"one": Model(version, sections)})
    cut_and_resume(server, proxy, client, [lambda: add(server, "one", "b"), lambda: add(server, "one", "c", after="a"),
                                           lambda: add(server, "one", "d")],
                   lambda: client.models["one"].version == first + 3, lambda: add(server, "one", "e"))
    final, want = snapshot(server, "one")
    assert final == first + 4
    client.read_until(lambda: client.models["one"].version == final)
    assert client.models["one"].sections == want
    # Each connection opens with where it starts: the list's version, then the version resumed from.
    openings = [document for kind, _, document in client.got if kind == "stream"]
    assert openings == [{"protocol": 1, "list": "one", "version": first}] * 2
    resumed = proxy.requests_to("/lists/one/events")
    assert [r["headers"].get("last-event-id") for r in resumed] == [None, str(first)]


@pytest.mark.parametrize("library", LIBRARIES)
def test_the_multiplexed_stream_loses_no_change_across_a_cut(server, proxy, library):
    models = {}
    for name in ("a", "b"):
        put(server, name, ["x"])
        models[name] = Model(*snapshot(server, name))
    client = Client(library, f"http://127.0.0.1:{proxy.port}/events?list=a&list=b", models)
    cut_and_resume(server, proxy, client, [lambda: add(server, "a", "y"), lambda: add(server, "b", "y"), lambda: add(server, "a", "z")],
                   lambda: models["a"].version == 3 and models["b"].version == 2, lambda: add(server, "b", "z"))
    client.read_until(lambda: models["a"].version == 3 and models["b"].version == 3)
    for name in ("a", "b"):
        assert snapshot(server, name) == (3, models[name].sections)
    openings = [document for kind, _, document in client.got if kind == "stream"]
    assert [{k: v for k, v in o.items() if k != "stream"} for o in openings] == [{"protocol": 1, "versions": {"a": 1, "b": 1}}] * 2
    resumed = proxy.requests_to("/events?list=a&list=b")
    assert [r["headers"].get("last-event-id") for r in resumed] == [None, "a:1,b:1"]
    # After the resume: one catch-up per list (a: 1→3, b: 1→2), then b's change, under the vector of
    # what the client has.
    changes = [(document["list"], document["from"], document["version"]) for kind, _, document in client.got if kind == "patch"]
    assert sorted(changes[:2]) == [("a", 1, 3), ("b", 1, 2)] and changes[2:] == [("b", 2, 3)]
    assert client.last_id == "a:3,b:3"
