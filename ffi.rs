// SPDX-License-Identifier: GPL-2.0

//! The entry points the ftrace core calls, declared in
//! include/linux/ftrace_stackmap.h. `#[export]` checks each signature
//! against that declaration at build time.
//!
//! A `struct ftrace_stackmap *` handed to C is an `Arc<StackMap>` turned into
//! a raw pointer: it owns one reference, given back by
//! [`ftrace_stackmap_put`].

use crate::{
    cookie::Cookie,
    platform::{
        rcu_read_lock,
        ReadSection, //
    },
    table::{
        BITS_MAX,
        BITS_MIN,
        MAX_DEPTH, //
    },
    tracefs::{
        self,
        Format, //
    },
    StackMap,
    DEFAULT_BITS, //
};
use kernel::{
    bindings,
    ffi::{
        c_int,
        c_long,
        c_uint,
        c_ulong, //
    },
    prelude::*,
    seq_file::SeqFile,
    sync::{
        Arc,
        ArcBorrow, //
    }, //
};

// The C side sizes its buffers and checks its parameters with these.
const _: () = assert!(MAX_DEPTH == bindings::FTRACE_STACKMAP_MAX_DEPTH as usize);
const _: () = assert!(DEFAULT_BITS == bindings::FTRACE_STACKMAP_BITS_DEFAULT);
const _: () = assert!(BITS_MIN == bindings::FTRACE_STACKMAP_BITS_MIN);
const _: () = assert!(BITS_MAX == bindings::FTRACE_STACKMAP_BITS_MAX);
// The frames the C side prints from the map are u64 words.
const _: () = assert!(size_of::<c_ulong>() == size_of::<u64>());

/// The C name of a map.
type CMap = bindings::ftrace_stackmap;

/// Borrows the map behind a C pointer.
///
/// # Safety
///
/// `map` must come from [`ftrace_stackmap_alloc`] or [`ftrace_stackmap_get`]
/// and its reference must not be put for the lifetime `'a`.
unsafe fn borrow<'a>(map: *mut CMap) -> &'a StackMap {
    // SAFETY: Per the function's safety requirements, `map` came from
    // `Arc::into_raw()` and its reference is still held for `'a`.
    unsafe { &*map.cast::<StackMap>() }
}

/// Allocates a map for `2^bits` stacks; returns an `ERR_PTR()` of `EINVAL`
/// if `bits` is out of range, of `ENOMEM` if memory is short, of
/// `EOVERFLOW` if `prev` is at the last generation, or of `EBUSY` if
/// `prev` was replaced already.
///
/// `prev` is NULL for an instance's first map, or the map the new one
/// replaces: the new map's generations follow `prev`'s, so that cookies of
/// `prev` still in the ring buffer stay stale, and `prev` is never reset
/// again (a reset of it fails with -EAGAIN).
///
/// # Safety
///
/// Must be called from a context that may sleep. `prev` must be NULL or a
/// live map (see [`ftrace_stackmap_put`]).
#[export]
pub unsafe extern "C" fn ftrace_stackmap_alloc(bits: c_uint, prev: *mut CMap) -> *mut CMap {
    // SAFETY: `prev` is NULL or live for the call per the safety
    // requirements.
    let prev = (!prev.is_null()).then(|| unsafe { borrow(prev) });
    match StackMap::new(bits, prev) {
        Ok(map) => Arc::into_raw(map).cast_mut().cast(),
        Err(e) => e.to_ptr(),
    }
}

/// Takes one more reference to `map` and returns it.
///
/// # Safety
///
/// `map` must be a live map (see [`ftrace_stackmap_put`]) for the duration
/// of the call: the caller holds a reference to it, or loaded it, within
/// an RCU read-side critical section that lasts the call, from where it
/// was published, since its last reference is put only a grace period
/// after it was unpublished.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_get(map: *mut CMap) -> *mut CMap {
    // SAFETY: `map` came from `Arc::into_raw()` and one of its references
    // is held for the duration of the call, per the safety requirements.
    let map: Arc<StackMap> =
        unsafe { ArcBorrow::from_raw(map.cast::<StackMap>().cast_const()) }.into();
    Arc::into_raw(map).cast_mut().cast()
}

/// Drops one reference to `map`, if not NULL; the last one frees it.
///
/// # Safety
///
/// `map` must be NULL or come from [`ftrace_stackmap_alloc`] or
/// [`ftrace_stackmap_get`], and must not be used by the caller afterwards.
/// When this may be the last reference, no recorder may still reach `map`:
/// the caller unpublished it and waited for an RCU grace period.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_put(map: *mut CMap) {
    if map.is_null() {
        return;
    }
    // SAFETY: `map` is not NULL, so per the safety requirements it came
    // from `Arc::into_raw()` and the caller gives its reference up.
    drop(unsafe { Arc::from_raw(map.cast::<StackMap>().cast_const()) });
}

