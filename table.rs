// SPDX-License-Identifier: GPL-2.0

//! The stack table: a lock-free, insert-only chained hash table whose stacks
//! are records in one frame arena.
//!
//! A record is a header word followed by one word per frame, stored once, at
//! the stack's own length, where the arena's free space starts: the records lie
//! end to end, and each header tells where the next record starts. The arena is
//! sized for `2^bits` stacks of [`DESIGN_DEPTH`] frames; shallower stacks take
//! less of it, so more of them fit: the arena alone bounds how many stacks a
//! map holds, and a full map spends a header word per stack besides the frames.
//! A record's slot, the one its cookie names, is the arena index of its header.
//!
//! `2^bits` buckets each hold the slot of the last record inserted among the
//! stacks that hash to the bucket, and each header the slot of the record
//! inserted before it there: a chain, walked from the bucket. The header
//! also holds the record's depth, so that a lookup compares only the frames
//! of records as deep as its stack, and the shared part of its ref count
//! ([`Refs`]).
//!
//! Insertion never waits for another CPU. The inserter reserves arena space
//! with a cmpxchg loop, writes the frames and the header, and links the
//! record in front of the chain it walked with a cmpxchg of the bucket. If
//! the bucket changed, it walks the records linked meanwhile: if one of them
//! is its stack, that record wins and the space reserved stays unused for
//! the rest of the generation; otherwise it links in front of them. So
//! within a generation a stack is linked at most once. The space also
//! stays unused when the insert then falls back (its stack linked but not
//! yet published, or the chain grown too long meanwhile). A linked record is
//! then marked published in its header. Whoever finds its stack linked but
//! not yet published reports [`Fallback::Busy`] instead of spinning: from
//! NMI, the insert in flight may be the one it interrupted.
//!
//! A lookup first tries the stack that its CPU last counted in the stack's
//! entry of the ref count cache ([`refs::entry`]), which needs no hash: the
//! stack recorded again and again on a CPU is found there, compared in full
//! like any other. The entries hold only stacks published in the current
//! generation.
//!
//! Readers find a record from its slot, named by a cookie, or walk the
//! records in slot order by their depths; a header that is still 0 is a
//! record being written, whose length is not known yet, so a walk waits
//! there for its writer.
//!
//! Frames are plain memory: written once by the inserter before it links
//! them, then only read. Every reader runs in an RCU read-side critical
//! section and first checks that the table's gate is open; a reset closes
//! the gate and waits for a grace period before it clears the table, so no
//! reader can still be looking at a record when the arena is reused.

use crate::{
    cookie::Cookie,
    hash::StackHash,
    platform::{
        cpu_relax,
        fill_pages,
        storage,
        storage_bytes,
        Acquire,
        Atomic,
        Full,
        ReadSection,
        Relaxed,
        Release,
        Storage,
        Word, //
    },
    refs::{
        self,
        Entry,
        Refs,
        SharedCounts,
        FIRST_COUNT, //
    }, //
};
use kernel::{
    page::PAGE_SIZE,
    prelude::*, //
};

/// The deepest stack the table stores; deeper ones are recorded in full.
pub(crate) const MAX_DEPTH: usize = 64;

/// The stack depth the arena is sized for: `2^bits` stacks of this depth fit.
pub(crate) const DESIGN_DEPTH: usize = 16;

/// The most records a chain holds, all of which a lookup may examine.
pub(crate) const MAX_PROBE: usize = 32;

/// Smallest and largest accepted `bits`.
pub(crate) const BITS_MIN: u32 = 10;
/// See [`BITS_MIN`].
pub(crate) const BITS_MAX: u32 = 18;

/// Words of a record besides its frames: the header.
const HEADER_WORDS: usize = 1;

/// Bits of a header that hold the slot of the next record of the chain;
/// the depth is above them. Slot 0 is never a record, so 0 ends a chain.
const NEXT_BITS: u32 = 24;

/// Mask of a header's depth, once shifted down by [`NEXT_BITS`].
const DEPTH_MASK: u64 = 0x7f;

/// Bit of a header set once the record is published.
const PUBLISHED: u64 = 1 << 31;

// Every slot fits below the depth (the arena is rounded up to whole pages),
// every depth below the published bit.
const _: () = assert!(
    (1 << BITS_MAX) * (DESIGN_DEPTH + HEADER_WORDS) + HEADER_WORDS + PAGE_SIZE / size_of::<Word>()
        <= 1 << NEXT_BITS
);
const _: () = assert!(MAX_DEPTH as u64 <= DEPTH_MASK);
// And the ref count caches take every slot.
const _: () = assert!(NEXT_BITS <= refs::SLOT_BITS);
const _: () = assert!(DEPTH_MASK << NEXT_BITS < PUBLISHED);

/// Bit of [`Table::state`] set while a reset runs: the gate is closed.
const CLOSED: u64 = 1;

/// Why a stack got no cookie; the caller records it in full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// No room left in the arena, or the stack's chain already holds
    /// [`MAX_PROBE`] records.
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

