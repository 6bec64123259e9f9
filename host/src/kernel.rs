// SPDX-License-Identifier: GPL-2.0

//! The parts of the kernel crate that the map, its table and its counters
//! use, implemented on the host's standard library, so that the kernel
//! sources build unchanged: the atomics take the kernel's ordering
//! arguments and map them to the C++ memory model, an RCU grace period
//! waits for the threads in a read-side section, vmalloc is the heap, which
//! sets its own limit, a thread is a CPU, which tests may have threads
//! share, and pin-init comes from its user-space release, `pinned-init`.

/// `kernel::prelude`.
pub mod prelude {
    pub use super::alloc::{Flags, VVec, __GFP_NOWARN, __GFP_RETRY_MAYFAIL, GFP_KERNEL};
    pub use super::error::{Error, Result, EAGAIN, EBUSY, EINVAL, ENOMEM, EOVERFLOW};
    pub use crate::try_pin_init;
    pub use pinned_init::pin_data;

    /// `kernel::prelude::KVec`: the same vector, from kmalloc.
    pub type KVec<T> = VVec<T>;
}

/// `kernel::error`.
pub mod error {
    /// A kernel error number.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Error(pub i32);

    /// `-EAGAIN`.
    pub const EAGAIN: Error = Error(11);
    /// `-EBUSY`.
    pub const EBUSY: Error = Error(16);
    /// `-EINVAL`.
    pub const EINVAL: Error = Error(22);
    /// `-ENOMEM`.
    pub const ENOMEM: Error = Error(12);
    /// `-EOVERFLOW`.
    pub const EOVERFLOW: Error = Error(75);

    /// `kernel::error::Result`.
    pub type Result<T = (), E = Error> = core::result::Result<T, E>;

    /// The error of an initializer that cannot fail, and of a failed
    /// allocation from the host heap, which aborts instead.
    impl From<core::convert::Infallible> for Error {
        fn from(e: core::convert::Infallible) -> Self {
            match e {}
        }
    }
}

/// `kernel::try_pin_init!`: pin-init's, failing with [`error::Error`].
#[macro_export]
macro_rules! try_pin_init {
    ($($args:tt)*) => {
        ::pinned_init::try_pin_init!($($args)* ? $crate::error::Error)
    };
}

/// `kernel::new_mutex!`: a [`sync::Mutex`] holding `$inner`.
#[macro_export]
macro_rules! new_mutex {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::sync::Mutex::new($inner)
    };
}

/// `kernel::alloc`.
pub mod alloc {
    use super::error::{Result, ENOMEM};

    /// Allocation flags; the host heap takes none.
    #[derive(Clone, Copy)]
    pub struct Flags;

    impl core::ops::BitOr for Flags {
        type Output = Flags;

        fn bitor(self, _: Flags) -> Flags {
            Flags
        }
    }

    /// `GFP_KERNEL`.
    pub const GFP_KERNEL: Flags = Flags;
    /// `__GFP_NOWARN`.
    pub const __GFP_NOWARN: Flags = Flags;
    /// `__GFP_RETRY_MAYFAIL`.
    pub const __GFP_RETRY_MAYFAIL: Flags = Flags;

    /// `kernel::alloc::VVec`: a vector that never grows past its capacity.
    pub struct VVec<T>(Vec<T>);

    impl<T> VVec<T> {
        /// Allocates room for `capacity` elements.
        pub fn with_capacity(capacity: usize, _: Flags) -> Result<Self> {
            let mut v = Vec::new();
            v.try_reserve_exact(capacity).map_err(|_| ENOMEM)?;
            Ok(Self(v))
        }

        /// Appends `value` if there is room; gives it back otherwise.
        pub fn push_within_capacity(&mut self, value: T) -> core::result::Result<(), T> {
            if self.0.len() == self.0.capacity() {
                return Err(value);
            }
            self.0.push(value);
            Ok(())
        }
    }

    impl<T> VVec<T> {
        /// Returns the element or the elements that `index` names, if the
        /// vector has them.
        ///
        /// Comes before the slice's `get()`, which the kernel's vector is
        /// reached through: this one makes a reference to only what it
        /// returns, where a `Deref` makes one to the whole vector, which
        /// Miri then retags, word by word, on every access to the arena.
        #[inline]
        pub fn get<I: VVecIndex<T>>(&self, index: I) -> Option<&I::Output> {
            index.get(self)
        }

