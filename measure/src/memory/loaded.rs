//! Loaded latency (google's multichase `multiload`, MLC's `--loaded_latency`): the latency
//! of a dependent chase ([`super::chase`]) on one context while the other contexts of its
//! socket read their own buffers on the same node, with a delay loop after each line of
//! each loader (so many iterations per [`BLOCK_LINES`] lines) swept from large to none.
//! Each point gives the loaders' bandwidth during the chase and the chase's latency (the
//! lowest of [`POINT_LAPS`] evicted laps); the first point has no loader (idle). Points are added where neighbours lie far apart
//! ([`refine_delay`]), and a point whose latency stands above both neighbours' is measured
//! again ([`spike`]). The idle point is measured again after the sweep and the lower of
//! the two kept; where they differ by more than [`IDLE_DRIFT`], the host stole time from
//! the vCPUs, the chase waited for its CPU ([`WAIT_SHARE`]), or the loaders' bandwidth fell
//! at a shorter delay ([`BANDWIDTH_FALL`]), the curve is flagged as not trustworthy.
//!
//! No point is timed before every loader has touched its buffer ([`sweep_with`]): a loader
//! still faulting in fresh memory reads nothing, and a curve timed meanwhile reads 0 GB/s
//! at the idle latency. Each loader counts its own bytes: a point at which one read nothing
//! is said, and a curve whose loaders read nothing is marked unavailable
//! ([`empty_load`]); [`super::plausible`] checks the curve against the run's other figures.
//!
//! The chase defeats the prefetchers by its random order (they cannot be turned off
//! without root); the loaders stream sequentially, so the prefetchers help them as they
//! help any streaming program.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use topoprobe_model::{knee, LoadedCurve, LoadedPoint};
use topoprobe_sys::affinity::pin_current_thread;
use topoprobe_sys::buffer::{Buffer, PagePlacement};

use super::WAIT_SHARE;

use super::chase::{self, ChaseRounds, LATENCY_MAX_STEPS, LATENCY_ROUNDS, STEADY_CHASE_STEPS};
use super::kernel_kinds::{Isa, Kernel};
use super::kernels;
use super::MemError;

mod points;

/// Delay loop iterations per block of [`BLOCK_LINES`] lines a loader reads, spread evenly
/// between its lines, from light load to none (0 runs the vector read kernel). On the AMD
/// EPYC Zen 4 guest one loader read about 0, 0–2, 2–3, 5–6, 8–10, 11–15, 19–21 and 24 GB/s
/// at the first eight: a spread by ratio, which the refinement then fills where the curve is
/// steep. Loaders that share a saturated memory take longer per line, so the same delays
/// leave them more of it.
pub const DELAYS: [u32; 9] = [4096, 1024, 512, 256, 128, 64, 32, 16, 0];
/// Lines over which a delay is spread: its smallest step is an eighth of an iteration per
/// line, fine enough for the top of the curve, where one iteration after every line
/// already took a sixth of a loader's bandwidth.
pub const BLOCK_LINES: usize = 8;
/// Evicted laps of the chase at each point, the lowest kept: a burst of other programs'
/// memory traffic during one lap (a busy host's other guests) lifts that lap only, as
/// multiload keeps the best of its samples. The laps share the rounds of one idle-latency
/// measurement ([`LAP_ROUNDS`] each), so a point costs one eviction more, not twice.
pub const POINT_LAPS: usize = 2;
/// Points added after the sweep where two neighbouring points lie farthest apart (the
/// steep end of the curve, where a fixed grid of delays leaves the knee between two points).
pub const REFINED_POINTS: usize = 6;
/// Points measured again after the refinement where a point's latency stands above both
/// of its neighbours' ([`spike`]): a burst of other programs' traffic during that point
/// (a busy host), not the memory, which cannot be slower at a lighter load.
pub const REPEATED_POINTS: usize = 3;
/// The most points one sweep measures: the idle point before and after it, every delay,
/// the refined points and the repeated ones (what its plan counts).
pub const SWEEP_POINTS: usize = DELAYS.len() + 2 + REFINED_POINTS + REPEATED_POINTS;
/// A point is a spike when its latency lies above both of its neighbours' by more than
/// this share of the idle latency.
pub const SPIKE_SHARE: f64 = 0.1;
/// Neighbouring points closer than this share of the highest bandwidth and of the idle
/// latency are not refined.
pub const REFINE_SHARE: f64 = 0.1;
/// The idle latency may move by this share during the sweep before the curve is flagged.
pub const IDLE_DRIFT: f64 = 0.10;
/// The host may steal this share of the loaders' and the chase's time before the curve
/// is flagged.
pub const STEAL_SHARE: f64 = 0.02;
/// The loaders' bandwidth may fall by this share from one delay to a shorter one before
/// the curve is flagged: less delay cannot read less, unless other programs took the
/// memory's bandwidth meanwhile.
pub const BANDWIDTH_FALL: f64 = 0.25;
/// Time the loaders run at a new delay before the chase is timed.
const SETTLE: Duration = Duration::from_millis(20);
/// Lines a loader reads between two updates of its byte count.
const CHUNK_LINES: usize = 64;
/// The delay value that parks the loaders.
const PARKED: u32 = u32::MAX;

