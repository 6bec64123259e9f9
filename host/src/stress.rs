// SPDX-License-Identifier: GPL-2.0

//! The table's protocol raced on real CPUs.
//!
//! The guest that runs the KUnit suite is emulated one vCPU at a time, so
//! its concurrent cases interleave but never overlap. Here threads insert
//! and look up the same stacks truly in parallel, and every outcome is
//! checked against what the protocol promises: one record per stack, one
//! cookie per stack, every cookie resolving to its own frames, every
//! counted recording in a ref count, and walks of the records meanwhile,
//! as the dumps make them, finding only whole stacks. The threads run two
//! to a CPU: each updates the CPU's ref count cache in the middle of the
//! other's updates, as an interrupt or NMI may.

use crate::{
    cookie::{Cookie, FIRST_GENERATION},
    cpu::CpuId,
    hash::{SeededHash, StackHash},
    platform::{rcu_read_lock, ReadSection},
    refs::{self, TAKE_EVERY},
    table::{Fallback, Table, BITS_MIN, MAX_PROBE},
    StackMap,
};
use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Barrier,
    },
    thread,
    time::Duration,
};

/// Recording threads; more than the CPUs, so that preemption also
/// interleaves them at arbitrary points.
const THREADS: usize = 4;

/// Makes the calling thread, recorder `t`, run as a CPU it shares with
/// one other recorder.
fn run_as_cpu_of(t: usize) {
    CpuId::from_u32((t / 2) as u32)
        .expect("a possible CPU")
        .run_as();
}

/// Makes the stack `id` of `depth` frames; stacks share their outer frames.
fn stack(id: usize, depth: usize) -> Vec<usize> {
    (0..depth)
        .map(|i| match i {
            0 => 0xffff_ffff_8100_0000 + id * 0x40,
            _ => 0xffff_ffff_8200_0000 + i * 0x10,
        })
        .collect()
}

/// A hash that sends every stack to one bucket.
struct CollidingHash;

impl StackHash for CollidingHash {
    fn hash(&self, _frames: &[usize]) -> u64 {
        0x0bad_cafe_0000_0007
    }
}

/// Walks the published records in slot order, as the dumps do, and checks
/// that each holds one of the `stacks` stacks raced for, whole, and that
/// the walk finds every record published before it began, even with
/// inserts in flight; returns their ids.
fn walk<H: StackHash>(table: &Table<H>, stacks: usize) -> Vec<usize> {
    let rcu = rcu_read_lock();
    let generation = table.generation();
    let published = table.entries();
    let mut ids = Vec::new();
    let mut pos = 0;
    while let Some((slot, end)) =
        // SAFETY: `pos` is 0, then each position the walk returned for
        // `generation`.
        unsafe {
            table.next_published(pos, usize::MAX, generation, ReadSection::new(&rcu))
        }
    {
        // SAFETY: The walk returned `slot`: it starts a record.
        let record = unsafe { table.slot(slot, generation, ReadSection::new(&rcu)) }
            .expect("a published record resolves");
        let frames: Vec<usize> = record.frames().collect();
        let id = (frames[0] - 0xffff_ffff_8100_0000) / 0x40;
        assert!(id < stacks, "slot {slot}: not a stack raced for");
        assert_eq!(frames, stack(id, 1 + id % 12), "slot {slot}: wrong frames");
        assert!(slot >= pos && end == slot + 1 + frames.len());
        ids.push(id);
        pos = end;
    }
    assert!(
        ids.len() >= published,
        "the walk found {} records of {published}",
        ids.len()
    );
    ids
}

/// What a recorder saw of each stack: the cookie it got, and how many hits
/// and inserts.
type Seen = Vec<(Option<Cookie>, u64)>;

/// Records `frames`, stack `k`, in `map`, and notes in `seen` the cookie it
/// got, which must be the one got before. A fallback while the stack's
/// insert is in flight on another CPU is all that may keep it from a
/// cookie.
fn record<H: StackHash>(map: &StackMap<H>, frames: &[usize], k: usize, seen: &mut Seen) {
    let rcu = rcu_read_lock();
    let cookie = match map.lookup(frames, ReadSection::new(&rcu)) {
        Ok(found) => found.cookie(),
        Err(Fallback::Busy) => return,
        Err(e) => panic!("stack {k}: unexpected {e:?}"),
    };
    let seen = &mut seen[k];
    assert!(seen.0.is_none_or(|c| c == cookie), "stack {k}: two cookies");
    *seen = (Some(cookie), seen.1 + 1);
}

