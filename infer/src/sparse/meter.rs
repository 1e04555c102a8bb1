//! Measurement bookkeeping of a sparse collection: every reading of every pair, the budget,
//! progress, a noise estimate, and drift tracking by a reference pair.
//!
//! **Drift.** Cores leaving low-frequency states make the first measurements slower (the
//! simulator's `with_drift`). The first pair with an accepted reading becomes the
//! *reference pair*; it is measured again every [`REF_INTERVAL`] measurements, and the
//! interval doubles (up to [`REF_INTERVAL_MAX`]) once consecutive reference readings agree.
//! A reading taken at time `t` is scaled by `ref(now) / ref(t)`, where `ref` is the
//! median-of-three smoothed, linearly interpolated reference curve: every value is expressed
//! at the latest clock state, so values measured early and late compare correctly.
//!
//! **Noisy readings.** A reading the probe flags as noisy ([`topoprobe_model::Noisy`]) is
//! not believed on its own: the pair is measured once more at once. A pair with an accepted
//! reading takes its value from its accepted readings only; a pair whose readings are all
//! noisy keeps their median and stays flagged ([`PairValue::noisy`]). A noisy reading never
//! becomes the drift reference. A pair the probe gave up on is missing, with the reason.

use std::collections::{HashMap, HashSet};

use topoprobe_model::{median_in_place, Noisy, PairLatency, PairReading};

use crate::flagged::{FlaggedPair, PairFlag};
use crate::InferError;

/// Measurements between two reference readings while the drift is not settled.
const REF_INTERVAL: usize = 8;
/// Longest interval between reference readings once the drift has settled.
const REF_INTERVAL_MAX: usize = 128;
/// Relative change of the reference below which the drift counts as settled (at least).
const SETTLED_MIN: f64 = 0.005;
/// Error of the median of a pair's samples relative to their spread (the median of about
/// six samples has about half of their standard deviation as error).
const MEDIAN_ERROR: f64 = 0.5;
/// A reference reading this far (log ratio) from its neighbours' median is an outlier.
const REF_OUTLIER: f64 = 0.15;
/// Measurements between two updates of the noise estimate.
const NOISE_EVERY: usize = 32;

/// One reading of a pair.
#[derive(Debug, Clone, Copy)]
struct Reading {
    /// Median latency as measured (not corrected for drift).
    raw: f64,
    /// Relative spread of its samples.
    spread: f64,
    /// Number of measurements made before it (its time).
    at: usize,
    /// Set when the probe flagged the reading as noisy.
    noisy: Option<Noisy>,
}

/// The unordered key of a pair.
fn key(a: usize, b: usize) -> (usize, usize) {
    (a.min(b), a.max(b))
}

/// A measured pair's value and spread.
#[derive(Debug, Clone, Copy)]
pub(super) struct PairValue {
    /// Median of its drift-corrected readings.
    pub value: f64,
    /// Median spread of its readings.
    pub spread: f64,
    /// Whether every reading of the pair was noisy (then `value` is their median);
    /// otherwise only its accepted readings count.
    pub noisy: bool,
}

/// The probe with its readings, budget, progress and drift reference.
pub(super) struct Meter<'a> {
    source: &'a mut dyn PairLatency,
    progress: &'a mut dyn FnMut(usize, usize),
    readings: HashMap<(usize, usize), Vec<Reading>>,
    missing: HashSet<(usize, usize)>,
    gave_up: HashMap<(usize, usize), String>,
    calls: usize,
    budget: usize,
    estimate: usize,
    reference: Option<(usize, usize)>,
    refs: Vec<(usize, f64)>,
    interval: usize,
    next_ref: usize,
    spreads: Vec<f64>,
    noise: f64,
    noise_at: usize,
}

impl<'a> Meter<'a> {
    /// A meter over `source`, making at most `budget` measurements, reporting
    /// `progress(done, estimated_total)` after each.
    pub(super) fn new(
        source: &'a mut dyn PairLatency,
        progress: &'a mut dyn FnMut(usize, usize),
        budget: usize,
        estimate: usize,
    ) -> Self {
        Self {
            source,
            progress,
            readings: HashMap::new(),
            missing: HashSet::new(),
            gave_up: HashMap::new(),
            calls: 0,
            budget,
            estimate: estimate.min(budget),
            reference: None,
            refs: Vec::new(),
            interval: REF_INTERVAL,
            next_ref: 0,
            spreads: Vec::new(),
            noise: 0.0,
            noise_at: 0,
        }
    }

    /// Number of hardware contexts of the source.
    pub(super) fn contexts(&self) -> usize {
        self.source.contexts()
    }

    /// Number of measurements made so far.
    pub(super) fn calls(&self) -> usize {
        self.calls
    }

    /// Number of distinct pairs measured (successfully or not).
    pub(super) fn pairs(&self) -> usize {
        self.readings.len() + self.missing.len()
    }

    /// Raises the estimated total reported to the progress callback.
    pub(super) fn expect_more(&mut self, more: usize) {
        self.estimate = self.estimate.max(self.calls + more).min(self.budget);
    }