/// One loaded-latency sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The context that chases.
    pub chase_cpu: u32,
    /// The contexts that load.
    pub loaders: Vec<u32>,
    /// Node of every buffer (`None`: first touch).
    pub node: Option<u32>,
    /// The chase's buffer, bytes.
    pub chase_bytes: u64,
    /// Each loader's buffer, bytes.
    pub loader_bytes: u64,
    /// Evict the chase's buffer before each point and chase within one lap (else the
    /// steady state).
    pub evict: bool,
    /// Vector unit of the loaders at delay 0.
    pub isa: Isa,
    /// The delays, from the largest to the smallest.
    pub delays: Vec<u32>,
}

/// Ticks the host stole from this guest's CPUs so far (`/proc/stat`), when known.
#[must_use]
pub fn steal_ticks() -> Option<u64> {
    let stat = topoprobe_files::read_string_lossy(
        std::path::Path::new("/proc/stat"),
        topoprobe_files::Rules::file(topoprobe_model::limits::MAX_SYSFS_FILE_BYTES),
    )
    .ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

/// What a loader is given besides its buffer and vector unit: the delay to read at
/// (iterations per [`BLOCK_LINES`] lines; `u32::MAX` parks it), its own byte counter, and
/// when to stop.
#[derive(Debug, Clone, Copy)]
pub struct LoaderControl<'a> {
    /// The delay of the point being measured (`u32::MAX`: parked, no reading).
    pub delay: &'a AtomicU32,
    /// The bytes this loader has read so far (it adds to it as it reads).
    pub bytes: &'a AtomicU64,
    /// Set when the sweep is over.
    pub stop: &'a AtomicBool,
}

