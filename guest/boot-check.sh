# SPDX-License-Identifier: GPL-2.0
#
# Checks of a boot with
#   trace_options=stackmap,stacktrace ftrace_stackmap.bits=abc
#   ftrace_stackmap.bits=-99999999999 ftrace_stackmap.bits=19
#   ftrace_stackmap.bits=17 trace_event=sched:sched_switch trace_clock=global
#   reserve_mem=2M:4096:trace trace_instance=persistent@trace
# on the kernel command line, printed as KTAP test lines; with 'end', the
# checks after the upstream baseline ran on that boot; with 'startup', the
# checks of a boot with trace_options=stackmap alone; with 'plain', those
# of a boot with no stackmap parameter, before any test; with 'parallel',
# those of a boot with ftrace_stackmap.bits=19 ftrace_stackmap.bits=abc.
# Exits 1 if a check failed.
cd /sys/kernel/tracing || exit 1
TEST_DIR=/selftests/ftrace/test.d
. $TEST_DIR/stackmap/stackmap.lib

n=0
failed=0
check() { # description command...
	n=$((n + 1))
	desc=$1
	shift
	if "$@" > /tmp/check.out 2>&1; then
		echo "ok $n $desc"
	else
		sed 's/^/# /' /tmp/check.out
		echo "not ok $n $desc"
		failed=$((failed + 1))
	fi
}

# finish: trace on again with the output options the tests expect; fails
# unless every check of the plan ran and passed.
finish() {
	echo 0 > options/sym-offset
	echo 1 > tracing_on
	test "$n" -eq "$plan" && test "$failed" -eq 0
}

# What the boot recorded stays as it is while the checks read it, once
# the stacks in flight are stored and counted.
echo 0 > tracing_on
stackmap_settle
TMPDIR=/tmp

option_is_on() { test "`cat options/stackmap`" = 1; }
# top_map_has_bits N: stack_map_bits reads N, and the map, or the one the
# option would make, holds 2^N stacks.
top_map_has_bits() {
	echo "stack_map_bits: `cat stack_map_bits`, capacity: `stat_value capacity`"
	test "`cat stack_map_bits`" -eq $1 && test "`stat_value capacity`" -eq $((1 << $1))
}
# Each ftrace_stackmap.bits= is taken in turn, with a warning for each
# bad one: a value that is not a number is ignored; one out of range, even
# of an int's, is clamped to the nearest end of the range.
bad_bits_are_warned() {
	dmesg | grep 'ftrace_stackmap.bits=abc is not a number, ignored' &&
		dmesg | grep 'ftrace_stackmap.bits=-99999999999 out of range \[10, 18\], clamped to 10$' &&
		dmesg | grep 'ftrace_stackmap.bits=19 out of range \[10, 18\], clamped to 18$'
}
# The last one, 17, is in range: the top map takes it, unwarned.
last_bits_size_top_map() {
	! dmesg | grep -e 'bits=17 out of range' -e 'bits=17 is not a number' &&
		top_map_has_bits 17
}
# Only the top instance takes it: a new instance's map gets the default.
new_instance_has_default_bits() {
	mkdir instances/boot-bits || return 1
	bits=`cat instances/boot-bits/stack_map_bits`
	rmdir instances/boot-bits
	echo "a new instance's stack_map_bits: $bits"
	test "$bits" -eq 14
}
first_stack_is_cookie() {
	# The first stack is the oldest one only if none was overwritten.
	if buffer_overran; then
		return 1
	fi
	first=`grep -m1 '<stack' trace`
	echo "first stack event: $first"
	case "$first" in
	*"<stack_id "*" gen 1>") return 0;;
	esac
	return 1
}
persistent_refuses() {
	write_fails instances/persistent/options/stackmap 1 "Invalid argument" &&
		test "`cat instances/persistent/options/stackmap`" = 0 &&
		! ls instances/persistent/stack_map* 2> /dev/null
}
# nothing_lost [FALLBACKS]: every stack the map counted as recorded in full
# since it counted FALLBACKS (0: since it was made) is in the trace.
nothing_lost() {
	test "`count '<stack trace>' trace`" -eq $((`stat_fallbacks` - ${1:-0}))
}
# The stacks the map gave a cookie.
cookies_given() {
	echo $((`stat_value hits` + `stat_value inserts`))
}
# Each of them is in the trace, where it resolves (no reset came after
# it, so none is stale), and prints the frames of its stack_map record.
every_cookie_resolves() {
	if buffer_overran; then
		return 1
	fi
	echo 1 > options/sym-offset
	cat trace > $TMPDIR/boot-trace
	resolved=`count '<stack_id [0-9]+ gen [0-9]+>$' $TMPDIR/boot-trace`
	stale=`count ' stale>$' $TMPDIR/boot-trace`
	echo "cookies given: `cookies_given`; in the trace: $resolved resolved, $stale stale"
	test "$stale" -eq 0 && test "$resolved" -eq "`cookies_given`" &&
		cookies_print_their_records $TMPDIR/boot-trace
}

