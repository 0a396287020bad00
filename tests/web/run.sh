#!/bin/sh
# The browser terminal's tests: build the page (contrib/web), then drive it
# in Debian's Chromium with playwright-core against a private lodged:
#   sh tests/web/run.sh LODGED [node --test options]
# What the tests make (the screenshot) goes to $LODGE_WEB_OUT, or a new
# temporary directory.  Ends with node's test runner's summary; the status
# is its.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
lodged=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
[ -x /usr/bin/chromium ] || { echo "web: /usr/bin/chromium is missing" >&2; exit 1; }
(cd "$top/contrib/web" && npm ci --no-audit --no-fund --loglevel=error &&
    sh build.sh)
cd "$top/tests/web"
if [ -z "${LODGE_WEB_OUT:-}" ]; then
	LODGE_WEB_OUT=$(mktemp -d "${TMPDIR:-/tmp}/lodge-web-out-XXXXXX")
	echo "web: the tests' output goes to $LODGE_WEB_OUT"
fi
export LODGE_WEB_OUT
npm ci --no-audit --no-fund --loglevel=error
LODGE_KIT_DAEMON_ARGS="--web-root $top/contrib/web/dist" \
    timeout 600 "$top/tests/sdk/with-lodged" --lodged "$lodged" -- \
    node --test --test-concurrency=1 --test-force-exit --test-timeout=180000 \
    "$@" test/
