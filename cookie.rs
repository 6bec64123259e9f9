// SPDX-License-Identifier: GPL-2.0

//! The cookie that stands for a stack in the ring buffer.
//!
//! A cookie is `generation << 32 | slot`. The generation of a map starts at
//! 1 and goes up by one at each reset, so 0 is never a valid cookie, and a
//! cookie taken before a reset names no stack inserted after it. A map that
//! replaces another one in a trace instance (with a new capacity) starts at
//! the generation after the old map's, since the ring buffer may still hold
//! the old map's cookies.
//!
//! The generation is 32 bits and never wraps: a cookie from `2^32` resets
//! ago, still in the ring buffer, would otherwise name another stack, or a
//! word inside one, in a generation of the same number. A map at the last
//! generation can no longer be reset or replaced, and says so with
//! `EOVERFLOW`. Each reset waits for an RCU grace period: at a millisecond
//! each, that is 50 days of back-to-back resets; with expedited grace
//! periods (`rcupdate.rcu_expedited`), tens of microseconds, a day or two.
//! The map then still records, in its last generation, and falls back to
//! full stacks once it is full: nothing is lost.

use kernel::prelude::*;

/// A stack's name in the ring buffer: the map generation and the slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cookie(u64);

/// The generation of a trace instance's first map.
pub(crate) const FIRST_GENERATION: u32 = 1;

/// Returns the generation after `generation`, or `EOVERFLOW` if it is the
/// last one.
pub(crate) fn next_generation(generation: u32) -> Result<u32> {
    generation.checked_add(1).ok_or(EOVERFLOW)
}

impl Cookie {
    /// Makes the cookie of `slot` in `generation`.
    #[inline]
    pub(crate) fn new(generation: u32, slot: u32) -> Self {
        Self((u64::from(generation) << 32) | u64::from(slot))
    }

    /// Takes a cookie read back from the ring buffer.
    pub(crate) fn from_raw(raw: u64) -> Self {
        Self(raw)
    }

    /// Returns the value stored in the ring buffer.
    #[inline]
    pub(crate) fn to_raw(self) -> u64 {
        self.0
    }

    /// Returns the generation the cookie was issued in.
    pub(crate) fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Returns the slot the cookie names.
    pub(crate) fn slot(self) -> u32 {
        self.0 as u32
    }
}
