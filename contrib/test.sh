#!/bin/sh
# The whole test suite: install what it needs, build, run every unit and
# integration test, then again under AddressSanitizer and UBSan.
set -eu
cd "$(dirname "$0")/.."
sh contrib/deps.sh test
autoreconf -fi >/dev/null 2>&1
top=$(pwd)
status=0
run() {
	dir=$1; shift
	rm -rf "$dir"; mkdir -p "$dir"
	(cd "$dir" && "$top/configure" -q "$@" && make -s -j"$(nproc)" &&
	    make -s check VERBOSE=1) || status=1
	grep -h "^# \(TOTAL\|PASS\|FAIL\|ERROR\|SKIP\)" "$dir/test-suite.log" \
	    2>/dev/null || true
}
echo "== build and test"
run build-check
echo "== build and test with ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run build-asan --enable-sanitizers
exit $status
