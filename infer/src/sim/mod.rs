//! Simulator of synthetic machines, for tests and benchmarks of the inference.
//!
//! A [`MachineSpec`] describes a machine: each socket is a tree of [`Unit`]s (groups of any
//! depth and size down to cores with their SMT contexts), sockets are linked by a
//! [`CrossSocket`] latency (uniform or multi-hop), contexts are numbered by a [`Numbering`]
//! (Linux's far siblings, adjacent siblings, interleaved sockets, or a seeded shuffle), and
//! measurements suffer [`Noise`] (log-normal error, outliers, directed pairs) and an optional
//! coarse timer (`quantum`). Irregular machines are expressed directly: hybrid CPUs whose
//! E-core clusters are slower inside than outside, the AMD home-node effect
//! (`home_node`), and sockets without cluster structure (`mesh`).
//!
//! From a spec come the measured [`LatencyMatrix`](topoprobe_model::LatencyMatrix)
//! ([`MachineSpec::matrix`]), the noise-free latencies ([`MachineSpec::true_latency`]), the
//! ground truth ([`MachineSpec::truth`], compared with an inferred topology by
//! [`Truth::check`]), and a probe that measures pairs one at a time ([`SimProbe`]);
//! [`Injected`] adds the noise of a busy machine to any probe.
//! [`platforms`] has named machines: the paper's five and modern ones.
//!
//! ```no_run
//! use topoprobe_infer::sim::{platforms, Noise};
//! use topoprobe_infer::infer;
//!
//! let spec = platforms::haswell().with_noise(Noise::lognormal(0.02, 1));
//! let topo = infer(&spec.matrix(), &spec.infer_options())?;
//! match spec.truth().check(&topo) {
//!     Ok(()) => println!("{}: inferred correctly", spec.name),
//!     Err(why) => println!("{}: {why}", spec.name),
//! }
//! # Ok::<(), topoprobe_infer::InferError>(())
//! ```

mod injected;
mod layout;
mod matrices;
pub mod platforms;
mod probe;
mod spec;
mod truth;

use rand::{Rng, RngExt};

pub use injected::{Injected, PairFilter};
pub use probe::{SimProbe, DEFAULT_SAMPLES};
pub use spec::{CrossSocket, MachineSpec, Noise, Numbering, SpecError, Unit};
pub use truth::Truth;

/// A standard normal sample (Box–Muller).
fn standard_normal(rng: &mut impl Rng) -> f64 {
    // 1 - [0, 1) is in (0, 1]: the logarithm is finite.
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// `value` with one draw of `noise`: a log-normal factor, and possibly an outlier factor.
///
/// Always consumes the same number of random values, whatever the parameters, so that two
/// specs differing only in `sigma` have the same outliers.
fn perturb(value: f64, noise: &Noise, rng: &mut impl Rng) -> f64 {
    let z = standard_normal(rng);
    let outlier = rng.random::<f64>() < noise.outliers;
    let up = rng.random::<bool>();
    let mut v = value * (noise.sigma * z).exp();
    if outlier {
        if up {
            v *= noise.outlier_factor;
        } else {
            v /= noise.outlier_factor;
        }
    }
    v
}

/// `value` rounded to a multiple of `quantum`, at least one quantum unless `zeros` (then a
/// value below half a quantum is 0); unchanged for `None`.
fn quantize(value: f64, quantum: Option<f64>, zeros: bool) -> f64 {
    match quantum {
        Some(q) if q > 0.0 && q.is_finite() && value.is_finite() => {
            let steps = (value / q).round();
            if zeros {
                steps * q
            } else {
                steps.max(1.0) * q
            }
        }
        _ => value,
    }
}
