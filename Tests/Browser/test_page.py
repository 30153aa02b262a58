"""The todo page as a person uses it, against the real `livelist` binary (see test_live.py): Enter adds or
saves (with and without JavaScript), actions go through fetch without reloading (scroll, focus, history
kept), the connection state is shown, typed text survives a stopped server, browsers get HTML error
pages, the markup's semantics (checkboxes, headings, named buttons), 44 px targets on a phone, axe-core
in light and dark, and the screenshots in docs/screenshots/.

Environment: LIVELIST_SCREENSHOTS=1 writes the screenshots to docs/screenshots/ (else to a temporary
directory, checked and dropped). axe-core comes from PyPI's axe-selenium-python (run.sh installs it)."""
import json
import os
import tempfile
from pathlib import Path

import pytest

from conftest import REPO, wait_for
from test_live import Livelist, cell_keys, console_errors, nojs_driver, open_live, reduce_motion  # noqa: F401

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


@pytest.fixture(scope="module")
def live():
    """One server for the module: the tests that stop it start it again on the same port."""
    server = Livelist()
    yield server
    server.close()


@pytest.fixture
def todo(browser, live):
    """The todo page with JavaScript, in the demo's first state (the server's lists are reset through
    the actions route: every item deleted, the three first ones added back)."""
    if live.process.poll() is not None:
        live.start(live.port)
    reduce_motion(browser)
    open_live(browser, live, "todo")
    wait_for(lambda: status(browser)[0] == "connected", timeout=10, message="the stream connected")
    return browser


def status(browser):
    return browser.execute_script(
        "const e = document.getElementById('livelist-status'); return [e.dataset.state || '', e.textContent]")


def titles(browser, section):
    return browser.execute_script(
        "return [...document.querySelectorAll(`[data-section=\"${arguments[0]}\"] [data-cell] input.title`)].map(i => i.value)", section)


def server_titles(live, section):
    _, _, body = live.request("GET", "/lists/todo", headers={"Accept": "application/json"})
    snapshot = json.loads(body)
    for s in snapshot["sections"]:
        if s["key"] == section:
            return [c["html"].split('name="text.')[1].split('value="')[1].split('"')[0] for c in s["cells"]]
    return []


def new_item_field(browser):
    from selenium.webdriver.common.by import By
    return browser.find_element(By.CSS_SELECTOR, "[data-section=open] footer input[name=text]")


def mark(browser):
    browser.execute_script("window.__mark = 1; window.__history = history.length")


def not_reloaded(browser):
    return browser.execute_script("return window.__mark === 1 && history.length === window.__history")


# --- Enter, fetch, focus, scroll -------------------------------------------------------------------------

def test_enter_in_the_new_item_field_adds_it_without_toggling_anything(todo, live):
    from selenium.webdriver.common.keys import Keys
    browser = todo
    mark(browser)
    before_open, before_done = cell_keys(browser, "open"), cell_keys(browser, "done")
    field = new_item_field(browser)
    field.click()
    field.send_keys("Buy milk", Keys.ENTER)
    wait_for(lambda: "Buy milk" in titles(browser, "open"), message="the new item")
    assert cell_keys(browser, "open")[:len(before_open)] == before_open, "an item moved"
    assert cell_keys(browser, "done") == before_done, "Enter toggled an item"
    wait_for(lambda: browser.execute_script(
        "const a = document.activeElement; return a.name == 'text' && a.value == ''"), message="the empty, focused field")
    assert not_reloaded(browser), "the page reloaded"
    wait_for(lambda: "Added: Buy milk" in browser.execute_script("return document.getElementById('livelist-news').textContent"),
             message="the announcement")
    assert browser.execute_script("return document.getElementById('livelist-news').getAttribute('aria-live')") == "polite"
    assert not console_errors(browser)


def test_the_add_button_focuses_the_empty_field_afterwards(todo, live):
    from selenium.webdriver.common.by import By
    browser = todo
    new_item_field(browser).send_keys("By the button")
    browser.find_element(By.CSS_SELECTOR, "button[value='add:']").click()
    wait_for(lambda: "By the button" in titles(browser, "open"), message="the new item")
    wait_for(lambda: browser.execute_script(
        "const a = document.activeElement; return a.name == 'text' && a.value == ''"), message="the empty, focused field")


