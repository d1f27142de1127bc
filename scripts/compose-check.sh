#!/usr/bin/env bash
# Checks docker compose files as `docker compose config` does (schema, anchors and merges, references between
# services, variable interpolation) and prints the resolved file, without a container engine:
#   scripts/compose-check.sh [file …]        # default: docker-compose.yml docker-compose.scaled.yml
# With the Docker CLI's compose plugin, that runs. Otherwise the same loader, compose-go (the library
# `docker compose` is built on), is built from the Go module proxy into .tools/bin/compose-check (once).
set -euo pipefail
cd "$(dirname "$0")/.."
files=("$@")
[ "${#files[@]}" -gt 0 ] || files=(docker-compose.yml docker-compose.scaled.yml)
COMPOSE_GO_VERSION="v2.16.2"
bin="$PWD/.tools/bin/compose-check"

if docker compose version >/dev/null 2>&1; then
  for f in "${files[@]}"; do docker compose -f "$f" config -q && echo "$f: valid (docker compose config)"; done
  exit 0
fi
if [ ! -x "$bin" ] || [ ! -f "$bin.$COMPOSE_GO_VERSION" ]; then
  command -v go >/dev/null || { echo "[compose-check] needs the docker compose plugin or a Go toolchain" >&2; exit 1; }
  echo "[compose-check] building compose-go $COMPOSE_GO_VERSION's loader into .tools/bin" >&2
  src="$(mktemp -d)"
  trap 'rm -rf "$src"' EXIT
  cat >"$src/main.go" <<'EOF'
// Loads compose files the way `docker compose config` does and prints the resolved project.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	opts, err := cli.NewProjectOptions(os.Args[1:], cli.WithOsEnv, cli.WithWorkingDirectory("."),
		cli.WithConsistency(true), cli.WithResolvedPaths(true))
	check(err)
	project, err := opts.LoadProject(context.Background())
	check(err)
	out, err := project.MarshalYAML()
	check(err)
	_, err = os.Stdout.Write(out)
	check(err)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
EOF
  (
    cd "$src"
    go mod init compose-check >/dev/null 2>&1
    go get "github.com/compose-spec/compose-go/v2@$COMPOSE_GO_VERSION" >/dev/null 2>&1
    go mod tidy >/dev/null 2>&1
    mkdir -p "$(dirname "$bin")"
    GOFLAGS=-buildvcs=false go build -o "$bin" .
  )
  rm -f "$bin".v* && touch "$bin.$COMPOSE_GO_VERSION"
fi
for f in "${files[@]}"; do
  "$bin" "$f" >/dev/null && echo "$f: valid (compose-go $COMPOSE_GO_VERSION, as docker compose config)"
done
