#!/usr/bin/env bash
# Fuzzes LiveListServer's header helpers (HeaderParsing: media types, cookies, q-values, forms,
# percent-decoding, action values, versions, entity tags, bearer credentials, PUT conditions) with
# libFuzzer and AddressSanitizer for a bounded time, from the committed corpus
# (Tests/Fuzz/corpus/header-helpers) and a dictionary of header tokens, with LeakSanitizer on. Beyond
# traps, the harness checks each helper's promise (a q-value within 0...1, a form that inverts
# percent-encoding, ...). A failure leaves its input in Tests/Fuzz/crashes/ (commit it as a regression
# case) and fails the script.
#
#   Scripts/fuzz-headers.sh [SECONDS]     (default 60; Scripts/test runs a short smoke)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
corpus=Tests/Fuzz/corpus/header-helpers
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== building FuzzHeaders with -sanitize=fuzzer,address (scratch .build-fuzz)"
swift build -c release --product FuzzHeaders --scratch-path .build-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING 2>&1 | grep -Ev "Cannot export local symbol|^\[" || true
binary=.build-fuzz/release/FuzzHeaders
[ -x "$binary" ] || { echo "fuzz-headers: the build failed" >&2; exit 1; }

# The committed corpus seeds a scratch copy, so that a run adds nothing to the repository by itself.
cp "$corpus"/* "$work"/
mkdir -p Tests/Fuzz/crashes
echo "== fuzzing the header helpers for ${seconds}s"
status=0
SWIFT_BACKTRACE=enable=no "$binary" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -max_len=4096 \
    -dict=Tests/Fuzz/headers.dict -artifact_prefix=Tests/Fuzz/crashes/ -print_final_stats=1 "$work" \
    > "$work.log" 2>&1 || status=$?
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|ERROR|Fatal error" "$work.log" || true
rm -f "$work.log"
if [ "$status" -ne 0 ]; then
    echo "fuzz-headers: the fuzzer found a failure (exit $status); its input is in Tests/Fuzz/crashes/" >&2
    exit 1
fi
echo "fuzz-headers: no failure in ${seconds}s"
