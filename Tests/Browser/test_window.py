"""Windowed lists (docs/PROTOCOL.md, "Windowed lists") against the real binary in headless Chromium: a list
of more cells than the server's window threshold (1,000) is served as a window of cells between two
placeholders, and livelist-window.js keeps the whole order and renders only the cells near the viewport.

1. Seeded random PATCHes (inserts, upserts that move, removes, text, section edits; some in the window,
   most outside it) and random scrolls and jumps: after each round the page's keys equal the server's
   snapshot, the rendered cells are a contiguous run of them, each cell's HTML is the snapshot's, the
   window covers the viewport, no placeholder is left, aria-posinset/aria-setsize are right.
2. A 100,000-cell list keeps at most 1,400 elements in its root at any scroll position, and its scrollbar
   is the whole list's (the document's height is the cells' height).
3. #KEY and ?at=KEY bring that cell into view, and the page comes to rest there; an unknown ?at= is 404.
4. Without JavaScript: 100 cells a page and the pages' links walk the whole list, each key once.
5. A catch-up the server answers with a windowed reset (a version older than its log; a diff of more
   operations than the threshold) ends with the server's snapshot.
6. A change outside the window costs no DOM work; one inside it re-renders exactly that cell.
Every test ends without console errors (the server's real Content-Security-Policy is on).

Environment: LIVELIST_BINARY (default .build/debug/livelist, built when missing), LIVELIST_WINDOW_SEED
(the random walks' seed; printed, and named in every failure)."""
import json
import os
import random
from urllib.parse import quote

import pytest

from conftest import wait_for
from test_live import Livelist, console_errors, nojs_driver, reduce_motion  # noqa: F401 (a fixture)

SEED = int(os.environ.get("LIVELIST_WINDOW_SEED") or random.SystemRandom().randrange(1 << 32))
THRESHOLD = 1000  # the server's default window threshold (--window-above)
DOM_BUDGET = 1400  # elements in a windowed list's root, at most


def tell(step=""):
    """What every failure names: the seed, and where in the walk it happened."""
    return f"LIVELIST_WINDOW_SEED={SEED}" + (f", {step}" if step else "")


@pytest.fixture(scope="module")
def live():
    server = Livelist("--window-above", str(THRESHOLD))
    yield server
    server.close()


# --- The server ----------------------------------------------------------------------------------------

def put(live, name, sections):
    body = json.dumps({"sections": sections})
    status, _, answer = live.request("PUT", f"/lists/{quote(name)}", body.encode(), {"Content-Type": "application/json"})
    assert status in (200, 201), f"PUT {name} answered {status}: {answer[:300]!r}"
    return json.loads(answer)["version"]


def patch(live, name, ops, step=""):
    status, _, answer = live.request("PATCH", f"/lists/{quote(name)}", json.dumps({"ops": ops}).encode(),
                                     {"Content-Type": "application/json"})
    assert status == 200, f"{tell(step)}: PATCH {name} answered {status}: {answer[:500]!r}\nops: {json.dumps(ops)[:2000]}"
    return json.loads(answer)


def snapshot(live, name):
    status, _, body = live.request("GET", f"/lists/{quote(name)}", headers={"Accept": "application/json"})
    assert status == 200, f"GET /lists/{name} (JSON) answered {status}"
    return json.loads(body)


def want(snap):
    """What the page must show, in the form the in-page check takes."""
    return {"version": snap["version"],
            "sections": [{"key": s["key"], "html": s["html"], "header": s["header"], "footer": s["footer"],
                          "cells": [c["key"] for c in s["cells"]]} for s in snap["sections"]],
            "html": {c["key"]: c["html"] for s in snap["sections"] for c in s["cells"]}}


def cells(first, count, prefix="c", text="Row"):
    return [{"id": f"{prefix}{i}", "text": f"{text} {i}"} for i in range(first, first + count)]


# --- In the page ---------------------------------------------------------------------------------------

