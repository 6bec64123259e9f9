// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of the stackmap's table: the rules of its protocol, checked
//! in the booted kernel.

use kernel::prelude::*;

#[kunit_tests(ftrace_stackmap)]
mod cases {
    use crate::{
        cookie::{
            next_generation,
            Cookie,
            FIRST_GENERATION, //
        },
        hash::{
            SeededHash,
            StackHash, //
        },
        platform::{
            Acquire,
            Atomic,
            ReadSection,
            Relaxed,
            Release, //
        },
        refs::{
            self,
            Refs,
            SharedCounts,
            CPU_WORDS,
            FIRST_COUNT,
            SATURATED,
            TAKE_EVERY, //
        },
        stats::{
            Totals,
            COUNTERS, //
        },
        table::{
            bucket,
            Fallback,
            Found,
            Record,
            Table,
            BITS_MAX,
            BITS_MIN,
            DESIGN_DEPTH,
            MAX_DEPTH,
            MAX_PROBE, //
        },
        tracefs::settle_dump,
        StackMap, //
    };
    use kernel::{
        cpu::possible_cpus,
        new_spinlock,
        page::PAGE_SIZE,
        prelude::*,
        sync::{
            rcu,
            Arc, //
        },
        time::{
            delay::fsleep,
            Delta,
            Instant,
            Monotonic, //
        },
        workqueue, //
    };

    // From the first case on, `#[kunit_tests]` makes `assert!` and
    // `assert_eq!` report a failure to KUnit, which ends the case running
    // as failed, instead of panicking. These do the same in the helpers
    // above the first case, and for `assert_ne!` everywhere; they name the
    // file from kernel/trace/.
    macro_rules! assert {
        ($cond:expr $(,)?) => {{
            kernel::kunit_assert!("ftrace_stackmap", c"stackmap/tests.rs", 0, $cond);
        }};
    }
    macro_rules! assert_eq {
        ($left:expr, $right:expr $(,)?) => {{
            kernel::kunit_assert_eq!("ftrace_stackmap", c"stackmap/tests.rs", 0, $left, $right);
        }};
    }
    macro_rules! assert_ne {
        ($left:expr, $right:expr $(,)?) => {{
            kernel::kunit_assert!("ftrace_stackmap", c"stackmap/tests.rs", 0, $left != $right);
        }};
    }

    /// A hash that sends every stack to the same bucket, so that only the
    /// full comparison of frames tells stacks apart.
    struct CollidingHash;

    impl StackHash for CollidingHash {
        fn hash(&self, _frames: &[usize]) -> u64 {
            0x1234_5678_9abc_dff0
        }
    }

    /// Makes a stack of `depth` frames that differs for each `id`.
    fn stack(id: usize, depth: usize) -> KVec<usize> {
        let mut frames = KVec::with_capacity(depth, GFP_KERNEL).expect("alloc");
        for i in 0..depth {
            frames
                .push(0xffff_ffff_8100_0000 + id * 0x1000 + i * 8, GFP_KERNEL)
                .expect("alloc");
        }
        frames
    }

    /// The hash seed of the maps the tests make, fixed so that every run
    /// places the stacks alike: the outcome of a test that fills a map must
    /// not depend on how long the chains of that boot's seed are.
    const SEED: u64 = 0x5eed_5eed_5eed_5eed;

    fn map(bits: u32) -> Arc<StackMap> {
        StackMap::with_hash(bits, FIRST_GENERATION, SeededHash::new(SEED)).expect("map allocation")
    }

    fn lookup<H: StackHash>(map: &StackMap<H>, frames: &[usize]) -> Result<Found, Fallback> {
        map.lookup(frames, ReadSection::new(&rcu::read_lock()))
    }

    /// Inserts `frames` as an insert that walked their chain from the record
    /// of `head`, or from none, and then lost the race to link
    /// ([`Table::insert_raced`]).
    fn insert_raced<H: StackHash>(
        map: &StackMap<H>,
        head: Option<Cookie>,
        frames: &[usize],
    ) -> Result<Found, Fallback> {
        let head = head.map_or(0, |head| linked_slot(map, head));
        // SAFETY: `head` is 0 or the slot of a record linked in the current
        // generation (`linked_slot()`).
        unsafe {
            map.table()
                .insert_raced(head, frames, ReadSection::new(&rcu::read_lock()))
        }
    }

    /// Clears or sets again the published bit of the record of `cookie`
    /// ([`Table::set_published`]).
    fn set_published<H: StackHash>(map: &StackMap<H>, cookie: Cookie, published: bool) {
        let slot = linked_slot(map, cookie);
        // SAFETY: `slot` is that of a record linked in the current generation
        // (`linked_slot()`).
        unsafe { map.table().set_published(slot, published) };
    }

    /// Returns the slot of `cookie`, which a lookup of `map` returned: the
    /// slot of a record linked in the generation of the cookie, checked to
    /// be the current one.
    fn linked_slot<H: StackHash>(map: &StackMap<H>, cookie: Cookie) -> usize {
        assert_eq!(cookie.generation(), map.table().generation());
        cookie.slot() as usize
    }

    /// Returns the frames of the stack in `slot` of the current generation.
    fn stored<H: StackHash>(map: &StackMap<H>, slot: usize) -> Option<KVec<usize>> {
        resolve(map, Cookie::new(map.table().generation(), slot as u32))
    }

    /// Checks that every stack stored in the current generation is whole,
    /// one of `stack(id, 1 + id % 24)` for `id < stacks`; returns how many
    /// copies of each it found.
    fn copies_stored<H: StackHash>(map: &StackMap<H>, stacks: usize) -> KVec<u32> {
        let mut copies = KVec::from_elem(0u32, stacks, GFP_KERNEL).expect("alloc");
        for slot in published_slots(map.table()) {
            let frames = stored(map, slot).expect("a published slot resolves");
            let id = (frames[0] - 0xffff_ffff_8100_0000) / 0x1000;
            assert_eq!(frames[..], stack(id, 1 + id % 24)[..]);
            copies[id] += 1;
        }
        copies
    }

    /// Returns the slots of the stacks published in the current generation,
    /// found as the dumps find them: by walking the records.
    fn published_slots<H: StackHash>(table: &Table<H>) -> KVec<usize> {
        let mut slots = KVec::new();
        let mut pos = 0;
        loop {
            let next = {
                let guard = rcu::read_lock();
                let generation = table.generation();
                // SAFETY: `pos` is 0, then each position the walk returned;
                // the tests reset no table during a walk.
                unsafe {
                    table.next_published(pos, usize::MAX, generation, ReadSection::new(&guard))
                }
            };
            let Some((slot, end)) = next else {
                return slots;
            };
            assert!(slot >= pos && end > slot);
            slots.push(slot, GFP_KERNEL).expect("alloc");
            pos = end;
        }
    }

