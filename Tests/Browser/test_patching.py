"""The client applies the server's changesets in a real browser: the page built from a snapshot plus a
changeset equals the page built from the next snapshot, for every chain the Swift suite writes (hostile
keys and texts, section and cross-section moves); the version rules; resynchronisation; state that must
survive moves; animation and the viewport."""
import copy
import json
import time

import pytest

from conftest import inner_html, json_answer, page, root_html, wait_for

NORMALISE = "const d = document.createElement('div'); d.innerHTML = arguments[0]; return d.innerHTML;"

# Applies each item's changeset to a fresh root built from `before`; returns the mismatches. With
# `settle`, keeps every root and lets the caller compare later (animations run meanwhile).
APPLY_CHAINS = """
const [items, settle] = arguments, host = document.getElementById('host'), bad = [];
const norm = h => { const d = document.createElement('div'); d.innerHTML = h; return d.innerHTML };
if (!settle) host.replaceChildren();
for (const it of items) {
  const box = document.createElement('div');
  host.append(box);
  box.innerHTML = it.root;
  const root = box.firstElementChild, applied = LiveList.apply(root, it.cs);
  if (settle) { box.dataset.expect = it.after; box.dataset.version = it.version; box.dataset.index = it.index; continue }
  const got = root.innerHTML, want = norm(it.after);
  if (!applied || got !== want || root.dataset.version !== String(it.version))
    bad.push({index: it.index, applied, version: root.dataset.version, got: got.slice(0, 300), want: want.slice(0, 300)});
  box.remove();
}
return bad;
"""

COMPARE_SETTLED = """
const bad = [], norm = h => { const d = document.createElement('div'); d.innerHTML = h; return d.innerHTML };
for (const box of document.querySelectorAll('#host > div')) {
  const root = box.firstElementChild, want = norm(box.dataset.expect);
  if (root.innerHTML !== want || root.dataset.version !== box.dataset.version)
    bad.push({index: box.dataset.index, got: root.innerHTML.slice(0, 300), want: want.slice(0, 300)});
}
const transient = document.querySelectorAll('.livelist-move, .livelist-enter, .livelist-reload, .livelist-exit').length;
document.getElementById('host').replaceChildren();
return [bad, transient];
"""


def items_for(chains, **options):
    return [{"index": i, "root": root_html(c["before"], **options), "cs": c["changeset"],
             "after": inner_html(c["after"]), "version": c["after"]["version"]} for i, c in enumerate(chains)]


def open_page(browser, server, name, body='<div id="host"></div>', **kwargs):
    browser.get(server.page(name, page(body, **kwargs)))
    wait_for(lambda: browser.execute_script("return !!window.LiveList"), message="livelist.js")


def install_fetch_stub(browser):
    """Records every fetch; answers from window.__answers (by URL) or never."""
    browser.execute_script("""
      window.__calls = []; window.__answers = {};
      window.fetch = (url, init = {}) => {
        __calls.push({url: String(url), method: init.method || 'GET', headers: init.headers || {}, body: init.body || null});
        const a = __answers[String(url)];
        return a ? Promise.resolve(new Response(JSON.stringify(a), {status: 200, headers: {'Content-Type': 'application/json'}}))
                 : new Promise(() => {});
      };""")


def interesting(chains, need=("move", "reload", "delete")):
    """A chain whose changeset holds every op kind in `need`, and a non-empty page before it."""
    for chain in chains:
        kinds = {op["op"] for op in chain["changeset"]["ops"]}
        if chain["before"]["sections"] and set(need) <= kinds:
            return chain
    raise AssertionError(f"no sample chain with {need}")


# --- Equivalence over the Swift suite's samples --------------------------------------------------------

def test_there_are_enough_samples(chains):
    assert len(chains) >= 300
    kinds = {op["op"] for chain in chains for op in chain["changeset"]["ops"]}
    assert kinds >= {"insert", "delete", "move", "reload", "insertSection", "deleteSection", "moveSection",
                     "reloadSection"}


