"""The client's connection in a real browser against a scripted local server: the EventSource routes and
their `since`, resuming, back-off after errors and non-200 answers, stopping on 204/404, pausing in a
hidden tab, the lifecycle events, and the actions it posts (selection, visibility) with the CSRF token."""
import json
import time

from conftest import json_answer, page, reported_cells, root_html, sse, status, visible_cells, wait_for, inner_html
from test_patching import cell, interesting, open_page


def version_of(browser, name):
    return browser.execute_script("return document.querySelector(`[data-list=\"${arguments[0]}\"]`).dataset.version", name)


def page_equals(browser, name, snapshot):
    return browser.execute_script(
        "const d = document.createElement('div'); d.innerHTML = arguments[1];"
        "return document.querySelector(`[data-list=\"${arguments[0]}\"]`).innerHTML === d.innerHTML",
        name, inner_html(snapshot))


RECORD_EVENTS = """window.__events = [];
for (const t of ['open', 'patch', 'reconnecting', 'reset', 'denied'])
  document.addEventListener('livelist:' + t, e => __events.push([t, e.target.dataset.list, e.detail && e.detail.version]));"""


def test_a_single_list_streams_resumes_and_stops_on_204(browser, server, chains):
    chain = interesting(chains)
    before, cs, after = chain["before"], chain["changeset"], chain["after"]
    name, v = before["list"], before["version"]
    path = f"/lists/{name}/events"
    server.route(path, sse([(cs["version"], cs)], retry=100, hold=0.3), status(204), status(204))
    browser.get(server.page("single", page(root_html(before), connect=True)))  # connects by itself
    wait_for(lambda: version_of(browser, name) == str(cs["version"]), message="the streamed changeset")
    assert page_equals(browser, name, after)
    # The stream ends: the browser reconnects with Last-Event-ID; a 204 (checked once more, since
    # EventSource hides the status) stops it for good.
    wait_for(lambda: len(server.requests_to(path)) >= 3, message="the reconnect and the status check")
    time.sleep(0.8)
    requests = server.requests_to(path)
    assert len(requests) == 3, [r["headers"] for r in requests]
    assert requests[0]["args"] == {"since": [str(v)]}
    assert requests[1]["headers"].get("Last-Event-ID") == str(cs["version"])
    assert requests[2]["headers"].get("Accept") == "text/event-stream"


def test_errors_and_non_200_answers_back_off_and_reconnect_and_a_404_clears_the_list(browser, server, chains):
    chain = interesting(chains)
    before, cs, after = chain["before"], chain["changeset"], chain["after"]
    name, v = before["list"], before["version"]
    path = f"/lists/{name}/events"
    open_page(browser, server, "backoff", root_html(before))
    browser.execute_script(RECORD_EVENTS + "LiveList.options.delay = 100;")
    # 503 (EventSource gives up on it), the status check says 503 again: back off and retry with since.
    server.route(path, status(503), status(503), sse([(cs["version"], cs)], hold=0.2), status(404), status(404))
    start = time.time()
    browser.execute_script("LiveList.connect()")
    wait_for(lambda: version_of(browser, name) == str(cs["version"]), message="the changeset after the retry")
    assert page_equals(browser, name, after)
    wait_for(lambda: len(server.requests_to(path)) >= 5, message="the 404 and its check")
    time.sleep(0.8)
    requests = server.requests_to(path)
    assert len(requests) == 5, "a 404 stops reconnecting"
    assert requests[0]["args"] == {"since": [str(v)]} and requests[2]["args"] == {"since": [str(v)]}
    assert requests[2]["time"] - requests[1]["time"] >= 0.07, "it backs off before reconnecting"
    assert requests[4]["headers"].get("Accept") == "text/event-stream"
    kinds = [e[0] for e in browser.execute_script("return __events")]
    # A 404 says the list is gone, or refused to this viewer (alike on purpose): emptied, and told.
    assert kinds[:2] == ["reconnecting", "open"] and "patch" in kinds and kinds[-2:] == ["reconnecting", "denied"], kinds
    assert browser.execute_script(f"return document.querySelector('[data-list=\"{name}\"]').children.length") == 0
    assert time.time() - start < 10


