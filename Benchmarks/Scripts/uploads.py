#!/usr/bin/env python3
"""Memory under unauthorized uploads, on 127.0.0.1 only, bounded in time.

For each binary (e.g. before and after a change, in one run; the default is the release build): starts
it with a write token, then 40 clients at once each PUT an 8 MiB body without Authorization, sending the
whole body unless the server answers or closes first. Prints a Markdown row per binary: the server's
resident memory before (VmRSS, MB), its peak (VmHWM, MB) and the growth, and how the uploads were
answered (a refusing server grows by little more than its buffers).

Usage: Benchmarks/run uploads [--binary PATH ...] [--clients 40] [--mib 8]
"""
import argparse
import socket
import threading
import time

from livelist_tools import Server, default_binary, memory_kib


def upload(port, size, results, index):
    body = b"x" * size
    head = (f"PUT /lists/up{index} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n").encode()
    status = "no answer"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(head)
            sent = 0
            try:
                while sent < size:
                    sent += sock.send(body[sent:sent + 65536])
            except OSError:
                pass  # the server answered and closed before the body was sent: the point
            sock.settimeout(30)
            answer = sock.recv(200).decode(errors="replace")
            status = answer.split(" ")[1] if answer.startswith("HTTP/1.1 ") else "closed"
    except OSError as error:
        status = type(error).__name__
    results[index] = status


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", action="append", help="a livelist binary (repeat to compare)")
    parser.add_argument("--clients", type=int, default=40, help="concurrent uploads (default 40)")
    parser.add_argument("--mib", type=int, default=8, help="MiB per upload, also the server's --max-body (default 8)")
    args = parser.parse_args()
    print(f"{args.clients} concurrent unauthorized PUTs of {args.mib} MiB each")
    print("| binary | RSS before | peak RSS | growth | answers |")
    print("|---|---|---|---|---|")
    for binary in args.binary or [default_binary()]:
        with Server(binary, "--no-demo", "--write-token", "secret", "--max-body", str(args.mib << 20)) as server:
            time.sleep(0.5)
            pid = server.process.pid
            before = memory_kib(pid, "VmRSS")
            results = [None] * args.clients
            threads = [threading.Thread(target=upload, args=(server.port, args.mib << 20, results, i)) for i in range(args.clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            peak = memory_kib(pid, "VmHWM")
            answers = {}
            for result in results:
                answers[result] = answers.get(result, 0) + 1
            summary = ", ".join(f"{count}× {answer}" for answer, count in sorted(answers.items(), key=str))
            print(f"| {binary} | {before / 1024:.1f} MB | {peak / 1024:.1f} MB | {(peak - before) / 1024:.1f} MB | {summary} |")


if __name__ == "__main__":
    main()
