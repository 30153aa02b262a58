#!/usr/bin/env bash
# The client's browser tests: checks that Chromium, its driver, selenium and pytest are there (Scripts/setup
# installs them: Debian's chromium and chromium-driver, Python's selenium, pytest and axe-selenium-python),
# then runs pytest here. Exits non-zero when anything fails.
#
# The tests make the protocol samples by running the Swift suite's ProtocolSamplesTests in the package
# at LIVELIST_PACKAGE (default: this repository), which must be built first (`swift build
# --build-tests`, as Scripts/test does); or set LIVELIST_SAMPLES_DIR to a directory that already holds
# chains.jsonl. Extra arguments go to pytest (e.g. -k focus).
set -euo pipefail
cd "$(dirname "$0")"

missing() { echo "Tests/Browser/run.sh: $1 is missing: run Scripts/setup" >&2; exit 1; }
[ -n "${CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || missing chromium
[ -n "${CHROMEDRIVER:-}" ] || command -v chromedriver >/dev/null 2>&1 || missing "chromium-driver (chromedriver)"
python3 -c "import selenium, pytest" 2>/dev/null || missing "selenium or pytest (Python)"
python3 -c "import livelist_tools" 2>/dev/null || missing "livelist_tools (Tools/python)"
# axe-core for the accessibility tests (test_page.py), as shipped inside axe-selenium-python: optional.
python3 -c "import axe_selenium_python" 2>/dev/null \
    || echo "Tests/Browser/run.sh: axe-selenium-python is missing (Scripts/setup installs it); the axe tests will skip" >&2
export CHROMIUM="${CHROMIUM:-$(command -v chromium)}"
export CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver)}"

echo "== browser tests (Chromium $("$CHROMIUM" --version 2>/dev/null | awk '{print $2}'))"
export PYTHONDONTWRITEBYTECODE=1
exec python3 -m pytest -q -p no:cacheprovider "$@"
