#!/usr/bin/env python3
"""Does the LiveList server give memory and descriptors back after stream churn? On 127.0.0.1 only,
bounded in time and count.

Starts the release `livelist` binary (build it first: swift build -c release --product livelist; or
--binary, or LIVELIST_BINARY) with an empty data folder, creates --lists JSON lists and, after a warm-up
round of 5 s, keeps about --streams event streams open for --minutes, half on one list
(GET /lists/NAME/events), half multiplexed over three (GET /events?list=A&list=B&list=C). Every second
--churn % of the reading streams are closed and new ones opened; one writer PUTs a changed cell
(--cell-bytes of text) to a random list every --write-interval s; one reader thread reads and discards
what every stream receives, except the --slow % of "slow readers", which never read (SO_RCVBUF 4096),
are not churned (the server must cut or coalesce them) and are replaced once the server closes them.
Every --sample s prints a line (elapsed, streams open, server RSS, server descriptors); the peak RSS is
the server's VmHWM.

The server keeps the last --log-count (16) changesets of each list, and each list's log is filled to
that bound before the warm-up: the logs are bounded state, and filling them during the run would read
as growth that streams did not cause.

At the end (and after the warm-up, for the baseline) every stream is closed, the server's
livelist_streams_open (GET /metrics) awaited at 0 for up to 30 s, then 3 s more, and the server's VmRSS
and open descriptors read. Prints a Markdown table and a verdict per goal: RSS back within 10 % of the
baseline; no descriptor left behind. The verdicts are printed, not asserted: the exit status is 0
unless the server crashed or a step failed.

Usage: Benchmarks/run churn [--minutes 10] [--streams 2000] [--lists 100] [--churn 10] [--slow 5]
                              [--write-interval 0.01] [--sample 30] [--cell-bytes 2000]
                              [--log-count 16] [--binary PATH]
"""
import argparse
import http.client
import os
import queue
import random
import re
import select
import socket
import sys
import threading
import time

import livelist_tools as tools

WARMUP = 5  # seconds of the warm-up round
STREAMS_OPEN = "livelist_streams_open"
# Read at the end: the first three should be 0 once every stream is closed (but for the connection
# of the /metrics request itself), the counters tell whether slow readers were cut or coalesced.
END_METRICS = (STREAMS_OPEN, "livelist_connections_open", "livelist_stream_queued_bytes",
               "livelist_streams_overflowed_total", "livelist_coalesced_viewers_total")


class Failed(Exception):
    """A step failed or the server crashed: the script ends with a non-zero status."""


class Stream:
    def __init__(self, sock, slow):
        self.sock, self.slow, self.head, self.doomed = sock, slow, b"", False


