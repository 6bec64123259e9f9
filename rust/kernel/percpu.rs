// SPDX-License-Identifier: GPL-2.0

//! Per-CPU counters.
//!
//! C header: [`include/linux/percpu.h`](srctree/include/linux/percpu.h)

use crate::{
    alloc::{AllocError, Flags},
    bindings,
    cpu::{self, CpuId},
    cpumask::Cpumask,
    sync::atomic::{Atomic, Relaxed},
};
use core::ptr::NonNull;

/// Returns whether `cpu` is possible: whether per-CPU memory is set aside
/// for it. CPU ids below `nr_cpu_ids` may have holes.
fn is_possible(cpu: CpuId) -> bool {
    // SAFETY: `__cpu_possible_mask` is a static cpumask, valid for reading
    // for as long as the kernel runs.
    unsafe { Cpumask::from_raw(&raw const bindings::__cpu_possible_mask) }.test(cpu)
}

/// Iterates over the possible CPUs, as `for_each_possible_cpu()`.
pub fn possible_cpus() -> impl Iterator<Item = CpuId> {
    (0..cpu::nr_cpu_ids())
        .filter_map(CpuId::from_u32)
        .filter(|&cpu| is_possible(cpu))
}

/// `N` 64-bit counters for each possible CPU, from the per-CPU allocator.
///
/// A CPU adds to its own counters with `this_cpu_add()`, or compares and
/// sets one with `this_cpu_cmpxchg()`: on architectures with per-CPU
/// addressing each is one instruction, atomic against interrupts and NMIs
/// on the same CPU, with no lock prefix and no cache line shared with other
/// CPUs. Any CPU may read any CPU's counters.
///
/// # Invariants
///
/// `ptr` is the per-CPU pointer of an allocation of `[u64; N]` from the
/// per-CPU allocator, owned by this object. It is not a pointer to memory:
/// only `this_cpu_*()` and `per_cpu_ptr()` turn it into one.
///
/// # Examples
///
/// ```
/// use kernel::{percpu::{possible_cpus, PerCpuCounters}, prelude::*};
///
/// let counters = PerCpuCounters::<2>::new(GFP_KERNEL)?;
/// counters.add(1, 5);
/// let sum: u64 = possible_cpus().map(|cpu| counters.read(cpu, 1)).sum();
/// assert_eq!(sum, 5);
/// # Ok::<(), Error>(())
/// ```
pub struct PerCpuCounters<const N: usize> {
    ptr: NonNull<[u64; N]>,
}

// SAFETY: The counters are only reached through the per-CPU operations,
// which any thread may use, and the allocation may be freed from any thread.
unsafe impl<const N: usize> Send for PerCpuCounters<N> {}

// SAFETY: `add()` and `this_cpu_cmpxchg()` update the calling CPU's
// counters, with operations that are atomic on that CPU (a caller that moved
// to another CPU meanwhile may update the first one's counter, atomically,
// see `add()` and `this_cpu_cmpxchg()`); `read()` and `set()` access any
// CPU's counter with `READ_ONCE()` and `WRITE_ONCE()`.
unsafe impl<const N: usize> Sync for PerCpuCounters<N> {}

impl<const N: usize> PerCpuCounters<N> {
    /// Allocates counters for every possible CPU, all 0.
    pub fn new(flags: Flags) -> Result<Self, AllocError> {
        // SAFETY: `__alloc_percpu_gfp()` takes any size and alignment: a
        // size of 0 or above `PCPU_MIN_UNIT_SIZE`, or an alignment above
        // `PAGE_SIZE` or not a power of two, makes it warn (unless
        // `__GFP_NOWARN`) and return NULL, which is the allocation failure
        // below. Otherwise it returns zeroed memory or NULL.
        let ptr = unsafe {
            bindings::alloc_percpu_gfp(
                size_of::<[u64; N]>(),
                align_of::<[u64; N]>(),
                flags.as_raw(),
            )
        };
        // INVARIANT: A non-NULL result is a per-CPU allocation of `[u64; N]`.
        NonNull::new(ptr.cast())
            .map(|ptr| Self { ptr })
            .ok_or(AllocError)
    }

    /// Returns the per-CPU pointer of counter `index`, if there is one.
    #[inline]
    fn counter(&self, index: usize) -> Option<*mut u64> {
        // The per-CPU pointer is an address only for the per-CPU
        // operations: offset it without claiming it points to memory.
        (index < N).then(|| self.ptr.as_ptr().cast::<u64>().wrapping_add(index))
    }