        /// Returns the number of elements, as the slice's `len()` does,
        /// without a reference to the elements.
        #[inline]
        pub fn len(&self) -> usize {
            self.0.len()
        }

        /// Returns whether the vector is empty, as the slice's
        /// `is_empty()` does, without a reference to the elements.
        #[inline]
        pub fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
    }

    /// An index or a range of indices into a [`VVec`].
    pub trait VVecIndex<T> {
        /// An element or a slice of them.
        type Output: ?Sized;

        /// Returns what `self` names in `v`, if `v` has it.
        fn get(self, v: &VVec<T>) -> Option<&Self::Output>;
    }

    impl<T> VVecIndex<T> for usize {
        type Output = T;

        #[inline]
        fn get(self, v: &VVec<T>) -> Option<&T> {
            // SAFETY: `self` is within the vector's initialized elements,
            // which live as long as the borrow of `v`; `Vec::as_ptr()`
            // makes no reference to the other elements.
            (self < v.0.len()).then(|| unsafe { &*v.0.as_ptr().add(self) })
        }
    }

    impl<T> VVecIndex<T> for core::ops::Range<usize> {
        type Output = [T];

        #[inline]
        fn get(self, v: &VVec<T>) -> Option<&[T]> {
            // SAFETY: As for a `usize`: the range lies within the vector's
            // initialized elements.
            (self.start <= self.end && self.end <= v.0.len()).then(|| unsafe {
                core::slice::from_raw_parts(v.0.as_ptr().add(self.start), self.end - self.start)
            })
        }
    }

    impl<T> core::ops::Deref for VVec<T> {
        type Target = [T];

        fn deref(&self) -> &[T] {
            &self.0
        }
    }
}

/// `kernel::types`.
pub mod types {
    /// Makes a type `!Send` and `!Sync`.
    pub type NotThreadSafe = core::marker::PhantomData<*mut ()>;
}

/// `kernel::cpu`: each thread that counts is a CPU.
pub mod cpu {
    use std::{
        cell::Cell,
        sync::atomic::{AtomicU32, Ordering},
    };

    /// The number of CPUs the counters are sized for.
    pub const NR_CPUS: u32 = 8;

    /// Returns the number of possible CPUs.
    pub fn nr_cpu_ids() -> u32 {
        NR_CPUS
    }

    /// Iterates over the CPUs: all of them are possible here.
    pub fn possible_cpus() -> impl Iterator<Item = CpuId> {
        (0..NR_CPUS).filter_map(CpuId::from_u32)
    }

    /// A CPU number.
    #[derive(Clone, Copy)]
    pub struct CpuId(u32);

    static NEXT: AtomicU32 = AtomicU32::new(0);

    std::thread_local! {
        static ID: Cell<u32> = Cell::new(NEXT.fetch_add(1, Ordering::Relaxed) % NR_CPUS);
    }

    impl CpuId {
        /// Returns the CPU of the calling thread.
        #[inline]
        pub fn current() -> Self {
            Self(ID.with(Cell::get))
        }

        /// Makes the calling thread run as this CPU from now on.
        ///
        /// Threads that run as one CPU update its per-CPU words at any
        /// point of each other's updates, as an interrupt or NMI does
        /// with the code it interrupts, and more: the kernel's NMI runs to
        /// its end before the code it interrupted goes on.
        #[cfg(test)]
        pub fn run_as(self) {
            ID.with(|id| id.set(self.0));
        }

        /// Returns the CPU `id`, if it is a possible one.
        pub fn from_u32(id: u32) -> Option<Self> {
            (id < NR_CPUS).then_some(Self(id))
        }

        /// Returns the number.
        #[inline]
        pub fn as_u32(&self) -> u32 {
            self.0
        }
    }
}

/// `kernel::random`.
pub mod random {
    /// `get_random_u64()`.
    pub fn get_u64() -> u64 {
        use std::hash::{BuildHasher, RandomState};
        RandomState::new().hash_one(0u64)
    }
}

/// `kernel::page`.
pub mod page {
    /// The size of a page.
    pub const PAGE_SIZE: usize = 4096;

    /// `si_mem_available()`: the pages that can be allocated; the host
    /// heap sets no limit but its own.
    pub fn available_pages() -> usize {
        usize::MAX
    }
}