/// A loader: reads its buffer (already touched) as its [`LoaderControl`] says, counting
/// the bytes it reads, until told to stop. The sweep's loaders run [`load`]; a test may
/// give [`sweep_with`] another (one that reads nothing, to see the curve flagged).
pub type Loader = fn(&Buffer, Isa, LoaderControl<'_>);

/// One loader: reads its buffer line by line with `delay` iterations of a loop per
/// [`BLOCK_LINES`] lines, spread evenly between the lines (the vector read kernel at
/// delay 0, with the widest unit the CPU has that the chunk suits), adding the bytes
/// read to its counter after every chunk, until `stop`; parked while the delay is
/// `u32::MAX`. Pausing after every line, not after a burst of lines, keeps the loaders'
/// requests as evenly spaced as multiload's. The bytes counted are the bytes the loop
/// read whatever the kernel: the count does not depend on the instruction set.
pub fn load(buf: &Buffer, isa: Isa, control: LoaderControl<'_>) {
    let LoaderControl { delay, bytes, stop } = control;
    let words = buf.words();
    let chunk = CHUNK_LINES * 8;
    let mut acc = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for part in words.chunks(chunk) {
            let d = delay.load(Ordering::Relaxed);
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if d == PARKED {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            if d == 0 {
                acc ^= kernels::run(Kernel::Read, isa, false, part, &mut []);
            } else {
                for (i, line) in part.chunks(8).enumerate() {
                    acc ^= line.iter().fold(0, |x, y| x ^ y);
                    let mut k = 0;
                    let pause = pause_after_line(d, i);
                    while k < pause {
                        k = black_box(k + 1);
                    }
                }
            }
            bytes.fetch_add(8 * part.len() as u64, Ordering::Relaxed);
        }
    }
    black_box(acc);
}

/// Iterations of the delay loop after line `i` of a loader's chunk: `delay` per
/// [`BLOCK_LINES`] lines, spread as evenly as whole iterations allow.
fn pause_after_line(delay: u32, i: usize) -> u32 {
    let block = BLOCK_LINES as u64;
    let j = (i % BLOCK_LINES) as u64;
    let upto = |k: u64| u64::from(delay) * k / block;
    u32::try_from(upto(j + 1) - upto(j)).unwrap_or(u32::MAX)
}

/// A warning when the loaders' bandwidth fell by more than [`BANDWIDTH_FALL`] from a point
/// to one of shorter delay (`points` ordered from the largest delay to the smallest).
#[must_use]
pub fn bandwidth_fall(points: &[LoadedPoint]) -> Option<String> {
    let mut best: Option<&LoadedPoint> = None;
    for p in points.iter().filter(|p| p.delay.is_some()) {
        if let Some(b) = best {
            if p.gbps < (1.0 - BANDWIDTH_FALL) * b.gbps {
                return Some(format!(
                    "not trustworthy: the loaders read {:.1} GB/s at delay {} but {:.1} GB/s at \
                     the shorter delay {} (other programs took memory bandwidth during the sweep)",
                    b.gbps,
                    b.delay.unwrap_or(0),
                    p.gbps,
                    p.delay.unwrap_or(0)
                ));
            }
        }
        if best.is_none_or(|b| p.gbps > b.gbps) {
            best = Some(p);
        }
    }
    None
}

/// The delay halfway between the two neighbouring points of `points` (ordered from the
/// largest delay to the smallest, the idle point first) that lie farthest apart, when a
/// delay lies between them and they differ by more than [`REFINE_SHARE`] of the highest
/// bandwidth or of the idle latency: where the bandwidth jumps between two delays, or where
/// the latency climbs the cliff at the end of the curve.
#[must_use]
pub fn refine_delay(points: &[LoadedPoint]) -> Option<u32> {
    let top = points.iter().map(|p| p.gbps).fold(0.0, f64::max);
    let idle = points.first().map_or(f64::NAN, |p| p.latency_ns);
    if !(top > 0.0 && idle > 0.0) {
        return None;
    }
    points
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (w[0].delay?, w[1].delay?);
            let mid = u32::try_from((u64::from(a) + u64::from(b)) / 2).ok()?;
            let apart = ((w[1].gbps - w[0].gbps) / top)
                .abs()
                .max(((w[1].latency_ns - w[0].latency_ns) / idle).abs());
            (a > b + 1 && apart.is_finite()).then_some((apart, mid))
        })
        .filter(|&(apart, _)| apart > REFINE_SHARE)
        .max_by(|x, y| x.0.total_cmp(&y.0))
        .map(|(_, d)| d)
}

/// The loaded point of `points` (ordered from the largest delay to the smallest, the idle
/// point first) whose latency stands highest above both of its neighbours', by more than
/// [`SPIKE_SHARE`] of the idle latency, leaving out the indices in `repeated` (points
/// already measured again). The last point has one neighbour only: at the shortest delay
/// the latency is the highest of the curve by right.
#[must_use]
pub fn spike(points: &[LoadedPoint], repeated: &[usize]) -> Option<usize> {
    let idle = points.first().map(|p| p.latency_ns).filter(|&i| i > 0.0)?;
    points
        .windows(3)
        .enumerate()
        .map(|(i, w)| {
            let above = w[1].latency_ns - w[0].latency_ns.max(w[2].latency_ns);
            (i + 1, above)
        })
        .filter(|&(i, above)| {
            points[i].delay.is_some() && !repeated.contains(&i) && above > SPIKE_SHARE * idle
        })
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(i, _)| i)
}

/// Timed rounds of one lap at a point: the idle latency's rounds shared among the laps.
pub const LAP_ROUNDS: usize = if LATENCY_ROUNDS / POINT_LAPS > 0 {
    LATENCY_ROUNDS / POINT_LAPS
} else {
    1
};

