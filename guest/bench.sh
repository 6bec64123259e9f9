# SPDX-License-Identifier: GPL-2.0
#
# Run in the guest by `make bench`. Every figure is printed as
#   @@BENCH <group> <workload> <mode> <key> <value>
# for scripts/bench.py. Off and on are measured in the same run: the
# history workloads trace into two instances at once, one with the
# stackmap and one without, so both see the same events.
#
# Any command that fails ends the run with its status, which the host
# reports: a write to a tracefs file that fails would otherwise leave a
# workload set up wrong and its figures looking right.
set -e
cd /sys/kernel/tracing

emit() { echo "@@BENCH $*"; }

# emit_stats DIR TAGS KEY...: emit TAGS KEY and the value of each KEY, a
# total of DIR's stack_map_stat.
emit_stats() {
	stat_dir=$1 stat_tags=$2
	shift 2
	for stat_key; do
		emit $stat_tags $stat_key \
			`grep "^$stat_key: " $stat_dir/stack_map_stat | cut -d' ' -f2`
	done
}

# instance_report WORKLOAD MODE DIR: what the buffer of DIR retained.
instance_report() {
	w=$1 m=$2 d=$3
	set -- `awk '
	/^entries:/ { entries += $2 }
	/^bytes:/ { bytes += $2 }
	/^overrun:/ { overrun += $2 }
	END { printf "%d %d %d\n", entries, bytes, overrun }' $d/per_cpu/cpu*/stats`
	entries=$1 bytes=$2 overrun=$3
	# Printing the trace resolves every frame to its symbol, which takes
	# longer than anything else here: once, into a file for the counts.
	t=/tmp/bench-trace
	cat $d/trace > $t
	# The span every CPU's buffer covers, from the newest of the per-CPU
	# oldest events to the newest event, and the frames, full stacks and
	# cookies the trace holds: one pass of awk, several times faster than
	# busybox's grep over the megabytes of a trace.
	set -- `awk '
	match($0, /\[([0-9]+)\][^:]* ([0-9]+\.[0-9]+):/, f) {
		cpu = f[1] + 0; ts = f[2] + 0
		if (!(cpu in first)) first[cpu] = ts
		if (ts > last) last = ts
	}
	/^ => / { frames++ }
	/<stack trace>/ { full++ }
	/<stack_id / { cookies++ }
	END {
		start = 0
		for (c in first) if (first[c] > start) start = first[c]
		printf "%.6f %d %d %d\n", last - start, frames, full, cookies
	}' $t`
	span=$1 frames=$2 full=$3 cookies=$4
	rm $t
	emit history $w $m entries $entries
	emit history $w $m bytes $bytes
	emit history $w $m overrun $overrun
	emit history $w $m span_s $span
	emit history $w $m full_stacks $full
	emit history $w $m cookies $cookies
	emit history $w $m frames $frames
	if wrapped $d; then
		emit history $w $m wrapped 1
	else
		emit history $w $m wrapped 0
	fi
	if [ $m = on ]; then
		emit_stats $d "map $w on" entries hits hits_held inserts \
			fallback_full fallback_busy fallback_depth fallback_reset \
			capacity memory_bytes stack_bytes
		# The depth of the stacks stored, from their records: stack_bytes
		# also counts the room of inserts that lost a race.
		set -- `awk '/^stack_id / { n++; frames += $NF }
			END { print n + 0, frames + 0 }' $d/stack_map`
		emit map $w on records $1
		emit map $w on frames_stored $2
		# Each possible CPU adds its part to memory_bytes.
		emit map $w on possible_cpus `grep -c '^cpu[0-9]*: ' $d/stack_map_stat`
	fi
}

# wrapped DIR: whether DIR holds events and every CPU buffer of it that
# holds some lost some.
wrapped() {
	# A stats file gives a CPU's entries before its overrun.
	awk '
	/^entries:/ { entries = $2; if (entries > 0) seen = 1 }
	/^overrun:/ { if (entries > 0 && $2 == 0) intact = 1 }
	END { exit intact || !seen }' $1/per_cpu/cpu*/stats
}

# on_each_cpu WORK: run WORK on every online CPU at once, each copy pinned
# to its CPU. Every CPU's buffer then fills at the same steady rate, so the
# span a buffer covers is the workload's own: left to the scheduler, which
# CPU a burst of events lands on changes from run to run, and so did the
# spans, by up to 1.7x between runs with the same entries retained.
on_each_cpu() {
	cpu=0 pids=
	while [ $cpu -lt `nproc` ]; do
		(
			read pid _ < /proc/self/stat
			taskset -p -c $cpu $pid > /dev/null
			$1
		) &
		pids="$pids $!"
		cpu=$((cpu + 1))
	done
	# One by one, for the status of each.
	for pid in $pids; do
		wait $pid
	done
}