/// Looks up or inserts the stack `frames[0..depth]` and returns its cookie.
///
/// Returns 0, which is never a cookie, when the stack must be recorded in
/// full (the counters say why): a cookie in a register costs the fast path
/// less than one stored through a pointer. Lock-free and safe in any
/// context, NMI included.
///
/// # Safety
///
/// `map` must be a live map (see [`ftrace_stackmap_put`]) and `frames`
/// non-NULL and aligned, even for a `depth` of 0, and valid for reading
/// `depth` entries, which nothing writes during the call. The caller must
/// run with preemption disabled, RCU watching and the CPU online, as
/// trace_stackmap_record() checks: that makes it an RCU reader, which a
/// reset waits for.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_lookup(
    map: *mut CMap,
    frames: *const c_ulong,
    depth: c_uint,
) -> u64 {
    // SAFETY: `map` is live for the call per the safety requirements.
    let map = unsafe { borrow(map) };
    // SAFETY: `frames` is non-NULL, aligned and valid for `depth` reads of
    // entries nothing writes meanwhile, per the safety requirements;
    // `c_ulong` and `usize` have the same layout.
    let frames = unsafe { core::slice::from_raw_parts(frames.cast::<usize>(), depth as usize) };
    // SAFETY: The caller runs with preemption disabled, RCU watching and
    // its CPU online for the whole call, per the safety requirements.
    let rcu = unsafe { ReadSection::assume() };
    map.lookup(frames, rcu)
        .map_or(0, |found| found.cookie().to_raw())
}

/// Returns the frames `cookie` names and stores their number in `*depth`,
/// or returns NULL when the cookie is stale (its generation was reset
/// away, or is being reset away) or names no stored stack.
///
/// The frames are the map's own, not a copy: they stay valid until the
/// caller's RCU read-side critical section ends, which a reset waits for.
///
/// # Safety
///
/// `map` must be a live map and `depth` valid for writing. `cookie` must be
/// one that `map` or a map it replaced issued, as those in the ring buffer
/// of `map`'s instance are: only the recording path writes `stack_cookie`
/// events, which have no `inject` file. The caller must be in an RCU
/// read-side critical section (rcu_read_lock(), or preemption disabled with
/// RCU watching and the CPU online) and use the frames only until it ends.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_frames(
    map: *mut CMap,
    cookie: u64,
    depth: *mut c_uint,
) -> *const c_ulong {
    // SAFETY: `map` is live for the call per the safety requirements.
    let map = unsafe { borrow(map) };
    // SAFETY: The caller stays an RCU reader while it uses the frames, per
    // the safety requirements.
    let rcu = unsafe { ReadSection::assume() };
    let cookie = Cookie::from_raw(cookie);
    // SAFETY: A cookie `map` issued in its current generation names where a
    // record of that generation starts; those of older generations, and of
    // the maps it replaced, whose generations are older, are not current.
    let Some(record) = (unsafe {
        map.table()
            .slot(cookie.slot() as usize, cookie.generation(), rcu)
    }) else {
        return core::ptr::null();
    };
    // SAFETY: `depth` is valid for writing per the safety requirements.
    unsafe { *depth = record.depth() as c_uint };
    // CAST: The frames are u64 words, which `c_ulong` is on the 64-bit
    // architectures the Kconfig symbol is limited to (asserted above).
    record.as_ptr().cast()
}

/// Empties `map` and bumps its generation; see [`StackMap::reset`].
///
/// Returns 0; -EAGAIN, with nothing changed, if `map` was replaced (its
/// successor, which started empty, is the map to reset: a caller that
/// orders its resets with the replacements never gets it); or -EOVERFLOW,
/// with nothing changed, if `map` is at the last generation.
///
/// # Safety
///
/// `map` must be a live map, and the caller must be allowed to sleep.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_reset(map: *mut CMap) -> c_int {
    // SAFETY: `map` is live for the call per the safety requirements.
    match unsafe { borrow(map) }.reset() {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Returns `log2` of the number of stacks `map` holds.
///
/// # Safety
///
/// `map` must be a live map.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_bits(map: *mut CMap) -> c_uint {
    // SAFETY: `map` is live for the call per the safety requirements.
    unsafe { borrow(map) }.table().bits()
}

/// Returns the current generation of `map`, or 0, which is never a
/// generation, while a reset runs: a reader that opened a dump then, or
/// sees it change, knows the dump is not whole.
///
/// # Safety
///
/// `map` must be a live map.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_generation(map: *mut CMap) -> u32 {
    // SAFETY: `map` is live for the call per the safety requirements.
    unsafe { borrow(map) }.table().open().unwrap_or(0)
}

