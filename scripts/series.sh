#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make series`: the patch series to send upstream, in OUT_DIR.
#
# Each patches/*.patch becomes one commit on top of the pristine tree: its
# message, its diff, and the installed files that patches/series assigns
# to it, as they were before the later patches' diffs of them.  The
# commits are built in a private index (the tree's working files are not
# touched), kept as the branch SERIES_BRANCH of the kernel tree, and
# written with `git format-patch --signoff --cover-letter`, signed off by
# git's user.name and user.email; the cover letter's text is
# patches/cover-letter.  Then every patch goes through the tree's
# checkpatch.pl --strict.
#
# Prints TAP: one case for the assignment of files to commits, one for
# the patches' changes to them, one per patch for checkpatch.  Exits
# non-zero if a case failed.
#
# Usage: series.sh KERNEL_TREE OUT_DIR
set -euo pipefail

TREE=$(cd "$1" && pwd)
OUT=$2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MANIFEST=$TREE/.stackmap-installed/manifest
BRANCH=${SERIES_BRANCH:?}

# checkpatch types not acted on, and why:
# - FILE_PATH_CHANGES asks whether MAINTAINERS needs a new entry for a new
#   file; the new files fall under the TRACING, RUST and KERNEL SELFTEST
#   entries, and patch 2 lists its files in the per-CPU allocator's
#   (get_maintainer.pl below lists who they reach).
IGNORE=FILE_PATH_CHANGES
# kernel/trace/trace_entries.h lays out its entries in macros whose
# fields stand in columns, '__field(	u64,	cookie	)', which checkpatch
# reads as bad spacing, an open-ended line and misaligned parentheses;
# the new entry follows the file's style, so checkpatch's reports of those
# three types on that file are dropped, and only those.
HOUSE_STYLE=kernel/trace/trace_entries.h
HOUSE_TYPES="SPACING OPEN_ENDED_LINE PARENTHESIS_ALIGNMENT"

name=$(git -C "$ROOT" config user.name || true)
email=$(git -C "$ROOT" config user.email || true)
if [ -z "$name" ] || [ -z "$email" ]; then
	name=${name:-$(id -un)} email=${email:-$(id -un)@localhost}
	unsigned="# signed off as $name <$email>: set git's user.name and user.email to sign as yourself"
fi
export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email
export GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GIT_INDEX_FILE=$tmp/index
git -C "$TREE" read-tree pristine

cases=0 failed=0
result() { # ok|not-ok description
	cases=$((cases + 1))
	if [ "$1" = ok ]; then
		echo "ok $cases $2"
	else
		failed=$((failed + 1))
		echo "not ok $cases $2"
	fi
}

