// SPDX-License-Identifier: GPL-2.0

//! Ref counts: how often each stored stack was recorded in the generation,
//! and the stacks each CPU recorded last.
//!
//! Every hit adds one to its stack's count. Were that an atomic add to a
//! count shared by all CPUs, it would be the one line a hit writes that
//! other CPUs write too, and a stack recorded on every CPU (the idle loop's
//! sched_switch, a lock taken everywhere) would move that line from CPU to
//! CPU on each hit. So each CPU also keeps the counts of the stacks it hits
//! in a cache of its own, [`PENDING`] entries, and adds an entry's count to
//! the shared count only when another stack takes the entry. A hit on a
//! stack that holds its entry writes nothing that another CPU writes. A
//! stack whose entry another stack holds counts on the shared count, and
//! takes the entry when it is free or every [`TAKE_EVERY`] shared counts:
//! a stack hit often soon holds its entry, and stacks hit in turn that
//! share an entry do not trade it on every hit.
//!
//! A stack's entry is picked by [`entry`] from its depth and two of its
//! frames, which the lookup has at hand before it hashes the stack: a few
//! instructions, where the hash takes a few per frame. So the entry also
//! tells the lookup which stack this CPU last counted there: the stack a
//! CPU records again and again (a syscall loop, a tracepoint hit from one
//! path) is then compared with that one stack and found without the hash
//! or the walk of its chain ([`Refs::holder`]).
//!
//! An entry is one word: in the high half, the slot number plus one and
//! check bits of its stack's key, which tell most stacks that share the
//! entry apart with no look at their records; in the low half, the count.
//! It is updated with `this_cpu_cmpxchg()`: an interrupt or NMI that
//! updates the same entry in the middle of a hit makes the hit's cmpxchg
//! fail instead of being overwritten, and the hit then counts on the
//! shared count. The cmpxchg is one instruction with no lock prefix on x86,
//! and an atomic where the architecture's `this_cpu` operations are not
//! NMI-safe. A caller that moves to another CPU between reading the entry
//! and the cmpxchg (recorders run with preemption disabled; tests may not)
//! compares against the other CPU's entry, and changes it only if it holds
//! the same tag and count: what the change adds or takes is right for it.
//!
//! The shared count of a stack is the high half of a word its table keeps
//! for it ([`SharedCounts`]), the header of its record; the low half is the
//! table's and never changes once counts are added. The header shares its
//! cache line with the first frames, which lookups on every CPU read: one
//! more reason for a hit to write it rarely. The count saturates at
//! [`SATURATED`]; once it has, the stack's hits write nothing that other
//! CPUs read, but still take its entry as counted hits do: the stacks that
//! saturate are the ones hit most, which most need the lookup to find them
//! there.
//!
//! A count moves from an entry to the shared count, never back. A reader
//! loads the shared count before the entries, so it never counts a hit
//! twice. Between the cmpxchg that takes an entry and the add in `flush()`,
//! the entry's count is in neither place, and a reader misses it: while
//! stacks are being recorded, a count read is a lower bound and may be
//! lower than one read before it. Once the recorders stop, the counts it
//! reads are exact.

use crate::platform::{
    Acquire,
    Atomic,
    Relaxed,
    Release, //
};
use kernel::{
    cpu::possible_cpus,
    percpu::{
        CounterIndex,
        PerCpuCounters, //
    },
    prelude::*, //
};

/// Number of entries each CPU keeps.
const PENDING: usize = 64;

/// Number of words each CPU keeps: its entries, then its count of hits on
/// saturated stacks.
pub(crate) const CPU_WORDS: usize = PENDING + 1;

/// The index of one of a CPU's words.
type CpuWord = CounterIndex<CPU_WORDS>;

/// Index of the word after each CPU's entries that counts the hits it
/// made on saturated stacks: their clock for taking entries, in place of
/// the shared count that no longer moves.
const SATURATED_HITS: CpuWord = CpuWord::constant::<PENDING>();

// `entry()` picks an entry by the top bits of a product.
const _: () = assert!(PENDING.is_power_of_two());

/// A stack takes an entry that another stack holds on every this many
/// counts added to its shared count.
pub(crate) const TAKE_EVERY: u64 = 64;

/// The bits of an entry that hold its count.
const COUNT: u64 = u32::MAX as u64;

/// The largest count: reads report no more, and a shared count that an add
/// takes past it is put back to it. An entry holds fewer counts, so that
/// an add, of an entry or of one hit, never takes a shared count past
/// `2^32` from below it: the count is kept in 32 bits. Only two adds of
/// nearly that much each, at once, carry out of the word: the count then
/// reads low until one of them puts it back.
pub(crate) const SATURATED: u64 = 1 << 31;

/// Where the shared count sits in its word.
const SHARED_SHIFT: u32 = 32;

