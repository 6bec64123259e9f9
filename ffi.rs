// SPDX-License-Identifier: GPL-2.0

//! The entry points the ftrace core calls, declared in
//! include/linux/ftrace_stackmap.h. `#[export]` checks each signature
//! against that declaration at build time.
//!
//! A `struct ftrace_stackmap *` handed to C is an `Arc<StackMap>` turned into
//! a raw pointer: it owns one reference, given back by
//! [`ftrace_stackmap_put`].

use crate::{cookie::Cookie, StackMap};
use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_ulong},
    prelude::*,
    sync::{rcu, Arc, ArcBorrow},
};

/// The C name of a map.
type CMap = bindings::ftrace_stackmap;

/// Borrows the map behind a C pointer.
///
/// # Safety
///
/// `map` must come from [`ftrace_stackmap_alloc`] or [`ftrace_stackmap_get`]
/// and its reference must not be put for the lifetime `'a`.
unsafe fn borrow<'a>(map: *mut CMap) -> ArcBorrow<'a, StackMap> {
    // SAFETY: Per the function's safety requirements, `map` came from
    // `Arc::into_raw()` and its reference is still held for `'a`.
    unsafe { ArcBorrow::from_raw(map.cast::<StackMap>().cast_const()) }
}

/// Allocates a map for `2^bits` stacks; returns NULL if `bits` is out of
/// range or memory is short.
///
/// # Safety
///
/// Must be called from a context that may sleep.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_alloc(bits: c_uint) -> *mut CMap {
    match StackMap::new(bits) {
        Ok(map) => Arc::into_raw(map).cast_mut().cast(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// Takes one more reference to `map` and returns it.
///
/// # Safety
///
/// `map` must be a live pointer from [`ftrace_stackmap_alloc`] or this
/// function, whose reference the caller holds for the duration of the call.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_get(map: *mut CMap) -> *mut CMap {
    // SAFETY: The caller holds a reference for the duration of the call.
    let map: Arc<StackMap> = unsafe { borrow(map) }.into();
    Arc::into_raw(map).cast_mut().cast()
}

/// Drops one reference to `map`; the last one frees it.
///
/// # Safety
///
/// `map` must come from [`ftrace_stackmap_alloc`] or [`ftrace_stackmap_get`]
/// and must not be used by the caller afterwards. When this may be the last
/// reference, no recorder may still reach `map`: the caller unpublished it
/// and waited for an RCU grace period.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_put(map: *mut CMap) {
    // SAFETY: Per the safety requirements, `map` came from `Arc::into_raw()`
    // and the caller gives its reference up.
    drop(unsafe { Arc::from_raw(map.cast::<StackMap>().cast_const()) });
}

/// Looks up or inserts the stack `frames[0..depth]` and stores its cookie.
///
/// Returns true with `*cookie` set, or false when the stack must be
/// recorded in full (the counters say why). Lock-free and safe in any
/// context, NMI included.
///
/// # Safety
///
/// `map` must be a live map (see [`ftrace_stackmap_put`]), `frames` valid
/// for reading `depth` entries and `cookie` valid for writing.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_lookup(
    map: *mut CMap,
    frames: *const c_ulong,
    depth: c_uint,
    cookie: *mut u64,
) -> bool {
    // SAFETY: `map` is live for the call per the safety requirements.
    let map = unsafe { borrow(map) };
    // SAFETY: `frames` is valid for `depth` reads per the safety
    // requirements; `c_ulong` and `usize` have the same layout.
    let frames = unsafe { core::slice::from_raw_parts(frames.cast::<usize>(), depth as usize) };
    let rcu = rcu::read_lock();
    match map.lookup(frames, &rcu) {
        Ok(found) => {
            // SAFETY: `cookie` is valid for writing per the safety
            // requirements.
            unsafe { *cookie = found.cookie().to_raw() };
            true
        }
        Err(_) => false,
    }
}

/// Copies the frames `cookie` names into `frames` (at most `size`).
///
/// Returns the depth of the stack, or -ENOENT when the cookie is stale (its
/// generation was reset away, or is being reset away) or names no stored
/// stack.
///
/// # Safety
///
/// `map` must be a live map and `frames` valid for writing `size` entries.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_resolve(
    map: *mut CMap,
    cookie: u64,
    frames: *mut c_ulong,
    size: c_uint,
) -> c_int {
    // SAFETY: `map` is live for the call per the safety requirements.
    let map = unsafe { borrow(map) };
    // SAFETY: `frames` is valid for `size` writes per the safety
    // requirements; `c_ulong` and `usize` have the same layout.
    let out = unsafe { core::slice::from_raw_parts_mut(frames.cast::<usize>(), size as usize) };
    let table = map.table();
    let Some(sequence) = table.read_begin() else {
        return ENOENT.to_errno();
    };
    let Some(record) = table.resolve(Cookie::from_raw(cookie)) else {
        return ENOENT.to_errno();
    };
    let depth = record.depth();
    for (dst, frame) in out.iter_mut().zip(record.frames()) {
        *dst = frame;
    }
    if table.read_retry(sequence) {
        return ENOENT.to_errno();
    }
    depth as c_int
}

/// Empties `map` and bumps its generation; see [`StackMap::reset`].
///
/// # Safety
///
/// `map` must be a live map, and the caller must be allowed to sleep.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_reset(map: *mut CMap) {
    // SAFETY: `map` is live for the call per the safety requirements.
    unsafe { borrow(map) }.reset();
}
