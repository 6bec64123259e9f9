#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make series-build`: build the kernel at every commit of the series
# `make series` wrote, so that the series bisects.  Each commit is checked
# out in a worktree of the kernel tree and built, with the configuration
# of the test kernel, in an object directory of its own (the first build
# is a full one; the next ones are incremental); a warning in a file the
# series changed fails it.  The last commit is then built once more with
# CONFIG_FTRACE_STACKMAP off, in a second object directory: the glue must
# leave such a kernel as it was, with no symbol of the stackmap or of its
# stack_cookie event.
#
# Prints TAP, one case per build.  Exits non-zero if a build fails.
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

# warnings LOG: the warnings of a build in the files the checked-out
# commit changed since pristine, where a commit that leaves code unused
# until a later one, say, would show.  A C warning names its file on its
# own line, a Rust one on the '-->' line below it.
warnings() {
	git -C "$WORK/tree" diff --name-only pristine HEAD > "$WORK/changed"
	grep -E 'warning:|^ *--> ' "$1" | grep -F -f "$WORK/changed"
}

# build N DESCRIPTION OBJ [CONFIG OPTION...]: case N, the checked-out
# commit built in OBJ with the test kernel's configuration, the options
# given turned off, completed for what the commit has.
build() {
	local n=$1 what=$2 obj=$3 log=$WORK/build-$1.log start off=() o
	shift 3
	for o; do
		off+=(--disable "$o")
	done
	start=$(date +%s)
	mkdir -p "$obj"
	if cp "$CONFIG" "$obj/.config" &&
	   { [ ${#off[@]} -eq 0 ] ||
	     "$WORK/tree/scripts/config" --file "$obj/.config" "${off[@]}"; } &&
	   make -C "$WORK/tree" O="$obj" ARCH="$KERNEL_ARCH" LLVM="${LLVM_SUFFIX:?}" \
		olddefconfig > "$log" 2>&1 &&
	   make -C "$WORK/tree" O="$obj" ARCH="$KERNEL_ARCH" LLVM="${LLVM_SUFFIX:?}" \
		-j"$(nproc)" "$(basename "$KERNEL_IMAGE")" >> "$log" 2>&1; then
		warned=$(warnings "$log")
		if [ -n "$warned" ]; then
			failed=$((failed + 1))
			echo "not ok $n $what: warnings in files the series changed"
			echo "$warned" | head -n 20 | sed 's/^/# /'
		else
			echo "ok $n $what ($(($(date +%s) - start)) s)"
		fi
	else
		failed=$((failed + 1))
		echo "not ok $n $what (see $log)"
		tail -n 20 "$log" | sed 's/^/# /'
	fi
}

echo "1..$(($(echo "$commits" | wc -l) + 2))"
n=0 failed=0
for c in $commits; do
	n=$((n + 1))
	if git -C "$WORK/tree" checkout -q --detach "$c"; then
		build $n "$(git -C "$TREE" log -1 --format=%s "$c")" "$WORK/obj"
	else
		failed=$((failed + 1))
		echo "not ok $n cannot check out $c"
	fi
done
build $((n + 1)) "the series with CONFIG_FTRACE_STACKMAP=n" "$WORK/obj-off" \
	FTRACE_STACKMAP
left=$(grep -iE 'stackmap|stack_cookie' "$WORK/obj-off/System.map" 2>/dev/null)
if [ -s "$WORK/obj-off/System.map" ] && [ -z "$left" ]; then
	echo "ok $((n + 2)) CONFIG_FTRACE_STACKMAP=n leaves no stackmap symbol"
else
	failed=$((failed + 1))
	echo "not ok $((n + 2)) CONFIG_FTRACE_STACKMAP=n leaves no stackmap symbol"
	echo "$left" | head -n 20 | sed 's/^/# /'
fi
[ "$failed" -eq 0 ]
