#!/usr/bin/env bash
# Several livelist nodes on one PostgreSQL, end to end: starts a PostgreSQL of its own
# (Scripts/with-postgres.sh, which installs Debian's postgresql when missing), then runs
# Tests/Cluster/cluster_test.py against the debug build (`swift build` first; LIVELIST_BINARY overrides).
# It builds Examples/Board first (an app with users, on three nodes; LIVELIST_BOARD_BINARY overrides),
# which Scripts/check-examples.sh has built already when Scripts/test runs it.
#
#   Tests/Cluster/test_cluster.sh [TEST-NAME-PART...]
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${LIVELIST_BOARD_BINARY:-}" ]; then
    swift build --package-path Examples/Board --product board
fi
exec Scripts/with-postgres.sh python3 Tests/Cluster/cluster_test.py "$@"
