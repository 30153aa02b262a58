#!/bin/sh
# Run once, when docker-compose.yml's database is first made (from /docker-entrypoint-initdb.d): the
# migration role livelist_migrate, which `livelist migrate` uses to make LiveList's tables (it owns
# them), and the runtime role livelist, which the nodes use and which `livelist migrate --grant-to`
# gives LiveList's rows only. Their passwords come from the mounted secrets.
set -eu
secrets=${LIVELIST_SECRETS_DIR:-/run/secrets/livelist}
migrate=$(cat "$secrets/db-migrate-password")
runtime=$(cat "$secrets/db-password")
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -q <<SQL
CREATE ROLE livelist_migrate LOGIN PASSWORD '$migrate';
CREATE ROLE livelist LOGIN PASSWORD '$runtime';
GRANT CREATE ON SCHEMA public TO livelist_migrate;
SQL
