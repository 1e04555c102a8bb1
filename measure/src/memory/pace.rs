//! Keeping a memory measurement within its time budget on a machine slower than the plan's
//! rates (a virtual server time-sharing a few host CPUs, a fresh guest whose first touch of
//! memory runs at tens of MB/s):
//!
//! - [`calibrate`] learns the machine's speed cheaply before the plan commits to large
//!   work (first touch, streaming, a dependent chase, starting a thread, and how many
//!   threads really run at once), and [`Speed::rates`] turns it into the plan's rates, never
//!   faster than [`Rates::ASSUMED`];
//! - [`Pace`] learns, step by step, how much slower than planned each kind of step runs,
//!   and leaves out a step that the time left cannot hold at that pace.

use std::time::Instant;

use crate::plan::{Rates, Speed};

/// Bytes first touched by the calibration at most: a fresh mapping of its own (not memory
/// the allocator may have touched already), so that the rate is the first touch of fresh
/// pages the real buffers will pay; 4096 pages give a steady rate, and every measuring
/// process calibrates (a `--plan` too), so the buffer stays small beside the memory budget.
const TOUCH_BYTES: usize = 16 << 20;
/// Seconds the calibration's first touch may take at most (the rate is read from the pages
/// touched by then).
const TOUCH_SECONDS: f64 = 0.04;
/// Seconds of the window in which the threads of the parallelism test count together.
const SPIN_SECONDS: f64 = 0.01;
/// Threads of the parallelism test at most.
const SPIN_THREADS: usize = 64;

/// Measures the machine's speed on `cpus` (the first for one thread; up to 64 of them for
/// parallelism) in about 0.1 s on an ordinary machine, and never much more than that on a
/// slow one (the first touch stops after 0.04 s). A measurement that cannot run (a CPU that cannot be pinned) leaves
/// the assumed figure.
#[must_use]
pub fn calibrate(cpus: &[u32]) -> Speed {
    let started = Instant::now();
    let mut speed = Speed::assumed();
    let Some(&first) = cpus.first() else {
        return speed;
    };
    let t = Instant::now();
    let one = std::thread::spawn(move || {
        let pinned = topoprobe_sys::affinity::pin_current_thread(first).is_ok();
        let start = t.elapsed().as_secs_f64();
        pinned.then(|| (start, touch_stream_chase(), cache_chase_ns()))
    })
    .join()
    .ok()
    .flatten();
    if let Some((start, (touch, gbps, ns), cache)) = one {
        speed.thread_start_s = start;
        speed.touch_s_per_gib = touch;
        speed.thread_gbps = gbps;
        speed.chase_ns = ns;
        speed.cache_ns = cache;
    }
    if cpus.len() > 1 {
        speed.parallel = parallelism(&cpus[..cpus.len().min(SPIN_THREADS)]);
    }
    speed.seconds = started.elapsed().as_secs_f64();
    speed
}

/// First touch of up to [`TOUCH_BYTES`] of a fresh mapping (s/GiB), one streaming read
/// pass over what was touched after evicting it from the caches (GB/s of memory, where
/// lines can be evicted) and a dependent chase over it (ns per load).
fn touch_stream_chase() -> (f64, f64, f64) {
    use topoprobe_sys::buffer::{Buffer, PagePlacement};
    const PAGE: usize = 4096;
    let a = Rates::ASSUMED;
    let placement = PagePlacement {
        node: None,
        huge_pages: Some(false),
    };
    let Ok(mut buf) = Buffer::new(TOUCH_BYTES, placement) else {
        return (a.touch_s_per_gib, a.thread_gbps, a.memory_ns);
    };
    let started = Instant::now();
    let mut touched = 0;
    // Seconds per page of each window of 64 pages.
    let mut windows: Vec<f64> = Vec::new();
    {
        let words = buf.words_mut();
        while touched < words.len() {
            // 64 pages at a time, each written once: the kernel faults them in.
            let t = Instant::now();
            let from = touched;
            for _ in 0..64 {
                if touched >= words.len() {
                    break;
                }
                words[touched] = touched as u64;
                touched += PAGE / 8;
            }
            let pages = (touched - from).div_ceil(PAGE / 8).max(1);
            windows.push(t.elapsed().as_secs_f64() / pages as f64);
            if started.elapsed().as_secs_f64() > TOUCH_SECONDS {
                break;
            }
        }
        touched = touched.min(words.len());
    }
    let touch = topoprobe_model::median(&windows)
        .map_or(a.touch_s_per_gib, |s| s / PAGE as f64 * (1u64 << 30) as f64);
    let v = &mut buf.words_mut()[..touched];
    let gbps = stream_rate(v);
    let ns = chase_ns(v);
    (touch, gbps, ns)
}

