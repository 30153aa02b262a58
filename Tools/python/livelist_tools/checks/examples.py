"""The checks of Scripts/check-examples.sh, which builds each Examples/ package and then runs `run` on it
(`python3 -m livelist_tools.checks.examples COMMAND`):

    guide                 docs/GUIDE.md shows Examples/Todo's main.swift whole, with its line count (at
                          most thirty)
    run DIR BINARY FORM   runs BINARY (the example in DIR, as an app author would) from a fresh empty
                          directory outside the checkout on a free loopback port: `/` and its list page
                          answer 200 with the list root (the built-in Public/ and Templates/), the page's
                          script is served, and the list's event stream delivers the change that the
                          action FORM (url-encoded, without the CSRF token) makes; SIGTERM stops it within
                          10 s, leaving only data/ behind
    board DIR BINARY      runs Examples/Board the same way with BOARD_USERS=alice:secret1,bob:secret2:
                          refusals before sign-in (401, the sign-in redirect), a wrong password, sign-in,
                          both lists and a private list of another user refused as a missing list, an
                          action seen on the stream with its author, and sign-out ending that stream with
                          a denied event

Prints one "ok" line per check; exit status 1 with the reason (and the example's output) on a failure.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import livelist_tools as tools

ROOT = tools.ROOT
MARK = "Written by check-examples"


def guide():
    with open(os.path.join(ROOT, "docs", "GUIDE.md")) as f:
        text = f.read()
    with open(os.path.join(ROOT, "Examples", "Todo", "Sources", "todo", "main.swift")) as f:
        code = f.read()
    shown = re.search(r"\(this is `Examples/Todo`, (\d+) lines\):\n\n(?:<!-- snippet: [^>]*-->\n)?```swift\n(.*?)```", text, re.S)
    if not shown:
        sys.exit("check-examples: docs/GUIDE.md does not show Examples/Todo's main.swift as \"(this is `Examples/Todo`, N lines):\"")
    count = code.count("\n")
    if shown.group(2) != code:
        sys.exit("check-examples: the code in docs/GUIDE.md differs from Examples/Todo/Sources/todo/main.swift")
    if int(shown.group(1)) != count or count > 30:
        sys.exit(f"check-examples: Examples/Todo's main.swift has {count} lines; docs/GUIDE.md says {shown.group(1)}, and the most is 30")
    print(f"ok docs/GUIDE.md shows Examples/Todo's main.swift, {count} lines")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def run(directory, binary, form):
    name = os.path.basename(directory.rstrip("/")).lower()
    workdir = exercise(directory, binary, name, lambda port: check_example(name, port, form))
    print(f"ok {name}: /, /lists/{name}, its script, an action seen on /lists/{name}/events, from {workdir}")


def board(directory, binary):
    workdir = exercise(directory, binary, "board", check_board, {"BOARD_USERS": "alice:secret1,bob:secret2"})
    print(f"ok board: refusals, sign-in, team and notes lists, a private list refused, an action with its author, sign-out ending the stream, from {workdir}")


def desk(directory, binary):
    workdir = exercise(directory, binary, "desk", check_desk, {"DESK_USERS": "alice:secret1:customer,carol:secret2:agent"})
    print(f"ok desk: sign-in, the agent's queue, a ticket filed by a customer reaching the queue's stream, the desk's files, from {workdir}")


def exercise(directory, binary, label, checks, extra_env=None):
    """Runs BINARY (the example in DIRECTORY) from a fresh empty directory outside the checkout, with the
    example's own environment only (no folders of this checkout) and a free port handed over in
    LIVELIST_PORT (the app's own output may be buffered, so it is not read for one). Once it answers
    /healthz, `checks(port)` runs; then SIGTERM must stop it within 10 s, leaving only data/ behind.
    Exits with the reason and the example's output on a failure; returns the directory it ran in."""
    workdir = tempfile.mkdtemp()
    print(f"-- {directory}: run from {workdir}", flush=True)
    if os.path.realpath(workdir).startswith(ROOT):
        sys.exit(f"check-examples {label}: {workdir} is inside the checkout; it must run outside it")
    port = tools.free_port()
    env = {key: value for key, value in os.environ.items() if key not in ("LIVELIST_PUBLIC", "LIVELIST_TEMPLATES")}
    env.update(LIVELIST_HOST=tools.HOST, LIVELIST_PORT=str(port), **(extra_env or {}))
    server = subprocess.Popen([os.path.abspath(binary)], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env)
    lines = []
    threading.Thread(target=lambda: lines.extend(iter(server.stdout.readline, "")), daemon=True).start()
    try:
        try:
            tools.wait_ready(port, "/healthz", server, seconds=30)
        except RuntimeError:
            raise Failure("it did not answer /healthz within 30 s")
        # LiveListApp.run says where it listens, at once, whatever the app prints (docs/GUIDE.md).
        announced = f"LiveList serving on http://{tools.HOST}:{port}"
        deadline = time.monotonic() + 5
        while not any(announced in line for line in list(lines)) and time.monotonic() < deadline:
            time.sleep(0.05)
        check(any(announced in line for line in list(lines)), f"it did not say \"{announced}\"")
        checks(port)
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            raise Failure("it did not stop within 10 s of SIGTERM")
        left = sorted(os.listdir(workdir))
        check(left == ["data"], f"it left {left} in its working directory, expected only data/")
    except Failure as failure:
        sys.exit(f"check-examples {label}: {failure}\n--- its output:\n{''.join(lines)}")
    finally:
        tools.stop_process(server, 10, kill=True)
        shutil.rmtree(workdir, ignore_errors=True)
    return workdir


def caller(port):
    """A request to the example on `port` with the given cookies (a form body when `body` is given):
    (status, headers, text)."""
    def call(method, path, cookies=(), body=None, headers=None):
        fields = dict(headers or {})
        if cookies:
            fields["Cookie"] = "; ".join(cookies)
        if body is not None:
            fields.setdefault("Content-Type", "application/x-www-form-urlencoded")
        status, response_headers, data = tools.request(port, method, path, body, fields, timeout=10)
        return status, response_headers, data.decode()
    return call


def set_cookies(headers):
    """The name=value pairs of a response's Set-Cookie fields."""
    return [value.split(";")[0] for value in headers.get_all("Set-Cookie") or []]


def check_board(port):
    call = caller(port)

    # Nobody signed in: 401 for a list, whether it exists or not; a page navigation goes to /login.
    for path in ("/lists/team", "/lists/team/events", "/lists/notes-alice", "/lists/nosuch"):
        status, _, _ = call("GET", path)
        check(status == 401, f"GET {path} before sign-in: {status}, not 401")
    status, headers, _ = call("GET", "/lists/team", headers={"Accept": "text/html"})
    check(status == 303 and headers.get("Location") == "/login?next=/lists/team", f"a navigation to /lists/team: {status} {headers.get('Location')}")

    def sign_in(user, password):
        status, headers, page = call("GET", "/login?next=/lists/team")
        session = set_cookies(headers)
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        check(status == 200 and session and token, f"GET /login: {status}, no session cookie or CSRF field")
        form = f"csrf={token.group(1)}&next=%2Flists%2Fteam&user={user}&password={password}"
        status, headers, _ = call("POST", "/login", session, form)
        return status, headers, session + set_cookies(headers)

    status, _, _ = sign_in("alice", "wrong")
    check(status == 401, f"a wrong password: {status}, not 401")
    status, headers, alice = sign_in("alice", "secret1")
    check(status == 303 and headers.get("Location") == "/lists/team", f"signing in: {status} {headers.get('Location')}")
    check(any(cookie.startswith("livelist_signin=") for cookie in alice), "signing in set no livelist_signin cookie")
    _, _, bob = sign_in("bob", "secret2")

    status, _, team = call("GET", "/lists/team", alice)
    check(status == 200 and 'data-list="team"' in team, f"alice GET /lists/team: {status}")
    status, _, _ = call("GET", "/lists/notes-alice", alice)
    check(status == 200, f"alice GET /lists/notes-alice: {status}")
    refused = call("GET", "/lists/notes-bob", alice)
    missing = call("GET", "/lists/notes-nobody", alice)
    check(refused[0] == 404 and refused[2] == missing[2].replace("notes-nobody", "notes-bob"),
          f"alice GET /lists/notes-bob: {refused[0]} {refused[2]!r}, not the answer of a missing list")
    status, _, me = call("GET", "/api/me", bob)
    check(status == 200 and '"id":"bob"' in me, f"bob GET /api/me: {status} {me}")

    token = re.search(r'<meta name="livelist-csrf" content="([^"]+)"', team)
    check(token, "the team page has no CSRF token")
    stream = tools.EventStream(tools.HOST, port, "/lists/team/events", {"Cookie": "; ".join(alice)}, error=Failure)
    try:
        check(stream.response.status == 200, f"alice GET /lists/team/events: {stream.response.status}")
        status, _, _ = call("POST", "/lists/team/actions", alice, f"csrf={token.group(1)}&action=post%3A&text=Written+by+check-examples",
                            {"LiveList-Action": "1"})
        check(status == 204, f"alice's action on team: {status}")
        deadline = time.monotonic() + 10
        data = ""
        while MARK not in data:
            data = stream.next_event(max(0.01, deadline - time.monotonic()))[2] or ""
        check("alice" in data, "the note does not name its author")
        # Bob may not act on alice's notes: answered as a list that does not exist.
        status, _, _ = call("POST", "/lists/notes-alice/actions", bob, f"csrf={token.group(1)}&action=post%3A&text=x")
        check(status in (403, 404), f"bob's action on notes-alice: {status}")
        # Signing out ends alice's stream with a denied event, and her cookie no longer signs her in.
        status, _, home = call("GET", "/", alice)
        logout = re.search(r'name="csrf" value="([0-9a-f]+)"', home)
        check(status == 200 and logout and 'action="/logout"' in home, f"alice GET /: {status}, no sign-out form")
        status, _, _ = call("POST", "/logout", alice, f"csrf={logout.group(1)}")
        check(status == 303, f"POST /logout: {status}")
        stream.next_event(5, kind="denied")
    finally:
        stream.close()
    status, _, _ = call("GET", "/lists/team", alice)
    check(status == 401, f"GET /lists/team after sign-out: {status}, not 401")


def check_desk(port):
    """The help desk: its pages in its own layout, a ticket a customer files reaching the agent's stream."""
    call = caller(port)

    def sign_in(user, password):
        status, headers, page = call("GET", "/login")
        session = set_cookies(headers)
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        check(status == 200 and session and token and "· Desk</title>" in page, f"GET /login: {status}, not the desk's sign-in page")
        status, headers, _ = call("POST", "/login", session, f"csrf={token.group(1)}&user={user}&password={password}")
        check(status == 303, f"{user} signing in: {status}")
        return session + set_cookies(headers)

    carol = sign_in("carol", "secret2")
    alice = sign_in("alice", "secret1")
    status, _, queue = call("GET", "/queue", carol)
    check(status == 200 and 'data-list="queue"' in queue and 'id="livelist-actions-queue"' in queue, f"carol GET /queue: {status}")
    status, _, _ = call("GET", "/queue", alice)
    check(status == 403, f"alice GET /queue: {status}, not 403")
    status, _, css = call("GET", "/desk/desk.css")
    check(status == 200 and "desk-header" in css, f"GET /desk/desk.css: {status}")
    stream = tools.EventStream(tools.HOST, port, "/lists/queue/events", {"Cookie": "; ".join(carol)}, error=Failure)
    try:
        check(stream.response.status == 200, f"carol GET /lists/queue/events: {stream.response.status}")
        status, _, form = call("GET", "/tickets/new", alice)
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', form)
        check(status == 200 and token, f"alice GET /tickets/new: {status}")
        status, headers, _ = call("POST", "/tickets/new", alice, f"csrf={token.group(1)}&title={MARK.replace(' ', '+')}&priority=urgent")
        check(status == 303 and headers.get("Location") == "/tickets", f"alice filing a ticket: {status} {headers.get('Location')}")
        deadline = time.monotonic() + 10
        data = ""
        while MARK not in data:
            data = stream.next_event(max(0.01, deadline - time.monotonic()))[2] or ""
    finally:
        stream.close()
    status, _, mine = call("GET", "/tickets", alice)
    check(status == 200 and MARK in mine and 'data-list="tickets"' in mine, f"alice GET /tickets: {status}, her ticket not in it")


def check_example(name, port, form):
    def get(path, headers=None):
        status, response_headers, body = tools.request(port, "GET", path, headers=headers, timeout=10)
        return status, response_headers, body.decode()

    status, _, body = get("/")
    check(status == 200 and f"/lists/{name}" in body, f"GET /: {status}, not an index naming /lists/{name}")
    status, headers, page = get(f"/lists/{name}")
    check(status == 200 and f'data-list="{name}"' in page, f"GET /lists/{name}: {status}, no list root data-list=\"{name}\"")
    cookie = (headers.get("Set-Cookie") or "").split(";")[0]
    token = re.search(r'<meta name="livelist-csrf" content="([^"]+)"', page)
    check(cookie and token, "the page set no session cookie or CSRF token")
    script = re.search(r'src="(/livelist\.js\?v=[0-9a-f]+)"', page)
    check(script and get(script.group(1))[0] == 200, "the page's script is not served (the built-in Public/)")

    stream = tools.EventStream(tools.HOST, port, f"/lists/{name}/events", {"Cookie": cookie}, error=Failure)
    try:
        check(stream.response.status == 200 and stream.response.getheader("Content-Type", "").startswith("text/event-stream"),
              f"GET /lists/{name}/events: {stream.response.status}")
        status, _, _ = tools.request(port, "POST", f"/lists/{name}/actions", f"csrf={token.group(1)}&{form}",
                                     {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie}, timeout=10)
        check(status == 303, f"POST /lists/{name}/actions: {status}, not 303 back to the page")
        deadline = time.monotonic() + 10
        try:
            while MARK not in (stream.next_event(max(0.01, deadline - time.monotonic()))[2] or ""):
                pass
        except Failure:
            raise Failure("the event stream did not deliver the action's change within 10 s")
    finally:
        stream.close()


def main():
    parser = argparse.ArgumentParser(prog="python3 -m livelist_tools.checks.examples", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("guide", help="check docs/GUIDE.md against Examples/Todo")
    runner = commands.add_parser("run", help="run one built example and check it")
    runner.add_argument("directory", help="the example's package, e.g. Examples/Todo")
    runner.add_argument("binary", help="its built executable")
    runner.add_argument("form", help="the url-encoded form of an action of its page (without the CSRF token)")
    boarder = commands.add_parser("board", help="run Examples/Board and check its users and access")
    boarder.add_argument("directory", help="the example's package, Examples/Board")
    boarder.add_argument("binary", help="its built executable")
    desker = commands.add_parser("desk", help="run Examples/Desk and check its pages, sign-in and live queue")
    desker.add_argument("directory", help="the example's package, Examples/Desk")
    desker.add_argument("binary", help="its built executable")
    args = parser.parse_args()
    if args.command == "guide":
        guide()
    elif args.command == "board":
        board(args.directory, args.binary)
    elif args.command == "desk":
        desk(args.directory, args.binary)
    else:
        run(args.directory, args.binary, args.form)


if __name__ == "__main__":
    main()
