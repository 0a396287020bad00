#!/bin/sh
# Each SDK's speed beside the C bench client, in the same run:
#   sh tests/sdk/bench.sh [--lodged PATH] [--rounds N] [--quick] [LANG...]
# LANG: typescript python python-aio go rust java (default: all of them).
#
# Builds what it needs (lodged and tests/bench/lodge-bench out of tree, or
# beside --lodged PATH when that is a build directory's lodged; each SDK's
# release build, its dependencies from its own registry as pinned by its
# lockfile), starts one private lodged (tests/sdk/with-lodged), then per
# language N interleaved rounds (3 by default): `lodge-bench --sdk-figures`,
# the SDK's bench command, the C client, the SDK, ...  Each prints one JSON
# line (exec_p50_us, exec_p99_us, stream_gbps, key_p50_us, key_p99_us).
# Prints a table per SDK: the median of each figure for C and the SDK, the
# median of the per-round ratios SDK/C, and for exec p50 and the stream the
# target and whether it is met, with the load average before and after the
# language's rounds.
#
# --quick: one round of small sizes (200 execs, 200 keystrokes, 64 MiB),
# checking only that every line parses.  A benchmark, not a test: not part
# of contrib/test.sh.  The JSON lines are kept in $LODGE_BENCH_OUT (default
# a temporary directory, printed at the end).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
kit=$top/tests/sdk
all="typescript python python-aio go rust java"

# --- inside the private lodged: the rounds ---
if [ "${1:-}" = "--rounds-inside" ]; then
	shift
	out=$1 rounds=$2 sizes=$3; shift 3
	for lang; do
		cmd=$(sed "s|@SIZES@|$sizes|" "$out/$lang.cmd")
		dir=$top/contrib/sdk/${lang%-aio}
		cat /proc/loadavg >"$out/$lang.load"
		r=1
		while [ "$r" -le "$rounds" ]; do
			echo "bench: $lang round $r of $rounds" >&2
			# shellcheck disable=SC2086 # sizes are options
			"$LODGE_BENCH_C" --sdk-figures $sizes >>"$out/c-$lang.jsonl"
			# Maven writes terminal resets around the line
			(cd "$dir" && eval "$cmd") | sed 's/\x1b\[[0-9;]*m//g' \
			    >>"$out/$lang.jsonl"
			r=$((r + 1))
		done
		cat /proc/loadavg >>"$out/$lang.load"
	done
	exit 0
fi

lodged= rounds=3 quick=0
while [ $# -gt 0 ]; do
	case $1 in
	--lodged) lodged=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--) shift; break ;;
	-*) echo "usage: bench.sh [--lodged PATH] [--rounds N] [--quick]" \
	    "[LANG...]" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || set -- $all
for lang; do
	case " $all " in
	*" $lang "*) ;;
	*) echo "bench.sh: $lang: not one of $all" >&2; exit 2 ;;
	esac
done
sizes="--execs 2000 --keys 2000 --bytes 1073741824"
if [ "$quick" -eq 1 ]; then
	rounds=1
	sizes="--execs 200 --keys 200 --bytes 67108864"
fi
out=${LODGE_BENCH_OUT:-$(mktemp -d /tmp/lodge-sdk-bench.XXXXXX)}
mkdir -p "$out"
trap 'rm -rf "$out/python-venv"' EXIT

# --- lodged and the C client ---
if [ -n "$lodged" ]; then
	bld=$(cd "$(dirname "$lodged")" && pwd)
	lodged=$bld/$(basename "$lodged")
	if [ -f "$bld/Makefile" ]; then
		make -s -C "$bld" tests/bench/lodge-bench >&2
	fi
else
	bld=${LODGE_BENCH_BUILD:-/var/tmp/lodge-sdk-bench-build}
	mkdir -p "$bld"
	[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi >/dev/null 2>&1)
	[ -f "$bld/Makefile" ] || (cd "$bld" && "$top/configure" -q)
	make -s -C "$bld" -j2 lodged lodged-worker tests/bench/lodge-bench >&2
	lodged=$bld/lodged
fi
LODGE_BENCH_C=$bld/tests/bench/lodge-bench
[ -x "$LODGE_BENCH_C" ] || { echo "bench.sh: no $LODGE_BENCH_C" >&2; exit 1; }
export LODGE_BENCH_C