/// The word of a stack that was just inserted, counted once, for a table
/// to add its low half to.
pub(crate) const FIRST_COUNT: u64 = 1 << SHARED_SHIFT;

/// The words a table keeps for its stacks, whose high halves are the
/// shared counts.
pub(crate) trait SharedCounts {
    /// Returns the word of the stack in `slot`, if `slot` is in the table.
    ///
    /// # Safety
    ///
    /// `slot` must be that of a stack published in the current generation,
    /// with a count set to [`FIRST_COUNT`] before, and the caller must be in
    /// an RCU read-side critical section in which it found the table's gate
    /// open: any other word of a table may be a frame, which lookups read
    /// as plain memory.
    unsafe fn shared(&self, slot: usize) -> Option<&Atomic<u64>>;
}

/// Adds `n` counts to the shared count in `word`, saturating; returns the
/// count before.
#[inline]
fn add_shared(word: &Atomic<u64>, n: u64) -> u64 {
    // ORDERING: Release pairs with the Acquire load of the count by its
    // readers: one that sees the count here no longer sees it in the entry
    // it came from.
    let old = word.fetch_add(n << SHARED_SHIFT, Release);
    let before = old >> SHARED_SHIFT;
    if before.saturating_add(n) > SATURATED {
        // The low half is the table's, unchanged since the count was set:
        // only the count is put back. Adds that land in between are lost,
        // above the saturation anyway.
        // ORDERING: Release, as the add. An exchange rather than a store:
        // as a read-modify-write it carries on the release sequence of
        // `publish()`, so that a reader that loads this value with Acquire
        // (`Table::published()`) sees the frames, whichever context put the
        // count back.
        word.xchg((SATURATED << SHARED_SHIFT) | (old & COUNT), Release);
    }
    before
}

/// Bits of the slot numbers a table gives: its slots are below `2^24`.
pub(crate) const SLOT_BITS: u32 = 24;

/// Bits of an entry's tag that hold the slot number plus one.
const TAG_SLOT: u64 = ((1 << (SLOT_BITS + 1)) - 1) << 32;

/// Bits of an entry's tag that hold the check bits of its stack's key.
const TAG_CHECK: u64 = !(TAG_SLOT | COUNT);

/// Bits of a key that pick the entry.
const INDEX_BITS: u32 = PENDING.trailing_zeros();

// Each part of an entry has bits of its own, the check bits included.
const _: () = assert!(TAG_CHECK != 0 && TAG_CHECK & (TAG_SLOT | COUNT) == 0);

/// Multiplier of [`entry`]: `2^64` over the golden ratio, whose product's
/// top bits depend on every bit of the value multiplied.
const ENTRY_MUL: u64 = 0x9e37_79b9_7f4a_7c15;

/// Where each CPU counts a stack: the index of its entry, and check bits
/// from the same key, which the entry's tag keeps so that most stacks that
/// share the entry are told apart from its tag alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The index of the entry, below [`PENDING`].
    pub(crate) index: CpuWord,
    /// The check bits, in their place in the tag ([`TAG_CHECK`]).
    check: u64,
}

/// Returns the entry of each CPU's cache that counts a stack of `depth`
/// frames whose innermost frame is `first` and whose middle one (at
/// `depth / 2`) is `middle`, both 0 if the stack has none.
///
/// The innermost frame tells the call site of the event; the middle one,
/// which path led there, which often differs where the innermost frames
/// are the same (every sched_switch is recorded from `__schedule()`). Two
/// stacks that share an entry trade it as they are hit (see the module
/// documentation): a cost, not an error.
#[inline]
pub(crate) fn entry(depth: usize, first: u64, middle: u64) -> Entry {
    let key = (first ^ middle.rotate_left(32) ^ depth as u64).wrapping_mul(ENTRY_MUL);
    Entry {
        // CAST: The top bits, fewer than 64. Below `PENDING`, so the index
        // wraps to itself, with no division once inlined.
        index: CpuWord::wrapping((key >> (u64::BITS - INDEX_BITS)) as usize),
        // The bits below them, shifted to the top of the tag.
        check: (key << INDEX_BITS) & TAG_CHECK,
    }
}

/// Returns the high half of the entries that count for `slot`, whose stack
/// counts in `entry`: never 0, which marks a free entry.
///
/// `slot` is below `2^SLOT_BITS`.
#[inline]
fn tag(slot: usize, entry: Entry) -> u64 {
    (((slot as u64).wrapping_add(1) << 32) & TAG_SLOT) | entry.check
}

/// Returns the slot whose count the entry `word` holds, if it holds one.
#[inline]
fn slot_of(word: u64) -> Option<usize> {
    // CAST: At most `SLOT_BITS + 1` bits.
    (((word & TAG_SLOT) >> 32) as usize).checked_sub(1)
}

