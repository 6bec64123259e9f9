// SPDX-License-Identifier: GPL-2.0

//! Times, per recorded stack, what the stackmap adds against what it saves.
//!
//! Without the map, a stack's frames are copied into the ring buffer. With
//! it, the stack is looked up (a hit: found through its CPU's ref count
//! entry, or hashed and found in its chain), the hit is counted, and an
//! 8-byte cookie is written instead. Everything else on the recording
//! path is the same either way and is left out: unwinding, reserving and
//! committing the event. The copy is `rep movsb`, as the kernel's memcpy()
//! on CPUs with fast short `rep movsb` (`fsrm` in /proc/cpuinfo), into a
//! 1 MiB ring, so that it writes fresh lines as the ring buffer does.
//!
//! What the native build does not have: the kernel reaches its atomics
//! through out-of-line C helpers (each a call and a return, through the
//! return thunk where the CPU needs one), while here they are inlined. The
//! guest's instruction counts include them.
//!
//! Prints `@@BENCH host <workload> <mode> ns <value>` lines, as the guest
//! prints its figures, for scripts/bench.py.

use crate::{
    cookie::FIRST_GENERATION,
    hash::{SeededHash, StackHash},
    lookup_or_insert,
    platform::{rcu_read_lock, ReadSection},
    stats::Stats,
    table::{Found, Table},
};
use std::{hint::black_box, sync::Barrier, thread, time::Instant};

/// Bytes of ring buffer per CPU.
const RING_BYTES: usize = 1 << 20;

/// Bytes of a `kernel_stack` event before its frames.
const STACK_HEADER: usize = 20;

/// Bytes of a `stack_cookie` event, and where its cookie is.
const COOKIE_EVENT: usize = 20;
const COOKIE_OFFSET: usize = 12;

/// `log2` of the stacks a map holds (the kernel's default).
const BITS: u32 = 14;

/// The seed of every map and hash timed here.
const SEED: u64 = 0x5eed_5eed_5eed_5eed;

/// Timed samples per figure, and recorded stacks per sample.
const SAMPLES: usize = 31;
const OPS: usize = 1 << 16;

/// What one timed loop does per stack; the discriminant is the mode's place
/// in a sample.
#[derive(Clone, Copy)]
enum Mode {
    /// Copies the frames into the ring: what the map saves.
    Copy,
    /// Hashes the frames only.
    Hash,
    /// Looks the stack up in the map (a hit).
    Lookup,
    /// Looks the stack up, counts the hit and writes the cookie into the
    /// ring: what the map adds.
    Record,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Copy, Mode::Hash, Mode::Lookup, Mode::Record];

    fn name(self) -> &'static str {
        match self {
            Mode::Copy => "copy",
            Mode::Hash => "hash",
            Mode::Lookup => "lookup",
            Mode::Record => "record",
        }
    }
}

/// A ring of event space that wraps around.
struct Ring {
    buf: Vec<u8>,
    pos: usize,
}

impl Ring {
    fn new() -> Self {
        Self {
            buf: vec![0; RING_BYTES],
            pos: 0,
        }
    }

    /// Returns room for an event of `len` bytes.
    #[inline]
    fn reserve(&mut self, len: usize) -> &mut [u8] {
        if self.pos + len > self.buf.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        &mut self.buf[start..start + len]
    }
}

/// Copies `frames` into `dst` the way the kernel's memcpy() does here.
#[inline]
fn copy_frames(dst: &mut [u8], frames: &[usize]) {
    let len = size_of_val(frames);
    assert!(dst.len() >= len);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `dst` holds at least `len` bytes and `frames` is `len` bytes;
    // they do not overlap.
    unsafe {
        core::arch::asm!(
            "rep movsb",
            inout("rcx") len => _,
            inout("rdi") dst.as_mut_ptr() => _,
            inout("rsi") frames.as_ptr() => _,
            options(nostack, preserves_flags),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    for (d, f) in dst.chunks_exact_mut(size_of::<usize>()).zip(frames) {
        d.copy_from_slice(&f.to_ne_bytes());
    }
}

/// Makes `n` distinct stacks of `depth` kernel text addresses.
fn stacks(n: usize, depth: usize) -> Vec<Vec<usize>> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..n)
        .map(|_| {
            (0..depth)
                .map(|_| {
                    // xorshift64: reproducible, no dependency.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    0xffff_ffff_8100_0000 + (x as usize & 0xff_fff0)
                })
                .collect()
        })
        .collect()
}

