#!/usr/bin/env python3
"""The checks of Scripts/check-examples.sh, which builds each Examples/ package and then runs `run` on it.

    check-examples.py guide                 docs/GUIDE.md shows Examples/Todo's main.swift whole, with its
                                            line count (at most thirty)
    check-examples.py run DIR BINARY FORM   runs BINARY (the example in DIR, as an app author would) from a
                                            fresh empty directory outside the checkout on a free loopback
                                            port: `/` and its list page answer 200 with the list root (the
                                            built-in Public/ and Templates/), the page's script is served, and
                                            the list's event stream delivers the change that the action FORM
                                            (url-encoded, without the CSRF token) makes; SIGTERM stops it
                                            within 10 s, leaving only data/ behind

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
    shown = re.search(r"\(this is `Examples/Todo`, (\d+) lines\):\n\n```swift\n(.*?)```", text, re.S)
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


def run(directory, binary, form):
    name = os.path.basename(directory.rstrip("/")).lower()
    workdir = tempfile.mkdtemp()
    print(f"-- {directory}: run from {workdir}", flush=True)
    if os.path.realpath(workdir).startswith(ROOT):
        sys.exit(f"check-examples {name}: {workdir} is inside the checkout; it must run outside it")
    # The example's own environment only: no folders of this checkout. A free port, handed over in
    # LIVELIST_PORT (the app's own output may be buffered, so it is not read for one).
    port = tools.free_port()
    env = {key: value for key, value in os.environ.items() if key not in ("LIVELIST_PUBLIC", "LIVELIST_TEMPLATES")}
    env.update(LIVELIST_HOST=tools.HOST, LIVELIST_PORT=str(port))
    server = subprocess.Popen([os.path.abspath(binary)], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env)
    lines = []
    threading.Thread(target=lambda: lines.extend(iter(server.stdout.readline, "")), daemon=True).start()
    try:
        check_example(name, port, server, form, workdir)
    except Failure as failure:
        sys.exit(f"check-examples {name}: {failure}\n--- its output:\n{''.join(lines)}")
    finally:
        tools.stop_process(server, 10, kill=True)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"ok {name}: /, /lists/{name}, its script, an action seen on /lists/{name}/events, from {workdir}")


def check_example(name, port, server, form, workdir):
    def check(condition, message):
        if not condition:
            raise Failure(message)

    try:
        tools.wait_ready(port, "/healthz", server, seconds=30)
    except RuntimeError:
        raise Failure("it did not answer /healthz within 30 s")

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

    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        raise Failure("it did not stop within 10 s of SIGTERM")
    left = sorted(os.listdir(workdir))
    check(left == ["data"], f"it left {left} in its working directory, expected only data/")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("guide", help="check docs/GUIDE.md against Examples/Todo")
    runner = commands.add_parser("run", help="run one built example and check it")
    runner.add_argument("directory", help="the example's package, e.g. Examples/Todo")
    runner.add_argument("binary", help="its built executable")
    runner.add_argument("form", help="the url-encoded form of an action of its page (without the CSRF token)")
    args = parser.parse_args()
    if args.command == "guide":
        guide()
    else:
        run(args.directory, args.binary, args.form)


if __name__ == "__main__":
    main()
