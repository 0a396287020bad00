#!/bin/sh
# Quick start: install the build dependencies, build, and run lodged in the
# foreground on 127.0.0.1:5634 with its runtime directory in /run/lodge.
set -eu
cd "$(dirname "$0")/.."
sh contrib/deps.sh build
[ -x configure ] || autoreconf -fi >/dev/null
[ -f Makefile ] || ./configure -q
make -s -j"$(nproc)"
rundir=${LODGE_RUNDIR:-/run/lodge}
# The browser terminal, when npm is there to build it (contrib/web).
web="--no-web"
if command -v npm >/dev/null 2>&1 &&
    { [ -f contrib/web/dist/app.js ] ||
    (cd contrib/web && npm ci --no-audit --no-fund --loglevel=error &&
    sh build.sh) >/dev/null; }; then
	web="--web-root $(pwd)/contrib/web/dist"
	page="http://127.0.0.1:5634/ui/ (give it the token)"
else
	page="not built: the page needs npm (apt-get install npm)"
fi
cat <<MSG
lodged is starting on 127.0.0.1:5634 (Ctrl-C stops the front; sessions live on).
  token:     $rundir/token
  try:       curl -H "Authorization: Bearer \$(cat $rundir/token)" http://127.0.0.1:5634/v1/health
  unix:      curl --unix-socket $rundir/lodged.sock http://lodge/v1/sessions
  browser:   $page
MSG
exec ./lodged --foreground --listen 127.0.0.1:5634 --runtime-dir "$rundir" $web
