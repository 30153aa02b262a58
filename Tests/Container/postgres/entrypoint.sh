#!/bin/sh
# Makes the first cluster in $PGDATA from POSTGRES_USER, POSTGRES_PASSWORD (or POSTGRES_PASSWORD_FILE)
# and POSTGRES_DB when the volume is empty, then runs the scripts of /docker-entrypoint-initdb.d/*.sh
# against it, started with the command's own settings and the local socket only (as the official
# image's entrypoint does), then runs the command as `postgres`.
set -eu
if [ "${1:-}" = postgres ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown -R postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    if [ ! -s "$PGDATA/PG_VERSION" ]; then
        if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
            POSTGRES_PASSWORD=$(cat "$POSTGRES_PASSWORD_FILE")
        fi
        : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE must be set}"
        user=${POSTGRES_USER:-postgres}
        database=${POSTGRES_DB:-$user}
        password_file=$(mktemp)
        printf '%s' "$POSTGRES_PASSWORD" > "$password_file"
        chown postgres "$password_file"
        setpriv --reuid=postgres --regid=postgres --init-groups \
            initdb -D "$PGDATA" -U "$user" --pwfile="$password_file" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
        rm -f "$password_file"
        echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
        echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
        shift
        setpriv --reuid=postgres --regid=postgres --init-groups pg_ctl -D "$PGDATA" -o "$* -c listen_addresses=''" -w start >/dev/null
        if [ "$database" != postgres ]; then
            setpriv --reuid=postgres --regid=postgres --init-groups \
                psql -v ON_ERROR_STOP=1 -U "$user" -d postgres -qc "CREATE DATABASE \"$database\""
        fi
        for script in /docker-entrypoint-initdb.d/*.sh; do
            [ -e "$script" ] || continue
            echo "postgres: running $script"
            POSTGRES_USER=$user POSTGRES_DB=$database setpriv --reuid=postgres --regid=postgres --init-groups sh "$script"
        done
        setpriv --reuid=postgres --regid=postgres --init-groups pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
        set -- postgres "$@"
        echo "postgres: made the cluster in $PGDATA (user $user, database $database)"
    fi
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
fi
exec "$@"
