// SPDX-License-Identifier: GPL-2.0

//! Per-CPU counters of what happened to the stacks a map was given.
//!
//! Each CPU counts into its own cache line, so recorders never share a
//! written line. Counters are atomic because an interrupt or NMI may count
//! on the same CPU in the middle of another update. They are 64-bit, so they
//! cannot wrap in practice; their sums saturate. They go back to 0 when the
//! map is reset.

use crate::{
    platform::{Atomic, Relaxed},
    table::{Fallback, Found},
};
use kernel::{cpu, prelude::*};

/// The counters of one CPU.
#[repr(C, align(64))]
pub(crate) struct CpuStats {
    /// Stacks found in the map.
    hits: Atomic<u64>,
    /// Stacks inserted into the map.
    inserts: Atomic<u64>,
    /// Stacks recorded in full, by [`Fallback`] reason.
    fallbacks: [Atomic<u64>; FALLBACKS],
}

/// Number of [`Fallback`] reasons.
const FALLBACKS: usize = 4;

/// The index of a fallback reason in [`CpuStats::fallbacks`].
fn fallback_index(reason: Fallback) -> usize {
    match reason {
        Fallback::Full => 0,
        Fallback::Busy => 1,
        Fallback::Depth => 2,
        Fallback::Reset => 3,
    }
}

/// Adds one to `counter`.
///
/// A 64-bit count of recordings cannot wrap: at one per nanosecond it takes
/// 584 years. Sums over CPUs saturate.
#[inline]
fn bump(counter: &Atomic<u64>) {
    // ORDERING: Relaxed: the counters are statistics and order nothing.
    counter.add(1, Relaxed);
}

/// Totals over all CPUs, or one CPU's counters.
#[derive(Default, Clone, Copy)]
pub(crate) struct Totals {
    /// See [`CpuStats::hits`].
    pub(crate) hits: u64,
    /// See [`CpuStats::inserts`].
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
    fn add(&mut self, other: &Totals) {
        self.hits = self.hits.saturating_add(other.hits);
        self.inserts = self.inserts.saturating_add(other.inserts);
        self.full = self.full.saturating_add(other.full);
        self.busy = self.busy.saturating_add(other.busy);
        self.depth = self.depth.saturating_add(other.depth);
        self.reset = self.reset.saturating_add(other.reset);
    }
}

/// The counters of every possible CPU.
pub(crate) struct Stats {
    /// One entry per possible CPU, indexed by CPU id.
    cpus: KVec<CpuStats>,
}

impl Stats {
    /// Allocates zeroed counters for every possible CPU.
    pub(crate) fn new() -> Result<Self> {
        let n = cpu::nr_cpu_ids() as usize;
        let mut cpus = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            cpus.push_within_capacity(CpuStats {
                hits: Atomic::new(0),
                inserts: Atomic::new(0),
                fallbacks: [const { Atomic::new(0) }; FALLBACKS],
            })
            .map_err(|_| ENOMEM)?;
        }
        Ok(Self { cpus })
    }

    /// Counts the outcome of one lookup on the current CPU.
    #[inline]
    pub(crate) fn count(&self, outcome: &core::result::Result<Found, Fallback>) {
        let Some(cpu) = self.cpus.get(cpu::CpuId::current().as_u32() as usize) else {
            return;
        };
        match outcome {
            Ok(Found::Hit(_)) => bump(&cpu.hits),
            Ok(Found::Inserted(_)) => bump(&cpu.inserts),
            Err(reason) => bump(&cpu.fallbacks[fallback_index(*reason)]),
        }
    }

    /// Returns the counters of CPU `cpu`.
    pub(crate) fn cpu(&self, cpu: usize) -> Option<Totals> {
        let c = self.cpus.get(cpu)?;
        let f = |reason| c.fallbacks[fallback_index(reason)].load(Relaxed);
        Some(Totals {
            hits: c.hits.load(Relaxed),
            inserts: c.inserts.load(Relaxed),
            full: f(Fallback::Full),
            busy: f(Fallback::Busy),
            depth: f(Fallback::Depth),
            reset: f(Fallback::Reset),
        })
    }

    /// Returns the sums over all CPUs.
    pub(crate) fn totals(&self) -> Totals {
        let mut sum = Totals::default();
        for cpu in 0..self.cpus.len() {
            if let Some(t) = self.cpu(cpu) {
                sum.add(&t);
            }
        }
        sum
    }

    /// Returns the bytes the counters occupy.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.cpus.len() * size_of::<CpuStats>()
    }

    /// Sets every counter back to 0; part of a reset.
    pub(crate) fn clear(&self) {
        for cpu in self.cpus.iter() {
            cpu.hits.store(0, Relaxed);
            cpu.inserts.store(0, Relaxed);
            for f in cpu.fallbacks.iter() {
                f.store(0, Relaxed);
            }
        }
    }
}