/// What a CPU's entry held when [`Refs::holder`] read it.
#[derive(Clone, Copy)]
pub(crate) struct Held {
    /// The index of the entry.
    index: CpuWord,
    /// The entry, as read.
    word: u64,
    /// The slot whose count it holds.
    slot: usize,
}

impl Held {
    /// Returns the slot whose count the entry holds.
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }
}

/// The CPUs' caches of ref counts of a table's stacks.
///
/// # Invariants
///
/// - An entry is 0 or `tag(slot, entry) | count` for a slot and an
///   [`Entry`] that [`Refs::hit`] was given since the last
///   [`Refs::clear`], with `count < SATURATED`.
/// - An entry counts for a slot only once that slot's shared count was set
///   to [`FIRST_COUNT`] in the current generation: only hits, which come
///   after the slot's publication, fill entries, and [`Refs::clear`]
///   empties them all between generations.
pub(crate) struct Refs {
    /// The entries of each CPU, in its per-CPU area, then its count of
    /// hits on saturated stacks.
    pending: PerCpuCounters<CPU_WORDS>,
}

impl Refs {
    /// Allocates the caches; fails as [`Stats::new`] does.
    ///
    /// [`Stats::new`]: crate::stats::Stats::new
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            pending: PerCpuCounters::new(GFP_KERNEL | __GFP_NOWARN)?,
        })
    }

    /// Returns the bytes the caches occupy.
    pub(crate) fn memory_bytes(&self) -> usize {
        possible_cpus().count() * size_of::<[u64; CPU_WORDS]>()
    }

    /// Returns what this CPU's `entry` holds, if it holds the count of a
    /// slot with the check bits of `entry`: the stack last counted there, a
    /// likely hit for the next stack whose entry it is.
    #[inline(always)]
    pub(crate) fn holder(&self, entry: Entry) -> Option<Held> {
        let word = self.pending.this_cpu_read(entry.index);
        if word & TAG_CHECK != entry.check {
            return None;
        }
        let slot = slot_of(word)?;
        Some(Held {
            index: entry.index,
            word,
            slot,
        })
    }

    /// Adds one to the count that [`Refs::holder`] returned, found to be
    /// that of the stack looked up; returns false, with nothing counted,
    /// when the entry changed since or has no room left, for the caller
    /// to count the hit with [`Refs::hit`].
    #[inline(always)]
    pub(crate) fn count_held(&self, held: Held) -> bool {
        // ORDERING: As in `hit()`, the cmpxchg orders nothing, and need not.
        held.word & COUNT < SATURATED - 1
            && self
                .pending
                .this_cpu_cmpxchg(held.index, held.word, held.word.wrapping_add(1))
                .is_ok()
    }

    /// Adds one to the count of `slot`, whose stack was found, in `counts`;
    /// `entry` is the stack's ([`entry`]).
    ///
    /// Always inlined into the lookup, like the rest of a hit.
    ///
    /// # Safety
    ///
    /// `counts` must be the words of the table whose stacks these caches
    /// count, and `slot` must meet the requirements of
    /// [`SharedCounts::shared`]: the entry may take the slot, and a lookup
    /// then reads the record of the slot that [`Refs::holder`] finds there.
    #[inline(always)]
    pub(crate) unsafe fn hit(&self, counts: &impl SharedCounts, slot: usize, entry: Entry) {
        // SAFETY: Per the safety requirements.
        let Some(shared) = (unsafe { counts.shared(slot) }) else {
            return;
        };
        let index = entry.index;
        let old = self.pending.this_cpu_read(index);
        // Whether the entry is this stack's and has room for one more
        // count, in one compare: the tag's low half is 0, so the xor is the
        // count if the entry is the stack's, and at least 2^32 otherwise.
        if old ^ tag(slot, entry) < SATURATED - 1 {
            // ORDERING: `this_cpu_cmpxchg()` orders nothing, and need not:
            // the entry publishes nothing; a count that leaves it is ordered
            // by the Release in `add_shared()`.
            if self
                .pending
                .this_cpu_cmpxchg(index, old, old.wrapping_add(1))
                .is_ok()
            {
                return;
            }
            // Changed by an interrupt or NMI since the load above.
        }
        // ORDERING: Relaxed: only compared, and a count that saturates
        // stays saturated.
        if shared.load(Relaxed) >> SHARED_SHIFT >= SATURATED {
            // SAFETY: Per the safety requirements.
            unsafe { self.hit_saturated(counts, index, old, tag(slot, entry)) };
            return;
        }
        // Not this stack's entry, or a full one: count on the shared count
        // (a full entry then goes to it at the next take), and take the
        // entry if it is free, or on every `TAKE_EVERY`-th shared count, so
        // that a stack hit often takes its entry from a stack hit rarely,
        // while stacks that share an entry and are hit in turn do not trade
        // it on every hit.
        let before = add_shared(shared, 1);
        if old == 0 || before.wrapping_add(1) % TAKE_EVERY == 0 {
            // ORDERING: Unordered, as above; the count it takes leaves with
            // the Release in `add_shared()`.
            if self
                .pending
                .this_cpu_cmpxchg(index, old, tag(slot, entry))
                .is_ok()
            {
                // SAFETY: Per the safety requirements.
                unsafe { self.flush(counts, old) };
            }
        }
    }

    /// Takes the entry `index`, which held `old`, for the stack whose tag
    /// is `tag` and whose shared count is saturated, as [`Refs::hit`] would
    /// for a stack it counts: so that [`Refs::holder`] finds the stack
    /// there again.
    ///
    /// Nothing is left to count: the stack's own entry, full, is emptied
    /// and its count dropped, since a read reports no more than the shared
    /// count already holds. Another stack's entry is taken if it is free,
    /// or on every [`TAKE_EVERY`]-th hit on a saturated stack on this CPU,
    /// the clock that stands in for the shared count.
    ///
    /// # Safety
    ///
    /// As for [`Refs::hit`]: `counts` must be the table's words, and the
    /// caller in a critical section in which it found the gate open.
    #[cold]
    unsafe fn hit_saturated(&self, counts: &impl SharedCounts, index: CpuWord, old: u64, tag: u64) {
        let own = old & !COUNT == tag;
        self.pending.this_cpu_add(SATURATED_HITS, 1);
        if own || old == 0 || self.pending.this_cpu_read(SATURATED_HITS) % TAKE_EVERY == 0 {
            // ORDERING: Unordered, as in `hit()`.
            if self.pending.this_cpu_cmpxchg(index, old, tag).is_ok() && !own {
                // SAFETY: Per the safety requirements.
                unsafe { self.flush(counts, old) };
            }
        }
    }

    /// Fills this CPU's entry `entry` with the count of `slot`, as the
    /// most hits it holds would: the next hit on the stack finds it full.
    ///
    /// # Safety
    ///
    /// `slot` must meet the requirements of [`Refs::hit`]: the hit that
    /// next takes the entry adds its count to the slot's shared count.
    #[cfg(CONFIG_FTRACE_STACKMAP_KUNIT_TEST)]
    pub(crate) unsafe fn fill(&self, slot: usize, entry: Entry) {
        let old = self.pending.this_cpu_read(entry.index);
        let _ = self
            .pending
            .this_cpu_cmpxchg(entry.index, old, tag(slot, entry) | (SATURATED - 1));
    }

    /// Moves the count of the entry `word`, just taken from a CPU's cache,
    /// to the shared count of its slot.
    ///
    /// # Safety
    ///
    /// As for [`Refs::hit`]: `counts` must be the table's words, and the
    /// caller in a critical section in which it found the gate open.
    #[inline]
    unsafe fn flush(&self, counts: &impl SharedCounts, word: u64) {
        let Some(slot) = slot_of(word) else {
            return;
        };
        // SAFETY: By the type invariants, `slot` was given to `hit()`, whose
        // requirements it then met, in the current generation: a reset
        // empties the entries before the next one.
        if let Some(shared) = unsafe { counts.shared(slot) } {
            add_shared(shared, word & COUNT);
        }
    }

    /// Returns the count of `slot`, whose shared count is in `counts` and
    /// whose stack counts in `entry`.
    ///
    /// Exact when no recorder is counting; otherwise it may miss the hits
    /// in flight, and never counts one twice.
    ///
    /// # Safety
    ///
    /// As for [`Refs::hit`].
    pub(crate) unsafe fn read(&self, counts: &impl SharedCounts, slot: usize, entry: Entry) -> u64 {
        // SAFETY: Per the safety requirements.
        let shared = unsafe { counts.shared(slot) };
        // ORDERING: Acquire pairs with the Release in `add_shared()`, and
        // keeps the loads of the entries below after this one.
        let shared = shared.map_or(0, |shared| shared.load(Acquire) >> SHARED_SHIFT);
        possible_cpus()
            .map(|cpu| self.pending.read(cpu, entry.index))
            .filter(|&word| word & !COUNT == tag(slot, entry))
            .fold(shared, |sum, word| sum + (word & COUNT))
            .min(SATURATED)
    }

    /// Empties every CPU's entries; part of a reset.
    ///
    /// Must run while the table's gate is closed and no recorder is inside.
    pub(crate) fn clear(&self) {
        for cpu in possible_cpus() {
            for index in CpuWord::all().take(PENDING) {
                self.pending.set_remote(cpu, index, 0);
            }
        }
    }
}