@pytest.mark.parametrize("move_before", [True, False], ids=["moveBefore", "insertBefore"])
def test_every_sample_changeset_gives_the_next_snapshot(browser, server, chains, move_before):
    open_page(browser, server, "chains")
    browser.execute_script("LiveList.options.moveBefore = arguments[0]", move_before)
    assert browser.execute_script("return 'moveBefore' in Element.prototype"), "this Chromium has moveBefore"
    items = items_for(chains)
    bad = []
    for start in range(0, len(items), 60):
        bad += browser.execute_script(APPLY_CHAINS, items[start:start + 60], False)
    assert not bad, f"{len(bad)} of {len(items)} chains differ; first: {json.dumps(bad[0], ensure_ascii=False)}"


def test_animated_changesets_settle_to_the_same_page(browser, server, chains):
    """With animations on, transient classes and styles come and go; the settled page is the same."""
    open_page(browser, server, "chains-animated")
    items = items_for(chains[:120], animate=True)
    browser.execute_script(APPLY_CHAINS, items, True)
    assert browser.execute_script(
        "return document.querySelectorAll('.livelist-move, .livelist-enter, .livelist-exit').length") > 0
    time.sleep(0.8)
    bad, transient = browser.execute_script(COMPARE_SETTLED)
    assert not bad, f"{len(bad)} animated chains differ once settled; first: {bad[0]}"
    assert transient == 0


# --- Version rules -------------------------------------------------------------------------------------

def test_duplicates_and_old_versions_are_ignored(browser, server, chains):
    chain = interesting(chains)
    open_page(browser, server, "dupes", root_html(chain["before"]))
    install_fetch_stub(browser)
    cs = chain["changeset"]
    assert browser.execute_script("return LiveList.apply(document.querySelector('[data-list]'), arguments[0])", cs)
    settled = browser.execute_script("return document.querySelector('[data-list]').innerHTML")
    older = dict(cs, **{"from": cs["from"] - 1, "version": cs["version"] - 1})
    for again in (cs, older, dict(cs, ops=[{"op": "reset", "html": "", "sections": []}])):
        assert browser.execute_script(
            "return LiveList.apply(document.querySelector('[data-list]'), arguments[0])", again) is False
    root = browser.execute_script("const r = document.querySelector('[data-list]'); return [r.innerHTML, r.dataset.version]")
    assert root == [settled, str(cs["version"])]
    assert browser.execute_script("return __calls") == [], "a duplicate is not a gap"


def test_a_gap_resynchronises_from_the_changes_route(browser, server, chains):
    chain = interesting(chains)
    before, cs, after = chain["before"], chain["changeset"], chain["after"]
    open_page(browser, server, "gap", root_html(before))
    install_fetch_stub(browser)
    url = f"/lists/{before['list']}/changes?since={before['version']}"
    browser.execute_script("__answers[arguments[0]] = arguments[1]", url, cs)
    later = {"protocol": 1, "list": before["list"], "from": cs["version"], "version": cs["version"] + 1,
             "animate": True, "ops": []}
    # The page saw `later`, so a resync that ends before it asks again, from where it ended.
    again = f"/lists/{before['list']}/changes?since={cs['version']}"
    browser.execute_script("__answers[arguments[0]] = arguments[1]", again, later)
    assert browser.execute_script(
        "return LiveList.apply(document.querySelector('[data-list]'), arguments[0])", later) is False
    wait_for(lambda: browser.execute_script("return document.querySelector('[data-list]').dataset.version")
             == str(later["version"]), message="the resyncs to apply")
    calls = browser.execute_script("return __calls")
    assert [c["url"] for c in calls] == [url, again]
    got, want = browser.execute_script(
        "return [document.querySelector('[data-list]').innerHTML, (" + "h => { const d = document.createElement('div'); "
        "d.innerHTML = h; return d.innerHTML })(arguments[0])]", inner_html(after))
    assert got == want


