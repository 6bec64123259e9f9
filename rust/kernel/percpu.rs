// SPDX-License-Identifier: GPL-2.0

//! Per-CPU counters.
//!
//! C header: [`include/linux/percpu.h`](srctree/include/linux/percpu.h)

use crate::{
    alloc::{
        AllocError,
        Flags, //
    },
    bindings,
    cpu::CpuId,
    sync::atomic::{
        Atomic,
        Relaxed, //
    }, //
};
use core::ptr::NonNull;

/// `N` 64-bit counters for each possible CPU, from the per-CPU allocator.
///
/// A CPU adds to its own counters with `this_cpu_add()`, or compares and
/// sets one with `this_cpu_cmpxchg()`, in its own per-CPU memory, atomic
/// against interrupts and NMIs on the same CPU. On architectures with
/// per-CPU addressing, such as x86, each is one instruction once the C
/// helpers are inlined (`CONFIG_RUST_INLINE_HELPERS`; a call to the helper
/// otherwise), with no lock prefix; on arm64, an atomic (an LSE instruction
/// or a load/store-exclusive loop) with preemption disabled around it.
/// Where the architecture's `this_cpu` operations are not NMI-safe (no
/// `CONFIG_ARCH_HAS_NMI_SAFE_THIS_CPU_OPS`), they are relaxed atomics on the
/// current CPU's counter instead, which are NMI-safe where the
/// architecture's atomics are (`CONFIG_ARCH_HAVE_NMI_SAFE_CMPXCHG`). Any CPU
/// may read any CPU's counters.
///
/// # Invariants
///
/// `ptr` is the per-CPU pointer of an allocation of `[u64; N]` from the
/// per-CPU allocator, owned by this object. It is not a pointer to memory:
/// only `this_cpu_*()`, `raw_cpu_ptr()` and `per_cpu_ptr()` turn it into one.
///
/// A counter is named by a [`CounterIndex<N>`], which is below `N`.
///
/// # Examples
///
/// ```
/// use kernel::{
///     cpu::possible_cpus,
///     percpu::{CounterIndex, PerCpuCounters},
///     prelude::*,
/// };
///
/// let counters = PerCpuCounters::<2>::new(GFP_KERNEL)?;
/// // Checked at build time, or at run time.
/// let first = CounterIndex::constant::<0>();
/// let second = CounterIndex::new(1).ok_or(EINVAL)?;
/// counters.this_cpu_add(second, 5);
/// let sum: u64 = possible_cpus().map(|cpu| counters.read(cpu, second)).sum();
/// assert_eq!(sum, 5);
///
/// // Every CPU's first counter is still 0: this sets whichever runs the call.
/// assert_eq!(counters.this_cpu_cmpxchg(first, 0, 7), Ok(0));
/// // There is no third counter.
/// assert!(CounterIndex::<2>::new(2).is_none());
/// assert_eq!(CounterIndex::<2>::all().count(), 2);
/// # Ok::<(), Error>(())
/// ```
pub struct PerCpuCounters<const N: usize> {
    ptr: NonNull<[u64; N]>,
}

/// The index of one of the `N` counters of a [`PerCpuCounters<N>`].
///
/// Checked where it is made, so that the operations that take it need no
/// check of their own, and have no failure to report for it.
///
/// # Invariants
///
/// The index is below `N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterIndex<const N: usize>(usize);

impl<const N: usize> CounterIndex<N> {
    /// Returns the index `index`, if it is below `N`.
    #[inline]
    pub const fn new(index: usize) -> Option<Self> {
        if index < N {
            // INVARIANT: Checked above.
            Some(Self(index))
        } else {
            None
        }
    }

    /// Returns the index `I`, checked against `N` when the caller is built.
    #[inline]
    pub const fn constant<const I: usize>() -> Self {
        const { assert!(I < N) };
        // INVARIANT: Checked above.
        Self(I)
    }

    /// Returns the index `index` modulo `N`: free where the compiler can
    /// tell that `index` is below `N`, as it drops the division then.
    #[inline]
    pub const fn wrapping(index: usize) -> Self {
        const { assert!(N > 0) };
        // INVARIANT: A remainder of the division by `N`.
        Self(index % N)
    }

    /// Returns every index, in order.
    #[inline]
    pub fn all() -> impl Iterator<Item = Self> {
        // INVARIANT: Each is below `N`.
        (0..N).map(Self)
    }

    /// Returns the index as a number.
    #[inline]
    pub const fn as_usize(self) -> usize {
        self.0
    }
}

