#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Make the kernel .config: tinyconfig plus the fragments, regenerated only
# when a fragment or the installed Kconfig changed, or an option they set
# went missing (a Kconfig change seen by the kernel's own syncconfig).  Every option a
# fragment sets must survive olddefconfig, so a typo or a missing
# dependency fails here instead of in a test.
#
# Usage: config.sh KERNEL_TREE OBJ_DIR FRAGMENT...
set -euo pipefail

TREE=$1
OBJ=$2
shift 2
KMAKE=(make -s -C "$TREE" O="$OBJ" ARCH="$KERNEL_ARCH" LLVM="${LLVM_SUFFIX:?}")

# Options the fragments set, each as the last fragment that names it sets
# it (a later fragment may unset it), that the current .config lacks:
# "CONFIG_X=n" for one that it should not set.
missing_options() {
	awk -v config="$OBJ/.config" '
		/^CONFIG_[A-Za-z0-9_]+=/ { name = $0; sub(/=.*/, "", name); want[name] = $0 }
		/^# CONFIG_[A-Za-z0-9_]+ is not set$/ { want[$2] = "" }
		END {
			while ((getline line < config) > 0) {
				if (line !~ /^CONFIG_/)
					continue
				name = line
				sub(/=.*/, "", name)
				have[name] = line
			}
			for (name in want)
				if (want[name] != have[name])
					printf " %s", want[name] == "" ? name "=n" : want[name]
		}' "$@"
}

sum=$(cat "$@" "$TREE/kernel/trace/stackmap/Kconfig" 2>/dev/null | sha256sum | cut -d' ' -f1)
if [ -f "$OBJ/.config" ] && [ "$(cat "$OBJ/.config.fragments" 2>/dev/null)" = "$sum" ] &&
   [ -z "$(missing_options "$@")" ]; then
	exit 0
fi

mkdir -p "$OBJ"
"${KMAKE[@]}" tinyconfig >/dev/null
"$TREE/scripts/kconfig/merge_config.sh" -m -O "$OBJ" "$OBJ/.config" "$@" >/dev/null
"${KMAKE[@]}" olddefconfig >/dev/null

missing=$(missing_options "$@")
if [ -n "$missing" ]; then
	echo "config: not in the final .config (dependency missing?):$missing" >&2
	exit 1
fi
echo "$sum" > "$OBJ/.config.fragments"
echo "config: $OBJ/.config from tinyconfig +$(printf ' %s' "${@##*/}")"