def test_a_newer_reset_applies_whatever_its_from(browser, server, chains):
    chain = interesting(chains)
    before, after = chain["before"], chain["after"]
    open_page(browser, server, "reset", root_html(before))
    install_fetch_stub(browser)
    browser.execute_script("""window.__events = [];
      for (const t of ['patch', 'reset']) document.addEventListener('livelist:' + t, e => __events.push([t, e.detail.version]));""")
    reset = {"protocol": 1, "list": before["list"], "from": 0, "version": before["version"] + 40, "animate": False,
             "ops": [{"op": "reset", "html": inner_html(after), "sections": after["sections"]}]}
    assert browser.execute_script("return LiveList.apply(document.querySelector('[data-list]'), arguments[0])", reset)
    got, want, version = browser.execute_script(
        "const r = document.querySelector('[data-list]'), d = document.createElement('div'); d.innerHTML = arguments[0];"
        "return [r.innerHTML, d.innerHTML, r.dataset.version]", inner_html(after))
    assert got == want and version == str(before["version"] + 40)
    assert browser.execute_script("return __events") == [["patch", reset["version"]], ["reset", reset["version"]]]
    assert browser.execute_script("return __calls") == []
    # The maps were rebuilt: a changeset on top of the reset state applies.
    cell = after["sections"][0]["cells"][0] if after["sections"][0]["cells"] else None
    if cell:
        follow = {"protocol": 1, "list": before["list"], "from": reset["version"], "version": reset["version"] + 1,
                  "animate": False, "ops": [{"op": "delete", "cell": cell["key"]}]}
        assert browser.execute_script("return LiveList.apply(document.querySelector('[data-list]'), arguments[0])", follow)


@pytest.mark.parametrize("bad_op", [
    {"op": "move", "cell": "no such cell", "section": None, "after": None},
    {"op": "delete", "cell": "no such cell"},
    {"op": "reload", "cell": "no such cell", "html": "<li data-cell=\"no such cell\">x</li>"},
    {"op": "insert", "cell": "new", "section": None, "after": "no such anchor", "html": "<li data-cell=\"new\">n</li>"},
    {"op": "insert", "cell": "new", "section": "no such section", "after": None, "html": "<li data-cell=\"new\">n</li>"},
    {"op": "moveSection", "section": "no such section", "after": None},
    {"op": "teleport", "cell": "x"},
], ids=["move-unknown-cell", "delete-unknown", "reload-unknown", "insert-unknown-anchor", "insert-unknown-section",
        "move-unknown-section", "unknown-op"])
