"""Resets keep what the person is doing: a reset is applied as a keyed reconciliation (surviving sections
and cells keep their DOM nodes, only changed HTML is replaced), so focus, caret, typed text and <details>
state survive it. Against the real binary (a reconnect with an unknown version gets a reset) and against
scripted resets; plus the version rule: a changeset applies exactly when its `from` is the page's version,
whatever versions it spans."""
import json
import time

import pytest

from conftest import page, root_html, wait_for
from test_live import SEED, Livelist, act, cell_keys, console_errors, converge, open_live, reduce_motion


@pytest.fixture
def short_log():
    """The real binary with a log of two changesets: a page three versions behind is too old for it."""
    server = Livelist("--log-count", "2")
    yield server
    server.close()

KEPT = ("return [document.activeElement.__mark, document.activeElement.value, document.activeElement.selectionStart, "
        "document.activeElement.selectionEnd, document.activeElement.closest('[data-cell]').dataset.cell]")


def test_typing_survives_a_reset_from_the_real_server(browser, short_log):
    from selenium.webdriver.common.by import By

    live = short_log
    reduce_motion(browser, False)
    open_live(browser, live, "todo")
    for title in ("four", "five"):
        act(browser, live, "add", text=title)
    wait_for(lambda: len(cell_keys(browser, "open")) == 4, message="the added items")
    ours = cell_keys(browser, "open")[-1]
    field = browser.find_element(By.CSS_SELECTOR, f"[data-cell='{ours}'] input.title")
    field.click()
    field.send_keys(" typed")
    browser.execute_script("const a = document.activeElement; a.__mark = 1; a.setSelectionRange(2, 4);"
                           "document.querySelector('[data-list]').__mark = 1;")
    state = [1, "five typed", 2, 4, ours]
    assert browser.execute_script(KEPT) == state
    # The stream goes away; meanwhile the list changes three times; the page comes back with a version
    # too old for the log, which only a reset can answer.
    browser.execute_script("LiveList.close(); __patches.length = 0")
    for title in ("six", "seven", "eight"):
        act(browser, live, "add", text=title)
    browser.execute_script("LiveList.connect()")
    wait_for(lambda: browser.execute_script("return __patches.some(p => p.ops.length == 1 && p.ops[0].op == 'reset')"),
             message="the reset")
    wait_for(lambda: len(cell_keys(browser, "open")) == 7, message="the items added while away")
    assert browser.execute_script(KEPT) == state, "focus, caret and typed text after the reset"
    assert browser.execute_script("return document.querySelector('[data-list]').__mark") == 1
    # The page equals a fresh one once the person leaves the field (their typing is not the server's).
    browser.execute_script("document.activeElement.value = 'five'; document.activeElement.blur()")
    _, version, _ = live.page("todo")
    converge(browser, live, "todo", version, SEED, "after the reset", settle=True)
    assert not console_errors(browser)


def snapshot(version, sections):
    """A snapshot of list `r` from (key, header, [(cell key, cell inner HTML)])."""
    out = []
    for key, header, cells in sections:
        head = f"<header>{header}</header>" if header is not None else ""
        out.append({"key": key, "html": f'<section class="livelist-section" data-section="{key}">{head}<ul class="livelist-cells"></ul></section>',
                    "header": f"<header>{header}</header>" if header is not None else None, "footer": None,
                    "cells": [{"key": k, "html": f'<li class="livelist-cell" data-cell="{k}">{h}</li>'} for k, h in cells]})
    return {"protocol": 1, "list": "r", "version": version, "sections": out}


def reset(version, sections, since=0):
    return {"protocol": 1, "list": "r", "from": since, "version": version, "animate": False,
            "ops": [{"op": "reset", "html": "", "sections": snapshot(version, sections)["sections"]}]}


FORM = '<input value="x"><details><summary>more</summary>inside</details>'


