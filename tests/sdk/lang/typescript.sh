# The TypeScript SDK (contrib/sdk/typescript), sourced by tests/sdk/run.sh
# in that directory: its pinned dependencies (package-lock.json), the strict
# compiler over the package and its tests, then node's test runner against
# a private lodged.  Its status is the last command's.
npm ci --no-audit --no-fund --loglevel=error &&
npx tsc -p tsconfig.json &&
npx tsc -p tsconfig.test.json &&
"$kit/with-lodged" -- node --test --test-concurrency=1 --test-timeout=180000 dist-test/test/*.test.js
