#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: boot three times (the debug kernel four times) and count
# every test case.
#
# The three boots each collect the KUnit results printed at boot. The
# first runs ftracetest on our tests and on the upstream baseline. The
# second boots with the stackmap enabled on the kernel command line,
# checks what it recorded from the first events on, runs the baseline
# again with the option on, checks that the option stayed on through it
# and that the map still records, and runs the two longest of our tests.
# The third runs the tests of races with the vCPUs on host threads of
# their own. A kernel built with the tracers' startup tests boots once
# more, below. Meanwhile the host-side cargo tests run natively and
# under Miri, the series made for upstream goes through checkpatch, and
# the Rust through rustfmt and clippy (scripts/lint.sh).
# The last line is 'N passed, N failed, N skipped'; scripts/summarize.py
# also counts as a failed case a section short of its plan or of the
# tests it must run, a skipped case, a boot that failed or never
# reported, and a kernel splat in a console log.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:?}" "${TREE:?}" "${OBJ:?}"

BASELINE="test.d/00basic test.d/instances test.d/ftrace/func_stack_tracer.tc
	  test.d/ftrace/func-filter-stacktrace.tc test.d/trigger/trigger-stacktrace.tc"
# The first boot leaves the top map at its default size; the second
# tries the bad sizes, then one in range, which the top map takes; the
# third ends on a size out of range, then one that is not a number, so
# that the top map has the clamped size. The second's checks compare
# the events recorded from boot with the map's counters: its trace
# clock is set from the start. Otherwise a guest that finds its TSC
# unstable, as it may on a loaded host, switches the clock to "global"
# at late init, which empties the buffer. And the buffer must hold every
# event from boot to those checks: on the debug kernel, whose KUnit run
# takes minutes, the default 1.4 MB per CPU lost some 7500 sched_switch
# events of a busy host's boot. An instance made later gets that size too.
PLAIN_BOOT=""
STACKMAP_BOOT="trace_options=stackmap,stacktrace ftrace_stackmap.bits=abc
	       ftrace_stackmap.bits=-99999999999 ftrace_stackmap.bits=19
	       ftrace_stackmap.bits=17
	       trace_event=sched:sched_switch trace_clock=global trace_buf_size=8M
	       reserve_mem=2M:4096:trace trace_instance=persistent@trace"
# Our tests run on the first boot but for the two longest, which run on
# the second after its checks (section stackmap-late), so that the boots
# end about together. Each test starts with the options it reads turned
# off (the second boot sets two of them) and puts them back at its end.
STACKMAP_LATE="test.d/stackmap/stackmap-full.tc test.d/stackmap/stackmap-reset.tc"
# Under TCG the two boots above run each guest on one host thread, whose
# vCPUs take turns: their races interleave, but never run at once. A third
# boot gives each vCPU a thread of its own (TCG_THREAD=multi), for the
# KUnit cases and the tests of races. None of those switches tracers, which
# patches the entries of thousands of functions, and under multi-threaded
# TCG has run into a stale int3 (scripts/qemu-run.sh). The events they
# enable patch a few sites the same way: that has not failed in the
# twelve runs made of this boot, some beside two busy loops.
STACKMAP_PARALLEL="test.d/stackmap/stackmap-reset.tc
		   test.d/stackmap/stackmap-cookies-resolve.tc
		   test.d/stackmap/stackmap-bits-replace.tc
		   test.d/stackmap/stackmap-nmi.tc"

# Every section must report every case of its plan, none skipped: this
# repo always installs the stackmap tests and the KUnit suite.
first=(kunit plain stackmap baseline)
second=(kunit boot baseline-stackmap boot-end stackmap-late)
third=(kunit parallel stackmap-parallel)
summary_args=(--kunit-suite ftrace_stackmap --kunit-suite trace_stackmap)
for section in plain stackmap baseline boot baseline-stackmap boot-end stackmap-late \
	       parallel stackmap-parallel; do
	summary_args+=(--section "$section")
