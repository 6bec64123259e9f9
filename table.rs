// SPDX-License-Identifier: GPL-2.0

//! The slot protocol: a lock-free, insert-only hash table of stacks.
//!
//! A table of `2^(bits + 1)` slots indexes a frame arena sized for `2^bits`
//! stacks of [`DESIGN_DEPTH`] frames. A stack is stored once, at its own
//! length, one word per frame; its ref count is kept apart ([`Refs`]), so
//! that a hit writes no line that lookups read. A slot is one 64-bit word:
//! the stack's 32-bit hash key, and its record (depth and arena index), so
//! that one load tells a lookup whether to compare frames.
//!
//! Insertion never waits for another CPU. A slot is claimed by a cmpxchg of
//! its key from 0 (free) to the stack's hash key; the claimer then reserves
//! arena space with a bounded cmpxchg, copies the frames and publishes the
//! record with a release store. Whoever finds a matching key whose record is
//! not yet published reports [`Fallback::Busy`] instead of spinning: from
//! NMI, the insert in flight may be the one it interrupted. Slots are never
//! freed within a generation, so a lookup that reaches a free slot knows the
//! stack is not in the table.
//!
//! Frames are plain memory: written once by the claimer before it publishes
//! them, then only read. Every reader runs in an RCU read-side critical
//! section and first checks that the table's gate is open; a reset closes
//! the gate and waits for a grace period before it clears the table, so no
//! reader can still be looking at a record when the arena is reused.

use crate::{
    cookie::{next_generation, Cookie},
    hash::StackHash,
    platform::{storage, Acquire, Atomic, Full, ReadSection, Relaxed, Release, Storage, Word},
    refs::Refs,
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

/// Bits of a slot's record that hold the arena index of the first frame;
/// the depth is above them.
const INDEX_BITS: u32 = 24;

/// Bit of a slot's record set once the record is published, so that a
/// published record is never 0.
const PUBLISHED: u32 = 1 << 31;

/// The record of a slot whose claimer found no room in the arena.
const RECORD_DEAD: u32 = u32::MAX;

// Every arena index, up to the arena's length (where a record of no frames
// may start), fits below the depth, every depth below the published bit,
// and a real record never looks dead.
const _: () = assert!((1 << BITS_MAX) * DESIGN_DEPTH < 1 << INDEX_BITS);
const _: () = assert!(MAX_DEPTH < ((RECORD_DEAD & !PUBLISHED) >> INDEX_BITS) as usize);

/// Bit of [`Table::state`] set while a reset runs: the gate is closed.
const CLOSED: u64 = 1;

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

/// One entry of the open-addressed slot table: the hash key of its stack in
/// the high half, the record in the low half.
///
/// # Invariants
///
/// - The key goes from 0 to a non-zero hash key once per generation, with
///   the record still 0.
/// - The record goes from 0 to a packed record ([`pack`]) or to
///   [`RECORD_DEAD`] once per generation, written by the CPU that set the
///   key; a published record is never written again in the generation.
/// - The slot returns to 0 only in [`Table::clear`], while the gate is closed
///   and no recorder is inside.
pub(crate) struct Slot(Atomic<u64>);

impl Slot {
    /// Returns the slot word of `key` and `record`.
    fn word(key: u32, record: u32) -> u64 {
        (u64::from(key) << 32) | u64::from(record)
    }
}

/// Returns the slot where the probe for a stack of hash `hash` starts, in a
/// table of `mask + 1` slots.
///
/// The slot comes from the low bits of the hash and the key ([`key`]) from
/// the high half, so that stacks that share a home slot still differ in
/// their keys.
#[inline]
pub(crate) fn home(hash: u64, mask: usize) -> usize {
    hash as usize & mask
}

/// Returns the key of a stack of hash `hash`: never 0, which marks a free
/// slot.
#[inline]
fn key(hash: u64) -> u32 {
    match (hash >> 32) as u32 {
        0 => 1,
        k => k,
    }
}

/// Packs the record of a stack of `depth` frames whose first frame is at
/// arena index `first`: never 0.
fn pack(first: usize, depth: usize) -> u32 {
    PUBLISHED | ((depth as u32) << INDEX_BITS) | first as u32
}

/// Unpacks a record: the arena index of its first frame, and its depth.
fn unpack(record: u32) -> (usize, usize) {
    (
        (record & ((1 << INDEX_BITS) - 1)) as usize,
        ((record & !PUBLISHED) >> INDEX_BITS) as usize,
    )
}

/// Returns whether the frames `stored` in a record are `frames`.
///
/// Called once the 32-bit key and the depth matched, when the frames differ
/// about once in 2^32: the comparison folds the differences of all frames
/// together and tests once at the end, rather than branching on every frame
/// to stop early.
#[inline]
fn same(stored: &[u64], frames: &[usize]) -> bool {
    stored.len() == frames.len()
        && stored
            .iter()
            .zip(frames)
            .fold(0, |diff, (&s, &f)| diff | (s ^ f as u64))
            == 0
}

/// A stack read back from the table.
pub(crate) struct Record<'a> {
    /// The slot of the stack.
    slot: usize,
    /// The ref counts of the table.
    refs: &'a Refs,
    /// The frames, in the arena.
    frames: &'a [u64],
}

