// SPDX-License-Identifier: GPL-2.0

//! Resets raced against recorders on real CPUs.
//!
//! A reset closes the table's gate, waits for the recorders already inside
//! to leave (an RCU grace period in the kernel), clears the table and opens
//! it on the next generation, while recorders keep looking stacks up and
//! resolving the cookies they got, old ones included. Every cookie must
//! resolve to its own frames or to nothing: a stale cookie never names the
//! stack that took its slot in a later generation.
//!
//! The kernel's RCU is stood in for by one counter per recorder, odd while
//! it is inside a read-side section; the grace period waits until every
//! counter that was odd has moved on.

use crate::{
    cookie::{next_generation, Cookie, FIRST_GENERATION},
    hash::SeededHash,
    lookup_or_insert,
    platform::{rcu_read_lock, ReadSection},
    reuse::resolve,
    table::{Fallback, Table, BITS_MIN},
};
use std::{
    sync::{
        atomic::{fence, AtomicBool, AtomicU64, Ordering::SeqCst},
        Barrier,
    },
    thread,
};

/// Recording threads, besides the one that resets.
const RECORDERS: usize = 3;

/// Resets per run, and distinct stacks the recorders draw from.
const RESETS: usize = if cfg!(miri) { 3 } else { 500 };
const STACKS: usize = if cfg!(miri) { 8 } else { 64 };

/// Makes the stack `id`: its depth and every frame depend on `id`.
fn stack(id: usize) -> Vec<usize> {
    (0..1 + id % 7)
        .map(|i| 0xffff_ffff_8100_0000 + id * 0x100 + i * 0x8)
        .collect()
}

/// A recorder's read-side section: its counter is odd while it lasts.
struct Section<'a>(&'a AtomicU64);

impl<'a> Section<'a> {
    fn enter(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, SeqCst);
        // As RCU guarantees, a section that the grace period does not wait
        // for sees what the reset did before it (closing the gate): without
        // the fence, the recorder's Acquire load of the gate could still
        // read it open, the store-buffering outcome of weak memory.
        fence(SeqCst);
        Self(counter)
    }
}

impl Drop for Section<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Waits until every recorder inside a section when it was called has left.
fn grace_period(counters: &[AtomicU64]) {
    let seen: Vec<u64> = counters.iter().map(|c| c.load(SeqCst)).collect();
    for (counter, seen) in counters.iter().zip(seen) {
        while seen % 2 == 1 && counter.load(SeqCst) == seen {
            thread::yield_now();
        }
    }
}

#[test]
fn resets_racing_recorders_leave_cookies_stale_or_right() {
    let table = Table::new(BITS_MIN, FIRST_GENERATION, SeededHash::new(11)).expect("table");
    let counters: Vec<AtomicU64> = (0..RECORDERS).map(|_| AtomicU64::new(0)).collect();
    let done = AtomicBool::new(false);
    // Lookups done by all recorders: a reset waits for some between resets,
    // so that recorders meet every generation, and its gate closed.
    let lookups = AtomicU64::new(0);
    let start = Barrier::new(RECORDERS + 1);
    let (table, counters, done, lookups, start) = (&table, &counters, &done, &lookups, &start);
    thread::scope(|s| {
        let recorders: Vec<_> = counters
            .iter()
            .enumerate()
            .map(|(r, counter)| {
                s.spawn(move || {
                    // Every cookie got, with its stack, to resolve again in
                    // later generations.
                    let mut got: Vec<(Cookie, usize)> = Vec::new();
                    let (mut cookies, mut closed, mut resolved) = (0u64, 0u64, 0u64);
                    let mut i = r;
                    start.wait();
                    while !done.load(SeqCst) {
                        i += RECORDERS + 2;
                        let id = i % STACKS;
                        let section = Section::enter(counter);
                        let rcu = rcu_read_lock();
                        match lookup_or_insert(table, &stack(id), ReadSection::new(&rcu)) {
                            Ok(found) => {
                                cookies += 1;
                                got.push((found.cookie(), id));
                            }
                            Err(Fallback::Reset) => closed += 1,
                            // The insert in flight on another CPU.
                            Err(Fallback::Busy) => {}
                            Err(e) => panic!("stack {id}: unexpected {e:?}"),
                        }
                        drop(section);
                        lookups.fetch_add(1, SeqCst);
                        if !got.is_empty() {
                            let (cookie, of) = got[i % got.len()];
                            // Resolving reads the table: inside a section.
                            // A reset that closes the gate meanwhile waits
                            // for the section to end before it opens the
                            // next generation: a cookie of the generation
                            // open before and after the call resolves.
                            let _section = Section::enter(counter);
                            let open = || table.open() == Some(cookie.generation());
                            let before = open();
                            match resolve(table, cookie) {
                                Some((frames, _)) => {
                                    assert_eq!(frames, stack(of), "{cookie:?}: another stack");
                                    resolved += 1;
                                }
                                None => assert!(
                                    !(before && open()),
                                    "{cookie:?}: of the open generation, unresolved"
                                ),
                            }
                        }
                        if got.len() > 4 * STACKS {
                            got.drain(..2 * STACKS);
                        }
                    }
                    (cookies, closed, resolved)
                })
            })
            .collect();

        start.wait();
        'resets: for _ in 0..RESETS {
            let before = lookups.load(SeqCst);
            while lookups.load(SeqCst) < before + 2 * STACKS as u64 {
                // A recorder ends before `done` only by failing: its join
                // below reports it.
                if recorders.iter().any(|r| r.is_finished()) {
                    break 'resets;
                }
                thread::yield_now();
            }
            table.begin_reset();
            grace_period(counters);
            let next = next_generation(table.generation()).expect("a next generation");
            // SAFETY: The gate is closed, and every recorder section that
            // began before has ended; this thread is the only one to reset.
            unsafe { table.clear() };
            // SAFETY: Just emptied; `next` follows the current generation.
            unsafe { table.finish_reset(next) };
        }
        done.store(true, SeqCst);
        let (cookies, closed, resolved) = recorders
            .into_iter()
            .map(|r| r.join().expect("recorder thread"))
            .fold((0, 0, 0), |(a, b, c), (d, e, f)| (a + d, b + e, c + f));
        // The race happened: cookies were issued and resolved, and
        // recorders met the gate closed.
        assert!(cookies > 0, "no cookie issued");
        assert!(resolved > 0, "no cookie resolved");
        if !cfg!(miri) {
            assert!(closed > 0, "no recorder met a reset");
        }
    });
    let expected = FIRST_GENERATION + RESETS as u32;
    assert_eq!(table.generation(), expected);
}
