#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the guest's base initramfs: busybox-static, the init, and the
# ftrace selftests of the kernel tree (ours included).
#
# Usage: initramfs.sh KERNEL_TREE OUTPUT.cpio
set -euo pipefail

TREE=$1
OUT=$2
ROOT=$(dirname "$0")/..
STAGE=$OUT.d

rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,sbin,etc,proc,sys,dev,tmp,root,usr/bin,usr/sbin}
install -m755 /bin/busybox "$STAGE/bin/busybox"
install -m755 "$ROOT/guest/init" "$STAGE/init"
install -m644 "$ROOT/guest/check.sh" "$STAGE/check.sh"
install -m644 "$ROOT/guest/boot-check.sh" "$STAGE/boot-check.sh"
install -m644 "$ROOT/guest/bench.sh" "$STAGE/bench.sh"
gcc -O2 -static -o "$STAGE/bin/syscall_loop" "$ROOT/bench/syscall_loop.c"
# Other users and groups: the ownership tests change files to them.
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1::/:/bin/false' \
	'nobody:x:65534:65534::/:/bin/false' > "$STAGE/etc/passwd"
printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'nogroup:x:65534:' > "$STAGE/etc/group"

# dash as /bin/sh and gawk as awk, with the libraries they link. Busybox
# sh runs its own applets before searching PATH, and busybox awk lacks
# strtonum(), which some ftrace selftests use, as they use lscpu.
copy_program() { # host-path stage-path
	mkdir -p "$STAGE$(dirname "$2")"
	cp -L "$1" "$STAGE$2"
	for lib in $(ldd "$1" | grep -o '/[^ ]*'); do
		mkdir -p "$STAGE$(dirname "$lib")"
		cp -L "$lib" "$STAGE$lib"
	done
}
copy_program /bin/dash /bin/sh
copy_program /usr/bin/gawk /usr/local/bin/awk
copy_program /usr/bin/lscpu /usr/local/bin/lscpu
mkdir -p "$STAGE/selftests"
cp -a "$TREE/tools/testing/selftests/ftrace" "$STAGE/selftests/"
(cd "$STAGE" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
rm -rf "$STAGE"
