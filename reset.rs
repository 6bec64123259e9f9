// SPDX-License-Identifier: GPL-2.0

//! Reset: empty a map in place and move it to the next generation.
//!
//! Recorders take no lock, so a reset cannot simply wipe the table under them.
//! It closes the table's gate so that new recorders fall back to full stacks,
//! waits for an RCU grace period so that the recorders already inside have left
//! (every recorder runs with preemption disabled or under rcu_read_lock(), NMI
//! handlers included), clears the buckets, the arena and its reservations and
//! the ref counts, starts the counters again, bumps the generation, and opens
//! the gate. Cookies issued before stop resolving because their generation is
//! gone.
//!
//! The stacks recorded in full while the gate is closed are in the trace
//! after the reset, so the counter that says why (`fallback_reset`) starts
//! again before the gate closes, and the others once it has.

use crate::{
    cookie::next_generation,
    hash::StackHash,
    StackMap, //
};
use kernel::{
    prelude::*,
    sync::{
        rcu,
        MutexGuard, //
    }, //
};

impl<H: StackHash> StackMap<H> {
    /// Empties the map and bumps its generation.
    ///
    /// Sleeps. When it returns, the map is empty and one generation higher,
    /// and every recorder that raced it either completed against the old
    /// generation or fell back to a full stack.
    ///
    /// A map that was replaced is left as it is, and the reset fails with
    /// `EAGAIN`: its successor started empty, at the generations this one
    /// would move on to, and is the one to reset, once whoever replaced
    /// this map has published it. A map at the last generation is left as
    /// it is too, and the reset fails with `EOVERFLOW` (see
    /// [`crate::cookie`]).
    pub(crate) fn reset(&self) -> Result {
        let guard = self.reset_lock.lock();
        if *guard {
            return Err(EAGAIN);
        }
        let next = next_generation(self.table().generation())?;
        self.close_for_reset(&guard);
        rcu::synchronize();
        // SAFETY: The gate closed under `guard` and a grace period has
        // passed since; `next` is the generation after the current one,
        // which cannot change while `guard` is held.
        unsafe { self.reopen_after_reset(&guard, next) };
        Ok(())
    }

    /// Runs `f` with no reset in progress, so that what it reads of the
    /// table and the counters belongs to one generation: a reset clears
    /// the table and starts the counters again one after the other.
    ///
    /// Sleeps while a reset runs.
    pub(crate) fn between_resets<T>(&self, f: impl FnOnce() -> T) -> T {
        let _guard = self.reset_lock.lock();
        f()
    }

    /// The first step of a reset: closes the gate, so that recorders fall
    /// back to full stacks, counted from now on as reset fallbacks.
    ///
    /// `reset` is a guard of this map's reset lock, which keeps other
    /// resets out until the gate is open again.
    pub(crate) fn close_for_reset(&self, reset: &MutexGuard<'_, bool>) {
        debug_assert!(core::ptr::eq(reset.lock_ref(), &self.reset_lock));
        self.stats().begin_reset();
        self.table().begin_reset();
    }

    /// The last step of a reset: empties the table, starts the other
    /// counters again and opens the gate on generation `next`.
    ///
    /// # Safety
    ///
    /// [`Self::close_for_reset`] must have closed the gate under `reset`, a
    /// guard of this map's reset lock, and every recorder or reader that
    /// found the gate open must have left since, as after an RCU grace
    /// period. `next` must be the generation after the current one
    /// ([`next_generation`]).
    pub(crate) unsafe fn reopen_after_reset(&self, reset: &MutexGuard<'_, bool>, next: u32) {
        debug_assert!(core::ptr::eq(reset.lock_ref(), &self.reset_lock));
        // SAFETY: The gate is closed and nobody that found it open is left,
        // per the safety requirements; the reset lock keeps other resets out.
        unsafe { self.table().clear() };
        self.stats().finish_reset();
        // SAFETY: The table was just emptied, and `next` follows the
        // current generation, per the safety requirements.
        unsafe { self.table().finish_reset(next) };
    }
}
