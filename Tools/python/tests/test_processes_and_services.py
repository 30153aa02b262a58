"""Ports, processes, the cutting proxy and the configuration helpers."""
import os
import socket
import subprocess
import sys
import time

from livelist_tools import BUILD_LOCK, ROOT, CuttingProxy, free_port, memory_kib, nginx_conf, request, stop_process
from livelist_tools.replay import counts, median


def test_root_is_this_checkout_and_the_lock_has_one_name():
    assert os.path.isfile(os.path.join(ROOT, "Package.swift"))
    assert BUILD_LOCK == "/tmp/livelist-swift.lock"


def test_free_port_can_be_bound():
    port = free_port()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_stop_process_terminates_then_reports():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    assert stop_process(process, seconds=5) is True
    assert process.returncode is not None


def test_memory_kib_reads_proc():
    assert memory_kib(os.getpid()) > 0


def test_nginx_conf_keeps_everything_in_its_prefix():
    text = nginx_conf("/tmp/p", "    server { listen 1; }\n", workers=2, rlimit=99)
    assert "daemon off;" in text and "worker_processes 2;" in text and "worker_rlimit_nofile 99;" in text
    assert "pid /tmp/p/nginx.pid;" in text and "proxy_temp_path /tmp/p/proxy;" in text
    assert text.rstrip().endswith("server { listen 1; }\n}")


def test_cutting_proxy_carries_records_and_cuts(canned):
    proxy = CuttingProxy(canned.server_address[1])
    try:
        assert request(proxy.port, "GET", "/a?b=1", headers={"Last-Event-ID": "5"})[0] == 200
        heads = proxy.requests_to("/a?b=1")
        assert heads and heads[0]["headers"]["last-event-id"] == "5"
        proxy.cut()
        try:
            request(proxy.port, "GET", "/a", timeout=2)
            carried = True
        except OSError:
            carried = False
        assert not carried
        proxy.restore()
        time.sleep(0.05)
        assert request(proxy.port, "GET", "/a")[0] == 200
    finally:
        proxy.close()


def test_statistics_helpers():
    assert median([3, 1, 2]) == 2
    assert median([]) != median([])  # NaN: no value
    assert counts([204, 429, 204]) == "2x 204, 1x 429"
    assert counts([]) == "none"


def test_free_port_from_the_shell():
    out = subprocess.run([sys.executable, "-m", "livelist_tools", "free-port"], capture_output=True, text=True, check=True)
    assert 0 < int(out.stdout) < 65536
