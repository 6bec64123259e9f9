#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the project into the kernel tree: the component to
# kernel/trace/stackmap/, rust/, Documentation/ and the ftrace selftests to
# the same paths, then patches/*.patch in order.  Only files whose content
# changed are copied, so the kernel rebuild stays incremental; a file that
# left the project is removed from the tree (or restored to pristine).
#
# Usage: install.sh KERNEL_TREE
set -euo pipefail

TREE=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=$TREE/.stackmap-installed
PATCH_STATE=$TREE/.stackmap-patches
mkdir -p "$STATE"

# Map each project file to its place in the tree.
new_manifest=$(mktemp)
trap 'rm -f "$new_manifest"' EXIT
(
	cd "$ROOT"
	for f in Kbuild Kconfig *.rs; do
		[ -f "$f" ] && echo "$f kernel/trace/stackmap/$f"
	done
	git ls-files -co --exclude-standard -- rust Documentation \
		tools/testing/selftests/ftrace |
		while read -r f; do [ ! -f "$f" ] || echo "$f $f"; done
) | sort -u > "$new_manifest"

restore() { # path in tree
	if git -C "$TREE" cat-file -e "pristine:$1" 2>/dev/null; then
		git -C "$TREE" checkout -q pristine -- "$1"
	else
		rm -f "$TREE/$1"
	fi
}

# Files that left the project leave the tree first: a patch may now
# change one of them.
if [ -f "$STATE/manifest" ]; then
	cut -d' ' -f2 "$STATE/manifest" | sort > "$STATE/old"
	cut -d' ' -f2 "$new_manifest" | sort > "$STATE/new"
	comm -23 "$STATE/old" "$STATE/new" | while read -r f; do
		restore "$f"
		echo "install: removed $f"
	done
fi

# Then the patches: they are applied to pristine files, and a change to
# the patch set restores what the old set touched before applying the new
# one.  Their diffs of installed files are left out: the project's file
# is the file as the last patch leaves it (see series.sh).  So the set is
# applied again when the installed files change too: a file that left the
# project takes its diffs again.
exclude=()
while read -r src dst; do
	exclude+=(--exclude="$dst")
done < "$new_manifest"
patch_sum=$({
	cat "$ROOT"/patches/*.patch 2>/dev/null
	cut -d' ' -f2 "$new_manifest"
} | sha256sum | cut -d' ' -f1)
if [ "$(cat "$PATCH_STATE/sum" 2>/dev/null)" != "$patch_sum" ]; then
	# No set is whole in the tree until the new one is.
	rm -f "$PATCH_STATE/sum"
	if [ -f "$PATCH_STATE/files" ]; then
		while read -r f; do restore "$f"; done < "$PATCH_STATE/files"
	fi
	mkdir -p "$PATCH_STATE"
	: > "$PATCH_STATE/files"
	for p in "$ROOT"/patches/*.patch; do
		[ -f "$p" ] || continue
		git -C "$TREE" apply --allow-empty "${exclude[@]}" --numstat "$p" |
			cut -f3 >> "$PATCH_STATE/files"
		if ! git -C "$TREE" apply --allow-empty "${exclude[@]}" "$p"; then
			echo "install: $(basename "$p") does not apply" >&2
			rm -f "$PATCH_STATE/sum"
			exit 1
		fi
		echo "install: applied $(basename "$p")"
	done
	echo "$patch_sum" > "$PATCH_STATE/sum"
fi

copied=0
while read -r src dst; do
	if ! cmp -s "$ROOT/$src" "$TREE/$dst"; then
		install -D -m644 "$ROOT/$src" "$TREE/$dst"
		[ -x "$ROOT/$src" ] && chmod 755 "$TREE/$dst"
		copied=$((copied + 1))
	fi
done < "$new_manifest"
cp "$new_manifest" "$STATE/manifest"
echo "install: $copied file(s) updated in $TREE"
