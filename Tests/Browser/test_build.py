"""The shipped scripts: the current builds of their readable sources, livelist.js under 6 KB gzipped and
livelist-window.js under 4 KB, no eval."""
import gzip
import re
import subprocess
import sys

from conftest import PUBLIC, REPO

BUDGET = 6144
WINDOW_BUDGET = 4096


def test_livelist_js_is_the_build_of_its_source():
    # The minifier of the shared tools package (Tools/python), run as Scripts/test's set-up installed it.
    result = subprocess.run([sys.executable, "-m", "livelist_tools.minify", "--check"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


def test_livelist_js_is_under_6_kb_gzipped():
    size = len(gzip.compress((PUBLIC / "livelist.js").read_bytes(), 9))
    assert size < BUDGET, f"livelist.js is {size} bytes gzipped, over the {BUDGET}-byte budget"


def test_livelist_window_js_is_under_4_kb_gzipped():
    size = len(gzip.compress((PUBLIC / "livelist-window.js").read_bytes(), 9))
    assert size < WINDOW_BUDGET, f"livelist-window.js is {size} bytes gzipped, over the {WINDOW_BUDGET}-byte budget"


def test_no_eval_and_no_dependencies():
    for name in ("livelist.src.js", "livelist-window.src.js", "livelist-shared.src.js"):
        source = (PUBLIC / name).read_text(encoding="utf-8")
        assert not re.search(r"\beval\s*\(|new\s+Function\b|\bimport\b|\brequire\s*\(", source), name
        assert not re.search(r"setTimeout\s*\(\s*['\"`]", source), f"{name}: setTimeout with a string is eval"
