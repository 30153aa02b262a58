"""Tabs of one origin share one event stream (Public/livelist-shared.js), against the real server: ten
tabs of one Chromium profile, each showing its own list, load and stay live over ONE stream, with the
SharedWorker transport and with the leader-tab transport (Web Locks and a BroadcastChannel); leader tabs
that close while writes keep coming are replaced within 2 s and no tab skips or repeats a changeset; in
a SharedWorker, a closed tab's list leaves the stream and an eleventh tab's list joins it; hidden tabs
leave the stream and catch up when shown; a tab behind the stream is told to resync; the stream comes
back after a restart of the server; a page with <meta name="livelist-connect" content="off"> opens
nothing; and the script's budget (4 KB gzipped).

Every tab gets a prelude before its page's scripts (CDP Page.addScriptToEvaluateOnNewDocument): it
records each applied changeset (`livelist:patch`) and the list's version before livelist.js ran, and,
unless a test wants real visibility, it keeps the tab "visible", as ten windows side by side would be
(livelist.js closes its stream in a hidden tab, and only the active tab of a window is visible), so that
every list stays on the shared stream. For the leader transport it also sets
`LiveList.options.sharedMode = 'leader'` the moment livelist.js defines `window.LiveList` (before
livelist-shared.js loads).

Environment: LIVELIST_BINARY, as test_live.py (this file never builds it: it skips without it).
The server runs with --access-log: the tests read its POST /events/TOKEN and /changes lines."""
import gzip
import json
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

import test_live
from conftest import REPO, wait_for
from test_live import Livelist, console_errors, converge

TABS = 10
SCRIPT = REPO / "Public" / "livelist-shared.js"
BUDGET = 4096


def test_livelist_shared_js_is_at_most_4_kb_gzipped_and_has_no_eval():
    source = SCRIPT.read_bytes()
    size = len(gzip.compress(source, 9))
    assert size <= BUDGET, f"livelist-shared.js is {size} bytes gzipped, over the {BUDGET}-byte budget"
    text = source.decode()
    assert not re.search(r"\beval\s*\(|new\s+Function\b|\bimport\b|\brequire\s*\(", text)
    assert not re.search(r"setTimeout\s*\(\s*['\"`]", text), "setTimeout with a string is eval"


PRELUDE = """(() => {
  if (%s) {
    Object.defineProperty(document, 'hidden', { get: () => false });
    document.addEventListener('visibilitychange', e => e.stopImmediatePropagation(), true);
  }
  window.__patches = [];
  document.addEventListener('livelist:patch', e => {
    const c = e.detail, ops = c.ops || [];
    __patches.push([e.target.dataset.list, c.from, c.version, ops.length == 1 && ops[0].op == 'reset']);
  });
  document.addEventListener('readystatechange', () => {
    const r = document.querySelector('[data-list]');
    document.readyState == 'interactive' && r && (window.__initial = +r.dataset.version);
  });
  if (%s) Object.defineProperty(window, 'LiveList', { configurable: true, set(v) {
    v.options.sharedMode = 'leader';
    Object.defineProperty(window, 'LiveList', { value: v, writable: true, configurable: true, enumerable: true });
  } });
})();"""


@pytest.fixture
def live():
    if not test_live.BINARY.exists():
        pytest.skip(f"no livelist binary at {test_live.BINARY} (set LIVELIST_BINARY)")
    server = Livelist("--access-log")
    yield server
    server.close()


@pytest.fixture
def tabs(driver):
    """The tabs a test opens (by handle); closed afterwards, back in the session's first window."""
    first, opened = driver.current_window_handle, []
    yield opened
    for handle in driver.window_handles:
        if handle != first:
            driver.switch_to.window(handle)
            driver.close()
    driver.switch_to.window(first)
    driver.get("about:blank")


def state(name, n):
    return {"sections": [{"id": "s", "header": name, "cells": [{"id": "c", "text": f"{name} #{n}"},
                                                                 {"id": f"n{n % 3}", "text": str(n)}]}]}


