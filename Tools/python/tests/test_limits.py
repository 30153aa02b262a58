"""The limits checker on a temporary tree: each finding it must report, and what it must let through."""

import pytest

from livelist_tools.checks import limits


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("LiveList\n")
    (tmp_path / "CONTRIBUTING.md").write_text("How to\n")
    monkeypatch.setattr(limits, "ROOT", str(tmp_path))

    def write(path, text):
        full = tmp_path / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    return write


def findings(*checks):
    found = []
    for check in checks:
        check(found)
    return found


def test_a_long_swift_file_is_found_but_a_generated_one_is_not(tree):
    tree("Sources/App/Long.swift", "let a = 1\n" * (limits.LIMIT + 1))
    tree("Sources/App/Short.swift", "let a = 1\n" * limits.LIMIT)
    tree("Sources/Markup/Elements.swift", "let a = 1\n" * (limits.LIMIT + 10))
    found = findings(limits.check_lines)
    assert len(found) == 1 and "Sources/App/Long.swift has 451 lines" in found[0]


def test_a_trap_in_the_engine_is_found_unless_unavailable(tree):
    tree("Sources/ListDiff/Trap.swift", "func f() {\n    fatalError(\"no\")\n}\n")
    tree("Sources/ListDiff/Unavailable.swift", "@available(*, unavailable)\npublic func g() {\n    fatalError(\"use h\")\n}\n")
    tree("Sources/ListDiff/Comment.swift", "// fatalError( in a comment\n")
    tree("Sources/App/Outside.swift", "func f() { fatalError(\"fine outside the engine\") }\n")
    found = findings(limits.check_traps)
    assert len(found) == 1 and found[0].startswith("traps: Sources/ListDiff/Trap.swift:2:")


def test_issue_numbers_and_people_are_found_in_docs_and_comments(tree):
    tree("docs/GUIDE.md", "Fixed for issue #12.\n")
    tree("Sources/App/A.swift", "let issue = 3 // asked by the product owner\nlet x = \"issue 4\"\n")
    found = findings(limits.check_references)
    assert any("docs/GUIDE.md:1" in line for line in found)
    assert any("Sources/App/A.swift:1" in line and "product owner" in line for line in found)
    assert len(found) == 2  # a string in code is not a comment


def test_a_clean_tree_has_no_findings(tree):
    tree("Sources/App/A.swift", "let a = 1 // fine\n")
    assert findings(limits.check_lines, limits.check_traps, limits.check_references) == []
