#!/bin/sh
# The local PostgreSQL stand-in's start (Containerfile.datastores): on an empty data directory,
# initialise it for POSTGRES_USER with POSTGRES_PASSWORD (password logins over the network, as the
# public image allows) and create POSTGRES_DB; then run the server on every interface.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -n "${POSTGRES_PASSWORD:-}" ] || { echo "POSTGRES_PASSWORD is not set" >&2; exit 1; }
  password_file=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" > "$password_file"
  initdb --username="$POSTGRES_USER" --pwfile="$password_file" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$password_file"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl --wait --options="-c listen_addresses=''" start >/dev/null
  [ "$POSTGRES_DB" = postgres ] || createdb --username="$POSTGRES_USER" "$POSTGRES_DB"
  pg_ctl --wait --mode=fast stop >/dev/null
fi
exec postgres -c listen_addresses='*'
