#!/usr/bin/env python3
"""The figures of windowed lists (docs/PROTOCOL.md, "Windowed lists"; issue #34), in headless Chromium
against the livelist binary on 127.0.0.1, each beside its baseline from the same run: the same page of a
1,000-cell list, which is not windowed (the server windows lists of more than 1,000 cells).

  DOM elements in the list root, most over scroll positions and jumps       100k windowed vs 1k   goal <= 1,400
  first contentful paint, median of --loads loads                            100k vs 1k            goal < 500 ms
  the page's HTML bytes (uncompressed); also with 32-character keys          100k vs 1k            goal < 200 KB
  main-thread time to apply 1,000 ops, most of them off screen               100k vs 1k            goal < 16 ms
    (and, reported, the same for a changeset of one text update off screen)
  main-thread time to apply 1,000 ops on the cells around the viewport       100k vs 1k            goal: no slower
  long frames (> 50 ms) in a scroll from top to bottom, one step a frame      100k vs 1k            goal: no more
  LLW.jump to the 100,000th key until it is in the DOM and in the viewport   vs scrollIntoView     goal < 200 ms

Main-thread time is the renderer's busy time (CDP Performance.getMetrics, TaskDuration) over the
application of the changeset and the next second (the frame that draws it), less the same second
measured idle just before; the changeset is the PATCH's answer, applied with LiveList.apply while the
page's stream is closed. Each figure prints as value, baseline, ratio, goal and whether it is met.

Usage: Benchmarks/run window [--binary PATH] [--loads 5] [--rounds 5] [--seed N] [--max-seconds 900]
Needs chromium, chromedriver and Python's selenium (Tests/Browser/run.sh installs them). The server is
started with its own data directory and stopped on exit, also on failure.
"""
import argparse
import json
import os
import random
import shlex
import statistics
import sys
import time

import livelist_tools as tools
from _window_ops import near_ops, off_screen_ops, one_op  # beside this script

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--binary", default=None, help="the livelist binary (default: $LIVELIST_BINARY, else .build/release/livelist)")
parser.add_argument("--loads", type=int, default=5, help="page loads for the first contentful paint (default 5)")
parser.add_argument("--rounds", type=int, default=5, help="changesets applied per ops figure, median taken (default 5)")
parser.add_argument("--seed", type=int, default=None, help="the seed of the ops and keys (default: random, printed)")
parser.add_argument("--max-seconds", type=float, default=900, help="the longest the run may take (default 900)")
parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
parser.add_argument("--chromedriver", default=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
options = parser.parse_args()
BINARY = options.binary or tools.default_binary()
SEED = options.seed if options.seed is not None else random.SystemRandom().randrange(1 << 32)
DEADLINE = time.monotonic() + options.max_seconds
BIG, SMALL = 100_000, 1_000


class Failure(Exception):
    pass


def note(*parts):
    print(*parts, file=sys.stderr, flush=True)


def in_time(what):
    if time.monotonic() > DEADLINE:
        raise Failure(f"out of time (--max-seconds {options.max_seconds:g}) before {what}")


# --- The server ----------------------------------------------------------------------------------------

def call(port, method, path, body=None, accept="application/json"):
    data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
    headers = {"Accept": accept, **({"Content-Type": "application/json"} if data is not None else {})}
    status, _, answer = tools.request(port, method, path, data, headers, timeout=300)
    if status not in (200, 201):
        raise Failure(f"{method} {path} answered {status}: {answer[:300]!r}")
    return answer


def put_list(port, name, keys):
    call(port, "PUT", f"/lists/{name}", {"sections": [{"id": "a", "cells": [{"id": k, "text": f"Row {i}"} for i, k in enumerate(keys)]}]})


def patch(port, name, ops):
    answer = json.loads(call(port, "PATCH", f"/lists/{name}", {"ops": ops}))
    if answer.get("skipped"):
        raise Failure(f"PATCH {name}: {answer['skipped']} operations skipped")
    return answer


# --- The browser ---------------------------------------------------------------------------------------

def chromium():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        raise Failure("Python's selenium is missing (Tests/Browser/run.sh installs it)")
    o = webdriver.ChromeOptions()
    o.binary_location = options.chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1000,800", "--disable-extensions"):
        o.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=options.chromedriver), options=o)
    driver.set_script_timeout(120)
    driver.set_page_load_timeout(120)
    return driver


