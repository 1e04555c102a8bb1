//! Detection of a coarse timer: latencies that come in fixed steps.

/// A detected quantization step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Quantization {
    /// The step, in the table's unit.
    pub(crate) step: f64,
    /// The step relative to the median latency.
    pub(crate) relative: f64,
}

/// Finds a step `s` such that at least 90% of the values lie within 10% of `s` of a multiple
/// of `s` (up to a common offset), when `s` is at least 0.5% of the median value.
pub(crate) fn detect(values: &[f64]) -> Option<Quantization> {
    if values.len() < 8 {
        return None;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    if median <= 0.0 {
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
    if distinct.len() < 3 || distinct.len() * 4 > v.len() {
        // Few repeated values: no visible step.
        return None;
    }
    let mut gaps: Vec<f64> = distinct.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_by(f64::total_cmp);
    let step = gaps[0];
    if step < 0.005 * median {
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
}
