#!/usr/bin/env bash
# Builds FerretDB (a MongoDB-wire-compatible server) into .tools/bin/ferretdb from the Go module proxy.
# `go install ...@v1.24.2` cannot be used as is: the proxy refuses the version list that its deprecation
# check reads, and a build of the bare module panics without build/version/version.txt (normally written
# by FerretDB's own `task gen-version`). So: download the module, copy it, write version.txt, build.
#   scripts/ensure-ferretdb.sh           # the project's build (.tools/bin/ferretdb), with the patches below
#   scripts/ensure-ferretdb.sh --stock   # FerretDB as released (.tools/bin/ferretdb-stock), for the test that the
#                                        # service tells the two apart (test/infra/ferretdb-build.test.ts)
set -euo pipefail
FERRETDB_VERSION="${FERRETDB_VERSION:-v1.24.2}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stock=""
if [ "${1:-}" = "--stock" ]; then stock=1; fi
if [ -n "$stock" ]; then
  bin="$root/.tools/bin/ferretdb-stock"
  patches=()
else
  bin="$root/.tools/bin/ferretdb"
  patches=("$root/scripts/ferretdb-id-lookups.patch" "$root/scripts/ferretdb-release-tracking.patch"
    "$root/scripts/ferretdb-build-info.patch")
fi
# Rebuilt when the version, this script or a patch changes.
marker="$bin.$FERRETDB_VERSION-$(cat "${BASH_SOURCE[0]}" "${patches[@]}" | sha256sum | cut -c1-12)"
if [ -x "$bin" ] && [ -f "$marker" ]; then exit 0; fi
command -v go >/dev/null || { echo "[setup] the Go toolchain is needed to build FerretDB" >&2; exit 1; }
mkdir -p "$root/.tools/bin"
# One build at a time per binary (two test runs starting together would share the source directory); the one
# that waited finds the other's build done.
exec 9>"$bin.lock"
flock 9
if [ -x "$bin" ] && [ -f "$marker" ]; then exit 0; fi
echo "[setup] building FerretDB $FERRETDB_VERSION${stock:+ (stock)} (about 2 minutes the first time)" >&2
dir="$(go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
src="$root/.tools/$(basename "$bin")-src"
rm -rf "$src" && mkdir -p "$src"
cp -r "$dir"/. "$src" && chmod -R u+w "$src"
echo "$FERRETDB_VERSION" > "$src/build/version/version.txt"
if [ -z "$stock" ]; then
  # The SQLite backend creates its unique _id index on the expression _ferretdb_sjson->"_id" but queries
  # _ferretdb_sjson->'$._id' (same value, different text), so SQLite never uses the index and every lookup or
  # update by _id scans the table. Querying with the index's own expression makes them index lookups.
  meta="$src/internal/backends/sqlite/metadata/metadata.go"
  sed -i "s|IDColumn = DefaultColumn + \"->'\$._id'\"|IDColumn = DefaultColumn + \"->\\\\\"_id\\\\\"\"|" "$meta"
  grep -q 'IDColumn = DefaultColumn + "->\\"_id\\""' "$meta" || { echo "[setup] could not patch FerretDB's _id lookup" >&2; exit 1; }
  # On SQLite its only pushdown of a filter to SQL is `_id` equal to a string or ObjectID, and on PostgreSQL `$in`
  # is never pushed down: `{_id: {$in: [...]}}` reads the whole collection (a grouped delete by `_id`, say). On
  # PostgreSQL `_id` equal to a value is pushed down as a JSON containment, which the `_id` index cannot serve:
  # every find by `_id` reads the whole table too. The patch makes both index lookups on both backends; the
  # filter is still applied to the rows found, as for every pushdown. It also makes an update read a statement's
  # documents and close that read before writing them: stock FerretDB kept every statement's read (a PostgreSQL
  # connection) open until the command ended, so one command of as many updates as its pool has connections hung.
  # (Not looking for a repository above it: inside one, git apply would take the paths as that one's.)
  # The second patch: a release build tracks no resource lifetimes. Stock FerretDB records every iterator, row set
  # and transaction in a pprof profile (a stack walk each) and sets a finalizer on it that crashes the server if it
  # was never closed: 8% of FerretDB's CPU in the `scheduled` benchmark, profiled. Debug builds still track them.
  # The third: `buildInfo` answers `accountMigrationBuild: {revision, handler, postgresqlPoolMaxConns}`, so the
  # service recognises this build at start (a stock FerretDB v1 on PostgreSQL is refused: its updates hang) and
  # checks its own pool against the FerretDB's (src/infra/database-server.ts). Its revision is raised when a
  # patch the service relies on changes.
  (cd "$src" && for patch in "${patches[@]}"; do GIT_CEILING_DIRECTORIES="$(dirname "$src")" git apply "$patch"; done)
  for check in 'backends/sqlite/collection.go:func idsIn' 'backends/postgresql/query.go:func idsIn' \
    'backends/postgresql/query.go:func idEqual' 'handler/msg_update.go:read := iterator.Values' \
    'util/resource/resource.go:if !debugbuild.Enabled' 'handler/msg_buildinfo.go:"accountMigrationBuild"'; do
    grep -q "${check#*:}" "$src/internal/${check%%:*}" || { echo "[setup] could not patch FerretDB ($check)" >&2; exit 1; }
  done
fi
# Built beside the binary and renamed over it: a FerretDB running from the old one keeps running.
(cd "$src" && GOFLAGS=-buildvcs=false go build -o "$bin.new" ./cmd/ferretdb)
mv -f "$bin.new" "$bin"
rm -rf "$src"
rm -f "$bin".v* && touch "$marker"
"$bin" --version >&2