# In the page: settles (keys loaded for a windowed list, no placeholder pending, the same scroll
# position and window for 5 frames), then answers the figures of the moment.
HELPERS = r"""
if (window.__b) return;
const root = () => document.querySelector('[data-list]');
const state = () => {
  const r = root(), cs = r.querySelectorAll('[data-cell]');
  return {elements: r.querySelectorAll('*').length + 1, cells: cs.length, first: cs.length ? cs[0].dataset.cell : null,
          pending: r.querySelectorAll('.livelist-pending').length, loaded: !r.dataset.window || !!(window.LLW && LLW.keys(r)),
          scrollY, version: r.dataset.version};
};
function settle(done, timeout) {
  const end = performance.now() + (timeout || 10000);
  let calm = 0, mark = '';
  (function tick() {
    const s = state(), m = [s.scrollY, s.first, s.cells].join();
    calm = s.loaded && !s.pending && m === mark ? calm + 1 : 0;
    mark = m;
    if (calm >= 5 || performance.now() > end) return done(Object.assign(s, {settled: calm >= 5}));
    requestAnimationFrame(tick);
  })();
}
// Whether cell k is in the DOM and in the viewport.
const shown = k => { const e = [...root().querySelectorAll('[data-cell]')].find(e => e.dataset.cell === k), r = e && e.getBoundingClientRect();
  return !!r && r.bottom > 0 && r.top < innerHeight };
window.__b = {root, state, settle, shown};
"""


def open_page(driver, port, name, windowed):
    driver.get("about:blank")
    driver.get(f"http://127.0.0.1:{port}/lists/{name}")
    deadline = time.monotonic() + 30
    ready = "return !!window.LiveList && (!document.querySelector('[data-window]') || !!window.LLW)"
    while not driver.execute_script(ready):
        if time.monotonic() > deadline:
            raise Failure(f"the page of {name} did not start its scripts")
        time.sleep(0.05)
    driver.execute_script(HELPERS)
    is_windowed = driver.execute_script("return !!document.querySelector('[data-window]')")
    if is_windowed != windowed:
        raise Failure(f"the page of {name} is {'' if is_windowed else 'not '}windowed, expected the opposite")
    return settle(driver, name)


def settle(driver, what):
    s = driver.execute_async_script("__b.settle(arguments[0], 15000)")
    if not s["settled"]:
        raise Failure(f"{what}: the page did not settle within 15 s: {s}")
    return s


def scroll_to(driver, fraction):
    driver.execute_script("scrollTo(0, arguments[0] * (document.documentElement.scrollHeight - innerHeight))", fraction)


# --- The figures ---------------------------------------------------------------------------------------

def dom_elements(driver, port, name, windowed, keys, rng):
    """The most elements in the root over five scroll positions and three jumps (scrollIntoView when the
    list is not windowed)."""
    open_page(driver, port, name, windowed)
    most = 0
    for place in [0, .25, .5, .75, 1] + [rng.choice(keys) for _ in range(2)] + [keys[-1]]:
        if isinstance(place, float) or isinstance(place, int):
            scroll_to(driver, place)
        elif windowed:
            driver.execute_script("LLW.jump(__b.root(), arguments[0])", place)
        else:
            driver.execute_script("[...__b.root().querySelectorAll('[data-cell]')].find(e => e.dataset.cell === arguments[0]).scrollIntoView()", place)
        most = max(most, settle(driver, f"{name} at {place}")["elements"])
    return most


FCP = """
const done = arguments[0], end = performance.now() + 10000;
(function poll() {
  const e = performance.getEntriesByName('first-contentful-paint')[0];
  if (e || performance.now() > end) return done(e ? e.startTime : null);
  setTimeout(poll, 20);
})();
"""


def first_paint(driver, port, name):
    times = []
    for _ in range(options.loads):
        driver.get("about:blank")
        driver.get(f"http://127.0.0.1:{port}/lists/{name}")
        t = driver.execute_async_script(FCP)
        if t is None:
            raise Failure(f"no first-contentful-paint entry for {name}")
        times.append(t)
    return statistics.median(times)