# Installed once per page load: the checks of a windowed root, run in the page.
#   check(W, o): W is what the page must show (want() above), or null for the light check (o.single: a
#     list of one section whose order is the client's own). Returns {ok, problems, info}.
#   settle(W, o, done): runs check at every animation frame until it has held for o.frames frames in a
#     row with the page at rest (the same scroll position and the same rendered run), or o.timeout ms
#     pass; answers the last result.
HELPERS = r"""
if (window.__ll) return;
const T = document.createElement('template');
const norm = h => { T.innerHTML = h; const e = T.content.firstElementChild; return e ? e.outerHTML : null };
const root = () => document.querySelector('[data-window]') || document.querySelector('[data-list]');
const where = e => { const r = e.getBoundingClientRect(); return [Math.round(r.top), Math.round(r.bottom)] };
const cache = new WeakMap();  // W -> its derived maps
function derived(W) {
  let d = cache.get(W);
  if (d) return d;
  const order = [], index = new Map(), place = new Map(), html = new Map();
  for (const s of W.sections) s.cells.forEach((k, j) => { index.set(k, order.length); order.push(k); place.set(k, [s.key, j, s.cells.length]) });
  for (const k in W.html) html.set(k, W.html[k]);
  d = { order, index, place, html, norm: new Map(), secs: new Map(W.sections.map((s, i) => [s.key, [i, s]])) };
  cache.set(W, d);
  return d;
}
function check(W, o) {
  o = o || {};
  const r = root(), p = [], info = {};
  const say = t => p.length < 12 && p.push(t);
  if (!r) return { ok: false, problems: ['no list root'], info };
  info.version = r.dataset.version; info.scrollY = scrollY;
  if (W && r.dataset.version !== String(W.version)) return { ok: false, problems: [`version ${r.dataset.version}, the server is at ${W.version}`], info };
  if (!window.LLW) return { ok: false, problems: ['livelist-window.js not loaded'], info };
  const keys = LLW.keys(r);
  if (!keys) return { ok: false, problems: ['the keys are loading'], info };
  info.total = keys.length;
  let d = W && derived(W);
  if (d) {
    // (a) The client's keys are the snapshot's, in order.
    if (keys.length !== d.order.length) say(`LLW.keys has ${keys.length} keys, the snapshot ${d.order.length}`);
    const i = keys.findIndex((k, i) => k !== d.order[i]);
    if (i >= 0) say(`LLW.keys differs at ${i}: ${JSON.stringify(keys.slice(i, i + 3))}, the snapshot ${JSON.stringify(d.order.slice(i, i + 3))}`);
  } else {
    // The light check: the client's own order (of one section, for the aria positions).
    d = cache.get(keys);
    if (!d) {
      const index = new Map(keys.map((k, i) => [k, i]));
      cache.set(keys, d = { order: keys, index, place: { get: k => ['?', index.get(k), keys.length] } });
    }
    if (!o.single) o = Object.assign({}, o, { skipAria: true });
  }
  // (b) A contiguous run of that order, each cell in its section, with the snapshot's HTML.
  const cs = [...r.querySelectorAll('[data-cell]')], pending = r.querySelectorAll('.livelist-pending').length;
  info.count = cs.length; info.pending = pending; info.elements = r.querySelectorAll('*').length + 1;
  info.first = cs.length ? cs[0].dataset.cell : null; info.last = cs.length ? cs[cs.length - 1].dataset.cell : null;
  info.firstIndex = cs.length ? d.index.get(cs[0].dataset.cell) : null;
  if (pending) {
    // Which cells they stand for: their places in the run of cells and placeholders.
    const run = [...r.querySelectorAll('[data-cell], .livelist-pending')], c0 = run.findIndex(e => e.dataset.cell != null);
    const base = c0 < 0 ? null : d.index.get(run[c0].dataset.cell) - c0;
    const which = base == null ? [] : run.map((e, n) => e.dataset.cell == null ? d.order[base + n] : null).filter(k => k != null);
    say(`${pending} .livelist-pending placeholders left (for ${JSON.stringify(which.slice(0, 5))})`);
  }
  if (!cs.length && d.order.length) say('no cell rendered');
  const i0 = cs.length ? d.index.get(cs[0].dataset.cell) : 0;
  const seen = new Set();
  cs.forEach((e, n) => {
    const k = e.dataset.cell, at = d.index.get(k);
    if (seen.has(k)) say(`cell ${JSON.stringify(k)} rendered twice`);
    seen.add(k);
    if (at === undefined) return say(`cell ${JSON.stringify(k)} is rendered but not in the list`);
    if (at !== i0 + n) say(`not contiguous: rendered cell ${n} is ${JSON.stringify(k)} at position ${at}, expected position ${i0 + n} (${JSON.stringify(d.order[i0 + n])})`);
    const [sk, j, size] = d.place.get(k), se = e.closest('[data-section]');
    if (W && (!se || se.dataset.section !== sk || se.parentElement !== r)) say(`cell ${JSON.stringify(k)} is in section ${se && JSON.stringify(se.dataset.section)}, not ${JSON.stringify(sk)}`);
    // (d) Its position in its section.
    if (!o.skipAria && (e.getAttribute('aria-posinset') !== String(j + 1) || e.getAttribute('aria-setsize') !== String(size)))
      say(`cell ${JSON.stringify(k)}: aria-posinset ${e.getAttribute('aria-posinset')} aria-setsize ${e.getAttribute('aria-setsize')}, expected ${j + 1} of ${size}`);
    if (W) {
      const c = e.cloneNode(true);
      c.removeAttribute('aria-posinset'); c.removeAttribute('aria-setsize');
      let h = d.norm.get(k);
      if (h === undefined) d.norm.set(k, h = norm(d.html.get(k)));
      if (c.outerHTML !== h) say(`cell ${JSON.stringify(k)} shows ${JSON.stringify(c.outerHTML.slice(0, 300))}, the snapshot ${JSON.stringify((h || '').slice(0, 300))}`);
    }
  });
  // The root: the placeholder before, sections in the list's order (a contiguous run of them, every
  // rendered cell's among them; one without rendered cells only when it is empty), the placeholder after.
  const kids = [...r.children], g0 = kids[0], g1 = kids[kids.length - 1];
  if (!g0 || g0.dataset.gap !== 'before' || !g1 || g1.dataset.gap !== 'after') say(`the root's first and last children are not the placeholders: ${kids.map(e => e.tagName + (e.dataset.gap ? ':' + e.dataset.gap : '')).join(' ')}`);
  if (W) {
    const shown = kids.slice(1, -1), at = shown.map(e => d.secs.has(e.dataset.section) ? d.secs.get(e.dataset.section)[0] : -1);
    if (at.some(i => i < 0)) say(`sections not in the list are shown: ${JSON.stringify(shown.map(e => e.dataset.section))}`);
    if (at.some((i, n) => n && i !== at[n - 1] + 1)) say(`the sections shown are not a run of the list's: ${JSON.stringify(shown.map(e => e.dataset.section))}`);
    const withCells = new Set(cs.map(e => d.place.get(e.dataset.cell) && d.place.get(e.dataset.cell)[0]));
    for (const k of withCells) if (k && !shown.some(e => e.dataset.section === k)) say(`section ${JSON.stringify(k)} of rendered cells is not a child of the root`);
    shown.forEach(e => {
      const x = d.secs.get(e.dataset.section);
      if (!x) return;
      const s = x[1];
      if (s.cells.length && !withCells.has(s.key)) say(`section ${JSON.stringify(s.key)} is shown without any of its ${s.cells.length} cells`);
      const c = e.cloneNode(true), box = c.children[s.header == null ? 0 : 1];
      box && box.replaceChildren();
      if (c.outerHTML !== norm(s.html)) say(`section ${JSON.stringify(s.key)} shows ${JSON.stringify(c.outerHTML.slice(0, 300))}, the snapshot ${JSON.stringify(norm(s.html).slice(0, 300))}`);
    });
  }
  // (c) The window covers the viewport: neither placeholder shows in it.
  const rr = r.getBoundingClientRect(), top = Math.max(0, rr.top), bottom = Math.min(innerHeight, rr.bottom);
  if (bottom > top && d.order.length && g0 && g1) {
    const b0 = g0.getBoundingClientRect().bottom, t1 = g1.getBoundingClientRect().top;
    if (b0 > top + 1) say(`the placeholder before reaches ${Math.round(b0 - top)} px into the viewport (rendered ${info.first}..${info.last})`);
    if (t1 < bottom - 1) say(`the placeholder after starts ${Math.round(bottom - t1)} px above the viewport's end (rendered ${info.first}..${info.last})`);
    const topCell = cs.find(e => e.getBoundingClientRect().bottom > top);
    info.top = topCell ? topCell.dataset.cell : null;
    if (!topCell || topCell.getBoundingClientRect().top > top + 200) say(`no rendered cell at the viewport's top (rendered ${info.first}..${info.last})`);
  }
  if (o.budget && info.elements > o.budget) say(`${info.elements} elements in the root, more than ${o.budget}`);
  return { ok: !p.length, problems: p, info };
}
function settle(W, o, done) {
  const end = performance.now() + (o.timeout || 15000), trail = [];
  let last, calm = 0, mark = '';
  (function tick() {
    last = check(W, o);
    const m = [scrollY, last.info.first, last.info.last, last.info.count].join();
    calm = last.ok && m === mark ? calm + 1 : last.ok ? 1 : 0;
    mark = m;
    trail.push(`${Math.round(scrollY)}:${last.info.first}`); trail.length > 8 && trail.shift();
    if (calm >= (o.frames || 8)) return done(last);
    if (performance.now() > end) {
      last.ok || last.problems.length || last.problems.push('the page never came to rest: every frame a new scroll position or window');
      return done(Object.assign(last, { ok: false, timedOut: true, calm, trail }));
    }
    requestAnimationFrame(tick);
  })();
}
// Where a cell is: [top, bottom] in the viewport, or null when it is not rendered.
const cellAt = k => { const e = [...root().querySelectorAll('[data-cell]')].find(e => e.dataset.cell === k); return e ? where(e) : null };
// Comes to rest: the same scroll position for `frames` frames in a row (a page that keeps scrolling by
// itself never does), with the cell `k` rendered and no placeholder pending; answers the cell's place.
function rest(k, frames, timeout, done) {
  const end = performance.now() + timeout, trail = [];
  let calm = 0, y = null;
  (function tick() {
    const r = root(), loaded = window.LLW && LLW.keys(r), at = cellAt(k), pending = r.querySelectorAll('.livelist-pending').length;
    trail.push(scrollY); trail.length > 12 && trail.shift();
    calm = loaded && at && !pending && scrollY === y ? calm + 1 : 0;
    y = scrollY;
    if (calm >= frames) return done({ rest: true, at, scrollY, innerHeight, trail });
    if (performance.now() > end) return done({ rest: false, at, scrollY, innerHeight, trail, loaded: !!loaded, pending });
    requestAnimationFrame(tick);
  })();
}
window.__ll = { check, settle, rest, cellAt, root };
"""


