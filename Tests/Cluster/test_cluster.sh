#!/usr/bin/env bash
# Several livelist nodes on one PostgreSQL, end to end: starts a PostgreSQL of its own
# (Scripts/with-postgres.sh, which installs Debian's postgresql when missing), then runs
# Tests/Cluster/cluster_test.py against the debug build (`swift build` first; LIVELIST_BINARY overrides).
#
#   Tests/Cluster/test_cluster.sh [TEST-NAME-PART...]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec Scripts/with-postgres.sh python3 Tests/Cluster/cluster_test.py "$@"
