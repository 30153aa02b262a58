#!/usr/bin/env bash
# Fuzzes LiveListHTTP's request parser with libFuzzer and AddressSanitizer for a bounded time, from the
# committed corpus (Tests/Fuzz/corpus/request-parser) and an HTTP dictionary, with LeakSanitizer on.
# Every input is parsed whole and in two pieces, which must agree. A crash leaves its input in Tests/Fuzz/crashes/ (commit
# it as a regression case) and fails the script.
#
#   Scripts/fuzz-parser.sh [SECONDS]     (default 60; Scripts/test runs a short smoke)
#   SWIFT=/path/to/wrapper Scripts/fuzz-parser.sh   (build through a wrapper, e.g. one holding a build lock)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
corpus=Tests/Fuzz/corpus/request-parser
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== building FuzzRequestParser with -sanitize=fuzzer,address (scratch .build-fuzz)"
"${SWIFT:-swift}" build -c release --product FuzzRequestParser --scratch-path .build-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING 2>&1 | grep -Ev "Cannot export local symbol|^\[" || true
binary=.build-fuzz/release/FuzzRequestParser
[ -x "$binary" ] || { echo "fuzz-parser: the build failed" >&2; exit 1; }

# The committed corpus seeds a scratch copy, so that a run adds nothing to the repository by itself.
cp "$corpus"/* "$work"/
mkdir -p Tests/Fuzz/crashes
echo "== fuzzing the request parser for ${seconds}s"
status=0
SWIFT_BACKTRACE=enable=no "$binary" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -dict=Tests/Fuzz/http.dict -artifact_prefix=Tests/Fuzz/crashes/ -print_final_stats=1 "$work" \
    > "$work.log" 2>&1 || status=$?
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|ERROR|Fatal error" "$work.log" || true
rm -f "$work.log"
if [ "$status" -ne 0 ]; then
    echo "fuzz-parser: the fuzzer found a failure (exit $status); its input is in Tests/Fuzz/crashes/" >&2
    exit 1
fi
echo "fuzz-parser: no failure in ${seconds}s"