/// ns per load of one lap of the chase through `buf` (`slots` linked slots), the median of
/// its [`LAP_ROUNDS`] rounds.
fn chase_ns(buf: &Buffer, slots: usize, evict: bool) -> f64 {
    let how = if evict {
        ChaseRounds::within_one_lap(slots, LAP_ROUNDS, LATENCY_MAX_STEPS)
    } else {
        ChaseRounds {
            rounds: LAP_ROUNDS,
            steps: STEADY_CHASE_STEPS / 4,
            warm_up: slots.min(STEADY_CHASE_STEPS),
            evict: false,
        }
    };
    topoprobe_model::median(&chase::timed_rounds(buf, how)).unwrap_or(f64::NAN)
}

/// Runs the sweep with the loaders of [`load`]; the curve's socket, node and locality are
/// left for the caller (0, the sweep's node, true).
///
/// # Errors
///
/// [`MemError`] when a thread cannot be pinned or a buffer allocated or bound.
pub fn sweep(s: &Sweep) -> Result<LoadedCurve, MemError> {
    sweep_with(s, load)
}

/// Ticks of the sweep's wait for its loaders to be ready (their buffers touched).
const READY_POLL: Duration = Duration::from_millis(1);

/// A sentence on the loaders of `cpus` (by index in `loaders`) that read nothing at the
/// points `silent` lists (`(delay, loader indices)`), or `None` when every loader read at
/// every loaded point.
fn silent_loaders(loaders: &[u32], silent: &[(u32, Vec<usize>)]) -> Option<String> {
    let mut by_cpu: Vec<(u32, Vec<u32>)> = Vec::new();
    for (delay, idle) in silent {
        for &i in idle {
            let cpu = loaders.get(i).copied().unwrap_or(u32::MAX);
            match by_cpu.iter_mut().find(|(c, _)| *c == cpu) {
                Some((_, ds)) => ds.push(*delay),
                None => by_cpu.push((cpu, vec![*delay])),
            }
        }
    }
    if by_cpu.is_empty() {
        return None;
    }
    let parts: Vec<String> = by_cpu
        .iter()
        .map(|(cpu, ds)| {
            let ds: Vec<String> = ds.iter().map(u32::to_string).collect();
            format!("CPU {cpu} at delay {}", ds.join(", "))
        })
        .collect();
    Some(format!(
        "not trustworthy: a loader read nothing while the chase was timed ({}): those \
         points' bandwidths miss its share (it was not running: other programs held its CPU)",
        parts.join("; ")
    ))
}

/// Why a curve is not a measurement from its own points alone: loaded points whose
/// loaders together read nothing (none ran, or none was counted), so that the latencies
/// are idle ones and the bandwidths zero.
#[must_use]
pub fn empty_load(points: &[LoadedPoint]) -> Option<String> {
    let loaded: Vec<&LoadedPoint> = points.iter().filter(|p| p.delay.is_some()).collect();
    if loaded.is_empty() || loaded.iter().any(|p| p.gbps > 0.0) {
        return None;
    }
    Some(format!(
        "the loaders read nothing at any of the {} loaded points (delay 0 included): no load \
         was applied, and the latencies beside them are idle ones",
        loaded.len()
    ))
}

