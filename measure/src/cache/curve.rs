//! Cache levels from an mcalibrator curve (Servet Fig. 4): plateaus of the access time
//! are the levels, the rises between them are the sizes.
//!
//! A rise confined to one step of the sizes (virtually indexed L1, page colouring, huge
//! pages) gives the size by its position; a rise spread over many sizes (a physically
//! indexed cache under random page mapping) gives it through the probabilistic algorithm
//! ([`super::probabilistic`]); a curve still rising at the largest size ends with a level
//! fitted on its largest sizes.

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
    /// Access time when the array fits in this level, ns.
    pub hit_ns: f64,
    /// Access time once it no longer fits (the next level's, or memory's), ns.
    pub miss_ns: f64,
    /// How the size was found.
    pub method: Method,
}

/// Rise between plateaus that makes a cache level (smaller rises are TLB and prefetch
/// effects).
pub const LEVEL_RISE: f64 = 1.3;
/// Smallest ratio of the last to the first size of a plateau.
const MIN_SPAN: f64 = 1.41;
/// Fewest flat points in a row that make a plateau.
const MIN_PLATEAU: usize = 4;
/// Largest max/min ratio inside a flat window.
const FLAT: f64 = 1.12;

/// Finds the cache levels of a curve sorted by size.
#[must_use]
pub fn levels(samples: &[Sample]) -> Vec<FoundLevel> {
    let c = despike(samples);
    let n = c.len();
    if n < 5 {
        return Vec::new();
    }
    // A point is flat when its neighbourhood varies by less than FLAT.
    let flat: Vec<bool> = (0..n)
        .map(|k| {
            let lo = k.saturating_sub(2);
            let hi = (k + 2).min(n - 1);
            let w = &c[lo..=hi];
            let max = w.iter().copied().fold(f64::MIN, f64::max);
            let min = w.iter().copied().fold(f64::MAX, f64::min);
            max / min < FLAT
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
        let hit = edge_median(&c[a.0..=a.1], true);
        let miss = edge_median(&c[b.0..=b.1], false);
        if miss / hit < LEVEL_RISE {
            continue;
        }
        let lo = a.1.saturating_sub(3).max(a.0);
        let hi = (b.0 + 3).min(b.1);
        if let Some(level) = fit(&sizes[lo..=hi], &c[lo..=hi], hit, miss) {
            out.push(FoundLevel {
                hit_ns: hit,
                miss_ns: miss,
                ..level
            });
        }
    }
    // Still rising at the end: the last level is fitted on the largest sizes.
    if let Some(&last) = plateaus.last() {
        let top = c[n - 1];
        let hit = edge_median(&c[last.0..=last.1], true);
        if last.1 + 3 < n && top / hit >= LEVEL_RISE {
            let lo = last.1.saturating_sub(3).max(last.0);
            if let Some(level) = fit(&sizes[lo..], &c[lo..], hit, top) {
                out.push(FoundLevel {
                    hit_ns: hit,
                    miss_ns: top,
                    method: Method::Incomplete,
                    ..level
                });
            }
        }
    }
    out
}

/// Median of the three values at the inner edge of a plateau: its end (`end`) or start.
fn edge_median(run: &[f64], end: bool) -> f64 {
    let take = run.len().min(3);
    let mut v: Vec<f64> = if end {
        run[run.len() - take..].to_vec()
    } else {
        run[..take].to_vec()
    };
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
    let partway = points
        .iter()
        .filter(|p| p.miss_rate > 0.1 && p.miss_rate < 0.9)
        .count();
    if partway <= 1 {
        // Where the miss rate crosses one half, snapped to the nearest tentative size.
        let cross = crossing(&points)?;
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
            hit_ns: hit,
            miss_ns: miss,
            method: Method::Step,
        });
    }
    let est = probabilistic::estimate(&points, first / 2, last.saturating_mul(2))?;
    Some(FoundLevel {
        bytes: est.bytes,
        hit_ns: hit,
        miss_ns: miss,
        method: Method::Probabilistic,
    })
}

/// The size (interpolated on a log scale) where the miss rate first reaches one half.
fn crossing(points: &[MissPoint]) -> Option<f64> {
    points.windows(2).find_map(|w| {
        let (a, b) = (w[0], w[1]);
        (a.miss_rate < 0.5 && b.miss_rate >= 0.5).then(|| {
            let t = (0.5 - a.miss_rate) / (b.miss_rate - a.miss_rate);
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