/// `kernel::processor`.
pub mod processor {
    /// Tells the CPU this is a spin-wait loop; under Miri, lets another
    /// thread run.
    #[inline]
    pub fn cpu_relax() {
        std::hint::spin_loop();
    }
}

/// `kernel::percpu`: a thread adds to its own CPU's counters.
pub mod percpu {
    use super::{
        alloc::{Flags, VVec},
        cpu::{CpuId, NR_CPUS},
        error::Result,
    };
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

    /// One CPU's counters, on cache lines of their own as in the per-CPU
    /// areas of the kernel.
    #[repr(align(128))]
    struct Counters<const N: usize>([AtomicU64; N]);

    /// `N` counters per CPU.
    pub struct PerCpuCounters<const N: usize>(VVec<Counters<N>>);

    /// The index of one of `N` counters, below `N`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct CounterIndex<const N: usize>(usize);

    impl<const N: usize> CounterIndex<N> {
        /// Returns the index `index`, if it is below `N`.
        #[inline]
        pub const fn new(index: usize) -> Option<Self> {
            if index < N {
                Some(Self(index))
            } else {
                None
            }
        }

        /// Returns the index `I`, checked against `N` at build time.
        #[inline]
        pub const fn constant<const I: usize>() -> Self {
            const { assert!(I < N) };
            Self(I)
        }

        /// Returns the index `index` modulo `N`.
        #[inline]
        pub const fn wrapping(index: usize) -> Self {
            Self(index % N)
        }

        /// Returns every index, in order.
        pub fn all() -> impl Iterator<Item = Self> {
            (0..N).map(Self)
        }

        /// Returns the index as a number.
        #[inline]
        pub const fn as_usize(self) -> usize {
            self.0
        }
    }

    impl<const N: usize> PerCpuCounters<N> {
        /// Allocates counters for every CPU, all 0.
        pub fn new(flags: Flags) -> Result<Self> {
            let mut cpus = VVec::with_capacity(NR_CPUS as usize, flags)?;
            for _ in 0..NR_CPUS {
                // Within the capacity just allocated.
                let _ = cpus.push_within_capacity(Counters([const { AtomicU64::new(0) }; N]));
            }
            Ok(Self(cpus))
        }

        /// Adds `value` to counter `index` of the calling thread's CPU.
        ///
        /// In the tests, whose threads may share a CPU, an atomic add, as
        /// `this_cpu_add()` is atomic on its CPU. In the benchmark, whose
        /// threads have CPUs of their own, a load and a store, as
        /// `this_cpu_add()` has no lock prefix on x86.
        #[inline]
        pub fn this_cpu_add(&self, index: CounterIndex<N>, value: u64) {
            if let Some(counter) = self.this_cpu(index) {
                if cfg!(test) {
                    counter.fetch_add(value, Relaxed);
                } else {
                    counter.store(counter.load(Relaxed).wrapping_add(value), Relaxed);
                }
            }
        }

        /// Returns counter `index` of the calling thread's CPU.
        #[inline]
        pub fn this_cpu_read(&self, index: CounterIndex<N>) -> u64 {
            self.this_cpu(index)
                .map_or(0, |counter| counter.load(Relaxed))
        }

        /// Sets counter `index` of the calling thread's CPU to `new` if it
        /// is `old`: returns `Ok(old)` if it did, or `Err` with the value
        /// it found.
        ///
        /// In the tests, whose threads may share a CPU, an atomic
        /// compare-exchange. In the benchmark, whose threads have CPUs of
        /// their own, a load and a store, as `this_cpu_cmpxchg()` has no
        /// lock prefix on x86.
        #[inline]
        pub fn this_cpu_cmpxchg(
            &self,
            index: CounterIndex<N>,
            old: u64,
            new: u64,
        ) -> Result<u64, u64> {
            let Some(counter) = self.this_cpu(index) else {
                return Err(!old);
            };
            if cfg!(test) {
                return counter.compare_exchange(old, new, Relaxed, Relaxed);
            }
            let found = counter.load(Relaxed);
            if found != old {
                return Err(found);
            }
            counter.store(new, Relaxed);
            Ok(old)
        }

        /// Sets counter `index` of `cpu` to `value`.
        pub fn set_remote(&self, cpu: CpuId, index: CounterIndex<N>, value: u64) {
            if let Some(counter) = self.counter(cpu, index) {
                counter.store(value, Relaxed);
            }
        }

