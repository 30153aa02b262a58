"""The house's limits, checked on every run of Scripts/test, so that later work cannot erode them:

  lines       no Swift source over 450 lines (files marked generated, with a --check of their own, apart)
  traps       no fatalError, preconditionFailure or precondition in the engine and the modules under it
              (ListDiff, Markup, LiveList, LiveListHTML, LiveListEngine), but in the body of an API
              marked @available(*, unavailable)
  imports     every module a target's sources import is one it declares in Package.swift (or the system's)
  references  no docs or comments that name issues by number, or people (the product owner)

Usage: python3 -m livelist_tools.checks.limits   (exit 1 with every finding listed)
"""
import json
import os
import re
import subprocess
import sys

from ..paths import ROOT
LIMIT = 450
# Generated files that have a --check of their own in Scripts/test.
GENERATED = {"Sources/Markup/Elements.swift", "Tests/DocSnippetTests/Snippets.swift"}
ENGINE = ["ListDiff", "Markup", "LiveList", "LiveListHTML", "LiveListEngine"]
SYSTEM = {"Foundation", "FoundationEssentials", "Glibc", "Darwin", "Musl", "Dispatch", "Synchronization", "Testing", "XCTest",
          "PackagePlugin", "_Concurrency", "os", "ucrt", "WinSDK"}


def swift_files(folder):
    for directory, _, names in os.walk(os.path.join(ROOT, folder)):
        for name in sorted(names):
            if name.endswith(".swift"):
                yield os.path.relpath(os.path.join(directory, name), ROOT)


def check_lines(findings):
    for folder in ["Sources", "Tests", "Plugins", "Benchmarks/Sources", "Examples"]:
        if not os.path.isdir(os.path.join(ROOT, folder)):
            continue
        for path in swift_files(folder):
            if "/.build" in path or path in GENERATED:
                continue
            with open(os.path.join(ROOT, path), encoding="utf-8") as file:
                count = sum(1 for _ in file)
            if count > LIMIT:
                findings.append(f"lines: {path} has {count} lines, more than {LIMIT}: split it along its sections")


def check_traps(findings):
    trap = re.compile(r"\b(fatalError|preconditionFailure|precondition)\s*\(")
    for module in ENGINE:
        for path in swift_files(os.path.join("Sources", module)):
            lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
            for number, line in enumerate(lines, 1):
                code = line.split("//", 1)[0]
                if not trap.search(code):
                    continue
                # The body of an API that cannot be called (it exists to name what to write instead).
                before = "\n".join(lines[max(0, number - 10):number - 1])
                if re.search(r"@available\(\s*\*,\s*unavailable", before):
                    continue
                findings.append(f"traps: {path}:{number}: {line.strip()} (the engine throws or answers; it never traps)")


def manifest():
    output = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return json.loads(output)


def check_imports(findings):
    package = manifest()
    imports = re.compile(r"^\s*(?:@_exported\s+)?(?:@testable\s+)?(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+"
                         r"(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.M)
    for target in package["targets"]:
        if target["type"] in ("system", "plugin"):
            continue
        declared = {target["name"]}
        for dependency in target.get("dependencies", []):
            for kind in ("byName", "target", "product"):
                if kind in dependency:
                    declared.add(dependency[kind][0])
        folder = target.get("path") or os.path.join("Tests" if target["type"] == "test" else "Sources", target["name"])
        for path in swift_files(folder):
            text = open(os.path.join(ROOT, path), encoding="utf-8").read()
            for module in sorted(set(imports.findall(text))):
                if module not in declared and module not in SYSTEM:
                    findings.append(f"imports: {path} imports {module}, which the target {target['name']} does not declare in Package.swift")


def check_references(findings):
    pattern = re.compile(r"\b[Ii]ssues? #?\d+\b|\(#\d+\)|\bproduct owner\b|\bthe CEO\b")
    places = [os.path.join("docs", name) for name in sorted(os.listdir(os.path.join(ROOT, "docs"))) if name.endswith(".md")]
    places += ["README.md", "CONTRIBUTING.md"]
    for folder in ["Sources", "Tests", "Plugins"]:
        places += list(swift_files(folder))
    for path in places:
        for number, line in enumerate(open(os.path.join(ROOT, path), encoding="utf-8"), 1):
            text = line if path.endswith(".md") else (line.split("//", 1)[1] if "//" in line else "")
            match = pattern.search(text)
            if match:
                findings.append(f"references: {path}:{number}: \"{match.group(0)}\" (say what it is, not where it was asked for)")


def main():
    findings = []
    check_lines(findings)
    check_traps(findings)
    check_imports(findings)
    check_references(findings)
    for finding in findings:
        print(finding, file=sys.stderr)
    if findings:
        print(f"check-limits: {len(findings)} findings", file=sys.stderr)
        return 1
    print("check-limits: no source over 450 lines, no trap in the engine, every import declared, no issue or person named")
    return 0


if __name__ == "__main__":
    sys.exit(main())
