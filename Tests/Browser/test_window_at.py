"""A windowed page opened at a cell, `/lists/NAME?at=KEY` (docs/PROTOCOL.md, "The windowed page"), with
JavaScript on: once the keys are in and the page has come to rest, the cell the address names is in the
DOM and in the viewport, for cells near the start, in the middle and near the end of a 20,000-cell list.

The server starts the page's window at that cell (`data-first`) and sizes the placeholders with its
assumed cell height (`data-cell-height`). The cells here are a little taller than that (42.6 px to its
40 with livelist.css), as real cells often are: once livelist-window.js measures them, the model puts a
cell 500 from the end some 50,000 px further down, more than what lies below it on the page sized with
the assumed height. The client must still draw its window around the cell and scroll there.

Environment: LIVELIST_BINARY (default .build/debug/livelist, built when missing)."""
import pytest

from test_live import console_errors, reduce_motion
from test_window import DOM_BUDGET, cells, in_view, live, open_page, put, settle  # noqa: F401 (live: a fixture)

TOTAL = 20_000
NAME = "at20k"


@pytest.fixture(scope="module")
def long_list(live):
    """A 20,000-cell list of one section, keys c0..c19999."""
    put(live, NAME, [{"id": "a", "cells": cells(0, TOTAL)}])
    return NAME


PAGE = """
const r = document.querySelector('[data-window]'), cs = [...r.querySelectorAll('[data-cell]')].map(e => e.getBoundingClientRect().height).sort((a, b) => a - b);
return {first: +r.dataset.first, assumed: +r.dataset.cellHeight, measured: cs[cs.length >> 1]};
"""


@pytest.mark.parametrize("index", [150, TOTAL // 2, TOTAL - 500, TOTAL - 50])
def test_a_page_opened_at_a_cell_shows_that_cell(browser, live, long_list, index):
    key = f"c{index}"
    path = f"/lists/{long_list}?at={key}"
    reduce_motion(browser)
    browser.get("about:blank")
    browser.get_log("browser")
    open_page(browser, live, path)
    in_view(browser, key, path)
    page = browser.execute_script(PAGE)
    assert page["first"] == index, f"{path}: the server's page starts at {page['first']}, not {index}"
    # What the test is about: cells of another height than the one the server assumed.
    assert page["measured"] - page["assumed"] >= 1, f"cells of {page['measured']} px, the server assumed {page['assumed']} px"
    settle(browser, None, path, budget=DOM_BUDGET, single=True)
    in_view(browser, key, f"{path}, after settling")
    errors = console_errors(browser)
    assert not errors, f"console errors: {errors}"