def test_enter_in_a_title_saves_that_title(todo, live):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    browser = todo
    mark(browser)
    key = cell_keys(browser, "open")[0]
    before_done = cell_keys(browser, "done")
    field = browser.find_element(By.CSS_SELECTOR, f"[data-cell='{key}'] input.title")
    field.click()
    field.send_keys(Keys.END, " (edited)", Keys.ENTER)
    wait_for(lambda: any(t.endswith(" (edited)") for t in server_titles(live, "open")), message="the saved title")
    assert cell_keys(browser, "done") == before_done, "Enter toggled an item"
    assert browser.execute_script("return document.activeElement.closest('[data-cell]')?.dataset.cell") == key, "focus left the field"
    assert not_reloaded(browser)


def test_actions_keep_scroll_focus_and_history(todo, live):
    from selenium.webdriver.common.by import By
    browser = todo
    browser.set_window_size(1000, 420)
    try:
        for n in range(6):
            new_item_field(browser).send_keys(f"Filler {n}")
            browser.find_element(By.CSS_SELECTOR, "button[value='add:']").click()
            wait_for(lambda: f"Filler {n}" in titles(browser, "open"), message=f"filler {n}")
        keys = cell_keys(browser, "open")
        last = keys[-1]
        up = browser.find_element(By.CSS_SELECTOR, f"button[value='up:{last}']")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", up)
        mark(browser)
        scroll = browser.execute_script("return scrollY")
        assert scroll > 0, "the page does not scroll; the test needs it to"
        up.click()
        wait_for(lambda: cell_keys(browser, "open").index(last) == len(keys) - 2, message="the move")
        assert browser.execute_script("return document.activeElement.value") == f"up:{last}", "focus left the button"
        assert abs(browser.execute_script("return scrollY") - scroll) < 60, "the scroll position jumped"
        assert not_reloaded(browser), "the page reloaded or added history entries"
        # Deleting the focused item puts focus on the same control of its neighbour.
        delete = browser.find_element(By.CSS_SELECTOR, f"button[value='delete:{last}']")
        delete.click()
        wait_for(lambda: last not in cell_keys(browser, "open"), message="the delete")
        assert (browser.execute_script("return document.activeElement.value") or "").startswith("delete:"), "focus was lost"
        assert not_reloaded(browser)
    finally:
        browser.set_window_size(1000, 800)


def test_the_checkbox_toggles_through_fetch_and_a_second_window_sees_it(todo, live):
    from selenium.webdriver.common.by import By
    browser = todo
    first = browser.current_window_handle
    mark(browser)
    browser.switch_to.new_window("window")
    second = browser.current_window_handle
    try:
        open_live(browser, live, "todo")
        reduce_motion(browser)
        mark(browser)
        browser.switch_to.window(first)
        key = cell_keys(browser, "open")[0]
        box = browser.find_element(By.CSS_SELECTOR, f"[data-cell='{key}'] input[type=checkbox]")
        assert not box.is_selected()
        box.click()
        wait_for(lambda: key in cell_keys(browser, "done"), message="the toggled item in the acting window")
        assert browser.execute_script("return document.activeElement.type") == "checkbox", "focus left the checkbox"
        assert not_reloaded(browser)
        browser.switch_to.window(second)
        wait_for(lambda: key in cell_keys(browser, "done"), message="the toggled item in the second window")
        assert browser.find_element(By.CSS_SELECTOR, f"[data-cell='{key}'] input[type=checkbox]").is_selected()
        assert not_reloaded(browser), "the second window reloaded"
    finally:
        browser.switch_to.window(second)
        browser.close()
        browser.switch_to.window(first)


# --- Connection state and offline typing -----------------------------------------------------------------

def test_the_connection_state_shows_a_stopped_server_and_clears_when_it_returns(todo, live):
    browser = todo
    assert status(browser) == ["connected", "Connected"]
    assert browser.execute_script("return document.getElementById('livelist-status').getAttribute('role')") == "status"
    port = live.port
    live.stop()
    wait_for(lambda: status(browser)[0] == "reconnecting", timeout=10, message="the reconnecting state")
    assert "Reconnecting" in status(browser)[1]
    live.start(port)
    wait_for(lambda: status(browser) == ["connected", "Connected"], timeout=20, message="the connected state again")


