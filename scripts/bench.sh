#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: host/ times the map natively, one boot runs guest/bench.sh;
# scripts/bench.py turns their figures into a table and build/bench.json.
#
# The guest clock runs off QEMU's instruction count (ICOUNT=0: one
# instruction per nanosecond), so that the timings count the work the
# guest does and not what the shared host lets it run: they repeat to
# within about 1%. ICOUNT= (empty) times with the host clock.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:?}"
export ICOUNT=${ICOUNT-0}

# First, while the machine is otherwise idle, the map's hit against the
# copy it saves on this CPU: the table built natively (host/). Without
# auto-vectorization, as the kernel, which keeps its code off the SIMD
# registers, builds it: vectorized, the loop that compares a chain's
# records takes two frames per instruction, which the kernel's cannot.
# Every loop starts a 64-byte line, so that a mode's time does not hang on
# where the build puts its loops: the frame compare loop, inlined into two
# modes, took 4 ns more per stack of depth 32 in the one where it
# straddled two lines, 26.1 ns against 21.8. The kernel's sits in one.
host=$BUILD/bench-host.out
if ! RUSTFLAGS="${RUSTFLAGS-} -C no-vectorize-loops -C no-vectorize-slp \
	-C llvm-args=-align-loops=64" \
	CARGO_TARGET_DIR=$BUILD/cargo-bench cargo run --release --quiet --locked \
	--manifest-path "$ROOT/host/Cargo.toml" > "$host"; then
	echo "bench: the native timing failed"
	exit 1
fi

log=$BUILD/bench-console.log
CMD="sh /bench.sh" TIMEOUT=${TIMEOUT:-900} LOG=$log \
	"$ROOT/scripts/qemu-run.sh" > "$BUILD/bench.out" 2>&1
status=$?
if [ "$status" -ne 0 ]; then
	tail -n 30 "$BUILD/bench.out"
	echo "bench: the guest failed (see $log)"
	exit 1
fi
# The unit of what the guest timed: instructions only if QEMU counted them,
# which scripts/qemu-run.sh has it do under TCG alone.
accel=$(cat "$BUILD/accel")
unit=ns
if [ "$accel" = tcg ]; then
	[ "$ICOUNT" = 0 ] && unit=insns
	accel=$accel,thread=${TCG_THREAD:-single}
fi
# The table also goes to build/bench.txt; build/bench.json also says
# what was measured, and how.
BENCH_COMMIT=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown) \
BENCH_ACCEL=$accel BENCH_ICOUNT=$ICOUNT \
	python3 "$ROOT/scripts/bench.py" "$log" "$BUILD/bench.json" "$unit" "$host" |
	tee "$BUILD/bench.txt" || exit 1
echo "bench: ${SECONDS}s"
