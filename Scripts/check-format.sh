#!/usr/bin/env bash
# Lints the Swift sources with `swift format` (shipped with the toolchain) against .swift-format, and
# exits non-zero on any finding of its rules. Scripts/test runs it right after the build.
#
# The pretty printer's layout findings (Indentation, Spacing, AddLines, RemoveLine, TrailingComma,
# LineLength) cannot be switched off in .swift-format, and the code's hand-aligned continuation lines
# differ from its layout in several hundred places; they are counted and shown, not failed, until the
# sources are reformatted in one change. TrailingWhitespace, also a layout finding, is failed.
#
#   Scripts/check-format.sh            rule findings fail; layout findings are counted
#   Scripts/check-format.sh --layout   layout findings fail too (each one listed)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."

if ! swift format --version >/dev/null 2>&1; then
    echo "check-format: needs \`swift format\`, which ships with the Swift 6 toolchain" >&2
    exit 1
fi

strict_layout=false
if [ "${1:-}" = "--layout" ]; then strict_layout=true; fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# --strict turns every finding into an error, so that the exit status alone says whether any was found.
status=0
swift format lint --strict --configuration .swift-format --recursive \
    Sources Tests Benchmarks/Sources Package.swift Benchmarks/Package.swift > "$log" 2>&1 || status=$?

layout='\[(Indentation|Spacing|AddLines|RemoveLine|TrailingComma|LineLength)\]'
if $strict_layout; then
    failing=$(cat "$log")
else
    failing=$(grep -Ev ": (error|warning): $layout" "$log" || true)
fi
layout_count=$(grep -cE ": (error|warning): $layout" "$log" || true)

if [ -n "$failing" ]; then
    echo "$failing"
    echo "check-format: swift format found the problems above (configuration: .swift-format)" >&2
    exit 1
fi
if [ "$status" -ne 0 ] && [ "$layout_count" -eq 0 ]; then
    echo "check-format: swift format failed (status $status) without a finding" >&2
    exit 1
fi
if [ "$layout_count" -gt 0 ]; then
    echo "check-format: no rule findings; $layout_count layout findings not failed (Scripts/check-format.sh --layout lists them):"
    grep -oE ": (error|warning): $layout" "$log" | sed -E 's/.*\[(.*)\]/\1/' | sort | uniq -c | sort -rn
else
    echo "check-format: no findings"
fi