/// [`sweep`] with loaders running `loader`. Every loader touches its buffer before the
/// sweep measures anything (the chase waits until all are ready, however slow the first
/// touch of fresh memory is), and each counts its own bytes: a point at which a loader
/// read nothing is said, and a curve whose loaders read nothing at all is marked
/// unavailable ([`LoadedCurve::unavailable`]), never printed as a measurement.
///
/// # Errors
///
/// [`MemError`] when a thread cannot be pinned or a buffer allocated or bound.
pub fn sweep_with(s: &Sweep, loader: Loader) -> Result<LoadedCurve, MemError> {
    // Huge pages for the chase, as for the idle latency, and for the loaders, whose
    // streams then cross no 4 KiB page boundary.
    let placement = PagePlacement {
        node: s.node,
        huge_pages: Some(true),
    };
    let delay = AtomicU32::new(PARKED);
    let stop = AtomicBool::new(false);
    // One line per counter: loaders adding to counters that share a line would slow each
    // other down by more than the memory does.
    let counts: Vec<CachePadded<AtomicU64>> = s
        .loaders
        .iter()
        .map(|_| CachePadded::new(AtomicU64::new(0)))
        .collect();
    // Loaders whose buffer is touched (or that failed): the chase waits for all of them.
    let settled = AtomicUsize::new(0);
    let steal_before = steal_ticks();
    let started = Instant::now();
    let (mut points, idle_again, chase_waited, silent) = std::thread::scope(|scope| {
        let loaders: Vec<_> = s
            .loaders
            .iter()
            .zip(&counts)
            .map(|(&cpu, bytes)| {
                let control = LoaderControl {
                    delay: &delay,
                    bytes,
                    stop: &stop,
                };
                let settled = &settled;
                scope.spawn(move || run_loader(s, cpu, placement, control, settled, loader))
            })
            .collect();
        let side = points::ChaseSide {
            delay: &delay,
            counts: &counts,
            settled: &settled,
        };
        let chased = scope
            .spawn(move || side.run(s, placement))
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        stop.store(true, Ordering::Relaxed);
        for h in loaders {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        }
        chased
    })?;
    let mut warnings = Vec::new();
    let idle = points.first().map_or(f64::NAN, |p| p.latency_ns);
    if (idle_again - idle).abs() > IDLE_DRIFT * idle {
        warnings.push(format!(
            "not trustworthy: the idle latency moved from {idle:.0} to {idle_again:.0} ns during \
             the sweep (the vCPUs moved or the host was busy)"
        ));
    }
    // The idle point is the lower of its two measurements, as each point is the lowest of
    // its laps: other programs' traffic only adds latency. The knee is read against it.
    if let Some(first) = points.first_mut() {
        first.latency_ns = first.latency_ns.min(idle_again);
    }
    warnings.extend(steal_warning(steal_before, s.loaders.len() + 1, started));
    if let Some(share) = chase_waited.filter(|&w| w > WAIT_SHARE) {
        warnings.push(format!(
            "not trustworthy: the chase waited {:.0}% of the sweep for CPU {} (other programs \
             ran on it)",
            share * 100.0,
            s.chase_cpu
        ));
    }
    warnings.extend(bandwidth_fall(&points));
    let unavailable = empty_load(&points);
    if unavailable.is_none() {
        warnings.extend(silent_loaders(&s.loaders, &silent));
    }
    if s.loaders.len() < 2 {
        warnings.push(format!(
            "{} loader{}: the curve may stop short of the node's saturation",
            s.loaders.len(),
            if s.loaders.len() == 1 { "" } else { "s" }
        ));
    }
    Ok(LoadedCurve {
        socket: 0,
        node: s.node.unwrap_or(0),
        local: true,
        chase_cpu: s.chase_cpu,
        loaders: s.loaders.clone(),
        knee: if unavailable.is_none() {
            knee(&points)
        } else {
            None
        },
        points,
        idle_again_ns: Some(idle_again),
        warnings,
        unavailable,
    })
}

/// One loader's thread of sweep `s`: pinned to `cpu`, its buffer made and touched (then
/// counted in `settled`, as it is when this fails), it runs `loader` under `control`
/// until the sweep stops it.
///
/// # Errors
///
/// [`MemError`] when the thread cannot be pinned or its buffer allocated or bound.
fn run_loader(
    s: &Sweep,
    cpu: u32,
    placement: PagePlacement,
    control: LoaderControl<'_>,
    settled: &AtomicUsize,
    loader: Loader,
) -> Result<(), MemError> {
    // Counted as settled however this thread ends, so the chase never waits for a loader
    // that failed.
    let settle = Settle(settled);
    let ready = pin_current_thread(cpu)
        .map_err(MemError::from)
        .and_then(|()| {
            let mut b = Buffer::new(s.loader_bytes as usize, placement)?;
            b.words_mut().fill(1);
            Ok(b)
        });
    drop(settle);
    let buf = ready?;
    loader(&buf, s.isa, control);
    Ok(())
}

