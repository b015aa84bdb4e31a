#!/bin/sh
# Installs bubblewrap (Debian's package bubblewrap, bwrap 0.8), the sandbox
# every harness job runs in (device/box): the box tests and the harness
# tests need it, and a worker that runs harness jobs refuses to start
# without it unless isolation.walls is warn.
set -eu
if command -v bwrap >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-bubblewrap: bwrap is missing and there is no apt-get; install bubblewrap by hand" >&2
	exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q bubblewrap
bwrap --version
