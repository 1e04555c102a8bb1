//! Options of an inference run.

use topoprobe_model::{LatencyUnit, Machine, Source};

/// Options of [`crate::infer`]. Every hint is optional: inference needs none of them.
#[derive(Debug, Clone)]
pub struct InferOptions {
    /// Unit of the latencies.
    pub units: LatencyUnit,
    /// Number of sockets, when known (the live case passes the operating system's node count).
    pub sockets: Option<usize>,
    /// Whether the machine has SMT, when known (the live case passes its SMT probe's verdict).
    pub smt: Option<bool>,
    /// Where the socket hint comes from (`Given` for the command line, `File` for a `.mct`
    /// header).
    pub sockets_origin: topoprobe_model::Origin,
    /// Where the SMT hint comes from.
    pub smt_origin: topoprobe_model::Origin,
    /// Clock frequency in GHz, used to convert the physical bounds (in ns) of the SMT and
    /// socket decisions when latencies are in cycles. Defaults to 2.5 GHz.
    pub ghz: Option<f64>,
    /// Operating-system CPU number of each row (defaults to the row index).
    pub os_ids: Option<Vec<u32>>,
    /// Where the latencies came from.
    pub source: Source,
    /// Identity of the machine, when known.
    pub machine: Machine,
    /// Smallest relative latency difference the table can resolve, when its source knows
    /// it better than the table shows: a table filled in from a sparse measurement holds
    /// exactly equal values where the measurements were not equal, which would make
    /// noise-level differences look significant (see [`crate::Collected::resolution`]).
    pub resolution: Option<f64>,
}

impl Default for InferOptions {
    fn default() -> Self {
        Self {
            units: LatencyUnit::Ns,
            sockets: None,
            smt: None,
            sockets_origin: topoprobe_model::Origin::Given,
            smt_origin: topoprobe_model::Origin::Given,
            ghz: None,
            os_ids: None,
            source: Source::Measured,
            machine: Machine::default(),
            resolution: None,
        }
    }
}

/// Frequency assumed when converting nanosecond bounds into cycles and none is given.
pub const DEFAULT_GHZ: f64 = 2.5;

impl InferOptions {
    /// Converts a bound in nanoseconds into the options' unit.
    #[must_use]
    pub fn ns_to_units(&self, ns: f64) -> f64 {
        match self.units {
            LatencyUnit::Ns => ns,
            LatencyUnit::Cycles => ns * self.ghz.unwrap_or(DEFAULT_GHZ),
        }
    }
}
