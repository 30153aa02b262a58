#!/usr/bin/env bash
# Runs COMMAND with a PostgreSQL of its own, for the tests and benchmarks of several nodes:
#   - needs Debian's `postgresql` package (and openssl for the TLS modes): Scripts/setup installs them;
#   - initdb into a temporary folder (trust authentication, loopback only), started on a free port with
#     its socket in that folder; PostgreSQL refuses to run as root, so as root it runs as `postgres`;
#   - exports LIVELIST_TEST_DATABASE_URL (its `postgres` database, superuser `postgres`), and
#     LIVELIST_TEST_PGCTL: a script that takes `stop` or `start` (for database-restart tests);
#   - stops it and removes the folder when COMMAND ends, whatever happens.
# It never touches a cluster that the package may have started on 5432.
#
# With LIVELIST_TEST_PG_TLS=1 the database accepts TLS connections only (`hostssl` lines alone), with a
# certificate for `localhost` signed by a CA made here with OpenSSL: LIVELIST_TEST_DATABASE_URL is then
# postgres://postgres@localhost:PORT/postgres?sslmode=verify-full&sslrootcert=…, and LIVELIST_TEST_TLS
# names the folder with ca.crt (the root), other-ca.crt (a root that signed nothing here) and
# server.crt. With LIVELIST_TEST_PG_TLS=both it accepts clear-text connections too, and exports their URL
# as LIVELIST_TEST_DATABASE_URL_CLEAR (for benchmarks of TLS against none in one run).
#
# With LIVELIST_TEST_PG_SECOND=1 it starts a second PostgreSQL too (clear text, trust, its own free port
# and folder), for the tests of URLs with several hosts and of failover: LIVELIST_TEST_DATABASE_URL_SECOND
# and LIVELIST_TEST_PGCTL_SECOND are the first's two for it.
#
#   Scripts/with-postgres.sh COMMAND [ARGS...]
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac

if [ $# -eq 0 ]; then
    echo "usage: Scripts/with-postgres.sh COMMAND [ARGS...]" >&2
    exit 2
fi

pg_bin() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

bin=$(pg_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "with-postgres: PostgreSQL is not installed: run Scripts/setup (Debian's postgresql)" >&2
    exit 1
fi

as_owner=()
if [ "$(id -u)" -eq 0 ]; then
    as_owner=(runuser -u postgres --)
fi

folder=$(mktemp -d /tmp/livelist-pg.XXXXXX)
chmod 755 "$folder"
[ ${#as_owner[@]} -gt 0 ] && chown postgres "$folder"
port=$(python3 -m livelist_tools free-port)

cat > "$folder/pgctl.sh" <<SCRIPT
#!/usr/bin/env bash
# stop | start the test database (fast shutdown: connections are cut, as in a crash or a restart).
set -euo pipefail
case "\${1:-}" in
    stop) ${as_owner[*]} "$bin/pg_ctl" -D "$folder/data" -m fast -w stop >/dev/null ;;
    start) ${as_owner[*]} "$bin/pg_ctl" -D "$folder/data" -l "$folder/log" -w \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$folder -c max_connections=300" start >/dev/null ;;
    *) echo "usage: \$0 stop|start" >&2; exit 2 ;;
esac
SCRIPT
chmod 755 "$folder/pgctl.sh"

cleanup() {
    "$folder/pgctl.sh" stop 2>/dev/null || true
    [ -x "$folder/second/pgctl.sh" ] && { "$folder/second/pgctl.sh" stop 2>/dev/null || true; }
    rm -rf "$folder"
}
trap cleanup EXIT

"${as_owner[@]}" "$bin/initdb" -A trust -U postgres -D "$folder/data" >/dev/null
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
if [ "${LIVELIST_TEST_PG_TLS:-}" = 1 ] || [ "${LIVELIST_TEST_PG_TLS:-}" = both ]; then
    command -v openssl >/dev/null 2>&1 || { echo "with-postgres: the TLS mode needs openssl: run Scripts/setup" >&2; exit 1; }
    tls="$folder/tls"
    mkdir "$tls"
    quiet() { "$@" >/dev/null 2>&1 || { echo "with-postgres: $* failed" >&2; exit 1; }; }
    for ca in ca other-ca; do
        quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=LiveList test $ca" \
            -keyout "$tls/$ca.key" -out "$tls/$ca.crt"
    done
    quiet openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$tls/server.key" -out "$tls/server.csr"
    printf 'subjectAltName=DNS:localhost\n' > "$tls/san.ext"
    quiet openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial -days 2 \
        -extfile "$tls/san.ext" -out "$tls/server.crt"
    chmod 600 "$tls/server.key"
    [ ${#as_owner[@]} -gt 0 ] && chown postgres "$tls/server.key" "$tls/server.crt"
    chmod 755 "$tls"
    # TLS only: no `host` line, so a clear-text connection over TCP is refused.
    printf 'local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n' > "$folder/data/pg_hba.conf"
    if [ "${LIVELIST_TEST_PG_TLS}" = both ]; then
        printf 'host all all 127.0.0.1/32 trust\n' >> "$folder/data/pg_hba.conf"
        export LIVELIST_TEST_DATABASE_URL_CLEAR="$url"
    fi
    printf "ssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\n" "$tls/server.crt" "$tls/server.key" >> "$folder/data/postgresql.conf"
    [ ${#as_owner[@]} -gt 0 ] && chown postgres "$folder/data/pg_hba.conf"
    url="postgres://postgres@localhost:$port/postgres?sslmode=verify-full&sslrootcert=$tls/ca.crt"
    export LIVELIST_TEST_TLS="$tls"
fi
"$folder/pgctl.sh" start

export LIVELIST_TEST_DATABASE_URL="$url"
export LIVELIST_TEST_PGCTL="$folder/pgctl.sh"
if [ "${LIVELIST_TEST_PG_SECOND:-}" = 1 ]; then
    second="$folder/second"
    mkdir "$second"
    chmod 755 "$second"
    [ ${#as_owner[@]} -gt 0 ] && chown postgres "$second"
    second_port=$(python3 -m livelist_tools free-port)
    sed -e "s|$folder/data|$second/data|g" -e "s|$folder/log|$second/log|g" -e "s|port=$port|port=$second_port|" \
        -e "s|unix_socket_directories=$folder |unix_socket_directories=$second |" "$folder/pgctl.sh" > "$second/pgctl.sh"
    chmod 755 "$second/pgctl.sh"
    "${as_owner[@]}" "$bin/initdb" -A trust -U postgres -D "$second/data" >/dev/null
    "$second/pgctl.sh" start
    export LIVELIST_TEST_DATABASE_URL_SECOND="postgres://postgres@127.0.0.1:$second_port/postgres?sslmode=disable"
    export LIVELIST_TEST_PGCTL_SECOND="$second/pgctl.sh"
    echo "== a second PostgreSQL on 127.0.0.1:$second_port (in $second)" >&2
fi
export LIVELIST_TEST_PSQL="$bin/psql"
accepts=""
[ -n "${LIVELIST_TEST_TLS:-}" ] && accepts=", TLS only"
[ -n "${LIVELIST_TEST_DATABASE_URL_CLEAR:-}" ] && accepts=", TLS and clear text"
echo "== PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (in $folder)$accepts" >&2
status=0
"$@" || status=$?
exit $status
