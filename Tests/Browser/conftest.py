"""Fixtures for the browser tests: protocol samples from the Swift test suite, a local HTTP server that
serves Public/ and test pages (and answers the list routes the way each test scripts it), and headless
Chromium driven by chromedriver.

Environment:
  LIVELIST_PACKAGE      the Swift package that writes the samples (default: this repository), already
                        built with `swift build --build-tests` (Scripts/test does it)
  LIVELIST_SAMPLES_DIR  a directory that already holds chains.jsonl (skips running Swift)
  CHROMIUM, CHROMEDRIVER  the browser and driver binaries (default: Debian's /usr/bin ones)
"""
import html
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
PUBLIC = REPO / "Public"
HERE = Path(__file__).resolve().parent
BENCHMARKS = []


# --- Protocol samples ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def chains():
    """The (before, changeset, after) chains written by the Swift suite's ProtocolSamplesTests."""
    given = os.environ.get("LIVELIST_SAMPLES_DIR")
    if given:
        path = Path(given) / "chains.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    package = Path(os.environ.get("LIVELIST_PACKAGE", REPO))
    directory = tempfile.mkdtemp(prefix="livelist-samples-")
    try:
        command = ["swift", "test", "--skip-build", "--filter", "ProtocolSamplesTests"]
        if shutil.which("flock"):
            command = ["flock", "/tmp/livelist-swift.lock"] + command
        result = subprocess.run(command, cwd=package, capture_output=True, text=True,
                                env=dict(os.environ, LIVELIST_PROTOCOL_SAMPLES=directory))
        if result.returncode != 0:
            pytest.fail(f"writing the protocol samples failed in {package} (is it built with "
                        f"`swift build --build-tests`?):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        text = (Path(directory) / "chains.jsonl").read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line]
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def section_html(section):
    """A snapshot section's element with its cells inside its cells container: the container is the
    child between the optional header (first) and the optional footer (last), so its closing tag is the
    last one before the footer."""
    markup, footer = section["html"], section["footer"] or ""
    end = markup.rindex("</")  # the section element's closing tag
    assert markup[end - len(footer):end] == footer, "the footer is the section element's last child"
    close = markup.rindex("</", 0, end - len(footer))  # the cells container's closing tag
    return markup[:close] + "".join(cell["html"] for cell in section["cells"]) + markup[close:]


def inner_html(snapshot):
    return "".join(section_html(section) for section in snapshot["sections"])


def root_html(snapshot, animate=False, reloads=True, keep=False, bottom=False, scrolling=False, version=None, extra=""):
    """The list root of the page at `snapshot` (what the server renders), with the updater's options."""
    flag = lambda value: "true" if value else "false"
    v = snapshot["version"] if version is None else version
    return (f'<div class="livelist{" " + extra if extra else ""}" data-list="{html.escape(snapshot["list"])}" '
            f'data-version="{v}" data-animate="{flag(animate)}" data-animate-reloads="{flag(reloads)}" '
            f'data-animate-scrolling="{flag(animate and scrolling)}" '
            f'data-keep-offset="{flag(keep)}" data-stick-bottom="{flag(bottom)}">{inner_html(snapshot)}</div>')


def page(body, connect=False, csrf=None):
    metas = '' if connect else '<meta name="livelist-connect" content="off">'
    if csrf is not None:
        metas += f'<meta name="livelist-csrf" content="{html.escape(csrf)}">'
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>LiveList test</title>{metas}'
            '<link rel="stylesheet" href="/livelist.css"><link rel="stylesheet" href="/test.css">'
            f'</head><body>{body}<script src="/livelist.js"></script></body></html>')


# --- The local server -------------------------------------------------------------------------------

