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
//! The recorders are in an RCU read-side section while they look up and
//! resolve; the stand-in's grace period waits for them as the kernel's
//! does.

use crate::{
    cookie::{Cookie, FIRST_GENERATION},
    hash::SeededHash,
    platform::{rcu_read_lock, ReadSection},
    reuse::resolve,
    table::{Fallback, BITS_MIN},
    StackMap,
};
use kernel::prelude::*;
use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering::SeqCst},
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

/// Records stacks on `map` until `done`, resolving the cookies it got
/// again in later generations; returns how many cookies it got, how many
/// lookups met the gate closed, and how many cookies resolved.
fn record_until(map: &StackMap, r: usize, done: &AtomicBool, lookups: &AtomicU64) -> [u64; 3] {
    let mut got: Vec<(Cookie, usize)> = Vec::new();
    let (mut cookies, mut closed, mut resolved) = (0u64, 0u64, 0u64);
    let mut i = r;
    while !done.load(SeqCst) {
        i += RECORDERS + 2;
        let id = i % STACKS;
        {
            let rcu = rcu_read_lock();
            match map.lookup(&stack(id), ReadSection::new(&rcu)) {
                Ok(found) => {
                    cookies += 1;
                    got.push((found.cookie(), id));
                }
                Err(Fallback::Reset) => closed += 1,
                // The insert in flight on another CPU.
                Err(Fallback::Busy) => {}
                Err(e) => panic!("stack {id}: unexpected {e:?}"),
            }
        }
        lookups.fetch_add(1, SeqCst);
        if !got.is_empty() {
            let (cookie, of) = got[i % got.len()];
            // Resolving reads the table: inside a section. A reset that
            // closes the gate meanwhile waits for the section to end before
            // it opens the next generation: a cookie of the generation open
            // before and after the call resolves.
            let _rcu = rcu_read_lock();
            let open = || map.table().open() == Some(cookie.generation());
            let before = open();
            match resolve(map.table(), cookie) {
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
    [cookies, closed, resolved]
}

/// Sets its flag when dropped.
struct Stop<'a>(&'a AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

/// Runs `reset` `RESETS` times while `RECORDERS` threads record stacks on
/// `map`, each time after the recorders have made `2 * STACKS` lookups,
/// so that they meet every generation and the gate closed; returns what
/// the recorders counted, summed.
fn race_recorders(map: &StackMap, mut reset: impl FnMut(usize)) -> [u64; 3] {
    let done = AtomicBool::new(false);
    let lookups = AtomicU64::new(0);
    let start = Barrier::new(RECORDERS + 1);
    let (done, lookups, start) = (&done, &lookups, &start);
    thread::scope(|s| {
        let recorders: Vec<_> = (0..RECORDERS)
            .map(|r| {
                s.spawn(move || {
                    start.wait();
                    record_until(map, r, done, lookups)
                })
            })
            .collect();
        start.wait();
        // Stops the recorders however the resets end: a failed one
        // unwinds, and the scope waits for the recorders before it
        // reports the failure.
        let stop = Stop(done);
        'resets: for n in 0..RESETS {
            let before = lookups.load(SeqCst);
            while lookups.load(SeqCst) < before + 2 * STACKS as u64 {
                // A recorder ends before `done` only by failing: its join
                // below reports it.
                if recorders.iter().any(|r| r.is_finished()) {
                    break 'resets;
                }
                thread::yield_now();
            }
            reset(n);
        }
        drop(stop);
        recorders
            .into_iter()
            .map(|r| r.join().expect("recorder thread"))
            .fold([0; 3], |a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2]])
    })
}

/// Checks that the race happened: cookies were issued and resolved, and
/// recorders met the gate closed. Under Miri, only the first two: its
/// three resets may each close and open the gate while no recorder runs,
/// as its scheduler picks the threads. Its runs check the accesses of the
/// races that did happen; the native runs check that recorders meet the
/// gate closed.
fn check_raced([cookies, closed, resolved]: [u64; 3]) {
    assert!(cookies > 0, "no cookie issued");
    assert!(resolved > 0, "no cookie resolved");
    if !cfg!(miri) {
        assert!(closed > 0, "no recorder met a reset");
    }
}

#[test]
fn resets_racing_recorders_leave_cookies_stale_or_right() {
    let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, SeededHash::new(11)).expect("map");
    check_raced(race_recorders(&map, |_| map.reset().expect("reset")));
    let expected = FIRST_GENERATION + RESETS as u32;
    assert_eq!(map.table().generation(), expected);
}

#[test]
fn replacing_a_map_while_it_resets_skips_its_generations() {
    let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, SeededHash::new(13)).expect("map");
    let mut next = None;
    // Halfway through, a map replaces the one being reset, from another
    // thread: it takes the lock resets take, and starts after the
    // generation the last of them opened.
    let raced = race_recorders(&map, |n| {
        if n == RESETS / 2 {
            thread::scope(|s| {
                let replace = s.spawn(|| StackMap::new(BITS_MIN, Some(&map)));
                let reset = map.reset();
                assert!(reset.is_ok() || reset == Err(EAGAIN), "{reset:?}");
                next = Some(replace.join().expect("replacing thread").expect("next map"));
            });
        } else if n < RESETS / 2 {
            map.reset().expect("reset");
        } else {
            // Replaced: its successor is the one to reset.
            let generation = map.table().generation();
            assert_eq!(map.reset(), Err(EAGAIN));
            assert_eq!(map.table().generation(), generation);
        }
    });
    check_raced(raced);
    let next = next.expect("a map replaced the first");
    // The reset raced with the replacement either ran first, and the new
    // map starts after it, or found the map replaced and left it alone.
    let last = map.table().generation();
    assert!(
        last == FIRST_GENERATION + RESETS as u32 / 2
            || last == FIRST_GENERATION + RESETS as u32 / 2 + 1
    );
    assert_eq!(next.table().generation(), last + 1);
    assert_eq!(StackMap::new(BITS_MIN, Some(&map)).err(), Some(EBUSY));
}
