#!/usr/bin/env bash
# PostgreSQL for the scaled test leg (FerretDB's PostgreSQL backend): installs Debian's `postgresql` when
# absent, starts its cluster when nothing answers, and makes sure the test URL connects. The URL is
# TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres); when that default is refused for
# its authentication, loopback connections of the `postgres` user are trusted (a line at the top of the
# cluster's pg_hba.conf, then a reload): a fresh Debian install asks for a password the user does not have.
# Idempotent; changes nothing on a machine where the URL already connects.
set -euo pipefail
url="${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
connects() { psql "$url" -qAtc 'select 1' >/dev/null 2>&1; }

if ! command -v psql >/dev/null 2>&1 || ! command -v pg_lsclusters >/dev/null 2>&1; then
  echo "[setup] installing postgresql" >&2
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
fi
if connects; then exit 0; fi

# Not answering: start every cluster that is down (create one when the package made none).
if [ -z "$(pg_lsclusters -h 2>/dev/null)" ]; then
  version="$(ls /usr/lib/postgresql | sort -V | tail -1)"
  echo "[setup] creating PostgreSQL cluster $version/main" >&2
  $SUDO pg_createcluster "$version" main >/dev/null
fi
while read -r version name _port status _rest; do
  if [ "$status" != "online" ]; then
    echo "[setup] starting PostgreSQL $version/$name" >&2
    $SUDO pg_ctlcluster "$version" "$name" start
  fi
done < <(pg_lsclusters -h)
for _ in $(seq 100); do
  if connects || psql "$url" -qAtc 'select 1' 2>&1 | grep -q 'authentication'; then break; fi
  sleep 0.1
done
if connects; then exit 0; fi

if [ -z "${TEST_POSTGRES_URL:-}" ] && psql "$url" -qAtc 'select 1' 2>&1 | grep -q 'authentication'; then
  while read -r version name _rest; do
    hba="/etc/postgresql/$version/$name/pg_hba.conf"
    if [ -f "$hba" ] && ! grep -q '^host all postgres 127.0.0.1/32 trust' "$hba"; then
      echo "[setup] trusting loopback connections of user postgres in $hba" >&2
      $SUDO sed -i '1i host all postgres 127.0.0.1/32 trust\nhost all postgres ::1/128 trust' "$hba"
      $SUDO pg_ctlcluster "$version" "$name" reload
    fi
  done < <(pg_lsclusters -h)
  for _ in $(seq 100); do connects && exit 0; sleep 0.1; done
fi
echo "[setup] PostgreSQL does not accept $url:" >&2
psql "$url" -qAtc 'select 1' >&2 || true
exit 1
