#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the kernel under QEMU with the base initramfs plus one command, and
# exit with the guest command's status.  A guest that panics, hangs past
# TIMEOUT or never prints the exit marker fails, showing its last lines;
# one that hangs also shows where its CPUs were (LOG.regs: all registers).
#
# Environment: QEMU_SYSTEM QEMU_MACHINE GUEST_CONSOLE (from arch/*/arch.mk),
# KERNEL, INITRAMFS, BUILD, and optionally CMD (empty: interactive shell),
# TIMEOUT (seconds), APPEND (extra kernel command line), KERNEL_APPEND
# (the same, for every boot of the kernel: make sets it), LOG (console copy),
# OBJ and LLVM_SUFFIX (for the symbols of a hung guest's CPUs),
# TCG_THREAD (single or multi), ICOUNT (a shift: under TCG, the guest
# clock counts executed instructions, 2^shift ns each, instead of host
# time; make bench sets 0).
set -uo pipefail

: "${KERNEL:?}" "${INITRAMFS:?}" "${BUILD:?}" "${QEMU_SYSTEM:?}"
TIMEOUT=${TIMEOUT:-300}
LOG=${LOG:-$BUILD/console.log}
MARKER=@@STACKMAP-GUEST-EXIT@@
CMD=${CMD-}
APPEND=${APPEND-}
INTERACTIVE=${INTERACTIVE:-0}

run_dir=$(mktemp -d)
trap 'rm -rf "$run_dir"' EXIT

# initrd COMMAND OUT: the base initramfs plus the per-boot part, the
# command to run (interactive: a shell).  The kernel unpacks concatenated
# cpio archives in order, so that part is appended.
initrd() {
	rm -rf "$run_dir/root"
	mkdir -p "$run_dir/root"
	if [ "$INTERACTIVE" = 1 ]; then
		touch "$run_dir/root/run-interactive"
		cp "$(dirname "$0")/../guest/banner" "$run_dir/root/run-banner"
	else
		printf '%s\n' "$1" > "$run_dir/root/run-cmd"
	fi
	(cd "$run_dir/root" && find . | cpio -o -H newc --quiet -R 0:0) > "$run_dir/run.cpio"
	cat "$INITRAMFS" "$run_dir/run.cpio" > "$2"
}

initrd "$CMD" "$run_dir/initrd"

# The machine every boot has.
machine=(-smp 2 -m 1G -nic none -no-reboot -display none -kernel "$KERNEL")

# timeout(1) runs QEMU in the foreground: in a process group of its own,
# QEMU would be stopped (SIGTTOU) as it sets up the terminal of an
# interactive guest, and Ctrl-C would not reach it.
qemu() { # accel timeout
	local accel=$1 limit=$2
	shift 2
	timeout --foreground -k 5 "$limit" "$QEMU_SYSTEM" $QEMU_MACHINE -accel "$accel" \
		"${machine[@]}" -initrd "$run_dir/initrd" \
		-append "console=$GUEST_CONSOLE panic=-1 oops=panic ${KERNEL_APPEND-} $APPEND" \
		"${icount[@]}" "$@"
}

# KVM hangs the guest on some hosts: use it only once a boot under it has
# been seen to work, and remember the verdict.  A host whose KVM is PVM
# (the kvm_pvm module, with neither kvm_intel nor kvm_amd) runs only
# kernels built as PVM guests, which mainline has no support for: the
# probe would wait out its timeout there, so it is not tried.  A guest of
# another architecture than the host's always runs under TCG.
accel_file=$BUILD/accel
if [ "${QEMU_SYSTEM##*-}" != "$(uname -m)" ]; then
	accel_file=$run_dir/accel
	echo tcg > "$accel_file"
fi
if [ ! -s "$accel_file" ]; then
	accel=tcg
	why='unusable or hangs'
	if [ -d /sys/module/kvm_pvm ] && [ ! -d /sys/module/kvm_intel ] &&
	   [ ! -d /sys/module/kvm_amd ]; then
		why='PVM, which runs only PVM guests'
	elif [ -w /dev/kvm ]; then
		INTERACTIVE=0 initrd true "$run_dir/probe"
		# grep reads to the end: one that quit at the marker could kill
		# tr with SIGPIPE, and pipefail would fail the probe.
		if timeout --foreground -k 5 30 "$QEMU_SYSTEM" $QEMU_MACHINE -accel kvm \
			"${machine[@]}" -initrd "$run_dir/probe" -serial stdio -monitor none \
			-append "console=$GUEST_CONSOLE panic=-1 quiet" </dev/null 2>/dev/null |
			tr -d '\r' | grep "^$MARKER 0" >/dev/null; then
			accel=kvm
		fi
	fi
	# Written whole: the two `make check` boots may probe at once.
	echo "$accel" > "$accel_file.$$"
	mv -f "$accel_file.$$" "$accel_file"
	[ "$accel" = kvm ] && why=works
	echo "qemu: using $accel (KVM $why)" >&2
