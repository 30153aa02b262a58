#!/usr/bin/env bash
# Times ListDiff against the standard library's difference(from:) (the baseline) on the scenarios of
# docs/DIFF-SCENARIOS.md and prints a Markdown report (tables on standard output, progress on
# standard error): per scenario, the median milliseconds of each, the ratio stdlib / ListDiff, the moves
# found, and the document's DifferenceKit figures beside them. The inputs' fingerprints are checked
# first; a mismatch stops with exit status 1.
#
#   Benchmarks/run diff                  # every scenario (about two minutes on two cores)
#   Benchmarks/run diff --no-stdlib      # ListDiff only (seconds)
#   Benchmarks/run diff --verify-only    # the fingerprints only
#   Benchmarks/run diff M-100k S-100x1000
#
# Arguments go to Benchmarks' diff-report, built first, always in release: debug times mean nothing.
# Works from any directory.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
package="$repo_root/Benchmarks"
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac

echo "Building diff-report (release)…" >&2
flock /tmp/livelist-swift.lock swift build -c release --package-path "$package" --product diff-report >&2
bin_path="$(swift build -c release --package-path "$package" --show-bin-path)"
exec "$bin_path/diff-report" "$@"
