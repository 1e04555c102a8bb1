//! Servet's probabilistic algorithm (Fig. 3) for the size of a physically indexed cache.
//!
//! The OS maps virtual pages to physical pages at random, so a `K`-way cache of size `CS`
//! with pages of `PS` bytes has `CS / (K·PS)` page sets, and the number of pages `X` of an
//! `NP`-page array that land in one page set follows the binomial `B(NP, K·PS/CS)`. A set
//! holds `K` pages without conflict, so `P(X > K)` is the expected miss rate of repeated
//! traversals. Comparing that prediction with the measured miss rate for every tentative
//! `(CS, K)` and taking the statistical mode of `CS` among the five closest gives the size.

/// Page size the model assumes, in bytes.
pub const PAGE_BYTES: u64 = 4096;

/// The associativities tried: those real caches have (direct-mapped to 32-way; 11, 12,
/// 15, 20 and 24 ways are common in L2s and sliced L3s). Leaving out the odd ones
/// (14, 18, 27 …) keeps neighbours of the true size from fitting noise.
pub const WAYS: [u32; 11] = [1, 2, 4, 8, 11, 12, 15, 16, 20, 24, 32];

/// One point of a miss-rate curve: array size and measured miss rate in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MissPoint {
    /// Size of the traversed array, bytes.
    pub bytes: u64,
    /// Measured miss rate.
    pub miss_rate: f64,
}

/// A tentative cache and how far its predicted miss rates are from the measured ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Cache size, bytes.
    pub bytes: u64,
    /// Associativity.
    pub ways: u32,
    /// Sum of absolute differences between measured and predicted miss rates.
    pub divergence: f64,
}

/// `P(X > k)` for `X ~ B(n, p)`, computed by summing the first `k + 1` terms in a stable
/// recurrence (`k` is an associativity, so small).
#[must_use]
pub fn binomial_tail_above(n: u64, p: f64, k: u32) -> f64 {
    if n <= u64::from(k) {
        return 0.0;
    }
    if p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let n_f = n as f64;
    // log of the x = 0 term, then term(x+1) = term(x) · (n-x)/(x+1) · p/(1-p).
    let mut log_term = n_f * (1.0 - p).ln();
    let ratio = (p / (1.0 - p)).ln();
    let mut below = 0.0;
    for x in 0..=u64::from(k) {
        below += log_term.exp();
        let xf = x as f64;
        log_term += ((n_f - xf) / (xf + 1.0)).ln() + ratio;
    }
    (1.0 - below).clamp(0.0, 1.0)
}

/// The tentative caches: `ways · PAGE · 2^j` for every associativity of [`WAYS`] (a
/// power-of-two number of page sets per way), between `lo` and `hi` bytes.
#[must_use]
pub fn tentative_sizes(lo: u64, hi: u64) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    for ways in WAYS {
        let mut sets = 1u64;
        while let Some(bytes) = (u64::from(ways) * PAGE_BYTES).checked_mul(sets) {
            if bytes > hi {
                break;
            }
            if bytes >= lo {
                out.push((bytes, ways));
            }
            sets *= 2;
        }
    }
    out
}

/// Scores every tentative cache between `lo` and `hi` bytes against the measured curve,
/// closest first.
#[must_use]
pub fn rank(points: &[MissPoint], lo: u64, hi: u64) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = tentative_sizes(lo, hi)
        .into_iter()
        .map(|(bytes, ways)| {
            let p = f64::from(ways) * PAGE_BYTES as f64 / bytes as f64;
            let divergence = points
                .iter()
                .map(|pt| {
                    let pages = pt.bytes.div_ceil(PAGE_BYTES);
                    (pt.miss_rate - binomial_tail_above(pages, p, ways)).abs()
                })
                .sum();
            Candidate {
                bytes,
                ways,
                divergence,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        a.divergence
            .total_cmp(&b.divergence)
            .then(a.bytes.cmp(&b.bytes))
    });
    out
}