/// Checks, with the recorders stopped, that each stack `k` recorded has one
/// cookie, which resolves to `frames(k)`, and whose ref count is exact:
/// every hit and insert `results` saw, once, whichever entries and shared
/// counts it went through.
fn check_recorded<H: StackHash>(
    table: &Table<H>,
    results: &[Seen],
    frames: impl Fn(usize) -> Vec<usize>,
) {
    let rcu = rcu_read_lock();
    for k in 0..results[0].len() {
        let cookie = results
            .iter()
            .find_map(|r| r[k].0)
            .unwrap_or_else(|| panic!("stack {k}: never recorded"));
        assert!(
            results.iter().all(|r| r[k].0.is_none_or(|c| c == cookie)),
            "stack {k}: two cookies"
        );
        // SAFETY: The table issued `cookie` in its current generation.
        let record = unsafe {
            table.slot(
                cookie.slot() as usize,
                table.generation(),
                ReadSection::new(&rcu),
            )
        }
        .expect("the cookie resolves");
        assert_eq!(
            record.frames().collect::<Vec<_>>(),
            frames(k),
            "stack {k}: wrong frames"
        );
        let recorded: u64 = results.iter().map(|r| r[k].1).sum();
        assert_eq!(
            record.refs(),
            recorded,
            "stack {k}: lost or doubled ref counts"
        );
    }
}

/// Has `THREADS` threads record `stacks` stacks `rounds` times each, each
/// thread in its own order, all starting together, while another walks
/// the records; checks the table and the counters of the outcomes after.
fn race<H: StackHash + Sync>(map: &StackMap<H>, stacks: usize, rounds: usize) {
    let table = map.table();
    // The walker starts with the recorders.
    let barrier = Barrier::new(THREADS + 1);
    let done = AtomicBool::new(false);
    let results: Vec<Seen> = thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    run_as_cpu_of(t);
                    let mut seen = vec![(None, 0); stacks];
                    barrier.wait();
                    for round in 0..rounds {
                        for k in 0..stacks {
                            // All threads insert in the same order, so
                            // that they race for the same new stacks, then
                            // hit them in orders of their own.
                            let id = (k * (2 * round * t + 1) + round) % stacks;
                            record(map, &stack(id, 1 + id % 12), id, &mut seen);
                        }
                    }
                    seen
                })
            })
            .collect();
        let walker = s.spawn(|| {
            barrier.wait();
            // One walk at least, however soon the recorders are done.
            loop {
                walk(table, stacks);
                if done.load(Ordering::Relaxed) {
                    break;
                }
            }
        });
        // Every recorder is joined, and the walker stopped, before a failed
        // one is reported: a scope waits for all its threads.
        let results: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        done.store(true, Ordering::Relaxed);
        walker.join().expect("walker thread");
        results
            .into_iter()
            .map(|r| r.expect("recorder thread"))
            .collect()
    });

    assert_eq!(table.entries(), stacks);
    // Every lookup counted once, on CPUs that two threads share: each
    // stack inserted once, every other lookup a hit or a fallback while
    // its insert was in flight.
    let totals = map.stats().totals();
    let found: u64 = results.iter().flatten().map(|r| r.1).sum();
    assert_eq!(totals.inserts, stacks as u64, "inserts counted");
    assert_eq!(totals.hits + totals.inserts, found, "hits counted");
    assert_eq!(
        totals.hits + totals.inserts + totals.busy,
        (THREADS * stacks * rounds) as u64
    );
    assert_eq!(totals.fallbacks(), totals.busy, "fallbacks other than busy");
    // No insert is in flight any more: a walk finds every stack, once.
    let mut ids = walk(table, stacks);
    ids.sort_unstable();
    assert_eq!(ids, (0..stacks).collect::<Vec<_>>(), "a walk missed stacks");
    check_recorded(table, &results, |id| stack(id, 1 + id % 12));
}

/// Races on fresh tables, this many times per test. Under Miri, which
/// checks every access of a run for undefined behaviour and data races
/// instead of racing many runs, a few smaller ones.
const TABLES: u64 = if cfg!(miri) { 1 } else { 200 };

/// Stacks raced for in a table of `2^BITS_MIN` stacks, and rounds over them.
const STACKS: usize = if cfg!(miri) { 16 } else { 1 << (BITS_MIN - 1) };
const ROUNDS: usize = if cfg!(miri) { 2 } else { 4 };

/// Stacks raced for on one chain: as many as it holds.
const CHAIN: usize = MAX_PROBE;

#[test]
fn parallel_inserts_store_each_stack_once() {
    for seed in 0..TABLES {
        let hash = SeededHash::new(seed);
        let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, hash).expect("map");
        race(&map, STACKS, ROUNDS);
    }
}