impl Record<'_> {
    /// Returns how often the stack was recorded in this generation.
    ///
    /// Adds up every CPU's count, so only readers that show it call it.
    pub(crate) fn refs(&self) -> u64 {
        self.refs.read(self.slot)
    }

    /// Returns the number of frames.
    pub(crate) fn depth(&self) -> usize {
        self.frames.len()
    }

    /// Iterates over the frames, innermost first.
    pub(crate) fn frames(&self) -> impl Iterator<Item = usize> + '_ {
        self.frames.iter().map(|&f| f as usize)
    }

    /// Returns a pointer to the frames, innermost first, for C callers: it
    /// is valid as long as the read-side critical section the record was
    /// found in.
    pub(crate) fn as_ptr(&self) -> *const u64 {
        self.frames.as_ptr()
    }
}

/// The reservation word of the arena, on a cache line of its own: every
/// insert writes it, and the line must not be the one that every lookup
/// reads the gate and the table's geometry from.
#[repr(align(64))]
struct Reservations(Atomic<u64>);

/// The table and its arena.
pub(crate) struct Table<H> {
    /// The slots; their number is a power of two.
    slots: Storage<Slot>,
    /// How often the stack in each slot was recorded, indexed as `slots`:
    /// set to 1 by the claimer before it publishes the record, then only
    /// added to. Apart from the slots and the frames, so that no line a hit
    /// writes is one that lookups on other CPUs read.
    refs: Refs,
    /// The frames of the stored stacks.
    arena: Storage<Word>,
    /// Reservations so far: records in the high half, arena words in the low.
    used: Reservations,
    /// The generation in the high half, and [`CLOSED`] while a reset runs.
    state: Atomic<u64>,
    /// Places stacks in the table.
    hash: H,
}

impl<H: StackHash> Table<H> {
    /// Allocates an empty table for `2^bits` stacks, in `generation`.
    pub(crate) fn new(bits: u32, generation: u32, hash: H) -> Result<Self> {
        if !(BITS_MIN..=BITS_MAX).contains(&bits) {
            return Err(EINVAL);
        }
        let slots = storage(1 << (bits + 1), || Slot(Atomic::new(0)))?;
        let refs = Refs::new(slots.len())?;
        let arena = storage((1 << bits) * DESIGN_DEPTH, Word::new)?;
        Ok(Self {
            slots,
            refs,
            arena,
            used: Reservations(Atomic::new(0)),
            state: Atomic::new(u64::from(generation) << 32),
            hash,
        })
    }

    /// Returns how many stacks the arena is sized for.
    pub(crate) fn capacity(&self) -> usize {
        // Two slots per stack (the table is at most half full).
        self.slots.len() / 2
    }

    /// Returns `log2` of [`Self::capacity`].
    pub(crate) fn bits(&self) -> u32 {
        self.capacity().trailing_zeros()
    }