def open_page(browser, live, path, wait_keys=True):
    browser.get(f"{live.base}{path}")
    wait_for(lambda: browser.execute_script("return !!window.LiveList && !!window.LLW && !!document.querySelector('[data-window]')"),
             timeout=15, message=f"livelist.js and livelist-window.js running on {path}")
    browser.execute_script(HELPERS)
    if wait_keys:
        wait_for(lambda: browser.execute_script("return !!LLW.keys(__ll.root())"), timeout=20, message="the keys loaded")


def settle(browser, W, step, timeout=20, **options):
    """The page settles on what W says (or, without W, on a consistent window); fails with the problems."""
    options = dict(options, timeout=timeout * 1000)
    result = browser.execute_async_script("__ll.settle(arguments[0], arguments[1], arguments[2])", W, options)
    assert result["ok"], (f"{tell(step)}: the page did not settle{' (timed out)' if result.get('timedOut') else ''}: "
                          f"{result['problems']}; {result['info']}; the last frames (scrollY:first cell) {result.get('trail')}")
    return result["info"]


def rendered(browser):
    return browser.execute_script("return [...__ll.root().querySelectorAll('[data-cell]')].map(e => e.dataset.cell)")


def jump(browser, target, step):
    ok = browser.execute_script("return LLW.jump(__ll.root(), arguments[0])", target)
    assert ok, f"{tell(step)}: LLW.jump(root, {target!r}) answered {ok!r}"