def test_a_denied_list_is_emptied_and_the_others_go_on(browser, server, chains):
    """A revocation on an open multiplexed stream (`denied`) and a refusal on reconnect (a reset to
    version 0 of a list the page holds at a later one) each empty that list, dispatch livelist:denied,
    and leave the page's other lists streaming."""
    one, other, third = [c for c in chains if c["before"]["sections"]][:3]
    first, second, last = one["before"], dict(other["before"], list="second.list"), dict(third["before"], list="third.list")
    cs_third = dict(third["changeset"], list="third.list")
    refused = {"protocol": 1, "list": "second.list", "from": second["version"], "version": 0, "animate": False,
               "ops": [{"op": "reset", "html": "", "sections": []}]}
    server.route("/events",
                 sse([(None, {"list": first["list"]}, "denied")], hold=0.3),
                 sse([("second.list:0", refused), ("third.list:" + str(cs_third["version"]), cs_third)], hold=3))
    open_page(browser, server, "denied", root_html(first) + root_html(second) + root_html(last))
    browser.execute_script(RECORD_EVENTS + "LiveList.options.delay = 50; LiveList.connect()")
    wait_for(lambda: version_of(browser, "third.list") == str(cs_third["version"]), message="the third list's change")
    count = "return document.querySelector(`[data-list=\"${arguments[0]}\"]`).children.length"
    assert browser.execute_script(count, first["list"]) == 0 and browser.execute_script(count, "second.list") == 0
    assert page_equals(browser, "third.list", dict(third["after"], list="third.list"))
    events = browser.execute_script("return __events")
    assert ["denied", first["list"], None] in events and ["denied", "second.list", None] in events, events
    requests = server.requests_to("/events")
    assert requests[1]["args"]["list"] == ["second.list", "third.list"], "the reconnect leaves the denied list out"
    browser.execute_script("LiveList.close()")


def test_a_multiplexed_stream_refused_on_reconnect_denies_every_list(browser, server, chains):
    """The multiplexed route answers 401 when nobody signed in may see any of its lists (after a sign-out
    in another tab, say). EventSource hides the status, so the page asks once, as for one list: a 503 is
    retried with back-off, a 401 empties every list, dispatches livelist:denied on each and stops."""
    one, other = [c for c in chains if c["before"]["sections"]][:2]
    first, second = one["before"], dict(other["before"], list="second.list")
    server.route("/events", status(503), status(503), status(401), status(401))
    open_page(browser, server, "refused", root_html(first) + root_html(second))
    browser.execute_script(RECORD_EVENTS + "LiveList.options.delay = 50; LiveList.connect()")
    wait_for(lambda: len(server.requests_to("/events")) >= 4, message="the refusals and their checks")
    time.sleep(0.8)
    requests = server.requests_to("/events")
    assert len(requests) == 4, "a 401 stops reconnecting"
    assert requests[2]["time"] - requests[1]["time"] >= 0.03, "a 503 backs off before reconnecting"
    assert requests[3]["headers"].get("Accept") == "text/event-stream"
    count = "return document.querySelector(`[data-list=\"${arguments[0]}\"]`).children.length"
    assert browser.execute_script(count, first["list"]) == 0 and browser.execute_script(count, "second.list") == 0
    events = browser.execute_script("return __events")
    assert ["denied", first["list"], None] in events and ["denied", "second.list", None] in events, events


def test_one_multiplexed_stream_serves_every_list_of_the_page(browser, server, chains):
    one, other = [c for c in chains if c["before"]["sections"]][:2]
    first, second = one["before"], dict(other["before"], list="second.list")
    cs_second = dict(other["changeset"], list="second.list")
    body = root_html(first) + root_html(second)
    server.route("/events", sse([(f"{first['list']}:{one['changeset']['version']},second.list:{cs_second['version']}", cs_second),
                                 ("x", one["changeset"])], hold=2))
    open_page(browser, server, "multi", body)
    browser.execute_script(RECORD_EVENTS + "LiveList.connect()")
    wait_for(lambda: version_of(browser, "second.list") == str(cs_second["version"])
             and version_of(browser, first["list"]) == str(one["changeset"]["version"]), message="both lists")
    assert page_equals(browser, first["list"], one["after"])
    assert page_equals(browser, "second.list", dict(other["after"]))
    request = server.requests_to("/events")[0]
    assert request["args"]["list"] == [first["list"], "second.list"]
    assert request["args"]["since"] == [f"{first['list']}:{first['version']},second.list:{second['version']}"]
    events = browser.execute_script("return __events")
    assert ["open", first["list"], None] in events and ["open", "second.list", None] in events
    assert ["patch", "second.list", cs_second["version"]] in events
    browser.execute_script("LiveList.close()")