// SAFETY: The counters are only reached through the per-CPU operations,
// which any thread may use, and the allocation may be freed from any thread.
unsafe impl<const N: usize> Send for PerCpuCounters<N> {}

// SAFETY: `this_cpu_add()`, `this_cpu_read()` and `this_cpu_cmpxchg()`
// access the counters of the CPU that runs them, with operations that are
// atomic on that CPU, or with atomics where those are not NMI-safe (see
// `this_cpu_atomic()`); `read()` and `set_remote()` access any CPU's
// counter with `READ_ONCE()` and `WRITE_ONCE()`.
unsafe impl<const N: usize> Sync for PerCpuCounters<N> {}

impl<const N: usize> PerCpuCounters<N> {
    /// Allocates counters for every possible CPU, all 0.
    ///
    /// `N` must be at least 1, and the counters of a CPU must fit in the
    /// per-CPU allocator's smallest unit (`PCPU_MIN_UNIT_SIZE`, 32 KiB).
    pub fn new(flags: Flags) -> Result<Self, AllocError> {
        // Checked at build time, as the allocator would warn at run time.
        const { assert!(N > 0 && size_of::<[u64; N]>() <= 32 << 10) };
        // SAFETY: `__alloc_percpu_gfp()` has no safety requirements; the
        // size is within what the allocator accepts (checked above) and the
        // alignment is that of a `u64`. It returns zeroed memory or NULL.
        let ptr = unsafe {
            bindings::__alloc_percpu_gfp(
                size_of::<[u64; N]>(),
                align_of::<[u64; N]>(),
                flags.as_raw(),
            )
        };
        // INVARIANT: A non-NULL result is a per-CPU allocation of `[u64; N]`.
        // CAST: The allocation is of `[u64; N]`, sized and aligned above.
        NonNull::new(ptr.cast())
            .map(|ptr| Self { ptr })
            .ok_or(AllocError)
    }

    /// Returns the per-CPU pointer of counter `index`.
    #[inline]
    fn counter(&self, index: CounterIndex<N>) -> *mut u64 {
        // The per-CPU pointer is an address only for the per-CPU
        // operations: offset it without claiming it points to memory.
        self.ptr
            .as_ptr()
            .cast::<u64>()
            .wrapping_add(index.as_usize())
    }

    /// Returns counter `index` of the current CPU as an atomic, where the
    /// architecture's `this_cpu` operations are not NMI-safe.
    ///
    /// The CPU is the one that runs the call: a caller that moves to
    /// another CPU afterwards still updates the first one's counter,
    /// atomically.
    #[cfg(not(CONFIG_ARCH_HAS_NMI_SAFE_THIS_CPU_OPS))]
    #[inline]
    fn this_cpu_atomic(&self, index: CounterIndex<N>) -> &Atomic<u64> {
        // SAFETY: By the type invariants of `Self` and `CounterIndex`, the
        // counter is a per-CPU pointer of this live allocation.
        let ptr = unsafe { bindings::raw_cpu_ptr(self.counter(index).cast()) };
        // SAFETY: `ptr` is the current CPU's aligned `u64`, a possible CPU's
        // (it runs), valid as long as `self`; every access to it is atomic,
        // as in `per_cpu()`.
        unsafe { Atomic::from_ptr(ptr.cast()) }
    }

    /// Adds `value` to counter `index` of the current CPU, as
    /// `this_cpu_add()`.
    ///
    /// Safe with preemption enabled: the CPU whose counter is updated is
    /// the one that runs the update. Atomic against interrupts and NMIs on
    /// that CPU (see the type's documentation).
    #[inline]
    pub fn this_cpu_add(&self, index: CounterIndex<N>, value: u64) {
        #[cfg(CONFIG_ARCH_HAS_NMI_SAFE_THIS_CPU_OPS)]
        // SAFETY: By the type invariants of `Self` and `CounterIndex`, the
        // counter is the per-CPU pointer of a `u64` of this allocation,
        // which lives as long as `self`.
        unsafe {
            bindings::this_cpu_add_u64(self.counter(index), value)
        };
        #[cfg(not(CONFIG_ARCH_HAS_NMI_SAFE_THIS_CPU_OPS))]
        // ORDERING: Relaxed, as `this_cpu_add()`: a counter orders no other
        // access.
        self.this_cpu_atomic(index).add(value, Relaxed);
    }

