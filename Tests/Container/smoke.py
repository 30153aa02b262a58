#!/usr/bin/env python3
"""HTTP checks of a running LiveList container (or of nginx in front of one), for
Tests/Container/test_container.sh. Talks to the URL it is given only (a loopback port that podman publishes).

    smoke.py wait URL              /healthz answers 200 within 30 s
    smoke.py node URL TOKEN        /healthz, a page and its script, PUT without the token (401) and with it
                                   (201), storing the list that `persisted` reads back
    smoke.py persisted URL         the list written by `node` is there (a new container on the same volume)
    smoke.py proxy URL TOKEN       through nginx: writes, the written list's page (its session cookie
                                   Secure over HTTPS) and script, and the events of PUTs (which nginx
                                   spreads over the nodes) arriving on one event stream through it

An https:// URL is checked over TLS, trusting the PEM file that LIVELIST_SMOKE_CA names (nginx's own
self-signed certificate, in docker-compose.yml's setup), host name included.

Exit status 0 when every check passes; the first failure is printed and ends it with 1.
"""
import http.client
import json
import os
import re
import sys
import time
import urllib.parse

import livelist_tools as tools  # Tools/python, installed by Scripts/setup

STORED = "container-check"
STORED_TEXT = "kept on the volume"


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def ok(message):
    print(f"   {message}", flush=True)


def state(*texts):
    cells = [{"id": f"c{index}", "text": text} for index, text in enumerate(texts)]
    return {"sections": [{"id": "main", "cells": cells}]}


class Server:
    def __init__(self, url):
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        self.secure = parts.scheme == "https"
        if self.secure:
            import ssl
            tools.TLS_CONTEXT = ssl.create_default_context(cafile=os.environ["LIVELIST_SMOKE_CA"])

    def request(self, method, path, body=None, headers=None, timeout=10):
        status, response_headers, answer = tools.request(self.port, method, path, body, headers, timeout, self.host)
        return status, response_headers, answer.decode("utf-8", "replace")

    def put(self, name, document, token=None):
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return self.request("PUT", f"/lists/{name}", json.dumps(document), headers)


def wait(server):
    tools.wait_ready(server.port, "/healthz", seconds=30, host=server.host, interval=0.2, error=Failure)


def pages(server, where):
    status, _, body = server.request("GET", "/healthz")
    # With a database, the body's second line tells its state ("database: ok").
    check(status == 200 and body.split("\n")[0] == "ok", f"GET /healthz{where}: {status} {body!r}")
    status, headers, body = server.request("GET", "/lists/todo")
    check(status == 200 and 'data-list="todo"' in body, f"GET /lists/todo{where}: {status}, not the todo page (Templates/?)")
    script = re.search(r"/livelist\.js\?v=[0-9a-f]+", body)
    check(script is not None, f"the page{where} names no client script")
    status, _, _ = server.request("GET", script[0])
    check(status == 200, f"GET {script[0]}{where}: {status} (Public/?)")
    ok(f"GET /healthz, /lists/todo and {script[0]}{where}: 200")


def writes(server, token, name, texts, where):
    status, _, body = server.put(name, state(*texts))
    check(status == 401, f"PUT /lists/{name} without the token{where}: {status} {body}, expected 401")
    status, headers, body = server.put(name, state(*texts), token=token)
    check(status == 201, f"PUT /lists/{name} with the token{where}: {status} {body}, expected 201")
    ok(f"PUT /lists/{name}{where}: 401 without the write token, 201 with it")


def node(server, token):
    wait(server)
    pages(server, "")
    writes(server, token, STORED, [STORED_TEXT], "")


def persisted(server):
    wait(server)
    status, _, body = server.request("GET", f"/lists/{STORED}", headers={"Accept": "application/json"})
    check(status == 200 and STORED_TEXT in body, f"GET /lists/{STORED} from the new container: {status} {body[:200]}")
    ok(f"GET /lists/{STORED}: 200 with the text written by the previous container")