def test_a_hidden_tab_pauses_the_stream_and_catches_up_when_shown(browser, server, chains):
    chain = interesting(chains)
    before, cs, after = chain["before"], chain["changeset"], chain["after"]
    name, v = before["list"], before["version"]
    path = f"/lists/{name}/events"
    closed = []
    server.route(path, sse(hold=10, closed=closed), sse([(cs["version"], cs)], hold=2))
    open_page(browser, server, "hidden", root_html(before))
    browser.execute_script("""window.__hidden = false;
      Object.defineProperty(document, 'hidden', {get: () => __hidden, configurable: true});
      LiveList.connect();""")
    wait_for(lambda: len(server.requests_to(path)) == 1, message="the stream")
    time.sleep(0.2)
    browser.execute_script("__hidden = true; document.dispatchEvent(new Event('visibilitychange'))")
    wait_for(lambda: closed, message="the stream to close while hidden")
    time.sleep(0.5)
    assert len(server.requests_to(path)) == 1, "nothing while hidden"
    browser.execute_script("__hidden = false; document.dispatchEvent(new Event('visibilitychange'))")
    wait_for(lambda: version_of(browser, name) == str(cs["version"]), message="catching up")
    assert page_equals(browser, name, after)
    assert server.requests_to(path)[1]["args"] == {"since": [str(v)]}
    browser.execute_script("LiveList.close()")


