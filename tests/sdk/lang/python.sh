# Sourced by tests/sdk/run.sh in contrib/sdk/python ($kit: tests/sdk,
# LODGED exported): a private virtualenv (outside the tree) with the
# package and its exactly pinned test extra from PyPI, mypy --strict, then
# the suite against a private lodged.  Non-zero on any failure.
set -eu
py=${PYTHON:-python3}
venv=${TMPDIR:-/tmp}/lodge-sdk-python-venv.$$
if ! "$py" -m venv "$venv" 2>/dev/null; then
	# Debian keeps ensurepip apart
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		    --no-install-recommends python3-venv >/dev/null
	fi
	rm -rf "$venv"
	"$py" -m venv "$venv"
fi
trap 'rm -rf "$venv"' EXIT
"$venv/bin/pip" install -q --disable-pip-version-check ".[test]"
"$venv/bin/mypy" --strict --cache-dir "$venv/mypy-cache" src tests
"$kit/with-lodged" --lodged "$LODGED" -- \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider tests
