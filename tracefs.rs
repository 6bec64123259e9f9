// SPDX-License-Identifier: GPL-2.0

//! What the stackmap's tracefs files show.
//!
//! `stack_map` lists one record per populated slot, in slot order:
//!
//! ```text
//! stack_id SLOT gen GEN ref REF depth DEPTH
//!  => func+0x1c/0x80
//! ```
//!
//! `stack_map_bin` the same records in binary for tools, and
//! `stack_map_stat` the map's size and counters as `name: value` lines,
//! totals first, then one line per possible CPU. `memory_bytes` is the
//! whole footprint, `stack_bytes` the arena reserved in this generation.
//! The C side owns the files and their locking; this module formats them,
//! and picks the records the dumps show.

use crate::{
    platform::{
        rcu_read_lock,
        ReadSection, //
    },
    stats::Totals,
    table::{
        MAX_DEPTH,
        MAX_PROBE, //
    },
    StackMap, //
};
use kernel::{
    cpu::possible_cpus,
    seq_file::SeqFile,
    seq_print,
    sync::rcu, //
};

/// The frame ftrace stores for a trampoline (`FTRACE_TRAMPOLINE_MARKER`,
/// which kernel/trace/trace_stackmap.c asserts is `INT_MAX`).
const TRAMPOLINE_MARKER: usize = i32::MAX as usize;

/// How a record is shown.
#[derive(Clone, Copy)]
pub(crate) enum Format {
    /// The `stack_map` text: a `stack_id` line, then one ` => ` line per
    /// frame.
    Text,
    /// The `stack_map_bin` record: four u32 words (slot, depth, ref, 0),
    /// then the frames as u64, native-endian.
    Binary,
}

/// Shows the record in `slot` if it is populated in `generation`.
///
/// Returns false, having shown nothing, if it is not (a reset raced the
/// read, or the slot is empty).
///
/// # Safety
///
/// If `generation` is the table's current one, `slot` must be where a
/// record of it starts, as for [`crate::table::Table::slot`].
pub(crate) unsafe fn show_slot(
    map: &StackMap,
    m: &SeqFile,
    slot: usize,
    generation: u32,
    format: Format,
) -> bool {
    // The record is printed straight from the map: the read-side critical
    // section keeps a reset from clearing it meanwhile, and nothing below
    // sleeps.
    let guard = rcu_read_lock();
    // SAFETY: `slot` starts a record of `generation` if it is the current
    // one, per the safety requirements.
    let Some(record) = (unsafe { map.table().slot(slot, generation, ReadSection::new(&guard)) })
    else {
        return false;
    };
    let (depth, refs) = (record.depth(), record.refs());
    match format {
        Format::Text => {
            seq_print!(
                m,
                "stack_id {slot} gen {generation} ref {refs} depth {depth}\n"
            );
            for frame in record.frames() {
                if frame == TRAMPOLINE_MARKER {
                    seq_print!(m, " => [FTRACE TRAMPOLINE]\n");
                } else {
                    seq_print!(m, " => ");
                    m.print_symbol(frame);
                    seq_print!(m, "\n");
                }
            }
        }
        Format::Binary => {
            let refs = u32::try_from(refs).unwrap_or(u32::MAX);
            // CAST: A slot is a word of an arena of fewer than 2^32 words,
            // a depth at most `MAX_DEPTH`.
            for word in [slot as u32, depth as u32, refs, 0] {
                m.write(&word.to_ne_bytes());
            }
            for frame in record.frames() {
                m.write(&(frame as u64).to_ne_bytes());
            }
        }
    }
    true
}

/// Returns what a dump (`stack_map`, `stack_map_bin`) opened now shows: the
/// generation, the position where its records end, and their number.
///
/// They are the records reserved so far in the generation, once the
/// inserts that reserved them are over: an insert runs with preemption
/// disabled, or in an interrupt or NMI, so an RCU grace period waits for
/// it. None of those records is published later, until a reset, so the
/// dump is a fixed set and `stack_map_bin`'s header count is exactly the
/// records that follow it. A stack inserted since lies further on and is
/// not shown.
///
/// Sleeps: for the grace period, and while a reset runs.
pub(crate) fn settle_dump(map: &StackMap) -> (u32, usize, usize) {
    map.between_resets(|| {
        let table = map.table();
        let end = table.reserved_end();
        rcu::synchronize();
        let guard = rcu_read_lock();
        let generation = table.generation();
        let (mut stacks, mut pos) = (0, 0);
        while let Some((_, next)) =
            // SAFETY: `pos` is 0, then each position the walk returned for
            // `generation`.
            unsafe {
                table.next_published(pos, end, generation, ReadSection::new(&guard))
            }
        {
            stacks += 1;
            pos = next;
        }
        (generation, end, stacks)
    })
}

/// Prints the `stack_map_stat` file: of `map`, or of the map an instance
/// would get with `bits` when it has none yet.
///
/// Sleeps while a reset runs: read in the middle of one, the file would
/// show the counters of the old generation beside an emptied table.
pub(crate) fn show_stat(map: Option<&StackMap>, m: &SeqFile, bits: u32) {
    match map {
        Some(map) => map.between_resets(|| print_stat(Some(map), m, bits)),
        None => print_stat(None, m, bits),
    }
}

/// Prints the `stack_map_stat` file, as [`show_stat`] once no reset runs.
fn print_stat(map: Option<&StackMap>, m: &SeqFile, bits: u32) {
    let (generation, entries, capacity, slots, memory, stacks, totals) = match map {
        Some(map) => {
            let table = map.table();
            (
                table.generation(),
                table.entries(),
                table.capacity(),
                table.bucket_count(),
                map.memory_bytes(),
                table.arena_bytes_used(),
                map.stats().totals(),
            )
        }
        None => {
            // `bits` is one of the instance's sizes, from 10 to 18: none
            // wider than the shift.
            let capacity = 1usize.checked_shl(bits).unwrap_or(0);
            (0, 0, capacity, capacity, 0, 0, Totals::default())
        }
    };
    seq_print!(m, "generation: {generation}\n");
    seq_print!(m, "entries: {entries}\n");
    seq_print!(m, "capacity: {capacity}\n");
    seq_print!(m, "table_slots: {slots}\n");
    seq_print!(m, "max_depth: {MAX_DEPTH}\n");
    seq_print!(m, "memory_bytes: {memory}\n");
    seq_print!(m, "hits: {}\n", totals.hits);
    seq_print!(m, "inserts: {}\n", totals.inserts);
    seq_print!(m, "fallback_full: {}\n", totals.full);
    seq_print!(m, "fallback_busy: {}\n", totals.busy);
    seq_print!(m, "fallback_depth: {}\n", totals.depth);
    // Keys beyond the documented first eleven go after them, so that a
    // tool that reads those by position keeps finding them.
    seq_print!(m, "fallback_reset: {}\n", totals.reset);
    seq_print!(m, "max_probe: {MAX_PROBE}\n");
    seq_print!(m, "stack_bytes: {stacks}\n");
    seq_print!(m, "hits_held: {}\n", totals.held);
    for cpu in possible_cpus() {
        let t = map.map(|map| map.stats().cpu(cpu)).unwrap_or_default();
        seq_print!(
            m,
            "cpu{}: hits {} inserts {} fallbacks {}\n",
            cpu.as_u32(),
            t.hits,
            t.inserts,
            t.fallbacks()
        );
    }
}
