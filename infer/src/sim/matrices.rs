//! The matrices and the ground truth of a [`MachineSpec`], computed from its flattened
//! [`Layout`].

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use topoprobe_model::LatencyMatrix;

use super::layout::Layout;
use super::spec::MachineSpec;
use super::truth::Truth;
use super::{perturb, quantize};

impl MachineSpec {
    /// The noise-free latency from context `a` to context `b` (0 when `a == b`; `NaN` when
    /// either is out of range, or when the spec gives no latency for the pair, as a
    /// cross-socket matrix too small would).
    #[must_use]
    pub fn true_latency(&self, a: usize, b: usize) -> f64 {
        Layout::new(self).latency(self, a, b)
    }

    /// The noise-free, unquantized matrix (diagonal empty). Pairs for which the spec gives
    /// no finite, positive latency (an invalid spec, see [`MachineSpec::validate`]) are
    /// missing.
    #[must_use]
    pub fn true_matrix(&self) -> LatencyMatrix {
        let layout = Layout::new(self);
        LatencyMatrix::from_fn(layout.len(), |a, b| {
            let v = layout.latency(self, a, b);
            (v.is_finite() && v > 0.0).then_some(v)
        })
    }

    /// The measured matrix: the true latencies with the spec's noise, then rounded to the
    /// quantum; the diagonal is empty. Reproducible: the same spec (seed included) always
    /// gives the same matrix. Pairs for which the spec gives no finite, positive latency (an
    /// invalid spec, see [`MachineSpec::validate`]) are missing.
    #[must_use]
    pub fn matrix(&self) -> LatencyMatrix {
        let layout = Layout::new(self);
        let n = layout.len();
        let mut rng = ChaCha8Rng::seed_from_u64(self.noise.seed);
        let mut m = LatencyMatrix::empty(n);
        let finish = |v: f64| {
            let v = quantize(v, self.quantum, self.zeros);
            (v.is_finite() && (v > 0.0 || (self.zeros && v == 0.0))).then_some(v)
        };
        for a in 0..n {
            for b in a + 1..n {
                let slow = layout.slow_block(self, a, b);
                let (ab, ba) = match slow {
                    Some(v) => (v, v),
                    None => (layout.latency(self, a, b), layout.latency(self, b, a)),
                };
                let f = perturb(1.0, &self.noise, &mut rng);
                let g = if self.noise.directed {
                    perturb(1.0, &self.noise, &mut rng)
                } else {
                    f
                };
                m.set(a, b, finish(ab * f));
                m.set(b, a, finish(ba * g));
            }
        }
        m
    }

    /// The ground truth: core, socket and multi-core groups of every context.
    #[must_use]
    pub fn truth(&self) -> Truth {
        Layout::new(self).truth()
    }
}