    /// Returns counter `index` of the current CPU.
    ///
    /// Safe with preemption enabled: the CPU whose counter is read is the
    /// one that runs the read, which the caller may have left by the time
    /// it uses the value.
    #[inline]
    pub fn this_cpu_read(&self, index: CounterIndex<N>) -> u64 {
        // SAFETY: As in `this_cpu_add()`.
        unsafe { bindings::this_cpu_read_u64(self.counter(index)) }
    }

    /// Sets counter `index` of the current CPU to `new` if it is `old`, as
    /// `this_cpu_cmpxchg()`: returns `Ok(old)` if it did, or `Err` with
    /// the value it found.
    ///
    /// Safe with preemption enabled: the CPU whose counter is compared and
    /// set is the one that runs the operation. Atomic against interrupts
    /// and NMIs on that CPU (see the type's documentation). A caller that
    /// read `old` on one CPU and moved to another compares against the
    /// other CPU's counter. Counters that are also added to need
    /// preemption disabled around the read and this call to lose no count.
    #[inline]
    pub fn this_cpu_cmpxchg(&self, index: CounterIndex<N>, old: u64, new: u64) -> Result<u64, u64> {
        #[cfg(CONFIG_ARCH_HAS_NMI_SAFE_THIS_CPU_OPS)]
        {
            // SAFETY: As in `this_cpu_add()`.
            let found = unsafe { bindings::this_cpu_cmpxchg_u64(self.counter(index), old, new) };
            if found == old {
                Ok(old)
            } else {
                Err(found)
            }
        }
        #[cfg(not(CONFIG_ARCH_HAS_NMI_SAFE_THIS_CPU_OPS))]
        // ORDERING: Relaxed, as `this_cpu_cmpxchg()`: see `this_cpu_add()`.
        self.this_cpu_atomic(index).cmpxchg(old, new, Relaxed)
    }

    /// Sets counter `index` of `cpu` to `value`; does nothing if `cpu` is
    /// not possible.
    ///
    /// A remote write, which Documentation/core-api/this_cpu_ops.rst calls
    /// "highly discouraged unless absolutely necessary": it is not atomic
    /// against the updates `cpu` makes meanwhile, one of which would be
    /// lost. For callers that know `cpu` does not update the counter, such
    /// as one that starts counters again while nothing counts.
    #[inline]
    pub fn set_remote(&self, cpu: CpuId, index: CounterIndex<N>, value: u64) {
        if let Some(counter) = self.per_cpu(cpu, index) {
            // ORDERING: Relaxed, as `WRITE_ONCE()`: a counter orders no other
            // access; callers that need an order provide it.
            counter.store(value, Relaxed);
        }
    }

    /// Returns counter `index` of `cpu`, or 0 if `cpu` is not possible.
    ///
    /// The value may be out of date by the updates `cpu` makes meanwhile.
    #[inline]
    pub fn read(&self, cpu: CpuId, index: CounterIndex<N>) -> u64 {
        // ORDERING: Relaxed, as `READ_ONCE()`: see `set_remote()`.
        self.per_cpu(cpu, index)
            .map_or(0, |counter| counter.load(Relaxed))
    }

    /// Returns counter `index` of `cpu`, if `cpu` is possible.
    #[inline]
    fn per_cpu(&self, cpu: CpuId, index: CounterIndex<N>) -> Option<&Atomic<u64>> {
        if !cpu.is_possible() {
            return None;
        }
        // SAFETY: By the type invariants of `Self` and `CounterIndex`, the
        // counter is a per-CPU pointer of this live allocation, and `cpu`
        // is a possible CPU (checked above).
        let ptr = unsafe { bindings::per_cpu_ptr(self.counter(index).cast(), cpu.as_u32()) };
        // SAFETY: `ptr` is `cpu`'s aligned `u64`, valid as long as `self`.
        // Every access to a counter is a marked one, so none is a data race:
        // its CPU uses the `this_cpu_*()` operations (one instruction on x86,
        // an atomic on arm64, or atomics of this module where they are not
        // NMI-safe), and other CPUs the `READ_ONCE()` and `WRITE_ONCE()` of
        // this `Atomic`. The memory model does not describe the x86
        // instructions, which are inline assembly that KCSAN does not see
        // either: they count here as marked accesses because each is one
        // `asm volatile` instruction, which the compiler cannot tear, fuse
        // or repeat.
        // The `this_cpu_*()` operations store the aligned word whole on a
        // 64-bit architecture, which this module is only built for, so
        // other CPUs see the old value or the new one, never half of each.
        // A `set_remote()` that races an update `cpu` makes, which is atomic on
        // `cpu` only, may undo it, as documented there, but is no data race
        // either.
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
