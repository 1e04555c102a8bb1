//! Detection of a coarse timer: latencies that come in fixed steps.
//!
//! A timer of resolution `s` makes every latency a multiple of `s` (up to a common offset,
//! and to the rounding of printed values). Averages of a few readings add values between
//! the multiples, so the smallest spacing of the values is often a fine sub-grid: the step
//! is the *coarsest* spacing on whose grid nearly all values lie (the dominant spacing).

/// Fewest distinct values in which a step is looked for.
const MIN_DISTINCT: usize = 4;
/// Share of the values that must lie on the grid of a step.
const ON_GRID: f64 = 0.9;
/// How far a value may lie from the grid and still count as on it, in finest spacings of
/// the values.
const GRID_TOLERANCE: f64 = 0.1;

/// A detected quantization step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Quantization {
    /// The step, in the table's unit.
    pub(crate) step: f64,
    /// The step relative to the median latency.
    pub(crate) relative: f64,
}

/// Relative difference below which two printed values are one (rounding).
const ROUNDING: f64 = 1e-3;

/// Distinct values of sorted `v` (values within [`ROUNDING`] of the first of a run are
/// one), with their counts.
fn distinct<T: Copy + Into<f64>>(v: &[T]) -> Vec<(f64, usize)> {
    let mut out: Vec<(f64, usize)> = Vec::new();
    for x in v.iter().map(|&x| x.into()) {
        match out.last_mut() {
            Some((l, c)) if x - *l <= ROUNDING * l.abs() => *c += 1,
            _ => out.push((x, 1)),
        }
    }
    out
}

/// Finds the step of a coarse timer in `sorted` (ascending, positive) latencies: the
/// largest spacing `s` between distinct values such that at least 90% of the values lie
/// within 10% of `s` of a multiple of `s` (up to a common offset), when `s` is at least
/// 0.2% of the 10% quantile (a step that blurs the fast levels matters even when it is
/// small against the slow ones).
///
/// At least [`MIN_DISTINCT`] distinct values are needed: three equally spaced latency
/// levels (say 11, 43 and 76 ns) fit a grid by coincidence, not because of the timer; and
/// values must repeat (fewer distinct values than a quarter of them).
pub(crate) fn detect<T: Copy + Into<f64>>(sorted: &[T]) -> Option<Quantization> {
    if sorted.len() < 8 {
        return None;
    }
    let median: f64 = sorted[sorted.len() / 2].into();
    let low: f64 = sorted[sorted.len() / 10].into();
    if low <= 0.0 {
        return None;
    }
    // Printed values carry rounding noise below 0.1%.
    let tol = ROUNDING * low;
    // A continuous table has about as many distinct values as values: look at a sample
    // first, so that a large table is not scanned for a grid it does not have.
    let stride = (sorted.len() / 4096).max(1);
    let sample: Vec<f64> = sorted.iter().map(|&x| x.into()).step_by(stride).collect();
    if stride > 1 && distinct(&sample).len() * 4 > sample.len() {
        return None;
    }
    let values = distinct(sorted);
    if values.len() < MIN_DISTINCT || values.len() * 4 > sorted.len() {
        return None;
    }
    // Candidate steps: every spacing of consecutive distinct values, and the multiples of
    // the finest one (a timer's step when averages of readings fill a sub-grid).
    let mut gaps: Vec<f64> = values
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|&g| g >= 0.002 * low && g > tol)
        .collect();
    let finest = gaps.iter().copied().min_by(f64::total_cmp)?;
    // The grid passes through the most frequent value; a value is on it when it lies
    // within a tenth of the finest spacing of a grid point (a coarser step does not make
    // the values it misses any closer).
    let offset = values
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.total_cmp(&a.0)))
        .map_or(sorted[0].into(), |v| v.0);
    // A spacing read from rounded values is refined on the farthest value that lies near
    // its grid, so that the error does not grow with the distance from the offset.
    let refine = |step: f64| -> f64 {
        let mut by_distance: Vec<f64> = values.iter().map(|v| v.0).collect();
        by_distance.sort_by(|a, b| (b - offset).abs().total_cmp(&(a - offset).abs()));
        by_distance
            .into_iter()
            .map(|x| (x, (x - offset) / step))
            .find(|&(_, k)| k.round() != 0.0 && (k - k.round()).abs() <= 0.25)
            .map_or(step, |(x, k)| (x - offset) / k.round())
    };
    let fits = |step: f64| -> bool {
        let mut on_grid = 0;
        let mut points: Vec<i64> = Vec::new();
        for &(x, c) in &values {
            let k = (x - offset) / step;
            if (k - k.round()).abs() * step <= GRID_TOLERANCE * finest {
                on_grid += c;
                let p = k.round() as i64;
                if points.last() != Some(&p) {
                    points.push(p);
                }
            }
        }
        on_grid as f64 >= ON_GRID * sorted.len() as f64 && points.len() >= MIN_DISTINCT
    };
    let span = values[values.len() - 1].0 - values[0].0;
    let multiples = (span / (MIN_DISTINCT as f64 - 1.0) / finest)
        .floor()
        .min(4096.0) as usize;
    gaps.extend((2..=multiples).map(|m| finest * m as f64));
    gaps.sort_by(|a, b| b.total_cmp(a));
    gaps.dedup_by(|a, b| (*a - *b).abs() <= tol);
    let step = gaps.into_iter().map(refine).find(|&g| fits(g))?;
    Some(Quantization {
        step,
        relative: step / median,
    })
}

