// SPDX-License-Identifier: GPL-2.0

//! Ftrace stackmap: store each distinct kernel stack once, record a cookie.
//!
//! ftrace records the same kernel stacks over and over, 80 to 250 bytes of
//! ring buffer each. With `options/stackmap` set, each distinct stack is
//! stored once in a table preallocated from vmalloc when the option is first
//! enabled, and the ring buffer gets a `stack_cookie` event holding
//! `generation << 32 | slot` instead of the frames.
//!
//! Lookup and insert are lock-free and safe in any context, NMI included
//! ([`table`]); whatever cannot be stored is recorded in full by the caller,
//! so no stack is ever lost. A reset ([`reset`]) empties the map and bumps
//! its generation so that old cookies stop resolving.
//!
//! See Documentation/trace/ftrace-stackmap.rst.

mod cookie;
pub mod ffi;
mod hash;
mod map;
mod platform;
mod refs;
mod reset;
mod stats;
mod table;
#[cfg(CONFIG_FTRACE_STACKMAP_KUNIT_TEST)]
mod tests;
mod tracefs;

pub(crate) use map::StackMap;

/// Prefix of this crate's `pr_*!` messages (set by `module!` in modules).
const __LOG_PREFIX: &[u8] = b"ftrace_stackmap\0";

/// Default `log2` of the number of stacks a map holds.
pub(crate) const DEFAULT_BITS: u32 = 14;