def test_an_op_that_cannot_apply_resynchronises_from_the_snapshot(browser, server, chains, bad_op):
    chain = interesting(chains)
    before, cs, after = chain["before"], chain["changeset"], chain["after"]
    open_page(browser, server, "unknown", root_html(before))
    install_fetch_stub(browser)
    op = dict(bad_op)
    if "section" in op and op["section"] is None:
        op["section"] = before["sections"][0]["key"]
    # A valid first half, then the op that cannot apply: the page is not what the server thinks.
    broken = dict(cs, ops=cs["ops"][: len(cs["ops"]) // 2] + [op])
    snapshot_url = f"/lists/{before['list']}"
    browser.execute_script("__answers[arguments[0]] = arguments[1]", snapshot_url, after)
    assert browser.execute_script(
        "return LiveList.apply(document.querySelector('[data-list]'), arguments[0])", broken) is False
    calls = browser.execute_script("return __calls")
    assert calls[0]["url"] == snapshot_url and calls[0]["headers"].get("Accept") == "application/json"
    wait_for(lambda: browser.execute_script("return document.querySelector('[data-list]').dataset.version")
             == str(after["version"]), message="the snapshot to be applied")
    got, want = browser.execute_script(
        "const d = document.createElement('div'); d.innerHTML = arguments[0];"
        "return [document.querySelector('[data-list]').innerHTML, d.innerHTML]", inner_html(after))
    assert got == want


# --- State that survives ------------------------------------------------------------------------------

def cell(key, text, extra=""):
    return f'<li class="livelist-cell" data-cell="{key}"><span class="livelist-text">{text}</span>{extra}</li>'


def two_sections(version=3, **options):
    snapshot = {"protocol": 1, "list": "form", "version": version, "sections": [
        {"key": "a", "header": None, "footer": None,
         "html": '<section class="livelist-section" data-section="a"><ul class="livelist-cells"></ul></section>',
         "cells": [{"key": k, "html": cell(k, k.upper(), '<input name="note" value="">' if k == "x3" else "")}
                   for k in ("x1", "x2", "x3", "x4")]},
        {"key": "b", "header": '<header class="livelist-header">B</header>', "footer": None,
         "html": '<section class="livelist-section" data-section="b"><header class="livelist-header">B</header>'
                 '<ul class="livelist-cells"></ul></section>',
         "cells": [{"key": k, "html": cell(k, k.upper())} for k in ("y1", "y2")]}]}
    return root_html(snapshot, **options)


def changeset(version, *ops):
    return {"protocol": 1, "list": "form", "from": version - 1, "version": version, "animate": True, "ops": list(ops)}


FOCUS_STATE = """const a = document.activeElement;
return [a === window.__input, a.value, a.selectionStart, a.selectionEnd, !!a.closest('[data-cell="x3"]')];"""


@pytest.mark.parametrize("move_before", [True, False], ids=["moveBefore", "insertBefore"])
def test_a_moved_cell_keeps_focus_caret_and_typed_text(browser, server, move_before):
    open_page(browser, server, "focus", '<button id="elsewhere">elsewhere</button>' + two_sections(animate=True))
    browser.execute_script("LiveList.options.moveBefore = arguments[0]", move_before)
    field = browser.find_element("css selector", '[data-cell="x3"] input')
    field.click()
    field.send_keys("hello")
    browser.execute_script("window.__input = document.activeElement; __input.setSelectionRange(2, 4)")
    root = "document.querySelector('[data-list]')"
    steps = [
        changeset(4, {"op": "move", "cell": "x3", "section": "a", "after": None}),
        changeset(5, {"op": "move", "cell": "x3", "section": "b", "after": "y1"},
                  {"op": "reload", "cell": "x1", "html": cell("x1", "X1 (2)")},
                  {"op": "reload", "cell": "y2", "html": cell("y2", "Y2 (2)")}),
        changeset(6, {"op": "moveSection", "section": "b", "after": None},
                  {"op": "insert", "cell": "z", "section": "b", "after": None, "html": cell("z", "Z")},
                  {"op": "delete", "cell": "x2"}),
    ]
    for step in steps:
        assert browser.execute_script(f"return LiveList.apply({root}, arguments[0])", step)
        assert browser.execute_script(FOCUS_STATE) == [True, "hello", 2, 4, True]
    order = browser.execute_script(f"return [...{root}.querySelectorAll('[data-cell]')].map(e => e.dataset.cell)")
    assert order == ["z", "y1", "x3", "y2", "x1", "x4"]
    # The caret is really there: typing goes on at it.
    browser.switch_to.active_element.send_keys("!")
    assert browser.execute_script("return __input.value") == "he!o"


def test_a_reload_of_the_cell_being_edited_waits_for_blur(browser, server):
    open_page(browser, server, "dirty", '<button id="elsewhere">elsewhere</button>' + two_sections())
    field = browser.find_element("css selector", '[data-cell="x3"] input')
    field.click()
    field.send_keys("draft")
    root = "document.querySelector('[data-list]')"
    newer = cell("x3", "X3 (2)", '<input name="note" value="">')
    newest = cell("x3", "X3 (3)", '<input name="note" value="server">')
    assert browser.execute_script(f"return LiveList.apply({root}, arguments[0])",
                                  changeset(4, {"op": "reload", "cell": "x3", "html": newer}))
    assert browser.execute_script(f"return LiveList.apply({root}, arguments[0])",
                                  changeset(5, {"op": "reload", "cell": "x3", "html": newest},
                                            {"op": "reload", "cell": "x1", "html": cell("x1", "X1 (2)")}))
    state = browser.execute_script(f"""const c = {root}.querySelector('[data-cell="x3"]');
      return [c.textContent, c.querySelector('input').value, document.activeElement === c.querySelector('input'),
              {root}.dataset.version, {root}.querySelector('[data-cell="x1"]').textContent]""")
    assert state == ["X3", "draft", True, "5", "X1 (2)"], "the edited cell is held, the others apply"
    browser.find_element("css selector", "#elsewhere").click()
    wait_for(lambda: browser.execute_script(f"return {root}.querySelector('[data-cell=\"x3\"]').textContent") == "X3 (3)",
             message="the held reload to land on blur")
    got, want = browser.execute_script(
        f"const d = document.createElement('div'); d.innerHTML = arguments[0];"
        f"return [{root}.querySelector('[data-cell=\"x3\"]').outerHTML, d.innerHTML]", newest)
    assert got == want


# --- Animation ----------------------------------------------------------------------------------------

ANIMATED_STEP = changeset(4,
                          {"op": "delete", "cell": "x1"},
                          {"op": "move", "cell": "x4", "section": "a", "after": None},
                          {"op": "insert", "cell": "n", "section": "a", "after": "x4", "html": cell("n", "N")},
                          {"op": "reload", "cell": "x2", "html": cell("x2", "X2 (2)")})


def transient_state(browser):
    return browser.execute_script("""return {
      move: document.querySelectorAll('[data-list] .livelist-move').length,
      styled: document.querySelectorAll('[data-list] [style]').length,
      enter: document.querySelectorAll('[data-list] .livelist-enter').length,
      reload: document.querySelectorAll('[data-list] .livelist-reload').length,
      exit: document.querySelectorAll('body > .livelist-exit').length}""")


def test_animations_run_and_leave_a_clean_page(browser, server):
    open_page(browser, server, "animate", two_sections(animate=True, extra="tall"))
    root = "document.querySelector('[data-list]')"
    assert browser.execute_script(f"return LiveList.apply({root}, arguments[0])", ANIMATED_STEP)
    state = transient_state(browser)
    assert state["move"] >= 1 and state["enter"] == 1 and state["reload"] == 1 and state["exit"] == 1, state
    time.sleep(0.6)
    assert transient_state(browser) == {"move": 0, "styled": 0, "enter": 0, "reload": 0, "exit": 0}


def test_reduced_motion_and_the_options_turn_animation_off(browser, server):
    root = "document.querySelector('[data-list]')"
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia",
                            {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]})
    open_page(browser, server, "reduced", two_sections(animate=True, extra="tall"))
    assert browser.execute_script(f"return LiveList.apply({root}, arguments[0])", ANIMATED_STEP)
    assert transient_state(browser) == {"move": 0, "styled": 0, "enter": 0, "reload": 0, "exit": 0}
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    # data-animate="false", and a changeset the server marks "animate": false, also apply at once.
    for options, step in ((dict(animate=False), ANIMATED_STEP), (dict(animate=True), dict(ANIMATED_STEP, animate=False))):
        open_page(browser, server, "still", two_sections(extra="tall", **options))
        assert browser.execute_script(f"return LiveList.apply({root}, arguments[0])", step)
        assert transient_state(browser) == {"move": 0, "styled": 0, "enter": 0, "reload": 0, "exit": 0}
    # Reloads only flash when data-animate-reloads is true.
    open_page(browser, server, "no-reload-flash", two_sections(animate=True, reloads=False, extra="tall"))
    assert browser.execute_script(f"return LiveList.apply({root}, arguments[0])", ANIMATED_STEP)
    assert transient_state(browser)["reload"] == 0