def test_the_browser_going_offline_is_shown(todo, live):
    browser = todo
    conditions = {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.emulateNetworkConditions", conditions)
    try:
        wait_for(lambda: status(browser)[0] == "offline", timeout=10, message="the offline state")
        assert status(browser)[1].startswith("Offline")
    finally:
        browser.execute_cdp_cmd("Network.emulateNetworkConditions", dict(conditions, offline=False))
    wait_for(lambda: status(browser)[0] == "connected", timeout=20, message="the connected state again")


def test_text_typed_while_the_server_is_away_is_kept_and_sent_when_it_returns(todo, live):
    from selenium.webdriver.common.keys import Keys
    browser = todo
    mark(browser)
    port = live.port
    live.stop()
    wait_for(lambda: status(browser)[0] == "reconnecting", timeout=10, message="the reconnecting state")
    field = new_item_field(browser)
    field.click()
    field.send_keys("Typed while away", Keys.ENTER)
    wait_for(lambda: "not sent yet" in status(browser)[1], timeout=10, message="the waiting change in the status")
    assert field.get_attribute("value") == "Typed while away", "the typed text was lost"
    field.send_keys(Keys.ENTER)  # pressed again: still one item once sent
    live.start(port)
    wait_for(lambda: "Typed while away" in titles(browser, "open"), timeout=20, message="the item sent after the return")
    wait_for(lambda: field.get_attribute("value") == "", message="the field emptied once the server took it")
    assert server_titles(live, "open").count("Typed while away") == 1
    assert status(browser) == ["connected", "Connected"]
    assert not_reloaded(browser)


def test_the_script_posts_get_204_and_plain_form_posts_keep_their_303(live):
    """The route's two answers to the same form body: 204 for the page's script, 303 for a browser
    without JavaScript (a fetch would follow a 303 to the page, so this is checked on the wire)."""
    import re
    from urllib.parse import urlencode
    if live.process.poll() is not None:
        live.start(live.port)
    _, headers, body = live.request("GET", "/lists/todo", headers={"Accept": "text/html"})
    cookie = headers["Set-Cookie"].split(";")[0]
    token = re.search(r'name="livelist-csrf" content="([0-9a-f]+)"', body.decode()).group(1)
    form = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie}
    body = urlencode({"csrf": token, "action": "enter", "text": ""})
    status_code, headers, _ = live.request("POST", "/lists/todo/actions", body, dict(form, **{"LiveList-Action": "1"}))
    assert status_code == 204 and "Location" not in headers
    status_code, headers, _ = live.request("POST", "/lists/todo/actions", body, form)
    assert status_code == 303 and headers["Location"] == "/lists/todo"


# --- Without JavaScript ----------------------------------------------------------------------------------

def test_enter_adds_and_saves_without_javascript(nojs_driver, live):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    browser = nojs_driver
    if live.process.poll() is not None:
        live.start(live.port)
    browser.get(f"{live.base}/lists/todo")
    assert browser.execute_script("return typeof window.LiveList") == "undefined", "JavaScript is on"
    done_before = browser.execute_script("return document.querySelectorAll('[data-section=done] [data-cell]').length")
    # Without JavaScript the checkbox is hidden and its button shows.
    assert browser.execute_script("return getComputedStyle(document.querySelector('.todo .check')).display") == "none"
    assert browser.execute_script("return getComputedStyle(document.querySelector('.todo .toggle')).display") != "none"

    def submit_with_enter(field, text, expect, message):
        browser.execute_script("window.__old = 1")
        field.send_keys(text, Keys.ENTER)

        def arrived():
            try:
                return browser.execute_script("return !window.__old && document.readyState == 'complete'") and expect()
            except Exception:
                return False
        wait_for(arrived, timeout=10, message=message)

    field = browser.find_element(By.CSS_SELECTOR, "[data-section=open] footer input[name=text]")
    submit_with_enter(field, "No script item", lambda: "No script item" in server_titles(live, "open"), "the added item")
    assert browser.execute_script("return document.querySelectorAll('[data-section=done] [data-cell]').length") == done_before
    title = browser.find_element(By.CSS_SELECTOR, "[data-section=open] [data-cell] input.title")
    submit_with_enter(title, " saved", lambda: any(t.endswith(" saved") for t in server_titles(live, "open")), "the saved title")
    assert browser.execute_script("return document.querySelectorAll('[data-section=done] [data-cell]').length") == done_before


