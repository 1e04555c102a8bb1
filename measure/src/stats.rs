//! Sample statistics of the latency probe: outlier rejection, adaptive repetitions and
//! DVFS warm-up detection. Pure logic, tested on synthetic sample streams.

use topoprobe_model::median_sorted;

/// Robust summary of a batch of samples after outlier rejection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Median of the kept samples.
    pub median: f64,
    /// Smallest kept sample.
    pub min: f64,
    /// Relative standard deviation of the kept samples (stdev / mean).
    pub spread: f64,
    /// Samples kept.
    pub kept: usize,
    /// Samples rejected as outliers.
    pub rejected: usize,
}

/// Samples further than this many (normal-scaled) median absolute deviations from the
/// median are outliers.
const OUTLIER_MADS: f64 = 3.5;
/// Relative deviations below this never count as outliers (a batch of nearly equal
/// samples has a MAD of almost zero).
const OUTLIER_FLOOR: f64 = 0.02;

/// Summarizes `samples` (finite, positive values; others are dropped as outliers),
/// rejecting samples far from the median (interrupts, a descheduled partner thread).
/// `None` when no sample is usable.
#[must_use]
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = samples
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let median = median_sorted(&v)?;
    let mut dev: Vec<f64> = v.iter().map(|x| (x - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = 1.4826 * median_sorted(&dev)?;
    let limit = (OUTLIER_MADS * mad).max(OUTLIER_FLOOR * median);
    let kept: Vec<f64> = v
        .iter()
        .copied()
        .filter(|x| (x - median).abs() <= limit)
        .collect();
    let kept_median = median_sorted(&kept)?;
    let n = kept.len() as f64;
    let mean = kept.iter().sum::<f64>() / n;
    let var = kept.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    Some(Summary {
        median: kept_median,
        min: kept[0],
        spread: var.sqrt() / mean,
        kept: kept.len(),
        rejected: samples.len() - kept.len(),
    })
}

/// How many batches to measure, and when a batch is good enough (the paper's defaults:
/// spread under 7%, raised on each retry up to 14%).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepetitionPolicy {
    /// Samples per batch.
    pub reps: usize,
    /// Largest spread accepted on the first batch.
    pub max_stdev: f64,
    /// Largest spread accepted on the last batch.
    pub max_stdev_limit: f64,
    /// Batches measured at most.
    pub attempts: usize,
}

impl Default for RepetitionPolicy {
    fn default() -> Self {
        Self {
            reps: 25,
            max_stdev: 0.07,
            max_stdev_limit: 0.14,
            attempts: 5,
        }
    }
}

impl RepetitionPolicy {
    /// Spread accepted on batch `attempt` (0-based): from `max_stdev` up to
    /// `max_stdev_limit` in equal steps.
    #[must_use]
    pub fn threshold(&self, attempt: usize) -> f64 {
        let limit = self.max_stdev_limit.max(self.max_stdev);
        if self.attempts <= 1 {
            return self.max_stdev;
        }
        let step = (limit - self.max_stdev) / (self.attempts - 1) as f64;
        (self.max_stdev + step * attempt as f64).min(limit)
    }
}

/// What to do after a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The batch is good: its summary, and the batches it took.
    Done(Summary, usize),
    /// Measure another batch.
    Retry,
    /// Every batch's spread stayed above its threshold: the pair is kept with its best
    /// batch (the one of least spread), flagged as noisy.
    Noisy {
        /// The batch of least spread.
        best: Summary,
        /// Batches measured.
        batches: usize,
        /// The threshold of the last batch (the most the policy accepts).
        limit: f64,
    },
    /// No batch had a usable sample (every sample zero or not finite): nothing to keep.
    NoSample {
        /// Batches measured.
        batches: usize,
    },
}

/// Adaptive repetitions: feed it batches until it says [`Verdict::Done`],
/// [`Verdict::Noisy`] or [`Verdict::NoSample`].
#[derive(Debug, Clone)]
pub struct Adaptive {
    policy: RepetitionPolicy,
    attempt: usize,
    best: Option<Summary>,
}

