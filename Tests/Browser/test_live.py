"""The client against the real server: the `livelist` binary on a free loopback port with its own data
directory, driven by Chromium. Equivalence over hundreds of seeded random states PUT while the page is
open (under the server's real Content-Security-Policy, without console errors), reconnection across a
restart of the binary, the todo demo without JavaScript, focus and typed text surviving live moves, two
windows in sync, and the time to apply a real 1,000-op changeset (reported, not asserted).

Environment: LIVELIST_BINARY (default .build/debug/livelist, built when missing), LIVELIST_LIVE_SEED
(the random states' seed; printed, and named in every failure)."""
import http.client
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import BENCHMARKS, REPO, wait_for

BINARY = Path(os.environ.get("LIVELIST_BINARY", REPO / ".build" / "debug" / "livelist"))
BANNER = re.compile(r"serving on http://127\.0\.0\.1:(\d+)")
SEED = int(os.environ.get("LIVELIST_LIVE_SEED") or random.SystemRandom().randrange(1 << 32))


# --- The real server -----------------------------------------------------------------------------------

def ensure_binary():
    if BINARY.exists():
        return
    command = ["swift", "build", "--product", "livelist"]
    if shutil.which("flock"):
        command = ["flock", "/tmp/livelist-swift.lock"] + command
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1200)
    if result.returncode != 0 or not BINARY.exists():
        pytest.fail(f"building livelist failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def request_on(port, method, path, body=None, headers=None):
    """One request to 127.0.0.1:`port` on its own connection: (status, headers, body bytes)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        data = body if body is None or isinstance(body, bytes) else body.encode()
        connection.request(method, path, body=data, headers=dict(headers or {}, Connection="close"))
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


class Livelist:
    """One `livelist` process at a time over one data directory; `restart` keeps the directory and port."""

    def __init__(self, *flags):
        ensure_binary()
        self.flags, self.data = list(flags), tempfile.mkdtemp(prefix="livelist-live-")
        self.process, self.port, self.log = None, 0, []
        self.start()

    def start(self, port=0):
        self.log = log = []
        banner = threading.Event()
        self.process = process = subprocess.Popen(
            [str(BINARY), "--port", str(port), "--data", self.data, "--public", str(REPO / "Public"),
             "--templates", str(REPO / "Templates"), "--heartbeat", "1", "--demo-interval", "0.5"] + self.flags,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")

        def drain():  # keeps reading so the server never blocks on a full pipe
            for line in process.stderr:
                log.append(line.rstrip("\n"))
                if BANNER.search(line):
                    banner.set()
            banner.set()

        threading.Thread(target=drain, daemon=True).start()
        if not banner.wait(20) or process.poll() is not None:
            self.stop()
            raise AssertionError("livelist did not start:\n" + "\n".join(log[-20:]))
        self.port = int(next(BANNER.search(line).group(1) for line in log if BANNER.search(line)))
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self, sig=signal.SIGTERM):
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
                raise AssertionError(f"livelist did not stop within 10 s of signal {sig}")

    def restart(self):
        port = self.port
        self.stop()
        self.start(port)
        assert self.port == port

    def close(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.data, ignore_errors=True)

    def request(self, method, path, body=None, headers=None):
        """One request on its own connection: (status, headers, body bytes)."""
        return request_on(self.port, method, path, body, headers)

    def put(self, name, state, ascii_only=True):
        body = json.dumps(state, ensure_ascii=ascii_only)
        status, _, answer = self.request("PUT", f"/lists/{quote(name)}", body.encode(), {"Content-Type": "application/json"})
        assert status in (200, 201), f"PUT {name} answered {status}: {answer[:500]!r}"
        return json.loads(answer)

    def page(self, name, headers=None):
        """The page as the server renders it now: (its list root's HTML, version, CSP, headers)."""
        status, headers, body = self.request("GET", f"/lists/{quote(name)}", headers=headers or {"Accept": "text/html"})
        assert status == 200, f"GET /lists/{name} answered {status}"
        text = body.decode()
        start, end = text.index('<div class="livelist"'), text.rindex("</main>")
        root = text[start:end].strip()
        version = int(re.match(r'<div class="livelist"[^>]* data-version="(\d+)"', root).group(1))
        return root, version, headers


@pytest.fixture
def live():
    server = Livelist()
    yield server
    server.close()


# --- Random states with hostile keys and text ----------------------------------------------------------

HOSTILE = ['"', "'", "<", ">", "&", "&amp;", "&#0;", "<b>", "</li>", "<script>", "<!--", "-->", " ", "  ", "\t", "\n",
           "\r\n", "\u2028", "\u2029", "\u00a0", "😀", "👩‍👩‍👧", "é", "e\u0301", "\\", "${x}", "]]>", "=", "`", "?a=1&b"]


class States:
    """A seeded walk through PUT bodies: every step a few edits of sections, cells, headers and footers."""

    def __init__(self, seed, max_sections=7, max_cells=40):
        self.rng, self.serial = random.Random(seed), 0
        self.max_sections, self.max_cells = max_sections, max_cells
        self.sections = []

    def text(self, plain=""):
        rng = self.rng
        return plain + "".join(rng.choice(HOSTILE + ["milk", "x", " and "]) for _ in range(rng.randint(0, 4)))

    def key(self, kind):
        self.serial += 1
        return f"{self.rng.choice(HOSTILE)}{kind}{self.serial}{self.text()}"

    def new_cell(self):
        cell = {"id": self.key("c"), "text": self.text("item ")}
        if self.rng.random() < 0.4:
            cell["detail"] = self.text()
        return cell

    def new_section(self):
        section = {"id": self.key("s"), "cells": []}
        if self.rng.random() < 0.6:
            section["header"] = self.text("head ")
        if self.rng.random() < 0.3:
            section["footer"] = self.text("foot ")
        return section

    def cells(self):
        return [(s, c) for s in self.sections for c in s["cells"]]

    def edit(self):
        rng, sections = self.rng, self.sections
        count = len(self.cells())
        kinds = ["insertSection", "deleteSection", "moveSection", "insert", "insert", "delete", "move", "move",
                 "crossMove", "text", "header", "footer"]
        kind = rng.choice(kinds)
        if kind == "insertSection" and len(sections) < self.max_sections or not sections:
            section = self.new_section()
            # Some of its cells come from other sections: cross-section moves into a new section.
            for source, cell in rng.sample(self.cells(), min(count, rng.randint(0, 2))):
                source["cells"].remove(cell)
                section["cells"].append(cell)
            section["cells"] += [self.new_cell() for _ in range(rng.randint(0, 3))]
            sections.insert(rng.randint(0, len(sections)), section)
        elif kind == "deleteSection":
            gone = sections.pop(rng.randrange(len(sections)))
            # Some of its cells survive elsewhere: cross-section moves out of a deleted section.
            for cell in gone["cells"]:
                if sections and rng.random() < 0.4:
                    target = rng.choice(sections)["cells"]
                    target.insert(rng.randint(0, len(target)), cell)
        elif kind == "moveSection":
            sections.insert(rng.randint(0, len(sections) - 1), sections.pop(rng.randrange(len(sections))))
        elif kind == "insert" and count < self.max_cells:
            target = rng.choice(sections)["cells"]
            for _ in range(rng.randint(1, 3)):
                target.insert(rng.randint(0, len(target)), self.new_cell())
        elif kind in ("delete", "move", "crossMove", "text") and count:
            section, cell = rng.choice(self.cells())
            if kind == "text":
                cell["text" if rng.random() < 0.7 else "detail"] = self.text()
                return
            section["cells"].remove(cell)
            if kind != "delete":
                target = (section if kind == "move" else rng.choice(sections))["cells"]
                target.insert(rng.randint(0, len(target)), cell)
        elif kind in ("header", "footer"):
            section = rng.choice(sections)
            if section.get(kind) is not None and rng.random() < 0.35:
                if rng.random() < 0.5:
                    section[kind] = None  # null and absent are the same
                else:
                    del section[kind]
            else:
                section[kind] = self.text(kind + " ")

    def step(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.02:
            self.sections = []
        elif roll < 0.05:  # a big reshuffle: every cell somewhere else
            everything = [c for _, c in self.cells()]
            rng.shuffle(everything)
            rng.shuffle(self.sections)
            for section in self.sections:
                section["cells"] = []
            for cell in everything:
                if self.sections:
                    rng.choice(self.sections)["cells"].append(cell)
        else:
            for _ in range(rng.randint(1, 4)):
                self.edit()
        return {"sections": json.loads(json.dumps(self.sections))}


# --- In the page ---------------------------------------------------------------------------------------

# Waits (bounded) until the list root shows `version`, then compares it with the server's root at that
# version, both serialised by this browser. With `settle`, keeps comparing until equal (animations).
CONVERGED = """
const [name, version, want, timeout, settle, done] = arguments;
const root = [...document.querySelectorAll('[data-list]')].find(r => r.dataset.list === name);
const t = document.createElement('template');
t.innerHTML = want;
const expected = t.content.firstElementChild.outerHTML, end = performance.now() + timeout;
(function poll() {
  const at = root && root.dataset.version, same = at === String(version) && root.outerHTML === expected;
  if (same || performance.now() > end || at === String(version) && !settle)
    return done({version: at, same, got: root ? root.outerHTML : null, want: expected});
  setTimeout(poll, 4);
})();
"""

RECORD = """window.__patches = []; window.__events = [];
for (const t of ['open', 'patch', 'reconnecting', 'reset'])
  document.addEventListener('livelist:' + t, e => { __events.push(t); t === 'patch' && __patches.push(e.detail) });"""


def difference(got, want):
    """Where two serialisations part, with some context."""
    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return f"first difference at {at}:\n  page:  {got[max(0, at - 150):at + 150]!r}\n  fresh: {want[max(0, at - 150):at + 150]!r}"


def converge(browser, live, name, version, seed, step, timeout=5.0, settle=False):
    """The page shows `version` within `timeout` and its root equals a freshly rendered page's."""
    want, fresh_version, _ = live.page(name)
    assert fresh_version == version, f"seed {seed}, step {step}: the server renders version {fresh_version}, expected {version}"
    result = browser.execute_async_script(CONVERGED, name, version, want, timeout * 1000, settle)
    assert result["version"] == str(version), \
        f"seed {seed}, step {step}: the page is at version {result['version']} after {timeout} s, the server at {version}"
    assert result["same"], f"seed {seed}, step {step}, version {version}: the page differs from a fresh one; " + \
        difference(result["got"], result["want"])


def open_live(browser, live, name):
    browser.get(f"{live.base}/lists/{quote(name)}")
    wait_for(lambda: browser.execute_script("return !!window.LiveList && !!LiveList.state(document.querySelector('[data-list]'))"),
             timeout=10, message="livelist.js running on the page")
    browser.execute_script(RECORD)


def console_errors(browser):
    """The page's console errors, except the browser's own request for /favicon.ico, which the server
    answers 404 (the page names no icon)."""
    return [entry for entry in browser.get_log("browser")
            if entry["level"] in ("SEVERE", "ERROR") and "/favicon.ico " not in entry["message"]]


def reduce_motion(browser, reduce=True):
    features = [{"name": "prefers-reduced-motion", "value": "reduce"}] if reduce else []
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": features})


# --- 1. Equivalence over random states -----------------------------------------------------------------

STATES = 300  # states that change the list, each one checked
ANIMATED = 12


def test_random_states_put_to_the_real_server_give_a_fresh_page(browser, live):
    """Every state PUT while the page is open reaches it, and the page then equals a freshly loaded one.
    The bulk runs under prefers-reduced-motion, so the DOM must be exact the moment the version lands;
    the last states animate and must settle to the same DOM. The page runs under the server's real CSP
    and logs no errors."""
    print(f"LIVELIST_LIVE_SEED={SEED}")
    states, name = States(SEED), "random-states"
    version = live.put(name, states.step())["version"]
    _, _, headers = live.page(name)
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp
    reduce_motion(browser)
    browser.get_log("browser")
    open_live(browser, live, name)
    converge(browser, live, name, version, SEED, 0)
    kinds, started, changed, step = {}, time.time(), 0, 0
    while changed < STATES and step < 2 * STATES:  # a walk step may change nothing: no new version
        step += 1
        animated = changed >= STATES - ANIMATED
        if changed == STATES - ANIMATED:  # the last few animate, and must settle to the same DOM
            reduce_motion(browser, False)
        changeset = live.put(name, states.step(), ascii_only=step % 2 == 0)
        for op in changeset["ops"]:
            kinds[op["op"]] = kinds.get(op["op"], 0) + 1
        changed += changeset["version"] != version
        version = changeset["version"]
        converge(browser, live, name, version, SEED, step, settle=animated)
    elapsed = time.time() - started
    assert set(kinds) >= {"insert", "delete", "move", "reload", "insertSection", "deleteSection", "moveSection",
                          "reloadSection"}, f"seed {SEED}: the walk missed some op kinds: {kinds}"
    patches = browser.execute_script("return __patches.length")
    assert changed >= STATES and patches == changed, f"seed {SEED}: {patches} changesets reached the page for {changed} changes"
    assert browser.execute_script("return document.querySelectorAll('.livelist-move, .livelist-enter, .livelist-reload').length") == 0
    errors = console_errors(browser)
    assert not errors, f"seed {SEED}: console errors under the server's CSP: {errors}"
    BENCHMARKS.append(f"real server: {STATES} random states PUT and checked in the page in {elapsed:.1f} s "
                      f"(seed {SEED}; ops: {json.dumps(kinds, sort_keys=True)})")


# --- 2. A restart of the server mid-run ----------------------------------------------------------------

def test_the_page_reconnects_after_the_server_restarts(browser, live):
    """SIGTERM while the page streams, a new process on the same port and data directory, changes made
    before the page is back: the page reconnects by itself (no reload) and converges."""
    seed = SEED + 1
    print(f"LIVELIST_LIVE_SEED={SEED} (restart walk {seed})")
    states, name = States(seed), "restarts"
    reduce_motion(browser)
    version = live.put(name, states.step())["version"]
    open_live(browser, live, name)
    browser.execute_script("window.__mark = 1")
    rng, step = random.Random(seed), 0

    def put_and_check():
        nonlocal step, version
        step += 1
        version = live.put(name, states.step())["version"]
        converge(browser, live, name, version, seed, step)

    for restart in range(2):
        for _ in range(rng.randint(2, 6)):
            put_and_check()
        while not states.sections:  # an empty list across a restart is the next test's case
            put_and_check()
        live.restart()
        # Changes made while the page is still away (its EventSource waits out the server's retry).
        for _ in range(rng.randint(0, 3)):
            step += 1
            version = live.put(name, states.step())["version"]
        converge(browser, live, name, version, seed, step, timeout=15)
        for _ in range(3):
            put_and_check()
    events = browser.execute_script("return __events")
    assert events.count("reconnecting") >= 2 and events.count("open") >= 2, events
    assert browser.execute_script("return window.__mark") == 1, "the page reloaded instead of reconnecting"


def test_a_list_emptied_before_a_restart_keeps_its_version(browser, live):
    """A JSON list whose last PUT emptied it must come back at that version after a restart; else a page
    that saw it ignores the next versions as duplicates and shows a wrong list."""
    name, cell = "emptied", {"id": "a", "text": "A"}
    live.put(name, {"sections": [{"id": "s", "cells": [cell]}]})
    emptied = live.put(name, {"sections": []})["version"]
    reduce_motion(browser)
    open_live(browser, live, name)
    converge(browser, live, name, emptied, SEED, "emptied")
    live.restart()
    _, version, _ = live.page(name)
    assert version == emptied, f"PUT {{\"sections\":[]}} made version {emptied}; after a restart the server is at {version}"
    version = live.put(name, {"sections": [{"id": "t", "cells": [cell]}]})["version"]
    converge(browser, live, name, version, SEED, "after the restart", timeout=15)


# --- The todo demo -------------------------------------------------------------------------------------

def cell_keys(browser, section):
    return browser.execute_script(
        "return [...document.querySelectorAll(`[data-section=\"${arguments[0]}\"] [data-cell]`)].map(c => c.dataset.cell)", section)


def act(browser, live, type, cell=None, **fields):
    """An action through the actions route with the page's session cookie and CSRF token (as the page's
    own script would send it)."""
    cookie = browser.get_cookie("livelist_session")["value"]
    token = browser.execute_script("return document.querySelector('meta[name=\"livelist-csrf\"]').content")
    body = dict(fields, type=type, **({"cell": cell} if cell is not None else {}))
    status, _, answer = live.request("POST", "/lists/todo/actions", json.dumps(body),
                                     {"Content-Type": "application/json", "X-CSRF-Token": token,
                                      "Cookie": f"livelist_session={cookie}"})
    assert status == 204, f"POST /lists/todo/actions {body} answered {status}: {answer[:300]!r}"


@pytest.fixture(scope="module")
def nojs_driver():
    """A second Chromium with JavaScript switched off."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1000,800", "--disable-extensions"):
        options.add_argument(argument)
    options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    browser = webdriver.Chrome(service=Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")),
                               options=options)
    browser.set_page_load_timeout(20)
    yield browser
    browser.quit()


def test_the_todo_demo_works_without_javascript(nojs_driver, live):
    """Every button is a submit button of the page's actions form: a POST, a 303 back to the page, and
    the page as the server renders it now."""
    from selenium.webdriver.common.by import By

    browser = nojs_driver
    browser.get(f"{live.base}/lists/todo")
    # The driver's own scripts still run; the page's do not.
    assert browser.execute_script("return typeof window.LiveList") == "undefined", "JavaScript is on"
    items = lambda section: browser.execute_script(
        "return [...document.querySelectorAll(`[data-section=${arguments[0]}] [data-cell]`)]"
        ".map(c => [c.dataset.cell, c.querySelector('input.title').getAttribute('value')])", section)

    def submit(button, expect, message):
        """Clicks `button`, then waits for the next page (not the old one) to satisfy `expect`."""
        browser.execute_script("window.__old = 1")
        browser.find_element(By.CSS_SELECTOR, f"button[value='{button}']").click()
        def arrived():
            try:
                return browser.execute_script("return !window.__old && document.readyState == 'complete'") and expect()
            except Exception:  # the old page went away under the script
                return False
        wait_for(arrived, timeout=10, message=message)
        assert browser.current_url == f"{live.base}/lists/todo"

    before = items("open")
    assert len(before) == 2 and len(items("done")) == 1, before  # the demo's first state
    title = 'Buy <milk> & "eggs" élan'
    browser.find_element(By.CSS_SELECTOR, "[data-section=open] footer input[name=text]").send_keys(title)
    submit("add:", lambda: len(items("open")) == 3, "the added item after the redirect")
    key, value = items("open")[-1]
    assert value == title
    # Its toggle moves it to the done section; an up button reorders the open ones.
    submit(f"toggle:{key}", lambda: key in [k for k, _ in items("done")], "the toggled item in the done section")
    assert items("open") == before
    submit(f"up:{before[1][0]}", lambda: items("open") == before[::-1], "the reordered items")
    header = browser.execute_script("return document.querySelector('[data-section=done] header').textContent")
    assert header == "Done (2)", header


@pytest.mark.parametrize("move_before", [True, False], ids=["moveBefore", "insertBefore"])
def test_focus_and_typed_text_survive_live_moves(browser, live, move_before):
    from selenium.webdriver.common.by import By

    reduce_motion(browser, False)
    open_live(browser, live, "todo")
    browser.execute_script("LiveList.options.moveBefore = arguments[0]", move_before)
    for title in ("four", "five", "six"):
        act(browser, live, "add", text=title)
    wait_for(lambda: len(cell_keys(browser, "open")) == 5, message="the added items")
    keys = cell_keys(browser, "open")
    ours = keys[-1]
    field = browser.find_element(By.CSS_SELECTOR, f"[data-cell='{ours}'] input.title")
    field.click()
    field.send_keys(" typed")
    browser.execute_script("const a = document.activeElement; a.__mark = 1; a.setSelectionRange(2, 4)")
    kept = "return [document.activeElement.__mark, document.activeElement.value, document.activeElement.selectionStart, " \
           "document.activeElement.selectionEnd, document.activeElement.closest('[data-cell]').dataset.cell]"
    state = [1, "six typed", 2, 4, ours]
    for step in range(4):  # to the top, one place at a time
        act(browser, live, "up", ours)
        wait_for(lambda: cell_keys(browser, "open").index(ours) == 3 - step, message=f"move {step + 1}")
        assert browser.execute_script(kept) == state, f"after move {step + 1}"
    moved = browser.execute_script("return __patches.flatMap(p => p.ops).filter(o => o.op == 'move' && o.cell == arguments[0]).length", ours)
    assert moved >= 1, "the server never moved our cell itself: " + json.dumps(browser.execute_script("return __patches"))[:2000]
    # Across sections: the cell moves to "done" and its reload waits while the user is in it.
    act(browser, live, "toggle", ours)
    wait_for(lambda: ours in cell_keys(browser, "done"), message="the cross-section move")
    assert browser.execute_script(kept) == state, "after the cross-section move"
    time.sleep(0.5)
    assert browser.execute_script(kept) == state, "after the animations"
    # Leaving the cell lets the held reload land: the page equals a fresh one.
    browser.execute_script("document.activeElement.blur()")
    _, version, _ = live.page("todo")
    converge(browser, live, "todo", version, SEED, "after blur", settle=True)
    assert not console_errors(browser)


def test_two_windows_stay_in_sync(browser, live):
    from selenium.webdriver.common.by import By

    reduce_motion(browser)
    first = browser.current_window_handle
    open_live(browser, live, "todo")
    browser.switch_to.new_window("window")
    second = browser.current_window_handle
    try:
        open_live(browser, live, "todo")
        reduce_motion(browser)
        browser.execute_script("window.__mark = 1")
        for acting, watching, key in ((first, second, "2"), (second, first, "1")):
            browser.switch_to.window(acting)
            assert browser.execute_script("return document.visibilityState") == "visible"
            browser.execute_script("window.__acting = 1")
            # The checkbox posts the toggle with fetch: no navigation, the change comes back as a patch.
            browser.find_element(By.CSS_SELECTOR, f"[data-cell='{key}'] input[type=checkbox]").click()
            wait_for(lambda: key in cell_keys(browser, "done" if key == "2" else "open"), timeout=10, message="the acting window")
            assert browser.execute_script("return window.__acting") == 1, "the acting window reloaded"
            _, version, _ = live.page("todo")
            browser.switch_to.window(watching)
            if watching == first:
                browser.execute_script("window.__mark = 1")
            converge(browser, live, "todo", version, SEED, f"toggle {key}", timeout=5)
            assert browser.execute_script("return window.__mark") == 1, "the watching window reloaded"
        assert cell_keys(browser, "done") == ["2"] and cell_keys(browser, "open") == ["1", "3"]
    finally:
        browser.switch_to.window(second)
        browser.close()
        browser.switch_to.window(first)


# --- The measurement -----------------------------------------------------------------------------------

# Applies the changeset to copies of the page's list root (in the page, laid out), then to the root
# itself; beside it, replacing a copy's children with the same end state. Times in ms, per trial.
MEASURE = """
const [cs, trials, done] = arguments, root = document.querySelector('[data-list]'), before = root.outerHTML;
const host = document.createElement('div'), out = {apply: [], applyLayout: [], replace: [], replaceLayout: [], ok: true};
root.after(host);
const copy = () => { host.innerHTML = before; const r = host.firstElementChild; r.offsetHeight; return r };
for (let i = 0; i <= trials; i++) {
  const r = i < trials ? copy() : root, t0 = performance.now(), applied = LiveList.apply(r, cs), t1 = performance.now();
  r.offsetHeight;
  const t2 = performance.now();
  out.ok = out.ok && applied;
  if (i == trials) break;
  out.apply.push(t1 - t0); out.applyLayout.push(t2 - t0);
  const after = r.innerHTML, s = copy(), t3 = performance.now();
  s.innerHTML = after;
  const t4 = performance.now(); s.offsetHeight; const t5 = performance.now();
  out.replace.push(t4 - t3); out.replaceLayout.push(t5 - t3);
}
host.remove();
done(out);
"""


@pytest.fixture
def live_whole():
    """The server with windowing off: a 2,000-cell list is rendered whole, as livelist.js applies it."""
    server = Livelist("--window-above", "0")
    yield server
    server.close()


def test_measure_applying_a_real_1000_op_changeset(browser, live_whole):
    """Report only: a 2,000-cell list (not windowed: --window-above 0), then a PUT that deletes, moves
    (also across sections), changes and inserts 250 cells each; the server's changeset is applied in the
    page and timed."""
    live = live_whole
    rng, name = random.Random(SEED), "bench"
    sections = [{"id": f"s{i}", "header": f"Section {i}", "cells": [{"id": f"c{i}-{j}", "text": f"Item {i}-{j}"}
                                                                      for j in range(200)]} for i in range(10)]
    version = live.put(name, {"sections": sections})["version"]
    reduce_motion(browser)
    open_live(browser, live, name)
    converge(browser, live, name, version, SEED, "bench")
    browser.execute_script("LiveList.close()")  # the changeset is applied by hand, timed
    everything = [(s, c) for s in sections for c in s["cells"]]
    picked = rng.sample(everything, 750)
    for s, c in picked[:250]:
        s["cells"].remove(c)
    for s, c in picked[250:500]:
        s["cells"].remove(c)
        target = rng.choice(sections)["cells"]
        target.insert(rng.randint(0, len(target)), c)
    for _, c in picked[500:]:
        c["text"] += " (changed)"
    for n in range(250):
        target = rng.choice(sections)["cells"]
        target.insert(rng.randint(0, len(target)), {"id": f"new{n}", "text": f"New {n}"})
    changeset = live.put(name, {"sections": sections})
    ops = {}
    for op in changeset["ops"]:
        ops[op["op"]] = ops.get(op["op"], 0) + 1
    timings = browser.execute_async_script(MEASURE, changeset, 5)
    assert timings["ok"]
    converge(browser, live, name, changeset["version"], SEED, "bench after")
    t = {key: statistics.median(values) for key, values in timings.items() if key != "ok"}
    BENCHMARKS.append(f"real server: one changeset of {len(changeset['ops'])} ops ({json.dumps(ops, sort_keys=True)}) on "
                      f"2,000 cells, median of 5: applied in {t['apply']:.1f} ms ({t['applyLayout']:.1f} ms with layout); "
                      f"replacing innerHTML with the end state {t['replace']:.1f} ms ({t['replaceLayout']:.1f} ms)")