# --- Error pages -----------------------------------------------------------------------------------------

def test_browsers_get_html_error_pages_and_scripts_keep_json(browser, live):
    if live.process.poll() is not None:
        live.start(live.port)
    status_code, headers, body = live.request("GET", "/lists/no-such-list", headers={"Accept": BROWSER_ACCEPT})
    assert status_code == 404 and headers["Content-Type"].startswith("text/html"), (status_code, headers["Content-Type"])
    page = body.decode()
    assert '<a class="button-link" href="/">' in page and "<h1>404 Not Found</h1>" in page
    # Everything from the request is escaped.
    status_code, _, body = live.request("GET", "/no%3Cscript%3Ealert(1)%3C/script%3E", headers={"Accept": BROWSER_ACCEPT})
    assert status_code == 404 and b"<script>" not in body and b"&lt;script&gt;" in body
    status_code, headers, body = live.request("DELETE", "/favicon.svg", headers={"Accept": BROWSER_ACCEPT})
    assert status_code == 405 and headers["Content-Type"].startswith("text/html") and headers["Allow"]
    # Scripts keep the JSON contract.
    for accept in ("application/json", "*/*", None, "text/html;q=0.5, application/json"):
        status_code, headers, body = live.request("GET", "/lists/no-such-list", headers={"Accept": accept} if accept else {})
        assert status_code == 404 and headers["Content-Type"] == "application/json", accept
        assert json.loads(body)["error"] == "not_found"
    # In the browser: the page in the site's style, with its way back.
    browser.get(f"{live.base}/lists/no-such-list")
    assert browser.title.startswith("404")
    assert browser.execute_script("return document.querySelector('main a[href=\"/\"]').textContent") == "Back to the start page"
    assert browser.execute_script(
        "return performance.getEntriesByType('navigation')[0].responseStatus") == 404
    assert not [e for e in console_errors(browser) if "404" not in e["message"]]


# --- Semantics, phone, contrast ----------------------------------------------------------------------------

def test_checkboxes_headings_and_named_buttons(todo, live):
    browser = todo
    facts = browser.execute_script("""
      const cells = [...document.querySelectorAll('[data-cell]')];
      return {
        headings: [...document.querySelectorAll('[data-section] > header h2')].map(h => h.textContent),
        boxes: cells.map(c => { const b = c.querySelector('input[type=checkbox]'); return b && [b.checked, b.getAttribute('aria-label'), c.closest('[data-section]').dataset.section] }),
        names: cells.flatMap(c => [...c.querySelectorAll('button')].filter(b => b.offsetParent).map(b => b.getAttribute('aria-label') || b.textContent)),
        titles: cells.map(c => c.querySelector('input.title').value),
        status: document.getElementById('livelist-status').getAttribute('role'),
        details: !!document.querySelector('details a[href*="/events"]') && !document.querySelector('main a[href*="/events"], header a[href*="/changes"]'),
      }""")
    assert facts["headings"][0].startswith("To do (") and facts["headings"][1].startswith("Done (")
    for (checked, name, section), title in zip(facts["boxes"], facts["titles"]):
        assert checked == (section == "done") and title in name
    assert len(facts["names"]) == len(set(facts["names"])), "two buttons share a name"
    assert all(any(t in n for t in facts["titles"]) for n in facts["names"]), facts["names"]
    assert facts["status"] == "status"
    assert facts["details"], "the developer links are not tucked into a <details>"


