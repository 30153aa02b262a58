#!/usr/bin/env bash
# The client's browser tests: installs what is missing (Debian's chromium and chromium-driver, Python's
# selenium, pytest and axe-selenium-python), then runs pytest here. Exits non-zero when anything fails.
#
# The tests make the protocol samples by running the Swift suite's ProtocolSamplesTests in the package
# at LIVELIST_PACKAGE (default: this repository), which must be built first (`swift build
# --build-tests`, as Scripts/test does); or set LIVELIST_SAMPLES_DIR to a directory that already holds
# chains.jsonl. Extra arguments go to pytest (e.g. -k focus).
set -euo pipefail
cd "$(dirname "$0")"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
        echo "Tests/Browser/run.sh: need root to run: $*" >&2; return 1; fi
}

apt_updated=0
apt_install() {
    if [ "$apt_updated" -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
    echo "== installing chromium"
    apt_install chromium
fi
if [ -z "${CHROMEDRIVER:-}" ] && ! command -v chromedriver >/dev/null 2>&1; then
    echo "== installing chromium-driver"
    apt_install chromium-driver
fi
if ! python3 -c "import selenium, pytest" 2>/dev/null; then
    echo "== installing selenium and pytest"
    python3 -m pip install --quiet selenium pytest 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages selenium pytest 2>/dev/null \
        || apt_install python3-selenium python3-pytest
fi
# axe-core for the accessibility tests (test_page.py), as shipped inside axe-selenium-python.
if ! python3 -c "import axe_selenium_python" 2>/dev/null; then
    echo "== installing axe-selenium-python (axe-core)"
    python3 -m pip install --quiet axe-selenium-python 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages axe-selenium-python 2>/dev/null \
        || echo "Tests/Browser/run.sh: axe-selenium-python could not be installed; the axe tests will skip" >&2
fi
export CHROMIUM="${CHROMIUM:-$(command -v chromium)}"
export CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver)}"

echo "== browser tests (Chromium $("$CHROMIUM" --version 2>/dev/null | awk '{print $2}'))"
export PYTHONDONTWRITEBYTECODE=1
exec python3 -m pytest -q -p no:cacheprovider "$@"
