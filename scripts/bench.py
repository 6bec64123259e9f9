#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the figures a `make bench` guest printed into a table and JSON.

Input lines: '@@BENCH <group> <workload> <mode> <key> <value>'. Off and on
figures come from the same run, so the ratios are what to compare on a
noisy machine. Prints the table, each target met or not, and writes JSON.
"""

import json
import os
import re
import sys
from collections import defaultdict

from summarize import EXIT_MARKER, splats

REFERENCE_BYTES_PER_STACK = 520
MIB = 1 << 20


def table_const(name):
    """A constant of table.rs: DESIGN_DEPTH, the depth it sizes the frame
    arena for (2^bits stacks of it, each record a header word and a word
    per frame), or MAX_PROBE, the longest chain."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "table.rs")
    with open(path) as f:
        return int(re.search(rf"const {name}: usize = (\d+);", f.read()).group(1))


ARENA_DEPTH = table_const("DESIGN_DEPTH")
MAX_PROBE = table_const("MAX_PROBE")
RECORD_HEADER_WORDS = 1
PAGE_SIZE = 4096


def arena_words(capacity):
    """The arena words a map of capacity stacks has for records, as table.rs
    sizes it: a record of ARENA_DEPTH frames per stack after word 0, and the
    rest of the last page."""
    words = 1 + capacity * (ARENA_DEPTH + RECORD_HEADER_WORDS)
    return -(-words * 8 // PAGE_SIZE) * PAGE_SIZE // 8 - 1


# Ring buffer bytes of an event with no payload: the event header and the
# trace_entry. A kernel_stack event adds 8 (its size and pad) besides its
# frames, a stack_cookie event its 8-byte cookie; an event with a payload
# takes at least 4 more (the ring buffer's alignment). An event whose
# data (trace_entry and payload) is larger than RB_MAX_SMALL_DATA takes 4
# more for its length.
EVENT_FIXED = 4 + 8
STACK_EVENT_FIXED = EVENT_FIXED + 8
RB_MAX_SMALL_DATA = 112
LENGTH_WORD = 4
COOKIE_EVENT = EVENT_FIXED + 8
SMALLEST_EVENT = EVENT_FIXED + 4
HISTORY_TARGET = 2.2
COST_LOOPS = {
    "getppid": "__x64_sys_getppid",
    "stat": "generic_fillattr",
}
NATIVE_WORKLOADS = {
    "one": "1, hot",
    "many": "4096 in turn",
    "shared": "1, on 2 CPUs",
}
# The copies host/ times, each the kernel's memcpy() on the CPUs it names.
NATIVE_COPIES = {
    "rep_movsb": "rep movsb (the CPU has fsrm)",
    "words": "memcpy_orig's loop of 8-byte moves (no fsrm)",
}
WORKLOADS = {
    "vfs": "function tracer on vfs_read/vfs_write/do_sys_openat2, func_stack_trace",
    "fs": "function tracer on seq_read_iter/shmem_file_read_iter/generic_perform_write/"
          "path_openat (what the vfs calls), func_stack_trace",
    "sched": "sched_switch + sched_wakeup, options/stacktrace",
    "distinct": "function tracer on hot lock/alloc functions, func_stack_trace",
    "full": "the same as distinct, into a map of 2^10 stacks, which fills",
    "full12": "the same, into a map of 2^12 stacks, which fills",
}


def parse(paths):
    data = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 6 and parts[0] == "@@BENCH":
                    _, group, workload, mode, key, value = parts
                    data[group][workload].setdefault(mode, {})[key] = float(value)
    return data


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def ratio(a, b):
    return a / b if b else float("nan")


def median(values):
    v = sorted(values)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2 if n else float("nan")


def held_share(stat):
    """Of the hits in stack_map_stat figures, the share the CPU's entry found."""
    if "hits_held" not in stat:
        return None
    return ratio(stat["hits_held"], stat.get("hits", 0))


def percent(share):
    return "-" if share is None or share != share else f"{100 * share:.1f}%"


def ratios(rounds):
    """The on/off ratio of each round of (function, full_stack, stackmap)."""
    return [ratio(m - f, full - f) for f, full, m in rounds]


def history_bound(off, depth, event):
    """What the map can give a workload, from its off figures.

    Every full stack the off buffer holds becomes a cookie event of `event`
    bytes: returns the on/off entries ratio that leaves. Page tails and
    time stamps are left out: the measured ratio lands within a few
    percent of it.
    """
    per_entry = ratio(off["bytes"], off["entries"])
    stacks_per_entry = ratio(off["full_stacks"], off["entries"])
    stack_event = STACK_EVENT_FIXED + 8 * depth
    if stack_event - 4 > RB_MAX_SMALL_DATA:
        stack_event += LENGTH_WORD
    return ratio(per_entry, per_entry - stacks_per_entry * (stack_event - event))


def history_row(name, off, on):
    """Prints and returns the on/off history figures of one buffer pair."""
    row = {
        "off": off,
        "on": on,
        "entries_ratio": ratio(on["entries"], off["entries"]),
        "bytes_per_entry_off": ratio(off["bytes"], off["entries"]),
        "bytes_per_entry_on": ratio(on["bytes"], on["entries"]),
        "span_ratio": ratio(on["span_s"], off["span_s"]),
        "stack_depth": ratio(off["frames"], off["full_stacks"]),
        "both_wrapped": bool(off.get("wrapped")) and bool(on.get("wrapped")),
    }
    print(f"{name:9} {off['entries']:7.0f} {on['entries']:7.0f} {row['entries_ratio']:5.2f}  "
          f"{row['bytes_per_entry_off']:7.1f} {row['bytes_per_entry_on']:5.1f}  "
          f"{off['span_s']:7.3f} {on['span_s']:7.3f} {row['span_ratio']:5.2f}  "
          f"{row['stack_depth']:5.1f}  {on['full_stacks']:6.0f}"
          f"{'' if row['both_wrapped'] else '  (a buffer never filled)'}")
    return row


def main():
    log, out = sys.argv[1], sys.argv[2]
    # What the guest clock counted: "ns", or "insns" when QEMU ran it off
    # the instruction count (one instruction per ns).
    unit = sys.argv[3] if len(sys.argv) > 3 else "ns"
    # The native timings of host/, if they were taken.
    host = sys.argv[4:5]
    data = parse([log] + host)
    result = {"unit": unit, "history": {}, "memory": {}, "dedup": {}, "cost": {},
              "map_cost": {}, "native": {},
              # What was measured, and how the guest ran, as scripts/bench.sh
              # says: the accelerator and QEMU's icount shift (empty: the
              # host clock).
              "run": {"commit": os.environ.get("BENCH_COMMIT"),
                      "accel": os.environ.get("BENCH_ACCEL"),
                      "icount": os.environ.get("BENCH_ICOUNT")}}
    targets = []

    print("History per buffer (1 MiB per CPU, the same events into each buffer; spans in")
    print(f"guest seconds{', one instruction per ns' if unit == 'insns' else ''}; "
          "'full' stacks are those the map did not take)")
    print(f"{'workload':9} {'entries':>7} {'':>7} {'':>5}  {'B/entry':>7} {'':>5}  "
          f"{'span':>7} {'':>7} {'':>5}  {'stack':>5}  {'full':>6}")
    print(f"{'':9} {'off':>7} {'on':>7} {'x':>5}  {'off':>7} {'on':>5}  "
          f"{'off':>7} {'on':>7} {'x':>5}  {'depth':>5}  {'on':>6}")
    for w in WORKLOADS:
        h = data["history"].get(w)
        if not h or "off" not in h or "on" not in h:
            print(f"{w:9} missing")
            targets.append((f"history {w} measured", False, "no figures"))
            continue
        row = history_row(w, h["off"], h["on"])
        row["description"] = WORKLOADS[w]
        result["history"][w] = row
        if w not in ("vfs", "fs", "sched"):
            continue
        met = row["entries_ratio"] >= HISTORY_TARGET and row["both_wrapped"]
        detail = f"{row['entries_ratio']:.2f}x, stacks {row['stack_depth']:.1f} deep"
        if not row["both_wrapped"]:
            detail += "; a buffer never filled, so it does not show what it can hold"
        elif not met:
            depth = row["stack_depth"]
            bound = history_bound(h["off"], depth, COOKIE_EVENT)
            smallest = history_bound(h["off"], depth, SMALLEST_EVENT)
            row["bound_with_cookie_event"] = bound
            row["bound_with_smallest_event"] = smallest
            detail += (f"; by the off figures, {COOKIE_EVENT}-byte cookie events give "
                       f"{bound:.2f}x, and the smallest event a stack can take as an event "
                       f"of its own ({SMALLEST_EVENT} bytes: event header, trace_entry, a "
                       f"u32) {smallest:.2f}x")
        targets.append((f"{w}: entries retained on/off >= {HISTORY_TARGET}", met, detail))

    print()
    print("The same, counting the map's memory: the 'on' side holds a map (memory_bytes at")
    print("the end of the workload) besides its buffers, one map for all CPUs. At equal")
    print("memory, on/off is the entries per byte of buffers and map over the entries per")
    print("byte of buffers. The map pays for itself once the buffers of all CPUs together")
    print("are larger than 'break-even'; 'buffers' is what this guest's held.")
    print(f"{'workload':9} {'bits':>4} {'map MiB':>7} {'buffers MiB':>11} "
          f"{'x, equal memory':>15} {'break-even MiB':>14}")
    for w, row in result["history"].items():
        m = data["map"].get(w, {}).get("on", {})
        if "memory_bytes" not in m or "capacity" not in m:
            continue
        map_bytes = m["memory_bytes"]
        buffers = row["on"]["bytes"]
        x = row["entries_ratio"]
        # on entries / (buffers + map) over off entries / off buffers.
        equal = ratio(row["on"]["entries"] * row["off"]["bytes"],
                      row["off"]["entries"] * (buffers + map_bytes))
        # x * B / (B + M) >= 1 from B = M / (x - 1) on.
        break_even = ratio(map_bytes, x - 1) if x > 1 else float("inf")
        row["map_bytes"] = map_bytes
        row["entries_ratio_equal_memory"] = equal
        row["break_even_buffer_bytes"] = break_even
        bits = int(m["capacity"]).bit_length() - 1
        print(f"{w:9} {bits:4d} {map_bytes / MIB:7.2f} "
              f"{buffers / MIB:11.2f} {equal:15.2f} {break_even / MIB:14.2f}")

    print()
    print("Map memory and dedup at the end of each workload. Dedup: the stacks recorded as")
    print("cookies over the stacks stored; 'held': the share of the hits that the CPU's")
    print("entry found, with neither the hash nor the walk of a chain; 'refused': recorded")
    print("in full for want of room.")
    print("Per stack: memory_bytes over the stacks stored (of mean depth 'depth'), against")
    print("the reference design's 520 and against 8 * depth + 16. A map not yet full holds")
    print("the room of the stacks it has yet to store: 'if full' spreads its footprint over")
    print("as many stacks of that depth as its arena holds "
          f"({ARENA_DEPTH + RECORD_HEADER_WORDS} words per stack of capacity,")
    print("and the rest of the arena's last page; a record is a header word and a word per")
    print("frame).")
    print(f"{'workload':9} {'stacks':>6} {'recorded':>8} {'dedup':>7} {'depth':>5} "
          f"{'held':>6} {'per stack':>9} {'/ref':>7} {'if full':>7} {'budget':>6} "
          f"{'refused':>7}")
    full_maps = 0
    per_cpu = data["kernel"].get("memory", {}).get("map", {}).get("per_cpu_bytes")
    for name in WORKLOADS:
        m = data["map"].get(name, {}).get("on", {})
        stacks = m.get("entries", 0)
        if not stacks or not m.get("records") or "capacity" not in m:
            targets.append((f"{name}: map figures", False, "missing"))
            continue
        hits_inserts = m.get("hits", 0) + m.get("inserts", 0)
        recorded = hits_inserts + sum(m.get(k, 0) for k in (
            "fallback_full", "fallback_busy", "fallback_depth", "fallback_reset"))
        # The depth of the stored records, as stack_map lists them (not from
        # stack_bytes, which also counts the room of inserts that lost a race).
        depth = m.get("frames_stored", 0) / m["records"]
        budget = 8 * depth + 16
        footprint = m["memory_bytes"] / stacks
        capacity = m["capacity"]
        fitting = arena_words(capacity) // (depth + RECORD_HEADER_WORDS)
        if_full = m["memory_bytes"] / fitting
        refused = m.get("fallback_full", 0)
        held = held_share(m)
        # Full: the arena has no room left for a record of the stored
        # depth (a chain at max_probe refuses stacks too, arena or not).
        room = arena_words(capacity) - m.get("stack_bytes", 0) / 8
        full = room < depth + RECORD_HEADER_WORDS
        result["memory"][name] = {"stacks": stacks, "capacity": capacity,
                                  "avg_depth": depth,
                                  "footprint_per_stack": footprint,
                                  "footprint_per_reference": footprint
                                  / REFERENCE_BYTES_PER_STACK,
                                  "stacks_if_full": fitting,
                                  "footprint_per_stack_if_full": if_full,
                                  "budget": budget, "refused_full": refused,
                                  "reference_bytes_per_stack": REFERENCE_BYTES_PER_STACK,
                                  "memory_bytes": m["memory_bytes"],
                                  "arena_full": full,
                                  "possible_cpus": m.get("possible_cpus"),
                                  "per_cpu_bytes": per_cpu}
        result["dedup"][name] = {"stored": stacks, "recorded": recorded,
                                 "cookies": hits_inserts,
                                 "cookies_per_stored": ratio(hits_inserts, stacks),
                                 "hits_held_share": held,
                                 "fallbacks": recorded - hits_inserts}
        print(f"{name:9} {stacks:6.0f} {recorded:8.0f} {ratio(hits_inserts, stacks):7.1f} "
              f"{depth:5.1f} {percent(held):>6} {footprint:9.1f} "
              f"{footprint / REFERENCE_BYTES_PER_STACK:7.2f} "
              f"{if_full:7.1f} {budget:6.1f} {refused:7.0f}")
        # Judged on a map whose arena filled: measured, not projected.
        if full:
            full_maps += 1
            cpus = m.get("possible_cpus")
            detail = f"{footprint:.1f} vs {budget:.1f}"
            if cpus and per_cpu:
                # Each possible CPU adds per_cpu bytes to the map.
                upto = cpus + (budget - footprint) * stacks // per_cpu
                detail += (f", with {cpus:.0f} possible CPUs; each adds {per_cpu:.0f} B, "
                           f"{per_cpu / stacks:.2f} B per stack here: "
                           + (f"holds up to {upto:.0f} possible CPUs" if upto >= cpus
                              else "does not hold"))
            targets.append((f"{name}: memory per stored stack, map full, <= 8 * depth + 16",
                            footprint <= budget, detail))
    if not full_maps:
        targets.append(("memory per stored stack of a full map measured", False,
                        "no map filled"))

    print()
    print("Cost per recorded stack (syscall loop, function tracer + func_stack_trace;")
    print("medians over rounds that run the three modes back to back). Each call records")
    print("the same stack, which the CPU's entry finds: the map's best case")
    per_stack = {}
    for loop, traced in COST_LOOPS.items():
        c = data["cost"].get(loop, {})
        runs = sorted((k for k in c.get("stackmap", {}) if k.startswith("run")),
                      key=lambda k: int(k[3:]))
        rounds = [(c["function"][r], c["full_stack"][r], c["stackmap"][r]) for r in runs
                  if r in c.get("function", {}) and r in c.get("full_stack", {})]
        if not rounds:
            targets.append((f"{loop}: cost per recorded stack measured", False, "no figures"))
            continue
        depth = c["stackmap"].get("depth")
        if depth is None:
            targets.append((f"{loop}: depth of the recorded stack found", False,
                            "no stack in stack_map was recorded once per call"))
            continue
        function = median([f for f, _, _ in rounds])
        off = median([full - f for f, full, _ in rounds])
        on = median([m - f for f, _, m in rounds])
        x = median(ratios(rounds))
        held = held_share(c["stackmap"])
        per_stack[depth] = off
        untraced = c.get("none", {}).get("run0")
        result["cost"][loop] = {"traced": traced, "stack_depth": depth, "rounds": rounds,
                                "untraced_per_call": untraced,
                                "function_per_call": function,
                                "per_stack_off": off, "per_stack_on": on,
                                "on_off_ratio": x, "hits_held_share": held}
        print(f"  {loop} ({traced}, stack depth {depth:.0f}, {len(rounds)} rounds): "
              f"per call, {function:.0f} {unit} with the function tracer and no stack"
              + (f" ({untraced:.0f} untraced)" if untraced is not None else ""))
        print(f"    per recorded stack: full {off:.0f} {unit}, cookie {on:.0f} {unit}, "
              f"on/off {x:.2f} (rounds: {min(ratios(rounds)):.2f} to {max(ratios(rounds)):.2f}); "
              f"hits found in the CPU's entry: {percent(held)}")
        targets.append((f"{loop}: recording with the stackmap costs no more than without",
                        x <= 1.0, f"on/off {x:.2f} at depth {depth:.0f}"))

    print()
    print(f"The map's own cost, in-kernel (KUnit case, {unit} per op): a hit on 4096 stacks")
    print("in turn (in 2^14 buckets), and (again) on one stack again and again, which the")
    print("CPU's entry finds")
    # The share of a hit in the recording path of the loop whose stack depth
    # is nearest: unwinding, like hashing, grows with the depth.
    for depth in (8, 16, 32):
        k = data["kernel"].get(f"depth{depth}", {}).get("map")
        if not k:
            targets.append((f"map cost at depth {depth} measured", False, "no figures"))
            continue
        row = {"hit": k["hit_ns"], "hit_again": k["again_ns"], "insert": k["insert_ns"]}
        share = ""
        if per_stack:
            path_depth = min(per_stack, key=lambda d: abs(d - depth))
            row["hit_share_of_full_path"] = k["hit_ns"] / per_stack[path_depth]
            row["insert_share_of_full_path"] = k["insert_ns"] / per_stack[path_depth]
            row["full_path_depth"] = path_depth
            share = (f"; of recording a full stack of depth {path_depth:.0f}: hit "
                     f"{100 * row['hit_share_of_full_path']:.0f}%, insert "
                     f"{100 * row['insert_share_of_full_path']:.0f}%")
            if depth == 8:
                targets.append(("a map hit costs at most 15% of the stack-recording path",
                                row["hit_share_of_full_path"] <= 0.15,
                                f"{100 * row['hit_share_of_full_path']:.0f}% at depth 8 "
                                f"(path measured at depth {path_depth:.0f})"))
        result["map_cost"][f"depth{depth}"] = row
        print(f"  depth {depth:2}: hit {k['hit_ns']:.0f} (again {k['again_ns']:.0f}), "
              f"insert {k['insert_ns']:.0f}{share}")

    probes = data["kernel"].get("capacity", {}).get("map")
    if probes:
        mean = probes["probe_mean_x100"] / 100
        lines = probes["lines_x100"] / 100
        result["map_cost"]["probes_at_capacity"] = {"mean": mean, "max": probes["probe_max"],
                                                    "lines": lines,
                                                    "hit": probes.get("hit_ns")}
        print(f"  chains at capacity (as many stacks as buckets): a hit walks past {mean:.2f} "
              f"records on average,")
        print(f"    {probes['probe_max']:.0f} at most (limit {MAX_PROBE}); at depth 8 it reads "
              f"{lines:.2f} cache lines of the table: its bucket's,")
        print("    and 2 of each record it compares"
              + (f"; it costs {probes['hit_ns']:.0f} {unit} (stacks in turn)"
                 if "hit_ns" in probes else ""))

    if host:
        print()
        copier = next(iter(data["host"].get("copy", {})), None)
        result["native_copy"] = copier
        print(f"Natively on this machine's CPU ({cpu_model()}; host/ builds the")
        print("kernel's map, with its table, hash and counters, for it), ns per recorded")
        print("stack: the copy the map saves, and what it does instead (hash; lookup = the")
        print("CPU's entry, or hash and probe, then compare and ref count; record = the map's")
        print("lookup, which also counts it, and the cookie write); the medians of each")
        print("workload's fastest of 12 rounds, which take turns.")
        print(f"The copy is the kernel's memcpy() on this CPU: {NATIVE_COPIES.get(copier, '?')}")
        print(f"  {'depth':>5}  {'stacks':16} {'copy':>6} {'hash':>6} {'lookup':>7} "
              f"{'record':>7}  {'record/copy':>11}")
        for depth in (4, 8, 16, 32):
            for name, what in NATIVE_WORKLOADS.items():
                n = data["host"].get(f"d{depth}-{name}")
                if not n:
                    continue
                ns = {mode: n[mode]["ns"] for mode in n}
                # The median of the per-sample ratios of the workload's
                # fastest round: each sample times both back to back.
                x = n["record"].get("per_copy", ratio(ns["record"], ns["copy"]))
                result["native"][f"d{depth}-{name}"] = dict(ns, record_copy_ratio=x,
                                                            stacks=what)
                print(f"  {depth:5}  {what:16} {ns['copy']:6.1f} {ns['hash']:6.1f} "
                      f"{ns['lookup']:7.1f} {ns['record']:7.1f}  {x:11.2f}")
        # Judged where the map does least, one stack hit again and again;
        # the stacks in turn, which hash and walk a chain, are given too.
        for depth in (8, 32):
            row = result["native"].get(f"d{depth}-one")
            if row:
                many = result["native"].get(f"d{depth}-many")
                targets.append((f"native, depth {depth}: the map's work is smaller than "
                                "the copy it saves",
                                row["record_copy_ratio"] <= 1.0,
                                f"{row['record']:.1f} ns vs {row['copy']:.1f} ns, "
                                f"ratio {row['record_copy_ratio']:.2f} on one stack, the "
                                "map's best case"
                                + (f"; {many['record_copy_ratio']:.2f} on 4096 in turn"
                                   if many else "")))
        if not result["native"]:
            targets.append(("native timings measured", False, "no figures"))

    # A kernel that warned or crashed, or a guest that did not finish,
    # gives figures of no worth: they are shown, and the bench fails.
    with open(log, errors="replace") as f:
        console = f.read()
    trouble = splats(console)
    if not EXIT_MARKER.search(console):
        trouble.append("the guest did not finish")
    targets.append(("the guest ran to its end with no kernel splat", not trouble,
                    "; ".join(line.strip()[:100] for line in trouble[:5]) or "none"))

    print()
    print("Targets")
    for name, ok, detail in targets:
        print(f"  {'met ' if ok else 'MISS'}  {name}: {detail}")
    result["targets"] = [{"target": n, "met": ok, "value": d} for n, ok, d in targets]
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"\nwrote {out}")
    return 1 if trouble else 0


if __name__ == "__main__":
    sys.exit(main())