def metric(live, name):
    status, _, body = live.request("GET", "/metrics")
    assert status == 200, f"GET /metrics answered {status}"
    return int(re.search(rf"^{name} (\d+)$", body.decode(), re.M).group(1))


def one_stream(live, timeout=15):
    try:
        wait_for(lambda: metric(live, "livelist_streams_open") == 1, timeout=timeout, interval=0.1)
    except AssertionError:
        raise AssertionError(f"{metric(live, 'livelist_streams_open')} streams open after {timeout} s, expected one") from None


def open_tab(driver, live, name, mode, visible=True):
    """A new tab of the profile showing /lists/NAME, with the prelude (`visible`: the tab acts as a visible
    one, also in the background); its handle once livelist.js runs."""
    driver.switch_to.new_window("tab")
    flags = tuple("true" if flag else "false" for flag in (visible, mode == "leader"))
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": PRELUDE % flags})
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]})
    driver.get(f"{live.base}/lists/{quote(name)}")
    wait_for(lambda: driver.execute_script(
        "const r = document.querySelector('[data-list]'); return !!(r && window.LiveList && LiveList.state(r))"),
        timeout=15, message=f"the page of {name} running livelist.js")
    return driver.current_window_handle


def shared(driver, handle):
    driver.switch_to.window(handle)
    return driver.execute_script("return window.LiveList && LiveList.shared && Object.assign({}, LiveList.shared)")


def open_tabs(driver, live, names, mode, tabs, visible=True):
    for name in set(names):
        live.put(name, state(name, 0))
    for name in names:
        tabs.append(open_tab(driver, live, name, mode, visible))
    # The first tab moves to the shared stream once the second says hello; every later one at once.
    for handle, name in zip(tabs, names):
        wait_for(lambda: (shared(driver, handle) or {}).get("mode") == mode, timeout=10,
                 message=f"livelist-shared.js in {mode} mode in the tab of {name}")
    one_stream(live)


def converge_all(driver, live, handles, names, step, timeout=15):
    for handle, name in zip(handles, names):
        driver.switch_to.window(handle)
        _, version, _ = live.page(name)
        converge(driver, live, name, version, "shared", f"{step}, tab {name}", timeout=timeout, settle=True)


def check_chain(driver, handle, name):
    """Every changeset the tab applied follows the one before (from == the version shown), or is a reset
    to a newer version: none applied twice, none skipped."""
    driver.switch_to.window(handle)
    initial, patches = driver.execute_script("return [window.__initial, window.__patches]")
    assert initial is not None, f"tab {name}: the prelude saw no list root"
    version = initial
    for list_name, start, end, reset in patches:
        assert list_name == name, f"tab {name}: a changeset of {list_name}"
        assert end > version, f"tab {name}: applied {start}->{end} at version {version} (twice): {patches}"
        assert reset or start == version, f"tab {name}: applied {start}->{end} at version {version} (a gap): {patches}"
        version = end
    return patches


def posts(live, since=0):
    """The POST /events/TOKEN requests in the access log from line `since` on: [status]."""
    return [int(m.group(1)) for line in live.log[since:] for m in [re.search(r'"POST /events/[^ "]+ HTTP/1\.[01]" (\d+)', line)] if m]


@pytest.mark.parametrize("mode", ["worker", "leader"])
def test_ten_tabs_share_one_stream(driver, live, tabs, mode):
    names = [f"tab{i}" for i in range(TABS)]
    open_tabs(driver, live, names, mode, tabs)
    converge_all(driver, live, tabs, names, "loaded")
    if mode == "leader":
        leaders = [name for handle, name in zip(tabs, names) if shared(driver, handle)["leader"]]
        assert len(leaders) == 1, f"leaders: {leaders}"
    for round in range(1, 3):
        for name in names:
            live.put(name, state(name, round))
        converge_all(driver, live, tabs, names, f"round {round}")
    assert metric(live, "livelist_streams_open") == 1
    for handle, name in zip(tabs, names):
        assert len(check_chain(driver, handle, name)) >= 2, f"tab {name} applied too few changesets"
        errors = console_errors(driver)
        assert not errors, f"tab {name}: {errors}"
    errors = [line for line in live.log if '"POST /events/' in line and '" 204 ' not in line]
    assert not errors, errors