def test_changes_during_a_scroll_animate_only_when_the_list_asks(browser, server):
    """Carbon's isAnimationEnabledWhileScrolling: data-animate-scrolling="false" (the default) applies a
    change that arrives while the person scrolls at once; "true" animates it as usual."""
    root = "document.querySelector('[data-list]')"
    scroll_then_apply = f"document.dispatchEvent(new Event('scroll')); return LiveList.apply({root}, arguments[0])"
    open_page(browser, server, "scrolling-still", two_sections(animate=True, extra="tall"))
    assert browser.execute_script(scroll_then_apply, ANIMATED_STEP)
    assert transient_state(browser) == {"move": 0, "styled": 0, "enter": 0, "reload": 0, "exit": 0}
    open_page(browser, server, "scrolling-animated", two_sections(animate=True, scrolling=True, extra="tall"))
    assert browser.execute_script(scroll_then_apply, ANIMATED_STEP)
    state = transient_state(browser)
    assert state["move"] >= 1 and state["enter"] == 1, state


# --- The viewport -------------------------------------------------------------------------------------

def long_list(version=1, count=100, **options):
    snapshot = {"protocol": 1, "list": "long", "version": version, "sections": [
        {"key": "s", "header": None, "footer": None,
         "html": '<section class="livelist-section" data-section="s"><ul class="livelist-cells"></ul></section>',
         "cells": [{"key": f"c{i}", "html": cell(f"c{i}", f"Cell {i}")} for i in range(count)]}]}
    return root_html(snapshot, extra="tall", **options)


