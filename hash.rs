// SPDX-License-Identifier: GPL-2.0

//! The keyed hash that places a stack in the stack table.
//!
//! Frames are kernel text addresses: 64-bit words that differ mostly in their
//! low bits. Each frame is folded in with a rotate, an xor and one multiply
//! (the FxHash step). The frames are spread over four lanes, frame `i` into
//! lane `i % 4`, so that four multiplies are in flight at once instead of
//! one chain of `depth` dependent multiplies: on hardware the chain's latency
//! is what a long stack's hash costs. The lanes start from different
//! rotations of the seed, are combined at different rotations, and the result
//! goes through the murmur3 finalizer, so that every bit, the low ones that
//! pick the bucket included, depends on every frame and on its position.
//! The seed is random per map, so the placement of stacks differs from map
//! to map and from boot to boot. The hash only picks the bucket: frames are
//! always compared in full before a stack is called found.

/// Computes the 64-bit hash of a stack.
pub(crate) trait StackHash {
    /// Returns the hash of `frames`.
    fn hash(&self, frames: &[usize]) -> u64;
}

/// Multiplier of the per-frame step (FxHash's constant).
const FRAME_MUL: u64 = 0x517c_c1b7_2722_0a95;

/// Number of independent lanes the frames are spread over.
const LANES: usize = 4;

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
        let mut lanes = [
            self.seed ^ (frames.len() as u64),
            self.seed.rotate_left(16),
            self.seed.rotate_left(32),
            self.seed.rotate_left(48),
        ];
        let mut chunks = frames.chunks_exact(LANES);
        for chunk in &mut chunks {
            for (lane, &frame) in lanes.iter_mut().zip(chunk) {
                *lane = step(*lane, frame);
            }
        }
        for (lane, &frame) in lanes.iter_mut().zip(chunks.remainder()) {
            *lane = step(*lane, frame);
        }
        let [a, b, c, d] = lanes;
        fmix64(a ^ b.rotate_left(16) ^ c.rotate_left(32) ^ d.rotate_left(48))
    }
}

/// Folds `frame` into the lane value `h`.
#[inline(always)]
fn step(h: u64, frame: usize) -> u64 {
    (h.rotate_left(5) ^ frame as u64).wrapping_mul(FRAME_MUL)
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
