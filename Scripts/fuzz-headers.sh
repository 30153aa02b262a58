#!/usr/bin/env bash
# Fuzzes the header helpers (Sources/FuzzHeaders): LiveListHTTP's HeaderParsing and media types (cookies,
# q-values, forms, percent-decoding, bearer credentials) and LiveListServer's list-specific parsers
# (action values, versions, entity tags, PUT conditions). Beyond traps, the harness checks each helper's
# promise (a q-value within 0...1, a form that inverts percent-encoding, ...). Corpus
# Tests/Fuzz/corpus/header-helpers, dictionary Tests/Fuzz/headers.dict.
#
#   Scripts/fuzz-headers.sh [SECONDS]     (default 60; Scripts/test runs a short smoke; see Scripts/fuzz.sh)
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
exec "$(dirname "$0")/fuzz.sh" headers "$@"
