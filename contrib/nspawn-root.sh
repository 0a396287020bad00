#!/bin/sh
# Make (once) the minimal Debian 12 root in which tests boot a real systemd
# and run the installed lodged:  sh contrib/nspawn-root.sh [DIR]
# It holds systemd, procps, curl and lodged's runtime libraries from Debian;
# lodged itself is bound in by the test.  A root made for the same package
# list is kept and reused (about 2 minutes and 250 MB to make).
set -eu
root=${1:-/var/tmp/lodge-nspawn-root}
pkgs="systemd systemd-sysv dbus procps curl libwebsockets17 libmsgpackc2
libbsd0 libjansson4 libsystemd0 libuv1 libwebsockets-evlib-uv"
stamp=$(echo $pkgs | cksum | cut -d' ' -f1)
if [ -f "$root/.lodge-root" ] && [ "$(cat "$root/.lodge-root")" = "$stamp" ]; then
	echo "$root"
	exit 0
fi
rm -rf "$root.new"
debootstrap --variant=minbase --include="$(echo $pkgs | tr ' ' ,)" \
    bookworm "$root.new" >"$root.log" 2>&1 || {
	tail -20 "$root.log" >&2
	echo "contrib/nspawn-root.sh: debootstrap failed (log $root.log)" >&2
	exit 1
}
# no getty on a console nobody reads; boot straight to multi-user
rm -f "$root.new/etc/systemd/system/getty.target.wants/"*
echo "$stamp" >"$root.new/.lodge-root"
rm -rf "$root"
mv "$root.new" "$root"
echo "$root"
