// SPDX-License-Identifier: GPL-2.0

//! Times, per recorded stack, what the stackmap adds against what it saves.
//!
//! Without the map, a stack's frames are copied into the ring buffer. With
//! it, the stack is looked up (a hit: found through its CPU's ref count
//! entry, or hashed and found in its chain), the hit is counted, and an
//! 8-byte cookie is written instead. Everything else on the recording
//! path is the same either way and is left out: unwinding, reserving and
//! committing the event. The copy is the one the kernel's memcpy() makes on
//! this CPU: `rep movsb` where the CPU has fast short `rep movsb` (`fsrm` in
//! /proc/cpuinfo), memcpy_orig's loop of four 8-byte loads and four stores
//! elsewhere; into a 1 MiB ring, so that it writes fresh lines as the ring
//! buffer does.
//!
//! The test kernel inlines the C helpers behind its atomics and per-CPU
//! operations (CONFIG_RUST_INLINE_HELPERS), as this build inlines its
//! stand-ins for them: in both, a hit through the CPU's ref count entry
//! makes no call, and the walk of a chain is one call, out of line. A
//! kernel built without that option calls a helper for each operation.
//!
//! The host is shared: for seconds at a time, other work on the same core
//! slows the lookup's dense instruction stream by up to half, and `rep
//! movsb` much less, so a median, or the ratio of one sample, moves by a
//! third between runs. So the workloads take turns, in rounds of a few
//! samples each, for some ten seconds, and each workload's figures are the
//! medians of the round that ran all the modes fastest, all taken
//! together: what the code costs when it has the core to itself, which
//! moves by a tenth between runs.
//!
//! Prints `@@BENCH host <workload> <mode> ns <value>` lines, as the guest
//! prints its figures, for scripts/bench.py.

use crate::{
    cookie::FIRST_GENERATION,
    hash::{SeededHash, StackHash},
    platform::{rcu_read_lock, ReadSection},
    sync::Arc,
    table::{Fallback, Found, Table},
    StackMap,
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

/// Rounds over all workloads, timed samples of each workload per round, and
/// recorded stacks per sample.
const ROUNDS: usize = 12;
const SAMPLES: usize = 9;
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

/// How the kernel's memcpy() copies on this CPU.
#[derive(Clone, Copy)]
enum Copier {
    /// `rep movsb`, where the CPU has fast short `rep movsb`.
    RepMovsb,
    /// memcpy_orig's loop, 32 bytes per iteration, elsewhere.
    Words,
}

impl Copier {
    /// Returns the copy that x86's memcpy() picks on this CPU: `rep movsb`
    /// if the kernel found `X86_FEATURE_FSRM` (`fsrm` among the flags of
    /// /proc/cpuinfo), its loop otherwise. Other architectures' kernels copy
    /// in words.
    fn of_this_cpu() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let fsrm = cpuinfo
            .lines()
            .find(|line| line.starts_with("flags"))
            .is_some_and(|line| line.split_whitespace().any(|flag| flag == "fsrm"));
        if cfg!(target_arch = "x86_64") && fsrm {
            Copier::RepMovsb
        } else {
            Copier::Words
        }
    }

    /// Returns the name bench.py knows the copy by.
    fn name(self) -> &'static str {
        match self {
            Copier::RepMovsb => "rep_movsb",
            Copier::Words => "words",
        }
    }

    /// Copies `frames` into `dst` the way the kernel's memcpy() does.
    #[inline]
    fn copy(self, dst: &mut [u8], frames: &[usize]) {
        let len = size_of_val(frames);
        assert!(dst.len() >= len);
        #[cfg(target_arch = "x86_64")]
        match self {
            // SAFETY: `dst` holds at least `len` bytes and `frames` is `len`
            // bytes; they do not overlap.
            Copier::RepMovsb => unsafe {
                core::arch::asm!(
                    "rep movsb",
                    inout("rcx") len => _,
                    inout("rdi") dst.as_mut_ptr() => _,
                    inout("rsi") frames.as_ptr() => _,
                    options(nostack, preserves_flags),
                );
            },
            // The stacks timed here are 4, 8, 16 or 32 frames deep: a
            // multiple of 32 bytes, which memcpy_orig copies in its loop
            // alone. The compares it makes before and after the loop (a
            // dozen instructions for a tail of 0 bytes) are left out, in
            // favour of the copy.
            Copier::Words if len != 0 && len % 32 == 0 => {
                // SAFETY: As above; the loop copies `len` bytes, 32 at a
                // time, and `len` is a non-zero multiple of 32.
                unsafe {
                    core::arch::asm!(
                        "2:",
                        "mov {a}, qword ptr [rsi]",
                        "mov {b}, qword ptr [rsi + 8]",
                        "mov {c}, qword ptr [rsi + 16]",
                        "mov {d}, qword ptr [rsi + 24]",
                        "lea rsi, [rsi + 32]",
                        "mov qword ptr [rdi], {a}",
                        "mov qword ptr [rdi + 8], {b}",
                        "mov qword ptr [rdi + 16], {c}",
                        "mov qword ptr [rdi + 24], {d}",
                        "lea rdi, [rdi + 32]",
                        "sub rcx, 32",
                        "jnz 2b",
                        a = out(reg) _,
                        b = out(reg) _,
                        c = out(reg) _,
                        d = out(reg) _,
                        inout("rcx") len => _,
                        inout("rdi") dst.as_mut_ptr() => _,
                        inout("rsi") frames.as_ptr() => _,
                        options(nostack),
                    );
                }
            }
            Copier::Words => panic!("a stack of {len} bytes: not a multiple of 32"),
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let Copier::Words = self else {
                unreachable!("rep movsb is x86's")
            };
            for (d, f) in dst.chunks_exact_mut(size_of::<usize>()).zip(frames) {
                d.copy_from_slice(&f.to_ne_bytes());
            }
        }
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

/// Looks `frames` up in `table`, or inserts them, as [`StackMap::lookup`]
/// does, without its counters: in the CPU's ref count cache first, inline,
/// then in the stack's chain, out of line.
#[inline(always)]
fn lookup_or_insert<H: StackHash>(
    table: &Table<H>,
    frames: &[usize],
    rcu: ReadSection<'_>,
) -> Result<Found, Fallback> {
    match table.lookup_held(frames, rcu) {
        Some(cookie) => Ok(Found::Hit(cookie)),
        None => lookup_hashed(table, frames, rcu),
    }
}

/// The rest of [`lookup_or_insert`], out of line as in the kernel.
#[inline(never)]
fn lookup_hashed<H: StackHash>(
    table: &Table<H>,
    frames: &[usize],
    rcu: ReadSection<'_>,
) -> Result<Found, Fallback> {
    table.lookup_hashed(frames, rcu)
}

/// One recording CPU: the map it shares with the others, its own ring.
struct Recorder<'a> {
    map: &'a StackMap,
    hash: SeededHash,
    ring: Ring,
    copier: Copier,
}

