#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: boot once, collect the KUnit results printed at boot, run
# ftracetest on our tests and the upstream baseline, run host-side cargo
# tests if any, and end with 'N passed, N failed, N skipped'.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:?}" "${TREE:?}" "${OBJ:?}"

BASELINE="test.d/00basic test.d/instances test.d/ftrace/func_stack_tracer.tc
	  test.d/ftrace/func-filter-stacktrace.tc test.d/trigger/trigger-stacktrace.tc"
OURS=
summary_args=(--section baseline)
if [ -d "$TREE/tools/testing/selftests/ftrace/test.d/stackmap" ]; then
	OURS=test.d/stackmap
	summary_args+=(--section stackmap)
fi
if grep -q '^CONFIG_FTRACE_STACKMAP_KUNIT_TEST=y' "$OBJ/.config"; then
	summary_args+=(--kunit-suite ftrace_stackmap)
fi

log=$BUILD/check-console.log
CMD="STACKMAP_TESTS='$OURS' BASELINE_TESTS='$(echo $BASELINE)' sh /check.sh" \
	TIMEOUT=${TIMEOUT:-900} LOG=$log "$ROOT/scripts/qemu-run.sh" > "$BUILD/check-run.out" 2>&1
guest=$?
if ! grep -q '^@@STACKMAP-GUEST-EXIT@@' "$log" 2>/dev/null; then
	cat "$BUILD/check-run.out"
	echo "check: the guest never reported (see $log)"
	echo "0 passed, 1 failed"
	exit 1
fi

cargo_out=
for manifest in $(cd "$ROOT" && git ls-files -co --exclude-standard '*Cargo.toml'); do
	cargo_out=$BUILD/cargo-test.out
	(cd "$ROOT/$(dirname "$manifest")" && cargo test --quiet 2>&1) >> "$cargo_out"
done

python3 "$ROOT/scripts/summarize.py" "$log" "${summary_args[@]}" \
	${cargo_out:+--cargo "$cargo_out"}
rc=$?
[ "$guest" -eq 0 ] || [ "$rc" -ne 0 ] || echo "check: guest command exited $guest"
exit $rc
