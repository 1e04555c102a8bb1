//! What the socket curve says about contention, as pure logic: from which thread count
//! each thread gets less than [`OVERHEAD`] of the bandwidth of one thread alone.

use topoprobe_model::CurvePoint;

use super::groups::OVERHEAD;

/// The smallest thread count from which every count measured (itself and every larger
/// one) gives each thread less than [`OVERHEAD`] times `alone_gbps`; `None` when the last
/// count does not (no contention up to the largest count) or when the curve has only
/// one thread.
#[must_use]
pub fn contention_from(alone_gbps: f64, points: &[CurvePoint]) -> Option<usize> {
    let mut sorted: Vec<CurvePoint> = points.iter().copied().filter(|p| p.threads > 1).collect();
    sorted.sort_by_key(|p| p.threads);
    let contends = |p: &CurvePoint| p.gbps / (p.threads as f64) < alone_gbps * OVERHEAD;
    let mut from = None;
    for p in sorted.iter().rev() {
        if contends(p) {
            from = Some(p.threads);
        } else {
            break;
        }
    }
    from
}

/// The slowdown of each thread at the largest count of the curve: the bandwidth alone
/// over each thread's share there (`None` for an empty curve).
#[must_use]
pub fn overhead_at_largest(alone_gbps: f64, points: &[CurvePoint]) -> Option<f64> {
    let p = points.iter().max_by_key(|p| p.threads)?;
    (p.gbps > 0.0).then(|| alone_gbps / (p.gbps / p.threads as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(v: &[(usize, f64)]) -> Vec<CurvePoint> {
        v.iter()
            .map(|&(threads, gbps)| CurvePoint { threads, gbps })
            .collect()
    }

    #[test]
    fn contention_starts_where_every_larger_count_stays_below() {
        let c = curve(&[(1, 10.0), (2, 20.0), (4, 38.0), (8, 40.0), (16, 40.0)]);
        assert_eq!(contention_from(10.0, &c), Some(8));
        assert_eq!(overhead_at_largest(10.0, &c), Some(4.0));
        // A dip that recovers is noise, not the start.
        let c = curve(&[(1, 10.0), (2, 17.0), (4, 39.0), (8, 60.0)]);
        assert_eq!(contention_from(10.0, &c), Some(8));
        let linear = curve(&[(1, 10.0), (2, 19.5), (4, 39.0), (8, 76.0)]);
        assert_eq!(contention_from(10.0, &linear), None);
        assert_eq!(contention_from(10.0, &curve(&[(1, 10.0)])), None);
        assert_eq!(overhead_at_largest(10.0, &[]), None);
    }
}
