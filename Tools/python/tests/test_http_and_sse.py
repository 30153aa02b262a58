"""request, wait_ready, TLS_CONTEXT and EventStream's parsing of Server-Sent Events."""
import http.client
import ssl

import pytest

import livelist_tools
from livelist_tools import EventStream, free_port, request, wait_ready

STREAM = (b": opened\n\n"
          b"event: patch\nid: 7\ndata: {\"a\":1}\n\n"
          b"event: other\ndata: skipped\n\n"
          b"event:patch\nid:8\ndata:no space\n\n")


def sse(path):
    return 200, {"Content-Type": "text/event-stream", "Connection": "close"}, [STREAM]


def test_request_answers_status_headers_and_body(canned):
    status, headers, body = request(canned.server_address[1], "GET", "/x", headers={"X-Test": "1"})
    assert (status, body) == (200, b"ok")
    assert headers["Content-Length"] == "2"
    assert canned.seen[0][0] == "/x" and canned.seen[0][1]["X-Test"] == "1"


def test_wait_ready_returns_once_200(canned):
    assert wait_ready(canned.server_address[1], "/healthz", seconds=5) >= 0


def test_wait_ready_raises_the_given_error_after_its_time():
    class Late(Exception):
        pass
    with pytest.raises(Late, match="did not answer 200"):
        wait_ready(free_port(), seconds=0.3, interval=0.05, error=Late)


def test_tls_context_is_read_from_the_package_at_each_call():
    assert isinstance(livelist_tools.connect("127.0.0.1", 1, 1), http.client.HTTPConnection)
    livelist_tools.TLS_CONTEXT = ssl.create_default_context()
    try:
        assert isinstance(livelist_tools.connect("127.0.0.1", 1, 1), http.client.HTTPSConnection)
    finally:
        livelist_tools.TLS_CONTEXT = None


def test_event_stream_gives_events_of_a_kind_in_order(canned):
    canned.answer = sse
    stream = EventStream("127.0.0.1", canned.server_address[1], "/events")
    try:
        _, ident, data = stream.next_event(5)
        assert (ident, data) == ("7", '{"a":1}')
        _, ident, data = stream.next_event(5)  # "other" is skipped; no space after the colon is allowed
        assert (ident, data) == ("8", "no space")
        with pytest.raises(AssertionError, match="ended before"):
            stream.next_event(5)
    finally:
        stream.close()
    assert canned.seen[0][1]["Accept"] == "text/event-stream"


def test_event_stream_gives_comments_when_asked(canned):
    canned.answer = sse
    stream = EventStream("127.0.0.1", canned.server_address[1], "/events", error=RuntimeError)
    try:
        assert stream.next_event(5, kind="comment")[2] == ": opened"
    finally:
        stream.close()


def test_replay_events_reads_kinds_and_joined_data(canned):
    from livelist_tools.replay import events
    canned.answer = lambda path: (200, {"Connection": "close"}, [b"event: a\ndata: 1\ndata: 2\n\ndata: plain\n\n"])
    stream = EventStream("127.0.0.1", canned.server_address[1], "/")
    try:
        found, ended = events(stream, 5)
    finally:
        stream.close()
    assert found == [("a", "1\n2"), ("message", "plain")] and ended
