#!/bin/sh
# The entrypoint of docker-compose.yml's database: PostgreSQL that accepts TLS connections only. Copies
# the certificate and key from the mounted secrets (PostgreSQL wants its key owned by it, mode 0600),
# writes an hba file with `hostssl` lines only (and the local socket, which the image's first-start
# scripts use), then runs the image's own entrypoint with TLS on. Works with the official
# postgres:15-bookworm image and with Tests/Container/test_container.sh's stand-in for it.
set -eu
secrets=${LIVELIST_SECRETS_DIR:-/run/secrets/livelist}
tls=/var/lib/postgresql/tls
mkdir -p "$tls"
cp "$secrets/db-server.crt" "$tls/server.crt"
cp "$secrets/db-server.key" "$tls/server.key"
printf 'local all all trust\nhostssl all all all scram-sha-256\n' > "$tls/pg_hba.conf"
chown -R postgres:postgres "$tls"
chmod 700 "$tls"
chmod 600 "$tls/server.key"
exec docker-entrypoint.sh postgres -c ssl=on -c "ssl_cert_file=$tls/server.crt" -c "ssl_key_file=$tls/server.key" \
    -c "hba_file=$tls/pg_hba.conf" -c listen_addresses='*'
