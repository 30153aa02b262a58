"""The operations surface of the real server read by the tools an operator points at it
(docs/DEPLOYMENT.md, "Operating a node"):

- `--log-format json --access-log`: every line the server writes to standard error is a JSON object
  (as a log pipeline reads it); access entries carry `time` (RFC 3339, milliseconds, `Z`), `level`,
  `method`, `target`, `protocol`, `status`, `bytes`, `duration`, `connection`, and a stream's end its
  `duration`, `bytes` and `reason`; jq's `fromdateiso8601` reads every `time` (when jq is installed).
- `--log-format logfmt`: every line parses as logfmt (a strict parser below: keys, bare or quoted values,
  nothing else), with the same fields.
- `/metrics` parses with the Prometheus client library's own parser, with the request-duration histogram
  by route, the process metrics, the build information and the store's state, and no series twice.

The server is driven through a page, a PUT, an event stream opened and closed, a 404 and a refused
write. Environment: LIVELIST_BINARY (default .build/debug/livelist). Run by Scripts/test; alone:
python3 -m pytest -q Tests/Clients (Scripts/setup installs prometheus-client and pytest)."""
import json
import math
import os
import re
import shutil
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

import livelist_tools as tools  # Tools/python, installed by Scripts/setup

REPO = Path(__file__).resolve().parents[2]

BINARY = os.environ.get("LIVELIST_BINARY") or str(REPO / ".build" / "debug" / "livelist")
TOKEN = "operations-test-token"
TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
ACCESS_FIELDS = ("time", "level", "method", "target", "protocol", "status", "bytes", "duration", "connection", "client")
BODY = json.dumps({"sections": [{"id": "s", "cells": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}]}]}).encode()


def start(*flags):
    if not os.path.exists(BINARY):
        pytest.fail(f"no livelist binary at {BINARY} (build it, or set LIVELIST_BINARY)")
    return tools.Server(BINARY, "--no-demo", "--write-token", TOKEN, "--heartbeat", "0.2", *flags, error=AssertionError)


def drive(server):
    """A PUT, a page, an event stream opened (its opening read) and closed, a 404 and a refused write (no
    token); answers what each request was, as (method, target, status)."""
    port, json_type = server.port, {"Content-Type": "application/json"}
    status, _, answer = tools.request(port, "PUT", "/lists/ops", BODY, dict(json_type, Authorization=f"Bearer {TOKEN}"))
    assert status == 201, answer
    status, _, _ = tools.request(port, "GET", "/lists/ops", headers={"Accept": "text/html"})
    assert status == 200
    stream = tools.EventStream(tools.HOST, port, "/lists/ops/events")
    stream.next_event(10, kind="stream")
    stream.close()
    status, _, _ = tools.request(port, "GET", "/no/such/page")
    assert status == 404
    status, _, _ = tools.request(port, "PUT", "/lists/ops", BODY, json_type)
    assert status == 401
    return [("PUT", "/lists/ops", 201), ("GET", "/lists/ops", 200), ("GET", "/lists/ops/events", 200),
            ("GET", "/no/such/page", 404), ("PUT", "/lists/ops", 401)]


def wait_for_line(server, needle, seconds=10):
    deadline = time.monotonic() + seconds
    while not any(needle in line for line in list(server.lines)):
        assert time.monotonic() < deadline, f"the server never wrote {needle!r}:\n{server.log_text()}"
        time.sleep(0.05)


def everything_written(server, ended):
    """Stops the server and answers every line it wrote to standard error (`ended`: what its last line
    holds, so that the reader has them all)."""
    server.stop()
    wait_for_line(server, ended)
    lines = [line.rstrip("\n") for line in server.lines]
    assert len(lines) < server.lines.maxlen, "the server wrote more lines than the reader keeps"
    return lines


def check_time(value, where):
    assert isinstance(value, str) and TIME.match(value), f"{where}: time {value!r} is not RFC 3339 with milliseconds and Z"
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert abs((datetime.now(timezone.utc) - moment).total_seconds()) < 600, f"{where}: time {value} is not now"