/// Returns the low half of the header of a record of `depth` frames whose
/// chain goes on at slot `next`.
fn link(next: usize, depth: usize) -> u64 {
    ((depth as u64) << NEXT_BITS) | next as u64
}

/// Returns the slot of the next record of the chain, from a header.
fn next(header: u64) -> usize {
    (header & ((1 << NEXT_BITS) - 1)) as usize
}

/// Returns the depth of a record, from its header.
fn depth(header: u64) -> usize {
    ((header >> NEXT_BITS) & DEPTH_MASK) as usize
}

/// Returns the bucket of a stack of hash `hash`, in a table of `2^bits`
/// buckets: the top bits of the hash, the ones that depend on all of it.
///
/// `bits` is a table's, in [`BITS_MIN`]`..=`[`BITS_MAX`]. Were it 0, the
/// shift by 64 would wrap to none rather than panic, and the caller's
/// bounds check would catch the bucket.
#[inline]
pub(crate) fn bucket(hash: u64, bits: u32) -> usize {
    hash.wrapping_shr(u64::BITS - bits) as usize
}

/// Returns whether the frames `stored` in a record are `frames`.
///
/// Called for the records of the stack's bucket that are as deep as it,
/// which with a few records per bucket are mostly the stack itself: the
/// comparison folds the differences of all frames together and tests once
/// at the end, rather than branching on every frame to stop early.
#[inline]
fn same(stored: &[u64], frames: &[usize]) -> bool {
    stored.len() == frames.len()
        && stored
            .iter()
            .zip(frames)
            .fold(0, |diff, (&s, &f)| diff | (s ^ f as u64))
            == 0
}

/// Returns whether the frames `stored` in a record are `frames`, as
/// [`same`] does, but with a loop that branches on every frame: inlined
/// into the entry point ftrace calls, it needs fewer registers, where the
/// unrolled loop of [`same`] would spill to the stack.
#[inline(always)]
fn same_in_line(stored: &[u64], frames: &[usize]) -> bool {
    stored.len() == frames.len() && stored.iter().zip(frames).all(|(&s, &f)| s == f as u64)
}

/// Returns the entry of the CPUs' ref count caches of the stack `frames`
/// ([`refs::entry`]); `word` reads a frame.
#[inline(always)]
fn entry_of<T: Copy>(frames: &[T], word: impl Fn(T) -> u64) -> Entry {
    let frame = |i: usize| frames.get(i).map_or(0, |&f| word(f));
    refs::entry(frames.len(), frame(0), frame(frames.len() / 2))
}

/// What a walk along a chain found.
enum Walk {
    /// The published record in this slot holds the stack.
    Found(usize),
    /// A record that holds the stack is linked but not yet published.
    Busy,
    /// The stack is not among the records walked, this many, to the end.
    Missing(usize),
    /// The walk gave up before the end.
    TooLong,
}

/// A stack read back from the table.
///
/// # Invariants
///
/// `slot` starts a record published in the current generation of the table
/// that `refs` and `headers` belong to, found with the table's gate open,
/// within an RCU read-side critical section that lasts as long as `'a`;
/// `frames` are the record's frames.
pub(crate) struct Record<'a> {
    /// The slot of the stack.
    slot: usize,
    /// The CPUs' caches of ref counts of the table.
    refs: &'a Refs,
    /// The headers of the table's records.
    headers: Headers<'a>,
    /// The frames, in the arena.
    frames: &'a [u64],
}

impl Record<'_> {
    /// Returns how often the stack was recorded in this generation.
    ///
    /// Adds up every CPU's count, so only readers that show it call it.
    pub(crate) fn refs(&self) -> u64 {
        let entry = entry_of(self.frames, |f| f);
        // SAFETY: By the type invariants, `slot` is a record of `headers`,
        // published in the current generation, and the critical section in
        // which the gate was found open lasts as long as `self`.
        unsafe { self.refs.read(&self.headers, self.slot, entry) }
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

/// The headers of the arena's records, which hold the shared ref counts.
///
/// Holds the arena, not a slice of all its words: each access then views
/// only the word it reaches, which is what lets Miri check the table, built
/// out of tree on a host, at a cost per access that does not grow with the
/// arena.
#[derive(Clone, Copy)]
struct Headers<'a>(&'a Storage<Word>);

impl Headers<'_> {
    /// Returns the header of the record in `slot`, or `None` if `slot` is
    /// outside the arena.
    ///
    /// # Safety
    ///
    /// `slot` must start a record of the current generation: one the caller
    /// reserved, or one it found linked or published, or reached by the
    /// records' depths, in an RCU read-side critical section in which it
    /// found the gate open; or no lookup may run meanwhile. Any other word
    /// may be a frame, which inserters write and lookups read as plain
    /// memory.
    #[inline]
    unsafe fn get(&self, slot: usize) -> Option<&Atomic<u64>> {
        let word = self.0.get(slot)?;
        // SAFETY: The pointer is valid and aligned for a `u64` as long as
        // the arena. `slot` starts a record (see above), and a header is
        // only ever accessed atomically within a generation; a reset waits
        // for every accessor before the word is reused.
        Some(unsafe { Atomic::from_ptr(word.as_ptr()) })
    }
}