def in_view(browser, key, step, frames=10, timeout=15):
    """The cell `key` is rendered, the page comes to rest, and the cell is then in the viewport."""
    result = browser.execute_async_script("__ll.rest(arguments[0], arguments[1], arguments[2], arguments[3])", key, frames, timeout * 1000)
    assert result["rest"], (f"{tell(step)}: the page never came to rest with {key!r} rendered within {timeout} s "
                            f"(the cell at {result['at']}, scrollY over the last frames {result['trail']}, "
                            f"keys loaded {result.get('loaded')}, {result.get('pending')} placeholders pending)")
    top, bottom = result["at"]
    assert bottom > 0 and top < result["innerHeight"], \
        f"{tell(step)}: {key!r} is rendered at {top}..{bottom} px, outside the viewport (0..{result['innerHeight']})"
    return result


# --- 1. Random changes and scrolls ---------------------------------------------------------------------

HOSTILE = ['"', "'", "<", ">", "&", "&amp;", " ", "é", "e\u0301", "😀", "#", "?", "%20", "/", "\\", "]"]


class Walk:
    """A JSON list's state and seeded PATCHes of it; the state is what the server must end with."""

    def __init__(self, rng, total):
        self.rng, self.serial = rng, 0
        parts = sorted(rng.sample(range(1, total), rng.randint(0, 2)))
        bounds = [0] + parts + [total]
        self.sections = []
        for n, (a, b) in enumerate(zip(bounds, bounds[1:])):
            section = {"id": f"s{n}", "cells": cells(a, b - a)}
            if rng.random() < 0.7:
                section["header"] = f"Section {n}"
            if rng.random() < 0.3:
                section["footer"] = f"End of {n}"
            self.sections.append(section)

    def body(self):
        return json.loads(json.dumps(self.sections))

    def keys(self):
        return [c["id"] for s in self.sections for c in s["cells"]]

    def find(self, key):
        for s in self.sections:
            for i, c in enumerate(s["cells"]):
                if c["id"] == key:
                    return s, i
        raise KeyError(key)

    def new_key(self):
        self.serial += 1
        if self.rng.random() < 0.15:
            return f"n{self.serial}{''.join(self.rng.choice(HOSTILE) for _ in range(self.rng.randint(1, 3)))}"
        return f"n{self.serial}"

    def pick(self, near):
        """A cell key: one of `near` (the rendered ones) some of the time, else any."""
        every = self.keys()
        present = set(every)
        near = [k for k in near if k in present]
        if near and self.rng.random() < 0.35:
            return self.rng.choice(near)
        return self.rng.choice(every)

    def position(self, section, near, moving=None):
        """A position in `section` (a model section) and where it puts a cell: (json, index)."""
        rng, others = self.rng, [c["id"] for c in section["cells"] if c["id"] != moving]
        roll = rng.random()
        if not others or roll < 0.1:
            return "first", 0
        if roll < 0.2:
            return "last", len(others)
        close = [k for k in near if k in others]
        anchor = rng.choice(close) if close and rng.random() < 0.4 else rng.choice(others)
        return {"after": anchor}, others.index(anchor) + 1

    def op(self, near, step):
        rng, sections = self.rng, self.sections
        total = sum(len(s["cells"]) for s in sections)
        kind = rng.choices(["update", "insert", "move", "remove", "section", "newSection", "removeSection"],
                           [30, 22, 22, 20, 3, 2, 1])[0]
        if kind == "insert" or total == 0:
            section = rng.choice(sections)
            position, at = self.position(section, near)
            cell = {"id": self.new_key(), "text": f"New {self.serial} at {step}"}
            section["cells"].insert(at, cell)
            return {"op": "upsert", "cell": dict(cell), "section": section["id"], "position": position}
        if kind == "update":
            key = self.pick(near)
            section, i = self.find(key)
            cell = section["cells"][i] = {"id": key, "text": f"Text {rng.randrange(10 ** 6)} at {step}"}
            if rng.random() < 0.2:
                cell["detail"] = f"detail {rng.randrange(100)}"
            return {"op": "update", "cell": dict(cell)}
        if kind == "move":
            key = self.pick(near)
            section, i = self.find(key)
            cell = section["cells"].pop(i)
            target = section if rng.random() < 0.6 else rng.choice(sections)
            position, at = self.position(target, near, moving=key)
            target["cells"].insert(at, cell)
            return {"op": "upsert", "cell": dict(cell), "section": target["id"], "position": position}
        if kind == "remove":
            key = self.pick(near)
            section, i = self.find(key)
            section["cells"].pop(i)
            return {"op": "remove", "cell": key}
        if kind == "section":
            section = rng.choice(sections)
            for part in ("header", "footer"):
                if rng.random() < 0.5:
                    section[part] = f"{part.title()} {rng.randrange(1000)} at {step}"
                elif rng.random() < 0.3:
                    section.pop(part, None)
            return {"op": "upsertSection", "section": {k: section[k] for k in ("id", "header", "footer") if k in section}}
        if kind == "newSection" and len(sections) < 5:
            self.serial += 1
            section = {"id": f"t{self.serial}", "header": f"New section {self.serial}", "cells": []}
            at = rng.randint(0, len(sections))
            position = "first" if at == 0 else {"after": sections[at - 1]["id"]}
            sections.insert(at, section)
            return {"op": "upsertSection", "section": {"id": section["id"], "header": section["header"]}, "position": position}
        small = [s for s in sections if len(s["cells"]) < 200]
        if kind == "removeSection" and len(sections) > 1 and small:
            section = rng.choice(small)
            sections.remove(section)
            return {"op": "removeSection", "section": section["id"]}
        return self.op(near, step)

    def patch(self, near, step):
        rng = self.rng
        count = rng.randint(150, 400) if rng.random() < 0.15 else rng.randint(1, 30)
        return [self.op(near, step) for _ in range(count)]