done
for section in kunit plain stackmap baseline boot baseline-stackmap boot-end \
	       stackmap-late parallel stackmap-parallel host miri panic-free series \
	       series-refresh lint; do
	summary_args+=(--must-run "$section")
done

# ftracetest runs each test once, and once more in an instance when its
# flags say so (the same match as ftracetest's): the cases a section
# reports, so that a test missing from the initramfs fails the check.
ftrace_cases() { # test path...
	(
		cd "$TREE/tools/testing/selftests/ftrace" &&
		files=$(find "$@" -name '*.tc') &&
		echo $(($(echo "$files" | wc -l) +
			$(grep -l '^#[ \t]*flags:.*instance' $files | wc -l)))
	)
}
STACKMAP_TESTS=$(cd "$TREE/tools/testing/selftests/ftrace" &&
		 ls test.d/stackmap/*.tc | grep -vxF "$(printf '%s\n' $STACKMAP_LATE)")
summary_args+=(--cases "stackmap=$(ftrace_cases $STACKMAP_TESTS)")
summary_args+=(--cases "stackmap-late=$(ftrace_cases $STACKMAP_LATE)")
summary_args+=(--cases "stackmap-parallel=$(ftrace_cases $STACKMAP_PARALLEL)")
for section in baseline baseline-stackmap; do
	summary_args+=(--cases "$section=$(ftrace_cases $BASELINE)")
done

# A kernel with the tracers' startup tests (configs/debug.config) boots a
# fourth time, with trace_options=stackmap alone: the tests check the type
# of each entry they record, and on that boot the wakeup tracers' stacks
# are cookies. The stackmap boot's trace_event= turns the tests off.
boots=(plain stackmap parallel)
startup=false
PARALLEL_BOOT="ftrace_stackmap.bits=19 ftrace_stackmap.bits=abc"
if grep -q '^CONFIG_FTRACE_STARTUP_TEST=y' "$OBJ/.config"; then
	startup=true
	# The startup tests switch tracers: not on the third boot. A tracer
	# set on the command line turns them off.
	PARALLEL_BOOT+=" ftrace=nop"
	boots+=(startup)
	summary_args+=(--section startup --must-run startup)
fi

# Host-side crates: each test case counts; a crate whose tests do not
# build or run to the end counts as one failed case. They run twice: built
# as the kernel builds Rust, racing on the CPUs, and under Miri, which
# checks every memory access of a smaller run for undefined behaviour and
# data races (MIRIFLAGS=-Zmiri-tree-borrows, -Zmiri-seed=N, ... pass on).
CRATES="host/Cargo.toml"
cargo_tests() { # out command...
	local out=$1 manifest
	shift
	rm -f "$out"
	for manifest in $CRATES; do
		echo "check: $* $manifest"
		if ! "$@" --manifest-path "$ROOT/$manifest" >> "$out" 2>&1; then
			echo "test $(dirname "$manifest") ... FAILED" >> "$out"
		fi
	done
}

# What runs on the host needs no guest: it runs while the guests boot.
# A test that hangs (a thread waiting on one that failed) fails when its
# time is up: 10 minutes natively, then 15 under Miri, which runs them
# in about 3.
host_checks() {
	CARGO_TARGET_DIR=$BUILD/cargo cargo_tests "$BUILD/cargo-test.out" \
		timeout -k 10 600 cargo test --release --locked
	CARGO_TARGET_DIR=$BUILD/miri cargo_tests "$BUILD/miri-test.out" \
		timeout -k 10 900 cargo "+${MIRI_TOOLCHAIN:?}" miri test --locked

	# No Rust panic, which is a BUG(), is reachable from the recording
	# path, and neither is a lock or a sleep; but for the checks of
	# undefined behaviour of a kernel with Rust debug assertions, and
	# KASAN's checks of a kernel built with it.
	local checks=()
	grep -qx 'CONFIG_RUST_DEBUG_ASSERTIONS=y' "$OBJ/.config" && checks+=(--ub-checks)
	grep -qx 'CONFIG_KASAN=y' "$OBJ/.config" && checks+=(--kasan)
	echo "check: scripts/panic-free.py${checks:+ ${checks[*]}}"
	python3 "$ROOT/scripts/panic-free.py" "${checks[@]}" "llvm-objdump${LLVM_SUFFIX:?}" \
		"$OBJ/vmlinux" ftrace_stackmap_lookup > "$BUILD/panic-free.out" 2>&1

	# The series to send upstream: each file in one commit, checkpatch
	# clean.
	echo "check: scripts/series.sh"
	"$ROOT/scripts/series.sh" "$TREE" "$BUILD/series" > "$BUILD/series.out" 2>&1
	# How `make series-refresh` splits a change between a patch's diff
	# and the commits before it.
	echo "check: scripts/series-refresh.py --self-test"
	python3 "$ROOT/scripts/series-refresh.py" --self-test > "$BUILD/series-refresh.out" 2>&1
	# rustfmt over the kernel's Rust and the host crate, clippy over the
	# host crate.
	echo "check: scripts/lint.sh"
	"$ROOT/scripts/lint.sh" > "$BUILD/lint.out" 2>&1
}
summary_args+=(--cargo "host=$BUILD/cargo-test.out" --cargo "miri=$BUILD/miri-test.out"
	       --tap "panic-free=$BUILD/panic-free.out" --tap "series=$BUILD/series.out"
	       --tap "series-refresh=$BUILD/series-refresh.out" --tap "lint=$BUILD/lint.out")

guest_env="STACKMAP_TESTS='$(echo $STACKMAP_TESTS)' STACKMAP_LATE_TESTS='$STACKMAP_LATE' \
	   STACKMAP_PARALLEL_TESTS='$(echo $STACKMAP_PARALLEL)' BASELINE_TESTS='$(echo $BASELINE)'"
# The boots run side by side: much of their time is guest sleeps.
boot() { # name append section...
	local name=$1 append=$2
	shift 2
	rm -f "$BUILD/check-$name.log"
	echo "check: boot '$name': $*"
	CMD="$guest_env sh /check.sh $*" APPEND="$(echo $append)" \
		TIMEOUT=${TIMEOUT:-900} LOG=$BUILD/check-$name.log \
		"$ROOT/scripts/qemu-run.sh" > "$BUILD/check-$name.out" 2>&1
}

declare -A pids
host_checks &
host_pid=$!
boot plain "$PLAIN_BOOT" "${first[@]}" &
pids[plain]=$!
boot stackmap "$STACKMAP_BOOT" "${second[@]}" &
pids[stackmap]=$!
TCG_THREAD=multi boot parallel "$PARALLEL_BOOT" "${third[@]}" &
pids[parallel]=$!
if $startup; then
	boot startup "trace_options=stackmap" startup &
	pids[startup]=$!
fi

# A boot that failed or never reported counts as a failed case, and so
# does a kernel splat in its log: summarize.py reads them from the logs.
logs=()
for name in "${boots[@]}"; do
	log=$BUILD/check-$name.log
	wait "${pids[$name]}"
	status=$?
	if ! grep -q '^@@STACKMAP-GUEST-EXIT@@' "$log" 2>/dev/null; then
		tail -n 30 "$BUILD/check-$name.out"
		echo "check: boot '$name' never reported (see $log)"
	elif [ "$status" -ne 0 ]; then
		echo "check: boot '$name' exited $status (see $log)"
	fi
	logs+=("$log")
	summary_args+=(--exit-status "$log=$status")
done

wait $host_pid

python3 "$ROOT/scripts/summarize.py" "${logs[@]}" "${summary_args[@]}"
