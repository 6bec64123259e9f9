#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the guest's base initramfs: busybox-static, the init, and the
# ftrace selftests of the kernel tree (ours included).
#
# The guest's programs are the host's when the guest is of the host's
# Debian architecture (GUEST_DEB_ARCH), and otherwise Debian 12's for the
# guest's (scripts/guest-sysroot.sh).
#
# Usage: initramfs.sh KERNEL_TREE OUTPUT.cpio
set -euo pipefail

TREE=$1
OUT=$2
ROOT=$(dirname "$0")/..
STAGE=$OUT.d
: "${GUEST_DEB_ARCH:?}" "${GUEST_MULTIARCH:?}"

SYSROOT=
if [ "$GUEST_DEB_ARCH" != "$(dpkg --print-architecture)" ]; then
	SYSROOT=$("$ROOT/scripts/guest-sysroot.sh" "$GUEST_DEB_ARCH")
fi

rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,sbin,etc,proc,sys,dev,tmp,root,usr/bin,usr/sbin}
install -m755 "$SYSROOT/bin/busybox" "$STAGE/bin/busybox"
install -m755 "$ROOT/guest/init" "$STAGE/init"
install -m644 "$ROOT/guest/check.sh" "$STAGE/check.sh"
install -m644 "$ROOT/guest/boot-check.sh" "$STAGE/boot-check.sh"
install -m644 "$ROOT/guest/bench.sh" "$STAGE/bench.sh"
# make bench's syscall loop, which runs on x86_64 alone (see the Makefile).
if [ -z "$SYSROOT" ]; then
	gcc -O2 -static -o "$STAGE/bin/syscall_loop" "$ROOT/bench/syscall_loop.c"
fi
# Other users and groups: the ownership tests change files to them.
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1::/:/bin/false' \
	'nobody:x:65534:65534::/:/bin/false' > "$STAGE/etc/passwd"
printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'nogroup:x:65534:' > "$STAGE/etc/group"

# dash as /bin/sh and gawk as awk, with the libraries they link. Busybox
# sh runs its own applets before searching PATH, and busybox awk lacks
# strtonum(), which some ftrace selftests use, as they use lscpu.
#
# The libraries are found as the dynamic loader finds them, from the ELF
# headers, so that a program of another architecture needs no ldd: the
# loader the program names, and each library it needs (and so on) in the
# first library directory of $SYSROOT that has it (GUEST_MULTIARCH: the
# Debian multiarch directory of the guest's libraries).
copy_file() { # path-in-sysroot [stage-path, the same by default]
	local to=${2:-$1}
	mkdir -p "$STAGE$(dirname "$to")"
	cp -L "$SYSROOT$1" "$STAGE$to"
}
copy_libraries() { # path of an ELF file in $SYSROOT
	local interp lib dir found
	interp=$(readelf -l "$SYSROOT$1" | sed -n 's/.*interpreter: \(.*\)]$/\1/p')
	[ -z "$interp" ] || [ -e "$STAGE$interp" ] || copy_file "$interp"
	for lib in $(readelf -d "$SYSROOT$1" | sed -n 's/.*Shared library: \[\(.*\)\]$/\1/p'); do
		found=
		for dir in /lib/$GUEST_MULTIARCH /usr/lib/$GUEST_MULTIARCH /lib /usr/lib; do
			if [ -e "$SYSROOT$dir/$lib" ]; then
				found=$dir/$lib
				break
			fi
		done
		if [ -z "$found" ]; then
			echo "initramfs: $lib, which $1 needs, is not in ${SYSROOT:-/}" >&2
			exit 1
		fi
		[ -e "$STAGE$found" ] && continue
		copy_file "$found"
		copy_libraries "$found"
	done
}
copy_program() { # path-in-sysroot stage-path
	copy_file "$1" "$2"
	copy_libraries "$1"
}
copy_program /bin/dash /bin/sh
copy_program /usr/bin/gawk /usr/local/bin/awk
copy_program /usr/bin/lscpu /usr/local/bin/lscpu
mkdir -p "$STAGE/selftests"
cp -a "$TREE/tools/testing/selftests/ftrace" "$STAGE/selftests/"
(cd "$STAGE" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
rm -rf "$STAGE"
