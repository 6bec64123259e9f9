// SPDX-License-Identifier: GPL-2.0

//! Per-CPU counters of what happened to the stacks a map was given.
//!
//! Each CPU adds to its own counters with one `this_cpu_add()`: no lock
//! prefix, no cache line shared with other CPUs, and safe against the
//! interrupts and NMIs that count on the same CPU in the middle of another
//! update (where the architecture's `this_cpu_add()` is not NMI-safe, it is
//! an atomic add, see [`PerCpuCounters`]). The counters are 64-bit, so
//! they cannot wrap in practice; their sums saturate.
//!
//! They are only ever added to, each by the CPU that runs the update: a
//! recorder, which cannot migrate, adds to its own. A reset does not clear
//! them: it notes every counter's value as its base, and the figures shown
//! are the counts since the base, so that a recorder counting in the
//! middle of a reset can neither undo the clearing nor be undone by it.

use crate::table::{
    Fallback,
    Found, //
};
use kernel::{
    cpu::{
        possible_cpus,
        CpuId, //
    },
    percpu::{
        CounterIndex,
        PerCpuCounters, //
    },
    prelude::*, //
};

/// Number of counters per CPU.
pub(crate) const COUNTERS: usize = 7;

/// The index of one of a CPU's counters.
type Counter = CounterIndex<COUNTERS>;

// The index of each counter: stacks found by a walk of their chain, stacks
// inserted, stacks recorded in full, by [`Fallback`] reason, and stacks
// found in their CPU's entry ([`Stats::count_held`]).
const HITS: Counter = Counter::constant::<0>();
const INSERTS: Counter = Counter::constant::<1>();
const FULL: Counter = Counter::constant::<2>();
const BUSY: Counter = Counter::constant::<3>();
const DEPTH: Counter = Counter::constant::<4>();
const RESET: Counter = Counter::constant::<5>();
const HELD: Counter = Counter::constant::<6>();

/// Returns the index of the counter of `outcome`.
fn index(outcome: &core::result::Result<Found, Fallback>) -> Counter {
    match outcome {
        Ok(Found::Hit(_)) => HITS,
        Ok(Found::Inserted(_)) => INSERTS,
        Err(Fallback::Full) => FULL,
        Err(Fallback::Busy) => BUSY,
        Err(Fallback::Depth) => DEPTH,
        Err(Fallback::Reset) => RESET,
    }
}

/// Totals over all CPUs, or one CPU's counters.
#[derive(Default, Clone, Copy)]
pub(crate) struct Totals {
    /// Stacks found in the map.
    pub(crate) hits: u64,
    /// Of the stacks found, those found in their CPU's entry, without the
    /// hash or the walk of their chain.
    pub(crate) held: u64,
    /// Stacks inserted into the map.
    pub(crate) inserts: u64,
    /// Fallbacks because the map was full.
    pub(crate) full: u64,
    /// Fallbacks because the same stack was being inserted.
    pub(crate) busy: u64,
    /// Fallbacks because the stack was too deep.
    pub(crate) depth: u64,
    /// Fallbacks because a reset was in progress.
    pub(crate) reset: u64,
}

impl Totals {
    /// Returns all fallbacks.
    pub(crate) fn fallbacks(&self) -> u64 {
        self.full
            .saturating_add(self.busy)
            .saturating_add(self.depth)
            .saturating_add(self.reset)
    }

    /// Adds `other` into `self`, saturating.
    pub(crate) fn add(&mut self, other: &Totals) {
        self.hits = self.hits.saturating_add(other.hits);
        self.held = self.held.saturating_add(other.held);
        self.inserts = self.inserts.saturating_add(other.inserts);
        self.full = self.full.saturating_add(other.full);
        self.busy = self.busy.saturating_add(other.busy);
        self.depth = self.depth.saturating_add(other.depth);
        self.reset = self.reset.saturating_add(other.reset);
    }
}

/// The counters of every possible CPU.
pub(crate) struct Stats {
    /// What each CPU counted since the map was created.
    counts: PerCpuCounters<COUNTERS>,
    /// Each CPU's counts at the last reset. Only resets write them, with
    /// `set_remote()`; no CPU adds to its own.
    base: PerCpuCounters<COUNTERS>,
}

impl Stats {
    /// Allocates zeroed counters for every possible CPU.
    ///
    /// Fails with `ENOMEM` without the per-CPU allocator's warning and
    /// backtrace: a map is optional, and the write that asked for it
    /// reports the failure.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            counts: PerCpuCounters::new(GFP_KERNEL | __GFP_NOWARN)?,
            base: PerCpuCounters::new(GFP_KERNEL | __GFP_NOWARN)?,
        })
    }

    /// Counts the outcome of one lookup that hashed its stack on the current
    /// CPU.
    #[inline]
    pub(crate) fn count(&self, outcome: &core::result::Result<Found, Fallback>) {
        self.counts.this_cpu_add(index(outcome), 1);
    }

    /// Counts a stack found in its CPU's entry on the current CPU: a hit,
    /// counted apart from those found by a walk so that the share of the
    /// hits the entries find can be told. It costs the same one add.
    #[inline]
    pub(crate) fn count_held(&self) {
        self.counts.this_cpu_add(HELD, 1);
    }

    /// Returns counter `index` of `cpu` since the last reset.
    ///
    /// The counters are figures, read while recorders count, with no
    /// order: readers that need one generation's hold resets off
    /// (`StackMap::between_resets()`).
    fn since_reset(&self, cpu: CpuId, index: Counter) -> u64 {
        self.counts
            .read(cpu, index)
            .saturating_sub(self.base.read(cpu, index))
    }

    /// Returns the counters of CPU `cpu`.
    pub(crate) fn cpu(&self, cpu: CpuId) -> Totals {
        let f = |index| self.since_reset(cpu, index);
        let held = f(HELD);
        Totals {
            hits: f(HITS).saturating_add(held),
            held,
            inserts: f(INSERTS),
            full: f(FULL),
            busy: f(BUSY),
            depth: f(DEPTH),
            reset: f(RESET),
        }
    }

    /// Returns the sums over all possible CPUs.
    pub(crate) fn totals(&self) -> Totals {
        let mut sum = Totals::default();
        for cpu in possible_cpus() {
            sum.add(&self.cpu(cpu));
        }
        sum
    }

    /// Returns the bytes the counters occupy: those of each possible CPU,
    /// and their values at the last reset.
    pub(crate) fn memory_bytes(&self) -> usize {
        2 * possible_cpus().count() * size_of::<[u64; COUNTERS]>()
    }

    /// Starts the reset fallback counter again from 0; part of a reset,
    /// before it closes the gate: the stacks the reset sends to full records
    /// count for the generation after it, in whose trace they are.
    ///
    /// The caller serializes resets.
    pub(crate) fn begin_reset(&self) {
        self.rebase(|index| index == RESET);
    }

    /// Starts the other counters again from 0; part of a reset, once no
    /// recorder of the old generation is left.
    ///
    /// The caller serializes resets.
    pub(crate) fn finish_reset(&self) {
        self.rebase(|index| index != RESET);
    }

    /// Takes every CPU's current value of the counters `which` selects as
    /// their base.
    fn rebase(&self, which: impl Fn(Counter) -> bool) {
        for cpu in possible_cpus() {
            for index in Counter::all().filter(|&index| which(index)) {
                // ORDERING: `set_remote()` is Relaxed: the gate's Full close
                // and Release reopening, which come after each rebase, order
                // it against the recorders.
                self.base
                    .set_remote(cpu, index, self.counts.read(cpu, index));
            }
        }
    }
}
