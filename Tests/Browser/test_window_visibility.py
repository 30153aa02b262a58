"""Visibility reports of a windowed list (docs/PROTOCOL.md, "Windowed lists"): cells that ask for them
report as they enter and leave the viewport while the window moves, never for the whole list, and a cell
that leaves the window while seen is reported hidden. Against the scripted test server: the page is a
windowed root of 2,000 cells of a fixed height, and the range route answers from the same model."""
import json

from conftest import json_answer, page, reported_cells, status, visible_cells, wait_for

TOTAL, HEIGHT = 2_000, 40


def cell(i):
    flag = ' data-visibility="true"' if i % 2 == 0 else ""
    return f'<li class="livelist-cell" data-cell="v{i}"{flag}><span class="livelist-text">{i}</span></li>'


SECTION = '<section class="livelist-section" data-section="s"><ul class="livelist-cells"></ul></section>'


def cells_route(h, record):
    """GET /lists/seen/cells: the cells asked for, every key with keys=1, at version 1."""
    args = record["args"]
    start, count = int(args.get("from", ["0"])[0]), int(args["count"][0])
    section = {"key": "s", "start": 0, "count": TOTAL, "html": SECTION, "header": None, "footer": None}
    if args.get("keys") == ["1"]:
        section["keys"] = [f"v{i}" for i in range(TOTAL)]
    answer = {"protocol": 1, "list": "seen", "version": 1, "total": TOTAL, "from": start, "changes": None,
              "sections": [section], "cells": [{"key": f"v{i}", "html": cell(i)} for i in range(start, min(TOTAL, start + count))]}
    h.answer(200, json.dumps(answer).encode(), "application/json")


def windowed_root():
    cells = "".join(cell(i) for i in range(100))
    return ('<div class="livelist" data-list="seen" data-version="1" data-animate="false" data-animate-reloads="false" '
            'data-animate-scrolling="false" data-keep-offset="false" data-stick-bottom="false" data-window="true" '
            f'data-total="{TOTAL}" data-first="0" data-cell-height="{HEIGHT}" data-fixed-height="true">'
            '<svg class="livelist-gap" data-gap="before" aria-hidden="true" width="1" height="0"></svg>'
            f'<section class="livelist-section" data-section="s"><ul class="livelist-cells">{cells}</ul></section>'
            f'<svg class="livelist-gap" data-gap="after" aria-hidden="true" width="1" height="{(TOTAL - 100) * HEIGHT}"></svg></div>')


def test_a_windowed_lists_cells_report_visibility_as_the_window_moves(browser, server):
    server.route("/lists/seen/actions", status(204))
    server.route("/lists/seen/cells", cells_route)
    # What came while the keys loaded: nothing (the client asks once they are in).
    server.route("/lists/seen/changes", json_answer({"protocol": 1, "list": "seen", "from": 1, "version": 1, "animate": False, "ops": []}))
    browser.get(server.page("window-visibility", page(windowed_root(), csrf="tok")))
    wait_for(lambda: browser.execute_script("const r = document.querySelector('[data-list]'); return !!(window.LLW && LLW.keys(r))"),
             message="the keys loaded")
    visible = lambda: visible_cells(browser)
    reported = lambda: reported_cells(server, "/lists/seen/actions")

    first = visible()
    assert first and len(first) < 30
    wait_for(lambda: reported()[0] == first, message="the first visible cells, and only they")
    # Far down: the window moves, the cells there report, the first ones go hidden.
    browser.execute_script(f"scrollTo(0, document.querySelector('[data-list]').offsetTop + {1_500 * HEIGHT})")
    wait_for(lambda: visible() and min(int(k[1:]) for k in visible()) >= 1_400, message="the window at cell 1,500")
    middle = visible()
    wait_for(lambda: reported()[0] == middle, message="the cells shown there, and no others")
    shown, state = reported()
    assert all(state[k] == "hidden" for k in first), "the first cells left the window while seen: reported hidden"
    assert len(state) < 120, f"{len(state)} cells reported: only those that were on screen"
    assert all(int(k[1:]) % 2 == 0 for k in state), "only cells with data-visibility report"
    rendered = browser.execute_script("return document.querySelectorAll('[data-list] [data-cell]').length")
    assert rendered <= 300, f"{rendered} cells in the DOM"
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]]
    assert not errors, errors