/// Returns the slot of the first stack stored at or after position `pos` and
/// before position `limit` in `generation`, and stores in `*end` the
/// position after it, or returns -ENOENT when there is none or `generation`
/// is no longer the map's.
///
/// Positions are where the arena's records start: 0 for the first one, or
/// a slot or an `*end` this returned.
///
/// # Safety
///
/// `map` must be a live map and `end` valid for writing. `pos` must be 0, or
/// a slot this function returned or an `*end` it stored, for `map` and
/// `generation`.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_next_slot(
    map: *mut CMap,
    pos: c_ulong,
    limit: c_ulong,
    generation: u32,
    end: *mut c_ulong,
) -> c_long {
    // SAFETY: `map` is live for the call per the safety requirements.
    let table = unsafe { borrow(map) }.table();
    let guard = rcu_read_lock();
    // SAFETY: `pos` is 0 or where a record of `generation` starts (a slot
    // or an `*end` returned for it), per the safety requirements.
    match unsafe { table.next_published(pos, limit, generation, ReadSection::new(&guard)) } {
        Some((slot, next)) => {
            // SAFETY: `end` is valid for writing per the safety requirements.
            unsafe { *end = next as c_ulong };
            slot as c_long
        }
        None => ENOENT.to_errno() as c_long,
    }
}

/// Shows the record in `slot` in `format` to a seq file.
///
/// Returns 0, or `SEQ_SKIP` when the slot no longer holds a stack of
/// `generation` (a reset raced the read), so that seq_read() moves on.
///
/// # Safety
///
/// `map` must be a live map and `m` a seq file being shown by this thread.
/// `slot` must be one that [`ftrace_stackmap_next_slot`] returned for `map`
/// and `generation`.
unsafe fn show_slot(
    map: *mut CMap,
    m: *mut bindings::seq_file,
    slot: c_uint,
    generation: u32,
    format: Format,
) -> c_int {
    // SAFETY: `map` is live for the call per the safety requirements.
    let map = unsafe { borrow(map) };
    // SAFETY: `m` is a valid seq file used only by this thread for the
    // call, per the safety requirements.
    let m = unsafe { SeqFile::from_raw(m) };
    // SAFETY: `slot` starts a record of `generation`, per the safety
    // requirements.
    if unsafe { tracefs::show_slot(map, m, slot as usize, generation, format) } {
        0
    } else {
        bindings::SEQ_SKIP as c_int
    }
}

/// Prints the record in `slot` to the `stack_map` seq file; see
/// [`show_slot`].
///
/// # Safety
///
/// `map` must be a live map and `m` a seq file being shown by this thread.
/// `slot` must be one that [`ftrace_stackmap_next_slot`] returned for `map`
/// and `generation`.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_show_slot(
    map: *mut CMap,
    m: *mut bindings::seq_file,
    slot: c_uint,
    generation: u32,
) -> c_int {
    // SAFETY: Same requirements, per this function's safety section.
    unsafe { show_slot(map, m, slot, generation, Format::Text) }
}

/// Writes the record in `slot` to the `stack_map_bin` seq file; see
/// [`show_slot`].
///
/// # Safety
///
/// `map` must be a live map and `m` a seq file being shown by this thread.
/// `slot` must be one that [`ftrace_stackmap_next_slot`] returned for `map`
/// and `generation`.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_show_bin_slot(
    map: *mut CMap,
    m: *mut bindings::seq_file,
    slot: c_uint,
    generation: u32,
) -> c_int {
    // SAFETY: Same requirements, per this function's safety section.
    unsafe { show_slot(map, m, slot, generation, Format::Binary) }
}

/// Prints `stack_map_stat`: the counters of `map`, or, when `map` is NULL,
/// the size a map of `bits` would have.
///
/// Sleeps while a reset of `map` runs.
///
/// # Safety
///
/// `map` must be NULL or a live map, and `m` a seq file being shown by this
/// thread.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_show_stat(
    map: *mut CMap,
    m: *mut bindings::seq_file,
    bits: c_uint,
) {
    // SAFETY: `map` is NULL or live for the call per the safety
    // requirements.
    let map = (!map.is_null()).then(|| unsafe { borrow(map) });
    // SAFETY: `m` is a valid seq file used only by this thread for the
    // call, per the safety requirements.
    let m = unsafe { SeqFile::from_raw(m) };
    tracefs::show_stat(map, m, bits);
}

/// Returns the generation of `map` and stores in `*nr_stacks` and `*end`
/// the number of records a dump opened now shows and the position where
/// they end: the records reserved so far, none of them in flight.
///
/// Sleeps for an RCU grace period, and while a reset runs.
///
/// # Safety
///
/// `map` must be a live map, and `nr_stacks` and `end` valid for a write.
#[export]
pub unsafe extern "C" fn ftrace_stackmap_dump_settled(
    map: *mut CMap,
    nr_stacks: *mut c_uint,
    end: *mut c_ulong,
) -> u32 {
    // SAFETY: `map` is live for the call per the safety requirements.
    let (generation, settled_end, stacks) = tracefs::settle_dump(unsafe { borrow(map) });
    // SAFETY: `nr_stacks` and `end` are valid for a write per the safety
    // requirements.
    unsafe {
        // CAST: At most one record per word of an arena of fewer than
        // 2^32 words.
        nr_stacks.write(stacks as c_uint);
        end.write(settled_end as c_ulong);
    }
    generation
}
