#!/bin/sh
# The browser terminal's tests: build the page (contrib/web), then drive it
# in Debian's Chromium with playwright-core against a private lodged:
#   sh tests/web/run.sh LODGED
# Ends with node's test runner's summary; the status is its.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
lodged=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x /usr/bin/chromium ] || { echo "web: /usr/bin/chromium is missing" >&2; exit 1; }
(cd "$top/contrib/web" && npm ci --no-audit --no-fund --loglevel=error &&
    sh build.sh)
cd "$top/tests/web"
npm ci --no-audit --no-fund --loglevel=error
LODGE_KIT_DAEMON_ARGS="--web-root $top/contrib/web/dist" \
    timeout 600 "$top/tests/sdk/with-lodged" --lodged "$lodged" -- \
    node --test --test-concurrency=1 --test-force-exit --test-timeout=180000 \
    test/
