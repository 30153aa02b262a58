"""The shipped script: the current build of its readable source, under 6 KB gzipped, no eval."""
import gzip
import re
import subprocess
import sys

from conftest import PUBLIC, REPO

BUDGET = 6144


def test_livelist_js_is_the_build_of_its_source():
    result = subprocess.run([sys.executable, str(REPO / "Scripts" / "minify.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_livelist_js_is_under_6_kb_gzipped():
    size = len(gzip.compress((PUBLIC / "livelist.js").read_bytes(), 9))
    assert size < BUDGET, f"livelist.js is {size} bytes gzipped, over the {BUDGET}-byte budget"


def test_no_eval_and_no_dependencies():
    source = (PUBLIC / "livelist.src.js").read_text(encoding="utf-8")
    assert not re.search(r"\beval\s*\(|new\s+Function\b|\bimport\b|\brequire\s*\(", source)
    assert not re.search(r"setTimeout\s*\(\s*['\"`]", source), "setTimeout with a string is eval"