impl Recorder<'_> {
    /// Does what `mode` does with `stack` once. Not inlined, so that every
    /// mode pays the same call.
    #[inline(never)]
    fn once(&mut self, mode: Mode, stack: &[usize], rcu: ReadSection<'_>) {
        match mode {
            Mode::Copy => {
                let event = self.ring.reserve(STACK_HEADER + size_of_val(stack));
                self.copier.copy(&mut event[STACK_HEADER..], stack);
            }
            Mode::Hash => {
                black_box(self.hash.hash(stack));
            }
            Mode::Lookup => {
                let _ = black_box(lookup_or_insert(self.map.table(), stack, rcu));
            }
            Mode::Record => {
                // As StackMap::lookup() and trace_stackmap_record() do.
                let Ok(Found::Hit(cookie)) = self.map.lookup(stack, rcu) else {
                    panic!("a timed lookup did not hit");
                };
                let event = self.ring.reserve(COOKIE_EVENT);
                event[COOKIE_OFFSET..COOKIE_OFFSET + 8]
                    .copy_from_slice(&cookie.to_raw().to_ne_bytes());
            }
        }
    }

    /// Returns the ns per stack of `mode` done `OPS` times over `stacks`.
    fn time(&mut self, mode: Mode, stacks: &[Vec<usize>]) -> f64 {
        // One read-side section for the sample: the kernel's recorders are
        // in one by running with preemption disabled, at no cost per stack.
        let rcu = rcu_read_lock();
        let start = Instant::now();
        for stack in stacks.iter().cycle().take(OPS) {
            self.once(mode, black_box(stack), ReadSection::new(&rcu));
        }
        start.elapsed().as_nanos() as f64 / OPS as f64
    }
}

/// Returns the median of `v`.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The medians of a round of samples of a workload.
struct Round {
    /// ns per stack of each mode.
    ns: [f64; Mode::ALL.len()],
    /// The median of the samples' ratios of record to copy.
    record_per_copy: f64,
}

/// A workload: its stacks, stored in a map of their own, and the round
/// that ran all the modes fastest so far.
struct Workload {
    name: String,
    threads: usize,
    stacks: Vec<Vec<usize>>,
    map: Arc<StackMap>,
    best: Option<Round>,
}

