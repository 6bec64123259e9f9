#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Unpack the programs the guest runs besides busybox (dash, gawk, lscpu)
# and busybox-static itself, for another Debian architecture than the
# host's, with the libraries they need: Debian 12's packages, fetched with
# a private apt state and unpacked into one directory, whose path is
# printed. Kept between runs; unpacked again when a package changes.
#
# Usage: guest-sysroot.sh DEBIAN_ARCH
set -euo pipefail

ARCH=$1
CACHE=${STACKMAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ftrace-stackmap}
DIR=$CACHE/guest-$ARCH
PROGRAMS=(busybox-static dash gawk util-linux)

# shellcheck source=scripts/apt-state.sh
. "$(dirname "$0")/apt-state.sh"
apt_state "$DIR/apt" "$ARCH" bookworm >&2

# The programs and all they depend on (their Pre-Depends too): virtual
# packages, in <>, are provided by real ones that are listed as well.
mapfile -t packages < <(apt-cache "${APT_OPTS[@]}" depends --recurse \
	--no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
	--no-enhances "${PROGRAMS[@]}" | grep '^[a-z0-9]' | sort -u)
if [ "${#packages[@]}" -eq 0 ]; then
	echo "guest-sysroot: no ${PROGRAMS[*]} for $ARCH in Debian 12" >&2
	exit 1
fi
# The packages' files name their versions: unpacked again when one
# changed.
sum=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions "${packages[@]}" |
      sed -n 's|^Filename: ||p' | sort | sha256sum | cut -d' ' -f1)
if [ "$(cat "$DIR/sysroot.sum" 2>/dev/null)" != "$sum" ]; then
	rm -rf "$DIR/debs" "$DIR/sysroot" "$DIR/sysroot.sum"
	mkdir -p "$DIR/debs" "$DIR/sysroot"
	(cd "$DIR/debs" && apt-get "${APT_OPTS[@]}" -qq download "${packages[@]}") >&2
	for deb in "$DIR"/debs/*.deb; do
		dpkg-deb -x "$deb" "$DIR/sysroot"
	done
	rm -rf "$DIR/debs"
	echo "$sum" > "$DIR/sysroot.sum"
fi
echo "$DIR/sysroot"
