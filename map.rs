// SPDX-License-Identifier: GPL-2.0

//! A trace instance's stack map: the table, its counters and the lock that
//! serializes its resets, and the lookup ftrace calls for each stack.

use crate::{
    cookie::{
        next_generation,
        FIRST_GENERATION, //
    },
    hash::{
        SeededHash,
        StackHash, //
    },
    platform::ReadSection,
    stats::Stats,
    table::{
        Fallback,
        Found,
        Table, //
    }, //
};
use kernel::{
    new_mutex,
    prelude::*,
    random,
    sync::{
        Arc,
        Mutex,
        Refcount, //
    }, //
};

/// One trace instance's stack map: the table, its counters and the lock
/// that serializes resets.
#[pin_data]
pub(crate) struct StackMap<H: StackHash = SeededHash> {
    /// The stack table and its frame arena.
    table: Table<H>,
    /// Per-CPU counters.
    stats: Stats,
    /// Held by a reset ([`crate::reset`]), and while a map that replaces
    /// this one is made; true once one was. Recorders, and the readers of
    /// the trace, take no lock: they check the table's gate and generation
    /// instead. The dumps and the counters' file take it to show one
    /// generation.
    #[pin]
    pub(crate) reset_lock: Mutex<bool>,
}

impl StackMap {
    /// Allocates a map for `2^bits` stacks with a random hash seed.
    ///
    /// A map that replaces `prev` in a trace instance starts at the
    /// generation after `prev`'s current one: the ring buffer may still hold
    /// cookies of `prev`, which must not resolve to this map's stacks. From
    /// then on `prev` is never reset: recorders that still reach it keep its
    /// generation, below this map's. A `prev` replaced already gives
    /// `EBUSY`: two maps after it would issue the same generation.
    pub(crate) fn new(bits: u32, prev: Option<&StackMap>) -> Result<Arc<Self>> {
        // With trace_options=stackmap the first map is made at boot, before
        // random_init(): the seed then comes from what random_init_early()
        // gathered. It only places stacks in buckets.
        let hash = SeededHash::new(random::get_u64());
        let Some(prev) = prev else {
            return Self::with_hash(bits, FIRST_GENERATION, hash);
        };
        // A reset of `prev` waits until this map exists; after that it
        // finds `prev` replaced, leaves it alone and fails with `EAGAIN`.
        let mut replaced = prev.reset_lock.lock();
        if *replaced {
            return Err(EBUSY);
        }
        let map = Self::with_hash(bits, next_generation(prev.table.generation())?, hash)?;
        *replaced = true;
        Ok(map)
    }
}

impl<H: StackHash> StackMap<H> {
    /// The bytes of the map's own allocation: its [`Arc`] holds the
    /// reference count first, then the map at the map's alignment.
    const ALLOCATION_BYTES: usize =
        size_of::<Refcount>().next_multiple_of(align_of::<Self>()) + size_of::<Self>();

    /// Allocates a map for `2^bits` stacks placed by `hash`, in
    /// `generation`.
    pub(crate) fn with_hash(bits: u32, generation: u32, hash: H) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                table: Table::new(bits, generation, hash)?,
                stats: Stats::new()?,
                reset_lock <- new_mutex!(false),
            }),
            GFP_KERNEL,
        )
    }

    /// Returns the cookie of `frames`, inserting the stack if it is new,
    /// and counts the outcome.
    ///
    /// The RCU read-side critical section `rcu` is what a reset waits for
    /// before it clears the table.
    ///
    /// Always inlined: it is the whole of the entry point ftrace calls for
    /// every recorded stack. Only the stack found in its CPU's ref count
    /// cache is handled inline ([`Table::lookup_held`]); the hash, the walk
    /// and the insert are out of line in [`StackMap::lookup_hashed`].
    #[inline(always)]
    pub(crate) fn lookup(&self, frames: &[usize], rcu: ReadSection<'_>) -> Result<Found, Fallback> {
        match self.table.lookup_held(frames, rcu) {
            Some(cookie) => {
                self.stats.count_held();
                Ok(Found::Hit(cookie))
            }
            None => self.lookup_hashed(frames, rcu),
        }
    }

    /// Returns the cookie of `frames`, found in their chain or inserted,
    /// and counts the outcome: the rest of [`StackMap::lookup`].
    ///
    /// Out of line, with the registers the walk needs, so that the fast
    /// path saves only those it needs itself.
    #[inline(never)]
    fn lookup_hashed(&self, frames: &[usize], rcu: ReadSection<'_>) -> Result<Found, Fallback> {
        let outcome = self.table.lookup_hashed(frames, rcu);
        self.stats.count(&outcome);
        outcome
    }

    /// Returns the table.
    pub(crate) fn table(&self) -> &Table<H> {
        &self.table
    }

    /// Returns the counters.
    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Returns the whole footprint of the map in bytes.
    pub(crate) fn memory_bytes(&self) -> usize {
        Self::ALLOCATION_BYTES + self.table.memory_bytes() + self.stats.memory_bytes()
    }
}