ROUNDS = 24


def test_random_changes_and_scrolls_keep_the_window_equal_to_the_server(browser, live):
    """Rounds of a seeded PATCH (most of it outside the window) and a scroll (to a random place, racing
    the changeset, or after it; or LLW.jump to a random key): the page's keys, rendered run, cells,
    sections and aria positions equal the server's snapshot, the window covers the viewport, and a
    jumped-to cell is in view."""
    print(tell())
    rng, name = random.Random(SEED), "walk"
    walk = Walk(rng, 5000)
    put(live, name, walk.body())
    reduce_motion(browser)
    browser.get_log("browser")
    open_page(browser, live, f"/lists/{name}")
    settle(browser, want(snapshot(live, name)), "the first page")
    kinds = {}
    for step in range(1, ROUNDS + 1):
        near = rendered(browser)
        ops = walk.patch(near, step)
        for op in ops:
            kinds[op["op"]] = kinds.get(op["op"], 0) + 1
        answer = patch(live, name, ops, f"round {step}")
        assert answer["skipped"] == 0, f"{tell(f'round {step}')}: {answer['skipped']} operations skipped"
        scroll = rng.choice(["race", "after", "jump", "none"])
        if scroll == "race":  # the scroll and the changeset reach the page in either order
            browser.execute_script("scrollTo(0, arguments[0] * (document.documentElement.scrollHeight - innerHeight))", rng.random())
        snap = snapshot(live, name)
        assert snap["version"] == answer["version"], f"{tell(f'round {step}')}: snapshot at {snap['version']}, PATCH made {answer['version']}"
        keys = [c["key"] for s in snap["sections"] for c in s["cells"]]
        assert keys == walk.keys(), f"{tell(f'round {step}')}: the server's order is not the PATCHes' (server bug)"
        W = want(snap)
        wait_for(lambda: browser.execute_script("return __ll.root().dataset.version") == str(snap["version"]),
                 timeout=10, message=f"{tell(f'round {step}')}: version {snap['version']} in the page")
        target = None
        if scroll == "after":
            browser.execute_script("scrollTo(0, arguments[0] * (document.documentElement.scrollHeight - innerHeight))", rng.random())
        elif scroll == "jump" and keys:
            target = rng.choice(keys)
            jump(browser, target, f"round {step}")
        settle(browser, W, f"round {step} ({len(ops)} ops, scroll: {scroll})")
        if target is not None:
            in_view(browser, target, f"round {step}: jump to {target!r}")
    assert {"update", "upsert", "remove"} <= set(kinds), f"{tell()}: the walk missed kinds of operation: {kinds}"
    errors = console_errors(browser)
    assert not errors, f"{tell()}: console errors: {errors}"


# --- 2. The DOM budget and the true scrollbar ----------------------------------------------------------

BIG = 100_000


@pytest.fixture(scope="module")
def big(live):
    """A 100,000-cell list of one section, keys c0..c99999 (PUT once for the module)."""
    put(live, "big", [{"id": "a", "cells": cells(0, BIG)}])
    return "big"


HEIGHTS = """
const r = __ll.root(), cs = [...r.querySelectorAll('[data-cell]')].map(e => e.getBoundingClientRect().height).sort((a, b) => a - b);
return {cell: cs[cs.length >> 1], root: r.getBoundingClientRect().height, document: document.documentElement.scrollHeight,
        nav: getComputedStyle(document.querySelector('nav.livelist-pages')).display};
"""


def test_a_100000_cell_list_keeps_few_elements_and_a_true_scrollbar(browser, live, big):
    print(tell())
    rng = random.Random(SEED + 2)
    open_page(browser, live, f"/lists/{big}")
    most, where = 0, []
    places = [("top", 0.0), ("25 %", 0.25), ("50 %", 0.5), ("bottom", 1.0)]
    places += [(f"jump to c{n}", f"c{n}") for n in (77777, rng.randrange(BIG), 99999, 0)] + [("jump to index 12345", 12345)]
    for label, place in places:
        if isinstance(place, float):
            browser.execute_script("scrollTo(0, arguments[0] * (document.documentElement.scrollHeight - innerHeight))", place)
        else:
            jump(browser, place, label)
        info = settle(browser, None, label, budget=DOM_BUDGET, single=True)
        most = max(most, info["elements"])
        where.append(f"{label}: {info['elements']} elements, cells {info['first']}..{info['last']}")
        if not isinstance(place, float):
            in_view(browser, place if isinstance(place, str) else f"c{place}", label)
        if label == "bottom":
            assert info["last"] == f"c{BIG - 1}", f"{tell(label)}: at the bottom the last cell rendered is {info['last']}"
        if label == "top":
            assert info["first"] == "c0", f"{tell(label)}: at the top the first cell rendered is {info['first']}"
        h = browser.execute_script(HEIGHTS)
        expected = BIG * h["cell"]
        assert abs(h["root"] - expected) <= 0.03 * expected, \
            f"{tell(label)}: the list is {h['root']:.0f} px high; {BIG} cells of {h['cell']:.2f} px make {expected:.0f} px"
        assert abs(h["document"] - expected) <= 0.03 * expected, \
            f"{tell(label)}: the document is {h['document']} px high; {BIG} cells of {h['cell']:.2f} px make {expected:.0f} px"
    # A viewport of 6,000 px: the window reaches its cap of 300 cells, and the budget holds.
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 1000, "height": 6000, "deviceScaleFactor": 1, "mobile": False})
    try:
        browser.execute_script("scrollTo(0, document.documentElement.scrollHeight / 3)")
        info = settle(browser, None, "a 6,000 px viewport", budget=DOM_BUDGET, single=True)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    where.append(f"a 6,000 px viewport: {info['elements']} elements, {info['count']} cells")
    assert info["count"] <= 300, f"{tell()}: {info['count']} cells rendered, more than the window's 300"
    print("; ".join(where))
    # With JavaScript the pages' links are hidden (livelist.css, `@media (scripting: enabled)`).
    assert h["nav"] == "none", f"the pages' links show with JavaScript on (display {h['nav']})"
    errors = console_errors(browser)
    assert not errors, f"{tell()}: console errors: {errors}"