impl Workload {
    /// Stores `n` stacks of `depth` frames, to be recorded on `threads`
    /// threads at once.
    fn new(name: &str, depth: usize, n: usize, threads: usize) -> Self {
        let map = StackMap::with_hash(BITS, FIRST_GENERATION, SeededHash::new(SEED)).expect("map");
        let stacks = stacks(n, depth);
        {
            let rcu = rcu_read_lock();
            for stack in &stacks {
                let found = map.lookup(stack, ReadSection::new(&rcu));
                assert!(matches!(found, Ok(Found::Inserted(_))));
            }
        }
        Self {
            name: format!("d{depth}-{name}"),
            threads,
            stacks,
            map,
            best: None,
        }
    }

    /// Times a round of samples of every mode over the stacks, on `threads`
    /// threads at once, and keeps it if it ran all the modes the fastest yet.
    /// Each sample runs the modes back to back, all threads together; the
    /// copy is `copier`'s.
    fn measure(&mut self, copier: Copier) {
        let barrier = Barrier::new(self.threads);
        let (map, stacks) = (&*self.map, &self.stacks);
        let per_thread: Vec<Vec<[f64; Mode::ALL.len()]>> = thread::scope(|s| {
            let workers: Vec<_> = (0..self.threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut r = Recorder {
                            map,
                            hash: SeededHash::new(SEED),
                            ring: Ring::new(),
                            copier,
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
        let samples: Vec<_> = per_thread.into_iter().flatten().collect();
        let round = Round {
            ns: Mode::ALL.map(|mode| median(samples.iter().map(|ns| ns[mode as usize]).collect())),
            // Each sample timed both back to back: their ratio holds even
            // when the machine's speed drifts within the round.
            record_per_copy: median(
                samples
                    .iter()
                    .map(|ns| ns[Mode::Record as usize] / ns[Mode::Copy as usize])
                    .collect(),
            ),
        };
        // The round is picked by all its modes, three of which are map
        // work; picking each mode's fastest round apart instead gives
        // ratios within 1% of these (measured at depths 8 and 32 on one
        // binary, 2 runs).
        let total = |r: &Round| r.ns.iter().sum::<f64>();
        if self
            .best
            .as_ref()
            .is_none_or(|best| total(&round) < total(best))
        {
            self.best = Some(round);
        }
    }
}

/// Runs every workload and prints its figures.
pub(crate) fn run() {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    // One hot stack (a tight loop), 4096 stacks in turn (a busy system),
    // and one stack recorded by two CPUs at once (a shared ref count).
    let mut kinds = vec![("one", 1, 1), ("many", 4096, 1)];
    if cpus >= 2 {
        kinds.push(("shared", 1, 2));
    }
    let mut workloads: Vec<Workload> = [4, 8, 16, 32]
        .into_iter()
        .flat_map(|depth| {
            kinds
                .iter()
                .map(move |&(name, n, threads)| Workload::new(name, depth, n, threads))
        })
        .collect();
    let copier = Copier::of_this_cpu();
    println!("@@BENCH host copy {} used 1", copier.name());
    for _ in 0..ROUNDS {
        for w in &mut workloads {
            w.measure(copier);
        }
    }
    for w in &workloads {
        let Some(best) = &w.best else {
            continue;
        };
        for mode in Mode::ALL {
            let (name, ns) = (mode.name(), best.ns[mode as usize]);
            println!("@@BENCH host {} {name} ns {ns:.2}", w.name);
        }
        let ratio = best.record_per_copy;
        println!("@@BENCH host {} record per_copy {ratio:.3}", w.name);
    }
}

/// Both copies write the frames' bytes, and nothing past them, at every
/// depth timed. Not under Miri, which does not run inline assembly.
#[cfg(all(test, not(miri)))]
#[test]
fn copies_write_the_frames() {
    let copiers: &[Copier] = if cfg!(target_arch = "x86_64") {
        &[Copier::RepMovsb, Copier::Words]
    } else {
        &[Copier::Words]
    };
    for &copier in copiers {
        for depth in [4, 8, 16, 32] {
            let frames = &stacks(1, depth)[0];
            let mut dst = vec![0xa5_u8; size_of_val(frames.as_slice()) + 8];
            copier.copy(&mut dst, frames);
            let (copied, rest) = dst.split_at(size_of_val(frames.as_slice()));
            let expected: Vec<u8> = frames.iter().flat_map(|f| f.to_ne_bytes()).collect();
            assert_eq!(copied, expected, "{} at depth {depth}", copier.name());
            assert!(
                rest.iter().all(|&b| b == 0xa5),
                "{} wrote past the frames",
                copier.name()
            );
        }
    }
}