class Writer(threading.Thread):
    """PUTs a counter into every list every 50 ms until stopped."""

    def __init__(self, live, names):
        super().__init__(daemon=True)
        self.live, self.names, self.done, self.count, self.failure = live, names, threading.Event(), 0, None

    def run(self):
        try:
            while not self.done.is_set():
                self.count += 1
                for name in self.names:
                    self.live.put(name, state(name, 100 + self.count))
                self.done.wait(0.05)
        except BaseException as error:  # reported by stop()
            self.failure = error

    def stop(self):
        self.done.set()
        self.join(30)
        assert self.failure is None, f"the writer failed: {self.failure!r}"


def test_a_new_leader_takes_over_at_once_when_the_leader_tab_closes(driver, live, tabs):
    """Three leaders in turn close while every list is written every 50 ms: each time another tab leads
    within 2 s, and in the end every tab shows its list as the server renders it, having applied each
    changeset once, in order."""
    names = [f"tab{i}" for i in range(TABS)]
    open_tabs(driver, live, names, "leader", tabs)
    alive = list(range(TABS))
    leaders = [i for i in alive if shared(driver, tabs[i])["leader"]]
    assert len(leaders) == 1, f"leaders: {leaders}"
    leader = leaders[0]
    writer = Writer(live, names)
    writer.start()
    try:
        wait_for(lambda: writer.count >= 5, timeout=10, message="the writer's first rounds")
        for handover in range(3):
            driver.switch_to.window(tabs[leader])
            closed = time.time() * 1000
            driver.close()
            alive.remove(leader)

            def new_leader():
                for i in alive:
                    since = shared(driver, tabs[i])["leader"]
                    if since:
                        return i, since
            leader, since = wait_for(new_leader, timeout=10, interval=0.05, message=f"a new leader ({handover + 1})")
            print(f"handover {handover + 1}: tab{leader} took over {since - closed:.0f} ms after the close")
            assert since - closed < 2000, f"the new leader took over {since - closed:.0f} ms after the close"
            # The writes go on through the new leader's stream for a while.
            count = writer.count
            wait_for(lambda: writer.count >= count + 5, timeout=20, message="the writer's rounds after the close")
    finally:
        writer.stop()
    live_tabs, live_names = [tabs[i] for i in alive], [names[i] for i in alive]
    converge_all(driver, live, live_tabs, live_names, "after the leaders left")
    one_stream(live)
    for handle, name in zip(live_tabs, live_names):
        patches = check_chain(driver, handle, name)
        print(f"tab {name}: {len(patches)} changesets applied, {sum(p[3] for p in patches)} resets, "
              f"{sum(p[2] - p[1] > 1 for p in patches)} spanning versions")
        assert len(patches) >= 15, f"tab {name} applied only {patches}"
    assert [i for i in alive if shared(driver, tabs[i])["leader"]] == [leader]


@pytest.mark.parametrize("mode", ["worker", "leader"])
def test_hidden_tabs_leave_the_stream_and_catch_up_when_shown(driver, live, tabs, mode):
    """With real visibility only the active tab streams (livelist.js closes its stream in a hidden tab):
    a tab shown again rejoins the one stream from the version it shows and gets what it missed as one
    changeset."""
    names = ["shown0", "shown1", "shown2"]
    open_tabs(driver, live, names, mode, tabs, visible=False)
    for round in range(1, 3):
        for step in range(2):
            for name in names:
                live.put(name, state(name, 2 * round + step))
        converge_all(driver, live, tabs, names, f"round {round}")
    one_stream(live)
    for handle, name in zip(tabs, names):
        check_chain(driver, handle, name)
    patches = check_chain(driver, tabs[0], names[0])
    assert any(end - start > 1 for _, start, end, _ in patches), f"no catch-up spanning versions: {patches}"