fi
accel=$(cat "$accel_file")
# Multi-threaded TCG can still run a stale int3 after ftrace patched its
# text (an int3 Oops at a function entry while tracers switch, seen here
# with QEMU 10.0 under load): one host thread per guest by default, which
# also lets the `make check` boots share the cores. TCG_THREAD=multi
# gives each vCPU its own thread.
[ "$accel" = tcg ] && accel=tcg,thread=${TCG_THREAD:-single}
icount=()
if [ -n "${ICOUNT-}" ] && [ "${accel%%,*}" = tcg ]; then
	icount=(-icount "shift=$ICOUNT,sleep=off")
fi
# Under TCG without icount, an x86 guest's TSC is the host's. The guest
# measures its rate against the PIT and the HPET at boot, within a few
# tens of milliseconds that a busy host can take the vCPU away from: a
# debug boot beside three others took its 2596 MHz TSC for 64 MHz ("PIT
# calibration deviates from HPET"), and its clock then ran 40 times too
# fast, timing out KUnit cases. When the host's kernel logged the rate,
# the guest starts from it; its kernel still refines it against the HPET
# over a second, once it boots.
if [ "${accel%%,*}" = tcg ] && [ ${#icount[@]} -eq 0 ] &&
   [ "$QEMU_SYSTEM" = qemu-system-x86_64 ] && [ "$(uname -m)" = x86_64 ]; then
	tsc_khz=$(dmesg 2>/dev/null |
		sed -n 's/.*tsc: \(Detected\|Refined TSC clocksource calibration:\) \([0-9]*\)\.\([0-9]\{3\}\) MHz.*/\2\3/p' |
		tail -1)
	[ -n "$tsc_khz" ] && APPEND="tsc_early_khz=$tsc_khz $APPEND"
fi

if [ "$INTERACTIVE" = 1 ]; then
	echo "qemu: interactive guest; 'reboot -f' or Ctrl-A X ends it" >&2
	qemu "$accel" 100000 -serial mon:stdio -monitor none
	exit $?
fi

# A guest still running at TIMEOUT is asked through QEMU's monitor where
# its CPUs are, then stopped (scripts/qemu-hang.py); timeout(1) stops a
# QEMU whose monitor does not answer.
rm -f "$LOG.regs"
symbols=()
nm=llvm-nm${LLVM_SUFFIX-}
if [ -n "${OBJ-}" ] && [ -f "$OBJ/vmlinux" ] && command -v "$nm" >/dev/null; then
	symbols=("$OBJ/vmlinux" "$nm")
fi
python3 "$(dirname "$0")/qemu-hang.py" "$run_dir/qemu.pid" "$run_dir/monitor" \
	"$TIMEOUT" "$LOG.regs" "${symbols[@]}" &
watchdog=$!

start=$(date +%s)
qemu "$accel" "$((TIMEOUT + 60))" -chardev stdio,id=con,signal=off -serial chardev:con \
	-monitor "unix:$run_dir/monitor,server=on,wait=off" -pidfile "$run_dir/qemu.pid" \
	</dev/null 2>&1 | tr -d '\r' | tee "$LOG"
rc=${PIPESTATUS[0]}
elapsed=$(( $(date +%s) - start ))
# The watchdog wrote the registers before it stopped QEMU; if QEMU ended
# by itself, it is polling.
kill "$watchdog" 2>/dev/null
wait "$watchdog" 2>/dev/null

status=$(sed -n "s/^$MARKER \([0-9]*\)$/\1/p" "$LOG" | tail -1)
if [ -n "$status" ]; then
	exit "$status"
fi

echo >&2
if [ -s "$LOG.regs" ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "qemu: guest hung: no exit after ${elapsed}s (TIMEOUT=$TIMEOUT)" >&2
elif grep -q 'Kernel panic' "$LOG"; then
	echo "qemu: guest panicked after ${elapsed}s:" >&2
	grep -m1 -A3 'Kernel panic' "$LOG" >&2
else
	echo "qemu: guest ended without reporting (qemu exit $rc) after ${elapsed}s" >&2
fi
echo "---- last console lines ($LOG) ----" >&2
tail -n 25 "$LOG" >&2
if [ -s "$LOG.regs" ]; then
	echo "---- where the guest's CPUs were (all registers: $LOG.regs) ----" >&2
	sed '/^$/q' "$LOG.regs" >&2
fi
exit 1