/// The size Servet's algorithm estimates: the statistical mode of the cache size among the
/// five closest candidates (ties go to the size of the closest one). `None` when no
/// candidate lies between `lo` and `hi`.
#[must_use]
pub fn estimate(points: &[MissPoint], lo: u64, hi: u64) -> Option<Candidate> {
    let ranked = rank(points, lo, hi);
    let best = ranked.iter().take(5).collect::<Vec<_>>();
    let count = |bytes: u64| best.iter().filter(|c| c.bytes == bytes).count();
    best.iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| count(a.bytes).cmp(&count(b.bytes)).then(j.cmp(i)))
        .map(|(_, c)| **c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The miss rates a cache of `bytes`, `ways` would show under random page mapping.
    fn curve(bytes: u64, ways: u32, sizes: &[u64]) -> Vec<MissPoint> {
        let p = f64::from(ways) * PAGE_BYTES as f64 / bytes as f64;
        sizes
            .iter()
            .map(|&s| MissPoint {
                bytes: s,
                miss_rate: binomial_tail_above(s / PAGE_BYTES, p, ways),
            })
            .collect()
    }

    fn sizes(lo: u64, hi: u64) -> Vec<u64> {
        // 1/16-octave steps, as the cache probe measures.
        let mut v = Vec::new();
        let mut s = lo as f64;
        while s <= hi as f64 {
            v.push((s as u64) / 1024 * 1024);
            s *= 2f64.powf(1.0 / 16.0);
        }
        v
    }

    #[test]
    fn binomial_tail_matches_direct_sums() {
        // B(4, 0.5): P(X > 1) = 1 - (1 + 4)/16.
        assert!((binomial_tail_above(4, 0.5, 1) - 11.0 / 16.0).abs() < 1e-12);
        assert_eq!(binomial_tail_above(3, 0.5, 3), 0.0);
        assert!(binomial_tail_above(1_000_000, 0.5, 16) > 0.999_999);
        // Mean far below k: nearly no misses.
        assert!(binomial_tail_above(100, 0.01, 16) < 1e-12);
    }

    #[test]
    fn recovers_physically_indexed_caches_without_page_colouring() {
        for (bytes, ways) in [
            (2u64 << 20, 16u32),
            (256 << 10, 8),
            (1536 << 10, 12),
            (8 << 20, 16),
        ] {
            let pts = curve(bytes, ways, &sizes(bytes / 4, bytes * 4));
            let est = estimate(&pts, bytes / 8, bytes * 8).unwrap();
            assert_eq!(est.bytes, bytes, "{bytes} {ways}: {est:?}");
        }
    }

    #[test]
    fn noisy_curves_still_give_the_size() {
        let bytes = 2u64 << 20;
        let mut pts = curve(bytes, 16, &sizes(bytes / 4, bytes * 4));
        for (i, p) in pts.iter_mut().enumerate() {
            let wobble = if i % 2 == 0 { 0.04 } else { -0.04 };
            p.miss_rate = (p.miss_rate + wobble).clamp(0.0, 1.0);
        }
        assert_eq!(estimate(&pts, bytes / 8, bytes * 8).unwrap().bytes, bytes);
    }

    #[test]
    fn a_coloured_cache_is_a_step_at_its_size() {
        // With page colouring (or huge pages) the curve is a step: the fit still lands on
        // the size, with the largest associativity explaining the sharpness.
        let bytes = 1u64 << 20;
        let pts: Vec<MissPoint> = sizes(bytes / 4, bytes * 4)
            .into_iter()
            .map(|s| MissPoint {
                bytes: s,
                miss_rate: if s <= bytes { 0.0 } else { 1.0 },
            })
            .collect();
        let est = estimate(&pts, bytes / 8, bytes * 8).unwrap();
        assert!(
            est.bytes.abs_diff(bytes) * 16 <= bytes,
            "{est:?} should be within 1/16 of {bytes}"
        );
    }

    #[test]
    fn no_candidates_no_estimate() {
        assert!(estimate(&[], 10, 20).is_none());
        assert!(tentative_sizes(10, 20).is_empty());
    }
}