    /// Returns what `f` makes of the record `cookie` names, if it resolves.
    /// `f` runs in an RCU read-side critical section: it must not sleep.
    fn with_record<H: StackHash, T>(
        map: &StackMap<H>,
        cookie: Cookie,
        f: impl FnOnce(&Record<'_>) -> T,
    ) -> Option<T> {
        let guard = rcu::read_lock();
        // SAFETY: The tests that look stacks up from two contexts at once
        // resolve only cookies that the map issued, or the slots of walks;
        // the others, which also make up cookies, look up nothing meanwhile.
        let record = unsafe {
            map.table().slot(
                cookie.slot() as usize,
                cookie.generation(),
                ReadSection::new(&guard),
            )
        }?;
        Some(f(&record))
    }

    /// Returns the frames `cookie` resolves to.
    fn resolve<H: StackHash>(map: &StackMap<H>, cookie: Cookie) -> Option<KVec<usize>> {
        let mut frames = [0usize; MAX_DEPTH];
        let depth = with_record(map, cookie, |record| {
            for (dst, frame) in frames.iter_mut().zip(record.frames()) {
                *dst = frame;
            }
            record.depth()
        })?;
        // Allocated out of the critical section.
        let mut out = KVec::new();
        out.extend_from_slice(&frames[..depth], GFP_KERNEL)
            .expect("alloc");
        Some(out)
    }

    /// Returns the ref count of the stack of `cookie`.
    fn refs<H: StackHash>(map: &StackMap<H>, cookie: Cookie) -> Option<u64> {
        with_record(map, cookie, |record| record.refs())
    }

    #[test]
    fn equal_stacks_share_one_cookie() {
        // The constructor ftrace uses, with a random seed.
        let map = StackMap::new(BITS_MIN, None).expect("map allocation");
        let s = stack(1, 12);
        let first = lookup(&map, &s).expect("insert");
        assert!(matches!(first, Found::Inserted(_)));
        for _ in 0..5 {
            let again = lookup(&map, &s).expect("hit");
            assert_eq!(again, Found::Hit(first.cookie()));
        }
        assert_eq!(map.table().entries(), 1);
        assert_eq!(refs(&map, first.cookie()), Some(6));
    }

    #[test]
    fn stacks_that_share_an_entry_are_told_apart() {
        let map = map(BITS_MIN);
        let key = |s: &[usize]| refs::entry(s.len(), s[0] as u64, s[s.len() / 2] as u64);
        // `b` has the depth, the innermost and the middle frame of `a`:
        // their key is the same, and only a compare in full tells them
        // apart. `c` has the entry of `a` with other check bits, `d` an
        // entry of its own. Once hit, `a` holds the entry on this CPU.
        let a = stack(1, 8);
        let mut b = stack(1, 8);
        b[7] += 4;
        let find = |same_index: bool| {
            (1..)
                .map(|i| {
                    let mut s = stack(1, 8);
                    s[0] += 8 * i;
                    s
                })
                .find(|s| (key(s).index == key(&a).index) == same_index && key(s) != key(&a))
                .expect("a stack")
        };
        let (c, d) = (find(true), find(false));
        assert_eq!(key(&a), key(&b));
        let stacks = [&a, &b, &c, &d];
        let cookies = stacks.map(|s| lookup(&map, s).expect("insert").cookie());
        for _ in 0..3 {
            for (s, &cookie) in stacks.iter().zip(&cookies) {
                assert_eq!(lookup(&map, s), Ok(Found::Hit(cookie)));
            }
        }
        assert_eq!(map.table().entries(), 4);
        for (s, cookie) in stacks.iter().zip(cookies) {
            assert_eq!(resolve(&map, cookie).expect("resolves")[..], s[..]);
            assert_eq!(refs(&map, cookie), Some(4));
        }
    }

    /// Shared counts kept apart from any table, one word per slot, with
    /// the low halves set, as a table's headers have them.
    struct Counts(KVec<Atomic<u64>>);

    impl Counts {
        const LOW: u64 = 0x0c0f_fee0;

        fn new(slots: usize) -> Self {
            let mut words = KVec::with_capacity(slots, GFP_KERNEL).expect("alloc");
            for _ in 0..slots {
                words.push(Atomic::new(0), GFP_KERNEL).expect("alloc");
            }
            Self(words)
        }

        /// Counts the stack in `slot` once: it was just inserted.
        fn set_first(&self, slot: usize) {
            self.0[slot].store(FIRST_COUNT | Self::LOW, Relaxed);
        }

        /// Checks that the counts left the low halves alone.
        fn lows_intact(&self) -> bool {
            self.0
                .iter()
                .all(|w| matches!(w.load(Relaxed) & 0xffff_ffff, 0 | Self::LOW))
        }

        /// Counts a hit on the stack in `slot` with `caches`, as a lookup
        /// does.
        fn hit(&self, caches: &Refs, slot: usize, entry: refs::Entry) {
            // SAFETY: No word of `self` is a frame: each is only ever
            // accessed atomically, and there is no gate to find open.
            unsafe { caches.hit(self, slot, entry) }
        }

        /// Returns the count of the stack in `slot`, as `caches` read it.
        fn read(&self, caches: &Refs, slot: usize, entry: refs::Entry) -> u64 {
            // SAFETY: As in `hit()`.
            unsafe { caches.read(self, slot, entry) }
        }
    }

    impl SharedCounts for Counts {
        unsafe fn shared(&self, slot: usize) -> Option<&Atomic<u64>> {
            self.0.get(slot)
        }
    }

    #[test]
    fn ref_counts_add_up_when_stacks_take_each_others_entries() {
        let refs = Refs::new().expect("alloc");
        let counts = Counts::new(8);
        // Two slots whose stacks share each CPU's entry `e`, hit in turn:
        // `a` takes the free entry, `b` counts on its shared count until it
        // has counted enough there to take the entry, then `a` does, and so
        // on.
        let (a, b, e) = (3, 5, refs::entry(1, 2, 3));
        let f = refs::entry(1, 2, 4);
        assert_ne!(e, f);
        counts.set_first(a);
        counts.set_first(b);
        for _ in 0..300 {
            counts.hit(&refs, a, e);
            counts.hit(&refs, b, e);
        }
        for _ in 0..5 {
            counts.hit(&refs, a, e);
        }
        assert_eq!(counts.read(&refs, a, e), 306);
        assert_eq!(counts.read(&refs, b, e), 301);
        // A slot that shares no entry with them counts apart.
        counts.set_first(a + 1);
        assert_eq!(counts.read(&refs, a + 1, f), 1);
        assert!(counts.lows_intact());
        // A reset empties the entries: the next stack in slot `a` starts
        // from its own first count, whatever the old one left behind.
        refs.clear();
        counts.set_first(a);
        assert_eq!(counts.read(&refs, a, e), 1);
        counts.hit(&refs, a, e);
        assert_eq!(counts.read(&refs, a, e), 2);
    }

    #[test]
    fn ref_counts_saturate() {
        let refs = Refs::new().expect("alloc");
        // Two slots whose stacks share each CPU's entry `e`.
        let (slot, other, e) = (1, 2, refs::entry(1, 2, 3));
        let counts = Counts::new(other + 1);
        // `other` takes the CPU's entry that `slot` would use, so that the
        // hits below count on `slot`'s shared count, which is full.
        counts.set_first(other);
        counts.hit(&refs, other, e);
        counts.0[slot].store((SATURATED << 32) | Counts::LOW, Relaxed);
        for _ in 0..10 {
            counts.hit(&refs, slot, e);
        }
        assert_eq!(counts.read(&refs, slot, e), SATURATED);
        assert!(counts.0[slot].load(Relaxed) >> 32 <= SATURATED);
        assert!(counts.lows_intact());

        // Once saturated, a stack counts nothing but still takes its entry,
        // where the lookup finds it with no hash: a free entry at once, and
        // another stack's on every 64th hit of this CPU on a saturated
        // stack, as a counted hit takes it on every 64th shared count. All
        // on one CPU: a spinlock holds the test on it. New caches, whose
        // clocks start from 0.
        let refs = Refs::new().expect("alloc");
        let holder = |refs: &Refs| refs.holder(e).map(|held| held.slot());
        counts.set_first(other);
        let pin = KBox::pin_init(new_spinlock!(()), GFP_KERNEL).expect("alloc");
        let on_one_cpu = pin.lock();
        counts.hit(&refs, slot, e);
        let took_free = holder(&refs);
        // `other` counts on its shared count until it takes the entry.
        for _ in 1..TAKE_EVERY {
            counts.hit(&refs, other, e);
        }
        let other_took = holder(&refs);
        counts.hit(&refs, other, e);
        for _ in 1..TAKE_EVERY - 1 {
            counts.hit(&refs, slot, e);
        }
        let before_clock = holder(&refs);
        counts.hit(&refs, slot, e);
        let on_clock = holder(&refs);
        // Its own entry, full, is emptied rather than left to fail every
        // hit found there.
        // SAFETY: As in `Counts::hit()`.
        unsafe { refs.fill(slot, e) };
        let full = refs.holder(e).map(|held| refs.count_held(held));
        counts.hit(&refs, slot, e);
        let emptied = refs.holder(e).map(|held| refs.count_held(held));
        drop(on_one_cpu);
        assert_eq!(took_free, Some(slot));
        assert_eq!(other_took, Some(other));
        assert_eq!(before_clock, Some(other));
        assert_eq!(on_clock, Some(slot));
        assert_eq!((full, emptied), (Some(false), Some(true)));
        // `other`'s count left the entry when `slot` took it.
        assert_eq!(counts.0[other].load(Relaxed) >> 32, TAKE_EVERY + 1);
        assert_eq!(counts.read(&refs, other, e), TAKE_EVERY + 1);
        assert_eq!(counts.read(&refs, slot, e), SATURATED);
        assert!(counts.0[slot].load(Relaxed) >> 32 <= SATURATED);
        assert!(counts.lows_intact());
    }

    #[test]
    fn binary_dump_counts_the_stacks_stored_when_it_opens() {
        let map = map(BITS_MIN);
        let cookies =
            [0, 1, 2].map(|id| lookup(&map, &stack(id, 4 + id)).expect("insert").cookie());
        // A record reserved and left unpublished, as by an insert that lost
        // the race to link, is not one of them.
        set_published(&map, cookies[1], false);
        let (generation, end, stacks) = settle_dump(&map);
        assert_eq!(generation, map.table().generation());
        assert_eq!((end, stacks), (map.table().reserved_end(), 2));
        // A stack stored since lies past the end: the dump does not show it.
        let later = lookup(&map, &stack(3, 9)).expect("insert").cookie();
        assert!(later.slot() as usize >= end);
        let shown = published_slots(map.table())
            .iter()
            .filter(|&&slot| slot < end)
            .count();
        assert_eq!(shown, stacks);
    }

    #[test]
    fn distinct_stacks_get_distinct_cookies() {
        let map = map(BITS_MIN);
        let mut cookies = KVec::new();
        for id in 0..200 {
            let c = lookup(&map, &stack(id, 1 + id % 20))
                .expect("insert")
                .cookie();
            assert!(!cookies.contains(&c));
            cookies.push(c, GFP_KERNEL).expect("alloc");
        }
        for (id, c) in cookies.iter().enumerate() {
            assert_eq!(
                resolve(&map, *c).expect("resolves")[..],
                stack(id, 1 + id % 20)[..]
            );
        }
        assert_eq!(map.table().entries(), 200);
    }

    #[test]
    fn colliding_hashes_compare_frames_along_the_chain() {
        let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, CollidingHash).expect("map");
        let mut cookies = KVec::new();
        for id in 0..MAX_PROBE {
            let found = lookup(&map, &stack(id, 8)).expect("insert");
            assert!(matches!(found, Found::Inserted(_)));
            assert!(!cookies.contains(&found.cookie()));
            cookies.push(found.cookie(), GFP_KERNEL).expect("alloc");
        }
        // Same hash, same key: only the frames tell the stacks apart.
        for (id, c) in cookies.iter().enumerate() {
            assert_eq!(lookup(&map, &stack(id, 8)), Ok(Found::Hit(*c)));
            assert_eq!(resolve(&map, *c).expect("resolves")[..], stack(id, 8)[..]);
        }
        // A stack that differs only in its last frame is not a hit.
        let mut near = stack(0, 8);
        near[7] += 1;
        assert_eq!(lookup(&map, &near), Err(Fallback::Full));
    }

