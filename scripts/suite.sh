#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make suite`: the whole upstream ftrace selftest suite, on two boots side
# by side that both record a stack on every event (options/stacktrace from
# boot): one records the stacks in full, the other through the stackmap
# (options/stackmap as well). Every selftest must end the same way on both;
# the upstream cases that fail for options this kernel lacks fail on both.
#
# SUITE_TESTS names other test.d/ paths than the whole suite.
#
# Prints TAP from scripts/compare.py, one case per selftest, and exits
# non-zero if an outcome differs, a boot did not report, or a console shows
# a kernel splat. The consoles are in build/suite-*.log.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:?}"

# After the suite, the guest prints whether the option is still set and
# what the map counted since the last reset (our own selftests reset it;
# the upstream trigger and tracer tests run after them). The guest expands
# it.
# shellcheck disable=SC2016
MAP_STATE='cd /sys/kernel/tracing && echo "suite: options/stackmap" \
	$(cat options/stackmap) $(grep -E "^(hits|inserts):" stack_map_stat)'

run() { # name append
	rm -f "$BUILD/suite-$1.log"
	CMD="BASELINE_TESTS='${SUITE_TESTS:-test.d}' sh /check.sh baseline-suite; s=\$?; $MAP_STATE; exit \$s" \
		APPEND="$2" \
		TIMEOUT=${TIMEOUT:-1800} LOG=$BUILD/suite-$1.log \
		"$ROOT/scripts/qemu-run.sh" > "$BUILD/suite-$1.out" 2>&1
}

echo "suite: two boots, about 8 minutes"
run full "trace_options=stacktrace" &
run stackmap "trace_options=stackmap,stacktrace" &
# The guests' own status is that of the upstream suite, which has failures
# on this kernel: compare.py reads the outcomes instead.
wait
python3 "$ROOT/scripts/compare.py" baseline-suite \
	"$BUILD/suite-full.log" "$BUILD/suite-stackmap.log"
status=$?

# Outcomes that agree show nothing unless the map was in use.
state=$(grep -a '^suite: options/stackmap' "$BUILD/suite-stackmap.log" | tail -n 1)
echo "# stackmap boot: ${state#suite: }"
if ! [[ $state =~ options/stackmap\ 1\ hits:\ [0-9]+\ inserts:\ [1-9] ]]; then
	echo "suite: the stackmap boot did not end with the option set and stacks stored"
	status=1
fi
exit $status