        /// Returns counter `index` of `cpu`.
        pub fn read(&self, cpu: CpuId, index: CounterIndex<N>) -> u64 {
            self.counter(cpu, index)
                .map_or(0, |counter| counter.load(Relaxed))
        }

        /// Returns counter `index` of the calling thread's CPU.
        #[inline]
        fn this_cpu(&self, index: CounterIndex<N>) -> Option<&AtomicU64> {
            self.counter(CpuId::current(), index)
        }

        /// Returns counter `index` of `cpu`, if the CPU exists.
        #[inline]
        fn counter(&self, cpu: CpuId, index: CounterIndex<N>) -> Option<&AtomicU64> {
            self.0.get(cpu.as_u32() as usize)?.0.get(index.as_usize())
        }
    }
}

/// `kernel::sync`.
pub mod sync {
    /// `kernel::sync::atomic`, for `u64` and `u32`: the orderings are the
    /// kernel's unit types, mapped to the C++ memory model.
    pub mod atomic {
        use core::sync::atomic::Ordering as Cxx;

        /// Relaxed ordering.
        #[derive(Clone, Copy)]
        pub struct Relaxed;
        /// Acquire ordering.
        #[derive(Clone, Copy)]
        pub struct Acquire;
        /// Release ordering.
        #[derive(Clone, Copy)]
        pub struct Release;
        /// Full ordering.
        #[derive(Clone, Copy)]
        pub struct Full;

        /// An ordering argument.
        pub trait Ordering: Copy {
            /// The ordering of a read-modify-write, and of its failure.
            const RMW: (Cxx, Cxx);
        }
        impl Ordering for Relaxed {
            const RMW: (Cxx, Cxx) = (Cxx::Relaxed, Cxx::Relaxed);
        }
        impl Ordering for Acquire {
            const RMW: (Cxx, Cxx) = (Cxx::Acquire, Cxx::Acquire);
        }
        impl Ordering for Release {
            const RMW: (Cxx, Cxx) = (Cxx::Release, Cxx::Relaxed);
        }
        impl Ordering for Full {
            const RMW: (Cxx, Cxx) = (Cxx::SeqCst, Cxx::SeqCst);
        }

        /// An ordering a load takes.
        pub trait AcquireOrRelaxed: Ordering {
            /// The load's ordering.
            const LOAD: Cxx;
        }
        impl AcquireOrRelaxed for Relaxed {
            const LOAD: Cxx = Cxx::Relaxed;
        }
        impl AcquireOrRelaxed for Acquire {
            const LOAD: Cxx = Cxx::Acquire;
        }

        /// An ordering a store takes.
        pub trait ReleaseOrRelaxed: Ordering {
            /// The store's ordering.
            const STORE: Cxx;
        }
        impl ReleaseOrRelaxed for Relaxed {
            const STORE: Cxx = Cxx::Relaxed;
        }
        impl ReleaseOrRelaxed for Release {
            const STORE: Cxx = Cxx::Release;
        }

        /// The integers an [`Atomic`] holds, with the operations of the
        /// standard atomic of each, on a pointer to one.
        pub trait AtomicType: Copy {
            /// Loads the integer at `p`.
            ///
            /// # Safety
            ///
            /// `p` must be valid and aligned, and only accessed atomically.
            unsafe fn load(p: *mut Self, o: Cxx) -> Self;
            /// Stores `v` at `p`.
            ///
            /// # Safety
            ///
            /// As for [`AtomicType::load`].
            unsafe fn store(p: *mut Self, v: Self, o: Cxx);
            /// Compares and exchanges at `p`.
            ///
            /// # Safety
            ///
            /// As for [`AtomicType::load`].
            unsafe fn cmpxchg(
                p: *mut Self,
                old: Self,
                new: Self,
                o: (Cxx, Cxx),
            ) -> Result<Self, Self>;
            /// Adds `v` at `p`.
            ///
            /// # Safety
            ///
            /// As for [`AtomicType::load`].
            unsafe fn fetch_add(p: *mut Self, v: Self, o: Cxx) -> Self;
            /// Exchanges the value at `p` for `v`.
            ///
            /// # Safety
            ///
            /// As for [`AtomicType::load`].
            unsafe fn xchg(p: *mut Self, v: Self, o: Cxx) -> Self;
        }

