// SPDX-License-Identifier: GPL-2.0

//! RCU support.
//!
//! C header: [`include/linux/rcupdate.h`](srctree/include/linux/rcupdate.h)

use crate::{bindings, types::NotThreadSafe};

/// Evidence that the RCU read side lock is held on the current thread/CPU.
///
/// The type is explicitly not `Send` because this property is per-thread/CPU.
///
/// # Invariants
///
/// The RCU read side lock is actually held while instances of this guard exist.
pub struct Guard(NotThreadSafe);

impl Guard {
    /// Acquires the RCU read side lock and returns a guard.
    #[inline]
    pub fn new() -> Self {
        // SAFETY: An FFI call with no additional requirements.
        unsafe { bindings::rcu_read_lock() };
        // INVARIANT: The RCU read side lock was just acquired above.
        Self(NotThreadSafe)
    }

    /// Explicitly releases the RCU read side lock.
    #[inline]
    pub fn unlock(self) {}
}

impl Default for Guard {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: By the type invariants, the RCU read side is locked, so it is ok to unlock it.
        unsafe { bindings::rcu_read_unlock() };
    }
}

/// Acquires the RCU read side lock.
#[inline]
pub fn read_lock() -> Guard {
    Guard::new()
}

/// Waits for an RCU grace period.
///
/// When it returns, every RCU read-side critical section that was running
/// when it was called has ended; that includes regions with preemption or
/// interrupts disabled, and NMI handlers, on CPUs where RCU was watching.
/// Code that runs where RCU does not watch (the idle loop, early entry
/// code; see `rcu_is_watching()`) is not waited for.
///
/// Sleeps, so it must be called from a context that may sleep.
#[inline]
pub fn synchronize_rcu() {
    // SAFETY: An FFI call with no additional requirements; it sleeps, which
    // the caller allows per the function documentation.
    unsafe { bindings::synchronize_rcu() };
}
