#!/usr/bin/env bash
# Installs DuckDB's Node API (npm's @duckdb/node-api, pinned; it ships a
# native build, so it works without any other download) into
# ./.tools/duckdb at the repository root, for `benchfleet bench query
# --duckdb`, the reference figure beside benchfleet's own query of the same
# Parquet files. Idempotent.
#
# Usage: scripts/install-duckdb.sh            (from anywhere in the repo)
# Env:   DUCKDB_NODE_VERSION (default 1.5.6-r.1), BENCHFLEET_DUCKDB_DIR (default ./.tools/duckdb)
set -euo pipefail

version="${DUCKDB_NODE_VERSION:-1.5.6-r.1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${BENCHFLEET_DUCKDB_DIR:-$root/.tools/duckdb}"
pkg="$dir/node_modules/@duckdb/node-api/package.json"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	if ! command -v apt-get >/dev/null; then
		echo "install-duckdb: node and npm are needed and there is no apt-get; install them by hand" >&2
		exit 1
	fi
	sudo=""
	[[ "$(id -u)" == 0 ]] || sudo=sudo
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -q
	$sudo apt-get install -y -q nodejs npm
fi
if [[ -f "$pkg" ]] && grep -q "\"version\": \"$version\"" "$pkg"; then
	echo "@duckdb/node-api $version already installed in $dir"
	exit 0
fi
mkdir -p "$dir"
echo "installing @duckdb/node-api $version into $dir"
npm install --silent --no-audit --no-fund --prefix "$dir" "@duckdb/node-api@$version"
node -e "require('$dir/node_modules/@duckdb/node-api')" && echo "@duckdb/node-api $version installed in $dir"
