#!/bin/sh
# The browser terminal beside WeTTY (npm, pinned by tests/web/bench's
# lockfile) in the same Chromium and the same run: keystroke-to-screen
# latency, output rendered per second, the tail of a command that exits
# right after printing.  A benchmark, not a test:
#   sh tests/web/bench.sh LODGED [--rounds 3] [--keys 400] [--tail-runs 20]
# Installs what it needs (Chromium; a C++ compiler for WeTTY's node-pty,
# built from source), builds the page, starts a private lodged and WeTTY on
# free loopback ports, prints the table (and writes it to
# $LODGE_WEB_BENCH_OUT when set).  WeTTY runs the shell itself: as root,
# with --command and no SSH.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: sh tests/web/bench.sh LODGED [options]" >&2; exit 2; }
lodged=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
[ "$(id -u)" -eq 0 ] || { echo "web bench: WeTTY runs the shell without SSH only as root" >&2; exit 1; }
missing=
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
for p in g++ make python3; do
	command -v $p >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
(cd "$top/contrib/web" && npm ci --no-audit --no-fund --loglevel=error &&
    sh build.sh)
# the tests' kit (tests/web), then the bench's own packages
(cd "$top/tests/web" && npm ci --no-audit --no-fund --loglevel=error)
cd "$top/tests/web/bench"
# node-pty has no prebuilt binary for Linux: node-gyp builds it here
npm ci --no-audit --no-fund --loglevel=error
LODGE_WEB_OUT=$(mktemp -d)
trap 'rm -rf "$LODGE_WEB_OUT"' EXIT
export LODGE_WEB_OUT
LODGE_KIT_DAEMON_ARGS="--web-root $top/contrib/web/dist" \
    "$top/tests/sdk/with-lodged" --lodged "$lodged" -- node bench.mjs "$@"