def html_bytes(port, name):
    status, headers, body = tools.request(port, "GET", f"/lists/{name}", headers={"Accept": "text/html"})
    if status != 200 or headers.get("Content-Encoding"):
        raise Failure(f"GET /lists/{name}: {status}, encoding {headers.get('Content-Encoding')}")
    return len(body)


def keys_bytes(port, name):
    status, _, body = tools.request(port, "GET", f"/lists/{name}/cells?from=0&count=100&keys=1")
    if status != 200:
        raise Failure(f"the range route with keys answered {status} for {name}")
    return len(body)


def metrics(driver):
    return {m["name"]: m["value"] for m in driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]}


# Waits a second of frames; with a changeset, applies it first (it is in window.__cs already), in a task
# of the page's own (as a stream's event would be), not inside the driver's script.
WAIT = """
const [apply, done] = arguments;
let ok = true;
setTimeout(() => {
  if (apply) ok = LiveList.apply(__b.root(), window.__cs);
  setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(() => done(ok))), 1000);
}, 0);
"""


def busy(driver, changeset):
    """Main-thread ms: applying `changeset` and the second after it, less an idle second just before;
    and of that, script and style with layout."""
    driver.execute_script("window.__cs = arguments[0]", changeset)
    driver.execute_async_script("setTimeout(arguments[0], 300)")  # the argument's own parsing settles
    a = metrics(driver)
    driver.execute_async_script(WAIT, False)
    b = metrics(driver)
    ok = driver.execute_async_script(WAIT, True)
    c = metrics(driver)
    if not ok:
        raise Failure(f"LiveList.apply refused the changeset from {changeset['from']} to {changeset['version']}")
    net = lambda *names: sum((c[n] - b[n]) - (b[n] - a[n]) for n in names) * 1000
    return net("TaskDuration"), net("ScriptDuration"), net("LayoutDuration", "RecalcStyleDuration")


def apply_time(driver, port, name, windowed, make, rng):
    """Median main-thread ms (busy, script, style and layout) over --rounds changesets made by `make`,
    and the changesets' sizes."""
    open_page(driver, port, name, windowed)
    scroll_to(driver, 0.4)
    settle(driver, f"{name} before the ops")
    driver.execute_script("LiveList.close()")
    driver.execute_cdp_cmd("Performance.enable", {"timeDomain": "timeTicks"})
    times, counts = [], []
    try:
        for serial in range(options.rounds):
            in_time(f"the ops on {name}")
            cells = json.loads(call(port, "GET", f"/lists/{name}"))["state"]["sections"][0]["cells"]
            keys, texts = [c["id"] for c in cells], {c["id"]: c["text"] for c in cells}
            # "On screen": the cells within a viewport's height of the viewport (the windowed list's window).
            window = driver.execute_script("""return [...__b.root().querySelectorAll('[data-cell]')].filter(e => {
                const r = e.getBoundingClientRect(); return r.bottom > -innerHeight && r.top < 2 * innerHeight }).map(e => e.dataset.cell)""")
            top = driver.execute_script("""const c = [...__b.root().querySelectorAll('[data-cell]')].find(e => e.getBoundingClientRect().bottom > 0);
                                           return c && c.dataset.cell""")
            ops = make(rng, keys, window, top, serial, texts)
            changeset = patch(port, name, ops)
            counts.append(len(changeset["ops"]))
            times.append(busy(driver, changeset))
            settle(driver, f"{name} after the ops")
            state = driver.execute_script("return __b.state()")
            if state["version"] != str(changeset["version"]):
                raise Failure(f"{name}: the page is at version {state['version']} after applying {changeset['version']}")
    finally:
        driver.execute_cdp_cmd("Performance.disable", {})
    return tuple(statistics.median(t[i] for t in times) for i in range(3)), counts