/// Parts of the calibration's stream and blocks of its chase, each timed alone: a
/// preemption of the calibration's thread (a busy machine, a vCPU the host moves) slows
/// one of them, and the figure is read from the others.
const TIMED_PARTS: usize = 8;

/// The streaming read rate of `v` (GB/s of memory, where lines can be evicted): the read
/// kernel over each of [`TIMED_PARTS`] parts, evicted first, and the fastest part's rate.
fn stream_rate(v: &mut [u64]) -> f64 {
    if topoprobe_sys::counter::can_flush() {
        topoprobe_sys::counter::flush_lines(v);
    }
    let part = v.len().div_ceil(TIMED_PARTS).max(1);
    let isa = super::kernel_kinds::Isa::detect();
    v.chunks_mut(part)
        .map(|p| {
            let t = Instant::now();
            let sum =
                super::kernels::run(super::kernel_kinds::Kernel::Read, isa, false, p, &mut []);
            std::hint::black_box(sum);
            (p.len() * 8) as f64 / t.elapsed().as_secs_f64().max(1e-9) / 1e9
        })
        .fold(0.0, f64::max)
}

/// ns per load of a dependent chase with a stride of 4 KiB + 64 B through `v`: the
/// fastest of [`TIMED_PARTS`] blocks of loads (a preemption only ever adds time).
fn chase_ns(v: &mut [u64]) -> f64 {
    const PAGE: usize = 4096;
    let n = v.len();
    if n == 0 {
        return Rates::ASSUMED.memory_ns;
    }
    let step = PAGE / 8 + 8;
    for (i, x) in v.iter_mut().enumerate() {
        *x = ((i + step) % n) as u64;
    }
    let loads = (20_000 / TIMED_PARTS).min(n).max(1);
    let mut at = 0usize;
    (0..TIMED_PARTS)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..loads {
                at = v[at] as usize;
            }
            std::hint::black_box(at);
            t.elapsed().as_secs_f64() * 1e9 / loads as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// Bytes of the calibration's chase inside the innermost cache: within any CPU's L1d.
const CACHE_CHASE_BYTES: usize = 8 << 10;

/// ns per load of a dependent chase over [`CACHE_CHASE_BYTES`], a line and a word apart
/// at each load: the fastest of [`TIMED_PARTS`] blocks of loads, after a lap that brings
/// the lines into the cache.
fn cache_chase_ns() -> f64 {
    let n = CACHE_CHASE_BYTES / 8;
    // 9 words (a line and a word) apart, coprime with the power-of-two length: one cycle
    // through every word.
    let step = 9;
    let v: Vec<u64> = (0..n).map(|i| ((i + step) % n) as u64).collect();
    let loads = 20_000 / TIMED_PARTS;
    let mut at = 0usize;
    for _ in 0..n {
        at = v[at] as usize;
    }
    (0..TIMED_PARTS)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..loads {
                at = std::hint::black_box(v[at]) as usize;
            }
            t.elapsed().as_secs_f64() * 1e9 / loads as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// How many of threads pinned to `cpus` run at once: the iterations they count together in
/// one window of [`SPIN_SECONDS`] against those one thread counts alone in such a window.
fn parallelism(cpus: &[u32]) -> f64 {
    let alone = spin_together(&cpus[..1]).and_then(|c| c.first().copied());
    let Some(alone) = alone.filter(|&n| n > 0) else {
        return f64::INFINITY;
    };
    match spin_together(cpus) {
        Some(counts) => parallel_from_counts(alone, counts.iter().sum(), cpus.len()),
        None => f64::INFINITY,
    }
}

/// Seconds the threads of the parallelism test wait for each other at most.
const SPIN_GATHER_SECONDS: f64 = 1.0;

/// The iterations each of threads pinned to `cpus` counts in one shared window of
/// [`SPIN_SECONDS`], which opens once every thread runs; `None` when a thread cannot be
/// pinned or they do not all run within [`SPIN_GATHER_SECONDS`].
///
/// The window is shared, not each thread's own: where the threads take turns in long
/// slices (the virtual CPUs of an emulator), each thread's own window could fall in a slice
/// of its own and the turns would look like parallel running.
fn spin_together(cpus: &[u32]) -> Option<Vec<u64>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;
    let arrived = AtomicUsize::new(0);
    let window: OnceLock<Instant> = OnceLock::new();
    let gather = Instant::now();
    let spin = |cpu: u32| -> Option<u64> {
        let pinned = topoprobe_sys::affinity::pin_current_thread(cpu).is_ok();
        arrived.fetch_add(1, Ordering::AcqRel);
        while arrived.load(Ordering::Acquire) < cpus.len() {
            if gather.elapsed().as_secs_f64() > SPIN_GATHER_SECONDS {
                return None;
            }
            std::hint::spin_loop();
        }
        let opened = *window.get_or_init(Instant::now);
        let mut n = 0u64;
        while opened.elapsed().as_secs_f64() < SPIN_SECONDS {
            for _ in 0..64 {
                n = std::hint::black_box(n + 1);
            }
        }
        pinned.then_some(n)
    };
    std::thread::scope(|s| {
        let hs: Vec<_> = cpus.iter().map(|&c| s.spawn(move || spin(c))).collect();
        hs.into_iter()
            .map(|h| h.join().ok().flatten())
            .collect::<Option<Vec<u64>>>()
    })
}

/// Threads running at once from one thread's count alone and `threads` threads' total.
#[must_use]
pub fn parallel_from_counts(alone: u64, total: u64, threads: usize) -> f64 {
    if alone == 0 {
        return f64::INFINITY;
    }
    let p = (total as f64 / alone as f64).clamp(1.0, threads.max(1) as f64);
    // Most of them in parallel: an ordinary machine; keep its plan.
    if p >= 0.75 * threads as f64 {
        f64::INFINITY
    } else {
        p
    }
}

/// How much slower than planned the steps of each kind ran so far, and whether the next
/// one fits the time left at that pace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pace {
    kinds: Vec<(String, f64, f64)>,
}

