# SPDX-License-Identifier: GPL-2.0
#
# Run in the guest by `make check`: each argument names a section to run,
# printed behind markers that scripts/summarize.py reads. Exits 1 if a
# KUnit case failed, ftracetest failed (unsupported and unresolved cases
# included), a boot check failed, a section is unknown or kmemleak turned
# itself off. A skipped KUnit case is the summary's to judge, which fails
# it, and so is a leak kmemleak reports.
#
#   kunit              the KUnit results the kernel printed at boot
#   stackmap           ftracetest on our tests ($STACKMAP_TESTS)
#   stackmap-late      ftracetest on those run last ($STACKMAP_LATE_TESTS)
#   stackmap-parallel  ftracetest on the tests of races ($STACKMAP_PARALLEL_TESTS)
#   baseline[-NAME]    ftracetest on the upstream baseline ($BASELINE_TESTS)
#   boot               checks of a boot with the stackmap on the command line
#   boot-end           checks of that boot after the baseline ran on it
#   startup            checks of the tracers' startup tests on a boot with
#                      trace_options=stackmap alone
#   plain              checks of a boot with no stackmap parameter
#   parallel           checks of the boot of the tests of races, whose last
#                      ftrace_stackmap.bits is out of range
cd /selftests/ftrace || exit 1

FTRACETEST="./ftracetest -K --fail-unsupported --fail-unresolved"
# This guest is there to be squeezed: stackmap-enomem.tc fills its memory.
export STACKMAP_FILL_MEMORY=1
status=0

# Prints the end of each failed case's log (ftracetest keeps only those),
# after the section, where the summary does not read: first the lines the
# case printed itself, then the end of its whole log, commands traced. A
# case's cleanup traces many commands, which can leave the line that says
# why it stopped out of the second. The lines a case printed are its log
# less the commands traced, and less the lines of their arguments that
# follow them, which the tests indent with tabs (awk programs): dash
# traces arguments unquoted.
failed_logs() { # log-dir
	tab=`printf '\t'`
	for log in "$1"/*-log.*; do
		[ -f "$log" ] || continue
		echo "check.sh: what ${log##*/} printed:"
		grep -v -e '^+ ' -e "^$tab" "$log" | tail -n 20 | sed 's/^/|   /'
		echo "check.sh: end of ${log##*/}:"
		tail -n 40 "$log" | sed 's/^/|   /'
	done
}

# ftracetest_section NAME TEST...: ftracetest on the tests, as section NAME.
ftracetest_section() {
	echo "@@SECTION ftracetest $1@@"
	logs=/tmp/logs-$1
	shift
	$FTRACETEST -l $logs "$@" || status=1
}

# The tests' library: the options each test sets and puts back.
. test.d/stackmap/stackmap.lib

# top_settings: the settings of the top instance that the stackmap tests
# change, each of which a test puts back at its end (stackmap_test_begin
# and stackmap_test_end), and the size of the map in use, which a test
# that changed stack_map_bits puts back too.
top_settings() {
	for f in stack_map_bits $stackmap_options trace_clock; do
		echo "$f=`cat /sys/kernel/tracing/$f`"
	done
	grep '^capacity: ' /sys/kernel/tracing/stack_map_stat
}

# Options that change how the trace prints, which the tests set to their
# defaults and put back, as they do the trace clock: those of
# $stackmap_options that a machine may well have set otherwise.
OUTPUT_OPTIONS="options/irq-info options/print-parent options/latency-format
		options/userstacktrace options/fields"

# odd_output: sets OUTPUT_OPTIONS away from their defaults on the top
# instance, whose flags new instances take, as a machine's may be, and
# its clock to one whose timestamps are counts, not seconds.
odd_output() {
	for f in $OUTPUT_OPTIONS; do
		echo $((1 - `cat /sys/kernel/tracing/$f`)) > /sys/kernel/tracing/$f
	done
	echo counter > /sys/kernel/tracing/trace_clock
}

# stackmap_section NAME TEST...: ftracetest_section, then a check that
# the tests left the top instance as they found it.
stackmap_section() {
	before=`top_settings`
	ftracetest_section "$@"
	after=`top_settings`
	if [ "$before" != "$after" ]; then
		echo "check.sh: the $1 tests changed the top instance's settings:"
		echo "|   before: "$before
		echo "|   after:  "$after
		status=1
	fi
}

for section in "$@"; do
	case $section in
	kunit)
		echo "@@SECTION kunit@@"
		dmesg > /tmp/dmesg || status=1
		sed 's/^\[[ 0-9.]*\] //' /tmp/dmesg
		if grep -q '^\[[ 0-9.]*\] *not ok ' /tmp/dmesg; then
			status=1
		fi
		;;
	stackmap)
		stackmap_section $section $STACKMAP_TESTS
		;;
	stackmap-late)
		stackmap_section $section $STACKMAP_LATE_TESTS
		;;
	stackmap-parallel)
		# The last section of its boot: the tests find the top
		# instance printing otherwise than by default.
		odd_output
		stackmap_section $section $STACKMAP_PARALLEL_TESTS
		;;
	baseline*)
		ftracetest_section $section $BASELINE_TESTS
		;;
	boot)
		echo "@@SECTION ftracetest boot@@"
		sh /boot-check.sh || status=1
		;;
	boot-end)
		echo "@@SECTION ftracetest boot-end@@"
		sh /boot-check.sh end || status=1
		;;
	startup|plain|parallel)
		echo "@@SECTION ftracetest $section@@"
		sh /boot-check.sh $section || status=1
		;;
	*)
		echo "check.sh: unknown section '$section'"
		status=1
		continue
		;;
	esac
	echo "@@END@@"
	[ -n "${logs-}" ] && failed_logs $logs
	logs=
done

# A kernel with kmemleak (configs/debug.config): the objects the boot
# leaked, each printed as "unreferenced object 0x...", which the summary
# counts as a splat. kmemleak reports none younger than 5 seconds: the
# scan waits for those of the last test. A second scan drops an object
# the first saw unreferenced only while a pointer to it was in flight.
# The tasks' stacks are not scanned: no task is then in the middle of
# work that holds an object on its stack alone, and kmemleak scans the
# whole of each stack, whose words below its frames, left by earlier
# calls, could hide a leak.
KMEMLEAK=/sys/kernel/debug/kmemleak
if [ -e $KMEMLEAK ]; then
	sleep 6
	# kmemleak refuses a scan once it turned itself off (its own
	# allocations failed): the boot's leaks would go unseen.
	if echo stack=off > $KMEMLEAK && echo scan > $KMEMLEAK &&
	   echo scan > $KMEMLEAK; then
		cat $KMEMLEAK
	else
		echo "check.sh: kmemleak is off, this boot's leaks unseen"
		status=1
	fi
fi
exit $status