/// One recording CPU: the map it shares with the others, its own ring.
struct Recorder<'a> {
    table: &'a Table<SeededHash>,
    stats: &'a Stats,
    hash: SeededHash,
    ring: Ring,
}

impl Recorder<'_> {
    /// Does what `mode` does with `stack` once. Not inlined, so that every
    /// mode pays the same call.
    #[inline(never)]
    fn once(&mut self, mode: Mode, stack: &[usize]) {
        match mode {
            Mode::Copy => {
                let event = self.ring.reserve(STACK_HEADER + size_of_val(stack));
                copy_frames(&mut event[STACK_HEADER..], stack);
            }
            Mode::Hash => {
                black_box(self.hash.hash(stack));
            }
            Mode::Lookup => {
                let rcu = rcu_read_lock();
                let _ = black_box(lookup_or_insert(self.table, stack, ReadSection::new(&rcu)));
            }
            Mode::Record => {
                // As StackMap::lookup() and trace_stackmap_record() do.
                let rcu = rcu_read_lock();
                let outcome = lookup_or_insert(self.table, stack, ReadSection::new(&rcu));
                self.stats.count(&outcome);
                let Ok(Found::Hit(cookie)) = outcome else {
                    panic!("a timed lookup did not hit");
                };
                let event = self.ring.reserve(COOKIE_EVENT);
                event[COOKIE_OFFSET..COOKIE_OFFSET + 8]
                    .copy_from_slice(&cookie.to_raw().to_ne_bytes());
            }
        }
    }

    /// Returns the ns per stack of `OPS` rounds of `mode` over `stacks`.
    fn time(&mut self, mode: Mode, stacks: &[Vec<usize>]) -> f64 {
        let start = Instant::now();
        for stack in stacks.iter().cycle().take(OPS) {
            self.once(mode, black_box(stack));
        }
        start.elapsed().as_nanos() as f64 / OPS as f64
    }
}

/// Returns the median of `v`.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times every mode over `stacks`, already in the map, on `threads`
/// threads at once. Each sample runs the modes back to back, all threads
/// together; returns the samples of all threads.
fn measure(
    table: &Table<SeededHash>,
    stats: &Stats,
    stacks: &[Vec<usize>],
    threads: usize,
) -> Vec<[f64; Mode::ALL.len()]> {
    let barrier = Barrier::new(threads);
    let per_thread: Vec<Vec<[f64; Mode::ALL.len()]>> = thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut r = Recorder {
                        table,
                        stats,
                        hash: SeededHash::new(SEED),
                        ring: Ring::new(),
                    };
                    let mut samples = Vec::new();
                    // The first sample, untimed, warms the caches.
                    for sample in 0..=SAMPLES {
                        let mut ns = [0.0; Mode::ALL.len()];
                        for mode in Mode::ALL {
                            barrier.wait();
                            ns[mode as usize] = r.time(mode, stacks);
                        }
                        if sample > 0 {
                            samples.push(ns);
                        }
                    }
                    samples
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("recorder thread"))
            .collect()
    });
    per_thread.into_iter().flatten().collect()
}

/// Runs every workload and prints its figures.
pub(crate) fn run() {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    // One hot stack (a tight loop), 4096 stacks in turn (a busy system),
    // and one stack recorded by two CPUs at once (a shared ref count).
    let mut workloads = vec![("one", 1, 1), ("many", 4096, 1)];
    if cpus >= 2 {
        workloads.push(("shared", 1, 2));
    }
    for depth in [4, 8, 16, 32] {
        for &(name, n, threads) in &workloads {
            let table = Table::new(BITS, FIRST_GENERATION, SeededHash::new(SEED)).expect("table");
            let stats = Stats::new().expect("counters");
            let stacks = stacks(n, depth);
            {
                let rcu = rcu_read_lock();
                for stack in &stacks {
                    let found = lookup_or_insert(&table, stack, ReadSection::new(&rcu));
                    assert!(matches!(found, Ok(Found::Inserted(_))));
                }
            }
            let samples = measure(&table, &stats, &stacks, threads);
            let w = format!("d{depth}-{name}");
            for mode in Mode::ALL {
                let ns = median(samples.iter().map(|ns| ns[mode as usize]).collect());
                println!("@@BENCH host {w} {} ns {ns:.2}", mode.name());
            }
            // Record and copy of one sample ran back to back: their ratio
            // holds even when the machine's speed drifts between samples.
            let ratio = median(
                samples
                    .iter()
                    .map(|ns| ns[Mode::Record as usize] / ns[Mode::Copy as usize])
                    .collect(),
            );
            println!("@@BENCH host {w} record per_copy {ratio:.3}");
        }
    }
}