# After the baseline: the option it ran with stayed on, its stacks went
# through the map, and the map still works after its tracer switches,
# buffer resizes, snapshots and instances.
baseline_went_through_map() {
	echo "hits + inserts: `cat /tmp/boot-cookies` after the boot, `cookies_given` now"
	test "`cookies_given`" -gt "`cat /tmp/boot-cookies`"
}
stack_after_baseline_is_cookie() {
	echo nop > current_tracer
	echo > trace
	# The baseline's last test, trigger-stacktrace.tc, turns it off.
	echo 1 > options/stacktrace
	fallbacks=`stat_fallbacks`
	echo 1 > events/sched/sched_switch/enable
	echo 1 > tracing_on
	stackmap_workload
	echo 0 > tracing_on
	echo 0 > events/sched/sched_switch/enable
	cookies_print_their_records && nothing_lost $fallbacks
}
# The tracers' startup tests (kernels with FTRACE_STARTUP_TEST) run only
# on a boot whose command line turns on no tracer or event: the startup
# boot sets trace_options=stackmap alone. They check the type of each entry
# they recorded, and the wakeup tracers record a stack at each wakeup.
startup_stacks_went_through_map() {
	echo "inserts: `stat_value inserts`, hits: `stat_value hits`"
	test "`stat_value inserts`" -gt 0
}
# A test's PASSED ends its "Testing tracer" line, or, when other messages
# came in between (an RCU callback, the deadline scheduler's), is a line
# of its own after them.
startup_tests_passed() {
	dmesg | grep -e 'Testing tracer' -e '] PASSED$' -e FAILED
	dmesg | awk '/Testing/ { testing = /Testing tracer wakeup:/ }
		     testing && /PASSED$/ { passed = 1 }
		     END { exit !passed }' &&
		! dmesg | grep -q FAILED
}
# Without the option on the command line, the top instance gets no map
# until the option is set: its stack_map_stat shows the size it would
# have, and no memory; its dumps are empty (stack_map_bin: only the
# header, whose generation and nr_stacks are its 4th and 5th words), and
# a reset does nothing and succeeds.
no_map_at_boot() {
	test "`cat options/stackmap`" = 0 &&
		test "`stat_value generation`" -eq 0 &&
		test "`stat_value memory_bytes`" -eq 0 &&
		top_map_has_bits 14 &&
		test -z "`cat stack_map`" &&
		test "`wc -c < stack_map_bin`" -eq 24 &&
		set -- `od -A n -t u4 -N 24 stack_map_bin` &&
		echo "stack_map_bin header: $*" &&
		test "$4" = 0 && test "$5" = 0 &&
		echo 0 > stack_map &&
		test "`stat_value generation`" -eq 0 &&
		test "`stat_value memory_bytes`" -eq 0
}
# The map the option then makes has the default size.
first_map_has_default_bits() {
	echo 1 > options/stackmap
	top_map_has_bits 14 &&
		test "`stat_value generation`" -eq 1 &&
		test "`stat_value memory_bytes`" -gt 0
	ret=$?
	echo 0 > options/stackmap
	return $ret
}
if [ "${1-}" = plain ]; then
	plan=2
	echo "1..$plan"
	check "plain: no map at boot without the option" no_map_at_boot
	check "plain: the first map holds the default 2^14 stacks" first_map_has_default_bits
	finish
	exit
fi

# On its own, a value out of range sizes the top map, clamped; a later
# one that is not a number leaves it so.
clamped_bits_size_top_map() {
	dmesg | grep 'ftrace_stackmap.bits=19 out of range \[10, 18\], clamped to 18$' &&
		dmesg | grep 'ftrace_stackmap.bits=abc is not a number, ignored' &&
		top_map_has_bits 18
}
if [ "${1-}" = parallel ]; then
	plan=1
	echo "1..$plan"
	check "parallel: ftrace_stackmap.bits=19, clamped to 18, sizes the top map; abc after it is ignored" \
		clamped_bits_size_top_map
	finish
	exit
fi

if [ "${1-}" = startup ]; then
	plan=3
	echo "1..$plan"
	check "startup: trace_options=stackmap turns the option on" option_is_on
	check "startup: the wakeup tracers' stacks went through the map" \
		startup_stacks_went_through_map
	check "startup: the tracers' startup tests passed, cookie entries and all" \
		startup_tests_passed
	finish
	exit
fi

if [ "${1-}" = end ]; then
	plan=3
	echo "1..$plan"
	check "end: options/stackmap stayed on through the baseline" option_is_on
	check "end: the baseline's stacks went through the map" baseline_went_through_map
	check "end: a stack recorded after the baseline is a cookie that resolves" \
		stack_after_baseline_is_cookie
	finish
	exit
fi

plan=8
echo "1..$plan"
check "boot: trace_options=stackmap turns the option on" option_is_on
check "boot: a bad ftrace_stackmap.bits is warned of, ignored or clamped" \
	bad_bits_are_warned
check "boot: the last ftrace_stackmap.bits, 17, sizes the top map" \
	last_bits_size_top_map
check "boot: a new instance's map holds the default 2^14 stacks, not 2^17" \
	new_instance_has_default_bits
check "boot: the first recorded stack is a cookie" first_stack_is_cookie
check "boot: every cookie given is in the trace and resolves to its stack_map record" \
	every_cookie_resolves
check "boot: every other stack is in full and counted" nothing_lost
check "boot: a persistent instance refuses the option (EINVAL), has no map files" \
	persistent_refuses
# From here on only the baseline records stacks.
echo 0 > events/sched/sched_switch/enable
cookies_given > /tmp/boot-cookies
finish
