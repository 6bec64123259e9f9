// SPDX-License-Identifier: GPL-2.0

//! What the stack table needs from the platform it runs on.
//!
//! [`table`](crate::table) names its atomics, its RCU read-side critical
//! sections, its storage and its spin-wait through this module, which takes
//! them from the kernel crate: the LKMM atomics, RCU, vmalloc (after a look
//! at the pages available) and cpu_relax(). [`refs`](crate::refs) takes
//! its atomics from here too; it and [`stats`](crate::stats) take their
//! per-CPU storage and the possible CPUs from `kernel::percpu` and
//! `kernel::cpu` directly.
//!
//! No other build changes this file: out of tree, it also builds, with
//! `table`, `refs`, `stats`, `hash`, `cookie`, `map` and `reset`,
//! unchanged against a stand-in `kernel` crate on the standard library,
//! for stress tests and Miri.

use core::{
    cell::UnsafeCell,
    marker::PhantomData, //
};
use kernel::{
    page::{
        available_pages,
        PAGE_SIZE, //
    },
    prelude::*,
    types::NotThreadSafe, //
};

pub(crate) use kernel::processor::cpu_relax;
pub(crate) use kernel::sync::atomic::{
    Acquire,
    Atomic,
    Full,
    Relaxed,
    Release, //
};
pub(crate) use kernel::sync::rcu::{
    read_lock as rcu_read_lock,
    Guard as RcuGuard, //
};

/// Evidence that the current context is an RCU reader for the lifetime
/// `'a`: synchronize_rcu() waits for it to end.
///
/// Holding rcu_read_lock() makes one; so does running with preemption or
/// interrupts disabled, or in an NMI handler, while RCU is watching the CPU
/// and the CPU is online: a grace period does not wait for a CPU going
/// offline once RCU has counted it out, though the function tracer still
/// runs there. Not `Send`: the property belongs to the current CPU or
/// thread.
#[derive(Clone, Copy)]
pub(crate) struct ReadSection<'a>(PhantomData<(&'a (), NotThreadSafe)>);

impl<'a> ReadSection<'a> {
    /// Returns the evidence of the section `guard` holds.
    pub(crate) fn new(_guard: &'a RcuGuard) -> Self {
        Self(PhantomData)
    }

    /// Returns the evidence of a section the caller is in without a guard.
    ///
    /// # Safety
    ///
    /// Until the end of `'a`, the current context must stay an RCU reader:
    /// under rcu_read_lock(), or with preemption or interrupts disabled, or
    /// in an NMI handler, with RCU watching the CPU and the CPU online.
    #[inline]
    pub(crate) unsafe fn assume() -> Self {
        Self(PhantomData)
    }
}

/// Backing store of the stack table and its frame arena: allocated once, from
/// vmalloc, when the map is created.
pub(crate) type Storage<T> = VVec<T>;

/// Allocates `len` elements made by `init`.
///
/// Fails with `ENOMEM` when memory is short rather than have the OOM killer
/// make room: a map is optional, and megabytes large. As the ring buffer
/// does before it grows, it first checks the memory available, a rough
/// estimate: an allocation that could not succeed would otherwise take the
/// free pages one by one before failing, and an allocation of another task
/// meanwhile, which may not fail, would wake the OOM killer.
pub(crate) fn storage<T>(len: usize, init: impl Fn() -> T) -> Result<Storage<T>> {
    if available_pages() < pages_for::<T>(len) {
        return Err(ENOMEM);
    }
    let mut v = Storage::with_capacity(len, GFP_KERNEL | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)?;
    for _ in 0..len {
        v.push_within_capacity(init()).map_err(|_| ENOMEM)?;
    }
    Ok(v)
}

/// Returns the pages vmalloc gives `len` elements of `T`.
fn pages_for<T>(len: usize) -> usize {
    len.saturating_mul(size_of::<T>()).div_ceil(PAGE_SIZE)
}

/// Returns how many elements of `T` fill the pages that `len` of them take:
/// a [`storage`] of that many costs no more than one of `len`.
pub(crate) fn fill_pages<T>(len: usize) -> usize {
    pages_for::<T>(len).saturating_mul(PAGE_SIZE) / size_of::<T>()
}

/// Returns the bytes `storage` occupies: the pages vmalloc gave it.
pub(crate) fn storage_bytes<T>(storage: &Storage<T>) -> usize {
    pages_for::<T>(storage.len()).saturating_mul(PAGE_SIZE)
}

/// A word of the frame arena.
///
/// Plain memory, not an atomic: the table writes a frame only while it owns
/// it exclusively, and reads it only once its writes are published. The
/// records' headers, which change while they are read, are only accessed
/// as atomics (`Atomic::from_ptr`).
#[repr(transparent)]
pub(crate) struct Word(UnsafeCell<u64>);

// SAFETY: `Word` only hands out raw pointers; the table's protocol rules out
// data races on them (see `table`).
unsafe impl Sync for Word {}

impl Word {
    /// Creates a zeroed word.
    pub(crate) const fn new() -> Self {
        Self(UnsafeCell::new(0))
    }

    /// Returns a pointer to the word.
    #[inline]
    pub(crate) fn as_ptr(&self) -> *mut u64 {
        self.0.get()
    }

    /// Views `words` as the values they hold.
    ///
    /// # Safety
    ///
    /// No word of `words` may be written, plainly or atomically, while the
    /// returned slice is alive.
    #[inline]
    pub(crate) unsafe fn values(words: &[Word]) -> &[u64] {
        // CAST: `Word` is a transparent `UnsafeCell<u64>`, which has the
        // layout of `u64`; the slice keeps its length.
        // SAFETY: The pointer comes from a live slice of as many `u64`s, and
        // the caller guarantees that nothing writes them meanwhile.
        unsafe { &*(core::ptr::from_ref(words) as *const [u64]) }
    }
}