LONG_FRAMES = r"""
const [steps, done] = arguments, long = [], gaps = [];
let po = null;
try { po = new PerformanceObserver(l => long.push(...l.getEntries().map(e => e.duration))); po.observe({type: 'long-animation-frame'}) } catch (_) { po = null }
let i = 0, last = performance.now();
const t0 = last;
(function step(now) {
  if (i) { gaps.push(now - last); last = now }
  if (i > steps) {
    return setTimeout(() => { po && po.disconnect(); done({loaf: po ? long.filter(d => d > 50).length : null,
      slow: gaps.filter(g => g > 50).length, worst: Math.max(...gaps), ms: performance.now() - t0}) }, 300);
  }
  scrollTo(0, i++ / steps * (document.documentElement.scrollHeight - innerHeight));
  requestAnimationFrame(step);
})(performance.now());
"""


def long_frames(driver, port, name, windowed):
    open_page(driver, port, name, windowed)
    scroll_to(driver, 0)
    settle(driver, f"{name} at the top")
    return driver.execute_async_script(LONG_FRAMES, 200)


JUMP = """
const [k, windowed, done] = arguments, t0 = performance.now();
windowed ? LLW.jump(__b.root(), k) : [...__b.root().querySelectorAll('[data-cell]')].find(e => e.dataset.cell === k).scrollIntoView();
const end = t0 + 10000;
(function poll() {
  if (__b.shown(k)) return done(performance.now() - t0);
  if (performance.now() > end) return done(null);
  requestAnimationFrame(poll);
})();
"""


def jump_time(driver, port, name, windowed, key):
    """Median over --loads fresh page loads (the cell's HTML is not in the page yet)."""
    times = []
    for _ in range(options.loads):
        open_page(driver, port, name, windowed)
        t = driver.execute_async_script(JUMP, key, windowed)
        if t is None:
            raise Failure(f"{key} never came into view in {name}")
        times.append(t)
    return statistics.median(times)


# --- The run -------------------------------------------------------------------------------------------

def row(figure, value, baseline, goal, met, unit="", digits=0):
    fmt = (lambda v: "n/a" if v is None else f"{v:,.{digits}f}{unit}")
    ratio = f"{value / baseline:.2f}×" if value is not None and baseline else "n/a"
    print(f"| {figure} | {fmt(value)} | {fmt(baseline)} | {ratio} | {goal} | {'yes' if met else 'NO'} |", flush=True)


