"""Ports, processes and /proc: free_port, stop_process, process_tree, memory_kib, raise_open_files."""
import resource
import signal
import socket
import subprocess

from .paths import HOST


def free_port(host=HOST):
    """A TCP port that is free on `host` now (the kernel's choice)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def stop_process(process, seconds=20, kill=False):
    """SIGTERM (SIGKILL with `kill`) and a wait of `seconds`, then SIGKILL. True when the process ended on
    the first signal in time (or had ended before), False when it had to be killed."""
    if process.poll() is not None:
        return True
    process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False


def process_tree(pid):
    """`pid` and its children (nginx's workers)."""
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return [pid]
    return [pid] + [int(child) for child in out.split()]


def memory_kib(pid, field="VmRSS"):
    """A field of /proc/PID/status in KiB: VmRSS (resident memory) by default, VmHWM for its peak."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


def raise_open_files(wanted):
    """Raises this process's RLIMIT_NOFILE to `wanted` (the servers it starts inherit it): the hard limit
    too where allowed (as root), else up to the hard limit. Returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return soft
    if hard != resource.RLIM_INFINITY and hard < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            return wanted
        except (ValueError, OSError):  # raising the hard limit needs CAP_SYS_RESOURCE
            wanted = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return wanted