#[test]
fn parallel_inserts_on_one_chain() {
    for _ in 0..TABLES {
        let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, CollidingHash).expect("map");
        race(&map, CHAIN, 2 * ROUNDS);
    }
}

#[test]
fn walk_waits_for_a_record_being_written() {
    let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, SeededHash::new(0)).expect("map");
    let table = map.table();
    let insert = |id: usize| {
        let rcu = rcu_read_lock();
        map.lookup(&stack(id, 1 + id % 12), ReadSection::new(&rcu))
            .expect("insert");
    };
    // A record published after one still being written: the walk must
    // neither stop at the unwritten one nor guess its length.
    insert(1);
    let unwritten = table.reserve_unwritten(7).expect("room");
    insert(2);
    let started = AtomicBool::new(false);
    thread::scope(|s| {
        let walker = s.spawn(|| {
            started.store(true, Ordering::Relaxed);
            walk(table, 3)
        });
        // The walk has had time to reach the unwritten record once its
        // thread runs, not merely once it was spawned.
        while !started.load(Ordering::Relaxed) {
            thread::yield_now();
        }
        thread::sleep(Duration::from_millis(50));
        assert!(!walker.is_finished(), "the walk did not wait");
        // SAFETY: `unwritten` was reserved above, with 7 frames, and not
        // abandoned yet.
        unsafe { table.abandon_unwritten(unwritten, 7) };
        assert_eq!(walker.join().expect("walker thread"), [1, 2]);
    });
}

/// Stacks that count in one entry of each CPU's ref count cache.
const SHARING: usize = 4;

/// Rounds over them per thread: enough for each stack to take the entry
/// from the others several times (see the test).
const SHARING_ROUNDS: usize = if cfg!(miri) {
    2 * TAKE_EVERY as usize
} else {
    1 << 14
};

/// Returns `SHARING` stacks of depth 8 that count in one entry: the first
/// two by their keys' check bits told apart, the last two with the same
/// key (the same depth, innermost and middle frames), told apart only by
/// their frames.
fn sharing_stacks() -> Vec<Vec<usize>> {
    let entry = |frames: &[usize]| refs::entry(frames.len(), frames[0] as u64, frames[4] as u64);
    let first = stack(0, 8);
    let mut stacks: Vec<_> = (1..)
        .map(|id| stack(id, 8))
        .filter(|frames| entry(frames).index == entry(&first).index)
        .take(SHARING - 3)
        .collect();
    stacks.insert(0, first);
    for outer in [0x10, 0x20] {
        let mut twin = stacks[0].clone();
        twin[7] += outer;
        assert_eq!(entry(&twin), entry(&stacks[0]));
        stacks.push(twin);
    }
    stacks
}

#[test]
fn parallel_hits_trade_shared_entries() {
    let stacks = sharing_stacks();
    for seed in 0..TABLES.div_ceil(10) {
        let hash = SeededHash::new(seed);
        let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, hash).expect("map");
        trade(&map, &stacks);
    }
}

/// Has `THREADS` threads, two to a CPU, record `stacks`, which count in
/// one entry, in turn; checks their counts after.
fn trade(map: &StackMap, stacks: &[Vec<usize>]) {
    let barrier = Barrier::new(THREADS);
    // A stack hit while another holds its entry counts on its shared count
    // and takes the entry on every `TAKE_EVERY`-th count there, moving the
    // holder's count to the holder's shared count: the stacks are hit in
    // turn, so each thread's hits on a stack mostly find the entry taken,
    // and each stack takes it some `THREADS * SHARING_ROUNDS / TAKE_EVERY`
    // times, at any point of the other thread's hits on the same CPU.
    let results: Vec<Seen> = thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    run_as_cpu_of(t);
                    let mut seen = vec![(None, 0); stacks.len()];
                    barrier.wait();
                    for _ in 0..SHARING_ROUNDS {
                        for (k, frames) in stacks.iter().enumerate() {
                            record(map, frames, k, &mut seen);
                        }
                    }
                    seen
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("recorder thread"))
            .collect()
    });

    // A lookup falls back only while the stack's insert is in flight, so
    // most were recorded: at least a quarter of them, whatever the threads'
    // timing. That the trades kept every count is checked below; that a
    // hit takes the entry when it should, in the KUnit case
    // ref_counts_saturate.
    for k in 0..stacks.len() {
        let recorded: u64 = results.iter().map(|r| r[k].1).sum();
        assert!(
            recorded >= SHARING_ROUNDS as u64,
            "stack {k}: {recorded} recorded"
        );
    }
    check_recorded(map.table(), &results, |k| stacks[k].clone());
}
