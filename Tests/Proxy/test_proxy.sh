#!/usr/bin/env bash
# LiveList behind nginx, as docs/nginx.conf configures it: checks that nginx is there (Scripts/setup
# installs Debian's package), then runs proxy_test.py, which starts the built debug binary (.build/debug/livelist, or
# LIVELIST_BINARY) and nginx on free loopback ports and checks pages, JSON, event streams (unbuffered,
# heartbeats, resume with Last-Event-ID), the forwarded headers and the write rules through the proxy.
# Stops everything it started; bounded in time. Usage: Tests/Proxy/test_proxy.sh
set -euo pipefail
cd "$(dirname "$0")"

if [ -z "${LIVELIST_NGINX:-}" ] && ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    echo "Tests/Proxy/test_proxy.sh: nginx is missing: run Scripts/setup" >&2
    exit 1
fi
export LIVELIST_NGINX="${LIVELIST_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
echo "== proxy tests ($("$LIVELIST_NGINX" -v 2>&1))"
export PYTHONDONTWRITEBYTECODE=1
python3 proxy_test.py
