// SPDX-License-Identifier: GPL-2.0

//! The stackmap's map, its reset, and its stack table, hash and counters,
//! built from the kernel sources for the host: `make bench` runs it to time
//! a map hit against the copy it saves on real hardware, and `make check`
//! runs its tests, which race the map's lookups and resets on real CPUs
//! (the guest of both is emulated), and runs them again under Miri, which
//! checks the table's unsafe code for undefined behaviour and data races.
//!
//! The kernel files are compiled unchanged: `kernel.rs` provides the few
//! kernel crate items they use.

// The kernel files name their crate `kernel`; here that is this crate.
extern crate self as kernel;

#[path = "kernel.rs"]
mod shim;
pub use shim::{alloc, cpu, error, page, percpu, prelude, processor, random, sync, types};

#[allow(dead_code)]
#[path = "../../cookie.rs"]
mod cookie;
#[allow(dead_code)]
#[path = "../../hash.rs"]
mod hash;
#[allow(dead_code)]
#[path = "../../map.rs"]
mod map;
#[allow(dead_code)]
#[path = "../../platform.rs"]
mod platform;
#[allow(dead_code)]
#[path = "../../refs.rs"]
mod refs;
#[allow(dead_code)]
#[path = "../../reset.rs"]
mod reset;
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

pub(crate) use map::StackMap;

fn main() {
    bench::run();
}