    /// Estimated relative error of a measured pair's value (0 for an exact source).
    pub(super) fn noise(&mut self) -> f64 {
        if self.noise_at == 0 || self.calls >= self.noise_at + NOISE_EVERY {
            let mut s = self.spreads.clone();
            self.noise = median_in_place(&mut s).unwrap_or(0.0) * MEDIAN_ERROR;
            self.noise_at = self.calls.max(1);
        }
        self.noise
    }

    /// The pair's value: from earlier readings, or measured now (`None`: missing).
    ///
    /// # Errors
    ///
    /// Returns [`InferError::Probe`] when the probe fails.
    pub(super) fn value(&mut self, a: usize, b: usize) -> Result<Option<f64>, InferError> {
        if let Some(v) = self.known(a, b) {
            return Ok(Some(v));
        }
        if self.missing.contains(&key(a, b)) {
            return Ok(None);
        }
        self.measure(a, b)
    }

    /// The pair's value from earlier readings only.
    pub(super) fn known(&self, a: usize, b: usize) -> Option<f64> {
        self.pair(a, b).map(|p| p.value)
    }

    /// Number of successful readings of the pair.
    pub(super) fn readings_of(&self, a: usize, b: usize) -> usize {
        self.readings.get(&key(a, b)).map_or(0, Vec::len)
    }

    /// Whether the pair has been measured successfully.
    pub(super) fn is_measured(&self, a: usize, b: usize) -> bool {
        self.readings.contains_key(&key(a, b))
    }

    /// The pair's value and spread from earlier readings: of its accepted readings when
    /// it has any, otherwise of its noisy ones (flagged).
    pub(super) fn pair(&self, a: usize, b: usize) -> Option<PairValue> {
        let rs = self.readings.get(&key(a, b))?;
        let noisy = rs.iter().all(|r| r.noisy.is_some());
        let used = rs.iter().filter(|r| noisy || r.noisy.is_none());
        let mut values: Vec<f64> = used.clone().map(|r| self.corrected(r)).collect();
        let mut spreads: Vec<f64> = used.map(|r| r.spread).collect();
        Some(PairValue {
            value: median_in_place(&mut values)?,
            spread: median_in_place(&mut spreads)?,
            noisy,
        })
    }

    /// The flagged pairs, in order: measured pairs whose every reading was noisy, and
    /// missing pairs the probe gave up on.
    pub(super) fn flagged(&self) -> Vec<FlaggedPair> {
        let mut out: Vec<FlaggedPair> = self
            .readings
            .iter()
            .filter_map(|(&(a, b), rs)| {
                let last = rs.last()?.noisy?;
                let p = self.pair(a, b)?;
                p.noisy.then(|| FlaggedPair {
                    a,
                    b,
                    flag: PairFlag::noisy(p.spread, last),
                })
            })
            .chain(self.missing.iter().filter_map(|k| {
                self.gave_up.get(k).map(|why| FlaggedPair {
                    a: k.0,
                    b: k.1,
                    flag: PairFlag::GaveUp(why.clone()),
                })
            }))
            .collect();
        out.sort_by_key(|p| (p.a, p.b));
        out
    }

    /// Every measured pair with its value and spread.
    pub(super) fn measured(&self) -> Vec<((usize, usize), PairValue)> {
        let mut out: Vec<_> = self
            .readings
            .keys()
            .filter_map(|&(a, b)| self.pair(a, b).map(|p| ((a, b), p)))
            .collect();
        out.sort_by_key(|&(k, _)| k);
        out
    }

    /// Measures the pair once more and returns its value: the median of its readings, after
    /// a third reading when the last two disagree by more than `tolerance` (log ratio).
    ///
    /// # Errors
    ///
    /// Returns [`InferError::Probe`] when the probe fails.
    pub(super) fn confirm(
        &mut self,
        a: usize,
        b: usize,
        tolerance: f64,
    ) -> Result<Option<f64>, InferError> {
        let before = self.known(a, b);
        let now = self.measure(a, b)?;
        let last = self.last(a, b);
        if let (Some(x), Some(y)) = (before, last) {
            if (x / y).ln().abs() > tolerance {
                self.measure(a, b)?;
            }
        }
        Ok(self.known(a, b).or(now))
    }

    /// The latest reading of a pair, drift-corrected.
    fn last(&self, a: usize, b: usize) -> Option<f64> {
        let r = self.readings.get(&key(a, b))?.last()?;
        Some(self.corrected(r))
    }

    /// Takes a new reading of the pair (after a reference reading when one is due); a
    /// first reading that is noisy is followed by a second one at once.
    fn measure(&mut self, a: usize, b: usize) -> Result<Option<f64>, InferError> {
        self.track_drift()?;
        self.take(a, b)?;
        if self.readings_of(a, b) == 1 && self.pair(a, b).is_some_and(|p| p.noisy) {
            self.take(a, b)?;
        }
        Ok(self.known(a, b))
    }

