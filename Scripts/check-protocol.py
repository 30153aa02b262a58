#!/usr/bin/env python3
"""Validates JSON lines of changesets and snapshots written by the test suite against the JSON Schemas
of docs/schemas/, so that docs/PROTOCOL.md cannot drift from what the server sends.

Usage: check-protocol.py SAMPLES_DIR   (expects changesets.jsonl and snapshots.jsonl in it)"""
import json
import os
import sys

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
schemas = {}
for name in ("changeset", "snapshot", "put"):
    with open(os.path.join(root, "docs", "schemas", f"{name}.schema.json")) as f:
        schemas[name] = json.load(f)
registry = Registry().with_resources(
    (schema["$id"], Resource.from_contents(schema)) for schema in schemas.values())

samples = sys.argv[1]
failures = 0
counts = {}
for name in ("changeset", "snapshot"):
    validator = Draft202012Validator(schemas[name], registry=registry)
    with open(os.path.join(samples, f"{name}s.jsonl")) as f:
        lines = [line for line in f if line.strip()]
    if not lines:
        print(f"check-protocol: no {name} samples", file=sys.stderr)
        sys.exit(1)
    for number, line in enumerate(lines, 1):
        document = json.loads(line)
        for error in validator.iter_errors(document):
            failures += 1
            if failures <= 10:
                print(f"{name}s.jsonl:{number}: {error.json_path}: {error.message}", file=sys.stderr)
    counts[name] = len(lines)
print(f"check-protocol: {counts['changeset']} changesets and {counts['snapshot']} snapshots checked "
      f"against docs/schemas, {failures} violations")
sys.exit(1 if failures else 0)
