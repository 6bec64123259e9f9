// SPDX-License-Identifier: GPL-2.0

//! The slot protocol: a lock-free, insert-only hash table of stacks.
//!
//! A table of `2^(bits + 1)` slots indexes a frame arena sized for `2^bits`
//! stacks of [`DESIGN_DEPTH`] frames. A stack is stored once, at its own
//! length: one header word (depth and ref count) and one word per frame.
//!
//! Insertion never waits for another CPU. A slot is claimed by a cmpxchg of
//! its key from 0 (free) to the stack's 32-bit hash key; the claimer then
//! reserves arena space with a bounded cmpxchg, copies the frames and
//! publishes the record with a release store. Whoever finds a matching key
//! whose record is not yet published reports [`Fallback::Busy`] instead of
//! spinning: from NMI, the insert in flight may be the one it interrupted.
//! Slots are never freed within a generation, so a lookup that reaches a
//! free slot knows the stack is not in the table.
//!
//! A sequence count gates the table against [`Table::begin_reset`]: it is
//! odd while a reset runs, and recorders that see it odd fall back.

use crate::{
    cookie::{Cookie, FIRST_GENERATION},
    hash::StackHash,
    platform::{smp_rmb, storage, Acquire, Atomic, Full, Relaxed, Release, Storage},
};
use kernel::prelude::*;

/// The deepest stack the table stores; deeper ones are recorded in full.
pub(crate) const MAX_DEPTH: usize = 64;

/// The stack depth the arena is sized for: `2^bits` stacks of this depth fit.
pub(crate) const DESIGN_DEPTH: usize = 16;

/// How many slots a lookup examines before it gives up.
pub(crate) const MAX_PROBE: usize = 32;

/// Smallest and largest accepted `bits`.
pub(crate) const BITS_MIN: u32 = 10;
/// See [`BITS_MIN`].
pub(crate) const BITS_MAX: u32 = 18;

/// Where a record's ref count stops: `u32::MAX` less a margin for the adds
/// in flight (at most four contexts on each of 2^16 CPUs).
pub(crate) const REFS_MAX: u32 = u32::MAX - (4 << 16);

/// `Slot::record` of a slot whose claimer found no room in the arena.
const RECORD_DEAD: u32 = u32::MAX;

/// Why a stack got no cookie; the caller records it in full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// No free slot within [`MAX_PROBE`] probes, or no room left in the arena.
    Full,
    /// The same stack is being inserted right now, perhaps by the context
    /// this one interrupted.
    Busy,
    /// The stack is deeper than [`MAX_DEPTH`].
    Depth,
    /// A reset is in progress.
    Reset,
}

/// How a cookie was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// The stack was already in the table.
    Hit(Cookie),
    /// The stack was inserted by this call.
    Inserted(Cookie),
}

impl Found {
    /// Returns the cookie of the stack.
    pub(crate) fn cookie(self) -> Cookie {
        match self {
            Found::Hit(c) | Found::Inserted(c) => c,
        }
    }
}

/// One entry of the open-addressed slot table.
///
/// # Invariants
///
/// - `key` goes from 0 to a non-zero hash key once per generation.
/// - `record` goes from 0 to the arena index of the stack plus one, or to
///   [`RECORD_DEAD`], once per generation, and only after `key` was set by
///   the same CPU; a published record is never written again in the
///   generation except for its ref count.
/// - Both return to 0 only in [`Table::clear`], while the gate is closed and
///   no recorder is inside.
pub(crate) struct Slot {
    /// Hash key of the stack stored here; 0 when free.
    key: Atomic<u32>,
    /// Arena index of the stack's record plus one; 0 until published.
    record: Atomic<u32>,
}

/// A stack read back from the table.
pub(crate) struct Record<'a> {
    /// How often the stack was recorded in this generation (saturating).
    pub(crate) refs: u32,
    /// The frames, in the arena.
    frames: &'a [Atomic<u64>],
}

impl Record<'_> {
    /// Returns the number of frames.
    pub(crate) fn depth(&self) -> usize {
        self.frames.len()
    }

    /// Iterates over the frames, innermost first.
    pub(crate) fn frames(&self) -> impl Iterator<Item = usize> + '_ {
        self.frames.iter().map(|f| f.load(Relaxed) as usize)
    }
}

