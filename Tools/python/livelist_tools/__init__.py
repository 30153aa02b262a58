"""What LiveList's tests, checks and benchmarks share, standard library only. Installed by Scripts/setup
(`python3 -m pip install -e Tools/python`), so that every suite and script imports it by name:

  free_port, stop_process, process_tree, memory_kib, raise_open_files   ports, processes, /proc
  ROOT, BUILD_LOCK, release_dir, build_release, default_binary, nginx_binary   where things are
  request, wait_ready, TLS_CONTEXT                                       one HTTP request; polling until 200
  Server                                                                 the livelist binary on a free port
  EventStream                                                            an SSE stream read on a thread
  CuttingProxy                                                           a TCP proxy that cuts its connections
  nginx_conf, create_database                                            nginx and PostgreSQL for tests

Modules beside these: replay (the attack replays' helpers), diff_scenarios, minify, checks.* (the
project's checks, each runnable as `python3 -m livelist_tools.checks.NAME`). Everything listens on, or
talks to, 127.0.0.1 unless told otherwise. Shell scripts take a free port from it:

    python3 -m livelist_tools free-port
"""
# When set (an ssl.SSLContext), request() and EventStream speak HTTPS with it. Defined before the
# submodules are imported: web.connect reads it from here at each call.
TLS_CONTEXT = None

from .paths import BUILD_LOCK, HOST, ROOT, build_release, default_binary, nginx_binary, release_dir  # noqa: E402
from .processes import free_port, memory_kib, process_tree, raise_open_files, stop_process  # noqa: E402
from .proxy import CuttingProxy  # noqa: E402
from .server import Server  # noqa: E402
from .services import create_database, nginx_conf  # noqa: E402
from .sse import EventStream  # noqa: E402
from .stats import percentile  # noqa: E402
from .web import connect, request, wait_ready  # noqa: E402

__all__ = ["TLS_CONTEXT", "BUILD_LOCK", "HOST", "ROOT", "build_release", "default_binary", "nginx_binary", "release_dir",
           "free_port", "memory_kib", "process_tree", "raise_open_files", "stop_process", "CuttingProxy", "Server",
           "create_database", "nginx_conf", "EventStream", "percentile", "connect", "request", "wait_ready"]
