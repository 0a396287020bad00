#!/bin/sh
# Update the screenshot beside the page (contrib/web/screenshot.png, the
# one the READMEs show) from the browser test that takes it:
#   sh tests/web/screenshot.sh LODGED
# The tests themselves never write into the tree.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
LODGE_WEB_OUT=$out sh "$top/tests/web/run.sh" "$1" \
    --test-name-pattern='^the token, a session created'
cp "$out/screenshot.png" "$top/contrib/web/screenshot.png"
echo "contrib/web/screenshot.png updated"
