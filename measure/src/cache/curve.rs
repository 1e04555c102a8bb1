//! Cache levels from an mcalibrator curve (Servet Fig. 4): plateaus of the access time
//! are the levels, the rises between them are the sizes.
//!
//! A rise confined to one step of the sizes (virtually indexed L1, page colouring, huge
//! pages) gives the size by its position; a rise spread over many sizes (a physically
//! indexed cache under random page mapping) gives it through the probabilistic algorithm
//! ([`super::probabilistic`]); a curve still rising at the largest size ends with a level
//! fitted on its largest sizes.

use topoprobe_model::median;

use super::probabilistic::{self, MissPoint};

/// One measured point: array size and average time of one access.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Array size, bytes.
    pub bytes: u64,
    /// Time of one access, ns.
    pub ns: f64,
}

/// How a level's size was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The position of a rise confined to one step.
    Step,
    /// Servet's probabilistic algorithm over a gradual rise.
    Probabilistic,
    /// The probabilistic algorithm on the largest sizes, whose rise had not ended.
    Incomplete,
}

/// A cache level found in the curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FoundLevel {
    /// Estimated size, bytes.
    pub bytes: u64,
    /// The level's access time: the median of the first half of its plateau, before the
    /// TLB misses that a plateau can drift up with (ns).
    pub latency_ns: f64,
    /// Access time when the array fits in this level, ns.
    pub hit_ns: f64,
    /// Access time once it no longer fits (the next level's, or memory's), ns.
    pub miss_ns: f64,
    /// How the size was found.
    pub method: Method,
    /// Largest size whose miss rate (relative to `hit_ns` and `miss_ns`) is still under
    /// [`ONSET`]: where the misses begin.
    pub onset_bytes: u64,
    /// Size where the miss rate reaches one half (interpolated on a log scale).
    pub half_bytes: u64,
    /// Size where the miss rate reaches [`FULL`]: nearly every access misses.
    pub full_bytes: u64,
}

/// Miss rate at which nearly every access misses.
pub const FULL: f64 = 0.9;

/// Miss rate that marks the beginning of a level's rise.
pub const ONSET: f64 = 0.05;

impl FoundLevel {
    /// Whether a cache of `bytes` bytes explains this rise: its misses begin by 1.5 ×
    /// `bytes` (a cache holds what fits, so a rise that begins later belongs to a larger
    /// cache), they are half-way between 0.75 × and 2.5 × `bytes` (random page placement
    /// makes a physically indexed cache miss before it is full, but not that early;
    /// thrash-resistant replacement keeps some lines of a cyclic walk twice its size, but
    /// not half of a walk much larger). Any
    /// of the page-set model, LRU or random replacement, and thrash-resistant insertion
    /// keeps a real cache inside these bounds; nor can nearly every access miss
    /// ([`FULL`]) before 0.9 × `bytes`, which a share of a cache taken by other programs
    /// shows (the last level of a shared host). A sharp rise (a virtually indexed level, or
    /// huge pages) places the size more precisely, and the bounds narrow with it: to 1.1 ×
    /// and 0.9 × the width of the rise (half-way size over onset).
    #[must_use]
    pub fn explained_by(&self, bytes: u64) -> bool {
        let b = bytes as f64;
        let onset = self.onset_bytes.max(1) as f64;
        let half = self.half_bytes.max(1) as f64;
        let width = (half / onset).max(1.0);
        onset <= b * (1.1 * width).min(1.5)
            && half >= b * (0.9 / width).max(0.75)
            && half <= 2.5 * b
            && self.full_bytes as f64 >= 0.9 * b
    }
}

/// Rise between plateaus that makes a cache level (smaller rises are TLB and prefetch
/// effects).
pub const LEVEL_RISE: f64 = 1.3;
/// Rise from the last plateau to the end of a curve that makes a last level whose rise
/// has not ended (the end is memory, the noisiest part of the curve).
const INCOMPLETE_RISE: f64 = 1.5;
/// Smallest ratio of the last to the first size of a plateau.
const MIN_SPAN: f64 = 1.41;
/// Fewest flat points in a row that make a plateau.
const MIN_PLATEAU: usize = 4;
/// Largest max/min ratio inside a flat window.
const FLAT: f64 = 1.12;
/// Largest slope (d ln t / d ln size) inside a flat window whose sizes are far apart:
/// coarse grids (quarter octaves) see a slow drift inside a level as a larger ratio.
const FLAT_SLOPE: f64 = 0.25;

