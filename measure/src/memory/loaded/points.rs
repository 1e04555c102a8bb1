//! The chase's side of a loaded-latency sweep ([`super::sweep_with`]): its buffer, the
//! wait for every loader, and the points — idle, every delay, the refined ones, the spikes
//! again, idle again — each with the loaders' bandwidth and the loaders that read nothing.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use topoprobe_model::LoadedPoint;
use topoprobe_sys::affinity::pin_current_thread;
use topoprobe_sys::buffer::{Buffer, PagePlacement};
use topoprobe_sys::usage::WaitClock;

use super::{
    chase_ns, refine_delay, spike, Sweep, SweepRun, PARKED, POINT_LAPS, READY_POLL, REFINED_POINTS,
    REPEATED_POINTS, SETTLE,
};
use crate::memory::chase;
use crate::memory::MemError;

/// What the chase shares with the loaders of a sweep.
pub(super) struct ChaseSide<'a> {
    /// The delay the loaders read at ([`PARKED`]: none).
    pub(super) delay: &'a AtomicU32,
    /// Each loader's bytes read so far.
    pub(super) counts: &'a [CachePadded<AtomicU64>],
    /// Loaders whose buffer is touched (or that failed).
    pub(super) settled: &'a AtomicUsize,
}

impl ChaseSide<'_> {
    /// The chase's thread of sweep `s`: pinned, its buffer made and linked, it waits for
    /// every loader, then measures the points; returns them, the idle latency measured
    /// again, the share of the sweep it waited for its CPU, and the silent loaders.
    ///
    /// # Errors
    ///
    /// [`MemError`] when the thread cannot be pinned or its buffer allocated or bound.
    pub(super) fn run(&self, s: &Sweep, placement: PagePlacement) -> Result<SweepRun, MemError> {
        pin_current_thread(s.chase_cpu)?;
        let waiting = WaitClock::start();
        let mut buf = Buffer::new(s.chase_bytes as usize, placement)?;
        buf.touch();
        let slots = chase::link_cycle(
            &mut buf,
            chase::ChaseOrder::PageLocal,
            0x10ad ^ u64::from(s.chase_cpu),
        );
        // No point is timed before every loader has touched its buffer: a loader still
        // faulting in fresh memory reads nothing, and its curve would be the idle latency
        // at 0 GB/s.
        while self.settled.load(Ordering::Acquire) < s.loaders.len() {
            std::thread::sleep(READY_POLL);
        }
        let mut points = Points {
            side: self,
            buf: &buf,
            slots,
            evict: s.evict,
            silent: Vec::new(),
        };
        let mut measured = vec![points.measure(PARKED)];
        if !s.loaders.is_empty() {
            points.sweep(&s.delays, &mut measured);
        }
        let again = points.measure(PARKED).latency_ns;
        // The share of the sweep the chase waited for its CPU.
        Ok((measured, again, waiting.share(), points.silent))
    }

    /// The bytes each loader has read so far.
    fn each(&self) -> Vec<u64> {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }
}

/// The chase's buffer and what its points found of the loaders.
struct Points<'a> {
    /// What the chase shares with the loaders.
    side: &'a ChaseSide<'a>,
    /// The linked buffer.
    buf: &'a Buffer,
    /// Slots of its cycle.
    slots: usize,
    /// Whether each lap is evicted first.
    evict: bool,
    /// Per loaded point: its delay and the loaders that read nothing during it.
    silent: Vec<(u32, Vec<usize>)>,
}

impl Points<'_> {
    /// The point at delay `d` ([`PARKED`]: idle): the loaders set to it (and given time
    /// to settle), the lowest latency of [`POINT_LAPS`] laps, and the loaders' bandwidth
    /// meanwhile.
    fn measure(&mut self, d: u32) -> LoadedPoint {
        self.side.delay.store(d, Ordering::Relaxed);
        if d != PARKED {
            std::thread::sleep(SETTLE);
        }
        let (b0, t0) = (self.side.each(), Instant::now());
        // The lowest of the laps: other programs' traffic only adds latency.
        let ns = (0..POINT_LAPS)
            .map(|_| chase_ns(self.buf, self.slots, self.evict))
            .fold(f64::INFINITY, f64::min);
        let (b1, t1) = (self.side.each(), Instant::now());
        let seconds = t1.duration_since(t0).as_secs_f64().max(1e-9);
        let read: Vec<u64> = b1
            .iter()
            .zip(&b0)
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        if d != PARKED {
            let idle: Vec<usize> = (0..read.len()).filter(|&i| read[i] == 0).collect();
            if !idle.is_empty() {
                self.silent.push((d, idle));
            }
        }
        LoadedPoint {
            delay: (d != PARKED).then_some(d),
            gbps: if d == PARKED {
                0.0
            } else {
                read.iter().sum::<u64>() as f64 / seconds / 1e9
            },
            latency_ns: ns,
        }
    }

    /// The loaded points after the idle one in `points`: every delay of `delays`, then
    /// up to [`REFINED_POINTS`] where neighbours lie far apart ([`refine_delay`]), then up
    /// to [`REPEATED_POINTS`] spikes again ([`spike`]), the lower of the two kept with the
    /// loaders' bandwidth of the same measurement.
    fn sweep(&mut self, delays: &[u32], points: &mut Vec<LoadedPoint>) {
        for &d in delays {
            points.push(self.measure(d));
        }
        for _ in 0..REFINED_POINTS {
            let Some(d) = refine_delay(points) else {
                break;
            };
            let p = self.measure(d);
            let at = points
                .iter()
                .position(|q| q.delay.is_some_and(|x| x < d))
                .unwrap_or(points.len());
            points.insert(at, p);
        }
        // A spike is measured again; the lower of the two stays, with the loaders'
        // bandwidth of the same measurement.
        let mut repeated = Vec::new();
        for _ in 0..REPEATED_POINTS {
            let Some(i) = spike(points, &repeated) else {
                break;
            };
            repeated.push(i);
            let again = self.measure(points[i].delay.unwrap_or(PARKED));
            if again.latency_ns < points[i].latency_ns {
                points[i] = again;
            }
        }
    }
}
