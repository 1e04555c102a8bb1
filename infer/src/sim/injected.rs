//! A probe that injects the noise of a busy machine into another probe's readings: pairs
//! flagged noisy (a wide spread, a value off by a factor), pairs the probe gives up on (a
//! partner that stalled). Tests of the collection strategies, the inference and the
//! measuring workflow drive it to show that noise is flagged, never fatal.

use std::collections::HashMap;

use topoprobe_model::{Noisy, PairLatency, PairReading, PairSample, ProbeError};

/// A pair of contexts, smaller first, chosen by a test.
pub type PairFilter = Box<dyn Fn(usize, usize) -> bool>;

/// Passes `inner`'s readings through, but flags the pairs `noisy` chooses (spread
/// [`Injected::spread`], value times [`Injected::scale`], on every reading or on the first
/// only) and gives up on the pairs `given_up` chooses; counts the readings of every pair.
pub struct Injected<P> {
    /// The probe whose readings are passed through.
    pub inner: P,
    /// The pairs made noisy (called with `a < b`).
    pub noisy: PairFilter,
    /// Factor on a noisy pair's value.
    pub scale: f64,
    /// Relative spread of a noisy pair's samples.
    pub spread: f64,
    /// The flag a noisy pair carries.
    pub flag: Noisy,
    /// Only a pair's first reading is noisy (a measurement disturbed once).
    pub first_only: bool,
    /// The pairs the probe gives up on (called with `a < b`).
    pub given_up: PairFilter,
    /// Why it gives up, as the live probe would say it.
    pub given_up_reason: String,
    readings: HashMap<(usize, usize), usize>,
}

impl<P> std::fmt::Debug for Injected<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Injected").finish_non_exhaustive()
    }
}

impl<P: PairLatency> Injected<P> {
    /// `inner` with the pairs `noisy` chooses flagged: spread 40%, value unchanged, missed
    /// limit 14% after 5 batches; no pair given up.
    pub fn new(inner: P, noisy: impl Fn(usize, usize) -> bool + 'static) -> Self {
        Self {
            inner,
            noisy: Box::new(noisy),
            scale: 1.0,
            spread: 0.4,
            flag: Noisy {
                limit: 0.14,
                batches: 5,
            },
            first_only: false,
            given_up: Box::new(|_, _| false),
            given_up_reason: "the partner thread stalled".into(),
            readings: HashMap::new(),
        }
    }

    /// Readings of the pair `(a, b)` so far.
    #[must_use]
    pub fn readings(&self, a: usize, b: usize) -> usize {
        self.readings
            .get(&(a.min(b), a.max(b)))
            .copied()
            .unwrap_or(0)
    }
}

impl<P: PairLatency> PairLatency for Injected<P> {
    fn contexts(&self) -> usize {
        self.inner.contexts()
    }

    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        Ok(self.measure_pair(a, b)?.sample())
    }

    fn measure_pair(&mut self, a: usize, b: usize) -> Result<PairReading, ProbeError> {
        let k = (a.min(b), a.max(b));
        let count = self.readings.entry(k).or_insert(0);
        *count += 1;
        let first = *count == 1;
        if (self.given_up)(k.0, k.1) {
            return Ok(PairReading::GaveUp(self.given_up_reason.clone()));
        }
        let noisy = (self.noisy)(k.0, k.1) && (first || !self.first_only);
        Ok(match self.inner.measure_pair(a, b)? {
            PairReading::Sample(s) if noisy => PairReading::Sample(PairSample {
                median: s.median * self.scale,
                min: s.min * self.scale * 0.5,
                spread: self.spread,
                noisy: Some(self.flag),
            }),
            r => r,
        })
    }
}