def main():
    rng = random.Random(SEED)
    note(f"bench-window: seed {SEED}, binary {BINARY}")
    server = tools.Server(BINARY, "--no-demo", error=Failure)
    driver = None
    try:
        port = server.port
        big_keys, small_keys = [f"c{i}" for i in range(BIG)], [f"c{i}" for i in range(SMALL)]
        uuid_keys = ["%032x" % rng.getrandbits(128) for _ in range(BIG)]
        note("creating the lists")
        for name, keys in (("big", big_keys), ("small", small_keys), ("uuid", uuid_keys), ("big-off", big_keys),
                           ("small-off", small_keys), ("big-near", big_keys), ("small-near", small_keys)):
            in_time(f"creating {name}")
            put_list(port, name, keys)
        driver = chromium()
        version = driver.capabilities.get("browserVersion", "?")
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]})
        results = {}
        note("DOM elements"); in_time("DOM elements")
        results["dom"] = (dom_elements(driver, port, "big", True, big_keys, rng), dom_elements(driver, port, "small", False, small_keys, rng))
        note("first contentful paint"); in_time("first contentful paint")
        results["fcp"] = (first_paint(driver, port, "big"), first_paint(driver, port, "small"))
        results["bytes"] = (html_bytes(port, "big"), html_bytes(port, "small"), html_bytes(port, "uuid"))
        results["keys"] = (keys_bytes(port, "big"), keys_bytes(port, "uuid"))
        note("1,000 ops off screen"); in_time("the ops off screen")
        results["off"] = (apply_time(driver, port, "big-off", True, off_screen_ops, rng), apply_time(driver, port, "small-off", False, off_screen_ops, rng))
        results["one"] = (apply_time(driver, port, "big-off", True, one_op, rng), apply_time(driver, port, "small-off", False, one_op, rng))
        note("1,000 ops around the viewport"); in_time("the ops around the viewport")
        results["near"] = (apply_time(driver, port, "big-near", True, near_ops, rng), apply_time(driver, port, "small-near", False, near_ops, rng))
        note("long frames"); in_time("the scroll")
        results["frames"] = (long_frames(driver, port, "big", True), long_frames(driver, port, "small", False))
        note("jump"); in_time("the jump")
        results["jump"] = (jump_time(driver, port, "big", True, big_keys[-1]), jump_time(driver, port, "small", False, small_keys[-1]))
    finally:
        if driver is not None:
            driver.quit()
        server.close()

    print(f"### Windowed lists: {BIG:,} cells windowed against {SMALL:,} not windowed (the baseline), same run\n")
    print(f"Command: {shlex.join([sys.argv[0]] + sys.argv[1:])}  ")
    print(f"Binary: {BINARY}; Chromium {version} (headless, 1000×800); seed {SEED}; "
          f"{options.loads} loads, {options.rounds} changesets per ops figure\n")
    print("| figure | value (100k) | baseline (1k) | ratio | goal | met? |")
    print("|---|---:|---:|---:|---|---|")
    big_dom, small_dom = results["dom"]
    row("DOM elements in the root, most over 8 scroll positions and jumps", big_dom, small_dom, "≤ 1,400", big_dom <= 1400)
    big_fcp, small_fcp = results["fcp"]
    row(f"first contentful paint, median of {options.loads} loads", big_fcp, small_fcp, "< 500 ms", big_fcp < 500, " ms")
    big_bytes, small_bytes, uuid_bytes = results["bytes"]
    row("page HTML bytes, uncompressed", big_bytes, small_bytes, "< 200 KB", big_bytes < 200_000, " B")
    row("page HTML bytes with 32-character keys (uuid4 hex)", uuid_bytes, small_bytes, "< 200 KB", uuid_bytes < 200_000, " B")
    ((off_big, off_js, off_layout), off_counts), ((off_small, off_small_js, off_small_layout), off_small_counts) = results["off"]
    row(f"main thread, 1,000 ops mostly off screen (changesets of {off_counts} vs {off_small_counts} ops)", off_big, off_small, "< 16 ms", off_big < 16, " ms", 1)
    row("  (of which script)", off_js, off_small_js, "(report)", True, " ms", 1)
    row("  (of which style and layout)", off_layout, off_small_layout, "(report)", True, " ms", 1)
    ((one_big, _, _), _), ((one_small, _, _), _) = results["one"]
    row("  (main thread, one text update off screen)", one_big, one_small, "(report)", True, " ms", 1)
    ((near_big, _, _), near_counts), ((near_small, _, _), near_small_counts) = results["near"]
    row(f"main thread, 1,000 ops around the viewport (changesets of {near_counts} vs {near_small_counts} ops)", near_big, near_small,
        "no slower", near_big <= near_small, " ms", 1)
    big_frames, small_frames = results["frames"]
    kind = "long-animation-frame > 50 ms" if big_frames["loaf"] is not None else "frames > 50 ms apart"
    value, base = (big_frames["loaf"], small_frames["loaf"]) if big_frames["loaf"] is not None else (big_frames["slow"], small_frames["slow"])
    row(f"long frames in a 200-step scroll, top to bottom ({kind})", value, base, "no more", value <= base)
    row("  (the same scroll: frames > 50 ms apart)", big_frames["slow"], small_frames["slow"], "no more", big_frames["slow"] <= small_frames["slow"])
    row("  (the same scroll: its slowest frame)", big_frames["worst"], small_frames["worst"], "(report)", True, " ms", 1)
    big_jump, small_jump = results["jump"]
    row(f"jump to the last key until in view (LLW.jump vs scrollIntoView), median of {options.loads}", big_jump, small_jump, "< 200 ms", big_jump < 200, " ms", 1)
    big_keys_b, uuid_keys_b = results["keys"]
    print(f"\nThe keys the client loads (GET /lists/NAME/cells?keys=1, uncompressed): {big_keys_b:,} B with keys c0…c99999, "
          f"{uuid_keys_b:,} B with 32-character keys.")


if __name__ == "__main__":
    try:
        main()
    except Failure as failure:
        print(f"bench-window: {failure}", file=sys.stderr)
        sys.exit(1)