@pytest.mark.parametrize("mode", ["worker", "leader"])
def test_a_tab_behind_the_stream_is_told_to_catch_up(driver, live, tabs, mode):
    """A tab that joins a list which the stream carries at a later version than the tab shows is told to
    resync (GET /lists/NAME/changes?since=V) at once, not at the list's next change."""
    open_tabs(driver, live, ["same", "same"], mode, tabs)
    converge_all(driver, live, tabs, ["same", "same"], "loaded")
    driver.switch_to.window(tabs[1])
    driver.execute_script("LiveList.close()")
    _, version, _ = live.page("same")
    mark = len(live.log)
    for n in range(1, 3):
        live.put("same", state("same", n))
    converge_all(driver, live, tabs[:1], ["same"], "the first tab")
    driver.switch_to.window(tabs[1])
    driver.execute_script("LiveList.connect()")
    converge_all(driver, live, tabs[1:], ["same"], "the tab behind")
    asked = [line for line in live.log[mark:] if f'"GET /lists/same/changes?since={version} HTTP/1.1"' in line]
    assert asked, "the tab behind did not resync:\n" + "\n".join(live.log[mark:])
    for handle in tabs:
        check_chain(driver, handle, "same")


@pytest.mark.parametrize("mode", ["worker", "leader"])
def test_the_shared_stream_comes_back_after_the_server_restarts(driver, live, tabs, mode):
    names = ["back0", "back1", "back2"]
    open_tabs(driver, live, names, mode, tabs)
    live.restart()
    for name in names:
        live.put(name, state(name, 1))
    converge_all(driver, live, tabs, names, "after the restart", timeout=20)
    one_stream(live)
    for handle, name in zip(tabs, names):
        check_chain(driver, handle, name)


def test_a_shared_worker_drops_a_closed_tabs_list_and_adds_a_new_tabs_list(driver, live, tabs):
    names = [f"tab{i}" for i in range(TABS)]
    open_tabs(driver, live, names, "worker", tabs)
    converge_all(driver, live, tabs, names, "loaded")
    # A tab closes: its list leaves the stream (a POST answered 204), the others stay live.
    mark = len(live.log)
    driver.switch_to.window(tabs[5])
    driver.close()
    wait_for(lambda: 204 in posts(live, mark), timeout=10, message="the POST dropping the closed tab's list")
    assert posts(live, mark) == [204], posts(live, mark)
    rest_tabs, rest_names = tabs[:5] + tabs[6:], names[:5] + names[6:]
    for name in names:
        live.put(name, state(name, 1))  # tab5's list too: nobody shows it any more
    converge_all(driver, live, rest_tabs, rest_names, "after the close")
    assert metric(live, "livelist_streams_open") == 1
    # An eleventh tab: its list joins the one stream (its page's own stream lasts until the shared
    # script is loaded: at most one stream more is opened).
    opened, mark = metric(live, "livelist_streams_total"), len(live.log)
    live.put("tab10", state("tab10", 0))
    tabs.append(open_tab(driver, live, "tab10", "worker"))
    wait_for(lambda: (shared(driver, tabs[-1]) or {}).get("mode") == "worker", timeout=10, message="the eleventh tab's worker")
    one_stream(live)
    wait_for(lambda: 204 in posts(live, mark), timeout=10, message="the POST adding the eleventh tab's list")
    all_tabs, all_names = rest_tabs + [tabs[-1]], rest_names + ["tab10"]
    for name in all_names:
        live.put(name, state(name, 2))
    converge_all(driver, live, all_tabs, all_names, "with the eleventh tab")
    assert metric(live, "livelist_streams_open") == 1
    assert metric(live, "livelist_streams_total") - opened <= 1, "a second shared stream was opened"
    assert posts(live, mark) == [204], posts(live, mark)
    for handle, name in zip(all_tabs, all_names):
        check_chain(driver, handle, name)