    #[test]
    fn full_chain_falls_back_and_corrupts_nothing() {
        let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, CollidingHash).expect("map");
        for id in 0..MAX_PROBE {
            lookup(&map, &stack(id, 4)).expect("insert");
        }
        // The chain is as long as lookups walk: the next new stack falls
        // back.
        assert_eq!(lookup(&map, &stack(MAX_PROBE, 4)), Err(Fallback::Full));
        assert_eq!(map.table().entries(), MAX_PROBE);
        for id in 0..MAX_PROBE {
            assert!(matches!(lookup(&map, &stack(id, 4)), Ok(Found::Hit(_))));
        }
        assert_eq!(map.stats().totals().full, 1);
    }

    /// Returns the arena words a map of `2^bits` stacks has for records:
    /// room for `2^bits` of depth 16 after word 0, and the rest of the last
    /// page.
    fn record_words(bits: u32) -> usize {
        let bytes = 8 * (1 + (1 << bits) * (DESIGN_DEPTH + 1));
        bytes.div_ceil(PAGE_SIZE) * PAGE_SIZE / 8 - 1
    }

    #[test]
    fn full_arena_falls_back_and_corrupts_nothing() {
        let map = map(BITS_MIN);
        // Records of MAX_DEPTH frames and a header; `left` words stay free.
        let fit = record_words(BITS_MIN) / (MAX_DEPTH + 1);
        let left = record_words(BITS_MIN) - fit * (MAX_DEPTH + 1);
        assert!(left > 0);
        let mut cookies = KVec::new();
        for id in 0..fit {
            let c = lookup(&map, &stack(id, MAX_DEPTH)).expect("fits").cookie();
            cookies.push(c, GFP_KERNEL).expect("alloc");
        }
        assert_eq!(lookup(&map, &stack(fit, MAX_DEPTH)), Err(Fallback::Full));
        assert_eq!(lookup(&map, &stack(fit + 1, left)), Err(Fallback::Full));
        // A shallower stack still fits in what is left, and then nothing.
        assert!(lookup(&map, &stack(fit + 2, left - 1)).is_ok());
        assert_eq!(lookup(&map, &stack(fit + 3, 0)), Err(Fallback::Full));
        assert_eq!(map.stats().totals().full, 3);
        for (id, c) in cookies.iter().enumerate() {
            assert_eq!(
                resolve(&map, *c).expect("resolves")[..],
                stack(id, MAX_DEPTH)[..]
            );
        }
        assert_eq!(map.table().arena_bytes_used(), 8 * record_words(BITS_MIN));
    }

    #[test]
    fn capacity_counts_stacks_of_the_design_depth_and_more_fit_shallower() {
        let map = map(BITS_MIN);
        let capacity = map.table().capacity();
        for id in 0..capacity {
            lookup(&map, &stack(id, DESIGN_DEPTH)).expect("fits");
        }
        // The rest of the arena's last page holds a few more, and a shorter
        // one in what is left; then not even a header fits.
        let rest = record_words(BITS_MIN) - capacity * (DESIGN_DEPTH + 1);
        let mut id = capacity;
        for _ in 0..rest / (DESIGN_DEPTH + 1) {
            lookup(&map, &stack(id, DESIGN_DEPTH)).expect("fits");
            id += 1;
        }
        if let Some(depth) = (rest % (DESIGN_DEPTH + 1)).checked_sub(1) {
            lookup(&map, &stack(id, depth)).expect("fits");
            id += 1;
        }
        assert_eq!(lookup(&map, &stack(id, 1)), Err(Fallback::Full));
        assert_eq!(map.table().entries(), id);
        // Stacks of 3 frames take 4 words: over four times as many fit.
        let map = self::map(BITS_MIN);
        let mut id = 0;
        while lookup(&map, &stack(id, 3)).is_ok() {
            id += 1;
        }
        assert_eq!(id, record_words(BITS_MIN) / 4);
        assert_eq!(map.table().entries(), id);
        assert_eq!(map.stats().totals().full, 1);
    }

    /// Bytes of a cache line on x86_64 (`L1_CACHE_BYTES`).
    const CACHE_LINE: usize = 64;

    /// Returns the number of cache lines the record spans, header included.
    fn record_lines(record: &Record<'_>) -> usize {
        let frames = record.as_ptr() as usize;
        let start = frames - size_of::<u64>();
        let end = frames + record.depth() * size_of::<u64>();
        (end - 1) / CACHE_LINE - start / CACHE_LINE + 1
    }

    /// Fills a map with as many stacks as it has buckets and measures how
    /// far along its chain each one sits: the records a hit walks past, and
    /// the cache lines of the table a hit reads, for benchmarks to read.
    #[test]
    fn chain_lengths_at_capacity() {
        let hash = SeededHash::new(SEED);
        let map = map(BITS_MIN);
        let table = map.table();
        let buckets = table.bucket_count();
        let mut chains = KVec::from_elem(0usize, buckets, GFP_KERNEL).expect("alloc");
        // Each stack's cookie, and the stacks inserted before it in its
        // bucket.
        let mut inserted = KVec::with_capacity(buckets, GFP_KERNEL).expect("alloc");
        let mut stacks = KVec::with_capacity(buckets, GFP_KERNEL).expect("alloc");
        for id in 0..buckets {
            let s = stack(id, 8);
            let Ok(Found::Inserted(cookie)) = lookup(&map, &s) else {
                panic!("stack {id} was not inserted");
            };
            let chain = &mut chains[bucket(hash.hash(&s), table.bits())];
            inserted.push((cookie, *chain), GFP_KERNEL).expect("alloc");
            stacks.push(s, GFP_KERNEL).expect("alloc");
            *chain += 1;
        }
        // The cost of a hit at capacity, of every stack in turn; the second
        // pass is timed, the first warms the caches (and, under emulation,
        // the translated code).
        let mut hit_ns = 0;
        for _ in 0..2 {
            let rcu = rcu::read_lock();
            let start = Instant::<Monotonic>::now();
            let hits = stacks
                .iter()
                .filter(|s| matches!(map.lookup(s, ReadSection::new(&rcu)), Ok(Found::Hit(_))))
                .count();
            hit_ns = start.elapsed().as_nanos() / buckets as i64;
            // A failed check ends the case's thread: not in the section.
            drop(rcu);
            assert_eq!(hits, buckets);
        }
        // A chain has the stacks inserted last first: a hit walks past the
        // records inserted after its own in its bucket. It reads its
        // bucket's line and the lines of every record from the head of the
        // chain to its own, frames included: all are 8 deep here, so each
        // one walked past is compared in full. From the last stack
        // inserted to the first, `walked_lines` holds, per bucket, the
        // lines of the records inserted after the stack.
        let mut walked_lines = KVec::from_elem(0usize, buckets, GFP_KERNEL).expect("alloc");
        let (mut sum, mut max, mut lines) = (0, 0, 0);
        for (s, &(cookie, before)) in stacks.iter().zip(&inserted).rev() {
            let guard = rcu::read_lock();
            let walked =
                table.records_walked_past(s, cookie.slot() as usize, ReadSection::new(&guard));
            drop(guard);
            let b = bucket(hash.hash(s), table.bits());
            let after = chains[b] - 1 - before;
            assert_eq!(walked, Some(after));
            walked_lines[b] += with_record(&map, cookie, record_lines).expect("resolves");
            sum += after;
            max = max.max(after);
            lines += 1 + walked_lines[b];
        }
        let mean_x100 = 100 * sum / buckets;
        let lines_x100 = 100 * lines / buckets;
        pr_info!(
            "stackmap_bench: at capacity probe_mean_x100 {mean_x100} probe_max {max} \
             lines_x100 {lines_x100} hit_ns {hit_ns}\n"
        );
        // As many stacks as buckets: half a record walked past on average.
        assert!(mean_x100 < 100);
        assert!(max < MAX_PROBE);
    }

    #[test]
    fn depth_zero_one_max_fit_and_max_plus_one_falls_back() {
        let map = map(BITS_MIN);
        for depth in [0, 1, MAX_DEPTH] {
            let s = stack(depth, depth);
            let c = lookup(&map, &s).expect("fits").cookie();
            assert_eq!(resolve(&map, c).expect("resolves")[..], s[..]);
            assert_eq!(lookup(&map, &s), Ok(Found::Hit(c)));
        }
        assert_eq!(lookup(&map, &stack(1, MAX_DEPTH + 1)), Err(Fallback::Depth));
        assert_eq!(map.stats().totals().depth, 1);
        assert_eq!(map.table().entries(), 3);
    }

    #[test]
    fn reset_empties_bumps_generation_and_stales_cookies() {
        let map = map(BITS_MIN);
        let old = lookup(&map, &stack(7, 10)).expect("insert").cookie();
        assert_eq!(old.generation(), FIRST_GENERATION);
        for _ in 0..3 {
            assert_eq!(lookup(&map, &stack(7, 10)), Ok(Found::Hit(old)));
        }
        map.reset().expect("reset");
        assert_eq!(map.table().generation(), FIRST_GENERATION + 1);
        assert_eq!(map.table().entries(), 0);
        assert_eq!(map.table().arena_bytes_used(), 0);
        assert!(resolve(&map, old).is_none());
        // The same stack comes back in the new generation, maybe in the
        // same slot, under a cookie the old one can never equal.
        let new = lookup(&map, &stack(7, 10)).expect("insert");
        assert!(matches!(new, Found::Inserted(_)));
        assert_eq!(new.cookie().generation(), FIRST_GENERATION + 1);
        assert_ne!(new.cookie(), old);
        // The old generation's hits do not count for it.
        assert_eq!(refs(&map, new.cookie()), Some(1));
        assert!(resolve(&map, old).is_none());
        assert_eq!(
            resolve(&map, new.cookie()).expect("resolves")[..],
            stack(7, 10)[..]
        );
    }

    #[test]
    fn closed_gate_falls_back_and_resolves_nothing() {
        let map = map(BITS_MIN);
        let s = stack(3, 8);
        let c = lookup(&map, &s).expect("insert").cookie();
        lookup(&map, &stack(4, 8)).expect("insert");
        // A reset stopped between closing the gate and clearing the table:
        // what a recorder that races it sees.
        let guard = map.reset_lock.lock();
        map.close_for_reset(&guard);
        assert_eq!(lookup(&map, &s), Err(Fallback::Reset));
        assert_eq!(lookup(&map, &stack(5, 8)), Err(Fallback::Reset));
        // Even one too deep for the map: its counter restarts below.
        assert_eq!(lookup(&map, &stack(6, MAX_DEPTH + 1)), Err(Fallback::Reset));
        assert!(resolve(&map, c).is_none());
        // Dumps opened now see no generation, and know they are not whole.
        assert_eq!(map.table().open(), None);
        assert_eq!(map.stats().totals().reset, 3);
        assert_eq!(map.table().entries(), 2);
        // SAFETY: The gate closed under `guard`; this thread is the only
        // one to record or read, and it is outside the table. The next
        // generation is `c`'s plus one: the first, not the last.
        unsafe { map.reopen_after_reset(&guard, c.generation() + 1) };
        drop(guard);
        // The stacks recorded in full meanwhile are in the trace after the
        // reset: their counter keeps them, the others start again.
        let totals = map.stats().totals();
        assert_eq!((totals.reset, totals.inserts, totals.depth), (3, 0, 0));
        assert_eq!(map.table().open(), Some(c.generation() + 1));
        assert_eq!(map.table().generation(), c.generation() + 1);
        assert!(matches!(lookup(&map, &s), Ok(Found::Inserted(_))));
        assert_eq!(map.stats().totals().inserts, 1);
    }

    #[test]
    fn stack_being_inserted_falls_back_busy() {
        let map = map(BITS_MIN);
        let (s, t, u) = (stack(11, 8), stack(12, 8), stack(13, 5));
        let c = lookup(&map, &s).expect("insert").cookie();
        let d = lookup(&map, &t).expect("insert").cookie();
        // The insert of `s` stopped between its link and its publication:
        // what an NMI that interrupted it finds when it records `s` too.
        set_published(&map, c, false);
        assert_eq!(lookup(&map, &s), Err(Fallback::Busy));
        assert_eq!(lookup(&map, &s), Err(Fallback::Busy));
        // No hit counted, nothing stored twice; readers do not show it and
        // walk on past it to the records after it.
        assert_eq!(refs(&map, c), None);
        assert!(resolve(&map, c).is_none());
        assert!(matches!(lookup(&map, &t), Ok(Found::Hit(_))));
        assert!(matches!(lookup(&map, &u), Ok(Found::Inserted(_))));
        assert!(!published_slots(map.table()).contains(&(c.slot() as usize)));
        assert_eq!(published_slots(map.table()).len(), 2);
        let totals = map.stats().totals();
        assert_eq!((totals.busy, totals.hits, totals.inserts), (2, 1, 3));
        // Published, it is found under the same cookie, once.
        set_published(&map, c, true);
        assert_eq!(lookup(&map, &s), Ok(Found::Hit(c)));
        assert_eq!(refs(&map, c), Some(2));
        assert_eq!(refs(&map, d), Some(2));
        assert_eq!(published_slots(map.table()).len(), 3);
    }

    #[test]
    fn insert_that_lost_the_race_to_link_uses_what_was_linked() {
        let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, CollidingHash).expect("map");
        let table = map.table();
        let (s, t, u) = (stack(21, 8), stack(22, 8), stack(23, 6));
        // Inserts of `s` that walked the chain while it was empty, and
        // meanwhile `t`, then `s` itself, were linked; `s` is not published
        // yet. The space they reserve, a header and 8 frames of 8 bytes
        // each, stays unused.
        let ct = lookup(&map, &t).expect("insert").cookie();
        let cs = lookup(&map, &s).expect("insert").cookie();
        let used = table.arena_bytes_used();
        set_published(&map, cs, false);
        assert_eq!(insert_raced(&map, None, &s), Err(Fallback::Busy));
        assert_eq!(table.arena_bytes_used(), used + 9 * 8);
        set_published(&map, cs, true);
        assert_eq!(insert_raced(&map, None, &s), Ok(Found::Hit(cs)));
        assert_eq!(table.arena_bytes_used(), used + 2 * 9 * 8);
        assert_eq!(refs(&map, cs), Some(2));
        // An insert of `u` that saw only `t`: it links in front of `s`, the
        // one record linked since.
        let found = insert_raced(&map, Some(ct), &u);
        assert!(matches!(found, Ok(Found::Inserted(_))));
        let cu = found.expect("inserted").cookie();
        assert_eq!(published_slots(table).len(), 3);
        for (frames, cookie) in [(&s, cs), (&t, ct), (&u, cu)] {
            assert_eq!(lookup(&map, frames), Ok(Found::Hit(cookie)));
            assert_eq!(resolve(&map, cookie).expect("resolves")[..], frames[..]);
        }
        // The chain holds at most `MAX_PROBE` records on this path too. An
        // insert that saw only the chain's first record, all the others
        // linked since, links the last record the chain has room for; the
        // next such insert falls back.
        let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, CollidingHash).expect("map");
        let first = lookup(&map, &stack(0, 4)).expect("insert").cookie();
        for id in 1..MAX_PROBE - 1 {
            lookup(&map, &stack(id, 4)).expect("insert");
        }
        let last = insert_raced(&map, Some(first), &stack(MAX_PROBE - 1, 4));
        assert!(matches!(last, Ok(Found::Inserted(_))));
        let past = insert_raced(&map, Some(first), &stack(MAX_PROBE, 4));
        assert_eq!(past, Err(Fallback::Full));
        assert_eq!(published_slots(map.table()).len(), MAX_PROBE);
        for id in 0..MAX_PROBE {
            assert!(matches!(lookup(&map, &stack(id, 4)), Ok(Found::Hit(_))));
        }
    }

    #[test]
    fn replacing_map_continues_the_generations() {
        // An instance's first map, reset once: its cookies of both
        // generations may still be in the ring buffer.
        let old = StackMap::new(BITS_MIN, None).expect("map allocation");
        let first = lookup(&old, &stack(1, 6)).expect("insert").cookie();
        old.reset().expect("reset");
        let second = lookup(&old, &stack(2, 6)).expect("insert").cookie();
        // Its replacement, of another size, with the same stacks in it.
        let new = StackMap::new(BITS_MIN + 1, Some(&old)).expect("map allocation");
        assert_eq!(new.table().generation(), FIRST_GENERATION + 2);
        for id in 0..64 {
            let _ = lookup(&new, &stack(id, 6)).expect("insert");
        }
        for c in [first, second] {
            assert!(resolve(&new, c).is_none());
        }
        let again = lookup(&new, &stack(2, 6)).expect("hit").cookie();
        assert_eq!(again.generation(), FIRST_GENERATION + 2);
        // A reset that reaches the old map after the replacement leaves it
        // alone, and says so: the old map's recorders still in flight never
        // get cookies of the new map's generation. (The glue orders its
        // resets with the replacements, and never makes such a reset.)
        assert_eq!(old.reset(), Err(EAGAIN));
        assert_eq!(old.table().generation(), FIRST_GENERATION + 1);
        assert!(resolve(&old, second).is_some());
        // Nor is it replaced again: a second map after it would issue the
        // new map's generation too.
        assert!(matches!(StackMap::new(BITS_MIN, Some(&old)), Err(e) if e == EBUSY));
        assert_eq!(old.table().generation(), FIRST_GENERATION + 1);
    }

    #[test]
    fn last_generation_is_neither_reset_nor_replaced() {
        assert_eq!(next_generation(FIRST_GENERATION), Ok(FIRST_GENERATION + 1));
        assert_eq!(next_generation(u32::MAX), Err(EOVERFLOW));
        let map = StackMap::with_hash(BITS_MIN, u32::MAX - 1, SeededHash::new(SEED))
            .expect("map allocation");
        let old = lookup(&map, &stack(1, 4)).expect("insert").cookie();
        map.reset().expect("reset to the last generation");
        assert_eq!(map.table().generation(), u32::MAX);
        assert!(resolve(&map, old).is_none());
        let c = lookup(&map, &stack(2, 4)).expect("insert").cookie();
        assert_eq!(c.generation(), u32::MAX);
        // Past the last generation, the cookie of a slot would come back:
        // the reset fails and changes nothing.
        assert_eq!(map.reset(), Err(EOVERFLOW));
        assert_eq!(map.table().open(), Some(u32::MAX));
        assert_eq!(map.table().entries(), 1);
        assert_eq!(map.stats().totals().inserts, 1);
        assert_eq!(resolve(&map, c).expect("resolves")[..], stack(2, 4)[..]);
        assert_eq!(lookup(&map, &stack(2, 4)), Ok(Found::Hit(c)));
        // So does a replacement, which would continue the generations.
        assert!(matches!(StackMap::new(BITS_MIN, Some(&map)), Err(e) if e == EOVERFLOW));
        assert_eq!(
            lookup(&map, &stack(3, 4)).map(|f| f.cookie().generation()),
            Ok(u32::MAX)
        );
    }

    #[test]
    fn counters_add_up_and_restart_on_reset() {
        let map = map(BITS_MIN);
        let mut lookups = 0u64;
        for _round in 0..3 {
            for id in 0..50 {
                let _ = lookup(&map, &stack(id, 5));
                lookups += 1;
            }
        }
        // One stack recorded again and again: its CPU's entry holds it after
        // at most `TAKE_EVERY` hits, and then finds it. The hits it finds
        // count among the hits and apart from them.
        let held = map.stats().totals().held;
        for _ in 0..3 * TAKE_EVERY {
            let _ = lookup(&map, &stack(7, 5));
            lookups += 1;
        }
        let _ = lookup(&map, &stack(0, MAX_DEPTH + 1));
        lookups += 1;
        let t = map.stats().totals();
        assert_eq!(t.inserts, 50);
        assert_eq!(t.hits, 100 + 3 * TAKE_EVERY);
        assert!(t.held > held && t.held <= t.hits);
        assert_eq!(t.depth, 1);
        assert_eq!(t.hits + t.inserts + t.fallbacks(), lookups);
        let (mut per_cpu, mut held_per_cpu) = (0, 0);
        for cpu in possible_cpus() {
            let c = map.stats().cpu(cpu);
            per_cpu += c.hits + c.inserts + c.fallbacks();
            held_per_cpu += c.held;
        }
        assert_eq!((per_cpu, held_per_cpu), (lookups, t.held));
        map.reset().expect("reset");
        let t = map.stats().totals();
        assert_eq!(t.hits + t.inserts + t.fallbacks(), 0);
    }

    #[test]
    fn counter_sums_saturate() {
        // Each CPU's counters are 64-bit and do not wrap in practice; the
        // totals over CPUs, and of the fallbacks, saturate.
        let mut sum = Totals {
            hits: u64::MAX - 1,
            full: u64::MAX,
            ..Totals::default()
        };
        sum.add(&Totals {
            hits: 5,
            inserts: 7,
            busy: 1,
            ..Totals::default()
        });
        assert_eq!(sum.hits, u64::MAX);
        assert_eq!(sum.inserts, 7);
        assert_eq!((sum.full, sum.busy), (u64::MAX, 1));
        assert_eq!(sum.fallbacks(), u64::MAX);
    }

    #[test]
    fn stacks_take_their_own_length_and_the_rest_is_fixed() {
        let map = map(crate::DEFAULT_BITS);
        let table = map.table();
        for depth in [0, 1, 8, 16, 32, MAX_DEPTH] {
            let before = table.arena_bytes_used();
            lookup(&map, &stack(depth, depth)).expect("insert");
            let bytes = table.arena_bytes_used() - before;
            // The record: a header word and one word per frame.
            assert_eq!(bytes, 8 * (depth + 1));
        }
        // The rest is sized by the capacity, whatever is stored: a 4-byte
        // bucket per stack of capacity, as the documentation says. The
        // CPUs' caches of ref counts come on top.
        const BUCKET_BYTES: usize = 4;
        let caches = possible_cpus().count() * CPU_WORDS * 8;
        let words = 1 + record_words(crate::DEFAULT_BITS);
        let buckets = BUCKET_BYTES * table.capacity();
        assert_eq!(table.memory_bytes(), 8 * words + buckets + caches);
        // memory_bytes in stack_map_stat also counts the map's own
        // structure, 64 bytes into its allocation (after its Arc's reference
        // count, at the alignment of the table's reservation word), and its
        // counters: two words of each in the per-CPU area of each possible
        // CPU, the count and its base at the last reset.
        let counters = possible_cpus().count() * 2 * COUNTERS * 8;
        assert_eq!(
            map.memory_bytes(),
            64 + size_of::<StackMap>() + table.memory_bytes() + counters
        );
        pr_info!(
            "stackmap: depth d costs 8 * d + 8 bytes of arena, the arena is sized for {} stacks \
             of depth {}, with {} bytes of buckets per stack; bits {}: {} bytes\n",
            table.capacity(),
            DESIGN_DEPTH,
            BUCKET_BYTES,
            table.bits(),
            map.memory_bytes(),
        );
        // For benchmarks to read: what each possible CPU adds to the map,
        // its cache of ref counts, its counters and their base.
        pr_info!(
            "stackmap_bench: per_cpu_bytes {}\n",
            (CPU_WORDS + 2 * COUNTERS) * 8
        );
    }

    #[test]
    fn bits_out_of_range_are_rejected() {
        for bits in [0, BITS_MIN - 1, BITS_MAX + 1, u32::MAX] {
            assert_eq!(StackMap::new(bits, None).err(), Some(EINVAL));
        }
        assert_eq!(map(BITS_MIN).table().bucket_count(), 1 << BITS_MIN);
    }

    #[test]
    fn cookie_packs_generation_and_slot() {
        let c = Cookie::new(3, 0x1234);
        assert_eq!(c.to_raw(), (3u64 << 32) | 0x1234);
        assert_eq!(Cookie::from_raw(c.to_raw()), c);
        assert_eq!((c.generation(), c.slot()), (3, 0x1234));
        assert_ne!(Cookie::new(FIRST_GENERATION, 0).to_raw(), 0);
        // A cookie of a generation the map has not reached never resolves.
        let map = map(BITS_MIN);
        let c = lookup(&map, &stack(1, 3)).expect("insert").cookie();
        assert!(resolve(&map, Cookie::new(c.generation() + 1, c.slot())).is_none());
        assert!(resolve(&map, Cookie::new(c.generation(), c.slot() ^ 1)).is_none());
    }

    #[test]
    fn seeded_hash_depends_on_seed_every_frame_and_order() {
        let a = SeededHash::new(1);
        let b = SeededHash::new(2);
        let s = stack(3, 16);
        assert_ne!(a.hash(&s), b.hash(&s));
        for i in 0..s.len() {
            let mut t = stack(3, 16);
            t[i] ^= 8;
            assert_ne!(a.hash(&s), a.hash(&t));
        }
        assert_ne!(a.hash(&s[..15]), a.hash(&s));
        // The seed counts at every depth, down to none, whichever of the
        // four lanes the frames reach.
        for depth in 0..=4 {
            assert_ne!(a.hash(&s[..depth]), b.hash(&s[..depth]));
        }
        // Frames swapped between lanes, and within one lane.
        for (i, j) in [(0, 1), (1, 3), (0, 4), (2, 14)] {
            let mut t = stack(3, 16);
            t.swap(i, j);
            assert_ne!(a.hash(&s), a.hash(&t));
        }
    }

    /// Has a worker and this thread look up `stacks` stacks `rounds` times
    /// at once, the worker upwards, this thread downwards, so that the two
    /// insert the same stacks in the middle. Returns how many stacks each
    /// of the two inserted.
    fn insert_from_both_ends(map: &Arc<StackMap>, stacks: usize, rounds: usize) -> [u32; 2] {
        // Each sleeps after every few lookups of the first round, the one
        // that inserts, so that the other runs then even if the two share
        // a CPU, or if their CPUs take turns on one host thread, as under
        // TCG without MTTCG: the inserts of the two interleave, wherever
        // they run. On CPUs that run at once, they also race.
        fn lookup_taking_turns(map: &StackMap, id: usize, round: usize) -> bool {
            if round == 0 && id % 8 == 0 {
                fsleep(Delta::from_micros(10));
            }
            matches!(lookup(map, &stack(id, 1 + id % 24)), Ok(Found::Inserted(_)))
        }
        // The worker says it runs and waits for this thread to say go, so
        // that neither inserts every stack before the other began; it says
        // when it is done.
        const RUNS: u32 = 1;
        const GO: u32 = 2;
        const DONE: u32 = 3;
        let state = Arc::new(Atomic::new(0u32), GFP_KERNEL).expect("alloc");
        let by_worker = Arc::new(Atomic::new(0u32), GFP_KERNEL).expect("alloc");
        let (m, st, w) = (map.clone(), state.clone(), by_worker.clone());
        workqueue::system_dfl()
            .try_spawn(GFP_KERNEL, move || {
                st.store(RUNS, Relaxed);
                while st.load(Relaxed) != GO {
                    fsleep(Delta::from_micros(10));
                }
                for round in 0..rounds {
                    for id in 0..stacks {
                        if lookup_taking_turns(&m, id, round) {
                            w.add(1, Relaxed);
                        }
                    }
                }
                // ORDERING: Release, for the count of its inserts.
                st.store(DONE, Release);
            })
            .expect("spawn");
        while state.load(Relaxed) != RUNS {
            fsleep(Delta::from_micros(100));
        }
        state.store(GO, Relaxed);
        let mut by_this = 0;
        for round in 0..rounds {
            for id in (0..stacks).rev() {
                if lookup_taking_turns(map, id, round) {
                    by_this += 1;
                }
            }
        }
        // ORDERING: Acquire pairs with the worker's Release store of DONE.
        while state.load(Acquire) != DONE {
            fsleep(Delta::from_millis(1));
        }
        [by_worker.load(Relaxed), by_this]
    }

    #[test]
    fn concurrent_inserts_store_each_stack_once() {
        const STACKS: usize = 400;
        const ROUNDS: usize = 20;
        // Each of the two looks up every stack: both insert some only if
        // their inserts interleaved. So again, on a new map, until they did.
        // The bound only keeps two that never run in turn from hanging the
        // boot: the assertion below then fails.
        let start = Instant::<Monotonic>::now();
        let (map, inserted) = loop {
            let map = map(BITS_MIN);
            let inserted = insert_from_both_ends(&map, STACKS, ROUNDS);
            if inserted.iter().all(|&n| n > 0) || start.elapsed() > Delta::from_secs(10) {
                break (map, inserted);
            }
        };
        assert!(inserted.iter().all(|&n| n > 0));
        // Each stack was inserted once, by one of the two.
        assert_eq!(inserted[0] + inserted[1], STACKS as u32);

        let table = map.table();
        assert_eq!(table.entries(), STACKS);
        assert!(copies_stored(&map, STACKS).iter().all(|&n| n == 1));
        let t = map.stats().totals();
        assert_eq!(t.inserts, STACKS as u64);
        assert_eq!(
            t.hits + t.inserts + t.fallbacks(),
            (2 * ROUNDS * STACKS) as u64
        );
        // Each stack's count, kept partly in the entries of the CPUs that
        // hit it, adds up to what was found or inserted.
        let mut sum = 0;
        for slot in published_slots(table) {
            let cookie = Cookie::new(table.generation(), slot as u32);
            sum += refs(&map, cookie).expect("resolves");
        }
        assert_eq!(sum, t.hits + t.inserts);
    }

    #[test]
    fn resets_racing_recorders_leave_cookies_stale_or_right() {
        const STACKS: usize = 400;
        const RESETS: u32 = 50;
        let map = map(BITS_MIN);
        // Set by this thread to stop the worker; then by the worker, done.
        let stop = Arc::new(Atomic::new(0u32), GFP_KERNEL).expect("alloc");
        let passes = Arc::new(Atomic::new(0u32), GFP_KERNEL).expect("alloc");
        let wrong = Arc::new(Atomic::new(0u32), GFP_KERNEL).expect("alloc");
        // Cookies that resolved to their own stack.
        let right = Arc::new(Atomic::new(0u32), GFP_KERNEL).expect("alloc");
        // Lookups of the worker that found the gate closed.
        let closed = Arc::new(Atomic::new(0u32), GFP_KERNEL).expect("alloc");

        // The worker records and resolves at once, while this thread resets:
        // a cookie either resolves to its own stack or is stale by then.
        let (m, st, p, w, r, c) = (
            map.clone(),
            stop.clone(),
            passes.clone(),
            wrong.clone(),
            right.clone(),
            closed.clone(),
        );
        workqueue::system_dfl()
            .try_spawn(GFP_KERNEL, move || {
                while st.load(Relaxed) == 0 {
                    for id in 0..STACKS {
                        let s = stack(id, 1 + id % 24);
                        let found = match lookup(&m, &s) {
                            Ok(found) => found,
                            Err(Fallback::Reset) => {
                                c.add(1, Relaxed);
                                continue;
                            }
                            Err(_) => continue,
                        };
                        match resolve(&m, found.cookie()) {
                            Some(f) if f[..] == s[..] => r.add(1, Relaxed),
                            Some(_) => w.add(1, Relaxed),
                            None => {}
                        }
                    }
                    p.add(1, Relaxed);
                    // A pass is long: let this CPU run something else.
                    fsleep(Delta::from_micros(100));
                }
                st.store(2, Relaxed);
            })
            .expect("spawn");
        // Reset only once the worker records, and let it finish a pass after.
        while passes.load(Relaxed) == 0 {
            fsleep(Delta::from_millis(1));
        }
        // At least RESETS resets, and more until the worker met the gate
        // closed: a vCPU the host does not run for a while misses a burst
        // of resets, whose grace periods are expedited at boot. The bound
        // only keeps a gate that never closes from hanging the boot: the
        // assertion below then fails.
        let start = Instant::<Monotonic>::now();
        let mut resets = 0u32;
        while resets < RESETS
            || (closed.load(Relaxed) == 0 && start.elapsed() < Delta::from_secs(10))
        {
            map.reset().expect("reset");
            resets += 1;
        }
        let after = passes.load(Relaxed);
        while passes.load(Relaxed) < after + 2 {
            fsleep(Delta::from_millis(1));
        }
        stop.store(1, Relaxed);
        while stop.load(Relaxed) != 2 {
            fsleep(Delta::from_millis(1));
        }

        assert_eq!(wrong.load(Relaxed), 0);
        // Stale is the exception: most cookies resolve before the next reset.
        assert!(right.load(Relaxed) > 0);
        // The worker did record while resets ran: it met the gate closed.
        assert!(closed.load(Relaxed) > 0);
        let table = map.table();
        assert_eq!(table.generation(), FIRST_GENERATION + resets);
        // What the last generation holds is whole, and stored once.
        let copies = copies_stored(&map, STACKS);
        assert!(copies.iter().all(|&n| n <= 1));
        assert_eq!(table.entries(), copies.iter().sum::<u32>() as usize);
    }

    /// Measures the map's own cost per hit (of stacks in turn, and of one
    /// stack again) and per insert at depths 8, 16 and 32 (read by `make
    /// bench`), and checks that every timed lookup had the expected
    /// outcome. Each depth runs twice on fresh maps and the second run is
    /// reported, so that the first one warms the caches (and, under
    /// emulation, the translated code).
    #[test]
    fn lookup_cost_per_hit_and_insert() {
        const OPS: usize = 4096;
        for depth in [8, 16, 32] {
            let mut stacks = KVec::with_capacity(OPS, GFP_KERNEL).expect("alloc");
            for id in 0..OPS {
                stacks.push(stack(id, depth), GFP_KERNEL).expect("alloc");
            }
            let mut costs = (0, 0, 0);
            for _ in 0..2 {
                let map = map(crate::DEFAULT_BITS);
                let rcu = rcu::read_lock();
                // Times `OPS` lookups, of every stack in turn or of the first
                // one again and again; counts the wanted outcomes.
                let pass = |in_turn: bool, want: fn(&Found) -> bool| {
                    let start = Instant::<Monotonic>::now();
                    let n = (0..OPS)
                        .filter(|&i| {
                            let s = &stacks[if in_turn { i } else { 0 }];
                            map.lookup(s, ReadSection::new(&rcu))
                                .is_ok_and(|f| want(&f))
                        })
                        .count();
                    (n, start.elapsed().as_nanos() / OPS as i64)
                };
                let (inserted, insert_ns) = pass(true, |f| matches!(f, Found::Inserted(_)));
                let (hits, hit_ns) = pass(true, |f| matches!(f, Found::Hit(_)));
                // Found through the CPU's entry: the stack recorded last.
                let (again, again_ns) = pass(false, |f| matches!(f, Found::Hit(_)));
                drop(rcu);
                assert_eq!((inserted, hits, again), (OPS, OPS, OPS));
                costs = (hit_ns, again_ns, insert_ns);
            }
            pr_info!(
                "stackmap_bench: depth {depth} hit_ns {} again_ns {} insert_ns {}\n",
                costs.0,
                costs.1,
                costs.2
            );
        }
    }
}
