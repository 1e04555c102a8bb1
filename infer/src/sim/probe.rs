//! A simulated probe: measures pairs of a [`MachineSpec`] one at a time, with fresh noise on
//! every call and an optional DVFS-like warm-up drift.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::layout::Layout;
use super::spec::{MachineSpec, Noise, SpecError};
use super::{perturb, quantize};
use topoprobe_model::{PairLatency, PairSample, ProbeError};

/// Samples per measured pair unless [`SimProbe::with_samples`] says otherwise.
pub const DEFAULT_SAMPLES: usize = 7;

/// Mixed into the noise seed so that the probe's stream differs from [`MachineSpec::matrix`]'s.
const PROBE_STREAM: u64 = 0x9e37_79b9_7f4a_7c15;

/// A [`PairLatency`] answering from a simulated machine.
///
/// Every call to [`PairLatency::measure`] takes [`SimProbe::with_samples`] samples of the
/// pair: each is the true latency, times the drift factor of that call, times a log-normal
/// error of the spec's `sigma`, rounded to the spec's quantum; with the spec's outlier
/// probability the whole call is multiplied or divided by the outlier factor (a preempted
/// run). The result is the median, the smallest sample and the relative spread (standard
/// deviation over median). Repeated calls differ; the sequence is reproducible from the
/// spec's seed.
///
/// ```
/// use topoprobe_infer::sim::{platforms, Noise, SimProbe};
/// use topoprobe_model::PairLatency;
///
/// let spec = platforms::ivy().with_noise(Noise::lognormal(0.02, 7));
/// let mut probe = SimProbe::new(&spec).unwrap().with_drift(1.3, 100).unwrap();
/// let first = probe.measure(0, 20).unwrap().unwrap();
/// assert!(first.median > 28.0 * 1.1); // cold cores: slower
/// ```
#[derive(Debug, Clone)]
pub struct SimProbe {
    spec: MachineSpec,
    layout: Layout,
    rng: ChaCha8Rng,
    drift: f64,
    drift_pairs: usize,
    samples: usize,
    measured: usize,
}

impl SimProbe {
    /// A probe of `spec`, without drift, taking [`DEFAULT_SAMPLES`] samples per pair.
    ///
    /// # Errors
    ///
    /// Returns [`SpecError`] when the spec is invalid ([`MachineSpec::validate`]).
    pub fn new(spec: &MachineSpec) -> Result<Self, SpecError> {
        spec.validate()?;
        Ok(Self {
            spec: spec.clone(),
            layout: Layout::new(spec),
            rng: ChaCha8Rng::seed_from_u64(spec.noise.seed ^ PROBE_STREAM),
            drift: 1.0,
            drift_pairs: 0,
            samples: DEFAULT_SAMPLES,
            measured: 0,
        })
    }

    /// This probe with a warm-up drift: latencies are scaled by a factor that starts at
    /// `drift` (for example 1.3) and decreases linearly to 1 over the first `pairs`
    /// measurements (as cores leave their low-frequency states).
    ///
    /// # Errors
    ///
    /// Returns [`SpecError::Drift`] when `drift` is not finite and positive.
    pub fn with_drift(mut self, drift: f64, pairs: usize) -> Result<Self, SpecError> {
        if !(drift.is_finite() && drift > 0.0) {
            return Err(SpecError::Drift(drift));
        }
        self.drift = drift;
        self.drift_pairs = pairs;
        Ok(self)
    }

    /// This probe taking `samples` samples per measured pair (at least 1).
    #[must_use]
    pub fn with_samples(mut self, samples: usize) -> Self {
        self.samples = samples.max(1);
        self
    }

    /// The simulated machine.
    #[must_use]
    pub fn spec(&self) -> &MachineSpec {
        &self.spec
    }

    /// Number of measurements made so far.
    #[must_use]
    pub fn measurements(&self) -> usize {
        self.measured
    }

    /// The drift factor the next measurement will be scaled by (1 once warmed up).
    #[must_use]
    pub fn drift_factor(&self) -> f64 {
        if self.drift_pairs == 0 || self.measured >= self.drift_pairs {
            return 1.0;
        }
        let left = 1.0 - self.measured as f64 / self.drift_pairs as f64;
        1.0 + (self.drift - 1.0) * left
    }
}

impl PairLatency for SimProbe {
    fn contexts(&self) -> usize {
        self.layout.len()
    }

    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        let n = self.layout.len();
        if a >= n || b >= n {
            return Err(ProbeError(format!(
                "pair ({a}, {b}) is out of range: the simulated machine has {n} contexts"
            )));
        }
        if a == b {
            return Err(ProbeError(format!(
                "pair ({a}, {b}): a context cannot be measured against itself"
            )));
        }
        let base = self.layout.latency(&self.spec, a, b) * self.drift_factor();
        self.measured += 1;
        let noise = &self.spec.noise;
        // The call's outlier decision, drawn by the same rule as a matrix pair's.
        let call = perturb(
            1.0,
            &Noise {
                sigma: 0.0,
                ..*noise
            },
            &mut self.rng,
        );
        let sample_noise = Noise {
            outliers: 0.0,
            ..*noise
        };
        let mut samples: Vec<f64> = (0..self.samples)
            .map(|_| {
                quantize(
                    perturb(base * call, &sample_noise, &mut self.rng),
                    self.spec.quantum,
                    false,
                )
            })
            .collect();
        if samples.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
            return Ok(None);
        }
        samples.sort_by(f64::total_cmp);
        let Some(median) = topoprobe_model::median_sorted(&samples) else {
            return Ok(None);
        };
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        let var = samples.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / samples.len() as f64;
        Ok(Some(PairSample {
            median,
            min: samples[0],
            spread: var.sqrt() / median,
            noisy: None,
        }))
    }
}
