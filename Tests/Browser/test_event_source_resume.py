"""Chromium's own EventSource, without livelist.js, against the real server through a proxy that cuts the
connection before the first change (docs/PROTOCOL.md, "Stream framing"). The browser reconnects by
itself, sending the id of the stream's opening as Last-Event-ID, and must get every change made while it
was away, in order, on a list's stream and on the multiplexed one. `onmessage` gets nothing: changesets
are `patch` events.

Environment: LIVELIST_BINARY (default .build/debug/livelist), as test_live.py."""
import json
import time

import pytest

import livelist_tools as tools  # Tools/python, installed by Scripts/setup

import test_live
from conftest import wait_for

RECORD = """const e = window.__es = new EventSource(arguments[0]);
window.__got = []; window.__opened = 0;
e.onopen = () => { __opened++ };
e.onmessage = m => { __got.push(['message', m.lastEventId, m.data]) };
for (const k of ['stream', 'patch', 'denied']) e.addEventListener(k, m => { __got.push([k, m.lastEventId, m.data]) });"""


@pytest.fixture
def live():
    server = test_live.Livelist("--no-demo")
    yield server
    server.close()


@pytest.fixture
def proxy(live):
    cutting = tools.CuttingProxy(live.port)
    yield cutting
    cutting.close()


def cells(*keys):
    return {"sections": [{"id": "s", "cells": [{"id": k, "text": k} for k in keys]}]}


def add(live, name, cell):
    body = json.dumps({"ops": [{"op": "upsert", "cell": {"id": cell, "text": cell}, "section": "s"}]})
    status, _, answer = live.request("PATCH", f"/lists/{name}", body.encode(), {"Content-Type": "application/json"})
    assert status == 200, answer


def got(browser):
    return browser.execute_script("return window.__got")


def versions(browser, start):
    """Each list's version after the `patch` events so far, from `start`, checking that every changeset
    continues its list from the version before it (a gap is a lost change)."""
    now = dict(start)
    for kind, _, data in got(browser):
        document = json.loads(data)  # every event carries JSON
        if kind == "patch":
            assert document["from"] == now[document["list"]], f"a gap: {document['list']} {document['from']}→{document['version']} after {now}"
            now[document["list"]] = document["version"]
    return now


def cut_and_resume(browser, proxy, path, away, caught_up, after):
    """Opens an EventSource through the proxy, cuts it once open and before any change, makes the
    changes of `away`, lets the browser reconnect by itself and catch up (`caught_up`), then makes
    the change `after`."""
    browser.get(f"http://127.0.0.1:{proxy.port}/healthz")  # the stream's origin
    browser.execute_script(RECORD, path)
    wait_for(lambda: browser.execute_script("return __opened") == 1, message="the stream to open")
    time.sleep(0.3)  # what comes with the stream's head arrives
    proxy.cut()
    wait_for(lambda: browser.execute_script("return __es.readyState") == 0, message="the browser to see the cut")
    for change in away:
        change()
    proxy.restore()
    wait_for(lambda: browser.execute_script("return __opened") == 2, timeout=15, message="the browser's own reconnect")
    wait_for(caught_up, message="the catch-up")
    after()


def test_a_lists_event_source_loses_no_change_across_a_cut(browser, live, proxy):
    first = live.put("one", cells("a"))["version"]
    cut_and_resume(browser, proxy, "/lists/one/events", [lambda k=k: add(live, "one", k) for k in "bcd"],
                   lambda: versions(browser, {"one": first})["one"] == first + 3, lambda: add(live, "one", "e"))
    wait_for(lambda: versions(browser, {"one": first})["one"] == first + 4, message="every change")
    heads = proxy.requests_to("/lists/one/events")
    assert [h["headers"].get("last-event-id") for h in heads] == [None, str(first)]
    # Each connection opened with where it starts; the catch-up (1→4) came, then the last change.
    assert [(kind, last_id) for kind, last_id, _ in got(browser)] == [("stream", "1"), ("stream", "1"), ("patch", "4"), ("patch", "5")]


def test_the_multiplexed_event_source_loses_no_change_across_a_cut(browser, live, proxy):
    for name in ("a", "b"):
        assert live.put(name, cells("x"))["version"] == 1
    cut_and_resume(browser, proxy, "/events?list=a&list=b",
                   [lambda: add(live, "a", "y"), lambda: add(live, "b", "y"), lambda: add(live, "a", "z")],
                   lambda: versions(browser, {"a": 1, "b": 1}) == {"a": 3, "b": 2}, lambda: add(live, "b", "z"))
    wait_for(lambda: versions(browser, {"a": 1, "b": 1}) == {"a": 3, "b": 3}, message="every change of both lists")
    heads = proxy.requests_to("/events?list=a&list=b")
    assert [h["headers"].get("last-event-id") for h in heads] == [None, "a:1,b:1"]
    events = got(browser)
    assert events[-1][1] == "a:3,b:3" and [kind for kind, _, _ in events].count("stream") == 2
    assert "message" not in [kind for kind, _, _ in events], "onmessage gets nothing: every event has a name"
