#!/bin/sh
# The whole test suite: install what it needs, build, run every unit and
# integration test, then again under AddressSanitizer and UBSan.  It builds
# from a copy of the tree in build/, so an in-tree build is left alone.
set -eu
cd "$(dirname "$0")/.."
sh contrib/deps.sh test
top=$(pwd)
rm -rf build/src build/check build/asan
mkdir -p build/src
git ls-files -z --cached --others --exclude-standard |
    xargs -0 cp --parents -t build/src
(cd build/src && autoreconf -fi >/dev/null 2>&1)
status=0
run() {
	dir=$top/build/$1; shift
	mkdir -p "$dir"
	(cd "$dir" && "$top/build/src/configure" -q "$@" &&
	    make -s -j"$(nproc)" && make -s -j"$(nproc)" check VERBOSE=1) || status=1
	grep -h "^# \(TOTAL\|PASS\|FAIL\|ERROR\|SKIP\)" "$dir/test-suite.log" \
	    2>/dev/null || true
}
echo "== build and test"
run check
echo "== lodged under a real systemd (systemd-nspawn)"
LODGED=$top/build/check/lodged /usr/bin/python3 \
    tests/integration/test_systemd_boot.py >build/systemd-boot.log 2>&1 || status=1
tail -n 4 build/systemd-boot.log
echo "== valgrind memcheck over integration scenarios"
sh contrib/valgrind.sh build/check || status=1
echo "== build and test with ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run asan --enable-sanitizers
echo "== SDKs against the plain build's lodged"
sdk=0
sh tests/sdk/run.sh build/check/lodged >build/sdk.log 2>&1 || { status=1; sdk=1; }
cat build/sdk.log
echo "== the browser terminal in Chromium against the plain build's lodged"
web=0
rm -f build/web.log
if ! command -v chromium >/dev/null 2>&1; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	    chromium >/dev/null || web=1
fi
[ "$web" -eq 0 ] && { sh tests/web/run.sh build/check/lodged >build/web.log 2>&1 ||
    web=1; }
[ "$web" -eq 0 ] || status=1
cat build/web.log 2>/dev/null || true
echo "== fuzz each target for a bounded time"
sh contrib/fuzz.sh "${LODGE_FUZZ_SECONDS:-20}" || status=1
pass=0 fail=0
for log in build/check/test-suite.log build/asan/test-suite.log; do
	p=$(sed -n 's/^# PASS: *//p' "$log" 2>/dev/null || echo 0)
	f=$(sed -n 's/^# \(FAIL\|ERROR\|XPASS\): *//p' "$log" 2>/dev/null |
	    awk '{s+=$1} END {print s+0}')
	pass=$((pass + ${p:-0}))
	fail=$((fail + ${f:-0}))
done
# Files that passed only on their second run (tests/run-integration.sh).
grep -h "^FLAKY:" build/check/tests/integration/*.log \
    build/asan/tests/integration/*.log 2>/dev/null || true
p=$(sed -n 's/^sdk: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' build/sdk.log)
f=$(sed -n 's/^sdk: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' build/sdk.log)
pass=$((pass + ${p:-0}))
fail=$((fail + ${f:-$sdk}))
p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' build/web.log 2>/dev/null)
f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' build/web.log 2>/dev/null)
pass=$((pass + ${p:-0}))
fail=$((fail + ${f:-$web}))
[ "$status" -eq 0 ] || [ "$fail" -gt 0 ] || fail=1
echo "suites: $pass passed, $fail failed"
exit $status
