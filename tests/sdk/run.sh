#!/bin/sh
# Build, check and test every SDK under contrib/sdk against a real lodged:
#   sh tests/sdk/run.sh LODGED [LANGUAGE...]
# Each language's own tooling fetches its dependencies from its registry
# (pinned by its lockfile) and runs its strict checkers and its test suite,
# with the conformance kit's daemon (tests/sdk/with-lodged) around it.
# Ends with "sdk: N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
kit=$top/tests/sdk
LODGED=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); shift
export LODGED
if [ $# -eq 0 ]; then
	for d in "$top"/contrib/sdk/*/; do
		[ -d "$d" ] && set -- "$@" "$(basename "$d")"
	done
fi
# The seeds' examples work in /workspace, a sandbox's working directory:
# make it before any language runs them, not only in the one that needs it
# for npm (a fresh machine has none).
mkdir -p /workspace 2>/dev/null || true
pass=0 fail=0
for lang; do
	dir=$top/contrib/sdk/$lang
	if [ ! -d "$dir" ]; then
		echo "sdk $lang: $dir is missing" >&2
		fail=$((fail + 1))
		continue
	fi
	echo "== sdk $lang"
	if (cd "$dir" && . "$kit/lang/$lang.sh"); then
		pass=$((pass + 1))
	else
		echo "sdk $lang: FAILED" >&2
		fail=$((fail + 1))
	fi
done
echo "sdk: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