# --- 3. #KEY and ?at=KEY -------------------------------------------------------------------------------

@pytest.mark.parametrize("path, key", [("#c77777", "c77777"), ("?at=c55555", "c55555"), ("?at=c31000#c31050", "c31050"),
                                       ("#c99999", "c99999")])
def test_a_key_in_the_address_is_brought_into_view(browser, live, big, path, key):
    """The cell is rendered and, once the page is at rest (the same scroll position for 10 frames), in
    the viewport; the window around it is consistent."""
    browser.get("about:blank")
    open_page(browser, live, f"/lists/{big}{path}")
    in_view(browser, key, path)
    settle(browser, None, path, budget=DOM_BUDGET, single=True)
    in_view(browser, key, f"{path}, after settling")
    errors = console_errors(browser)
    assert not errors, f"console errors: {errors}"


def test_an_unknown_at_key_is_not_found(browser, live, big):
    for at in ("nope", "c100000", "C5", "c5 "):
        status, _, _ = live.request("GET", f"/lists/{big}?at={quote(at)}", headers={"Accept": "text/html"})
        assert status == 404, f"?at={at!r} answered {status}, not 404"
    status, _, _ = live.request("GET", f"/lists/{big}?at=c5", headers={"Accept": "text/html"})
    assert status == 200, f"?at=c5 answered {status}"


# --- 4. Without JavaScript -----------------------------------------------------------------------------

NOJS_TOTAL = 2537
# Keys at page boundaries that the pages' links must carry exactly (escaped in the URL and in HTML).
ODD = {100: "k 100&x=1#y", 1200: "k/é?+%20;", 2437: "k\"<'>", 2500: "k&amp;#", 400: "k+ +"}

PAGE = """
const r = document.querySelector('[data-list]'), nav = document.querySelector('nav.livelist-pages');
const link = t => { const a = [...nav.querySelectorAll('a')].find(a => a.textContent.trim() === t); return a ? a.href : null };
return {script: typeof window.LiveList, first: r.dataset.first, total: r.dataset.total,
  keys: [...r.querySelectorAll('[data-cell]')].map(e => e.dataset.cell),
  hidden: [...r.querySelectorAll('[data-cell]')].filter(e => !e.getBoundingClientRect().height).length,
  gaps: [...r.querySelectorAll('[data-gap]')].map(g => [getComputedStyle(g).display, g.getBoundingClientRect().height]),
  pending: r.querySelectorAll('.livelist-pending').length,
  label: nav.querySelector('span') && nav.querySelector('span').textContent,
  next: (nav.querySelector('a[rel=next]') || {}).href || null, prev: (nav.querySelector('a[rel=prev]') || {}).href || null,
  First: link('First'), Previous: link('Previous'), Next: link('Next'), Last: link('Last')};
"""


def test_without_javascript_the_pages_links_walk_the_whole_list(nojs_driver, live):
    browser = nojs_driver
    order = [ODD.get(i, f"c{i}") for i in range(NOJS_TOTAL)]
    split = 1000
    put(live, "nojs", [{"id": "a", "header": "First part", "footer": "End of the first part",
                        "cells": [{"id": k, "text": f"Row {i}"} for i, k in enumerate(order[:split])]},
                       {"id": "b", "header": "Second part",
                        "cells": [{"id": k, "text": f"Row {i + split}"} for i, k in enumerate(order[split:])]}])
    pages = {}

    def visit(url):
        browser.get(url)
        p = browser.execute_script(PAGE)
        assert p["script"] == "undefined", "JavaScript is on"
        pages[url] = p
        return p

    url, collected, starts = f"{live.base}/lists/nojs", [], []
    for _ in range(40):
        p = visit(url)
        first = int(p["first"])
        starts.append(first)
        assert p["total"] == str(NOJS_TOTAL)
        assert p["keys"] == order[first:first + 100], f"the page at {url} shows {p['keys'][:3]}…, expected {order[first:first + 3]}…"
        assert p["hidden"] == 0 and p["pending"] == 0, f"{url}: {p['hidden']} cells without height, {p['pending']} placeholders"
        assert all(display == "none" or height == 0 for display, height in p["gaps"]), f"{url}: placeholders show: {p['gaps']}"
        shown = len(p["keys"])
        assert p["label"] == f"Cells {first + 1}–{first + shown} of {NOJS_TOTAL}", f"{url}: the label says {p['label']!r}"
        collected += p["keys"]
        if not p["next"]:
            break
        url = p["next"]
    assert collected == order, (f"following Next from the first page collects {len(collected)} keys "
                                f"({len(set(collected))} different), the list has {len(order)}; pages started at {starts}")
    assert starts == list(range(0, NOJS_TOTAL, 100)), f"the pages start at {starts}"
    # Previous, First and Last go where they say, from a few pages.
    for url, p in list(pages.items())[1:4] + list(pages.items())[-1:]:
        first = int(p["first"])
        assert p["prev"] == p["Previous"] and p["Previous"], f"{url}: no Previous link"
        before = visit(p["Previous"])
        assert int(before["first"]) == max(0, first - 100), f"Previous from the page at {first} goes to {before['first']}"
        top = visit(p["First"])
        assert top["first"] == "0" and top["keys"] == order[:100] and not top["prev"] and top["First"] is None, \
            f"First from {first}: at {top['first']}, links {top['First']!r} {top['prev']!r}"
    p = pages[f"{live.base}/lists/nojs"]
    assert p["Previous"] is None and p["First"] is None, "the first page links to a previous one"
    last = visit(p["Last"])
    assert last["keys"] == order[-100:] and not last["next"] and last["Last"] is None, \
        f"Last goes to the page at {last['first']} ({len(last['keys'])} cells, ending {last['keys'][-1:]}), next {last['next']!r}"


