#!/usr/bin/env bash
# LiveList behind nginx, as docs/nginx.conf configures it: installs nginx (Debian's package) when it is
# missing, then runs proxy_test.py, which starts the built debug binary (.build/debug/livelist, or
# LIVELIST_BINARY) and nginx on free loopback ports and checks pages, JSON, event streams (unbuffered,
# heartbeats, resume with Last-Event-ID), the forwarded headers and the write rules through the proxy.
# Stops everything it started; bounded in time. Usage: Tests/Proxy/test_proxy.sh
set -euo pipefail
cd "$(dirname "$0")"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
        echo "Tests/Proxy/test_proxy.sh: need root to run: $*" >&2; return 1; fi
}

if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    echo "== installing nginx"
    as_root apt-get update -qq
    # The package must not start a system-wide nginx: policy-rc.d answers 101 (action forbidden).
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
        as_root chmod +x "$policy"
        trap 'as_root rm -f "$policy"' EXIT
    fi
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nginx >/dev/null
fi
export LIVELIST_NGINX="${LIVELIST_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
echo "== proxy tests ($("$LIVELIST_NGINX" -v 2>&1))"
export PYTHONDONTWRITEBYTECODE=1
python3 proxy_test.py
