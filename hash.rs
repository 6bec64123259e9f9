// SPDX-License-Identifier: GPL-2.0

//! The keyed hash that places a stack in the stack table.
//!
//! Frames are kernel text addresses: 64-bit words that differ mostly in their
//! low bits. Each frame is folded in with a rotate, an xor and one multiply
//! (the FxHash step). The frames are spread over four lanes, frame `i` into
//! lane `i % 4`, so that four multiplies are in flight at once instead of
//! one chain of `depth` dependent multiplies: on hardware the chain's latency
//! is what a long stack's hash costs. The first lane starts from the seed
//! xor the depth, the others from rotations of the seed, and the lanes are
//! combined at rotations chosen so that the seeds of the lanes no frame
//! reached (a stack of fewer than four frames) never cancel each other. The
//! result is multiplied by `2^64` over the golden ratio (Fibonacci hashing),
//! whose top bits, the ones that pick the bucket, depend on every bit of the
//! lanes, so on every frame and on its position. One multiply where a full
//! finalizer (murmur3's fmix64) takes two and three shifts: the low bits of
//! the hash are left poor, and nothing uses them.
//! The seed is random per map, so the placement of stacks differs from map
//! to map and from boot to boot. The hash only picks the bucket: frames are
//! always compared in full before a stack is called found.

/// Computes the 64-bit hash of a stack, whose top bits pick its bucket.
pub(crate) trait StackHash {
    /// Returns the hash of `frames`.
    fn hash(&self, frames: &[usize]) -> u64;
}

/// Multiplier of the per-frame step (FxHash's constant).
const FRAME_MUL: u64 = 0x517c_c1b7_2722_0a95;

/// Multiplier of the lanes' combination: `2^64` over the golden ratio.
const SPREAD_MUL: u64 = 0x9e37_79b9_7f4a_7c15;

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
        // A lane no frame reached adds its seed rotated by 16 + 8 = 24,
        // 32 + 16 = 48 and 48 + 24 = 72, that is 8, bits: rotations that
        // differ from each other and from lane a's 0, so none cancels.
        let [a, b, c, d] = lanes;
        (a ^ b.rotate_left(8) ^ c.rotate_left(16) ^ d.rotate_left(24)).wrapping_mul(SPREAD_MUL)
    }
}

/// Folds `frame` into the lane value `h`.
#[inline(always)]
fn step(h: u64, frame: usize) -> u64 {
    (h.rotate_left(5) ^ frame as u64).wrapping_mul(FRAME_MUL)
}
