// SPDX-License-Identifier: GPL-2.0

//! What the slot protocol needs from the platform it runs on.
//!
//! [`table`](crate::table) names its atomics, its read barrier and its
//! storage through this module and nothing else, so that the same protocol
//! can be built against other implementations of them (a model checker on
//! the host) by changing this one file. The kernel build uses the LKMM
//! atomics and vmalloc.

use kernel::prelude::*;

pub(crate) use kernel::sync::atomic::{
    Acquire, //
    Atomic,
    Full,
    Relaxed,
    Release,
};
pub(crate) use kernel::sync::barrier::smp_rmb;

/// Backing store of the slot table and the frame arena: allocated once, from
/// vmalloc, when the map is created.
pub(crate) type Storage<T> = VVec<T>;

/// Allocates `len` elements made by `init`.
pub(crate) fn storage<T>(len: usize, init: impl Fn() -> T) -> Result<Storage<T>> {
    let mut v = Storage::with_capacity(len, GFP_KERNEL | __GFP_NOWARN)?;
    for _ in 0..len {
        v.push_within_capacity(init()).map_err(|_| ENOMEM)?;
    }
    Ok(v)
}
