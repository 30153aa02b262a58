#!/usr/bin/env bash
# Runs one libFuzzer harness with AddressSanitizer (and LeakSanitizer) for a bounded time, from its
# committed corpus and a dictionary. A failure leaves its input in Tests/Fuzz/crashes/ (commit it as a
# regression case) and fails the script. Scripts/fuzz-parser.sh and Scripts/fuzz-headers.sh call it.
#
#   Scripts/fuzz.sh parser|headers [SECONDS]     (default 60; Scripts/test runs a short smoke of each)
#   SWIFT=/path/to/wrapper Scripts/fuzz.sh …     (build through a wrapper, e.g. one holding a build lock)
#
# Prints libFuzzer's counts (inputs executed, peak RSS in MB) and any failure's summary.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."
case "${1:-}" in
parser)
    name=fuzz-parser product=FuzzRequestParser what="the request parser"
    corpus=Tests/Fuzz/corpus/request-parser dict=Tests/Fuzz/http.dict extra=()
    ;;
headers)
    name=fuzz-headers product=FuzzHeaders what="the header helpers"
    corpus=Tests/Fuzz/corpus/header-helpers dict=Tests/Fuzz/headers.dict extra=(-max_len=4096)
    ;;
*)
    echo "usage: Scripts/fuzz.sh parser|headers [SECONDS]" >&2
    exit 2
    ;;
esac
seconds="${2:-60}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== building $product with -sanitize=fuzzer,address (scratch .build-fuzz)"
"${SWIFT:-swift}" build -c release --product "$product" --scratch-path .build-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING 2>&1 | grep -Ev "Cannot export local symbol|^\[" || true
binary=.build-fuzz/release/$product
[ -x "$binary" ] || { echo "$name: the build failed" >&2; exit 1; }

# The committed corpus seeds a scratch copy, so that a run adds nothing to the repository by itself.
cp "$corpus"/* "$work"/
mkdir -p Tests/Fuzz/crashes
echo "== fuzzing $what for ${seconds}s"
status=0
SWIFT_BACKTRACE=enable=no "$binary" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 "${extra[@]}" \
    -dict="$dict" -artifact_prefix=Tests/Fuzz/crashes/ -print_final_stats=1 "$work" \
    > "$work.log" 2>&1 || status=$?
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY|ERROR|Fatal error" "$work.log" || true
rm -f "$work.log"
if [ "$status" -ne 0 ]; then
    echo "$name: the fuzzer found a failure (exit $status); its input is in Tests/Fuzz/crashes/" >&2
    exit 1
fi
echo "$name: no failure in ${seconds}s"
