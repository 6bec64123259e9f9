// SPDX-License-Identifier: GPL-2.0

//! Random numbers.
//!
//! C header: [`include/linux/random.h`](srctree/include/linux/random.h)

use crate::bindings;

/// Returns a random `u64` from the kernel's random number generator.
///
/// The value is as good as a read of `/dev/urandom`, and comes from a batch
/// kept per CPU. It never waits for the generator to be seeded: before
/// then, it is drawn from what early boot has gathered.
///
/// Takes from its CPU's batch under a local lock, which disables
/// interrupts, or on `PREEMPT_RT` is a lock that may sleep: not for NMI
/// context, nor, on `PREEMPT_RT`, for any atomic context.
///
/// # Examples
///
/// ```
/// use kernel::random;
///
/// // Two draws differ but once in 2^64.
/// assert_ne!(random::get_u64(), random::get_u64());
/// ```
#[inline]
pub fn get_u64() -> u64 {
    // SAFETY: `get_random_u64()` has no preconditions.
    unsafe { bindings::get_random_u64() }
}
