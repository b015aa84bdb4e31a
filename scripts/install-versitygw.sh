#!/usr/bin/env bash
# Installs the pinned VersityGW (the S3-compatible server the S3 tests run
# against) into ./.tools/bin/versitygw at the repository root. Idempotent:
# it does nothing when that binary is already the pinned version (checked
# with `go version -m`, since `go install` does not stamp --version).
#
# Usage: scripts/install-versitygw.sh            (from anywhere in the repo)
# Env:   VERSITYGW_VERSION (default v1.8.0), GOBIN_DIR (default ./.tools/bin)
set -euo pipefail

version="${VERSITYGW_VERSION:-v1.8.0}"
module="github.com/versity/versitygw"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bindir="${GOBIN_DIR:-$root/.tools/bin}"
bin="$bindir/versitygw"

installed_version() {
	# Prints the main module version recorded in the binary, or nothing.
	go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "'"$module"'" { print $3; exit }'
}

if [[ -x "$bin" ]] && [[ "$(installed_version "$bin")" == "$version" ]]; then
	echo "versitygw $version already installed at $bin"
	exit 0
fi

mkdir -p "$bindir"
echo "installing versitygw $version into $bindir (first time takes a few minutes)"
# Build outside the repository's module so its go.mod is neither read nor
# changed; GOFLAGS from the caller could name -mod=vendor and break that.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && GOFLAGS= GOBIN="$tmp/bin" go install "$module/cmd/versitygw@$version")
got="$(installed_version "$tmp/bin/versitygw")"
if [[ "$got" != "$version" ]]; then
	echo "install-versitygw: built binary reports version '$got', want $version" >&2
	exit 1
fi
mv -f "$tmp/bin/versitygw" "$bin"
echo "installed versitygw $version at $bin"
