"""Where things are: the checkout, the machine-wide build lock, the binaries the scripts and tests run."""
import os
import shutil
import subprocess
import sys

# The checkout this package belongs to (it is installed editable from Tools/python, so its files stay in
# the checkout); LIVELIST_ROOT names another one, e.g. a second worktree that uses this installation.
ROOT = os.environ.get("LIVELIST_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HOST = "127.0.0.1"
# The lock that every Swift build on the machine holds: one name everywhere (Scripts/, Benchmarks/run's
# scripts, Tests/Browser), so that two builds never run at once.
BUILD_LOCK = "/tmp/livelist-swift.lock"


def release_dir(package=ROOT):
    """Where `swift build -c release` puts the products of `package` (SwiftPM's .build/release link)."""
    return os.path.join(package, ".build", "release")


def build_release(package=ROOT, product=None):
    """`swift build -c release` of `package` (one product, or all) under the machine-wide build lock,
    its output on standard error. Returns release_dir(package)."""
    command = ["flock", BUILD_LOCK, "swift", "build", "-c", "release", "--package-path", package]
    subprocess.run(command + (["--product", product] if product else []), check=True, stdout=sys.stderr, timeout=3600)
    return release_dir(package)


def default_binary():
    """The livelist binary the scripts run: $LIVELIST_BINARY, else the release build."""
    return os.environ.get("LIVELIST_BINARY") or os.path.join(release_dir(), "livelist")


def nginx_binary():
    """$LIVELIST_NGINX, else nginx on PATH, else Debian's /usr/sbin/nginx."""
    return os.environ.get("LIVELIST_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
