// SPDX-License-Identifier: GPL-2.0

//! The keyed hash that places a stack in the slot table.
//!
//! Frames are kernel text addresses: 64-bit words that differ mostly in their
//! low bits. Each frame is folded in with one multiply (the FxHash step), and
//! the result goes through the murmur3 finalizer so that both the high bits
//! (the slot index) and the low bits (the slot key) depend on every frame.
//! The seed is random per map, so the placement of stacks differs from map
//! to map and from boot to boot. The hash only picks the slot: frames are
//! always compared in full before a stack is called found.

/// Computes the 64-bit hash of a stack.
pub(crate) trait StackHash {
    /// Returns the hash of `frames`.
    fn hash(&self, frames: &[usize]) -> u64;
}

/// Multiplier of the per-frame step (FxHash's constant).
const FRAME_MUL: u64 = 0x517c_c1b7_2722_0a95;

/// The hash used by every map: a fast multiply-rotate over the frames, keyed
/// by a per-map seed.
pub(crate) struct SeededHash {
    /// The per-map random seed.
    seed: u64,
}

impl SeededHash {
    /// Creates a hash keyed by `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self { seed }
    }
}

impl StackHash for SeededHash {
    #[inline]
    fn hash(&self, frames: &[usize]) -> u64 {
        let mut h = self.seed ^ (frames.len() as u64);
        for &frame in frames {
            h = (h.rotate_left(5) ^ frame as u64).wrapping_mul(FRAME_MUL);
        }
        fmix64(h)
    }
}

/// The murmur3 64-bit finalizer: every input bit affects every output bit.
#[inline]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}
