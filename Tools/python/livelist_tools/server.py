"""The livelist binary on 127.0.0.1, on a port of its own choice."""
import collections
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time

from .paths import HOST, ROOT
from .processes import stop_process


class Server:
    """The livelist binary on 127.0.0.1. It picks its own port (`--port 0`), read from its banner
    ("serving on http://127.0.0.1:PORT", logged at the info level, which it is started with: an `extra`
    --log-level above info hides the banner). Its data folder is `data`, or a temporary one that close()
    removes; Public/ and Templates/ are this checkout's unless `resources` is false. Its output is read
    on a thread, the last lines kept for failure reports (log_text). `prefix` goes before the command
    (taskset, say). Failing to start raises `error`. Stopped by stop(), close() or the end of `with`."""

    def __init__(self, binary, *extra, data=None, env=None, prefix=(), resources=True, timeout=30, error=RuntimeError):
        self.data = data or tempfile.mkdtemp(prefix="livelist-script-")
        self.owns_data = data is None
        self.lines = collections.deque(maxlen=400)
        self.port = None
        command = [*prefix, binary, "--host", HOST, "--port", "0", "--data", self.data, "--log-level", "info"]
        if resources:
            command += ["--public", os.path.join(ROOT, "Public"), "--templates", os.path.join(ROOT, "Templates")]
        self.started = time.monotonic()
        self.process = subprocess.Popen(command + list(extra), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, env=env)
        announced = queue.Queue()
        threading.Thread(target=self._read_output, args=(announced,), daemon=True).start()
        try:
            self.port = announced.get(timeout=timeout)
        except queue.Empty:
            pass
        if self.port is None:
            try:
                exited = self.process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                exited = None
            self.close(kill=True)
            why = f"exited with status {exited}" if exited is not None else f"announced no port within {timeout:g} s"
            raise error(f"{binary} {why}: {self.log_text()}")

    def _read_output(self, announced):
        """Keeps reading the server's output, so that it never blocks on a full pipe."""
        for line in iter(self.process.stderr.readline, b""):
            text = line.decode(errors="replace")
            self.lines.append(text)
            if self.port is None:
                found = re.search(r"serving on http://127\.0\.0\.1:(\d+)", text)
                if found:
                    announced.put(int(found.group(1)))
        announced.put(None)

    def log_text(self, limit=3000):
        """The end of what the server wrote."""
        return "".join(self.lines)[-limit:]

    def stop(self, kill=False, seconds=20):
        """See stop_process."""
        return stop_process(self.process, seconds, kill)

    def close(self, kill=False):
        self.stop(kill)
        if self.owns_data:
            shutil.rmtree(self.data, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()