class Churn:
    """Event streams on one server, opened by the main thread, read and closed by the reader thread
    alone: a closed descriptor's number is reused at once, and an event polled for the old socket must
    never be taken for the new one's."""

    def __init__(self, server, args, names):
        self.server, self.args, self.names = server, args, names
        self.port, self.pid = server.port, server.process.pid
        self.padding = "x" * args.cell_bytes
        self.streams = {}  # fd -> Stream
        self.lock = threading.Lock()
        self.closing = queue.SimpleQueue()
        self.poller = select.epoll()
        self.counts = dict.fromkeys(["streams opened", "streams closed by us", "streams closed by the server",
                                     "streams refused (not 200)", "stream open failures", "writes",
                                     "write failures", "writes refused 503 overloaded"], 0)

    def usage(self):
        """The server's resident memory (KiB) and open descriptors."""
        return tools.memory_kib(self.pid), len(os.listdir(f"/proc/{self.pid}/fd"))

    def check_alive(self):
        if self.server.process.poll() is not None:
            raise Failed(f"the server exited with status {self.server.process.returncode}:\n{self.server.log_text()}")

    def open_one(self, slow):
        path = (f"/lists/{random.choice(self.names)}/events" if random.random() < 0.5 else  # or multiplexed:
                "/events?" + "&".join(f"list={n}" for n in random.sample(self.names, min(3, len(self.names)))))
        sock = socket.socket()
        try:
            if slow:  # before connect, so that the window the server sees stays small
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(10)
            sock.connect((tools.HOST, self.port))
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {tools.HOST}:{self.port}\r\nAccept: text/event-stream\r\n\r\n".encode())
            sock.setblocking(False)
        except OSError:
            sock.close()
            self.counts["stream open failures"] += 1
            return
        stream = Stream(sock, slow)
        with self.lock:
            self.streams[sock.fileno()] = stream
            # A slow reader is only watched for the server's end of the stream (FIN or RST), never read.
            self.poller.register(sock, select.EPOLLRDHUP if slow else select.EPOLLIN | select.EPOLLRDHUP)
            self.counts["streams opened"] += 1

    def drop(self, stream, counter):
        """Closes `stream` (reader thread, or once that has stopped), lock held."""
        fd = stream.sock.fileno()
        if self.streams.get(fd) is not stream:
            return  # already gone
        del self.streams[fd]
        self.poller.unregister(fd)
        stream.sock.close()
        self.counts[counter] += 1

    def read_loop(self, stop):
        while not stop.is_set():
            with self.lock:
                while not self.closing.empty():  # this thread alone takes from it
                    self.drop(self.closing.get(), "streams closed by us")
            events = self.poller.poll(0.05)
            with self.lock:
                for fd, _ in events:
                    stream = self.streams.get(fd)
                    if stream is None:
                        continue
                    if stream.slow:
                        self.drop(stream, "streams closed by the server")
                        continue
                    try:
                        data = stream.sock.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        self.drop(stream, "streams closed by the server")
                    elif len(stream.head) < 12:
                        stream.head += data[:12]
                        if len(stream.head) >= 12 and not stream.head.startswith(b"HTTP/1.1 200"):
                            self.drop(stream, "streams refused (not 200)")

    def write_loop(self, stop):
        # One keep-alive connection; http.client opens it again after a close or a failure.
        connection = http.client.HTTPConnection(tools.HOST, self.port, timeout=30)
        n, next_at = 0, time.monotonic()
        while not stop.wait(max(0.0, next_at - time.monotonic())):
            n += 1
            next_at = max(next_at + self.args.write_interval, time.monotonic())
            body = '{"sections":[{"id":"s","cells":[{"id":"c0","text":"write %d %s"}]}]}' % (n, self.padding)
            try:
                connection.request("PUT", f"/lists/{random.choice(self.names)}", body=body,
                                   headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                answer = response.read()
                if response.status == 503 and b"overloaded" in answer:  # PROTOCOL.md, "Request bodies"
                    self.counts["writes refused 503 overloaded"] += 1
                else:
                    self.counts["writes" if response.status < 300 else "write failures"] += 1
            except (OSError, http.client.HTTPException):
                self.counts["write failures"] += 1
                connection.close()
        connection.close()

    def run(self, seconds, sample=None):
        """Streams with churn and a writer for `seconds`; a line every `sample` s if given."""
        stop = threading.Event()
        threads = [threading.Thread(target=self.read_loop, args=(stop,), daemon=True),
                   threading.Thread(target=self.write_loop, args=(stop,), daemon=True)]
        for thread in threads:
            thread.start()
        began = time.monotonic()
        next_sample = sample
        try:
            tick = began
            while time.monotonic() - began < seconds:
                self.check_alive()
                with self.lock:
                    live = [s for s in self.streams.values() if not s.doomed]
                # Slow readers are left to the server (cut or coalesced), not churned: a life of ten
                # seconds or so would seldom fill their buffers.
                fast = [s for s in live if not s.slow]
                if tick > began:  # no churn before the first round is open
                    for stream in random.sample(fast, int(len(fast) * self.args.churn / 100)):
                        stream.doomed = True
                        self.closing.put(stream)
                # Replacements: slow readers first while they are short of --slow %, then fast ones.
                wanted = self.args.streams - len(live) + sum(s.doomed for s in fast)
                slow = round(self.args.streams * self.args.slow / 100) - (len(live) - len(fast))
                for index in range(wanted):
                    self.open_one(index < slow)
                elapsed = time.monotonic() - began
                if next_sample is not None and elapsed >= next_sample:
                    with self.lock:
                        open_, slow = len(self.streams), sum(s.slow for s in self.streams.values())
                    rss, fds = self.usage()
                    print(f"[{elapsed:6.0f} s] streams open {open_:,} ({slow} slow), "
                          f"server RSS {rss / 1024:.1f} MiB, server fds {fds:,}", flush=True)
                    next_sample += sample
                tick += 1
                time.sleep(max(0.0, tick - time.monotonic()))
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)

    def metrics(self, *names):
        """Values of unlabelled metrics of GET /metrics, by name."""
        status, _, body = tools.request(self.port, "GET", "/metrics", timeout=10)
        found = dict(re.findall(r"^(livelist_\w+) (\d+)$", body.decode(), re.MULTILINE))
        if status != 200 or not set(names) <= set(found):
            raise Failed(f"GET /metrics answered {status} without all of {names}: {body[:200]!r}")
        return {name: int(found[name]) for name in names}

    def settle(self):
        """Closes every stream (the reader has stopped), waits for the server to count none open (30 s
        at most), then 3 s more; returns the server's RSS (KiB) and descriptors."""
        with self.lock:
            for stream in list(self.streams.values()):
                self.drop(stream, "streams closed by us")
        deadline = time.monotonic() + 30
        while self.metrics(STREAMS_OPEN)[STREAMS_OPEN] > 0 and time.monotonic() < deadline:
            self.check_alive()
            time.sleep(0.5)
        time.sleep(3)
        self.check_alive()
        return self.usage()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10, help="length of the churn run (default 10)")
    parser.add_argument("--streams", type=int, default=2000, help="event streams kept open (default 2,000)")
    parser.add_argument("--lists", type=int, default=100, help="JSON lists the streams follow (default 100)")
    parser.add_argument("--churn", type=float, default=10, help="%% of the streams replaced every second (default 10)")
    parser.add_argument("--slow", type=float, default=5, help="%% of the streams that never read (default 5)")
    parser.add_argument("--write-interval", type=float, default=0.01, help="seconds between PUTs (default 0.01)")
    parser.add_argument("--sample", type=float, default=30, help="seconds between progress lines (default 30)")
    parser.add_argument("--cell-bytes", type=int, default=2000,
                        help="bytes of text in each write's cell, so that slow readers' buffers fill (default 2,000)")
    parser.add_argument("--log-count", type=int, default=16,
                        help="the server's --log-count: changesets kept a list, filled before the baseline (default 16)")
    parser.add_argument("--binary", default=tools.default_binary(), help="the livelist binary (default: the release build)")
    args = parser.parse_args()

    if not os.path.exists(args.binary):
        sys.exit(f"bench-churn: build the server first: swift build -c release --product livelist ({args.binary} missing)")
    # This process and the server each hold a descriptor per stream; closed ones linger a little.
    wanted = args.streams * 2 + 1000
    if tools.raise_open_files(wanted) < args.streams + 500:
        sys.exit(f"bench-churn: the open-file limit is too low for {args.streams:,} streams")

    with tools.Server(args.binary, "--no-demo", "--log-count", str(args.log_count)) as server:
        try:
            names = [f"churn{i}" for i in range(args.lists)]
            # Each list's change log fills to its bound first (--log-count changesets), so that the
            # baseline holds what the lists keep by design and the run shows what streams leave behind.
            connection = http.client.HTTPConnection(tools.HOST, server.port, timeout=30)
            for round_ in range(args.log_count + 4):
                for name in names:
                    connection.request("PUT", f"/lists/{name}", headers={"Content-Type": "application/json"},
                                       body='{"sections":[{"id":"s","cells":[{"id":"c0","text":"fill %d %s"}]}]}'
                                       % (round_, "x" * args.cell_bytes))
                    response = connection.getresponse()
                    body = response.read()
                    if response.status >= 300:
                        raise Failed(f"PUT /lists/{name} answered {response.status}: {body[:200]!r}")
            connection.close()
            churn = Churn(server, args, names)
            churn.run(WARMUP)
            base_rss, base_fds = churn.settle()
            churn.counts = dict.fromkeys(churn.counts, 0)  # count the measured run only
            print(f"Baseline after a {WARMUP} s warm-up: server RSS {base_rss / 1024:.1f} MiB, {base_fds} fds\n", flush=True)
            churn.run(args.minutes * 60, args.sample)
            final_rss, final_fds = churn.settle()
            peak_rss, at_end = tools.memory_kib(server.process.pid, "VmHWM"), churn.metrics(*END_METRICS)
        except (Failed, OSError, http.client.HTTPException) as failure:
            server.stop()
            sys.exit(f"bench-churn: {failure}\n{server.log_text() if not isinstance(failure, Failed) else ''}")

    ratio = final_rss / base_rss
    print(f"\n## Churn: {args.streams:,} streams, {args.churn:g} % replaced a second, {args.slow:g} % slow, "
          f"{args.minutes:g} min\n")
    print("| measure | value |\n|---|---:|")
    rows = [("server RSS at baseline", f"{base_rss / 1024:.1f} MiB"), ("server RSS at peak", f"{peak_rss / 1024:.1f} MiB"),
            ("server RSS at the end", f"{final_rss / 1024:.1f} MiB"), ("end / baseline", f"{ratio:.3f}"),
            ("server fds at baseline", base_fds), ("server fds at the end", final_fds)]
    rows += [(name, f"{count:,}") for name, count in churn.counts.items()]
    rows += [(f"`{name}` at the end", f"{value:,}") for name, value in at_end.items()]
    for name, value in rows:
        print(f"| {name} | {value} |")
    print(f"\n- RSS back within 10 % of where it started: {'yes' if ratio <= 1.10 else 'NO'} "
          f"({final_rss / 1024:.1f} MiB against {base_rss / 1024:.1f} MiB)")
    print(f"- no descriptor left behind: {'yes' if final_fds <= base_fds else 'NO'} ({final_fds} fds against {base_fds})")


if __name__ == "__main__":
    main()
