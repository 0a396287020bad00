#!/bin/sh
# Build the page into dist/: the SDK it is built on (its own pinned
# dependencies), the strict type check, then one bundle by esbuild beside
# the page, its style and xterm.js's.  dist/ is never committed.
set -eu
cd "$(dirname "$0")"
(cd ../sdk/typescript && npm ci --no-audit --no-fund --loglevel=error &&
    npx tsc -p tsconfig.json)
npx tsc -p tsconfig.json
rm -rf dist
mkdir -p dist
npx esbuild src/main.ts --bundle --format=esm --platform=browser \
    --target=es2022 --minify --sourcemap --legal-comments=linked \
    --outfile=dist/app.js --log-level=warning
cp index.html style.css dist/
cp node_modules/@xterm/xterm/css/xterm.css dist/