def test_every_control_in_a_cell_is_44_px_at_360_px_without_horizontal_scroll(todo, live):
    browser = todo
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 360, "height": 740, "deviceScaleFactor": 1, "mobile": True})
    try:
        browser.get(f"{live.base}/lists/todo")
        wait_for(lambda: browser.execute_script("return document.readyState == 'complete'"), message="the page")
        facts = browser.execute_script("""
          const small = [];
          for (const e of document.querySelectorAll('[data-cell] button, [data-cell] input, [data-cell] label, footer button, footer input')) {
            if (!e.offsetParent || e.closest('label') && e.tagName == 'INPUT') continue;  // hidden, or inside its 44 px label
            const r = e.getBoundingClientRect();
            if (r.width < 44 || r.height < 44) small.push([e.outerHTML.slice(0, 80), r.width, r.height]);
          }
          const titles = [...document.querySelectorAll('input.title')].map(i => i.getBoundingClientRect().width);
          return {small, width: innerWidth, scroll: document.documentElement.scrollWidth, narrowest: Math.min(...titles)};
        """)
        assert facts["width"] == 360
        assert not facts["small"], facts["small"]
        assert facts["scroll"] <= facts["width"], f"horizontal scroll: {facts['scroll']} px wide"
        assert facts["narrowest"] >= 200, f"a title is squeezed to {facts['narrowest']} px"
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def axe_source():
    try:
        import axe_selenium_python
    except ImportError:
        pytest.skip("axe-selenium-python is not installed (run.sh installs it)")
    path = Path(axe_selenium_python.__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
    return path.read_text(encoding="utf-8")


def axe(browser, source):
    browser.execute_script(source)
    result = browser.execute_async_script(
        "const done = arguments[0]; axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations), e => done(String(e)))")
    assert isinstance(result, list), result
    return [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:5]) for v in result if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_serious_violation(todo, live, scheme):
    browser, source = todo, axe_source()
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme},
                                                                         {"name": "prefers-reduced-motion", "value": "reduce"}]})
    pages = {"todo": f"{live.base}/lists/todo", "index": f"{live.base}/", "404": f"{live.base}/lists/no-such-list",
             "sections": f"{live.base}/lists/sections"}
    found = {}
    for name, url in pages.items():
        browser.get(url)
        wait_for(lambda: browser.execute_script("return document.readyState == 'complete'"), message=name)
        if name == "todo":
            browser.execute_script("document.querySelector('details.developer').open = true")
        found[name] = axe(browser, source)
    assert not any(found.values()), json.dumps(found, indent=1)


def test_dark_mode_keeps_dividers_and_muted_text_visible(todo, live):
    browser = todo
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    colors = browser.execute_script("""
      const s = e => getComputedStyle(e);
      const cell = document.querySelectorAll('[data-section=open] .livelist-cell')[1];
      return [s(cell).borderTopColor, s(document.querySelector('.livelist-header')).color, s(document.body).backgroundColor]""")
    border, header, background = colors
    assert border not in ("rgba(0, 0, 0, 0.1)", "rgba(0, 0, 0, 0)"), border
    assert "255, 255, 255" in border, f"the divider is not light on dark: {border}"
    assert header != "rgb(95, 99, 104)", "the section header keeps the light mode's grey"


# --- Screenshots ------------------------------------------------------------------------------------------

SHOTS = [("desktop", 1000, 760, False), ("phone", 360, 760, True)]


def test_screenshots(todo, live):
    """Desktop and phone, light and dark: docs/screenshots/todo-{desktop,phone}-{light,dark}.png when
    LIVELIST_SCREENSHOTS=1 (kept small: one device pixel per CSS pixel)."""
    browser = todo
    target = REPO / "docs" / "screenshots" if os.environ.get("LIVELIST_SCREENSHOTS") == "1" else Path(tempfile.mkdtemp())
    target.mkdir(parents=True, exist_ok=True)
    try:
        for device, width, height, mobile in SHOTS:
            for scheme in ("light", "dark"):
                browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
                browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
                browser.get(f"{live.base}/lists/todo")
                wait_for(lambda: status(browser)[0] == "connected", timeout=10, message="the connected page")
                browser.execute_script("document.activeElement.blur()")
                shot = browser.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
                import base64
                data = base64.b64decode(shot["data"])
                assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
                (target / f"todo-{device}-{scheme}.png").write_bytes(data)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
