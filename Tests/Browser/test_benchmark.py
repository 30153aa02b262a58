"""Benchmark, not a pass/fail budget: applying one changeset of 1,000 ops (250 each of delete, move
across sections, reload and insert) to a 2,000-cell list in Chromium, beside replacing the list's
innerHTML with the same end state. The result must be right; the times are reported in the summary."""
import random
import statistics

from conftest import BENCHMARKS, inner_html, root_html
from test_patching import cell, open_page

MEASURE = """
const [rootHTML, cs, afterHTML, trials] = arguments, host = document.getElementById('host');
const fresh = () => { host.innerHTML = rootHTML; const r = host.firstElementChild; r.offsetHeight; return r };
const norm = h => { const d = document.createElement('div'); d.innerHTML = h; return d.innerHTML };
const want = norm(afterHTML), out = {apply: [], applyLayout: [], replace: [], replaceLayout: [], ok: true};
for (let i = 0; i < trials; i++) {
  let r = fresh(), t0 = performance.now();
  const applied = LiveList.apply(r, cs);
  const t1 = performance.now(); r.offsetHeight; const t2 = performance.now();
  out.apply.push(t1 - t0); out.applyLayout.push(t2 - t0);
  out.ok = out.ok && applied && r.innerHTML === want;
  r = fresh(); const t3 = performance.now();
  r.innerHTML = afterHTML;
  const t4 = performance.now(); r.offsetHeight; const t5 = performance.now();
  out.replace.push(t4 - t3); out.replaceLayout.push(t5 - t3);
}
host.replaceChildren();
return out;
"""


def generated(seed=7, sections=10, per_section=200, ops_each=250):
    rng = random.Random(seed)
    order = [f"s{i}" for i in range(sections)]
    cells = {s: [f"c{i}-{j}" for j in range(per_section)] for i, s in enumerate(order)}
    html = {k: cell(k, f"Item {k}") for s in order for k in cells[s]}
    where = {k: s for s in order for k in cells[s]}
    before = snapshot(order, cells, html, 1)
    kinds = ["delete", "move", "reload", "insert"] * ops_each
    rng.shuffle(kinds)
    ops, fresh = [], 0
    for kind in kinds:
        if kind in ("delete", "move", "reload"):
            key = rng.choice(list(where))
        if kind == "delete":
            cells[where.pop(key)].remove(key)
            del html[key]
            ops.append({"op": "delete", "cell": key})
        elif kind == "reload":
            html[key] = cell(key, f"Item {key} (changed {len(ops)})")
            ops.append({"op": "reload", "cell": key, "html": html[key]})
        else:
            if kind == "move":
                cells[where[key]].remove(key)
            else:
                fresh += 1
                key = f"new{fresh}"
                html[key] = cell(key, f"New {fresh}")
            section = rng.choice(order)
            position = rng.randint(0, len(cells[section]))
            after = cells[section][position - 1] if position else None
            cells[section].insert(position, key)
            where[key] = section
            op = {"op": kind, "cell": key, "section": section, "after": after}
            if kind == "insert":
                op["html"] = html[key]
            ops.append(op)
    changeset = {"protocol": 1, "list": "bench", "from": 1, "version": 2, "animate": False, "ops": ops}
    return before, changeset, snapshot(order, cells, html, 2)


def snapshot(order, cells, html, version):
    return {"protocol": 1, "list": "bench", "version": version, "sections": [
        {"key": s, "header": f'<header class="livelist-header">{s}</header>', "footer": None,
         "html": f'<section class="livelist-section" data-section="{s}"><header class="livelist-header">{s}</header>'
                 f'<ul class="livelist-cells"></ul></section>',
         "cells": [{"key": k, "html": html[k]} for k in cells[s]]} for s in order]}


def test_benchmark_applying_1000_ops(browser, server):
    before, changeset, after = generated()
    assert len(changeset["ops"]) == 1000
    open_page(browser, server, "bench")
    lines = []
    for label, options in (("options off", {}), ("keep-offset on", {"keep": True})):
        result = browser.execute_script(MEASURE, root_html(before, **options), changeset, inner_html(after), 9)
        assert result["ok"], "the benchmark changeset must give the expected page"
        median = {k: statistics.median(v) for k, v in result.items() if k != "ok"}
        lines.append(f"1,000 ops on 2,000 cells ({label}): apply {median['apply']:.1f} ms "
                     f"({median['applyLayout']:.1f} ms with layout); innerHTML of the end state "
                     f"{median['replace']:.1f} ms ({median['replaceLayout']:.1f} ms with layout); median of 9")
    BENCHMARKS.extend(lines)
    print("\n".join(lines))
