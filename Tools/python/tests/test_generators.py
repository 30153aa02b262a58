"""The generators' outputs are the checked-in files: the minified scripts, Elements.swift, the guides'
snippets, and the diff scenarios' fingerprints of docs/DIFF-SCENARIOS.md."""
import os

import pytest

from livelist_tools import ROOT, diff_scenarios, html_elements, minify
from livelist_tools.checks import doc_snippets


@pytest.mark.parametrize("source, target", minify.BUILDS, ids=lambda path: getattr(path, "name", ""))
def test_each_shipped_script_is_the_build_of_its_source(source, target):
    assert minify.minify(source.read_text(encoding="utf-8")) == target.read_text(encoding="utf-8"), \
        "run python3 -m livelist_tools.minify"


def test_minify_drops_comments_and_spaces_and_shortens_booleans():
    built = minify.minify("/*! kept */\n// dropped\nfunction f() {\n  let longName = true;\n  return longName;\n}\n")
    assert "kept" in built and "dropped" not in built and "!0" in built and "longName" not in built


def test_elements_swift_is_the_generator_output():
    with open(os.path.join(ROOT, "Sources", "Markup", "Elements.swift"), encoding="utf-8") as file:
        assert file.read() == html_elements.generate()


def test_doc_snippets_are_current():
    assert doc_snippets.check() == []


@pytest.mark.parametrize("name", ["R-UUID-5k", "R-Int-5k", "M-1k", "M-5k"])
def test_diff_scenario_fingerprints_match_the_document(name):
    build, want_source, want_target, _ = diff_scenarios.SCENARIOS[name]
    assert build() == (want_source, want_target)


def test_splitmix64_first_values():
    # The same draws as Sources/LiveListTestSupport/SplitMix64.swift (seed 0: the reference sequence).
    rng = diff_scenarios.SplitMix64(0)
    assert [rng.next() for _ in range(2)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]