impl Pace {
    /// No step run yet: the plan's pace.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that a step of `kind` planned at `planned` seconds took `spent`.
    pub fn record(&mut self, kind: &str, planned: f64, spent: f64) {
        if !(planned > 0.0 && spent.is_finite()) {
            return;
        }
        match self.kinds.iter_mut().find(|(k, _, _)| k == kind) {
            Some((_, p, s)) => {
                *p += planned;
                *s += spent;
            }
            None => self.kinds.push((kind.to_string(), planned, spent.max(0.0))),
        }
    }

    /// How many times its plan a step of `kind` is expected to take: the ratio of the
    /// steps of that kind so far, else of every step so far; never below 1.
    #[must_use]
    pub fn factor(&self, kind: &str) -> f64 {
        let ratio = |p: f64, s: f64| if p > 0.0 { s / p } else { 1.0 };
        let f = match self.kinds.iter().find(|(k, _, _)| k == kind) {
            Some(&(_, p, s)) => ratio(p, s),
            None => {
                let (p, s) = self
                    .kinds
                    .iter()
                    .fold((0.0, 0.0), |(p, s), (_, a, b)| (p + a, s + b));
                ratio(p, s)
            }
        };
        f.max(1.0)
    }

    /// Seconds a step of `kind` planned at `planned` is expected to take.
    #[must_use]
    pub fn expect(&self, kind: &str, planned: f64) -> f64 {
        planned * self.factor(kind)
    }