impl Adaptive {
    /// Starts with no batch seen.
    #[must_use]
    pub fn new(policy: RepetitionPolicy) -> Self {
        Self {
            policy,
            attempt: 0,
            best: None,
        }
    }

    /// Judges one batch of samples. After [`RepetitionPolicy::attempts`] batches none of
    /// which was good, the pair is not failed: the verdict is [`Verdict::Noisy`] with the
    /// best batch, or [`Verdict::NoSample`] when no batch had a usable sample.
    pub fn judge(&mut self, batch: &[f64]) -> Verdict {
        let threshold = self.policy.threshold(self.attempt);
        self.attempt += 1;
        let summary = summarize(batch);
        if let Some(s) = summary {
            // Half the batch must survive outlier rejection.
            if s.spread <= threshold && s.kept * 2 >= batch.len() {
                return Verdict::Done(s, self.attempt);
            }
            if self.best.is_none_or(|b| s.spread < b.spread) {
                self.best = Some(s);
            }
        }
        if self.attempt < self.policy.attempts.max(1) {
            return Verdict::Retry;
        }
        match self.best {
            Some(best) => Verdict::Noisy {
                best,
                batches: self.attempt,
                limit: threshold,
            },
            None => Verdict::NoSample {
                batches: self.attempt,
            },
        }
    }
}

/// DVFS warm-up: batch medians are fed until two consecutive ones agree; the first batch
/// against the steady state tells whether the core was ramping up its frequency.
#[derive(Debug, Clone, Default)]
pub struct WarmUp {
    first: Option<f64>,
    last: Option<f64>,
    batches: usize,
}

/// Consecutive batch medians within this relative difference are steady.
const STEADY: f64 = 0.03;
/// A first batch this much slower than the steady state is a frequency ramp.
const RAMP: f64 = 1.10;
/// Warm-up batches at most.
pub const MAX_WARMUP_BATCHES: usize = 24;

impl WarmUp {
    /// Adds a batch median; `true` once the measurements are steady (or after
    /// [`MAX_WARMUP_BATCHES`]).
    pub fn observe(&mut self, batch_median: f64) -> bool {
        self.batches += 1;
        if self.first.is_none() {
            self.first = Some(batch_median);
        }
        let steady = self
            .last
            .is_some_and(|l| l > 0.0 && ((batch_median - l) / l).abs() <= STEADY);
        self.last = Some(batch_median);
        steady || self.batches >= MAX_WARMUP_BATCHES
    }

    /// The first batch's slowdown against the last one when it shows a ramp (e.g. 1.8 for
    /// a core that started 80% slower).
    #[must_use]
    pub fn ramp(&self) -> Option<f64> {
        match (self.first, self.last) {
            (Some(f), Some(l)) if l > 0.0 && f / l >= RAMP => Some(f / l),
            _ => None,
        }
    }

