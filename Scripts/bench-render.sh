#!/usr/bin/env bash
# Measures the HTML side on a 10,000-cell list and prints Markdown: rendering throughput beside a naive
# String-concatenation renderer (same run), PatchUpdater's time for one changed cell and for an
# unchanged render, and the bytes of the SSE events for one changed cell and for 1,000 moves.
# Always a release build. Works from any directory.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
package="$repo_root/Benchmarks"
echo "Building render-report (release)…" >&2
swift build -c release --package-path "$package" --product render-report >&2
exec "$(swift build -c release --package-path "$package" --show-bin-path)/render-report" "$@"