def read_eventually(server, name, headers=None):
    """GET /lists/`name` until it answers 200, for up to 3 s. Behind nginx with several nodes the GET
    may reach a node that has not yet heard of a list another node created a moment ago: other nodes
    see a write within a fraction of a second (docs/PROTOCOL.md), not at once."""
    deadline = time.monotonic() + 3
    while True:
        status, answered, body = server.request("GET", f"/lists/{name}", headers=headers or {})
        if status != 404 or time.monotonic() > deadline:
            return status, answered, body
        time.sleep(0.1)


def open_stream(server, name, last_event_id, where):
    """An event stream on `name` from `last_event_id`. Behind nginx with several nodes the stream may
    reach a node that has not yet heard of a list created a moment ago (404): it is asked again."""
    deadline = time.monotonic() + 3
    while True:
        stream = tools.EventStream(server.host, server.port, f"/lists/{name}/events", {"Last-Event-ID": last_event_id}, error=Failure)
        if stream.response.status != 404 or time.monotonic() > deadline:
            break
        stream.close()
        time.sleep(0.1)
    check(stream.response.status == 200
          and stream.response.getheader("Content-Type", "").startswith("text/event-stream"),
          f"GET /lists/{name}/events{where}: {stream.response.status}")
    return stream


def proxy(server, token):
    where = " through nginx" + (" over HTTPS" if server.secure else "")
    wait(server)
    name = "proxied-check"
    writes(server, token, name, ["one"], where)
    status, headers, body = read_eventually(server, name)
    check(status == 200 and f'data-list="{name}"' in body, f"GET /lists/{name}{where}: {status}")
    cookie = headers.get("Set-Cookie", "")
    check(not server.secure or "; Secure" in cookie, f"the session cookie{where} is not Secure: {cookie}")
    script = re.search(r"/livelist\.js\?v=[0-9a-f]+", body)
    check(script is not None and server.request("GET", script[0])[0] == 200, f"the page{where} has no script it can load")
    ok(f"GET /lists/{name} and its script{where}: 200" + (", the session cookie Secure" if server.secure else ""))
    status, headers, _ = read_eventually(server, name, {"Accept": "application/json"})
    stream = open_stream(server, name, headers.get("ETag", "").strip('"') or "1", where)
    try:
        # Each PUT may reach another node (nginx spreads requests over the upstreams); every event must
        # arrive on the one stream, in order, whichever node wrote it.
        texts = ["one"]
        latencies = []
        for step in range(6):
            texts.append(f"step {step}")
            sent = time.monotonic()
            status, headers, body = server.put(name, state(*texts), token=token)
            check(status == 200, f"PUT replacing /lists/{name}{where}: {status} {body}")
            version = headers.get("ETag", "").strip('"')
            arrived, event_id, data = stream.next_event(5)
            check(event_id == version, f"the event after the PUT of version {version} has id {event_id}")
            check(json.loads(data).get("version") == int(version), "the event does not carry the new version")
            latencies.append((arrived - sent) * 1000)
        ok(f"the events of {len(latencies)} PUTs arrived{where}, {min(latencies):.0f}–{max(latencies):.0f} ms after each")
    finally:
        stream.close()


def main(argv):
    if len(argv) > 1 and argv[1] in {"-h", "--help"}:
        print(__doc__)
        return 0
    if len(argv) < 3 or argv[1] not in {"wait", "node", "persisted", "proxy"}:
        print(__doc__, file=sys.stderr)
        return 2
    server = Server(argv[2])
    try:
        if argv[1] == "wait":
            wait(server)
        elif argv[1] == "persisted":
            persisted(server)
        else:
            check(len(argv) == 4, f"{argv[1]} needs URL and TOKEN")
            (node if argv[1] == "node" else proxy)(server, argv[3])
    except (Failure, OSError, http.client.HTTPException, ValueError) as failure:
        print(f"smoke: FAILED: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