/// Finds the cache levels of a curve sorted by size.
#[must_use]
pub fn levels(samples: &[Sample]) -> Vec<FoundLevel> {
    let c = despike(samples);
    let n = c.len();
    if n < 5 {
        return Vec::new();
    }
    // A point is flat when its neighbourhood varies by less than FLAT, or rises slowly
    // over a wide span of sizes.
    let flat: Vec<bool> = (0..n)
        .map(|k| {
            let lo = k.saturating_sub(2);
            let hi = (k + 2).min(n - 1);
            let w = &c[lo..=hi];
            let max = w.iter().copied().fold(f64::MIN, f64::max);
            let min = w.iter().copied().fold(f64::MAX, f64::min);
            let span = (samples[hi].bytes as f64 / samples[lo].bytes as f64).ln();
            max / min < FLAT || (span > 0.0 && (max / min).ln() / span < FLAT_SLOPE)
        })
        .collect();
    // Plateaus: runs of flat points; neighbouring runs closer than LEVEL_RISE are one.
    let mut plateaus: Vec<(usize, usize)> = Vec::new();
    let mut k = 0;
    while k < n {
        if flat[k] {
            let start = k;
            while k + 1 < n && flat[k + 1] {
                k += 1;
            }
            // A short flat stretch inside a rise is noise, not a level: a plateau has
            // several points and spans at least half an octave of sizes.
            let span = samples[k].bytes as f64 / samples[start].bytes as f64;
            if k - start + 1 < MIN_PLATEAU || span < MIN_SPAN {
                k += 1;
                continue;
            }
            match plateaus.last_mut() {
                Some(last) if c[start] / c[last.1] < LEVEL_RISE => last.1 = k,
                _ => plateaus.push((start, k)),
            }
        }
        k += 1;
    }
    let mut out = Vec::new();
    let sizes: Vec<u64> = samples.iter().map(|s| s.bytes).collect();
    for pair in plateaus.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        // The level's own access time (the first half of its plateau), not the plateau's
        // end: misses that begin inside the plateau (a victim level behind it, random
        // replacement, a guest's nested page walks) lift its end, and measured from there
        // they would seem to begin later than they do.
        let hit = first_half_median(&c[a.0..=a.1]);
        let miss = edge_median(&c[b.0..=b.1], false);
        if miss / hit < LEVEL_RISE {
            continue;
        }
        let lo = a.1.saturating_sub(3).max(a.0);
        let hi = (b.0 + 3).min(b.1);
        if let Some(level) = fit(&sizes[lo..=hi], &c[lo..=hi], hit, miss) {
            out.push(FoundLevel {
                latency_ns: first_half_median(&c[a.0..=a.1]),
                ..level
            });
        }
    }
    // Still rising at the end: the last level is fitted on the largest sizes. The end of
    // the curve is the median of its last points, so that one slow walk there (memory is
    // the noisiest level) does not make a level.
    if let Some(&last) = plateaus.last() {
        let tail = (n / 20).max(3).min(n - last.1 - 1);
        let hit = edge_median(&c[last.0..=last.1], true);
        if last.1 + 3 < n && tail >= 3 {
            let mut end: Vec<f64> = c[n - tail..].to_vec();
            end.sort_by(f64::total_cmp);
            let top = end[end.len() / 2];
            let lo = last.1.saturating_sub(3).max(last.0);
            // Above the plateau's own noise, not only above its edge.
            let highest = c[last.0..=last.1].iter().copied().fold(hit, f64::max);
            if top / hit >= INCOMPLETE_RISE && top / highest >= LEVEL_RISE {
                if let Some(level) = fit(&sizes[lo..], &c[lo..], hit, top) {
                    out.push(FoundLevel {
                        method: Method::Incomplete,
                        latency_ns: first_half_median(&c[last.0..=last.1]),
                        ..level
                    });
                }
            }
        }
    }
    out
}

/// Median of the first half of a plateau (NaN for an empty one).
fn first_half_median(run: &[f64]) -> f64 {
    median(&run[..run.len().div_ceil(2)]).unwrap_or(f64::NAN)
}

/// Median of the three values at the inner edge of a plateau: its end (`end`) or start
/// (NaN for an empty plateau).
fn edge_median(run: &[f64], end: bool) -> f64 {
    let take = run.len().min(3);
    let edge = if end {
        &run[run.len() - take..]
    } else {
        &run[..take]
    };
    median(edge).unwrap_or(f64::NAN)
}