def check_access(entries, driven):
    """The access entries: one per request driven, with every field, and the stream's end."""
    requests = [e for e in entries if e.get("event") == "request"]
    for method, target, status in driven:
        assert any(e["method"] == method and e["target"] == target and e["status"] == status for e in requests), \
            f"no access entry for {method} {target} {status} among {[(e['method'], e['target'], e['status']) for e in requests]}"
    for entry in requests:
        # A stream's request entry has no bytes (its end has them), only `"body": "stream"`.
        expected = [name for name in ACCESS_FIELDS if not (name == "bytes" and entry.get("body") == "stream")]
        missing = [name for name in expected if name not in entry]
        assert not missing, f"an access entry without {missing}: {entry}"
        assert entry["level"] == "info" and entry["protocol"] == "HTTP/1.1", entry
        assert isinstance(entry["status"], int) and 100 <= entry["status"] < 600, entry
        # A stream's bytes come with its end; its request entry has no bytes but `"body": "stream"`,
        # so that a field keeps one type for a pipeline's schema.
        streamed = entry["target"].endswith("/events") and entry["status"] == 200
        if streamed:
            assert "bytes" not in entry and entry["body"] == "stream", entry
        else:
            assert isinstance(entry["bytes"], int) and entry["bytes"] >= 0, entry
        # Every request took some time and came on a connection: a refusal from its head too.
        assert isinstance(entry["duration"], float) and 0 < entry["duration"] < 10, f"duration: {entry}"
        assert isinstance(entry["connection"], int) and entry["connection"] > 0, f"connection: {entry}"
    stream = next(e for e in requests if e["target"] == "/lists/ops/events")
    ended = [e for e in entries if e.get("event") == "stream_ended"]
    assert len(ended) == 1, f"stream_ended entries: {ended}"
    end = ended[0]
    assert end["connection"] == stream["connection"], (end, stream)
    assert isinstance(end["duration"], float) and end["duration"] > 0, end
    assert isinstance(end["bytes"], int) and end["bytes"] > 0, end
    assert isinstance(end["reason"], str) and end["reason"], end


# --- JSON -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def json_log():
    """What a server with --log-format json --access-log wrote while driven: (its lines, the requests)."""
    server = start("--log-format", "json", "--access-log")
    try:
        driven = drive(server)
        wait_for_line(server, '"stream_ended"')
        return everything_written(server, "LiveList stopped"), driven
    finally:
        server.close()


def test_every_json_line_parses_and_access_entries_carry_their_fields(json_log):
    lines, driven = json_log
    entries = []
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
        except ValueError as failure:
            raise AssertionError(f"line {number} is not JSON ({failure}): {line!r}")
        assert isinstance(entry, dict), f"line {number} is not an object: {line!r}"
        for name in ("time", "level", "logger", "message"):
            assert name in entry, f"line {number} has no {name}: {line!r}"
        check_time(entry["time"], f"line {number}")
        entries.append(entry)
    check_access(entries, driven)


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_jq_reads_every_json_time(json_log):
    lines, _ = json_log
    # jq's fromdateiso8601 takes whole seconds only: the milliseconds go first.
    jq = subprocess.run(["jq", "-e", "-s", r'map(.time | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) | length'],
                        input="\n".join(lines), capture_output=True, text=True, timeout=30)
    assert jq.returncode == 0 and jq.stdout.strip() == str(len(lines)), f"jq: {jq.returncode} {jq.stdout} {jq.stderr}"


# --- logfmt ---------------------------------------------------------------------------------------------

LOGFMT_KEY = re.compile(r'[^\s="\\]+')
LOGFMT_BARE = re.compile(r'[^\s="\\]+')
LOGFMT_QUOTED = re.compile(r'"((?:[^"\\]|\\["\\nrt/bf]|\\u[0-9a-fA-F]{4})*)"')


def parse_logfmt(line):
    """A logfmt line as a dict, strictly: `key=value` pairs separated by one space, a value bare (no
    blank, `=`, `"` or backslash) or quoted with JSON's escapes; anything else raises ValueError."""
    fields, at = {}, 0
    while at < len(line):
        key = LOGFMT_KEY.match(line, at)
        if not key or line[key.end():key.end() + 1] != "=":
            raise ValueError(f"no key=value at {at}: {line[at:at + 40]!r}")
        at = key.end() + 1
        quoted = LOGFMT_QUOTED.match(line, at)
        if quoted:
            value, at = json.loads(quoted.group(0)), quoted.end()
        else:
            bare = LOGFMT_BARE.match(line, at)
            if not bare:
                raise ValueError(f"no value for {key.group(0)!r} at {at}: {line[at:at + 40]!r}")
            value, at = bare.group(0), bare.end()
        if key.group(0) in fields:
            raise ValueError(f"{key.group(0)!r} twice")
        fields[key.group(0)] = value
        if at < len(line):
            if line[at] != " " or at + 1 == len(line):
                raise ValueError(f"no single space after {key.group(0)!r}: {line[at:at + 40]!r}")
            at += 1
    return fields


def test_the_logfmt_parser_is_strict():
    assert parse_logfmt('a=1 b="x y" c="q\\"uote"') == {"a": "1", "b": "x y", "c": 'q"uote'}
    for wrong in ('a=1  b=2', 'a=x"y', 'a="open', 'a b=1', 'a=1 ', '=1', 'a=1 a=2', 'msg=two words'):
        with pytest.raises(ValueError):
            parse_logfmt(wrong)


