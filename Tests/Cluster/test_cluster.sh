#!/usr/bin/env bash
# Several livelist nodes on one PostgreSQL, end to end: starts a PostgreSQL of its own that accepts TLS
# connections only (Scripts/with-postgres.sh with LIVELIST_TEST_PG_TLS=1, on Debian's postgresql,
# which Scripts/setup installs; the nodes connect with sslmode=verify-full), then runs
# Tests/Cluster/cluster_test.py against the debug build (`swift build` first; LIVELIST_BINARY overrides),
# and Tests/Cluster/pgbouncer_test.py: two nodes through PgBouncer in session mode under writes
# (Debian's pgbouncer, from Scripts/setup too).
# It builds Examples/Board first (an app with users, on three nodes; LIVELIST_BOARD_BINARY overrides) and
# Examples/Desk (live queries over a table of its own, on two nodes: Tests/Cluster/live_queries_test.py;
# LIVELIST_DESK_BINARY overrides), which Scripts/check-examples.sh has built already when Scripts/test
# runs it.
#
#   Tests/Cluster/test_cluster.sh [TEST-NAME-PART...]
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${LIVELIST_BOARD_BINARY:-}" ]; then
    swift build --package-path Examples/Board --product board
fi
if [ -z "${LIVELIST_DESK_BINARY:-}" ]; then
    swift build --package-path Examples/Desk --product desk
fi
LIVELIST_TEST_PG_TLS=${LIVELIST_TEST_PG_TLS:-1} exec Scripts/with-postgres.sh bash -c '
    status=0
    python3 Tests/Cluster/cluster_test.py "$@" || status=$?
    python3 Tests/Cluster/live_queries_test.py "$@" || status=$?
    python3 Tests/Cluster/pgbouncer_test.py "$@" || status=$?
    exit $status' test_cluster "$@"