def test_a_scripted_reset_keeps_surviving_nodes_and_replaces_changed_ones(browser, server):
    from selenium.webdriver.common.by import By

    before = [("a", "A", [("x", FORM), ("y", "y1"), ("z", "z1")]), ("b", None, [("w", "w1"), ("v", "v1")])]
    browser.get(server.page("reset", page(root_html(snapshot(3, before)))))
    field = browser.find_element(By.CSS_SELECTOR, "[data-cell='x'] input")
    field.click()
    field.send_keys("yz")
    browser.execute_script("""
        const a = document.activeElement; a.__mark = 1; a.setSelectionRange(1, 2);
        document.querySelector('[data-cell=x] details').open = true;
        for (const e of document.querySelectorAll('[data-cell],[data-section]')) e.__old = 1;""")
    # Sections swap, x crosses into b, y changes, z goes, u comes, a's header changes.
    after = [("b", None, [("v", "v1"), ("x", FORM), ("u", "u1")]), ("a", "A2", [("y", "y2"), ("w", "w1")])]
    applied = browser.execute_script("return LiveList.apply(document.querySelector('[data-list]'), arguments[0])",
                                     reset(9, after, since=7))
    assert applied
    kept = browser.execute_script("""
        const q = s => document.querySelector(s), a = document.activeElement;
        return {focus: [a.__mark, a.value, a.selectionStart, a.selectionEnd, a.closest('[data-cell]').dataset.cell],
                open: q('[data-cell=x] details').open,
                old: [...document.querySelectorAll('[data-cell],[data-section]')].filter(e => e.__old).map(e => e.dataset.cell || e.dataset.section),
                version: q('[data-list]').dataset.version}""")
    assert kept["focus"] == [1, "xyz", 1, 2, "x"]
    assert kept["open"] is True
    assert sorted(kept["old"]) == ["a", "b", "v", "w", "x"], "surviving, unchanged nodes are kept; y changed, u is new"
    assert kept["version"] == "9"
    # Apart from the person's own state, the page equals a fresh rendering of the new state.
    browser.execute_script("document.activeElement.blur(); document.querySelector('[data-cell=x] details').open = false")
    got = browser.execute_script("return document.querySelector('[data-list]').outerHTML")
    want = browser.execute_script("const t = document.createElement('template'); t.innerHTML = arguments[0]; return t.content.firstElementChild.outerHTML",
                                  root_html(snapshot(9, after)))
    assert got == want
    # A DELETE's reset empties the list.
    assert browser.execute_script("return LiveList.apply(document.querySelector('[data-list]'), arguments[0])", reset(10, [], since=9))
    assert browser.execute_script("return document.querySelector('[data-list]').children.length") == 0


def test_a_changeset_applies_when_its_from_is_the_page_version(browser, server):
    sections = [("a", None, [("x", "x1"), ("y", "y1")])]
    browser.get(server.page("from", page(root_html(snapshot(5, sections)))))
    apply = "return LiveList.apply(document.querySelector('[data-list]'), arguments[0])"
    spanning = {"protocol": 1, "list": "r", "from": 5, "version": 12, "animate": False,
                "ops": [{"op": "move", "cell": "y", "section": "a", "after": None}]}
    assert browser.execute_script(apply, spanning), "a catch-up diff spanning several versions applies"
    assert cell_keys(browser, "a") == ["y", "x"]
    gap = {"protocol": 1, "list": "r", "from": 13, "version": 14, "animate": False,
           "ops": [{"op": "delete", "cell": "y"}]}
    assert not browser.execute_script(apply, gap), "a changeset from another version does not apply"
    time.sleep(0.1)
    assert cell_keys(browser, "a") == ["y", "x"]
    assert browser.execute_script("return document.querySelector('[data-list]').dataset.version") == "12"
    assert json.loads(json.dumps(server.requests_to("/lists/r/changes")))[0]["query"] == "since=12", "a gap asks for the changes"