    /// One reading of the pair, recorded (or the pair marked missing).
    fn take(&mut self, a: usize, b: usize) -> Result<(), InferError> {
        if let Some(r) = self.call(a, b)? {
            self.record(a, b, r);
            if self.reference.is_none() && r.noisy.is_none() {
                self.reference = Some(key(a, b));
                self.refs.push((r.at, r.raw));
                self.next_ref = self.calls + self.interval;
            }
        } else if !self.is_measured(a, b) {
            self.missing.insert(key(a, b));
        }
        Ok(())
    }

    /// One call to the probe, within the budget.
    fn call(&mut self, a: usize, b: usize) -> Result<Option<Reading>, InferError> {
        if self.calls >= self.budget || a == b {
            return Ok(None);
        }
        let reading = self
            .source
            .measure_pair(a, b)
            .map_err(|e| InferError::Probe { a, b, message: e.0 })?;
        let at = self.calls;
        self.calls += 1;
        (self.progress)(self.calls, self.estimate.max(self.calls));
        let sample = match reading {
            PairReading::Sample(s) => s,
            PairReading::Unavailable => return Ok(None),
            PairReading::GaveUp(why) => {
                self.gave_up.insert(key(a, b), why);
                return Ok(None);
            }
        };
        Ok(
            (sample.median.is_finite() && sample.median > 0.0).then(|| Reading {
                raw: sample.median,
                spread: if sample.spread.is_finite() {
                    sample.spread.max(0.0)
                } else {
                    0.0
                },
                at,
                noisy: sample.noisy,
            }),
        )
    }

    fn record(&mut self, a: usize, b: usize, r: Reading) {
        self.spreads.push(r.spread);
        self.missing.remove(&key(a, b));
        self.readings.entry(key(a, b)).or_default().push(r);
    }

    /// Takes a reading of the reference pair now unless the drift has settled or the last
    /// one is recent, so that the values measured since are interpolated, not extrapolated.
    ///
    /// # Errors
    ///
    /// Returns [`InferError::Probe`] when the probe fails.
    pub(super) fn sync(&mut self) -> Result<(), InferError> {
        let last = self.refs.last().map_or(0, |r| r.0);
        if self.interval == REF_INTERVAL && self.reference.is_some() && self.calls > last + 1 {
            self.next_ref = self.calls;
            self.track_drift()?;
        }
        Ok(())
    }

    /// Takes a reading of the reference pair when one is due.
    fn track_drift(&mut self) -> Result<(), InferError> {
        let Some((a, b)) = self.reference else {
            return Ok(());
        };
        if self.calls < self.next_ref {
            return Ok(());
        }
        if let Some(r) = self.call(a, b)? {
            self.record(a, b, r);
            // A noisy reading of the reference would move every value: it is not one.
            if r.noisy.is_none() {
                self.refs.push((r.at, r.raw));
            }
        }
        self.interval = if self.settled() {
            (self.interval * 2).min(REF_INTERVAL_MAX)
        } else {
            REF_INTERVAL
        };
        self.next_ref = self.calls + self.interval;
        Ok(())
    }

    /// Whether the last three reference readings agree with the three before them.
    fn settled(&mut self) -> bool {
        let n = self.refs.len();
        if n < 6 {
            return false;
        }
        let mut late: Vec<f64> = self.refs[n - 3..].iter().map(|r| r.1).collect();
        let mut early: Vec<f64> = self.refs[n - 6..n - 3].iter().map(|r| r.1).collect();
        let (Some(l), Some(e)) = (median_in_place(&mut late), median_in_place(&mut early)) else {
            return false;
        };
        (l / e).ln().abs() < SETTLED_MIN.max(3.0 * self.noise())
    }

    /// A reading scaled to the latest clock state.
    fn corrected(&self, r: &Reading) -> f64 {
        match (self.reference_at(r.at), self.reference_at(usize::MAX)) {
            (Some(then), Some(now)) if then > 0.0 && now > 0.0 => r.raw * now / then,
            _ => r.raw,
        }
    }

    /// The smoothed reference curve at time `t` (linear between readings).
    fn reference_at(&self, t: usize) -> Option<f64> {
        let n = self.refs.len();
        if n == 0 {
            return None;
        }
        let i = self.refs.partition_point(|r| r.0 <= t);
        if i == 0 {
            return Some(self.smoothed(0));
        }
        if i == n {
            return Some(self.smoothed(n - 1));
        }
        let (t0, t1) = (self.refs[i - 1].0 as f64, self.refs[i].0 as f64);
        let (v0, v1) = (self.smoothed(i - 1), self.smoothed(i));
        let w = if t1 > t0 {
            (t as f64 - t0) / (t1 - t0)
        } else {
            0.0
        };
        Some(v0 + (v1 - v0) * w)
    }

    /// Reference reading `i`, or the median of it and its neighbours when it is far from
    /// that median (an outlier reading).
    fn smoothed(&self, i: usize) -> f64 {
        let n = self.refs.len();
        let own = self.refs[i].1;
        if n < 3 {
            return own;
        }
        let lo = i.saturating_sub(1).min(n - 3);
        let mut w: Vec<f64> = self.refs[lo..lo + 3].iter().map(|r| r.1).collect();
        match median_in_place(&mut w) {
            Some(m) if (own / m).ln().abs() > REF_OUTLIER => m,
            _ => own,
        }
    }
}