impl SharedCounts for Headers<'_> {
    #[inline]
    unsafe fn shared(&self, slot: usize) -> Option<&Atomic<u64>> {
        // SAFETY: A published record's slot starts it, and the caller found
        // the gate open, per the safety requirements.
        unsafe { self.get(slot) }
    }
}

/// The table and its arena.
///
/// # Invariants
///
/// Within a generation:
/// - a bucket is 0 or the slot of a record linked in it;
/// - once a record is linked, the depth and the next slot in its header
///   never change: in the header's low half, only [`Table::publish`] sets
///   the published bit, once;
/// - a record is published only after it was linked, and hits count in its
///   header only once it is published.
///
/// The buckets, the arena and the ref count caches are emptied only while
/// the gate is closed and no recorder or reader that found it open is still
/// inside.
pub(crate) struct Table<H> {
    /// The slot of the last record linked in each bucket, 0 if none; their
    /// number is a power of two.
    buckets: Storage<Atomic<u32>>,
    /// The records, end to end from word 1: word 0 is never one. The words
    /// not reserved in this generation are 0.
    arena: Storage<Word>,
    /// The CPUs' caches of ref counts.
    refs: Refs,
    /// Records published so far in the high half, arena words reserved in
    /// the low.
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
        // The pages the arena takes in any case hold records too.
        let words = fill_pages::<Word>(HEADER_WORDS + (1 << bits) * (DESIGN_DEPTH + HEADER_WORDS));
        Ok(Self {
            buckets: storage(1 << bits, || Atomic::new(0))?,
            arena: storage(words, Word::new)?,
            refs: Refs::new()?,
            used: Reservations(Atomic::new(HEADER_WORDS as u64)),
            state: Atomic::new(u64::from(generation) << 32),
            hash,
        })
    }

    /// Returns how many stacks of [`DESIGN_DEPTH`] frames the arena holds;
    /// it holds more of shallower ones.
    pub(crate) fn capacity(&self) -> usize {
        // The arena is sized for one such stack per bucket.
        self.bucket_count()
    }

    /// Returns `log2` of [`Self::capacity`].
    #[inline]
    pub(crate) fn bits(&self) -> u32 {
        self.capacity().trailing_zeros()
    }

    /// Returns the number of buckets.
    pub(crate) fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// Returns the bytes the buckets, the arena and the ref count caches
    /// occupy.
    pub(crate) fn memory_bytes(&self) -> usize {
        storage_bytes(&self.buckets) + storage_bytes(&self.arena) + self.refs.memory_bytes()
    }

    /// Returns the number of stacks stored in this generation.
    ///
    /// A walk ([`Table::next_published`]) that starts after the call finds
    /// at least that many records.
    pub(crate) fn entries(&self) -> usize {
        // ORDERING: Acquire pairs with the Release count of `publish()`, so
        // that the records counted are seen published.
        (self.used.0.load(Acquire) >> 32) as usize
    }

    /// Returns where the records reserved so far in this generation end: a
    /// position, as [`Table::next_published`] takes them.
    pub(crate) fn reserved_end(&self) -> usize {
        // ORDERING: Relaxed: a reservation publishes nothing; a caller
        // waits for the inserts that made it before it reads the records.
        self.used.0.load(Relaxed) as u32 as usize
    }

    /// Returns the arena bytes reserved in this generation: the records,
    /// and the space of inserts that lost a race.
    pub(crate) fn arena_bytes_used(&self) -> usize {
        // ORDERING: Relaxed: a figure for the counters' file, which reads
        // nothing through it.
        (self.used.0.load(Relaxed) as u32 as usize).saturating_sub(HEADER_WORDS) * size_of::<Word>()
    }

    /// Returns the current generation.
    ///
    /// Exact while resets are held off (a reset changes it under the map's
    /// reset lock); otherwise a figure for the counters' file.
    pub(crate) fn generation(&self) -> u32 {
        // ORDERING: Relaxed: callers that read the table through the
        // generation check it with `open()`, which orders.
        (self.state.load(Relaxed) >> 32) as u32
    }

    /// Returns the generation if the gate is open, `None` while a reset
    /// runs.
    ///
    /// Called first in an RCU read-side critical section: if it returns a
    /// generation, no reset can clear the table before the section ends.
    #[inline]
    pub(crate) fn open(&self) -> Option<u32> {
        // ORDERING: Acquire pairs with the Release in `finish_reset()`: whoever
        // sees the gate open after a reset sees the cleared table.
        let state = self.state.load(Acquire);
        (state & CLOSED == 0).then_some((state >> 32) as u32)
    }

    /// Returns the headers of the arena's records.
    #[inline]
    fn headers(&self) -> Headers<'_> {
        Headers(&self.arena)
    }

    /// Returns the cookie of `frames` if the entry of this CPU's ref count
    /// cache that counts the stack holds its count, and counts the hit
    /// there; `None` if the entry holds another stack's count or none, or
    /// could not count the hit: [`Table::lookup_hashed`] then looks the
    /// stack up.
    ///
    /// The stack a CPU records is most often the one it recorded before:
    /// this finds it with a few instructions to pick the entry and one
    /// record to compare, with no hash and no walk. Always inlined into the
    /// entry point ftrace calls for every recorded stack, whose fast path
    /// it is.
    ///
    /// Never sleeps, never allocates and never waits for another CPU, so it
    /// may run in any context, NMI included, as [`Table::lookup_hashed`]
    /// does. The critical section `_rcu` (preemption disabled counts) is
    /// what a reset waits for before it clears the table.
    #[inline(always)]
    pub(crate) fn lookup_held(&self, frames: &[usize], _rcu: ReadSection<'_>) -> Option<Cookie> {
        // The gate first: a hit counts in the generation it found open. No
        // check of the depth: a stack deeper than any record is held by
        // none.
        let generation = self.open()?;
        let held = self.refs.holder(entry_of(frames, |f| f as u64))?;
        // SAFETY: The gate was found open in `_rcu`, and an entry of this
        // table's caches held the slot.
        (unsafe { self.holds(held.slot(), frames) } && self.refs.count_held(held))
            .then(|| Cookie::new(generation, held.slot() as u32))
    }

    /// Returns the cookie of `frames`, found in their chain or inserted
    /// there: the lookup of a stack that [`Table::lookup_held`] did not
    /// find.
    ///
    /// Lock-free, and safe in any context, as [`Table::lookup_held`] is.
    /// It checks the gate again, and picks the stack's entry again, rather
    /// than take them from `lookup_held()`: both take a few instructions,
    /// and the entry point ftrace calls keeps this part out of line, where
    /// the walk's registers do not weigh on its fast path.
    #[inline]
    pub(crate) fn lookup_hashed(
        &self,
        frames: &[usize],
        _rcu: ReadSection<'_>,
    ) -> Result<Found, Fallback> {
        let (generation, bucket) = self.admit(frames)?;
        // ORDERING: Acquire pairs with the Release cmpxchg that linked the
        // chain's first record in `insert()`; every cmpxchg of the bucket is
        // one, so the records linked before it are visible too.
        let head = bucket.load(Acquire) as usize;
        let entry = entry_of(frames, |f| f as u64);
        // SAFETY: `admit()` found the gate open in `_rcu`, and `head` is the
        // bucket's, loaded with Acquire since.
        match unsafe { self.walk(head, 0, MAX_PROBE, frames) } {
            Walk::Found(slot) => {
                // SAFETY: The walk found `slot` published, in the generation
                // whose gate is open in `_rcu`.
                unsafe { self.refs.hit(&self.headers(), slot, entry) };
                Ok(Found::Hit(Cookie::new(generation, slot as u32)))
            }
            Walk::Busy => Err(Fallback::Busy),
            Walk::TooLong => Err(Fallback::Full),
            Walk::Missing(len) => {
                // SAFETY: As for the walk, which found `len` records from
                // `head`.
                unsafe { self.insert(bucket, head, len, frames, generation, entry) }
            }
        }
    }

    /// Returns the generation a lookup of `frames` counts in and the bucket
    /// of their chain, or why the stack is recorded in full before any
    /// walk: a reset running, or a stack deeper than any record.
    ///
    /// The gate first: whatever is recorded in full while a reset runs
    /// counts as such, not in a counter the reset is rebasing.
    #[inline(always)]
    fn admit(&self, frames: &[usize]) -> Result<(u32, &Atomic<u32>), Fallback> {
        let generation = self.open().ok_or(Fallback::Reset)?;
        if frames.len() > MAX_DEPTH {
            return Err(Fallback::Depth);
        }
        Ok((generation, self.bucket_of(frames).ok_or(Fallback::Full)?))
    }

    /// Returns the bucket of `frames`, which holds the slot of the last
    /// record linked in their chain.
    #[inline(always)]
    fn bucket_of(&self, frames: &[usize]) -> Option<&Atomic<u32>> {
        self.buckets
            .get(bucket(self.hash.hash(frames), self.bits()))
    }

    /// Returns whether the record in `slot`, whose count a CPU's entry
    /// holds, is published and holds `frames`.
    ///
    /// The entries hold only slots of records published in the current
    /// generation ([`Refs::hit`] is given no other), and a reset empties
    /// them before the next one.
    ///
    /// # Safety
    ///
    /// The caller must be in an RCU read-side critical section in which it
    /// found the gate open, and `slot` must be one that an entry of this
    /// table's caches held in it.
    #[inline(always)]
    unsafe fn holds(&self, slot: usize, frames: &[usize]) -> bool {
        // The bounds of the frames first: they imply those of the header,
        // just before them, so that the compiler can fold away the check
        // that `published()` makes of it.
        let Some(words) = self.frame_words(slot, frames.len()) else {
            return false;
        };
        // SAFETY: `slot` starts a published record (see above), whose gate
        // the caller found open.
        let Some(header) = (unsafe { self.published(slot) }) else {
            return false;
        };
        if depth(header) != frames.len() {
            return false;
        }
        // SAFETY: `slot` starts a record of the current generation (see
        // above), whose gate the caller found open in its critical section,
        // and `published()` saw it published with an Acquire load: its
        // frames were written before, and no reset can let an inserter
        // reuse them before the critical section ends.
        same_in_line(unsafe { Word::values(words) }, frames)
    }

    /// Walks at most `limit` records of a chain, from slot `from` to slot
    /// `to` (excluded) or to its end, looking for `frames`.
    ///
    /// # Safety
    ///
    /// `from` must be 0 or the slot of a record linked in the current
    /// generation, seen through an Acquire load of its bucket after the
    /// caller found the gate open, in the caller's RCU read-side critical
    /// section.
    #[inline(always)]
    unsafe fn walk(&self, from: usize, to: usize, limit: usize, frames: &[usize]) -> Walk {
        let headers = self.headers();
        let mut slot = from;
        for walked in 0..=limit {
            // Slot 0 ends every chain.
            if slot == to || slot == 0 {
                return Walk::Missing(walked);
            }
            if walked == limit {
                break;
            }
            // A linked slot is always within the arena: no insert follows a
            // chain that leaves it.
            // SAFETY: `slot` is `from`, or the next slot of a record linked
            // before it, per the safety requirements.
            let Some(header) = (unsafe { headers.get(slot) }) else {
                return Walk::TooLong;
            };
            // ORDERING: Relaxed: the link (Acquire load of the bucket) made
            // the frames, the next slot and the depth visible, and they do
            // not change once linked. The published bit, set after the
            // link, orders nothing the link did not; the high half, the
            // ref count, is not used here.
            let header = header.load(Relaxed);
            if depth(header) == frames.len() {
                // SAFETY: The record is linked (see above) in this generation,
                // whose gate was open in the caller's critical section.
                let stored = unsafe { self.frames(slot, frames.len()) };
                if stored.is_some_and(|stored| same(stored, frames)) {
                    return if header & PUBLISHED != 0 {
                        Walk::Found(slot)
                    } else {
                        Walk::Busy
                    };
                }
            }
            slot = next(header);
        }
        Walk::TooLong
    }

    /// Inserts `frames`, which are not in the chain of `len` records that
    /// starts at slot `head` of `bucket`.
    ///
    /// A chain holds at most [`MAX_PROBE`] records, so that a lookup reaches
    /// every one of them.
    ///
    /// Out of line: a stack is inserted once and then hit many times.
    ///
    /// # Safety
    ///
    /// `head` and `len` must be what a walk made under the requirements of
    /// [`Table::walk`] found, in the critical section of the caller, and
    /// `generation` the one whose gate it found open there.
    #[inline(never)]
    unsafe fn insert(
        &self,
        bucket: &Atomic<u32>,
        mut head: usize,
        mut len: usize,
        frames: &[usize],
        generation: u32,
        entry: Entry,
    ) -> Result<Found, Fallback> {
        if len >= MAX_PROBE {
            return Err(Fallback::Full);
        }
        let Some((slot, words)) = self.reserve(frames.len()) else {
            return Err(Fallback::Full);
        };
        let headers = self.headers();
        // A reserved record lies within the arena, its header too: this
        // check, which keeps the path free of a panic branch, never fails.
        // SAFETY: `reserve()` handed the record to this call.
        let Some(header) = (unsafe { headers.get(slot) }) else {
            return Err(Fallback::Full);
        };
        // SAFETY: `reserve()` handed `words` to this call alone, and no reader
        // reaches them before the Release cmpxchg below links them; readers
        // of the previous generation were waited for by the reset that
        // cleared the reservations.
        unsafe {
            for (word, &frame) in words.iter().zip(frames) {
                word.as_ptr().write(frame as u64);
            }
        }
        // Each failed link is a record linked meanwhile: at most as many as
        // the chain has room for.
        loop {
            // INVARIANT: The next slot and the depth are final once the
            // cmpxchg below links the record (only `publish()` changes the
            // low half after that). Until then only the walks of the arena
            // read the header, for the depth, which is final from the first
            // store: a retry changes only the next slot.
            header.store(FIRST_COUNT | link(head, frames.len()), Relaxed);
            // ORDERING: Release orders the frames and the header before the
            // link, pairs with the Acquire loads of the bucket by lookups.
            match bucket.cmpxchg(head as u32, slot as u32, Release) {
                Ok(_) => {
                    self.publish(header);
                    return Ok(Found::Inserted(Cookie::new(generation, slot as u32)));
                }
                Err(_) => {
                    // ORDERING: Acquire, as in `lookup_hashed()`, to see
                    // the records linked meanwhile; the failed cmpxchg
                    // orders nothing.
                    let current = bucket.load(Acquire) as usize;
                    // SAFETY: `current` was loaded with Acquire from the
                    // bucket, whose gate the caller found open.
                    match unsafe { self.walk(current, head, MAX_PROBE - len, frames) } {
                        // The space reserved stays unused: the stack is linked
                        // once, by whoever linked first.
                        Walk::Found(found) => {
                            // SAFETY: The walk found `found` published, in
                            // `generation`, whose gate the caller found open.
                            unsafe { self.refs.hit(&headers, found, entry) };
                            return Ok(Found::Hit(Cookie::new(generation, found as u32)));
                        }
                        Walk::Busy => return Err(Fallback::Busy),
                        // At least one record was linked meanwhile.
                        Walk::Missing(linked)
                            if linked > 0 && len.saturating_add(linked) < MAX_PROBE =>
                        {
                            head = current;
                            len = len.saturating_add(linked);
                        }
                        Walk::Missing(_) | Walk::TooLong => return Err(Fallback::Full),
                    }
                }
            }
        }
    }

    /// Marks the record of header `header`, just linked, published: from
    /// now on lookups count hits on it and readers show it.
    fn publish(&self, header: &Atomic<u64>) {
        // INVARIANT: Published once, after the link; no hit counts on the
        // record before, so the store loses no count.
        // ORDERING: Release orders the frames before the published bit for
        // the readers that load the header with Acquire (lookups also see
        // them through the bucket).
        header.store(header.load(Relaxed) | PUBLISHED, Release);
        // ORDERING: Release orders the published bit before the count, for
        // its readers: a walk that starts after one read the count finds at
        // least that many published records.
        self.used.0.fetch_add(1 << 32, Release);
    }

    /// Reserves one record of `depth` frames; returns its slot and its frame
    /// words.
    ///
    /// Lock-free: it retries only when another CPU, or an interrupt or NMI
    /// on this one, reserved or published in between, so some inserter
    /// always gets on, and gives up as soon as the record would not fit.
    fn reserve(&self, depth: usize) -> Option<(usize, &[Word])> {
        // ORDERING: Relaxed: only the start of the cmpxchg loop below.
        let mut used = self.used.0.load(Relaxed);
        loop {
            let slot = used as u32 as usize;
            let words = self.frame_words(slot, depth)?;
            // The record is within the arena: the sum cannot wrap.
            let next = used.wrapping_add((HEADER_WORDS + depth) as u64);
            // ORDERING: Relaxed: the reservation only hands out disjoint
            // ranges; publication is ordered by the link's Release cmpxchg.
            match self.used.0.cmpxchg(used, next, Relaxed) {
                Ok(_) => return Some((slot, words)),
                Err(current) => used = current,
            }
        }
    }

    /// Returns the frames of the record of `depth` frames in `slot`.
    ///
    /// Returns `None` only if the record does not lie within the arena,
    /// which a linked record always does: one bounds check, and no panic
    /// on the recording path should a header ever be corrupted.
    ///
    /// # Safety
    ///
    /// The record must have been linked in the current generation, as seen
    /// by an Acquire load of its bucket or of its published header after
    /// [`Table::open`] returned the generation, all within an RCU read-side
    /// critical section that outlives the returned references.
    #[inline]
    unsafe fn frames(&self, slot: usize, depth: usize) -> Option<&[u64]> {
        let words = self.frame_words(slot, depth)?;
        // SAFETY: The frames were written before the link, and no reset can
        // let an inserter reuse them before the critical section ends.
        Some(unsafe { Word::values(words) })
    }

    /// Returns the words of the `depth` frames of a record in `slot`, which
    /// follow its header, or `None` if they do not lie within the arena.
    #[inline]
    fn frame_words(&self, slot: usize, depth: usize) -> Option<&[Word]> {
        let first = slot + HEADER_WORDS;
        self.arena.get(first..first + depth)
    }

    /// Clears or sets again the published bit of the record in `slot`,
    /// linked in the current generation. Cleared, the record is as an
    /// insert leaves it between its link and `publish()`: a window of a few
    /// instructions, which only an interrupt or an NMI can stop an insert in.
    ///
    /// # Safety
    ///
    /// `slot` is that of a record linked in the current generation: any
    /// other word of the arena may be a frame, which readers read as plain
    /// memory.
    #[cfg(CONFIG_FTRACE_STACKMAP_KUNIT_TEST)]
    pub(crate) unsafe fn set_published(&self, slot: usize, published: bool) {
        let headers = self.headers();
        // SAFETY: `slot` is a linked record's, per the safety requirements.
        let Some(header) = (unsafe { headers.get(slot) }) else {
            return;
        };
        // ORDERING: Release, as in `publish()`; Relaxed is enough for the
        // load, since the tests do this with no recorder running.
        let old = header.load(Relaxed);
        let new = if published {
            old | PUBLISHED
        } else {
            old & !PUBLISHED
        };
        header.store(new, Release);
    }

    /// Inserts `frames` as an insert would that walked their chain from slot
    /// `head`, found them missing and then lost the race to link: the
    /// records linked in front of `head` since are the ones it raced.
    /// Plays the retry of `insert()` that only a concurrent insert, an
    /// interrupt or an NMI can otherwise make it take. An insert would not
    /// have begun if the chain from `head` held the stack or were too long
    /// to walk: that gives [`Fallback::Full`].
    ///
    /// # Safety
    ///
    /// `head` is 0 or the slot of a record linked in the current
    /// generation: the walk reads the records it finds from there as linked
    /// ones.
    #[cfg(CONFIG_FTRACE_STACKMAP_KUNIT_TEST)]
    pub(crate) unsafe fn insert_raced(
        &self,
        head: usize,
        frames: &[usize],
        _rcu: ReadSection<'_>,
    ) -> Result<Found, Fallback> {
        let (generation, bucket) = self.admit(frames)?;
        // SAFETY: `admit()` found the gate open in `_rcu`, and `head` is a
        // linked record's, per the safety requirements.
        match unsafe { self.walk(head, 0, MAX_PROBE, frames) } {
            Walk::Missing(len) => {
                let entry = entry_of(frames, |f| f as u64);
                // SAFETY: As for the walk, which found `len` records.
                unsafe { self.insert(bucket, head, len, frames, generation, entry) }
            }
            _ => Err(Fallback::Full),
        }
    }

    /// Returns how many records a lookup of `frames` walks past before it
    /// finds them, if it finds them in `slot`: the length of the walk that
    /// [`Table::lookup_hashed`] makes, measured with the same walk.
    #[cfg(CONFIG_FTRACE_STACKMAP_KUNIT_TEST)]
    pub(crate) fn records_walked_past(
        &self,
        frames: &[usize],
        slot: usize,
        _rcu: ReadSection<'_>,
    ) -> Option<usize> {
        self.open()?;
        // ORDERING: Acquire, as in `lookup_hashed()`.
        let head = self.bucket_of(frames)?.load(Acquire) as usize;
        for limit in 1..=MAX_PROBE {
            // SAFETY: The gate was found open in `_rcu`, and `head` is the
            // bucket's, loaded with Acquire since.
            match unsafe { self.walk(head, 0, limit, frames) } {
                Walk::Found(found) => return (found == slot).then_some(limit - 1),
                Walk::TooLong => continue,
                Walk::Busy | Walk::Missing(_) => return None,
            }
        }
        None
    }

    /// Reserves a record of `depth` frames and leaves it as an insert
    /// stopped right after its reservation does, by preemption in a test
    /// or an interrupt in a recorder: its words handed out, its header
    /// still 0. Returns its slot. A walk of the arena waits at that record
    /// until it is abandoned ([`Table::abandon_unwritten`]).
    #[cfg(test)]
    pub(crate) fn reserve_unwritten(&self, depth: usize) -> Option<usize> {
        self.reserve(depth).map(|(slot, _)| slot)
    }

    /// Stores the header of the record of `depth` frames that
    /// [`Table::reserve_unwritten`] left in `slot`, as an insert that then
    /// loses the race to link it does: the record is never published.
    ///
    /// # Safety
    ///
    /// `slot` and `depth` must be those of a record
    /// [`Table::reserve_unwritten`] returned, not yet abandoned: the header
    /// is stored with an atomic store, which must not race a plain read of
    /// the frames of a linked record.
    #[cfg(test)]
    pub(crate) unsafe fn abandon_unwritten(&self, slot: usize, depth: usize) {
        // SAFETY: `slot` starts a record reserved, per the safety
        // requirements.
        if let Some(header) = unsafe { self.headers().get(slot) } {
            // ORDERING: Relaxed: walks read only the depth from it, and no
            // frame of the record is ever read.
            header.store(FIRST_COUNT | link(0, depth), Relaxed);
        }
    }

    /// Returns the header of the record in `slot` if it is published.
    ///
    /// # Safety
    ///
    /// As for [`Headers::get`].
    #[inline]
    unsafe fn published(&self, slot: usize) -> Option<u64> {
        let headers = self.headers();
        // SAFETY: Per the safety requirements.
        let header = unsafe { headers.get(slot) }?;
        // ORDERING: Acquire pairs with the Release in `publish()`: whoever
        // sees the published bit sees the frames.
        let header = header.load(Acquire);
        (header & PUBLISHED != 0).then_some(header)
    }

    /// Returns the stack in `slot` if the gate is open, the map is in
    /// `generation` and a stack was published in the slot.
    ///
    /// # Safety
    ///
    /// If `generation` is the table's current one, `slot` must be where a
    /// record of it starts, such as the slot a cookie of that generation
    /// names, or no lookup may run during the call: any other word would be
    /// read as a header, and the words after it as frames, while a lookup
    /// may be writing them (an insert its frames, a hit its header's
    /// count). A generation is never reused ([`crate::cookie`]), so a stale
    /// cookie meets this.
    pub(crate) unsafe fn slot<'a>(
        &'a self,
        slot: usize,
        generation: u32,
        _rcu: ReadSection<'a>,
    ) -> Option<Record<'a>> {
        if self.open()? != generation {
            return None;
        }
        // SAFETY: `slot` starts a record, or no lookup runs, per the safety
        // requirements, and the gate was found open in `_rcu`.
        let header = unsafe { self.published(slot) }?;
        let depth = depth(header);
        // ORDERING: Relaxed: the record's reservation came before its
        // publication, which the Acquire load of the header saw, so a
        // published record always lies within what this load returns.
        let reserved = self.used.0.load(Relaxed) as u32 as usize;
        if depth > MAX_DEPTH || slot + HEADER_WORDS + depth > reserved {
            return None;
        }
        // SAFETY: `slot` starts a record, or no lookup writes the words,
        // per the safety requirements; a record was published (Acquire
        // above) after the gate was seen open, within `_rcu`, which
        // outlives the frames.
        let frames = unsafe { self.frames(slot, depth) }?;
        // INVARIANT: The record in `slot` was seen published in
        // `generation`, the current one, after the gate was seen open in
        // `_rcu`, which lasts as long as `'a`.
        Some(Record {
            slot,
            refs: &self.refs,
            headers: self.headers(),
            frames,
        })
    }

    /// Returns the slot of the first record published at or after `pos` and
    /// before `limit`, and the position after that record, if the gate is
    /// open and the map is in `generation`.
    ///
    /// Positions are where records start: 0 for the first one, or a
    /// position this returned. The walk goes from record to record by their
    /// depths, so it waits at a record still being written, whose depth is
    /// not known yet, until its header is stored: every record published
    /// before the call is found. The wait is short: the writer runs with
    /// preemption disabled, or in an interrupt or NMI, and stores the header
    /// once it has copied at most [`MAX_DEPTH`] frames. (A test that inserts
    /// from a preemptible RCU reader keeps the walk waiting while it is
    /// preempted.)
    ///
    /// # Safety
    ///
    /// If `generation` is the table's current one, `pos` must be 0 or a
    /// position this function returned for it: as for [`Table::slot`], any
    /// other word would be read as a header.
    pub(crate) unsafe fn next_published(
        &self,
        pos: usize,
        limit: usize,
        generation: u32,
        _rcu: ReadSection<'_>,
    ) -> Option<(usize, usize)> {
        if self.open()? != generation {
            return None;
        }
        // ORDERING: Relaxed: a bound, as in `slot()`: the records published
        // before the call were reserved before it, and the walk waits for
        // the headers of those reserved since, which it reads with Acquire.
        let used = self.used.0.load(Relaxed) as u32 as usize;
        let headers = self.headers();
        let mut slot = pos.max(HEADER_WORDS);
        while slot < used.min(limit) {
            // SAFETY: `slot` is `pos`, a record's start per the safety
            // requirements, or reached from it by the records' depths.
            let word = unsafe { headers.get(slot) }?;
            // ORDERING: Acquire, as in `published()`. A header is stored
            // whole, so any non-zero value holds the record's final depth;
            // the words of the generation are 0 until then (`clear()`, made
            // visible by the gate's Acquire). No reset can run meanwhile:
            // it waits for this RCU reader.
            let mut header = word.load(Acquire);
            while header == 0 {
                cpu_relax();
                header = word.load(Acquire);
            }
            let end = slot + HEADER_WORDS + depth(header);
            if header & PUBLISHED != 0 {
                return Some((slot, end));
            }
            slot = end;
        }
        None
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
        // A cmpxchg loop sets the bit, as a `fetch_or()` would, which the
        // kernel's `Atomic` does not offer: a gate closed twice stays
        // closed, in the same generation. The Relaxed load is only the
        // first guess, which the cmpxchg checks.
        let mut state = self.state.load(Relaxed);
        while let Err(now) = self.state.cmpxchg(state, state | CLOSED, Full) {
            state = now;
        }
    }

    /// Empties the table.
    ///
    /// # Safety
    ///
    /// The gate must be closed ([`Table::begin_reset`]), and every recorder
    /// or reader that found it open must have left, as after an RCU grace
    /// period that started once it closed: the arena's frames are written
    /// here with plain stores. Nothing else may empty the table or move it
    /// to another generation meanwhile.
    pub(crate) unsafe fn clear(&self) {
        for bucket in self.buckets.iter() {
            // INVARIANT: The gate is closed and no recorder is inside.
            // ORDERING: Relaxed, as every access of `clear()`: the Release
            // that reopens the gate in `finish_reset()` publishes them all.
            bucket.store(0, Relaxed);
        }
        // Only the words up to the reservations were written. Zeroed so that
        // the next generation's walks tell the headers not yet stored.
        let used = self.used.0.load(Relaxed) as u32 as usize;
        for word in self.arena.iter().take(used) {
            // SAFETY: The gate is closed and no recorder or reader is inside,
            // per the safety requirements: nothing else accesses the arena
            // until `finish_reset()` publishes the cleared table.
            unsafe { word.as_ptr().write(0) };
        }
        self.refs.clear();
        self.used.0.store(HEADER_WORDS as u64, Relaxed);
    }

    /// Moves to generation `next` and opens the gate again.
    ///
    /// # Safety
    ///
    /// [`Table::clear`] must have emptied the table since the gate closed,
    /// and `next` must be the generation after the current one
    /// ([`crate::cookie::next_generation`]): [`Table::slot`] and the walks
    /// of the arena rely on a generation never coming back, with other
    /// records in its slots.
    pub(crate) unsafe fn finish_reset(&self, next: u32) {
        // ORDERING: Release publishes the cleared table to recorders and
        // readers, which check the gate with Acquire.
        self.state.store(u64::from(next) << 32, Release);
    }
}