# --- each SDK's release build; $out/LANG.cmd runs its bench in its dir ---
build() {
	echo "bench: building $1" >&2
	cd "$top/contrib/sdk/${1%-aio}"
	case $1 in
	typescript)
		npm ci --no-audit --no-fund --loglevel=error >&2
		npx tsc -p tsconfig.json >&2
		npx tsc -p tsconfig.test.json >&2
		echo "node dist-test/bench/bench.js @SIZES@" ;;
	python|python-aio)
		venv=$out/python-venv
		if [ ! -x "$venv/bin/python" ]; then
			"${PYTHON:-python3}" -m venv "$venv"
			"$venv/bin/pip" install -q --disable-pip-version-check . >&2
		fi
		aio=; [ "$1" = python-aio ] && aio=" --aio"
		echo "'$venv/bin/python' -m lodge.bench$aio @SIZES@" ;;
	go)
		GOFLAGS=-mod=readonly go build -o "$out/go-bench" ./cmd/lodge-bench
		echo "'$out/go-bench' @SIZES@" ;;
	rust)
		if ! command -v cargo >/dev/null && [ -x "$HOME/.cargo/bin/cargo" ]
		then
			PATH=$HOME/.cargo/bin:$PATH
		fi
		target=${LODGE_RUST_TARGET:-/var/tmp/lodge-sdk-rust-target}
		CARGO_TARGET_DIR=$target cargo build -q --locked --release \
		    --example bench
		echo "'$target/release/examples/bench' @SIZES@" ;;
	java)
		mvn -q -B -ntp compile >&2
		# exec:java runs Bench in Maven's JVM, on the pinned classpath
		echo "mvn -q -B -ntp exec:java '-Dexec.args=@SIZES@'" ;;
	esac
}
for lang; do
	(build "$lang") >"$out/$lang.cmd"
	rm -f "$out/$lang.jsonl" "$out/c-$lang.jsonl"
done

"$kit/with-lodged" --lodged "$lodged" -- \
    sh "$kit/bench.sh" --rounds-inside "$out" "$rounds" "$sizes" "$@"

rev=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
/usr/bin/python3 - "$out" "$quick" "$rev" "$@" <<'EOF'
import json, os, statistics, sys, time

out, quick, rev, langs = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4:]
# exec p50: SDK/C at most; stream: SDK/C at least
LATENCY = {"typescript": 1.5, "python": 2.0, "python-aio": 2.0,
           "go": 1.3, "rust": 1.3, "java": 1.3}
STREAM = {"typescript": 0.5, "python": 0.5, "python-aio": 0.5,
          "go": 0.6, "rust": 0.6, "java": 0.6}
FIGURES = [("exec_p50_us", "exec p50", "us"), ("exec_p99_us", "exec p99", "us"),
           ("stream_gbps", "exec stream", "GB/s"),
           ("key_p50_us", "keystroke p50", "us"),
           ("key_p99_us", "keystroke p99", "us")]
KEYS = {"sdk"} | {f[0] for f in FIGURES}


def lines(path):
    rows = []
    with open(path) as f:
        for ln in f:
            if not ln.strip():
                continue
            row = json.loads(ln)
            if set(row) != KEYS or not all(
                    isinstance(row[k], (int, float)) and row[k] > 0
                    for k in KEYS - {"sdk"}):
                sys.exit("bench.sh: %s: not the bench line: %s" % (path, ln))
            rows.append(row)
    return rows


def num(v):
    return ("%.3g" % v) if v < 1000 else "%.0f" % v


bad = 0
print("SDK benchmarks, %s, commit %s" % (
    time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), rev))
for lang in langs:
    c, s = lines(os.path.join(out, "c-%s.jsonl" % lang)), \
        lines(os.path.join(out, "%s.jsonl" % lang))
    if not c or len(c) != len(s):
        print("%s: %d C lines, %d SDK lines" % (lang, len(c), len(s)))
        bad = 1
        continue
    with open(os.path.join(out, "%s.load" % lang)) as f:
        load = [" ".join(ln.split()[:3]) for ln in f]
    print("\n%s: %d rounds, load average %s before, %s after" % (
        lang, len(c), load[0], load[-1]))
    if quick:
        print("  (quick: sizes reduced, one round; the lines parse)")
    print("  %-14s %-5s %10s %10s %7s %8s  %s" % (
        "figure", "unit", "C", lang, "ratio", "target", ""))
    for key, name, unit in FIGURES:
        cm = statistics.median(r[key] for r in c)
        sm = statistics.median(r[key] for r in s)
        ratio = statistics.median(b[key] / a[key] for a, b in zip(c, s))
        # The targets are set on exec p50 and the stream; the other
        # figures are printed for comparison only.
        if key == "stream_gbps":
            target, met = ">= %.1fx" % STREAM[lang], ratio >= STREAM[lang]
        elif key == "exec_p50_us":
            target, met = "<= %.1fx" % LATENCY[lang], ratio <= LATENCY[lang]
        else:
            target, met = "-", None
        print("  %-14s %-5s %10s %10s %6.2fx %8s  %s" % (
            name, unit, num(cm), num(sm), ratio, target,
            "" if met is None else "met" if met else "missed"))
print("\nJSON lines in %s" % out)
sys.exit(bad)
EOF