    /// Adds `value` to counter `index` of the current CPU; does nothing if
    /// there is no counter `index`.
    ///
    /// Safe with preemption enabled: the CPU whose counter is updated is
    /// the one that runs the update. Atomic against interrupts on that CPU,
    /// and against NMIs where the architecture's `this_cpu_add()` or its
    /// `cmpxchg()` is NMI-safe (`CONFIG_ARCH_HAVE_NMI_SAFE_CMPXCHG`): where
    /// only the latter is, it is a `cmpxchg()` loop on that CPU's counter,
    /// picked before the loop, so that a caller that moves to another CPU
    /// in between adds to the first CPU's counter, atomically.
    #[inline]
    pub fn add(&self, index: usize, value: u64) {
        if let Some(counter) = self.counter(index) {
            // SAFETY: By the type invariant and `index < N`, `counter` is the
            // per-CPU pointer of a `u64` of this allocation, which lives as
            // long as `self`.
            unsafe { bindings::this_cpu_add_u64(counter, value) };
        }
    }

    /// Returns counter `index` of the current CPU, or 0 if there is no
    /// counter `index`.
    #[inline]
    pub fn this_cpu_read(&self, index: usize) -> u64 {
        self.counter(index).map_or(0, |counter| {
            // SAFETY: By the type invariant and `index < N`, `counter` is the
            // per-CPU pointer of a `u64` of this allocation, which lives as
            // long as `self`.
            unsafe { bindings::this_cpu_read_u64(counter) }
        })
    }

    /// Sets counter `index` of the current CPU to `new` if it is `old`, as
    /// `this_cpu_cmpxchg()`; returns whether it did. Does nothing if there
    /// is no counter `index`.
    ///
    /// Safe with preemption enabled: the CPU whose counter is compared and
    /// set is the one that runs the operation. Atomic against interrupts
    /// on that CPU, and against NMIs where the architecture's
    /// `this_cpu_cmpxchg()` or its `cmpxchg()` is NMI-safe
    /// (`CONFIG_ARCH_HAVE_NMI_SAFE_CMPXCHG`): where only the latter is, it
    /// is an atomic `cmpxchg()` of that CPU's counter, picked before the
    /// `cmpxchg()`, so that a caller that moves to another CPU in between
    /// sets the first CPU's counter and may undo an [`Self::add`] that
    /// CPU made meanwhile. Counters that both update need preemption
    /// disabled around this call to lose no count.
    #[inline]
    pub fn this_cpu_cmpxchg(&self, index: usize, old: u64, new: u64) -> bool {
        self.counter(index).is_some_and(|counter| {
            // SAFETY: As in `this_cpu_read()`.
            unsafe { bindings::this_cpu_cmpxchg_u64(counter, old, new) == old }
        })
    }

    /// Sets counter `index` of `cpu` to `value`; does nothing if there is no
    /// counter `index` or `cpu` is not possible.
    ///
    /// Not atomic against the updates `cpu` makes meanwhile, one of which
    /// would be lost: for callers that know `cpu` does not update it.
    pub fn set(&self, cpu: CpuId, index: usize, value: u64) {
        if let Some(counter) = self.per_cpu(cpu, index) {
            // ORDERING: Relaxed, as `WRITE_ONCE()`: a counter orders no other
            // access; callers that need an order provide it.
            counter.store(value, Relaxed);
        }
    }

    /// Returns counter `index` of `cpu`, or 0 if there is no counter
    /// `index` or `cpu` is not possible.
    ///
    /// The value may be out of date by the updates `cpu` makes meanwhile.
    pub fn read(&self, cpu: CpuId, index: usize) -> u64 {
        // ORDERING: Relaxed, as `READ_ONCE()`: see `set()`.
        self.per_cpu(cpu, index)
            .map_or(0, |counter| counter.load(Relaxed))
    }

    /// Returns counter `index` of `cpu`, if there is one and `cpu` is
    /// possible.
    fn per_cpu(&self, cpu: CpuId, index: usize) -> Option<&Atomic<u64>> {
        let counter = self.counter(index).filter(|_| is_possible(cpu))?;
        // SAFETY: By the type invariant, `counter` is a per-CPU pointer of
        // this live allocation, and `cpu` is a possible CPU (checked above).
        let ptr = unsafe { bindings::per_cpu_ptr(counter.cast(), cpu.as_u32()) };
        // SAFETY: `ptr` is `cpu`'s aligned `u64`, valid as long as `self`.
        // The `this_cpu_*()` operations of `cpu` store the aligned word
        // whole on a 64-bit architecture (one instruction on x86-64, an
        // atomic on arm64, one store in the generic versions), so marked
        // accesses from other CPUs see the old value or the new one, never
        // half of each. On 32-bit the generic store is two halves: this module
        // is only built for `CONFIG_64BIT`.
        Some(unsafe { Atomic::<u64>::from_ptr(ptr.cast()) })
    }
}

impl<const N: usize> Drop for PerCpuCounters<N> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant, `ptr` came from the per-CPU
        // allocator and is owned by `self`.
        unsafe { bindings::free_percpu(self.ptr.as_ptr().cast()) };
    }
}
