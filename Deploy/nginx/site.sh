#!/bin/sh
# Writes /etc/nginx/conf.d/livelist.conf from the site docs/nginx.conf (mounted at
# /etc/nginx/livelist.conf.in), then runs the command (nginx in the foreground). Only the lines that
# docs/nginx.conf marks "# test: NAME" change, as in Tests/Proxy/test_proxy.sh: "upstream" becomes one
# `server` line for each HOST:PORT of LIVELIST_UPSTREAMS, "access_log" goes to the container's stdout,
# and with LIVELIST_TLS_CERT and LIVELIST_TLS_KEY (PEM files) "listen" becomes HTTPS on 443 with them.
set -eu
site=${LIVELIST_NGINX_SITE:-/etc/nginx/livelist.conf.in}
[ -r "$site" ] || { echo "livelist-nginx: mount docs/nginx.conf at $site" >&2; exit 1; }
[ -n "${LIVELIST_UPSTREAMS:-}" ] || { echo "livelist-nginx: LIVELIST_UPSTREAMS is empty" >&2; exit 1; }
for marker in upstream access_log; do
    grep -q "# test: $marker\$" "$site" || { echo "livelist-nginx: $site has no line marked '# test: $marker'" >&2; exit 1; }
done
awk -v upstreams="$LIVELIST_UPSTREAMS" -v tls_cert="${LIVELIST_TLS_CERT:-}" -v tls_key="${LIVELIST_TLS_KEY:-}" '
    / # test: upstream$/ {
        indent = $0; sub(/[^ ].*/, "", indent)
        count = split(upstreams, servers, /[ ,]+/)
        for (i = 1; i <= count; i++) if (servers[i] != "") print indent "server " servers[i] ";"
        next
    }
    / # test: listen$/ && tls_cert != "" {
        indent = $0; sub(/[^ ].*/, "", indent)
        print indent "listen 443 ssl;"
        print indent "ssl_certificate " tls_cert ";"
        print indent "ssl_certificate_key " tls_key ";"
        next
    }
    / # test: access_log$/ {
        indent = $0; sub(/[^ ].*/, "", indent)
        print indent "access_log /dev/stdout livelist;"
        next
    }
    { print }
' "$site" > /etc/nginx/conf.d/livelist.conf
exec "$@"