/// Packs the header word of a record.
fn header(depth: usize, refs: u32) -> u64 {
    (u64::from(refs) << 32) | depth as u64
}

/// The table and its arena.
pub(crate) struct Table<H> {
    /// `log2` of the number of stacks the arena is sized for.
    bits: u32,
    /// The slots; their number is a power of two.
    slots: Storage<Slot>,
    /// Records: a header word (depth, refs), then the frames.
    arena: Storage<Atomic<u64>>,
    /// Reservations so far: records in the high half, arena words in the low.
    used: Atomic<u64>,
    /// The current generation; changes only while the gate is closed.
    generation: Atomic<u32>,
    /// Odd while a reset runs.
    sequence: Atomic<u32>,
    /// Places stacks in the table.
    hash: H,
}

impl<H: StackHash> Table<H> {
    /// Allocates an empty table for `2^bits` stacks, generation 1.
    pub(crate) fn new(bits: u32, hash: H) -> Result<Self> {
        if !(BITS_MIN..=BITS_MAX).contains(&bits) {
            return Err(EINVAL);
        }
        let slots = storage(1 << (bits + 1), || Slot {
            key: Atomic::new(0),
            record: Atomic::new(0),
        })?;
        let arena = storage((1 << bits) * (1 + DESIGN_DEPTH), || Atomic::new(0))?;
        Ok(Self {
            bits,
            slots,
            arena,
            used: Atomic::new(0),
            generation: Atomic::new(FIRST_GENERATION),
            sequence: Atomic::new(0),
            hash,
        })
    }

    /// Returns how many stacks the arena is sized for.
    pub(crate) fn capacity(&self) -> usize {
        1 << self.bits
    }

    /// Returns `log2` of [`Self::capacity`].
    pub(crate) fn bits(&self) -> u32 {
        self.bits
    }

