// SPDX-License-Identifier: GPL-2.0

//! The stackmap's stack table, hash and counters, built from the kernel
//! sources for the host: `make bench` runs it to time a map hit against the
//! copy it saves on real hardware, and `make check` runs its tests, which
//! race the table's protocol on real CPUs (the guest of both is emulated),
//! and runs them again under Miri, which checks the table's unsafe code for
//! undefined behaviour and data races.
//!
//! The kernel files are compiled unchanged: `kernel.rs` provides the few
//! kernel crate items they use.

// The kernel files name their crate `kernel`; here that is this crate.
extern crate self as kernel;

#[path = "kernel.rs"]
mod shim;
pub use shim::{alloc, bindings, cpu, error, page, percpu, prelude, processor, sync, types};

#[allow(dead_code)]
#[path = "../../cookie.rs"]
mod cookie;
#[allow(dead_code)]
#[path = "../../hash.rs"]
mod hash;
#[allow(dead_code)]
#[path = "../../platform.rs"]
mod platform;
#[allow(dead_code)]
#[path = "../../refs.rs"]
mod refs;
#[allow(dead_code)]
#[path = "../../stats.rs"]
mod stats;
#[allow(dead_code)]
#[path = "../../table.rs"]
mod table;

mod bench;
#[cfg(test)]
mod resets;
#[cfg(test)]
mod reuse;
#[cfg(test)]
mod stress;

use hash::StackHash;
use platform::ReadSection;
use table::{Fallback, Found, Table};

/// Looks `frames` up in `table`, or inserts them, as the kernel's
/// `StackMap::lookup()` does, without its counters: in the CPU's ref count
/// cache first, then in the stack's chain.
pub(crate) fn lookup_or_insert<H: StackHash>(
    table: &Table<H>,
    frames: &[usize],
    rcu: ReadSection<'_>,
) -> Result<Found, Fallback> {
    match table.lookup_held(frames, rcu) {
        Some(cookie) => Ok(Found::Hit(cookie)),
        None => table.lookup_hashed(frames, rcu),
    }
}

fn main() {
    bench::run();
}
