#!/bin/sh
# Installs what the harness tests run the upstream-shaped test trees with
# (device/harness/harnesstest/trees): Debian's real pytest for the system
# interpreter (python3-pytest) and its venv module (python3-venv, each test
# host's harness environment is a venv made with it), when
# /usr/bin/python3 lacks either; pip, setuptools and wheel, with which the
# shipped CI's build step builds a wheel offline (internal/e2e/auth,
# TestShippedCIRerunReattaches); and git, which the build cache's tests
# (device/build) make repositories and mirrors with. Nothing comes from PyPI.
set -eu
if /usr/bin/python3 -c 'import pytest, venv, ensurepip, setuptools, wheel, pip' >/dev/null 2>&1 && command -v git >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-pytest: /usr/bin/python3 lacks pytest, venv, pip, setuptools or wheel, or git is missing, and there is no apt-get; install python3-pytest, python3-venv, python3-pip, python3-setuptools, python3-wheel and git by hand (the harness and build tests need them)" >&2
	exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q python3-pytest python3-venv python3-pip python3-setuptools python3-wheel git
/usr/bin/python3 -m pytest --version