# --- 5. The windowed reset -----------------------------------------------------------------------------

RECORD = """window.__resets = [];
document.addEventListener('livelist:patch', e => { const o = e.detail.ops || [];
  o.length == 1 && o[0].op == 'reset' && __resets.push({from: e.detail.from, version: e.detail.version, total: o[0].total,
    cells: o[0].sections.reduce((n, s) => n + (s.cells || []).length, 0)}) });
window.__ranges = () => performance.getEntriesByType('resource').filter(x => /\\/cells\\?/.test(x.name) && /keys=1/.test(x.name)).length;"""


@pytest.fixture
def short_log():
    """The real binary with a log of four changesets."""
    server = Livelist("--log-count", "4", "--window-above", str(THRESHOLD))
    yield server
    server.close()


@pytest.mark.parametrize("how", ["log", "diff"])
def test_a_windowed_reset_brings_the_page_to_the_server(browser, live, request, how):
    """`log`: the page is away for 10 PATCHes, more than the server's log of 4 holds. `diff`: one PATCH
    of 1,100 operations, more than the window threshold. Either way the catch-up is a windowed reset,
    and the page ends with the server's snapshot."""
    print(tell())
    server = request.getfixturevalue("short_log") if how == "log" else live
    rng, name = random.Random(SEED + (5 if how == "log" else 6)), f"reset-{how}"
    walk = Walk(rng, 5000)
    put(server, name, walk.body())
    reduce_motion(browser)
    browser.get_log("browser")
    open_page(browser, server, f"/lists/{name}")
    browser.execute_script(RECORD)
    browser.execute_script("scrollTo(0, arguments[0] * (document.documentElement.scrollHeight - innerHeight))", rng.random())
    settle(browser, want(snapshot(server, name)), "before")
    ranges = browser.execute_script("return __ranges()")
    browser.execute_script("LiveList.close()")
    near = rendered(browser)
    if how == "log":
        for step in range(10):
            patch(server, name, [walk.op(near, f"away {step}") for _ in range(rng.randint(1, 20))], f"away {step}")
    else:
        ops = [walk.op(near, "away") for _ in range(60)]
        ops += [{"op": "update", "cell": {"id": k, "text": f"Away {k}"}} for k in rng.sample(walk.keys(), 1100)]
        for op in ops[60:]:
            section, i = walk.find(op["cell"]["id"])
            section["cells"][i] = dict(op["cell"])
        patch(server, name, ops, "away")
    snap = snapshot(server, name)
    assert [c["key"] for s in snap["sections"] for c in s["cells"]] == walk.keys(), f"{tell()}: the server's order is not the PATCHes'"
    browser.execute_script("LiveList.connect()")
    wait_for(lambda: browser.execute_script("return __resets.length"), timeout=10, message=f"{tell()}: the reset")
    settle(browser, want(snap), f"after the reset ({how})")
    resets = browser.execute_script("return __resets")
    assert resets[0]["total"] == len(walk.keys()), f"the reset is not windowed (no total, or the wrong one): {resets}"
    assert resets[0]["cells"] <= 100, f"the windowed reset carries {resets[0]['cells']} cells"
    assert browser.execute_script("return __ranges()") > ranges, "the client did not ask for the keys after the reset"
    errors = console_errors(browser)
    assert not errors, f"{tell()}: console errors: {errors}"


# --- 6. Changes outside the window cost no DOM work ----------------------------------------------------

OBSERVE = """
const r = __ll.root();
window.__records = [];
r.querySelectorAll('[data-cell]').forEach(e => { e.__mark = 1 });
window.__mo && __mo.disconnect();
window.__mo = new MutationObserver(l => __records.push(...l));
__mo.observe(r, {subtree: true, childList: true, attributes: true, attributeOldValue: true, characterData: true});
"""