def insert_above(version, count=50, after=None):
    ops, anchor = [], after
    for i in range(count):
        ops.append({"op": "insert", "cell": f"new{version}-{i}", "section": "s", "after": anchor,
                    "html": cell(f"new{version}-{i}", f"New {i}")})
        anchor = f"new{version}-{i}"
    return {"protocol": 1, "list": "long", "from": version - 1, "version": version, "animate": False, "ops": ops}


FIRST_VISIBLE = """const c = [...document.querySelectorAll('[data-cell]')].find(e => e.getBoundingClientRect().bottom > 0);
return [c.dataset.cell, c.getBoundingClientRect().top, scrollY];"""


@pytest.mark.parametrize("keep", [True, False], ids=["keep-offset", "no-keep-offset"])
def test_scroll_position_holds_when_cells_are_inserted_above(browser, server, keep):
    # The page turns the browser's own scroll anchoring off (as Safari has none): the client does it.
    open_page(browser, server, f"offset-{keep}", '<div class="no-anchor">' + long_list(keep=keep) + "</div>")
    browser.execute_script("document.documentElement.classList.add('no-anchor'); scrollTo(0, 2010)")
    key, top, y = browser.execute_script(FIRST_VISIBLE)
    assert browser.execute_script("return LiveList.apply(document.querySelector('[data-list]'), arguments[0])",
                                  insert_above(2))
    now = browser.execute_script(f"const c = document.querySelector('[data-cell=\"{key}\"]'); return [c.getBoundingClientRect().top, scrollY]")
    if keep:
        assert abs(now[0] - top) <= 1 and abs(now[1] - (y + 50 * 40)) <= 1
    else:
        assert abs(now[0] - (top + 50 * 40)) <= 1 and now[1] == y


def test_a_list_scrolled_to_its_end_sticks_to_it(browser, server):
    open_page(browser, server, "bottom", '<div class="scroller">' + long_list(count=30, bottom=True) + "</div>")
    scroller = "document.querySelector('.scroller')"
    browser.execute_script(f"{scroller}.scrollTop = 1e6")
    ops = insert_above(2, count=5, after="c29")
    assert browser.execute_script("return LiveList.apply(document.querySelector('[data-list]'), arguments[0])", ops)
    at_end = f"const s = {scroller}; return s.scrollHeight - s.scrollTop - s.clientHeight"
    assert browser.execute_script(at_end) < 2
    # Not at the end: it stays where the reader is.
    browser.execute_script(f"{scroller}.scrollTop = 100")
    ops = insert_above(3, count=5, after="c29")
    assert browser.execute_script("return LiveList.apply(document.querySelector('[data-list]'), arguments[0])", ops)
    assert browser.execute_script(f"return {scroller}.scrollTop") == 100
