"""A sign-out ends the shared stream's lists that the viewer may no longer see, against a real app with
users: Examples/Board (docs/GUIDE.md, "Users and access"), whose `team` list any signed-in user may view
and whose `notes-alice` only alice may. Tabs of one Chromium profile, signed in as alice through the
board's /login form, show those lists over ONE shared event stream (Public/livelist-shared.js, with the
SharedWorker transport and with the leader-tab one). Alice signing out with the board's own "Sign out"
button (POST /logout: `endStreams(ofSessionIn:)`, then `revoke(identity:)`) ends every one of those
lists in every tab at once: each root is emptied, `livelist:denied` is dispatched on it and the page
shows "Offline" (what livelist.js does for a revoked list, docs/PROTOCOL.md, "Streams"); the browser
holds no stream any more and opens none, and changes made to those lists afterwards reach no tab.
Before that, the same user signing out elsewhere (another sign-in of alice's) leaves this browser's
tabs live on the same one stream.

Not shown here: a tab with a public list that keeps updating over the same browser after the sign-out.
Once an app authenticates, a list without a rule is refused, and the board gives no list a rule that
lets nobody signed in view it; the `livelist` binary has no users and no sign-out (its read token
guards every list, the demo lists too, and nothing ends a reader's streams). Testing that half needs
an app (a built binary) with users, a sign-out, and a list whose rule grants `.view` to nil, such as
`app.access("lobby") { _ in .view }`.

A tab hidden at the sign-out (off the stream) and shown after it is refused with a 401, applies
nothing, and shows its list denied: the shared stream's holder asks once for the refused stream's
status and tells each tab (the second test).

Every tab gets test_shared_stream.py's prelude (it records each applied changeset, keeps the tab
"visible" and, for the leader transport, sets `LiveList.options.sharedMode = 'leader'`).

Environment: LIVELIST_BOARD_BINARY, the board app (default Examples/Board/.build/debug/board, as
Tests/Cluster; this file never builds it: it skips without it). The board serves this repository's
Public/ and Templates/ (LIVELIST_PUBLIC, LIVELIST_TEMPLATES)."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import pytest

from conftest import REPO, wait_for
from test_live import BANNER, console_errors, request_on
from test_shared_stream import check_chain, converge_all, metric, one_stream, open_tab, shared, tabs  # noqa: F401 (a fixture)

BOARD = Path(os.environ.get("LIVELIST_BOARD_BINARY", REPO / "Examples" / "Board" / ".build" / "debug" / "board"))
USERS = {"alice": "secret1", "bob": "secret2"}
# The tabs: alice's own notes and the team's, each list in two tabs.
NAMES = ["notes-alice", "team", "notes-alice", "team"]
# The longest a shared stream's holder waits before it opens its stream again after an error
# (livelist-shared.js: 1 s the first time, times 0.75 to 1.25), with room to spare.
REOPEN = 2.5

DENIED = """window.__denied = []; window.__deniedAt = [];
document.addEventListener('livelist:denied', e => { __denied.push(e.target.dataset.list); __deniedAt.push(Date.now()) });"""

# A leader tab may log one of these after the sign-out: its holder drops the denied lists from a stream
# the server has just closed (POST /events/TOKEN), and is told there is no such stream.
DROPPED = re.compile(r"/events/[0-9a-f]+ - Failed to load resource: the server responded with a status of 404\b")

LOOK = """const r = document.querySelector('[data-list]'), s = document.getElementById('livelist-status');
return {list: r && r.dataset.list, version: r && +r.dataset.version, children: r ? r.childElementCount : -1,
        text: r ? r.textContent : '', denied: window.__denied, at: window.__deniedAt, state: s && s.dataset.state,
        status: s && s.textContent, patches: window.__patches.length}"""


class Board:
    """One Examples/Board process on a free loopback port with its own data directory, started as its
    docs say (LIVELIST_HOST, LIVELIST_PORT, LIVELIST_DATA, BOARD_USERS), serving this repository's
    Public/ and Templates/."""

    def __init__(self):
        self.data, self.log = tempfile.mkdtemp(prefix="livelist-board-"), []
        env = dict(os.environ, LIVELIST_HOST="127.0.0.1", LIVELIST_PORT="0", LIVELIST_DATA=self.data,
                   LIVELIST_PUBLIC=str(REPO / "Public"), LIVELIST_TEMPLATES=str(REPO / "Templates"),
                   BOARD_USERS=",".join(f"{user}:{password}" for user, password in USERS.items()))
        banner = threading.Event()
        self.process = process = subprocess.Popen(
            [str(BOARD)], cwd=self.data, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, errors="replace")

        def drain():  # keeps reading so the server never blocks on a full pipe
            for line in process.stderr:
                self.log.append(line.rstrip("\n"))
                if BANNER.search(line):
                    banner.set()
            banner.set()

        threading.Thread(target=drain, daemon=True).start()
        if not banner.wait(30) or process.poll() is not None:
            self.close()
            raise AssertionError("the board did not start:\n" + "\n".join(self.log[-20:]))
        self.port = int(next(BANNER.search(line).group(1) for line in self.log if BANNER.search(line)))
        self.base = f"http://127.0.0.1:{self.port}"

    def close(self):
        try:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(5)
        finally:
            shutil.rmtree(self.data, ignore_errors=True)

    def request(self, method, path, body=None, headers=None):
        """One request on its own connection: (status, headers, body bytes)."""
        return request_on(self.port, method, path, body, headers)


class SignIn:
    """One sign-in of a user from outside the browser (alice's phone, say): its own browser session and
    board cookie. It writes notes with the board's `post` action, and renders pages as that user."""

    def __init__(self, board, user):
        self.board = board
        status, headers, page = board.request("GET", "/login")
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', page.decode())
        assert status == 200 and token, f"GET /login answered {status} without a CSRF field"
        self.cookies = [value.split(";")[0] for value in headers.get_all("Set-Cookie") or []]
        body = urlencode({"csrf": token.group(1), "user": user, "password": USERS[user], "next": "/"})
        status, headers, _ = board.request("POST", "/login", body, self.headers({"Content-Type": "application/x-www-form-urlencoded"}))
        signed = [value.split(";")[0] for value in headers.get_all("Set-Cookie") or [] if value.startswith("livelist_signin=")]
        assert status == 303 and signed, f"{user} signing in answered {status}"
        self.cookies += signed

    def headers(self, more=None):
        return dict(more or {}, Cookie="; ".join(self.cookies))

    def rendered(self, name):
        """The page of `name` as the board renders it for this sign-in now: (its list root, version,
        headers, the page's CSRF token)."""
        status, headers, body = self.board.request("GET", f"/lists/{quote(name)}", headers=self.headers({"Accept": "text/html"}))
        assert status == 200, f"GET /lists/{name} answered {status}"
        text = body.decode()
        root = text[text.index('<div class="livelist"'):text.rindex("</main>")].strip()
        version = int(re.match(r'<div class="livelist"[^>]* data-version="(\d+)"', root).group(1))
        token = re.search(r'<meta name="livelist-csrf" content="([^"]+)"', text)
        assert token, f"the page of {name} has no CSRF token"
        return root, version, headers, token.group(1)

    def page(self, name):
        """(list root, version, headers), as test_live.Livelist.page: what converge() compares with."""
        return self.rendered(name)[:3]

    def post(self, name, text):
        """Posts a note to `name` and returns the version the board then renders (past the one before)."""
        _, before, _, csrf = self.rendered(name)
        form = urlencode({"csrf": csrf, "action": "post:", "text": text})
        status, _, reply = self.board.request("POST", f"/lists/{quote(name)}/actions", form, self.headers(
            {"Content-Type": "application/x-www-form-urlencoded", "LiveList-Action": "1"}))
        assert status == 204, f"posting to {name} answered {status}: {reply[:300]!r}"
        return wait_for(lambda: (lambda v: v if v > before else None)(self.page(name)[1]), timeout=5,
                        message=f"the board rendering {name} past version {before}")

    def sign_out(self):
        status, _, page = self.board.request("GET", "/", headers=self.headers())
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', page.decode())
        assert status == 200 and token, f"GET / answered {status} without the sign-out form"
        status, _, _ = self.board.request("POST", "/logout", urlencode({"csrf": token.group(1)}),
                                          self.headers({"Content-Type": "application/x-www-form-urlencoded"}))
        assert status == 303, f"signing out answered {status}"


@pytest.fixture
def board(driver):
    """The board, and a browser profile without the cookies of other tests' servers (cookies do not
    tell ports apart) before and after."""
    if not BOARD.exists():
        pytest.skip(f"no board binary at {BOARD} (set LIVELIST_BOARD_BINARY)")
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.get_log("browser")  # what earlier tests left
    server = Board()
    if server.request("POST", "/events/none")[0] == 405:
        server.close()
        pytest.skip(f"the board at {BOARD} predates the shared stream (no POST /events/TOKEN): rebuild it")
    yield server
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.get_log("browser")  # the refusals this test asked for, once checked
    server.close()


def sign_in_in_the_browser(driver, board, tabs, user):
    """A new tab signs in with the board's /login form; its handle, on the board's home page."""
    from selenium.webdriver.common.by import By

    driver.switch_to.new_window("tab")
    tabs.append(driver.current_window_handle)
    driver.get(f"{board.base}/login")
    driver.find_element(By.NAME, "user").send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(USERS[user])
    driver.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
    wait_for(lambda: urlsplit(driver.current_url).path == "/" and driver.execute_script(
        "const h = document.querySelector('h1'); return h && h.textContent") == f"Signed in as {user}",
        timeout=10, message=f"the home page signed in as {user}")
    return driver.current_window_handle


def refusals(board):
    """Requests the board refused for want of a signed-in viewer."""
    status, _, body = board.request("GET", "/metrics")
    assert status == 200, f"GET /metrics answered {status}"
    return int(re.search(r'^livelist_access_refusals_total\{kind="unauthenticated"\} (\d+)$', body.decode(), re.M).group(1))


def look(driver, handle):
    driver.switch_to.window(handle)
    return driver.execute_script(LOOK)


def no_stream_opens(board, opened, message):
    """For as long as a shared stream would take to open again, none is open, and the board opened none
    since it had opened `opened`."""
    settled = time.time() + REOPEN
    while time.time() < settled:
        assert metric(board, "livelist_streams_open") == 0, message
        time.sleep(0.1)
    assert metric(board, "livelist_streams_total") == opened, message


@pytest.mark.parametrize("mode", ["worker", "leader"])
def test_signing_out_ends_every_restricted_list_of_the_shared_stream(driver, board, tabs, mode):
    """Four tabs signed in as alice (her notes twice, the team's twice) share one stream. Alice signing
    out on another of her sign-ins leaves them live on that stream; alice signing out in this browser
    ends both lists in every tab within 2 s (emptied, `livelist:denied`, "Offline"), the server counts
    exactly those two lists of one stream denied, the browser holds and opens no stream after, and
    notes posted afterwards reach no tab."""
    from selenium.webdriver.common.by import By

    writer, phone = SignIn(board, "alice"), SignIn(board, "alice")
    home = sign_in_in_the_browser(driver, board, tabs, "alice")
    writer.post("team", "before the tabs")
    handles = []
    for name in NAMES:
        handles.append(open_tab(driver, board, name, mode))
        driver.execute_script(DENIED)
    tabs.extend(handles)
    for handle, name in zip(handles, NAMES):
        wait_for(lambda: (shared(driver, handle) or {}).get("mode") == mode, timeout=10,
                 message=f"livelist-shared.js in {mode} mode in the tab of {name}")
    one_stream(board)
    converge_all(driver, writer, handles, NAMES, "loaded")
    for name in sorted(set(NAMES)):
        writer.post(name, f"{name} while signed in")
    converge_all(driver, writer, handles, NAMES, "signed in")
    assert metric(board, "livelist_streams_open") == 1

    # Another sign-in of alice's ends: `revoke(identity: "alice")` re-checks this browser's stream too,
    # which still finds alice, and it goes on: the same stream, no new one, no list denied.
    opened, denied = metric(board, "livelist_streams_total"), metric(board, "livelist_streams_denied_total")
    phone.sign_out()
    for name in sorted(set(NAMES)):
        writer.post(name, f"{name} after the phone signed out")
    converge_all(driver, writer, handles, NAMES, "after another sign-in of alice's ended")
    assert metric(board, "livelist_streams_open") == 1
    assert metric(board, "livelist_streams_total") == opened, "the stream was ended by another sign-in's sign-out"
    assert metric(board, "livelist_streams_denied_total") == denied
    for handle, name in zip(handles, NAMES):
        shown = look(driver, handle)
        assert shown["denied"] == [] and shown["children"] > 0, f"tab {name}: {shown}"
        assert len(check_chain(driver, handle, name)) >= 2, f"tab {name} applied too few changesets"

    # Alice signs out in this browser, with the board's own button, in the tab of the home page.
    before = {handle: look(driver, handle) for handle in handles}
    driver.switch_to.window(home)
    started = time.time()
    driver.find_element(By.CSS_SELECTOR, "form[action='/logout'] button").click()
    wait_for(lambda: urlsplit(driver.current_url).path == "/login", timeout=10, message="the sign-out's redirect to /login")
    for handle, name in zip(handles, NAMES):
        driver.switch_to.window(handle)
        shown = wait_for(lambda: (lambda s: s if s["denied"] and s["children"] == 0 and s["state"] == "offline" else None)(
            driver.execute_script(LOOK)), timeout=10, interval=0.05, message=f"tab {name} showing its list revoked")
        took = shown["at"][0] / 1000 - started
        print(f"tab {name} ({mode}): denied {took * 1000:.0f} ms after the click")
        assert took < 2, f"tab {name} was denied {took:.2f} s after the click"
        assert shown["denied"] == [name], f"tab {name}: livelist:denied for {shown['denied']}"
        assert shown["text"] == "" and shown["status"] == "Offline", f"tab {name}: {shown}"
        assert shown["version"] == before[handle]["version"] and shown["patches"] == before[handle]["patches"], \
            f"tab {name} applied a changeset with its denial: {before[handle]} then {shown}"
    wait_for(lambda: metric(board, "livelist_streams_open") == 0, timeout=5, interval=0.05,
             message="the browser's stream closing")
    # One stream held both lists: each denied once.
    assert metric(board, "livelist_streams_denied_total") - denied == len(set(NAMES))

    # Later notes to both lists: the board renders them (alice's other sign-in may), and no tab gets
    # them. The browser holds no stream, and in the time its shared stream would take to open again
    # it opens none.
    latest = {name: writer.post(name, f"{name} after alice signed out here") for name in sorted(set(NAMES))}
    no_stream_opens(board, opened, "the browser opened a stream after signing out")
    for handle, name in zip(handles, NAMES):
        shown = look(driver, handle)
        assert shown["version"] < latest[name], f"tab {name} reached version {shown['version']} after signing out"
        assert shown["children"] == 0 and shown["text"] == "" and shown["denied"] == [name], f"tab {name}: {shown}"
        assert shown["patches"] == before[handle]["patches"], f"tab {name} applied a changeset after signing out"
        check_chain(driver, handle, name)
        errors = [e for e in console_errors(driver) if not DROPPED.search(e["message"])]
        assert not errors, f"tab {name}: {errors}"
    # And the board now refuses this browser's requests for those lists: nobody is signed in.
    for handle, name in zip(handles, NAMES):
        driver.switch_to.window(handle)
        status = driver.execute_script(
            "return fetch(arguments[0], {headers: {Accept: 'application/json'}}).then(r => r.status)", f"/lists/{name}/changes?since=0")
        assert status == 401, f"tab {name}: GET /lists/{name}/changes answered {status} after signing out"


@pytest.mark.parametrize("mode", ["worker", "leader"])
def test_a_tab_hidden_at_the_sign_out_gets_nothing_once_shown(driver, board, tabs, mode):
    """With real visibility, alice's two list tabs are hidden (so off the stream) while she signs out in
    the home page's tab. Shown again, her notes' tab asks the shared stream for its list; the board
    refuses it (nobody signed in), no stream opens, and the tab applies none of the notes posted after
    the sign-out. As docs/PROTOCOL.md says, a refusal met on reconnecting empties the list as `denied`
    does: the stream's holder, refused, asks once for the status and tells the tab its list is denied."""
    from selenium.webdriver.common.by import By

    writer = SignIn(board, "alice")
    home = sign_in_in_the_browser(driver, board, tabs, "alice")
    names = ["notes-alice", "team"]
    handles = []
    for name in names:
        handles.append(open_tab(driver, board, name, mode, visible=False))
        driver.execute_script(DENIED)
    tabs.extend(handles)
    for handle, name in zip(handles, names):
        wait_for(lambda: (shared(driver, handle) or {}).get("mode") == mode, timeout=10,
                 message=f"livelist-shared.js in {mode} mode in the tab of {name}")
    for name in names:
        writer.post(name, f"{name} while signed in")
    converge_all(driver, writer, handles, names, "signed in")
    before = {handle: look(driver, handle) for handle in handles}
    # The home page's tab in front: the list tabs are hidden, and leave the stream.
    driver.switch_to.window(home)
    wait_for(lambda: metric(board, "livelist_streams_open") == 0, timeout=10, interval=0.05,
             message="the hidden tabs leaving the stream")
    driver.find_element(By.CSS_SELECTOR, "form[action='/logout'] button").click()
    wait_for(lambda: urlsplit(driver.current_url).path == "/login", timeout=10, message="the sign-out's redirect to /login")
    latest = {name: writer.post(name, f"{name} after alice signed out") for name in names}
    opened, refused = metric(board, "livelist_streams_total"), refusals(board)

    # Her notes' tab in front: it asks, and is refused; it gets nothing of the notes since.
    shown_handle = handles[0]
    driver.switch_to.window(shown_handle)
    wait_for(lambda: refusals(board) > refused, timeout=10, interval=0.05,
             message="the shown tab's request for its list (refused)")
    no_stream_opens(board, opened, "a stream opened for the shown tab after signing out")
    # (Looking at the team's tab shows it too: it was hidden until then.)
    for handle, name in zip(handles, names):
        shown = look(driver, handle)
        assert shown["version"] == before[handle]["version"] < latest[name], \
            f"tab {name} moved from version {before[handle]['version']} to {shown['version']} after signing out"
        assert shown["patches"] == before[handle]["patches"], f"tab {name} applied a changeset after signing out"
        check_chain(driver, handle, name)

    # What the page shows: the list revoked, as after a `denied` (docs/PROTOCOL.md), within 5 s.
    driver.switch_to.window(shown_handle)
    shown = wait_for(lambda: (lambda s: s if s["denied"] and s["children"] == 0 else None)(driver.execute_script(LOOK)),
                     timeout=5, interval=0.05, message="the shown tab emptying its list")
    assert shown["denied"] == [names[0]] and shown["text"] == "" and shown["state"] == "offline", f"tab {names[0]}: {shown}"