/// The smallest spacing between distinct values of `sorted` (ascending) latencies that is
/// above their printed rounding: what a table resolves when it shows no timer step.
pub(crate) fn finest_spacing<T: Copy + Into<f64>>(sorted: &[T]) -> Option<f64> {
    let values = distinct(sorted);
    values
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .min_by(f64::total_cmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut v: Vec<f64>) -> Vec<f64> {
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn finds_coarse_steps_and_ignores_continuous_values() {
        let q: Vec<f64> = (0..200)
            .map(|i| 30.0 + 0.4 * f64::from(i % 40) - 0.0004)
            .collect();
        let d = detect(&sorted(q)).unwrap();
        assert!((d.step - 0.4).abs() < 1e-9);
        let c: Vec<f64> = (0..200)
            .map(|i| 30.0 + 0.01 * f64::from(i * i % 97) + f64::from(i) * 1e-3)
            .collect();
        assert!(detect(&sorted(c)).is_none());
    }

    #[test]
    fn three_equally_spaced_levels_are_not_a_timer_step() {
        // SMT, group and socket latencies of a simulated machine, 32.6 ns apart.
        let levels = [10.79, 43.40, 76.28];
        let v: Vec<f64> = (0..66).map(|i| levels[i % 3]).collect();
        assert!(detect(&sorted(v)).is_none());
    }

    #[test]
    fn the_dominant_spacing_wins_over_a_fine_sub_grid() {
        // A 5 ns timer; a few values are averages of two readings, half a step off.
        let mut v: Vec<f64> = (0..400).map(|i| 20.0 + 5.0 * f64::from(i % 9)).collect();
        v.extend((0..20).map(|i| 22.5 + 5.0 * f64::from(i % 7)));
        let d = detect(&sorted(v)).unwrap();
        assert!((d.step - 5.0).abs() < 1e-9, "{d:?}");
    }

    #[test]
    fn a_fine_grid_many_values_need_is_kept() {
        // Every third value is between the multiples of 1: the grid is 0.5.
        let v: Vec<f64> = (0..300)
            .map(|i| 40.0 + f64::from(i % 20) + if i % 3 == 0 { 0.5 } else { 0.0 })
            .collect();
        let d = detect(&sorted(v)).unwrap();
        assert!((d.step - 0.5).abs() < 1e-9, "{d:?}");
    }

    #[test]
    fn finest_spacing_ignores_rounding() {
        let v = sorted(vec![26.6667, 51.6667, 53.3333, 53.33331]);
        let s = finest_spacing(&v).unwrap();
        assert!((s - 1.6666).abs() < 1e-3, "{s}");
    }
}