def test_a_page_with_connect_off_opens_nothing(driver, tabs):
    if not test_live.BINARY.exists():
        pytest.skip(f"no livelist binary at {test_live.BINARY} (set LIVELIST_BINARY)")
    templates = Path(tempfile.mkdtemp(prefix="livelist-templates-"))
    shutil.copytree(REPO / "Templates", templates, dirs_exist_ok=True)
    page = (templates / "page.mustache").read_text(encoding="utf-8")
    page = page.replace('<meta charset="utf-8">', '<meta charset="utf-8">\n<meta name="livelist-connect" content="off">', 1)
    page = page.replace("</head>", '<script src="/livelist-shared.js" defer></script>\n</head>', 1)
    (templates / "page.mustache").write_text(page, encoding="utf-8")
    live = Livelist("--access-log", "--templates", str(templates))  # the last --templates counts
    try:
        live.put("quiet", state("quiet", 0))
        for _ in range(2):
            tabs.append(open_tab(driver, live, "quiet", "worker"))
            wait_for(lambda: driver.execute_script("return document.readyState") == "complete", message="the page loaded")
            loaded = driver.execute_script(
                "return performance.getEntriesByType('resource').some(e => e.name.endsWith('/livelist-shared.js'))")
            assert loaded, "the page did not load livelist-shared.js"
        # What would open a stream (a worker, a leader, livelist.js) has had its chance: nothing did.
        time.sleep(1.5)
        for handle in tabs:
            driver.switch_to.window(handle)
            assert driver.execute_script("return [window.LiveList.shared, window.LiveList.options.ES]") == [None, None]
        assert metric(live, "livelist_streams_total") == 0
        assert not [line for line in live.log if "/events" in line], [line for line in live.log if "/events" in line]
    finally:
        live.close()
        shutil.rmtree(templates, ignore_errors=True)


@pytest.mark.parametrize("mode", ["worker", "leader"])
def test_tabs_of_a_windowed_list_share_the_stream_and_its_changes(driver, live, tabs, mode):
    """Two tabs of a list long enough to be windowed (2,000 cells) share one stream; a patch reaches both
    windows' models, and the cell on screen shows its new text in each."""
    name = "long"
    cells = [{"id": f"c{i}", "text": f"Row {i}"} for i in range(2_000)]
    live.put(name, {"sections": [{"id": "s", "cells": cells}]})
    for _ in range(2):
        tabs.append(open_tab(driver, live, name, mode))
    for handle in tabs:
        wait_for(lambda: (shared(driver, handle) or {}).get("mode") == mode, timeout=10, message=f"the shared stream ({mode})")
        wait_for(lambda: driver.execute_script("return !!(window.LLW && LLW.keys(document.querySelector('[data-list]')))"),
                 timeout=15, message="the window's keys loaded")
    one_stream(live)
    patch = {"ops": [{"op": "remove", "cell": "c5"}, {"op": "update", "cell": {"id": "c1", "text": "Changed"}},
                     {"op": "upsert", "cell": {"id": "late", "text": "Late"}, "section": "s", "position": {"after": "c1999"}}]}
    status, _, body = live.request("PATCH", f"/lists/{name}", json.dumps(patch).encode(), {"Content-Type": "application/json"})
    assert status == 200, body[:300]
    expected = [c["id"] for c in cells if c["id"] != "c5"] + ["late"]
    look = ("const r = document.querySelector('[data-list]'), c = r.querySelector('[data-cell=\"c1\"]');"
            "return [LLW.keys(r), c && c.textContent]")
    for handle in tabs:
        driver.switch_to.window(handle)
        wait_for(lambda: driver.execute_script(look) == [expected, "Changed"], timeout=15,
                 message=f"tab {handle}: the patch in the model and on screen")
    one_stream(live)