    /// Returns the number of slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Returns the bytes the slots, the ref counts and the arena occupy.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.slots.len() * size_of::<Slot>()
            + self.refs.memory_bytes()
            + self.arena.len() * size_of::<Word>()
    }

    /// Returns the number of stacks stored in this generation.
    pub(crate) fn entries(&self) -> usize {
        (self.used.0.load(Relaxed) >> 32) as usize
    }

    /// Returns the arena bytes used by the records of this generation.
    pub(crate) fn arena_bytes_used(&self) -> usize {
        (self.used.0.load(Relaxed) as u32 as usize) * size_of::<Word>()
    }

    /// Returns the current generation.
    pub(crate) fn generation(&self) -> u32 {
        (self.state.load(Relaxed) >> 32) as u32
    }

    /// Returns the generation if the gate is open.
    ///
    /// Called first in an RCU read-side critical section: if it returns a
    /// generation, no reset can clear the table before the section ends.
    #[inline]
    fn open(&self) -> Option<u32> {
        // ORDERING: Acquire pairs with the Release in `finish_reset()`: whoever
        // sees the gate open after a reset sees the cleared table.
        let state = self.state.load(Acquire);
        (state & CLOSED == 0).then_some((state >> 32) as u32)
    }

    /// Returns the cookie of `frames`, inserting the stack if it is new.
    ///
    /// Never sleeps, never allocates and never waits for another CPU, so it
    /// may run in any context, NMI included. The critical section `_rcu`
    /// (preemption disabled counts) is what a reset waits for before it
    /// clears the table.
    ///
    /// Always inlined: outside the tests its one caller is the entry point
    /// ftrace calls for every recorded stack, and the insertion it would
    /// otherwise drag along is kept out of line in `claim()`.
    #[inline(always)]
    pub(crate) fn lookup_or_insert(
        &self,
        frames: &[usize],
        _rcu: ReadSection<'_>,
    ) -> Result<Found, Fallback> {
        if frames.len() > MAX_DEPTH {
            return Err(Fallback::Depth);
        }
        let Some(generation) = self.open() else {
            return Err(Fallback::Reset);
        };
        let hash = self.hash.hash(frames);
        let key = key(hash);
        let slots = &*self.slots;
        // The number of slots is a power of two, never 0.
        let mask = slots.len().wrapping_sub(1);
        let mut index = home(hash, mask);

        for _ in 0..MAX_PROBE {
            let Some(slot) = slots.get(index) else {
                break;
            };
            // ORDERING: Acquire pairs with the Release that published the
            // record in `claim()`: its frames are visible.
            let mut word = slot.0.load(Acquire);
            if word == 0 {
                match self.claim(slot, index, key, frames) {
                    Ok(true) => return Ok(Found::Inserted(Cookie::new(generation, index as u32))),
                    Ok(false) => return Err(Fallback::Full),
                    // Lost the race for the slot: it may now hold this stack.
                    // ORDERING: Acquire, as above; the failed cmpxchg orders
                    // nothing.
                    Err(()) => word = slot.0.load(Acquire),
                }
            }
            if (word >> 32) as u32 == key {
                match word as u32 {
                    0 => return Err(Fallback::Busy),
                    RECORD_DEAD => {}
                    record => {
                        let (first, depth) = unpack(record);
                        if depth == frames.len() {
                            // SAFETY: `record` was published in this
                            // generation (Acquire above) and the gate was open
                            // in `_rcu`.
                            let stored = unsafe { self.frames(first, depth) };
                            if stored.is_some_and(|stored| same(stored, frames)) {
                                self.refs.hit(index);
                                return Ok(Found::Hit(Cookie::new(generation, index as u32)));
                            }
                        }
                    }
                }
            }
            // `index <= mask` never wraps; `wrapping_add()` only spares the
            // overflow check that the compiler cannot prove useless.
            index = index.wrapping_add(1) & mask;
        }
        Err(Fallback::Full)
    }

    /// Claims the free `slot`, number `index`, for `frames` and publishes
    /// their record.
    ///
    /// Returns `Ok(true)` once published, `Ok(false)` if the slot was
    /// claimed but the arena had no room, and `Err(())` if another CPU
    /// claimed the slot first.
    ///
    /// Out of line: a stack is inserted once and then hit many times, and
    /// the hit path stays small enough to inline into the recorder's call.
    #[inline(never)]
    fn claim(
        &self,
        slot: &Slot,
        index: usize,
        key: u32,
        frames: &[usize],
    ) -> core::result::Result<bool, ()> {
        // Refuse before claiming when the arena is already full, so that a
        // full map does not also burn slots.
        if !self.has_room(frames.len()) {
            return Ok(false);
        }
        // ORDERING: Relaxed is enough: the claim publishes nothing, the
        // record is published by the Release store below.
        slot.0
            .cmpxchg(0, Slot::word(key, 0), Relaxed)
            .map_err(|_| ())?;
        let Some((first, words)) = self.reserve(frames.len()) else {
            // INVARIANT: The slot stays claimed but dead for the rest of the
            // generation, so that no lookup mistakes it for free and inserts
            // a second copy of a stack stored further along the probe chain.
            slot.0.store(Slot::word(key, RECORD_DEAD), Release);
            return Ok(false);
        };
        // SAFETY: `reserve()` handed `words` to this call alone, and no reader
        // reaches them before the Release store below publishes them; readers
        // of the previous generation were waited for by the reset that
        // cleared the reservations.
        unsafe {
            for (word, &frame) in words.iter().zip(frames) {
                word.as_ptr().write(frame as u64);
            }
        }
        // No hit counts on the slot before it is published, and the hits of
        // past generations were waited for by the reset.
        self.refs.set_first(index);
        // INVARIANT: Published once, after the frames and the ref count.
        // ORDERING: Release orders the writes above before the publication,
        // pairs with the Acquire loads of the slot by readers.
        slot.0
            .store(Slot::word(key, pack(first, frames.len())), Release);
        Ok(true)
    }

    /// Returns whether a record of `depth` frames would still fit.
    fn has_room(&self, depth: usize) -> bool {
        self.room(self.used.0.load(Relaxed), depth).is_some()
    }

    /// Returns the words the next record, of `depth` frames, would take
    /// after the reservations `used`, or `None` if the record or the words
    /// would exceed the limits.
    fn room(&self, used: u64, depth: usize) -> Option<&[Word]> {
        if (used >> 32) >= self.capacity() as u64 {
            return None;
        }
        self.arena.get(used as u32 as usize..)?.get(..depth)
    }

    /// Reserves one record of `depth` frames; returns the arena index of its
    /// first frame and its frame words.
    ///
    /// Bounded: it retries only when another CPU reserved in between, and
    /// gives up as soon as the record or the words would exceed the limits.
    fn reserve(&self, depth: usize) -> Option<(usize, &[Word])> {
        let mut used = self.used.0.load(Relaxed);
        loop {
            let words = self.room(used, depth)?;
            let (records, start) = (used >> 32, used as u32 as usize);
            // `start` and the record's length are within the arena: their sum
            // cannot wrap.
            let next = ((records + 1) << 32) | (start as u64).wrapping_add(words.len() as u64);
            // ORDERING: Relaxed: the reservation only hands out disjoint
            // ranges; publication is ordered by the record's Release store.
            match self.used.0.cmpxchg(used, next, Relaxed) {
                Ok(_) => return Some((start, words)),
                Err(current) => used = current,
            }
        }
    }

    /// Returns the frames of the record of `depth` frames whose first frame
    /// is at arena index `first`.
    ///
    /// Returns `None` only if the record does not lie within the arena,
    /// which a published record always does: one bounds check, and no panic
    /// on the recording path should a slot ever be corrupted.
    ///
    /// # Safety
    ///
    /// The record must have been published in the current generation, as
    /// seen by an Acquire load of its slot after [`Table::open`] returned
    /// the generation, all within an RCU read-side critical section that
    /// outlives the returned references.
    #[inline]
    unsafe fn frames(&self, first: usize, depth: usize) -> Option<&[u64]> {
        let words = self.arena.get(first..first + depth)?;
        // SAFETY: The frames were written before the publication, and no
        // reset can let a claimer reuse them before the critical section
        // ends.
        Some(unsafe { Word::values(words) })
    }

    /// Returns the stack in `slot` if the gate is open, the map is in
    /// `generation` and the slot holds a published stack.
    pub(crate) fn slot<'a>(
        &'a self,
        slot: usize,
        generation: u32,
        _rcu: ReadSection<'a>,
    ) -> Option<Record<'a>> {
        if self.open()? != generation {
            return None;
        }
        // ORDERING: Acquire pairs with the publishing Release in `claim()`.
        let (first, depth) = match self.slots.get(slot)?.0.load(Acquire) as u32 {
            0 | RECORD_DEAD => return None,
            record => unpack(record),
        };
        // SAFETY: Published (Acquire above) after the gate was seen open,
        // within `_rcu`, which outlives the record.
        let frames = unsafe { self.frames(first, depth) }?;
        Some(Record {
            slot,
            refs: &self.refs,
            frames,
        })
    }

    /// Returns the first slot at or after `slot` that holds a published
    /// stack.
    pub(crate) fn next_populated(&self, slot: usize) -> Option<usize> {
        (slot..self.slots.len())
            .find(|&s| !matches!(self.slots[s].0.load(Relaxed) as u32, 0 | RECORD_DEAD))
    }

    /// Closes the gate: from now on recorders and readers fall back.
    ///
    /// The caller serializes resets, then waits for an RCU grace period so
    /// that those that entered before the gate closed are gone, before
    /// [`Table::clear`].
    pub(crate) fn begin_reset(&self) {
        // ORDERING: Full orders the accesses before it, such as the reset
        // fallback counters' new base, before the gate closes (a recorder
        // that sees the gate closed counts its fallback above that base),
        // and the reset's later accesses after it. It does not keep
        // recorders out: one that loaded the gate just before may still be
        // inside. What does is the RCU grace period the reset waits for
        // next: when it ends, every recorder that found the gate open has
        // left, and any still running started late enough to see it closed.
        self.state.fetch_add(CLOSED, Full);
    }

    /// Empties the table.
    ///
    /// Must run between [`Table::begin_reset`] and [`Table::finish_reset`],
    /// once no recorder or reader is inside.
    pub(crate) fn clear(&self) {
        for slot in self.slots.iter() {
            // INVARIANT: The gate is closed and no recorder is inside.
            slot.0.store(0, Relaxed);
        }
        self.refs.clear();
        self.used.0.store(0, Relaxed);
    }

    /// Moves to the next generation and opens the gate again.
    pub(crate) fn finish_reset(&self) {
        let next = next_generation(self.generation());
        // ORDERING: Release publishes the cleared table to recorders and
        // readers, which check the gate with Acquire.
        self.state.store(u64::from(next) << 32, Release);
    }
}