        macro_rules! atomic_type {
            ($t:ty, $repr:ty) => {
                impl AtomicType for $t {
                    unsafe fn load(p: *mut Self, o: Cxx) -> Self {
                        // SAFETY: Per the caller's guarantees.
                        unsafe { <$repr>::from_ptr(p) }.load(o)
                    }
                    unsafe fn store(p: *mut Self, v: Self, o: Cxx) {
                        // SAFETY: Per the caller's guarantees.
                        unsafe { <$repr>::from_ptr(p) }.store(v, o)
                    }
                    unsafe fn cmpxchg(
                        p: *mut Self,
                        old: Self,
                        new: Self,
                        o: (Cxx, Cxx),
                    ) -> Result<Self, Self> {
                        // SAFETY: Per the caller's guarantees.
                        unsafe { <$repr>::from_ptr(p) }.compare_exchange(old, new, o.0, o.1)
                    }
                    unsafe fn fetch_add(p: *mut Self, v: Self, o: Cxx) -> Self {
                        // SAFETY: Per the caller's guarantees.
                        unsafe { <$repr>::from_ptr(p) }.fetch_add(v, o)
                    }
                    unsafe fn xchg(p: *mut Self, v: Self, o: Cxx) -> Self {
                        // SAFETY: Per the caller's guarantees.
                        unsafe { <$repr>::from_ptr(p) }.swap(v, o)
                    }
                }
            };
        }
        atomic_type!(u64, core::sync::atomic::AtomicU64);
        atomic_type!(u32, core::sync::atomic::AtomicU32);

        /// `kernel::sync::atomic::Atomic`, for `u64` and `u32`.
        #[repr(transparent)]
        pub struct Atomic<T: AtomicType>(core::cell::UnsafeCell<T>);

        // SAFETY: Every access to the value is atomic.
        unsafe impl<T: AtomicType> Sync for Atomic<T> {}

        impl<T: AtomicType> Atomic<T> {
            /// Creates an atomic holding `v`.
            pub const fn new(v: T) -> Self {
                Self(core::cell::UnsafeCell::new(v))
            }

            /// Views the integer at `ptr` as an atomic.
            ///
            /// # Safety
            ///
            /// `ptr` must be valid and aligned for the returned lifetime,
            /// and only accessed atomically meanwhile.
            pub unsafe fn from_ptr<'a>(ptr: *mut T) -> &'a Self {
                // SAFETY: `Self` is a transparent `UnsafeCell<T>`, which has
                // the layout of `T`; the caller guarantees the rest.
                unsafe { &*ptr.cast::<Self>() }
            }

            /// Loads the value.
            #[inline]
            pub fn load<O: AcquireOrRelaxed>(&self, _: O) -> T {
                // SAFETY: The cell is valid and aligned, and only accessed
                // atomically.
                unsafe { T::load(self.0.get(), O::LOAD) }
            }

            /// Stores `v`.
            #[inline]
            pub fn store<O: ReleaseOrRelaxed>(&self, v: T, _: O) {
                // SAFETY: As in `load()`.
                unsafe { T::store(self.0.get(), v, O::STORE) }
            }

            /// Replaces `old` by `new`; returns the value found otherwise.
            #[inline]
            pub fn cmpxchg<O: Ordering>(&self, old: T, new: T, _: O) -> Result<T, T> {
                // SAFETY: As in `load()`.
                unsafe { T::cmpxchg(self.0.get(), old, new, O::RMW) }
            }

            /// Adds `v`.
            #[inline]
            pub fn add(&self, v: T, _: Relaxed) {
                // SAFETY: As in `load()`.
                unsafe { T::fetch_add(self.0.get(), v, Cxx::Relaxed) };
            }

            /// Adds `v`; returns the previous value.
            #[inline]
            pub fn fetch_add<O: Ordering>(&self, v: T, _: O) -> T {
                // SAFETY: As in `load()`.
                unsafe { T::fetch_add(self.0.get(), v, O::RMW.0) }
            }

            /// Stores `v`; returns the previous value.
            #[inline]
            pub fn xchg<O: Ordering>(&self, v: T, _: O) -> T {
                // SAFETY: As in `load()`.
                unsafe { T::xchg(self.0.get(), v, O::RMW.0) }
            }
        }
    }

