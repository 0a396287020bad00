#!/bin/sh
# Install what lodge needs from Debian 12: "build" for building and running,
# "test" for the test suite as well.  Skips apt-get when all is present.
set -eu
build="autoconf automake pkg-config make gcc libwebsockets-dev libmsgpack-dev
libbsd-dev libjansson-dev libsystemd-dev libuv1-dev libwebsockets-evlib-uv
libcmocka-dev"
test="$build python3-websockets python3-msgpack mandoc valgrind
tmux dtach procps curl clang libclang-rt-14-dev systemd
systemd-container debootstrap prometheus"
case "${1:-build}" in
build) want=$build ;;
test) want=$test ;;
*) echo "usage: contrib/deps.sh build|test" >&2; exit 2 ;;
esac
missing=
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
	    missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "contrib/deps.sh: need root to install:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