class Server:
    """Serves Public/ files, test pages at /t/NAME, and scripted answers for other paths: each path
    has a queue of handlers, one per request (the last one repeats); everything is 404 otherwise."""

    def __init__(self):
        self.pages, self.routes, self.requests, self.lock = {}, {}, [], threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def handle_any(self):
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                record = {"method": self.command, "path": parts.path, "query": parts.query,
                          "args": parse_qs(parts.query), "headers": dict(self.headers), "body": body,
                          "time": time.time()}
                with server.lock:
                    server.requests.append(record)
                    queue = server.routes.get(parts.path)
                    handler = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else None
                if parts.path in ("/livelist.js", "/livelist.css", "/livelist.src.js", "/livelist-window.js"):
                    return self.answer(200, (PUBLIC / parts.path[1:]).read_bytes(),
                                       "text/javascript" if parts.path.endswith(".js") else "text/css")
                if parts.path == "/test.css":
                    return self.answer(200, (HERE / "test.css").read_bytes(), "text/css")
                if parts.path.startswith("/t/") and parts.path[3:] in server.pages:
                    return self.answer(200, server.pages[parts.path[3:]].encode(), "text/html; charset=utf-8",
                                       {"Content-Security-Policy": "default-src 'self'"})
                if handler:
                    return handler(self, record)
                self.answer(404, b"", "text/plain")

            do_GET = do_POST = do_HEAD = handle_any

            def answer(self, status, body=b"", kind="text/plain", headers=None):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def page(self, name, markup):
        self.pages[name] = markup
        return f"{self.base}/t/{name}"

    def route(self, path, *handlers):
        with self.lock:
            self.routes[path] = list(handlers)

    def reset(self):
        with self.lock:
            self.routes.clear()
            self.requests.clear()

    def requests_to(self, path):
        with self.lock:
            return [r for r in self.requests if r["path"] == path]

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def status(code):
    """A handler answering `code` with an empty body."""
    return lambda h, record: h.answer(code)


def json_answer(document):
    return lambda h, record: h.answer(200, json.dumps(document).encode(), "application/json")


def sse(events=(), retry=None, hold=0.6, closed=None):
    """A text/event-stream handler: optional `retry:`, the events (id, changeset) of kind `patch`, or
    (id, data, kind) of another kind (id None for none), then comment heartbeats until `hold` seconds
    pass or the browser goes away (then `closed` gets the time)."""
    def handle(h, record):
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-store")
        h.end_headers()
        try:
            if retry is not None:
                h.wfile.write(f"retry: {retry}\n\n".encode())
            for event_id, data, *kind in events:
                field = "" if event_id is None else f"id: {event_id}\n"
                h.wfile.write(f"event: {kind[0] if kind else 'patch'}\n{field}data: {json.dumps(data)}\n\n".encode())
            h.wfile.flush()
            end = time.time() + hold
            while time.time() < end:
                time.sleep(0.05)
                h.wfile.write(b": heartbeat\n\n")
                h.wfile.flush()
        except OSError:
            if closed is not None:
                closed.append(time.time())
    return handle


@pytest.fixture(scope="session")
def server():
    s = Server()
    yield s
    s.stop()


# --- The browser ------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1000,800", "--disable-extensions"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    browser = webdriver.Chrome(service=service, options=options)
    browser.set_script_timeout(60)
    yield browser
    browser.quit()


@pytest.fixture
def browser(driver, server):
    """The session's browser, with the server's scripts and the page's emulation reset for each test."""
    server.reset()
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    yield driver
    driver.get("about:blank")
    driver.get_log("browser")


def visible_cells(browser):
    """The keys of the cells that ask for visibility reports and are on screen now."""
    return set(browser.execute_script(
        "return [...document.querySelectorAll('[data-visibility=\"true\"]')].filter(e => "
        "{ const r = e.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight }).map(e => e.dataset.cell)"))


def reported_cells(server, path):
    """The visibility reports posted to `path`, folded: (the keys last reported visible, each key's last
    report). A post names one cell ("cell") or several ("cells", the keys joined by NUL)."""
    state = {}
    for post in server.requests_to(path):
        body = json.loads(post["body"])
        for key in body["cells"].split("\0") if "cells" in body else [body["cell"]]:
            state[key] = body["type"]
    return {k for k, t in state.items() if t == "visible"}, state


def wait_for(predicate, timeout=5.0, interval=0.02, message="condition"):
    end = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() > end:
            raise AssertionError(f"timed out waiting for {message}")
        time.sleep(interval)


def pytest_terminal_summary(terminalreporter):
    if BENCHMARKS:
        terminalreporter.section("LiveList client benchmark")
        for line in BENCHMARKS:
            terminalreporter.write_line(line)
