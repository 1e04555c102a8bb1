//! The seam between measurement and inference: anything that can give the latency between
//! two hardware contexts ([`PairLatency`]) — a matrix file, the simulator, the live probe.
//! Collection strategies (in `topoprobe-infer`) build a latency table from it.
//!
//! A noisy pair does not stop a run: a probe that cannot bring a pair's spread under its
//! limit keeps its best batch and flags it ([`PairSample::noisy`]), and a probe that gives
//! up on a pair for a passing reason (a partner thread that stalled) says why
//! ([`PairReading::GaveUp`]); the pair is then missing, and flagged. Only
//! [`ProbeError`] stops the run.

use crate::matrix::LatencyMatrix;

/// Statistics of one measured pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairSample {
    /// Median one-way latency.
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Relative spread of the samples (for example stdev / median).
    pub spread: f64,
    /// Set when the probe kept the sample although its spread stayed above the probe's
    /// limit after every retry (another program sharing the CPUs, for example): the median
    /// is the best estimate there is, but uncertain. `None` for an accepted sample.
    pub noisy: Option<Noisy>,
}

impl PairSample {
    /// A sample with a single exact value (no spread).
    #[must_use]
    pub fn exact(value: f64) -> Self {
        Self {
            median: value,
            min: value,
            spread: 0.0,
            noisy: None,
        }
    }

    /// Whether the sample is flagged as noisy.
    #[must_use]
    pub fn is_noisy(&self) -> bool {
        self.noisy.is_some()
    }

    /// What a person should know of a noisy sample ("spread 10.2% above the 14.0% limit
    /// after 5 batches"); `None` for an accepted one.
    #[must_use]
    pub fn noise_note(&self) -> Option<String> {
        self.noisy.map(|n| n.describe(self.spread))
    }
}

/// How a sample missed the probe's spread limit: it was kept, flagged as noisy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noisy {
    /// The largest relative spread the probe accepted on its last batch (0.14 for 14%).
    pub limit: f64,
    /// Batches measured before the probe kept the best one (the batch of least spread).
    pub batches: usize,
}

/// A relative value in percent: one decimal, or two significant digits below 0.1%.
fn percent(v: f64) -> String {
    let p = v * 100.0;
    if p == 0.0 || p.abs() >= 0.1 {
        format!("{p:.1}%")
    } else {
        format!("{p:.1e}%")
    }
}

impl Noisy {
    /// The flag in words, for a sample of relative spread `spread`: "spread 10.2% above
    /// the 14.0% limit after 5 batches". A spread under the limit means that more than
    /// half of every batch's samples were outliers, and is said so.
    #[must_use]
    pub fn describe(&self, spread: f64) -> String {
        let batches = if self.batches == 1 {
            "1 batch".to_string()
        } else {
            format!("{} batches", self.batches)
        };
        let above = spread > self.limit;
        let (spread, limit) = (percent(spread), percent(self.limit));
        if above {
            format!("spread {spread} above the {limit} limit after {batches}")
        } else {
            format!(
                "more than half of the samples were outliers in each of {batches} (spread of the rest {spread}, limit {limit})"
            )
        }
    }
}

/// What a probe found for one pair ([`PairLatency::measure_pair`]).
#[derive(Debug, Clone, PartialEq)]
pub enum PairReading {
    /// A sample (flagged when noisy: [`PairSample::noisy`]).
    Sample(PairSample),
    /// The source has no value for the pair (a matrix without it, a pair the probe cannot
    /// measure): it is missing.
    Unavailable,
    /// The probe tried and gave up for a reason of the moment (a partner thread that
    /// stalled twice, no usable sample): the pair is missing, and flagged with why.
    GaveUp(String),
}

impl PairReading {
    /// The sample, if there is one.
    #[must_use]
    pub fn sample(self) -> Option<PairSample> {
        match self {
            Self::Sample(s) => Some(s),
            Self::Unavailable | Self::GaveUp(_) => None,
        }
    }
}

/// Why a probe could not measure a pair.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProbeError(pub String);

/// Anything that can give the latency between two hardware contexts.
pub trait PairLatency {
    /// Number of hardware contexts (valid indices are `0..contexts()`).
    fn contexts(&self) -> usize;

    /// Latency from context `a` to context `b` (`a != b`); `Ok(None)` when the pair cannot
    /// be measured (it will be treated as missing). A sample may be flagged as noisy
    /// ([`PairSample::noisy`]): it is kept, and the inference treats it as uncertain.
    ///
    /// # Errors
    ///
    /// Returns [`ProbeError`] when the measurement failed in a way that should stop the run.
    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError>;

    /// Like [`measure`](Self::measure), but a missing pair says whether the probe gave up
    /// on it, and why ([`PairReading::GaveUp`]): collection strategies call this and flag
    /// such pairs. The default answers from [`measure`](Self::measure) (a missing pair is
    /// [`PairReading::Unavailable`]); a probe that can give up on a pair overrides it.
    ///
    /// # Errors
    ///
    /// Returns [`ProbeError`] when the measurement failed in a way that should stop the run.
    fn measure_pair(&mut self, a: usize, b: usize) -> Result<PairReading, ProbeError> {
        Ok(self
            .measure(a, b)?
            .map_or(PairReading::Unavailable, PairReading::Sample))
    }
}

/// A latency matrix seen as a probe.
#[derive(Debug, Clone, Copy)]
pub struct MatrixProbe<'a> {
    matrix: &'a LatencyMatrix,
}

impl<'a> MatrixProbe<'a> {
    /// A probe answering from `matrix` (a missing `(a, b)` falls back to `(b, a)`).
    #[must_use]
    pub fn new(matrix: &'a LatencyMatrix) -> Self {
        Self { matrix }
    }
}

impl PairLatency for MatrixProbe<'_> {
    fn contexts(&self) -> usize {
        self.matrix.len()
    }

    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        Ok(self
            .matrix
            .get(a, b)
            .or_else(|| self.matrix.get(b, a))
            .map(PairSample::exact))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noisy_sample_says_how_it_missed_the_limit() {
        let mut s = PairSample::exact(80.0);
        assert!(!s.is_noisy());
        assert_eq!(s.noise_note(), None);
        s.spread = 0.102;
        s.noisy = Some(Noisy {
            limit: 0.14,
            batches: 5,
        });
        // Under the limit: the batches lost more than half their samples as outliers.
        let note = s.noise_note().expect("note");
        assert!(note.starts_with("more than half"), "{note}");
        s.spread = 0.2;
        assert_eq!(
            s.noise_note().as_deref(),
            Some("spread 20.0% above the 14.0% limit after 5 batches")
        );
        // A limit far below a tenth of a percent keeps two significant digits.
        s.noisy = Some(Noisy {
            limit: 2e-8,
            batches: 1,
        });
        s.spread = 0.0012;
        assert_eq!(
            s.noise_note().as_deref(),
            Some("spread 0.1% above the 2.0e-6% limit after 1 batch")
        );
    }

    #[test]
    fn measure_pair_answers_from_measure_by_default() {
        let m = LatencyMatrix::from_fn(3, |a, b| (a + b != 3).then_some(10.0));
        let mut p = MatrixProbe::new(&m);
        assert_eq!(
            p.measure_pair(0, 1),
            Ok(PairReading::Sample(PairSample::exact(10.0)))
        );
        assert_eq!(p.measure_pair(1, 2), Ok(PairReading::Unavailable));
        assert_eq!(PairReading::GaveUp("stalled".into()).sample(), None);
    }
}
