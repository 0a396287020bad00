#!/bin/sh
# Memcheck over integration scenarios: every lodged process (front,
# template, workers, exec streams) runs under valgrind; any error or
# definite leak in any of them fails.  Usage: contrib/valgrind.sh BUILDDIR
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
build=$(cd "${1:-.}" && pwd)
logs=$(mktemp -d)
# Workers and children that run as other users write their logs here too.
chmod 1777 "$logs"
wrapper=$logs/lodged
cat > "$wrapper" <<WRAP
#!/bin/sh
exec valgrind -q --trace-children=yes --leak-check=full \
    --show-leak-kinds=definite --errors-for-leak-kinds=definite \
    --log-file=$logs/vg.%p $build/lodged "\$@"
WRAP
chmod +x "$wrapper"
status=0
for t in test_front_crash test_badinput; do
	LODGED=$wrapper /usr/bin/python3 \
	    "$top/tests/integration/$t.py" || status=1
done
# Children that exec other programs leave empty logs; keep the real ones.
bad=$(grep -l -E "ERROR SUMMARY: [1-9]|definitely lost: [1-9]|Invalid (read|write)|uninitialised" \
    "$logs"/vg.* 2>/dev/null || true)
if [ -n "$bad" ]; then
	echo "valgrind reports:"
	for f in $bad; do cat "$f"; done
	status=1
fi
n=$(ls "$logs"/vg.* 2>/dev/null | wc -l)
echo "valgrind: $n processes checked, $(echo "$bad" | grep -c . || true) with reports"
rm -rf "$logs"
exit $status