def test_every_logfmt_line_parses_with_the_same_fields():
    server = start("--log-format", "logfmt", "--access-log")
    try:
        driven = drive(server)
        wait_for_line(server, "event=stream_ended")
        lines = everything_written(server, "LiveList stopped")
    finally:
        server.close()
    entries = []
    for number, line in enumerate(lines, 1):
        try:
            entry = parse_logfmt(line)
        except ValueError as failure:
            raise AssertionError(f"line {number} is not logfmt ({failure}): {line!r}")
        for name in ("time", "level", "logger", "msg"):
            assert name in entry, f"line {number} has no {name}: {line!r}"
        check_time(entry["time"], f"line {number}")
        # Numbers are written as numbers: read them back as a JSON reader of the line's fields would.
        for name in ("status", "connection", "bytes"):
            if re.fullmatch(r"\d+", entry.get(name, "")):
                entry[name] = int(entry[name])
        if re.fullmatch(r"\d+(\.\d+)?(e-?\d+)?", entry.get("duration", "")):
            entry["duration"] = float(entry["duration"])
        entries.append(entry)
    check_access(entries, driven)


# --- /metrics -------------------------------------------------------------------------------------------

def test_metrics_parse_with_the_prometheus_client_and_hold_what_an_operator_reads():
    from prometheus_client.parser import text_string_to_metric_families

    server = start()
    try:
        drive(server)
        status, _, _ = tools.request(server.port, "GET", "/healthz")
        assert status == 200
        status, headers, body = tools.request(server.port, "GET", "/metrics")
        assert status == 200
        assert headers["Content-Type"].startswith("text/plain; version=0.0.4"), headers["Content-Type"]
    finally:
        server.close()
    text = body.decode()
    families = list(text_string_to_metric_families(text))  # raises on any line it cannot read
    samples = [(family, sample) for family in families for sample in family.samples]

    # No series twice, and no family declared twice.
    series = [(s.name, tuple(sorted(s.labels.items()))) for _, s in samples]
    assert len(series) == len(set(series)), f"series given twice: {sorted({x for x in series if series.count(x) > 1})}"
    declared = re.findall(r"^# TYPE (\S+) ", text, re.M)
    assert len(declared) == len(set(declared)), f"families declared twice: {sorted({d for d in declared if declared.count(d) > 1})}"

    def one(name, **labels):
        found = [s for _, s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
        assert len(found) == 1, f"{name}{labels}: {len(found)} samples"
        return found[0]

    # The request-duration histogram, one per route, each consistent.
    histogram = next((f for f in families if f.name == "livelist_request_duration_seconds"), None)
    assert histogram is not None and histogram.type == "histogram", [f.name for f in families]
    routes = {s.labels["route"] for s in histogram.samples}
    assert {"list", "write", "list_events", "healthz", "app"} <= routes, routes
    for route in routes:
        buckets = [s for s in histogram.samples if s.name.endswith("_bucket") and s.labels["route"] == route]
        bounds = [float(s.labels["le"]) for s in buckets]
        assert bounds == sorted(bounds) and bounds[-1] == math.inf, f"{route}: buckets {bounds}"
        counts = [s.value for s in buckets]
        assert counts == sorted(counts), f"{route}: bucket counts go down: {counts}"
        total = one("livelist_request_duration_seconds_count", route=route).value
        assert counts[-1] == total > 0, f"{route}: +Inf {counts[-1]}, count {total}"
        assert one("livelist_request_duration_seconds_sum", route=route).value > 0
    assert one("livelist_request_duration_seconds_count", route="write").value == 2, "the PUT and the refused PUT"

    # The process, as Prometheus' client libraries name it.
    assert one("process_cpu_seconds_total").value > 0
    assert one("process_resident_memory_bytes").value > 1 << 20
    assert one("process_open_fds").value > 3
    assert one("process_start_time_seconds").value > time.time() - 3600
    build = one("livelist_build_info")
    assert build.value == 1 and build.labels.get("version") and build.labels.get("protocol") == "1" \
        and build.labels.get("store") == "embedded", build
    assert one("livelist_store_up").value == 1
    # The reserve's counters and the client-record gauges are there too.
    for name in ("livelist_connections_reserved_total", "livelist_streams_refused_total"):
        assert one(name).value == 0
    kinds = {s.labels["kind"] for _, s in samples if s.name == "livelist_client_records"}
    assert {"action_keys", "pace_buckets", "cached_pages"} <= kinds, kinds
