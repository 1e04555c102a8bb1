//! `topoprobe matrix`: the core-to-core latency matrix of this machine.

use serde::{Deserialize, Serialize};

/// Why a pair of the matrix is flagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairFlagKind {
    /// Kept in the matrix: the spread of its samples stayed above the limit after every
    /// retry, so its value is the best estimate there is.
    Noisy,
    /// Missing from the matrix: the probe gave up on it (a partner that stalled twice).
    GivenUp,
}

/// A pair of the matrix measured with a caveat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlaggedPair {
    /// Its row in the matrix (0-based, `row < column`).
    pub row: usize,
    /// Its column in the matrix.
    pub column: usize,
    /// The first CPU (OS number) of the pair.
    pub cpu_a: u32,
    /// The second CPU.
    pub cpu_b: u32,
    /// Why it is flagged.
    pub flag: PairFlagKind,
    /// What happened, in words ("spread 30.0% above the 14.0% limit after 5 batches").
    pub detail: String,
}

/// The one-way latency of every pair of the measured CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixResult {
    /// The CPUs measured (OS numbers): row and column `i` of the matrix is `cpus[i]`.
    pub cpus: Vec<u32>,
    /// One-way latency of every pair, ns: `latency_ns[a][b]` between `cpus[a]` and
    /// `cpus[b]`, symmetric; `null` on the diagonal and for a pair given up. Pairs that were
    /// not measured are filled in from the pairs of their class.
    pub latency_ns: Vec<Vec<Option<f64>>>,
    /// Pairs measured (the others filled in from their class; every pair with `--full`).
    pub pairs_measured: usize,
    /// Pairs of the CPUs in all.
    pub pairs_total: usize,
    /// Wall time of the measurement, seconds.
    pub seconds: f64,
    /// The timer the samples were taken with, for people.
    pub timer: String,
    /// Pairs measured with a caveat (noisy, or given up), by row.
    pub flagged: Vec<FlaggedPair>,
    /// What the budget changed (a quicker probe setting, fewer measurements).
    pub notes: Vec<String>,
}

impl MatrixResult {
    /// Whether the pair of rows `a` and `b` is flagged as noisy.
    #[must_use]
    pub fn is_noisy(&self, a: usize, b: usize) -> bool {
        let (row, column) = (a.min(b), a.max(b));
        self.flagged
            .iter()
            .any(|p| p.flag == PairFlagKind::Noisy && (p.row, p.column) == (row, column))
    }

    /// The flagged pairs of one kind.
    pub fn flagged_as(&self, kind: PairFlagKind) -> impl Iterator<Item = &FlaggedPair> {
        self.flagged.iter().filter(move |p| p.flag == kind)
    }
}
