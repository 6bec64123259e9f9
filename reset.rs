// SPDX-License-Identifier: GPL-2.0

//! Reset: empty a map in place and move it to the next generation.
//!
//! Recorders take no lock, so a reset cannot simply wipe the table under
//! them. It closes the table's gate so that new recorders fall back to full
//! stacks, waits for an RCU grace period so that the recorders already
//! inside have left (every recorder runs with preemption disabled or under
//! rcu_read_lock(), NMI handlers included), clears the slots, the arena's
//! reservations and the counters, bumps the generation, and opens the gate.
//! Cookies issued before stop resolving because their generation is gone.

use crate::{hash::StackHash, StackMap};
use kernel::sync::rcu;

impl<H: StackHash> StackMap<H> {
    /// Empties the map and bumps its generation.
    ///
    /// Sleeps. When it returns, the map is empty and one generation higher,
    /// and every recorder that raced it either completed against the old
    /// generation or fell back to a full stack.
    pub(crate) fn reset(&self) {
        let _guard = self.reset_lock.lock();
        self.table.begin_reset();
        rcu::synchronize_rcu();
        self.table.clear();
        self.stats.clear();
        self.table.finish_reset();
    }
}
