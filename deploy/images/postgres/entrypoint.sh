#!/bin/sh
# First start on an empty data directory: initdb (UTF8), the password, the database; then the
# server in the foreground, listening on every address of the container.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
    pwfile=$(mktemp)
    printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb -D "$PGDATA" -U postgres --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust \
        --auth-host=scram-sha-256 --pwfile="$pwfile" > /dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ -n "${POSTGRES_DB:-}" ] && [ "$POSTGRES_DB" != postgres ]; then
        pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start > /dev/null
        createdb -U postgres "$POSTGRES_DB"
        pg_ctl -D "$PGDATA" -w -m fast stop > /dev/null
    fi
fi
if [ "$1" = postgres ]; then
    shift
    exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
