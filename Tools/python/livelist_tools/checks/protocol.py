"""Validates JSON lines of changesets, snapshots, PATCH bodies, ranges of cells and event streams' openings written by the test
suite against the JSON Schemas of docs/schemas/, so that docs/PROTOCOL.md cannot drift from what the server sends.

Usage: python3 -m livelist_tools.checks.protocol SAMPLES_DIR   (expects changesets.jsonl, snapshots.jsonl, patches.jsonl, cells.jsonl and streams.jsonl in it)

Prints the number of changesets and snapshots checked and of violations (the first ten listed); exit
status 1 on any violation or when a file holds no sample. Needs Python's jsonschema (4.18 or newer)."""
import argparse
import json
import os
import sys

from ..paths import ROOT


def main():
    parser = argparse.ArgumentParser(prog="python3 -m livelist_tools.checks.protocol", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("samples", metavar="SAMPLES_DIR", help="the folder of changesets.jsonl and snapshots.jsonl")
    samples = parser.parse_args().samples

    from jsonschema import Draft202012Validator  # after --help, which works without it
    from referencing import Registry, Resource

    schemas = {}
    for name in ("changeset", "snapshot", "put", "patch", "cells", "stream"):
        with open(os.path.join(ROOT, "docs", "schemas", f"{name}.schema.json")) as f:
            schemas[name] = json.load(f)
    registry = Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in schemas.values())

    failures = 0
    counts = {}
    for name in ("changeset", "snapshot", "patch", "cells", "stream"):
        validator = Draft202012Validator(schemas[name], registry=registry)
        with open(os.path.join(samples, {"patch": "patches.jsonl", "cells": "cells.jsonl"}.get(name, f"{name}s.jsonl"))) as f:
            lines = [line for line in f if line.strip()]
        if not lines:
            print(f"check-protocol: no {name} samples", file=sys.stderr)
            return 1
        for number, line in enumerate(lines, 1):
            document = json.loads(line)
            for error in validator.iter_errors(document):
                failures += 1
                if failures <= 10:
                    print(f"{name} samples, line {number}: {error.json_path}: {error.message}", file=sys.stderr)
        counts[name] = len(lines)
    print(f"check-protocol: {counts['changeset']} changesets, {counts['snapshot']} snapshots, {counts['patch']} PATCH bodies, "
          f"{counts['cells']} ranges of cells and {counts['stream']} stream openings checked "
          f"against docs/schemas, {failures} violations")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
