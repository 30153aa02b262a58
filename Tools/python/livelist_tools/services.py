"""nginx and PostgreSQL for tests and benchmarks: a main configuration, a fresh database."""
import os
import random
import subprocess
import urllib.parse


def nginx_conf(prefix, http, workers=1, connections=1024, rlimit=None, error_log=None, log_level="warn"):
    """A main nginx configuration for a foreground nginx (`nginx -p PREFIX -c FILE`) that writes nothing
    outside `prefix` (pid, error log, temporary bodies), with `http` (indented directives) in its http
    block."""
    temp = "".join(f"    {kind}_temp_path {prefix}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"daemon off;\nworker_processes {workers};\n"
            + (f"worker_rlimit_nofile {rlimit};\n" if rlimit else "")
            + f"pid {prefix}/nginx.pid;\nerror_log {error_log or prefix + '/logs/error.log'} {log_level};\n"
            + f"events {{ worker_connections {connections}; }}\nhttp {{\n{temp}{http.rstrip()}\n}}\n")


def create_database(url, psql, label):
    """A new database named after `label` on the PostgreSQL at `url`, made with `psql`; returns its URL."""
    name = f"{label}_{os.getpid()}_{random.randrange(1 << 30)}"
    subprocess.run([psql, url, "-qc", f"CREATE DATABASE {name}"], check=True, capture_output=True)
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(path="/" + name))