# The records since OBSERVE, after the version and a few frames: each described, with whether it is one
# of the allowed kinds: the root's data-version, the placeholder after's height, plus `extra`.
RECORDS = """
const [version, cell, setsize, done] = arguments, r = __ll.root();
const name = n => n.nodeType == 1 ? n.tagName.toLowerCase() + (n.dataset.cell != null ? `[data-cell=${n.dataset.cell}]` : n.dataset.gap ? `[data-gap=${n.dataset.gap}]` : n.dataset.section != null ? `[data-section=${n.dataset.section}]` : n.className ? '.' + n.className : '') : '#text';
let frames = 0;
(function tick() {
  if (r.dataset.version !== String(version) || frames++ < 6) return requestAnimationFrame(tick);
  __records.push(...__mo.takeRecords());
  const out = __records.map(m => {
    const t = m.target, now = m.type == 'attributes' ? t.getAttribute(m.attributeName) : null;
    let ok = m.type == 'attributes' && (t == r && m.attributeName == 'data-version' || t.dataset.gap == 'after' && m.attributeName == 'height');
    // The re-rendered cell: its replacement in its container, and its own attributes.
    if (cell != null) {
      const e = [...r.querySelectorAll('[data-cell]')].find(e => e.dataset.cell === cell);
      ok = ok || m.type == 'attributes' && t == e ||
        m.type == 'childList' && [...m.addedNodes, ...m.removedNodes].every(n => n.nodeType == 1 && n.dataset.cell === cell);
    }
    // A section whose size changed: aria-setsize takes the new size.
    if (setsize) ok = ok || m.type == 'attributes' && m.attributeName == 'aria-setsize' && now !== m.oldValue &&
      t.closest('[data-section]') && t.closest('[data-section]').dataset.section === setsize;
    return {ok, same: m.type == 'attributes' && now === m.oldValue, text: m.type + ' ' + name(t) +
      (m.type == 'attributes' ? ` ${m.attributeName}: ${JSON.stringify(m.oldValue)} -> ${JSON.stringify(now)}` : '') +
      (m.type == 'childList' ? ` +[${[...m.addedNodes].map(name)}] -[${[...m.removedNodes].map(name)}]` : '')};
  });
  const kept = [...r.querySelectorAll('[data-cell]')].filter(e => e.__mark).map(e => e.dataset.cell);
  done({records: out, kept, cells: [...r.querySelectorAll('[data-cell]')].map(e => [e.dataset.cell, e.textContent])});
})();
"""


def dom_work(browser, live, name, ops, cell=None, setsize=None):
    """PATCHes `ops` with the observer on; answers (the records not allowed, the records, the page's cells
    whose elements were kept, the cells)."""
    browser.execute_script(OBSERVE)
    version = patch(live, name, ops)["version"]
    out = browser.execute_async_script(RECORDS, version, cell, setsize)
    bad = [r for r in out["records"] if not r["ok"]]
    return bad, out


def test_a_change_outside_the_window_costs_no_dom_work(browser, live):
    """The page at the top of a list of two sections of 2,500 cells: text updates and inserts far below
    the window touch nothing but the root's version and the placeholder after's height; an insert at
    the end of the window's own section changes only aria-setsize; a change of a cell in the window
    replaces that cell's element and no other."""
    name = "quiet"
    put(live, name, [{"id": "a", "header": "A", "cells": cells(0, 2500)}, {"id": "b", "header": "B", "cells": cells(2500, 2500)}])
    reduce_motion(browser)
    browser.get_log("browser")
    open_page(browser, live, f"/lists/{name}")
    settle(browser, want(snapshot(live, name)), "the first page")
    before = rendered(browser)
    assert before[0] == "c0" and len(before) < 300, before[:3]

    def explain(bad, out, what):
        same = sum(1 for r in out["records"] if r["same"])
        bad = sorted(bad, key=lambda r: r["same"])  # real changes first
        return (f"{what}: {len(bad)} DOM mutations beyond the root's version and the placeholder's height "
                f"({same} of them rewrite an attribute with the value it had): " + "; ".join(r["text"] for r in bad[:12]))

    # Each case is checked, and every problem reported at the end.
    problems = []
    # Far below the window, in both sections: text updates, inserts at the ends, a remove, a header.
    ops = [{"op": "update", "cell": {"id": f"c{i}", "text": f"Far {i}"}} for i in (1800, 2400, 2499, 3000, 4999)]
    ops += [{"op": "upsert", "cell": {"id": f"far{i}", "text": f"Far {i}"}, "section": "b", "position": "last"} for i in range(5)]
    ops += [{"op": "remove", "cell": "c4000"}, {"op": "upsert", "cell": {"id": "c4100", "text": "Row 4100"}, "section": "b", "position": "last"},
            {"op": "upsertSection", "section": {"id": "b", "header": "B, changed"}}]
    bad, out = dom_work(browser, live, name, ops)
    bad and problems.append(explain(bad, out, "changes far outside the window"))
    out["kept"] == before or problems.append(f"far changes: cells' elements replaced: {sorted(set(before) - set(out['kept']))[:10]}")
    settle(browser, want(snapshot(live, name)), "after the far changes")

    # An insert at the end of the window's own section: only its cells' aria-setsize changes.
    bad, out = dom_work(browser, live, name, [{"op": "upsert", "cell": {"id": "end-a", "text": "End of A"}, "section": "a", "position": "last"}],
                        setsize="a")
    bad and problems.append(explain(bad, out, "an insert at the end of the window's section"))
    out["kept"] == before or problems.append(f"an insert at the end: cells' elements replaced: {sorted(set(before) - set(out['kept']))[:10]}")
    settle(browser, want(snapshot(live, name)), "after the insert in the window's section")

    # A cell in the window: that cell's element is replaced, every other one stays.
    target = before[len(before) // 4]
    bad, out = dom_work(browser, live, name, [{"op": "update", "cell": {"id": target, "text": "Changed in view"}}], cell=target)
    bad and problems.append(explain(bad, out, f"a change of {target}, in the window"))
    out["kept"] == [k for k in before if k != target] or problems.append(
        f"a change of {target}: other cells' elements were replaced: {sorted(set(before) - set(out['kept']) - {target})[:10]}")
    [target, "Changed in view"] in out["cells"] or problems.append(f"{target} does not show its new text")
    any(not r["same"] and r["text"].startswith("childList") for r in out["records"]) or problems.append(f"{target} was not re-rendered")
    settle(browser, want(snapshot(live, name)), "after the change in the window")
    assert not problems, "\n".join(problems)
    errors = console_errors(browser)
    assert not errors, f"console errors: {errors}"