# history WORKLOAD SETUP WORK [BITS]: trace WORK, on every CPU, into a
# 1 MiB-per-CPU buffer with and without the stackmap, at the same time;
# the map holds 2^BITS stacks (the default without BITS).
history() {
	w=$1 setup=$2 work=$3 bits=$4
	for m in off on; do
		d=instances/bench-$m
		mkdir $d
		echo 0 > $d/tracing_on
		echo 1024 > $d/buffer_size_kb
		(cd $d && $setup)
	done
	[ -z "$bits" ] || echo $bits > instances/bench-on/stack_map_bits
	echo 1 > instances/bench-on/options/stackmap
	# Stopped through descriptors opened while both instances trace: the
	# buffer stopped last sees only the write that stops the other, not
	# the open() and close() of a redirection too.
	exec 3> instances/bench-on/tracing_on 4> instances/bench-off/tracing_on
	echo 1 > instances/bench-off/tracing_on
	echo 1 > instances/bench-on/tracing_on
	# Until both buffers wrapped, so that each holds what it can hold: the
	# one with the stackmap, whose events are smaller, wraps last.
	rounds=0
	while [ $rounds -lt 40 ] && ! wrapped instances/bench-on; do
		on_each_cpu $work
		rounds=$((rounds + 1))
	done
	echo 0 >&3
	echo 0 >&4
	exec 3>&- 4>&-
	emit history $w on rounds $rounds
	# The report reads the buffers with the tracer still set: switching
	# it would clear them. Keep it from unwinding a stack at each traced
	# call the reading makes (the hot workloads trace the spin locks) only
	# to find the buffer off.
	for m in off on; do
		o=instances/bench-$m/options/func_stack_trace
		if [ -f $o ]; then
			echo 0 > $o
		fi
	done
	for m in off on; do
		instance_report $w $m instances/bench-$m
	done
	for m in off on; do
		d=instances/bench-$m
		echo nop > $d/current_tracer
		echo 0 > $d/events/enable
		rmdir $d
	done
}

vfs_setup() {
	echo 'vfs_read vfs_write do_sys_openat2' > set_ftrace_filter
	echo function > current_tracer
	echo 1 > options/func_stack_trace
}
# The layer the vfs calls into: seq_file reads (procfs), tmpfs reads, page
# cache writes, path walks. Its stacks are two to four frames deeper than
# those of the vfs entry points, which sit right under the syscall.
fs_setup() {
	echo 'seq_read_iter shmem_file_read_iter generic_perform_write path_openat' > set_ftrace_filter
	echo function > current_tracer
	echo 1 > options/func_stack_trace
}
sched_setup() {
	echo 1 > options/stacktrace
	echo 1 > events/sched/sched_switch/enable
	echo 1 > events/sched/sched_wakeup/enable
}
hot_setup() {
	echo '_raw_spin_lock* _raw_spin_unlock* kfree mutex_lock mutex_unlock __kmalloc* kmem_cache_* up_read down_read' > set_ftrace_filter
	echo function > current_tracer
	echo 1 > options/func_stack_trace
}
files_work() {
	for i in `seq 100`; do
		cat /proc/version /proc/uptime > /tmp/bench-file
		ls /proc/self > /dev/null
		echo $i >> /tmp/bench-file
	done
	dd if=/dev/zero of=/dev/null bs=64 count=2000 2> /dev/null
}
tree_work() {
	ls -lR /sys/bus /sys/class > /dev/null 2>&1
}

history vfs vfs_setup files_work
history fs fs_setup files_work
history sched sched_setup files_work
history distinct hot_setup tree_work
# The same, into the smallest map there is and into one four times larger:
# they fill, and show what the map does under pressure and what a full map
# costs per stack it stores, with more or less of its fixed part per stack.
history full hot_setup tree_work 10
history full12 hot_setup tree_work 12

# Cost per recorded stack: a syscall loop traced with the function tracer
# only, with a full stack per call, and through the stackmap (hits). Each
# round runs the three back to back, so that a slower stretch of the host
# (when the guest clock follows it) weighs on all of them alike;
# scripts/bench.py takes the median over the rounds of each round's
# figures, and shows their range.
ROUNDS=5
# cost NAME FUNCTION [MODE]: the loop of syscall_loop MODE, traced at
# FUNCTION, which each of its calls reaches once.
cost() {
	name=$1 func=$2 mode=$3
	d=instances/bench-cost
	mkdir $d
	echo $func > $d/set_ftrace_filter
	emit cost $name none run0 `/bin/syscall_loop 20000 $mode`
	echo function > $d/current_tracer
	echo 1 > $d/options/stackmap
	for i in `seq $ROUNDS`; do
		echo 0 > $d/options/func_stack_trace
		emit cost $name function run$i `/bin/syscall_loop 20000 $mode`
		echo 1 > $d/options/func_stack_trace
		echo 0 > $d/options/stackmap
		emit cost $name full_stack run$i `/bin/syscall_loop 20000 $mode`
		echo 1 > $d/options/stackmap
		emit cost $name stackmap run$i `/bin/syscall_loop 20000 $mode`
	done
	# The depth of the stack recorded once per call.
	emit cost $name stackmap depth `awk -v n=$((ROUNDS * 20000)) '
		/^stack_id / && $6 >= n { print $8; exit }' $d/stack_map`
	# How many of the map's hits the CPU's entry found.
	emit_stats $d "cost $name stackmap" hits hits_held
	echo 0 > $d/options/func_stack_trace
	echo nop > $d/current_tracer
	rmdir $d
}
cost getppid __x64_sys_getppid
cost stat generic_fillattr stat

# The map's own cost and its probe lengths, measured by KUnit cases at boot.
dmesg | sed -n 's/.*stackmap_bench: at capacity probe_mean_x100 \([0-9]*\) probe_max \([0-9]*\) lines_x100 \([0-9]*\) hit_ns \([0-9]*\).*/@@BENCH kernel capacity map probe_mean_x100 \1\n@@BENCH kernel capacity map probe_max \2\n@@BENCH kernel capacity map lines_x100 \3\n@@BENCH kernel capacity map hit_ns \4/p'
dmesg | sed -n 's/.*stackmap_bench: per_cpu_bytes \([0-9]*\).*/@@BENCH kernel memory map per_cpu_bytes \1/p'
dmesg | sed -n 's/.*stackmap_bench: depth \([0-9]*\) hit_ns \([0-9]*\) again_ns \([0-9]*\) insert_ns \([0-9]*\).*/@@BENCH kernel depth\1 map hit_ns \2\n@@BENCH kernel depth\1 map again_ns \3\n@@BENCH kernel depth\1 map insert_ns \4/p'
