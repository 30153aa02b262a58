#!/usr/bin/env bash
# HTTP throughput on 127.0.0.1 with wrk: LiveList's HTTPServer beside Hummingbird 2 and nginx on the same
# bytes, then the livelist binary's routes beside nginx (one worker) serving the same bytes from files.
# Prints Markdown: req/s, p50/p99 ms, server CPU µs per request and ratios to nginx, medians of three
# runs. The measurement is Benchmarks/Scripts/_http_wrk.py (`--help` lists what it measures and its flags); this
# checks that wrk and nginx are there (Scripts/setup bench installs them) and builds in release
# (Benchmarks/HTTPServerBench, Benchmarks/HummingbirdReference and livelist), holding
# /tmp/livelist-swift.lock (the lock of every swift build on the machine) only while building.
#
#   Benchmarks/run http [--no-build] [--runs N] [--duration SECONDS] [--connections N]
#                         [--skip-servers] [--skip-page] [--livelist BIN] [--compare BIN] [--access] [--one-core]
#
# --no-build uses what is built. About 6 minutes (3 with --skip-servers).
set -euo pipefail
scripts="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$scripts/../.." && pwd)"
build=1
for argument in "$@"; do
    case "$argument" in
        -h|--help) exec python3 "$scripts/_http_wrk.py" --help ;;
        --no-build) build=0 ;;
    esac
done

# Installing is Scripts/setup's job (its bench group), not this script's.
for tool in wrk nginx; do
    if ! command -v "$tool" >/dev/null 2>&1 && ! [[ -x /usr/sbin/$tool ]]; then
        echo "Benchmarks/run http: $tool is missing: run Scripts/setup bench" >&2
        exit 1
    fi
done

if [[ $build -eq 1 ]]; then
    echo "Building http-bench-server, hummingbird-bench-server and livelist (release)…" >&2
    flock /tmp/livelist-swift.lock swift build -c release --package-path "$repo_root/Benchmarks/HTTPServerBench" >&2
    flock /tmp/livelist-swift.lock swift build -c release --package-path "$repo_root/Benchmarks/HummingbirdReference" >&2
    flock /tmp/livelist-swift.lock swift build -c release --package-path "$repo_root" --product livelist >&2
fi
exec python3 "$scripts/_http_wrk.py" "$@"
