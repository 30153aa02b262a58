#!/usr/bin/env bash
# Fuzzes LiveListHTTP's request parser (Sources/FuzzRequestParser): every input is parsed whole and in
# two pieces, which must agree. Corpus Tests/Fuzz/corpus/request-parser, dictionary Tests/Fuzz/http.dict.
#
#   Scripts/fuzz-parser.sh [SECONDS]     (default 60; Scripts/test runs a short smoke; see Scripts/fuzz.sh)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
exec "$(dirname "$0")/fuzz.sh" parser "$@"
