#!/usr/bin/env bash
# Measures the HTML side on a 10,000-cell list and prints Markdown: rendering throughput (median ms,
# bytes, MB/s) beside a naive String-concatenation renderer (the baseline, same run), PatchUpdater's
# median ms for one changed cell and for an unchanged render, and the bytes of the SSE events for one
# changed cell (beyond the cell's JSON-escaped HTML: goal under 400) and for 1,000 moves.
#
#   Benchmarks/run render     (no flags; builds Benchmarks' render-report, always in release)
#
# Works from any directory.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
package="$repo_root/Benchmarks"
echo "Building render-report (release)…" >&2
flock /tmp/livelist-swift.lock swift build -c release --package-path "$package" --product render-report >&2
exec "$(swift build -c release --package-path "$package" --show-bin-path)/render-report" "$@"
