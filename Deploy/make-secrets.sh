#!/usr/bin/env bash
# Makes the files that docker-compose.yml reads its secrets from, in DIR (default ./secrets beside it),
# each only when it is missing, with openssl:
#
#   db-ca.crt, db-ca.key            a CA for the database's TLS certificate (the nodes' sslrootcert)
#   db-server.crt, db-server.key    the database's certificate, for the host name "postgres"
#   nginx.crt, nginx.key            a self-signed certificate for https://localhost (local use only:
#                                   browsers warn; give nginx a real one elsewhere)
#   db-admin-password               the database superuser's (the postgres image's POSTGRES_USER)
#   db-migrate-password             the migration role's, livelist_migrate (owns LiveList's tables)
#   db-password                     the runtime role's, livelist (the nodes: rows only)
#   write-token                     Authorization: Bearer for writes through nginx
#   session-secrets                 the nodes' session secret (docs/DEPLOYMENT.md: rotating it)
#
#   Deploy/make-secrets.sh [DIR]
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
dir=${1:-$(dirname "$0")/../secrets}
mkdir -p "$dir"
cd "$dir"
quiet() { "$@" >/dev/null 2>&1 || { echo "make-secrets: $* failed" >&2; exit 1; }; }
if [ ! -f db-ca.crt ]; then
    quiet openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj "/CN=LiveList compose database CA" -keyout db-ca.key -out db-ca.crt
fi
if [ ! -f db-server.crt ]; then
    quiet openssl req -newkey rsa:2048 -nodes -subj "/CN=postgres" -keyout db-server.key -out db-server.csr
    printf 'subjectAltName=DNS:postgres\n' > db-server.ext
    quiet openssl x509 -req -in db-server.csr -CA db-ca.crt -CAkey db-ca.key -CAcreateserial -days 825 -extfile db-server.ext -out db-server.crt
    rm -f db-server.csr db-server.ext db-ca.srl
fi
if [ ! -f nginx.crt ]; then
    quiet openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj "/CN=localhost" \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout nginx.key -out nginx.crt
fi
for secret in db-admin-password db-migrate-password db-password write-token; do
    [ -f "$secret" ] || openssl rand -hex 24 > "$secret"
done
[ -f session-secrets ] || openssl rand -hex 32 > session-secrets
# The nodes (uid 10001) read the passwords, the token, the session secret and the CA certificate; the
# private keys stay the owner's, and the containers that need them copy them as root.
chmod 644 db-ca.crt db-server.crt nginx.crt db-admin-password db-migrate-password db-password write-token session-secrets
chmod 600 db-ca.key db-server.key nginx.key
echo "make-secrets: the secrets of docker-compose.yml are in $(pwd)"
