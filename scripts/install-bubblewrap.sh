#!/bin/sh
# Installs bubblewrap (Debian's package bubblewrap, bwrap 0.8), the sandbox
# every harness job runs in (device/box): the box tests and the harness
# tests need it, and a worker that runs harness jobs refuses to start
# without it unless isolation.walls is warn. The box uses --disable-userns,
# new in bubblewrap 0.8.0: an older bwrap is refused here, not later.
set -eu
new_enough() {
	v=$(bwrap --version 2>/dev/null | awk '{print $2}')
	[ -n "$v" ] || return 1
	major=${v%%.*}; rest=${v#*.}; minor=${rest%%.*}
	[ "$major" -gt 0 ] || [ "$minor" -ge 8 ]
}
if command -v bwrap >/dev/null 2>&1 && new_enough; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-bubblewrap: bubblewrap 0.8 or newer is missing and there is no apt-get; install it by hand" >&2
	exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q bubblewrap
if ! new_enough; then
	echo "install-bubblewrap: $(bwrap --version 2>&1) is older than 0.8.0 (the box needs --disable-userns)" >&2
	exit 1
fi
bwrap --version