def test_the_streamed_page_has_no_console_errors_under_a_strict_csp(browser, server, chains):
    chain = interesting(chains)
    before, cs = chain["before"], chain["changeset"]
    server.route(f"/lists/{before['list']}/events", sse([(cs["version"], cs)], hold=0.5))
    server.route("/favicon.ico", status(204))
    browser.get_log("browser")
    browser.get(server.page("console", page(root_html(before, animate=True), connect=True)))
    wait_for(lambda: version_of(browser, before["list"]) == str(cs["version"]), message="the changeset")
    time.sleep(0.5)
    browser.execute_script("LiveList.close()")
    errors = [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
    assert errors == []


# --- Actions ------------------------------------------------------------------------------------------

HOSTILE = 'a"b<&\'c\u00e9'


def action_page(csrf):
    key = HOSTILE.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace("'", "&#39;")
    snapshot = {"protocol": 1, "list": "acts", "version": 2, "sections": [
        {"key": "s", "header": None, "footer": None,
         "html": '<section class="livelist-section" data-section="s"><ul class="livelist-cells"></ul></section>',
         "cells": [{"key": HOSTILE, "html": cell(key, "Pick me", '<input id="field"><button id="button" type="button">b</button>')},
                   {"key": "plain", "html": cell("plain", "Plain")}]}]}
    return page(root_html(snapshot), csrf=csrf)


def test_a_click_on_a_cell_posts_a_selection_with_the_csrf_token(browser, server):
    server.route("/lists/acts/actions", status(204))
    browser.get(server.page("actions", action_page("tok-123")))
    browser.find_element("css selector", '[data-cell="plain"] .livelist-text').click()
    wait_for(lambda: server.requests_to("/lists/acts/actions"), message="the plain selection")
    browser.find_element("css selector", "#field").click()
    browser.find_element("css selector", "#button").click()
    browser.find_element("css selector", ".livelist-cell:first-child .livelist-text").click()
    wait_for(lambda: len(server.requests_to("/lists/acts/actions")) >= 2, message="the second selection")
    time.sleep(0.3)
    posts = server.requests_to("/lists/acts/actions")
    assert [json.loads(p["body"]) for p in posts] == [{"type": "select", "cell": "plain"},
                                                      {"type": "select", "cell": HOSTILE}]
    for post in posts:
        assert post["method"] == "POST"
        assert post["headers"].get("X-CSRF-Token") == "tok-123"
        assert post["headers"].get("Content-Type") == "application/json"


def test_without_a_csrf_token_nothing_is_posted(browser, server):
    server.route("/lists/acts/actions", status(204))
    browser.get(server.page("no-token", action_page(None)))
    browser.find_element("css selector", '[data-cell="plain"]').click()
    time.sleep(0.4)
    assert server.requests_to("/lists/acts/actions") == []


def test_headers_and_footers_that_ask_for_it_report_visibility(browser, server):
    server.route("/lists/sights/actions", status(204))
    cells = [{"key": f"v{i}", "html": f'<li class="livelist-cell" data-cell="v{i}"><span class="livelist-text">{i}</span></li>'}
             for i in range(80)]
    header = '<header class="livelist-header" data-visibility="true">Top</header>'
    footer = '<footer class="livelist-footer" data-visibility="true">Bottom</footer>'
    snapshot = {"protocol": 1, "list": "sights", "version": 1, "sections": [
        {"key": "s", "header": header, "footer": footer, "cells": cells,
         "html": f'<section class="livelist-section" data-section="s">{header}<ul class="livelist-cells"></ul>{footer}</section>'}]}
    browser.get(server.page("sights", page(root_html(snapshot, extra="tall"), csrf="tok")))

    def reported():
        state = {}
        for post in server.requests_to("/lists/sights/actions"):
            body = json.loads(post["body"])
            assert "cell" not in body and body["section"] == "s", body
            state[body["part"]] = body["type"]
        return state

    wait_for(lambda: reported() == {"header": "visible"}, message="the header shown at first, the footer not")
    browser.execute_script("scrollTo(0, document.body.scrollHeight)")
    wait_for(lambda: reported() == {"header": "hidden", "footer": "visible"}, message="the footer shown after scrolling")


def test_cells_that_ask_for_it_report_visibility(browser, server):
    server.route("/lists/seen/actions", status(204))
    flag = ' data-visibility="true"'
    cells = [{"key": f"v{i}", "html": f'<li class="livelist-cell" data-cell="v{i}"{flag if i % 2 == 0 else ""}>'
                                       f'<span class="livelist-text">{i}</span></li>'} for i in range(60)]
    snapshot = {"protocol": 1, "list": "seen", "version": 1, "sections": [
        {"key": "s", "header": None, "footer": None, "cells": cells,
         "html": '<section class="livelist-section" data-section="s"><ul class="livelist-cells"></ul></section>'}]}
    browser.get(server.page("visibility", page(root_html(snapshot, extra="tall"), csrf="tok")))
    visible = lambda: visible_cells(browser)
    reported = lambda: reported_cells(server, "/lists/seen/actions")

    first = visible()
    assert first and len(first) < 30
    wait_for(lambda: reported()[0] == first, message="the first visible cells")
    posts = server.requests_to("/lists/seen/actions")
    assert len(posts) < len(first), f"{len(first)} cells reported in {len(posts)} posts: batched"
    browser.execute_script("scrollTo(0, document.body.scrollHeight)")
    last = visible()
    wait_for(lambda: reported()[0] == last, message="the cells shown after scrolling")
    shown, state = reported()
    assert all(state[k] == "hidden" for k in first - last)
    assert all(int(k[1:]) % 2 == 0 for k in state), "only cells with data-visibility report"


def test_a_resent_action_carries_the_key_it_was_first_sent_with(browser, server, chains):
    """An action whose answer is lost (the connection drops) is kept and resent: with the
    Idempotency-Key of its first sending, so that the server, which may have run it, runs it once.
    Another action gets a key of its own."""
    import socket

    def drop(h, record):
        h.close_connection = True
        h.connection.shutdown(socket.SHUT_RDWR)

    chain = interesting(chains)
    before = chain["before"]
    path = f"/lists/{before['list']}/actions"
    server.route(path, drop, status(204))
    server.route(f"/lists/{before['list']}/events", sse(hold=10))
    browser.get(server.page("keyed", page(root_html(before), connect=True)))
    wait_for(lambda: browser.execute_script("return !!window.LiveList"), message="livelist.js")
    browser.execute_script("""LiveList.options.delay = 50;
      const f = document.createElement('form'); f.method = 'post'; f.setAttribute('action', arguments[0]);
      f.innerHTML = '<input name="csrf" value="t"><button name="action" value="add:">Add</button>';
      document.body.append(f); f.querySelector('button').click();""", path)
    wait_for(lambda: len(server.requests_to(path)) >= 2, timeout=10, message="the action resent after the dropped answer")
    first, resent = server.requests_to(path)[:2]
    key = first["headers"].get("Idempotency-Key")
    assert key and resent["headers"].get("Idempotency-Key") == key and resent["body"] == first["body"]
    browser.execute_script("document.querySelector('form[action$=\"/actions\"] button').click()")
    wait_for(lambda: len(server.requests_to(path)) >= 3, timeout=10, message="a second action")
    assert server.requests_to(path)[2]["headers"].get("Idempotency-Key") not in (None, key)