/// Size of the level whose rise spans `sizes` (with a few plateau points either side): by
/// position when at most one size lies partway up the rise, else by the probabilistic
/// algorithm.
fn fit(sizes: &[u64], c: &[f64], hit: f64, miss: f64) -> Option<FoundLevel> {
    let points: Vec<MissPoint> = sizes
        .iter()
        .zip(c)
        .map(|(&bytes, &ns)| MissPoint {
            bytes,
            miss_rate: ((ns - hit) / (miss - hit)).clamp(0.0, 1.0),
        })
        .collect();
    let first = *sizes.first()?;
    let last = *sizes.last()?;
    let onset_bytes = onset(&points).unwrap_or(first);
    let half_bytes = crossing(&points, 0.5).map_or(last, |b| b as u64);
    let full_bytes = crossing(&points, FULL).map_or(last, |b| b as u64);
    let partway = points
        .iter()
        .filter(|p| p.miss_rate > 0.1 && p.miss_rate < 0.9)
        .count();
    if partway <= 1 {
        // Where the miss rate crosses one half, snapped to the nearest tentative size.
        let cross = crossing(&points, 0.5)?;
        let nearest = probabilistic::tentative_sizes(first / 2, last * 2)
            .into_iter()
            .map(|(b, _)| b)
            .min_by(|a, b| {
                let da = (*a as f64 / cross).ln().abs();
                let db = (*b as f64 / cross).ln().abs();
                da.total_cmp(&db)
            })?;
        return Some(FoundLevel {
            bytes: nearest,
            latency_ns: hit,
            hit_ns: hit,
            miss_ns: miss,
            method: Method::Step,
            onset_bytes,
            half_bytes,
            full_bytes,
        });
    }
    let est = probabilistic::estimate(&points, first / 2, last.saturating_mul(2))?;
    Some(FoundLevel {
        bytes: est.bytes,
        latency_ns: hit,
        hit_ns: hit,
        miss_ns: miss,
        method: Method::Probabilistic,
        onset_bytes,
        half_bytes,
        full_bytes,
    })
}

/// The largest size before the miss rate stays at or above [`ONSET`].
fn onset(points: &[MissPoint]) -> Option<u64> {
    let after = points.iter().rposition(|p| p.miss_rate < ONSET)?;
    Some(points[after].bytes)
}

/// The size (interpolated on a log scale) where the miss rate first reaches `level`.
fn crossing(points: &[MissPoint], level: f64) -> Option<f64> {
    points.windows(2).find_map(|w| {
        let (a, b) = (w[0], w[1]);
        (a.miss_rate < level && b.miss_rate >= level).then(|| {
            let t = (level - a.miss_rate) / (b.miss_rate - a.miss_rate);
            let (la, lb) = ((a.bytes as f64).ln(), (b.bytes as f64).ln());
            (la + t * (lb - la)).exp()
        })
    })
}

/// Removes isolated spikes (an interrupt during one size): each interior point becomes
/// the median of itself and its neighbours.
fn despike(samples: &[Sample]) -> Vec<f64> {
    let v: Vec<f64> = samples.iter().map(|s| s.ns).collect();
    (0..v.len())
        .map(|k| {
            if k == 0 || k + 1 == v.len() {
                v[k]
            } else {
                let mut w = [v[k - 1], v[k], v[k + 1]];
                w.sort_by(f64::total_cmp);
                w[1]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::probabilistic::{binomial_tail_above, PAGE_BYTES};
    use super::*;

    /// The sizes the probe measures: 4 KiB steps (offset by 2 KiB) to 256 KiB, then
    /// 1/16-octave steps.
    fn grid(max: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (1..64).map(|k| k * 4096 + 2048).collect();
        let mut s = 256.0 * 1024.0;
        while s <= max as f64 {
            v.push(s as u64 / 1024 * 1024);
            s *= 2f64.powf(1.0 / 16.0);
        }
        v
    }

    /// A machine: L1 48 KiB step, L2 2 MiB 16-way physically indexed, L3 32 MiB 16-way.
    fn machine(bytes: u64) -> f64 {
        let l1 = if bytes <= 48 << 10 { 0.0 } else { 1.0 };
        let l2 = binomial_tail_above(bytes / PAGE_BYTES, 16.0 * 4096.0 / (2 << 20) as f64, 16);
        let l3 = binomial_tail_above(bytes / PAGE_BYTES, 16.0 * 4096.0 / (32 << 20) as f64, 16);
        1.6 + l1 * 2.6 + l2 * 15.0 + l3 * 80.0
    }

    #[test]
    fn finds_a_step_and_two_physically_indexed_levels() {
        let samples: Vec<Sample> = grid(256 << 20)
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| Sample {
                bytes,
                // A spike every 17 points, as interrupts cause.
                ns: machine(bytes) * if i % 17 == 5 { 1.8 } else { 1.0 },
            })
            .collect();
        let found = levels(&samples);
        let sizes: Vec<u64> = found.iter().map(|l| l.bytes).collect();
        assert_eq!(sizes, [48 << 10, 2 << 20, 32 << 20], "{found:?}");
        assert_eq!(found[0].method, Method::Step);
        assert_eq!(found[1].method, Method::Probabilistic);
        assert!((found[0].hit_ns - 1.6).abs() < 0.1);
    }

    #[test]
    fn a_curve_still_rising_ends_with_an_incomplete_level() {
        let samples: Vec<Sample> = grid(40 << 20)
            .into_iter()
            .map(|bytes| Sample {
                bytes,
                ns: machine(bytes),
            })
            .collect();
        let found = levels(&samples);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[2].method, Method::Incomplete);
    }

    #[test]
    fn a_flat_curve_has_no_levels() {
        let samples: Vec<Sample> = grid(1 << 20)
            .into_iter()
            .map(|bytes| Sample { bytes, ns: 2.0 })
            .collect();
        assert!(levels(&samples).is_empty());
        assert!(levels(&samples[..3]).is_empty());
    }
}
