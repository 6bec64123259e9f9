// SPDX-License-Identifier: GPL-2.0

//! A reset reuses the table and its arena.
//!
//! After [`StackMap::reset`], the words that held one generation's stacks
//! are written again with the next one's, while cookies of the old
//! generation may still be looked up. Natively this checks what a reset
//! promises; under Miri (`make check` runs both) it also checks that no
//! reference into the arena outlives the generation it was made in.

use crate::{
    cookie::{Cookie, FIRST_GENERATION},
    hash::SeededHash,
    platform::{rcu_read_lock, ReadSection},
    table::{Found, Table, BITS_MIN},
    StackMap,
};

/// Makes the stack `id` of `depth` frames, different for every `(id, tag)`.
fn stack(id: usize, depth: usize, tag: usize) -> Vec<usize> {
    (0..depth)
        .map(|i| 0xffff_ffff_8100_0000 + tag * 0x10_0000 + id * 0x100 + i * 0x8)
        .collect()
}

/// Inserts stacks `0..n` tagged `tag`; returns their cookies.
fn insert_all(map: &StackMap, n: usize, tag: usize) -> Vec<Cookie> {
    let rcu = rcu_read_lock();
    (0..n)
        .map(
            |id| match map.lookup(&stack(id, 1 + id % 8, tag), ReadSection::new(&rcu)) {
                Ok(Found::Inserted(cookie)) => cookie,
                other => panic!("stack {id}: {other:?}"),
            },
        )
        .collect()
}

/// Returns the frames and ref count that `cookie`, one that `table`
/// issued, resolves to, if any.
pub(crate) fn resolve(table: &Table<SeededHash>, cookie: Cookie) -> Option<(Vec<usize>, u64)> {
    let rcu = rcu_read_lock();
    // SAFETY: `table` issued `cookie`: in its generation, if that is still
    // the current one, the slot starts a record.
    let record = unsafe {
        table.slot(
            cookie.slot() as usize,
            cookie.generation(),
            ReadSection::new(&rcu),
        )
    }?;
    Some((record.frames().collect(), record.refs()))
}

#[test]
fn reset_reuses_the_arena_for_the_next_generation() {
    const STACKS: usize = if cfg!(miri) { 8 } else { 256 };
    let map = StackMap::with_hash(BITS_MIN, FIRST_GENERATION, SeededHash::new(7)).expect("map");
    let table = map.table();
    let old = insert_all(&map, STACKS, 1);
    let used = table.arena_bytes_used();

    map.reset().expect("reset");
    assert_eq!(table.generation(), FIRST_GENERATION + 1);
    assert_eq!(table.entries(), 0);
    assert!(old.iter().all(|&c| resolve(table, c).is_none()));

    // Other stacks of the same depths land on the same arena words.
    let new = insert_all(&map, STACKS, 2);
    assert_eq!(table.arena_bytes_used(), used);
    for (id, &cookie) in new.iter().enumerate() {
        assert_eq!(cookie.generation(), FIRST_GENERATION + 1);
        assert_eq!(resolve(table, cookie), Some((stack(id, 1 + id % 8, 2), 1)));
    }
    assert!(old.iter().all(|&c| resolve(table, c).is_none()));
}