/// The warning that the host stole more than [`STEAL_SHARE`] of the time of the sweep's
/// `cpus` since `started` (steal ticks `before` it, and now), when both counts are known.
fn steal_warning(before: Option<u64>, cpus: usize, started: Instant) -> Option<String> {
    let (a, b) = (before?, steal_ticks()?);
    let ticks_per_s = 100.0;
    let cpus = cpus as f64;
    let share = (b.saturating_sub(a)) as f64
        / (started.elapsed().as_secs_f64() * ticks_per_s * cpus).max(1e-9);
    (share > STEAL_SHARE).then(|| {
        format!(
            "not trustworthy: the host stole {:.0}% of the vCPUs' time during the sweep",
            share * 100.0
        )
    })
}

/// What the chase's thread of a sweep returns: the points, the idle latency measured
/// again, the share of the sweep it waited for its CPU, and the loaders silent at each
/// loaded point.
type SweepRun = (Vec<LoadedPoint>, f64, Option<f64>, Vec<(u32, Vec<usize>)>);

/// Counts a loader as settled when dropped (its buffer ready, or its thread failed).
struct Settle<'a>(&'a AtomicUsize);

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(delay: Option<u32>, gbps: f64) -> LoadedPoint {
        at(delay, gbps, 100.0)
    }

    fn at(delay: Option<u32>, gbps: f64, latency_ns: f64) -> LoadedPoint {
        LoadedPoint {
            delay,
            gbps,
            latency_ns,
        }
    }

    #[test]
    fn a_delay_is_spread_evenly_over_a_block_of_lines() {
        let pauses =
            |d: u32| -> Vec<u32> { (0..BLOCK_LINES).map(|i| pause_after_line(d, i)).collect() };
        assert_eq!(pauses(16), [2; BLOCK_LINES]);
        assert_eq!(pauses(4), [0, 1, 0, 1, 0, 1, 0, 1]);
        assert_eq!(pauses(1), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(pauses(12).iter().sum::<u32>(), 12);
        // The next block starts again.
        assert_eq!(pause_after_line(1, BLOCK_LINES + 7), 1);
        assert_eq!(pause_after_line(u32::MAX - 1, 3), (u32::MAX - 1) / 8 + 1);
    }

    #[test]
    fn the_largest_jump_in_bandwidth_is_refined_until_delays_meet() {
        let points = [
            point(None, 0.0),
            point(Some(64), 4.0),
            point(Some(32), 8.0),
            point(Some(8), 15.0),
            point(Some(0), 28.0),
        ];
        assert_eq!(refine_delay(&points), Some(4));
        // Small jumps are left alone; neighbouring delays cannot be split.
        let flat = [point(None, 0.0), point(Some(8), 27.0), point(Some(0), 28.0)];
        assert_eq!(refine_delay(&flat), None);
        let close = [point(None, 0.0), point(Some(1), 10.0), point(Some(0), 28.0)];
        assert_eq!(refine_delay(&close), None);
    }

    #[test]
    fn a_fall_of_the_loaders_bandwidth_at_a_shorter_delay_is_flagged() {
        let steady = [
            point(None, 0.0),
            point(Some(8), 17.0),
            point(Some(4), 24.0),
            point(Some(0), 22.0),
        ];
        assert_eq!(
            bandwidth_fall(&steady),
            None,
            "a dip at saturation is not a fall"
        );
        let fell = [
            point(None, 0.0),
            point(Some(8), 12.4),
            point(Some(4), 14.9),
            point(Some(2), 8.0),
            point(Some(0), 21.5),
        ];
        let w = bandwidth_fall(&fell).expect("flagged");
        assert!(
            w.contains("14.9 GB/s at delay 4 but 8.0 GB/s at the shorter delay 2"),
            "{w}"
        );
    }

    #[test]
    fn the_latency_cliff_is_refined_where_the_bandwidth_barely_moves() {
        let cliff = [
            at(None, 0.0, 130.0),
            at(Some(32), 6.0, 131.0),
            at(Some(20), 9.1, 131.0),
            at(Some(14), 11.9, 131.0),
            at(Some(8), 17.0, 131.0),
            at(Some(6), 20.6, 135.0),
            at(Some(4), 22.0, 140.0),
            at(Some(2), 30.0, 173.0),
            at(Some(0), 29.0, 176.0),
        ];
        // 4 -> 2 climbs 33 ns (a quarter of idle) and 8 GB/s: the farthest apart once the
        // bandwidth's jumps are filled.
        assert_eq!(refine_delay(&cliff), Some(3));
        let idle_only = [at(None, 0.0, 130.0)];
        assert_eq!(refine_delay(&idle_only), None);
    }

    #[test]
    fn a_point_above_both_neighbours_is_a_spike_once() {
        let curve = [
            at(None, 0.0, 130.0),
            at(Some(64), 6.0, 132.0),
            at(Some(32), 9.0, 190.0),
            at(Some(16), 12.0, 135.0),
            at(Some(8), 17.0, 160.0),
            at(Some(4), 20.0, 150.0),
            at(Some(0), 24.0, 240.0),
        ];
        // 32 stands 55 ns above its neighbours, 8 only 10 ns (under 13 ns, a tenth of idle).
        assert_eq!(spike(&curve, &[]), Some(2));
        assert_eq!(spike(&curve, &[2]), None);
        // A rising curve has none, however steep its end.
        let rising = [
            at(None, 0.0, 130.0),
            at(Some(8), 17.0, 140.0),
            at(Some(4), 22.0, 180.0),
            at(Some(0), 24.0, 400.0),
        ];
        assert_eq!(spike(&rising, &[]), None);
        assert_eq!(spike(&rising[..1], &[]), None);
    }

    /// A loader that reads nothing and counts nothing until told to stop.
    fn reads_nothing(_: &Buffer, _: Isa, c: LoaderControl<'_>) {
        while !c.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_sweep_whose_loader_reads_nothing_is_not_a_measurement() {
        let cpus = topoprobe_sys::affinity::allowed_cpus()
            .expect("cpus")
            .to_vec();
        let c = sweep_with(
            &Sweep {
                chase_cpu: cpus[0],
                loaders: vec![*cpus.last().expect("a CPU")],
                node: None,
                chase_bytes: 1 << 20,
                loader_bytes: 1 << 20,
                evict: false,
                isa: Isa::Portable,
                delays: vec![8, 0],
            },
            reads_nothing,
        )
        .unwrap();
        let reason = c.unavailable.as_deref().expect("flagged");
        assert!(reason.starts_with("the loaders read nothing"), "{reason}");
        assert_eq!(c.knee, None);
        // The points stay as read, each loaded one at 0 GB/s.
        assert!(c.points.iter().filter(|p| p.delay.is_some()).count() >= 2);
        assert!(c.points.iter().all(|p| p.gbps == 0.0));
    }

    #[test]
    fn a_curve_whose_loaded_points_read_nothing_is_empty() {
        let flat = [
            at(None, 0.0, 113.0),
            at(Some(4096), 0.0, 114.0),
            at(Some(0), 0.0, 115.0),
        ];
        assert!(empty_load(&flat).is_some());
        let idle_only = [at(None, 0.0, 113.0)];
        assert_eq!(empty_load(&idle_only), None);
        let rising = [
            at(None, 0.0, 113.0),
            at(Some(4096), 0.0, 114.0),
            at(Some(0), 14.4, 180.0),
        ];
        assert_eq!(empty_load(&rising), None);
    }

    #[test]
    fn silent_loaders_are_named_with_their_delays() {
        assert_eq!(silent_loaders(&[1, 2], &[]), None);
        let w = silent_loaders(&[1, 2], &[(64, vec![1]), (16, vec![0, 1])]).expect("said");
        assert!(
            w.contains("CPU 2 at delay 64, 16; CPU 1 at delay 16"),
            "{w}"
        );
    }

    #[test]
    fn a_sweep_without_loaders_gives_its_idle_point_and_says_so() {
        let c = sweep(&Sweep {
            chase_cpu: topoprobe_sys::affinity::allowed_cpus()
                .expect("cpus")
                .to_vec()[0],
            loaders: Vec::new(),
            node: None,
            chase_bytes: 1 << 20,
            loader_bytes: 1 << 20,
            evict: false,
            isa: Isa::Portable,
            delays: vec![8, 0],
        })
        .unwrap();
        assert_eq!(c.points.len(), 1);
        assert_eq!(c.points[0].delay, None);
        assert!(c.points[0].latency_ns > 0.0);
        // The idle point is the lower of its two measurements.
        assert!(c.points[0].latency_ns <= c.idle_again_ns.expect("idle again"));
        assert!(
            c.warnings.iter().any(|w| w.contains("0 loaders")),
            "{:?}",
            c.warnings
        );
    }
}