    /// Whether a step of `kind` planned at `planned` seconds fits when `elapsed` of
    /// `budget` seconds are spent.
    #[must_use]
    pub fn fits(&self, kind: &str, planned: f64, elapsed: f64, budget: f64) -> bool {
        elapsed + self.expect(kind, planned) <= budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_kind_of_step_is_expected_slow_and_left_out_when_it_cannot_fit() {
        let mut pace = Pace::new();
        assert_eq!(pace.factor("latency"), 1.0);
        assert!(pace.fits("latency", 1.0, 8.0, 10.0));
        // Latency steps ran 6× their plan; bandwidth steps with many threads 100×.
        pace.record("latency", 0.1, 0.6);
        pace.record("bandwidth 29", 0.01, 1.0);
        assert!((pace.factor("latency") - 6.0).abs() < 1e-9);
        assert!((pace.factor("bandwidth 29") - 100.0).abs() < 1e-9);
        // A kind not seen yet takes the pace of all the steps so far.
        assert!((pace.factor("bandwidth 1") - 1.6 / 0.11).abs() < 1e-9);
        assert!(!pace.fits("bandwidth 29", 0.01, 9.5, 10.0));
        assert!(pace.fits("latency", 0.05, 9.5, 10.0));
        // A machine faster than planned keeps the plan's pace.
        let mut fast = Pace::new();
        fast.record("latency", 1.0, 0.1);
        assert_eq!(fast.factor("latency"), 1.0);
    }

    #[test]
    fn a_slow_machine_slows_the_rates_a_fast_one_keeps_them() {
        let a = Rates::ASSUMED;
        assert_eq!(Speed::assumed().rates(), a);
        assert!(!Speed::assumed().slower_than_assumed());
        let fast = Speed {
            touch_s_per_gib: 0.1,
            thread_gbps: 40.0,
            chase_ns: 5.0,
            cache_ns: 0.8,
            thread_start_s: 20e-6,
            parallel: f64::INFINITY,
            seconds: 0.01,
        };
        assert_eq!(fast.rates(), a);
        // A fresh guest: 40 MB/s first touch, 1 GB/s streams, threads one at a time.
        let guest = Speed {
            touch_s_per_gib: 1.0 / 0.04,
            thread_gbps: 1.0,
            chase_ns: 300.0,
            cache_ns: 15.0,
            thread_start_s: 2e-3,
            parallel: 1.0,
            seconds: 0.1,
        };
        let r = guest.rates();
        assert!(guest.slower_than_assumed());
        assert_eq!(r.touch_s_per_gib, 25.0);
        assert_eq!(r.socket_gbps, 1.0);
        assert_eq!(r.memory_ns, 300.0);
        // Its caches as much slower than assumed as its innermost one: 10×.
        assert_eq!(r.cache_ns, Rates::ASSUMED.cache_ns.map(|ns| ns * 10.0));
        assert_eq!(guest.effective_threads(29), 1);
        // Only a slower machine gets a line in its plans, saying what was measured.
        assert_eq!(Speed::assumed().note(), None);
        assert_eq!(fast.note(), None);
        assert!(guest.note().is_some_and(
            |n| n.contains("first touch 43 MB/s") && n.ends_with("1.0 threads at once")
        ));
        assert_eq!(fast.effective_threads(29), 29);
    }

    #[test]
    fn parallelism_is_read_from_the_spin_counts() {
        // 29 threads that did what one does alone: one at a time.
        assert_eq!(parallel_from_counts(1000, 1000, 29), 1.0);
        assert_eq!(parallel_from_counts(1000, 2100, 29), 2.1);
        // Nearly all in parallel: an ordinary machine.
        assert!(parallel_from_counts(1000, 28_000, 29).is_infinite());
        assert!(parallel_from_counts(0, 10, 4).is_infinite());
    }

    #[test]
    fn threads_that_take_turns_read_as_taking_turns() {
        let Some(cpu) = topoprobe_sys::affinity::first_allowed_cpu() else {
            return;
        };
        // Eight threads on one CPU take turns, whatever else runs: together they count
        // about what one counts alone (a busy neighbour may have slowed the one alone a
        // few times over), far from the 6 of eight that read as running at once.
        let p = parallelism(&[cpu; 8]);
        assert!(
            p.is_finite(),
            "eight threads on one CPU read as running at once"
        );
        // Every thread of the window counts once it runs.
        let counts = spin_together(&[cpu; 3]).expect("three threads gather within a second");
        assert_eq!(counts.len(), 3);
    }

    #[test]
    fn the_calibration_runs_and_is_short() {
        let Some(cpu) = topoprobe_sys::affinity::first_allowed_cpu() else {
            return;
        };
        let s = calibrate(&[cpu]);
        assert!(s.touch_s_per_gib > 0.0 && s.thread_gbps > 0.0, "{s:?}");
        assert!(s.rates().memory_ns >= Rates::ASSUMED.memory_ns);
        assert!(s.cache_ns > 0.0 && s.cache_ns.is_finite(), "{s:?}");
    }
}
