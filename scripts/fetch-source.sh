#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fetch the newest linux-source-7.2 .deb from Debian (sid, forky or
# trixie-backports) with a private apt state, so that the system's sources
# stay untouched, and unpack it into $1 as a pristine git baseline.
#
# Usage: fetch-source.sh BUILD_LINUX_DIR
set -euo pipefail

TREE=$1
CACHE=${STACKMAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ftrace-stackmap}
SERIES=7.2
PKG=linux-source-$SERIES

if [ -f "$TREE/.stackmap-baseline" ]; then
	echo "source: $(cat "$TREE/.stackmap-baseline") in $TREE"
	exit 0
fi

mkdir -p "$CACHE/debs"
# shellcheck source=scripts/apt-state.sh
. "$(dirname "$0")/apt-state.sh"
apt_state "$CACHE/apt" amd64 sid forky trixie-backports

version=$(apt-cache "${APT_OPTS[@]}" madison "$PKG" 2>/dev/null |
	  awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | sort -V | tail -1)
if [ -z "$version" ]; then
	offered=$(apt-cache "${APT_OPTS[@]}" pkgnames linux-source- 2>/dev/null |
		  sort -V | tr '\n' ' ')
	echo "source: no $PKG in sid, forky or trixie-backports;" \
	     "offered: ${offered:-none}" >&2
	exit 1
fi

deb=$CACHE/debs/${PKG}_${version}_all.deb
if [ ! -s "$deb" ]; then
	(cd "$CACHE/debs" && apt-get "${APT_OPTS[@]}" -qq download "$PKG=$version")
	mv "$CACHE/debs/${PKG}_$(echo "$version" | sed 's/:/%3a/')_all.deb" "$deb" 2>/dev/null || true
fi
echo "source: $PKG $version"

rm -rf "$TREE.tmp"
mkdir -p "$TREE.tmp"
dpkg-deb --fsys-tarfile "$deb" |
	tar -xO "./usr/src/$PKG.tar.xz" |
	tar -xJ -C "$TREE.tmp" --strip-components=1
(
	cd "$TREE.tmp"
	git init -q
	# Debian's .gitignore ignores the whole top level: force.
	git add -A -f
	git -c user.name=stackmap -c user.email=stackmap@localhost \
		commit -q -m "$PKG $version (pristine)"
	git tag pristine
)
echo "$PKG $version" > "$TREE.tmp/.stackmap-baseline"
rm -rf "$TREE"
mv "$TREE.tmp" "$TREE"
echo "source: unpacked $PKG $version in $TREE"
