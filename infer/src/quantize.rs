//! Detection of a coarse timer: latencies that come in fixed steps.

/// Fewest distinct values in which a step is looked for.
const MIN_DISTINCT: usize = 4;

/// A detected quantization step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Quantization {
    /// The step, in the table's unit.
    pub(crate) step: f64,
    /// The step relative to the median latency.
    pub(crate) relative: f64,
}

/// Finds a step `s` such that at least 90% of the values lie within 10% of `s` of a multiple
/// of `s` (up to a common offset), when `s` is at least 0.2% of the 10% quantile (a step
/// that blurs the fast levels matters even when it is small against the slow ones).
///
/// At least [`MIN_DISTINCT`] distinct values are needed: three equally spaced latency
/// levels (say 11, 43 and 76 ns) fit a grid by coincidence, not because of the timer.
pub(crate) fn detect(values: &[f64]) -> Option<Quantization> {
    if values.len() < 8 {
        return None;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    // The fast end of the latencies: a step matters relative to the levels it can blur.
    let low = v[v.len() / 10];
    if low <= 0.0 {
        return None;
    }
    // Distinct values (relative tolerance 0.1% of the median: printed values carry
    // rounding noise below that).
    let mut distinct: Vec<f64> = Vec::new();
    for &x in &v {
        if distinct.last().is_none_or(|&l| x - l > 1e-3 * median) {
            distinct.push(x);
        }
    }
    if distinct.len() < MIN_DISTINCT || distinct.len() * 4 > v.len() {
        // Few repeated values: no visible step.
        return None;
    }
    let mut gaps: Vec<f64> = distinct.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_by(f64::total_cmp);
    let step = gaps[0];
    if step < 0.002 * low {
        return None;
    }
    let offset = v[0];
    let on_grid = v
        .iter()
        .filter(|&&x| {
            let k = (x - offset) / step;
            (k - k.round()).abs() <= 0.1
        })
        .count();
    (on_grid * 10 >= v.len() * 9).then_some(Quantization {
        step,
        relative: step / median,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_coarse_steps_and_ignores_continuous_values() {
        let q: Vec<f64> = (0..200)
            .map(|i| 30.0 + 0.4 * f64::from(i % 40) - 0.0004)
            .collect();
        let d = detect(&q).unwrap();
        assert!((d.step - 0.4).abs() < 1e-9);
        let c: Vec<f64> = (0..200)
            .map(|i| 30.0 + 0.01 * f64::from(i * i % 97) + f64::from(i) * 1e-3)
            .collect();
        assert!(detect(&c).is_none());
    }

    #[test]
    fn three_equally_spaced_levels_are_not_a_timer_step() {
        // SMT, group and socket latencies of a simulated machine, 32.6 ns apart.
        let levels = [10.79, 43.40, 76.28];
        let v: Vec<f64> = (0..66).map(|i| levels[i % 3]).collect();
        assert!(detect(&v).is_none());
    }
}
