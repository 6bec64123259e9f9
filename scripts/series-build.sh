#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make series-build`: build the kernel at every commit of the series
# `make series` wrote, so that the series bisects.  Each commit is checked
# out in a worktree of the kernel tree and built, with the configuration
# of the test kernel, in an object directory of its own (the first build
# is a full one; the next ones are incremental).
#
# Prints TAP, one case per commit.  Exits non-zero if a commit does not
# build.
#
# Usage: series-build.sh KERNEL_TREE CONFIG WORK_DIR
set -uo pipefail

TREE=$(cd "$1" && pwd)
CONFIG=$2
WORK=$3
BRANCH=${SERIES_BRANCH:?}
: "${KERNEL_ARCH:?}" "${KERNEL_IMAGE:?}"

commits=$(git -C "$TREE" rev-list --reverse "pristine..$BRANCH") || exit 1
mkdir -p "$WORK/obj"
if [ ! -e "$WORK/tree/.git" ]; then
	git -C "$TREE" worktree prune
	git -C "$TREE" worktree add -q --detach "$WORK/tree" pristine || exit 1
fi

echo "1..$(echo "$commits" | wc -l)"
n=0 failed=0
for c in $commits; do
	n=$((n + 1))
	subject=$(git -C "$TREE" log -1 --format=%s "$c")
	log=$WORK/build-$n.log
	start=$(date +%s)
	# The test kernel's configuration, completed for what this commit
	# has: the options of the stackmap appear with its Kconfig.
	if git -C "$WORK/tree" checkout -q --detach "$c" &&
	   cp "$CONFIG" "$WORK/obj/.config" &&
	   make -C "$WORK/tree" O="$WORK/obj" ARCH="$KERNEL_ARCH" LLVM="${LLVM_SUFFIX:?}" \
		olddefconfig > "$log" 2>&1 &&
	   make -C "$WORK/tree" O="$WORK/obj" ARCH="$KERNEL_ARCH" LLVM="${LLVM_SUFFIX:?}" \
		-j"$(nproc)" "$(basename "$KERNEL_IMAGE")" >> "$log" 2>&1; then
		echo "ok $n $subject ($(($(date +%s) - start)) s)"
	else
		failed=$((failed + 1))
		echo "not ok $n $subject (see $log)"
		tail -n 20 "$log" | sed 's/^/# /'
	fi
done
[ "$failed" -eq 0 ]
