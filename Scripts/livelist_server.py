"""Starts a livelist binary on a free loopback port with its own data folder, for the scripts beside it."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Server:
    """The real binary on 127.0.0.1, port chosen by the kernel; stopped on exit or by stop()."""

    def __init__(self, binary, *extra, data=None):
        self.data = data or tempfile.mkdtemp(prefix="livelist-script-")
        self.owns_data = data is None
        self.process = subprocess.Popen(
            [binary, "--port", "0", "--data", self.data, "--public", ROOT + "/Public",
             "--templates", ROOT + "/Templates", "--log-level", "info", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        text = b""
        deadline = time.time() + 30
        # The banner must come within 30 s: a timer kills a server that hangs before it.
        watchdog = threading.Timer(30, self.process.kill)
        watchdog.start()
        while time.time() < deadline:
            line = self.process.stderr.readline()
            if not line:
                watchdog.cancel()
                raise RuntimeError("the server did not start: " + text.decode(errors="replace"))
            text += line
            found = re.search(rb"serving on http://127\.0\.0\.1:(\d+)", line)
            if found:
                self.port = int(found.group(1))
                break
        else:
            self.process.kill()
            raise RuntimeError("the server did not announce its port in 30 s")
        watchdog.cancel()
        # Keep draining stderr so the server never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in iter(self.process.stderr.readline, b"")], daemon=True).start()

    def stop(self, kill=False):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def close(self):
        self.stop()
        if self.owns_data:
            shutil.rmtree(self.data, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def default_binary():
    return os.environ.get("LIVELIST_BINARY", ROOT + "/.build/release/livelist")