patches=("$ROOT"/patches/*.patch)
echo "1..$((2 + ${#patches[@]}))"

# Each installed file goes to the commit of the patches/series line that
# names it or, failing that, the closest directory above it. A file git
# does not know (a scratch copy, a .orig) is installed too, but goes to
# no commit: it would be sent upstream unseen.
problems=()
while read -r src dst; do
	if ! env -u GIT_INDEX_FILE git -C "$ROOT" ls-files --error-unmatch -- "$src" \
		> /dev/null 2>&1; then
		problems+=("$src: not in git; add it, or remove it")
		continue
	fi
	owners=$(awk -v f="$dst" '
		/^#/ || NF != 2 { next }
		$2 == f || (substr($2, length($2)) == "/" && index(f, $2) == 1) {
			if (length($2) > best) { best = length($2); owners = "" }
			if (length($2) == best) owners = owners $1 "\n"
		}
		END { printf "%s", owners }
	' "$ROOT/patches/series")
	if [ "$(echo "$owners" | grep -c .)" -ne 1 ]; then
		problems+=("$dst: named by ${owners:-no} line(s) of patches/series")
		continue
	fi
	if ! compgen -G "$ROOT/patches/$owners-*.patch" > /dev/null; then
		problems+=("$dst: patches/series names $owners, which is no patch")
		continue
	fi
	echo "$dst $src" >> "$tmp/files-$owners"
done < "$MANIFEST"
if [ ${#problems[@]} -eq 0 ]; then
	result ok "every installed file belongs to one commit"
else
	result not-ok "every installed file belongs to one commit"
	printf '# %s\n' "${problems[@]}"
fi

# A later patch may change a file an earlier commit adds: declare the
# module it brings, export its entry points.  The project's file is the
# file as the last patch leaves it; the commit that adds it gets it
# without the later patches' changes, undone from the last patch back.
stage=$tmp/stage
include=()
while read -r src dst; do
	install -D -m644 "$ROOT/$src" "$stage/$dst"
	include+=(--include="$dst")
done < "$MANIFEST"
problems=()
for ((i = ${#patches[@]} - 1; i >= 0; i--)); do
	if ! report=$(cd "$stage" &&
		      git apply -R --allow-empty "${include[@]}" "${patches[i]}" 2>&1); then
		problems+=("$(basename "${patches[i]}"): its changes to installed files do not undo:")
		problems+=("$report")
	fi
done
if [ ${#problems[@]} -eq 0 ]; then
	result ok "the patches' changes to installed files apply to them"
else
	result not-ok "the patches' changes to installed files apply to them"
	printf '%s\n' "${problems[@]}" "make series-refresh writes them again" | sed 's/^/# /'
fi

# The commits.
parent=$(git -C "$TREE" rev-parse 'pristine^{commit}')
for p in "${patches[@]}"; do
	nr=$(basename "$p" | cut -d- -f1)
	git -C "$TREE" apply --allow-empty --cached "$p"
	if [ -f "$tmp/files-$nr" ]; then
		while read -r dst src; do
			mode=100644
			[ -x "$ROOT/$src" ] && mode=100755
			blob=$(git -C "$TREE" hash-object -w "$stage/$dst")
			git -C "$TREE" update-index --add --cacheinfo "$mode,$blob,$dst"
		done < "$tmp/files-$nr"
	fi
	# The message: the subject without its [PATCH n/m], then the body up
	# to the '---' that ends it.
	awk '
		/^Subject: / { sub(/^Subject: (\[[^]]*\] )?/, ""); print; print ""; body = 1; next }
		/^---$/ { exit }
		body && (n++ || $0 != "") { print }
	' "$p" | git stripspace > "$tmp/message"
	tree=$(git -C "$TREE" write-tree)
	parent=$(git -C "$TREE" commit-tree "$tree" -p "$parent" -F "$tmp/message")
done
git -C "$TREE" update-ref "refs/heads/$BRANCH" "$parent"

rm -rf "$OUT"
git -C "$TREE" format-patch -q --signoff --cover-letter --thread \
	-o "$OUT" pristine.."$BRANCH"
cover=$OUT/0000-cover-letter.patch
subject=$(sed -n 's/^Subject: //p;q' "$ROOT/patches/cover-letter")
awk -v subject="$subject" -v blurb="$ROOT/patches/cover-letter" '
	/\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, subject) }
	/^\*\*\* BLURB HERE \*\*\*$/ {
		while ((getline line < blurb) > 0)
			if (skip++ >= 2)
				print line
		next
	}
	{ print }
' "$cover" > "$tmp/cover" && mv "$tmp/cover" "$cover"

# checkpatch, from the tree's top so that it uses the tree's own lists.
# Its SPDX check runs scripts/spdxcheck.py, whose modules (python3-ply,
# python3-git) are Debian's: let it find Debian's python3 first.
for p in "$OUT"/0*.patch; do
	[ "$p" = "$cover" ] && continue
	report=$(cd "$TREE" && PATH=/usr/bin:$PATH perl scripts/checkpatch.pl \
		--strict --show-types --ignore "$IGNORE" "$p" 2>&1 || true)
	# It exits non-zero on house-style reports too: only its summary line
	# tells that it checked the patch at all. (A here-string, not a pipe:
	# grep -q quits at the first match, and under pipefail the echo killed
	# by SIGPIPE would fail the test.)
	if ! grep -q '^total: [0-9]* errors, [0-9]* warnings, .* lines checked$' <<< "$report"; then
		result not-ok "$(basename "$p"): checkpatch did not run"
		echo "$report" | tail -5 | sed 's/^/# /'
		continue
	fi
	# A report runs from its 'TYPE:' line to the next blank line and names
	# its file in a 'FILE:' line.
	complaints=$(echo "$report" | awk -v house="FILE: $HOUSE_STYLE:" -v types="$HOUSE_TYPES" '
		BEGIN { split(types, t); for (i in t) house_type[t[i]] }
		function flush() {
			if (block != "" && !(index(block, house) && type in house_type))
				print block "\n"
			block = ""
		}
		/^(ERROR|WARNING|CHECK):/ { flush(); block = $0; split($0, f, ":"); type = f[2]; next }
		/^$/ { flush(); next }
		block != "" { block = block "\n" $0 }
		END { flush() }
	')
	if [ -z "$complaints" ]; then
		result ok "$(basename "$p"): checkpatch --strict clean"
	else
		result not-ok "$(basename "$p"): checkpatch --strict"
		echo "$complaints" | sed 's/^/# /'
	fi
done

echo "${unsigned:-# signed off as $name <$email>}"
echo "# wrote $OUT: $(ls "$OUT" | wc -l) files, branch $BRANCH in $TREE"
(cd "$TREE" && perl scripts/get_maintainer.pl --no-git --no-git-fallback --no-rolestats \
	"$OUT"/0*.patch 2>/dev/null) | sed 's/^/# to: /'
[ "$failed" -eq 0 ]
