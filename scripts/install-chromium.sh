#!/bin/sh
# Installs the Chromium the dashboard's browser test drives (chromedp, in
# internal/ui): Debian's package, when /usr/bin/chromium is missing. The
# test never downloads a browser of its own.
set -eu
if [ -x /usr/bin/chromium ]; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-chromium: no /usr/bin/chromium and no apt-get; install Chromium by hand (the browser test needs it)" >&2
	exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q chromium
/usr/bin/chromium --version
