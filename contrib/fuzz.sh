#!/bin/sh
# Fuzz every libFuzzer target for SECONDS each (default 60), one after the
# other.  The targets are built with clang from a copy of the tree in
# build/fuzz/src (configure --enable-fuzzing, make fuzz), so an in-tree
# build is left alone, and each one is fuzzed over a scratch copy of its
# committed corpus in build/fuzz/run/TARGET/corpus: tests/fuzz/corpus is
# never written.  Prints each target's executions and exits 1 if any target
# crashed, leaked, ran out of memory or timed out; the input that did it is
# left in build/fuzz/run/TARGET/ with the log (tests/fuzz/README says how to
# replay it).  FUZZ_FLAGS adds libFuzzer options, e.g. FUZZ_FLAGS=-jobs=2.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
case $secs in
'' | *[!0-9]*)
	echo "usage: contrib/fuzz.sh [SECONDS]" >&2
	exit 2
	;;
esac
top=$(pwd)
out=$top/build/fuzz
rm -rf "$out"
mkdir -p "$out/src" "$out/obj" "$out/run"
git ls-files -z --cached --others --exclude-standard |
    xargs -0 cp --parents -t "$out/src"
(cd "$out/src" && autoreconf -fi >/dev/null 2>&1)
echo "== build (log: build/fuzz/build.log)"
if ! (cd "$out/obj" && "$out/src/configure" -q --enable-fuzzing CC=clang &&
    make -j"$(nproc)" fuzz) >"$out/build.log" 2>&1; then
	tail -20 "$out/build.log" >&2
	exit 1
fi

# The number of files in a directory.
count() {
	set -- "$1"/*
	if [ -e "$1" ]; then echo $#; else echo 0; fi
}

status=0
echo "== fuzz, $secs s per target"
for t in httphead request wsmsg ring; do
	case $t in
	httphead) len=8192 ;;
	ring) len=1024 ;;	# a program; longer ones only run slower
	*) len=4096 ;;
	esac
	run=$out/run/$t
	mkdir -p "$run/corpus"
	cp "$top/tests/fuzz/corpus/$t/"* "$run/corpus/"
	seeds=$(count "$run/corpus")
	rc=0
	# shellcheck disable=SC2086
	"$out/obj/tests/fuzz/fuzz_$t" -max_total_time="$secs" -max_len="$len" \
	    -timeout=30 -print_final_stats=1 -entropic_scale_per_exec_time=1 \
	    -artifact_prefix="$run/" ${FUZZ_FLAGS:-} "$run/corpus" \
	    >"$run/log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/log" |
	    tail -1)
	found=
	for f in "$run"/crash-* "$run"/leak-* "$run"/oom-* "$run"/timeout-*; do
		[ -e "$f" ] && found="$found ${f##*/}"
	done
	printf 'fuzz_%-9s %10s executions, corpus %s -> %s' "$t" \
	    "${execs:-?}" "$seeds" "$(count "$run/corpus")"
	if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
		echo ", ok"
		continue
	fi
	status=1
	echo ", FAILED (exit $rc)"
	grep -m1 -E 'ERROR: |runtime error: |check failed: ' "$run/log" |
	    sed 's/^/    /' || true
	for f in $found; do
		echo "    input: build/fuzz/run/$t/$f"
	done
	echo "    log: build/fuzz/run/$t/log"
done
exit $status
