//! Sample statistics for the tuners: mean, spread and a 95% confidence interval.

/// Two-sided 97.5% quantiles of Student's t distribution for 1 to 30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Summary of a list of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Their sample standard deviation (0 for one sample).
    pub sd: f64,
    /// Half the width of the 95% confidence interval of the mean (infinite for one
    /// sample).
    pub half_width: f64,
}

impl Summary {
    /// Lower end of the 95% confidence interval.
    #[must_use]
    pub fn low(&self) -> f64 {
        self.mean - self.half_width
    }

    /// Upper end of the 95% confidence interval.
    #[must_use]
    pub fn high(&self) -> f64 {
        self.mean + self.half_width
    }
}

/// The 97.5% quantile of Student's t for `df` degrees of freedom (1.96 beyond 30).
fn t975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        d if d <= T975.len() => T975[d - 1],
        _ => 1.96,
    }
}

/// Summarises `samples` (`None` when there are none or one is not finite).
#[must_use]
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = samples.len();
    let mean = samples.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Some(Summary {
            n,
            mean,
            sd: 0.0,
            half_width: f64::INFINITY,
        });
    }
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let sd = var.sqrt();
    Some(Summary {
        n,
        mean,
        sd,
        half_width: t975(n - 1) * sd / (n as f64).sqrt(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_narrow_with_samples() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
        let one = summarize(&[3.0]).expect("one");
        assert!(one.half_width.is_infinite());
        let s = summarize(&[1.0, 2.0, 3.0]).expect("three");
        assert!((s.mean - 2.0).abs() < 1e-12);
        assert!((s.sd - 1.0).abs() < 1e-12);
        assert!((s.half_width - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        let many: Vec<f64> = (0..100).map(|i| f64::from(i % 2)).collect();
        let m = summarize(&many).expect("many");
        assert!(m.half_width < 0.11 && m.low() < 0.5 && m.high() > 0.5);
    }
}
