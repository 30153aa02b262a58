#!/usr/bin/env bash
# Builds every example package (Examples/NAME, each depending on this repository by relative path) and
# runs it as an app author would, from a fresh empty directory outside the checkout, on a free loopback
# port: `/` and its list page answer 200 with the list root (the built-in Public/ and Templates/, so
# nothing is read from the working directory), and the list's event stream delivers the change that an
# action of the page's form makes. First it checks that docs/GUIDE.md shows Examples/Todo's main.swift as
# it is, with its line count (at most thirty). Scripts/test runs it after the end-to-end tests. The
# checks themselves are livelist_tools.checks.examples (Tools/python).
#
#   Scripts/check-examples.sh             builds under the machine-wide build lock (never two builds at once)
#   Scripts/check-examples.sh --no-lock   when the caller already holds that lock (Scripts/test under .ci/run)
#
# Each example has its own .build: the first build of one takes a few minutes.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."

lock=(flock /tmp/livelist-swift.lock)
if [ "${1:-}" = "--no-lock" ]; then lock=(); fi

# The list each example serves, and the form an action of its page posts (without the CSRF token).
declare -A action=(
    [todo]="action=add%3A&title=Written+by+check-examples"
    [chat]="action=send%3A&text=Written+by+check-examples"
    [board]="users"
    [desk]="users"
)

# docs/GUIDE.md shows Examples/Todo's main.swift whole, and says how many lines it has (at most thirty).
python3 -m livelist_tools.checks.examples guide

for dir in Examples/*/; do
    dir=${dir%/}
    name=$(basename "$dir" | tr '[:upper:]' '[:lower:]')
    if [ -z "${action[$name]:-}" ]; then
        echo "check-examples: $dir has no entry in this script's table of actions" >&2
        exit 1
    fi
    echo "-- $dir: build"
    "${lock[@]}" swift build --package-path "$dir" --product "$name"
    binary="$(swift build --package-path "$dir" --show-bin-path)/$name"
    # From a fresh empty directory outside the checkout, with the example's own environment only.
    if [ "$name" = board ]; then
        # Its lists need a signed-in user: a check of its own (sign-in, rules, sign-out).
        python3 -m livelist_tools.checks.examples board "$dir" "$binary"
    elif [ "$name" = desk ]; then
        # Its own tests (LiveListTesting, in process), then the binary from outside.
        "${lock[@]}" swift test --package-path "$dir"
        python3 -m livelist_tools.checks.examples desk "$dir" "$binary"
    else
        python3 -m livelist_tools.checks.examples run "$dir" "$binary" "${action[$name]}"
    fi
done