    /// `kernel::sync::rcu`: each thread counts its read-side sections,
    /// and a grace period waits for the threads it finds inside one.
    pub mod rcu {
        use crate::types::NotThreadSafe;
        use std::{
            cell::Cell,
            sync::{
                atomic::{fence, AtomicU64, Ordering::SeqCst},
                Arc, Mutex, PoisonError,
            },
            thread,
        };

        /// The counter of every thread that entered a section; a thread's
        /// is odd while it is inside one.
        static READERS: Mutex<Vec<Arc<AtomicU64>>> = Mutex::new(Vec::new());

        std::thread_local! {
            /// The calling thread's counter, and how deep its sections nest.
            static READER: (Arc<AtomicU64>, Cell<u32>) = {
                let counter = Arc::new(AtomicU64::new(0));
                READERS
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(counter.clone());
                (counter, Cell::new(0))
            };
        }

        /// An RCU read-side critical section.
        pub struct Guard(NotThreadSafe);

        /// Enters a read-side critical section.
        pub fn read_lock() -> Guard {
            READER.with(|(counter, depth)| {
                if depth.replace(depth.get() + 1) == 0 {
                    counter.fetch_add(1, SeqCst);
                    // A section that the grace period does not wait for
                    // sees what was done before it (a reset closing a
                    // table's gate), as RCU guarantees: without the fence,
                    // a load in the section could still read the value
                    // from before, the store-buffering outcome of weak
                    // memory.
                    fence(SeqCst);
                }
            });
            Guard(core::marker::PhantomData)
        }

        impl Drop for Guard {
            fn drop(&mut self) {
                READER.with(|(counter, depth)| {
                    depth.set(depth.get() - 1);
                    if depth.get() == 0 {
                        counter.fetch_add(1, SeqCst);
                    }
                });
            }
        }

        /// Waits until every thread that was inside a read-side section
        /// when it was called has left it.
        pub fn synchronize() {
            fence(SeqCst);
            let seen: Vec<(Arc<AtomicU64>, u64)> = READERS
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|c| (c.clone(), c.load(SeqCst)))
                .collect();
            for (counter, seen) in seen {
                while seen % 2 == 1 && counter.load(SeqCst) == seen {
                    thread::yield_now();
                }
            }
        }
    }

    /// `kernel::sync::Arc`: pinned, made by an initializer.
    pub struct Arc<T>(core::pin::Pin<std::sync::Arc<T>>);

    /// `kernel::sync::Refcount`, a `refcount_t`: what `Arc` allocates before
    /// the value it holds, for the map to count.
    #[allow(dead_code)]
    pub struct Refcount(core::sync::atomic::AtomicI32);

    impl<T> Arc<T> {
        /// Allocates a `T` and runs `init` on it in place.
        pub fn pin_init(
            init: impl pinned_init::PinInit<T, crate::error::Error>,
            _: crate::alloc::Flags,
        ) -> crate::error::Result<Self> {
            use pinned_init::InPlaceInit;
            Ok(Self(std::sync::Arc::try_pin_init(init)?))
        }
    }

    impl<T> Clone for Arc<T> {
        fn clone(&self) -> Self {
            Self(self.0.clone())
        }
    }

    impl<T> core::ops::Deref for Arc<T> {
        type Target = T;

        fn deref(&self) -> &T {
            &self.0
        }
    }

    /// `kernel::sync::Mutex`.
    pub struct Mutex<T>(std::sync::Mutex<T>);

    impl<T> Mutex<T> {
        /// A mutex holding `value`; see [`crate::new_mutex!`].
        pub fn new(value: T) -> Self {
            Self(std::sync::Mutex::new(value))
        }

        /// Acquires the mutex; a test thread that panicked with it held
        /// leaves it as it was.
        pub fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard {
                lock: self,
                inner: self
                    .0
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            }
        }
    }

    /// `kernel::sync::MutexGuard`.
    pub struct MutexGuard<'a, T> {
        lock: &'a Mutex<T>,
        inner: std::sync::MutexGuard<'a, T>,
    }

    impl<'a, T> MutexGuard<'a, T> {
        /// Returns the mutex this guard holds.
        pub fn lock_ref(&self) -> &'a Mutex<T> {
            self.lock
        }
    }

    impl<T> core::ops::Deref for MutexGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            &self.inner
        }
    }

    impl<T> core::ops::DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            &mut self.inner
        }
    }
}
