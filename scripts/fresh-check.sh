#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make fresh-check`: `make check` and one `make run` as on a fresh Debian 12
# machine. In a new bookworm root (debootstrap's minbase, plus make, git,
# curl and ca-certificates) with the apt sources an installed system has
# (bookworm, bookworm-updates, bookworm-security), rustup installs this
# machine's stable rustc; a clone of HEAD then runs `make check` and
# `make run CMD='grep -w function ...'`, each timed. The root is removed
# at the end.
#
# Of this machine it takes only what lets a new one reach the archives
# the same way: its local CA certificates and its apt configuration. No
# toolchain, package or cache of this machine is used.
#
# Needs root (debootstrap, chroot and bind mounts); installs debootstrap.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SUITE=bookworm
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
RUSTUP_INIT=https://static.rust-lang.org/rustup/dist/x86_64-unknown-linux-gnu/rustup-init
# The README asks for a rustc built on LLVM 22: take the one in use here.
RUST_TOOLCHAIN=${RUST_TOOLCHAIN:-$(rustc --version 2>/dev/null | awk '{ print $2 }')}
: "${RUST_TOOLCHAIN:?no rustc here: set RUST_TOOLCHAIN}"

if [ "$(id -u)" -ne 0 ]; then
	echo "fresh-check: needs root (debootstrap, chroot, bind mounts)" >&2
	exit 1
fi
if ! command -v debootstrap >/dev/null; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends debootstrap
fi

dir=$(mktemp -d /var/tmp/stackmap-fresh.XXXXXX)
cleanup() {
	local m busy=
	for m in proc sys dev; do
		mountpoint -q "$dir/$m" && ! umount -R "$dir/$m" && busy=1
	done
	# Never remove through a mount that stayed.
	if [ -n "$busy" ]; then
		echo "fresh-check: $dir still has mounts: left in place" >&2
	else
		rm -rf --one-file-system "$dir"
	fi
}
trap cleanup EXIT

timings=
timed() {
	local name=$1 start rc=0
	shift
	start=$(date +%s)
	"$@" || rc=$?
	timings="$timings, $name $(($(date +%s) - start)) s"
	[ "$rc" -eq 0 ] || echo "fresh-check: $name failed (exit $rc)" >&2
	return "$rc"
}

in_root() {
	# A login's environment, not this one's.
	chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
		PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -c "$1"
}

log=$(mktemp)
if ! timed debootstrap debootstrap --variant=minbase \
	--include=make,git,curl,ca-certificates "$SUITE" "$dir" "$MIRROR" > "$log" 2>&1; then
	tail -20 "$log"
	rm -f "$log"
	exit 1
fi
rm -f "$log"

cat > "$dir/etc/apt/sources.list" <<EOS
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main
EOS
cp /etc/resolv.conf "$dir/etc/resolv.conf"
for f in /etc/apt/apt.conf.d/*; do
	[ -e "$dir/etc/apt/apt.conf.d/${f##*/}" ] || cp "$f" "$dir/etc/apt/apt.conf.d/"
done
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
	cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
	in_root 'update-ca-certificates >/dev/null'
fi

for m in proc sys dev; do
	mount --rbind "/$m" "$dir/$m"
	# So that unmounting here never unmounts anything of this machine's.
	mount --make-rslave "$dir/$m"
done

git clone -q "$ROOT" "$dir/root/stackmap"
echo "fresh-check: $SUITE root in $dir, $(git -C "$ROOT" log -1 --format='%h %s')"

timed rustup in_root "curl -sSfo /tmp/rustup-init $RUSTUP_INIT && chmod +x /tmp/rustup-init &&
	/tmp/rustup-init -y --quiet --profile minimal --default-toolchain $RUST_TOOLCHAIN"
rc=0
timed "make check" in_root 'cd /root/stackmap && make check' || rc=1
timed "make run" in_root "cd /root/stackmap &&
	make run CMD='grep -w function /sys/kernel/tracing/available_tracers'" || rc=1
echo "fresh-check: ${timings#, }"
exit "$rc"