    /// Returns the number of slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Returns the bytes the slot table and the arena occupy.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.slots.len() * size_of::<Slot>() + self.arena.len() * size_of::<Atomic<u64>>()
    }

    /// Returns the number of stacks stored in this generation.
    pub(crate) fn entries(&self) -> usize {
        (self.used.load(Relaxed) >> 32) as usize
    }

    /// Returns the arena bytes used by the records of this generation.
    pub(crate) fn arena_bytes_used(&self) -> usize {
        (self.used.load(Relaxed) as u32 as usize) * size_of::<u64>()
    }

    /// Returns the current generation.
    pub(crate) fn generation(&self) -> u32 {
        self.generation.load(Relaxed)
    }

    /// Returns the cookie of `frames`, inserting the stack if it is new.
    ///
    /// Never sleeps, never allocates and never waits for another CPU, so it
    /// may run in any context, NMI included. The caller must be in an RCU
    /// read-side critical section (preemption disabled counts) so that
    /// [`Table::begin_reset`]'s grace period waits for it.
    pub(crate) fn lookup_or_insert(&self, frames: &[usize]) -> Result<Found, Fallback> {
        if frames.len() > MAX_DEPTH {
            return Err(Fallback::Depth);
        }
        // ORDERING: Acquire pairs with the Release in `finish_reset()`: a
        // recorder that sees the gate open after a reset sees the cleared
        // table and the new generation.
        if self.sequence.load(Acquire) & 1 != 0 {
            return Err(Fallback::Reset);
        }
        let generation = self.generation.load(Relaxed);
        let hash = self.hash.hash(frames);
        let key = match hash as u32 {
            0 => 1,
            k => k,
        };
        let mask = self.slots.len() - 1;
        let mut index = (hash >> (64 - (self.bits + 1))) as usize;

        for _ in 0..MAX_PROBE {
            let slot = &self.slots[index];
            let mut found = slot.key.load(Relaxed);
            if found == 0 {
                match self.claim(slot, key, frames) {
                    Ok(true) => return Ok(Found::Inserted(Cookie::new(generation, index as u32))),
                    Ok(false) => return Err(Fallback::Full),
                    // Lost the race for the slot: it may now hold this stack.
                    Err(current) => found = current,
                }
            }
            if found == key {
                // ORDERING: Acquire pairs with the Release that published
                // the record in `claim()`: the frames are visible.
                match slot.record.load(Acquire) {
                    0 => return Err(Fallback::Busy),
                    RECORD_DEAD => {}
                    record => {
                        if self.matches(record, frames) {
                            self.add_ref(record);
                            return Ok(Found::Hit(Cookie::new(generation, index as u32)));
                        }
                    }
                }
            }
            index = (index + 1) & mask;
        }
        Err(Fallback::Full)
    }

    /// Claims the free `slot` for `frames` and publishes their record.
    ///
    /// Returns `Ok(true)` once published, `Ok(false)` if the slot was
    /// claimed but the arena had no room, and `Err(key)` with the key that
    /// another CPU claimed the slot with first.
    fn claim(&self, slot: &Slot, key: u32, frames: &[usize]) -> core::result::Result<bool, u32> {
        // Refuse before claiming when the arena is already full, so that a
        // full map does not also burn slots.
        if !self.has_room(frames.len()) {
            return Ok(false);
        }
        // ORDERING: Relaxed is enough: the claim publishes nothing, the
        // record is published by the Release store below.
        slot.key.cmpxchg(0, key, Relaxed)?;
        let Some(start) = self.reserve(frames.len()) else {
            // INVARIANT: The slot stays claimed but dead for the rest of the
            // generation, so that no lookup mistakes it for free and inserts
            // a second copy of a stack stored further along the probe chain.
            slot.record.store(RECORD_DEAD, Release);
            return Ok(false);
        };
        self.arena[start].store(header(frames.len(), 1), Relaxed);
        for (word, &frame) in self.arena[start + 1..].iter().zip(frames) {
            word.store(frame as u64, Relaxed);
        }
        // INVARIANT: Published once, after the frames; `start + 1` is
        // neither 0 nor `RECORD_DEAD` since the arena is far smaller.
        // ORDERING: Release orders the frame stores before the publication,
        // pairs with the Acquire loads of `record` by readers.
        slot.record.store(start as u32 + 1, Release);
        Ok(true)
    }

    /// Returns whether a record of `depth` frames would still fit.
    fn has_room(&self, depth: usize) -> bool {
        let used = self.used.load(Relaxed);
        (used >> 32) < self.capacity() as u64
            && (used as u32 as usize) + 1 + depth <= self.arena.len()
    }

    /// Reserves one record of `depth` frames; returns its arena index.
    ///
    /// Bounded: it retries only when another CPU reserved in between, and
    /// gives up as soon as the record or the words would exceed the limits.
    fn reserve(&self, depth: usize) -> Option<usize> {
        let mut used = self.used.load(Relaxed);
        loop {
            let (records, words) = (used >> 32, used as u32 as usize);
            if records >= self.capacity() as u64 || words + 1 + depth > self.arena.len() {
                return None;
            }
            let next = ((records + 1) << 32) | (words + 1 + depth) as u64;
            // ORDERING: Relaxed: the reservation only hands out disjoint
            // ranges; publication is ordered by the record's Release store.
            match self.used.cmpxchg(used, next, Relaxed) {
                Ok(_) => return Some(words),
                Err(current) => used = current,
            }
        }
    }

    /// Returns the published record at arena index `record - 1`.
    fn record(&self, record: u32) -> Record<'_> {
        let start = record as usize - 1;
        let head = self.arena[start].load(Relaxed);
        let depth = (head as u32 as usize).min(MAX_DEPTH);
        let end = (start + 1 + depth).min(self.arena.len());
        Record {
            refs: (head >> 32) as u32,
            frames: &self.arena[start + 1..end],
        }
    }

    /// Compares a published record with `frames`, in full.
    fn matches(&self, record: u32, frames: &[usize]) -> bool {
        let stored = self.record(record);
        stored.depth() == frames.len() && stored.frames().eq(frames.iter().copied())
    }

    /// Counts one more recording of a published record, saturating.
    ///
    /// One atomic add, no retry loop: the count stops at [`REFS_MAX`],
    /// which leaves room for every CPU in every context to be adding at
    /// once without the count reaching the top of its 32 bits.
    fn add_ref(&self, record: u32) {
        let head = &self.arena[record as usize - 1];
        // ORDERING: Relaxed: the count is a statistic and orders nothing.
        if (head.load(Relaxed) >> 32) < u64::from(REFS_MAX) {
            head.fetch_add(1 << 32, Relaxed);
        }
    }

    /// Returns the stack in `slot` if it holds a published one.
    ///
    /// The record may be cleared under a reader that races a reset; such
    /// readers use [`Table::copy_slot`] instead.
    pub(crate) fn slot(&self, slot: usize) -> Option<Record<'_>> {
        // ORDERING: Acquire pairs with the publishing Release in `claim()`.
        match self.slots.get(slot)?.record.load(Acquire) {
            0 | RECORD_DEAD => None,
            record => Some(self.record(record)),
        }
    }

    /// Copies the stack in `slot` of `generation` into `out` (as much of it
    /// as fits), validated against a concurrent reset; returns its ref count
    /// and depth.
    ///
    /// Returns `None` if the slot holds no published stack, the generation
    /// is not the current one, or a reset raced the copy.
    pub(crate) fn copy_slot(
        &self,
        slot: usize,
        generation: u32,
        out: &mut [usize],
    ) -> Option<(u32, usize)> {
        let sequence = self.read_begin()?;
        if self.generation() != generation {
            return None;
        }
        let record = self.slot(slot)?;
        for (dst, frame) in out.iter_mut().zip(record.frames()) {
            *dst = frame;
        }
        let copied = (record.refs, record.depth());
        (!self.read_retry(sequence)).then_some(copied)
    }

    /// Returns the first slot at or after `slot` that holds a published
    /// stack.
    pub(crate) fn next_populated(&self, slot: usize) -> Option<usize> {
        (slot..self.slots.len()).find(|&s| self.slot(s).is_some())
    }

    /// Starts a read that may race a reset; returns the sequence to pass to
    /// [`Table::read_retry`], or `None` while a reset runs.
    fn read_begin(&self) -> Option<u32> {
        // ORDERING: Acquire pairs with the Release in `finish_reset()`.
        let sequence = self.sequence.load(Acquire);
        (sequence & 1 == 0).then_some(sequence)
    }

    /// Returns whether a reset began since [`Table::read_begin`] returned
    /// `sequence`, making what was read since then invalid.
    fn read_retry(&self, sequence: u32) -> bool {
        // ORDERING: the read barrier orders the reads of the table before
        // the second read of the sequence, as in read_seqcount_retry().
        smp_rmb();
        self.sequence.load(Relaxed) != sequence
    }

    /// Closes the gate: from now on recorders fall back.
    ///
    /// The caller serializes resets, then waits for an RCU grace period so
    /// that recorders that entered before the gate closed are gone, before
    /// [`Table::clear`].
    pub(crate) fn begin_reset(&self) {
        // ORDERING: Full makes the odd sequence visible before anything the
        // reset does next, as write_seqcount_begin() does with smp_wmb().
        self.sequence.fetch_add(1, Full);
    }

    /// Empties the table and moves to the next generation.
    ///
    /// Must run between [`Table::begin_reset`] and [`Table::finish_reset`],
    /// once no recorder is inside.
    pub(crate) fn clear(&self) {
        for slot in self.slots.iter() {
            // INVARIANT: The gate is closed and no recorder is inside.
            slot.key.store(0, Relaxed);
            slot.record.store(0, Relaxed);
        }
        self.used.store(0, Relaxed);
        let next = match self.generation.load(Relaxed).wrapping_add(1) {
            0 => FIRST_GENERATION,
            generation => generation,
        };
        self.generation.store(next, Relaxed);
    }

    /// Opens the gate again after a reset.
    pub(crate) fn finish_reset(&self) {
        // ORDERING: Release publishes the cleared table and the new
        // generation to recorders and readers, which load with Acquire.
        self.sequence.fetch_add(1, Release);
    }
}