    /// Batches observed.
    #[must_use]
    pub fn batches(&self) -> usize {
        self.batches
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outliers_are_rejected_and_the_rest_summarized() {
        let mut s: Vec<f64> = (0..30).map(|i| 50.0 + f64::from(i % 5) * 0.2).collect();
        s.push(400.0); // the partner thread was descheduled
        s.push(f64::NAN);
        let sum = summarize(&s).expect("summary");
        assert_eq!(sum.rejected, 2);
        assert_eq!(sum.kept, 30);
        assert!((sum.median - 50.4).abs() < 1e-9, "{}", sum.median);
        assert_eq!(sum.min, 50.0);
        assert!(sum.spread < 0.01);
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN, -1.0]).is_none());
    }

    #[test]
    fn thresholds_rise_from_seven_to_fourteen_percent() {
        let p = RepetitionPolicy::default();
        assert!((p.threshold(0) - 0.07).abs() < 1e-12);
        assert!((p.threshold(p.attempts - 1) - 0.14).abs() < 1e-12);
        assert!(p.threshold(2) > p.threshold(1));
        assert!((p.threshold(99) - 0.14).abs() < 1e-12);
    }

    /// Deterministic noise: a batch whose relative spread is about `spread`.
    fn batch(center: f64, spread: f64) -> Vec<f64> {
        (0..25)
            .map(|i| center * (1.0 + spread * 1.7 * (f64::from(i % 5) - 2.0) / 2.0))
            .collect()
    }

    #[test]
    fn a_quiet_pair_is_done_at_once() {
        let mut a = Adaptive::new(RepetitionPolicy::default());
        match a.judge(&batch(80.0, 0.02)) {
            Verdict::Done(s, 1) => assert!((s.median - 80.0).abs() < 1.0),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_noisy_pair_is_retried_and_accepted_under_a_raised_threshold() {
        let mut a = Adaptive::new(RepetitionPolicy::default());
        // About 11% spread: above 7%, under the raised thresholds of later batches.
        let noisy = batch(80.0, 0.11);
        assert!(summarize(&noisy).expect("s").spread > 0.07);
        let mut verdicts = Vec::new();
        loop {
            let v = a.judge(&noisy);
            verdicts.push(v.clone());
            if v != Verdict::Retry {
                break;
            }
        }
        assert!(verdicts.len() > 1, "{verdicts:?}");
        assert!(matches!(verdicts.last(), Some(Verdict::Done(_, n)) if *n > 1));
    }

    /// Feeds `batch` until the verdict is not [`Verdict::Retry`] (at most 10 times).
    fn judge_until_final(a: &mut Adaptive, batch: &[f64]) -> Verdict {
        let mut last = Verdict::Retry;
        for _ in 0..10 {
            last = a.judge(batch);
            if last != Verdict::Retry {
                break;
            }
        }
        last
    }

    #[test]
    fn a_hopeless_pair_is_kept_with_its_best_batch_and_flagged() {
        let mut a = Adaptive::new(RepetitionPolicy::default());
        let wild = batch(80.0, 0.5);
        match judge_until_final(&mut a, &wild) {
            Verdict::Noisy {
                best,
                batches,
                limit,
            } => {
                assert_eq!(batches, 5);
                assert!((limit - 0.14).abs() < 1e-12, "{limit}");
                assert!(best.spread > limit, "{best:?}");
                assert!((best.median - 80.0).abs() < 10.0, "{best:?}");
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn the_best_of_the_noisy_batches_is_kept() {
        let policy = RepetitionPolicy {
            attempts: 3,
            ..RepetitionPolicy::default()
        };
        let mut a = Adaptive::new(policy);
        assert_eq!(a.judge(&batch(80.0, 0.45)), Verdict::Retry);
        assert_eq!(a.judge(&batch(90.0, 0.3)), Verdict::Retry);
        match a.judge(&batch(100.0, 0.5)) {
            Verdict::Noisy { best, batches, .. } => {
                assert_eq!(batches, 3);
                assert!((best.median - 90.0).abs() < 5.0, "{best:?}");
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn batches_without_a_usable_sample_give_none() {
        let mut a = Adaptive::new(RepetitionPolicy::default());
        assert_eq!(
            judge_until_final(&mut a, &[0.0, f64::NAN, -3.0]),
            Verdict::NoSample { batches: 5 }
        );
    }

    #[test]
    fn a_frequency_ramp_is_detected_and_a_steady_core_is_not() {
        let mut w = WarmUp::default();
        let medians = [180.0, 140.0, 110.0, 100.0, 99.0];
        let steady_at = medians.iter().position(|&m| w.observe(m));
        assert_eq!(steady_at, Some(4));
        assert!((w.ramp().expect("ramp") - 180.0 / 99.0).abs() < 1e-9);

        let mut w = WarmUp::default();
        assert!(!w.observe(100.0));
        assert!(w.observe(101.0));
        assert_eq!(w.ramp(), None);

        let mut w = WarmUp::default();
        let never = (0..100).position(|i| w.observe(if i % 2 == 0 { 100.0 } else { 150.0 }));
        assert_eq!(never, Some(MAX_WARMUP_BATCHES - 1));
    }
}
