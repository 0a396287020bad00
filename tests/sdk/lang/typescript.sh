# The TypeScript SDK (contrib/sdk/typescript), sourced by tests/sdk/run.sh
# in that directory: its pinned dependencies (package-lock.json), the strict
# compiler over the package and its tests, then node's test runner against
# a private lodged (bounded: a hung scenario fails the run).  Its status is
# the last command's.
npm ci --no-audit --no-fund --loglevel=error &&
npx tsc -p tsconfig.json &&
npx tsc -p tsconfig.test.json &&
timeout 600 "$kit/with-lodged" -- node --test --test-concurrency=1 --test-force-exit \
    dist-test/test/*.test.js
