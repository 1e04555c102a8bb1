//! Options of an inference run.

use topoprobe_model::{LatencyUnit, Machine, OsView, Source};

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
    /// What the operating system says about the rows' cores and shared caches, used beside
    /// the latencies (see [`OsEvidence`]); `None` for a matrix file.
    pub os_evidence: Option<OsEvidence>,
}

/// Evidence from the operating system about the structure of the measured contexts, used
/// by [`crate::infer`] *beside* the latencies.
///
/// Every set lists **rows of the latency table** (not OS CPU numbers), each at least two.
/// Where the latencies agree, the set only confirms them; where they barely show a
/// structure (E-core clusters 47 ns inside against 46.5 ns between), the set is taken from
/// the OS and the result says so (`Origin::Os` for the SMT fact, a `groups_from_os`
/// warning and the group level's basis for cache groups); where they disagree, the result
/// reports the disagreement as an `unresolved` entry of the level, never silently:
/// SMT siblings follow the OS (the hardware enumerates its threads), a shared cache that
/// crosses a group the latencies clearly show is left out.
///
/// On Linux, [`OsEvidence::from_os_view`] fills it from
/// `/sys/devices/system/cpu/cpuN/topology/thread_siblings_list` (the SMT siblings) and
/// `/sys/devices/system/cpu/cpuN/cache/indexK/{level,type,shared_cpu_list}` (the shared
/// data and unified caches below the last level), as [`OsView`] reads them; by hand:
///
/// ```
/// use topoprobe_infer::{InferOptions, OsEvidence, SharedCache};
///
/// // Rows 0-7 are CPUs 0-7: four SMT cores (siblings 2k, 2k+1), then...
/// let evidence = OsEvidence {
///     smt_siblings: vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]],
///     // ...rows 8-15 are E-cores in two clusters sharing an L2 each.
///     shared_caches: vec![
///         SharedCache { level: 2, rows: (8..12).collect() },
///         SharedCache { level: 2, rows: (12..16).collect() },
///     ],
/// };
/// let opts = InferOptions { os_evidence: Some(evidence), ..InferOptions::default() };
/// assert!(opts.os_evidence.is_some());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OsEvidence {
    /// Sets of rows the OS says are hardware threads of one core (SMT siblings).
    pub smt_siblings: Vec<Vec<usize>>,
    /// Caches the OS says several rows share, each with its level (private caches of one
    /// core and caches shared by every row add nothing and may be left out).
    pub shared_caches: Vec<SharedCache>,
}

/// One cache instance shared by several rows of the latency table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCache {
    /// Cache level (2 for an L2).
    pub level: u8,
    /// The rows sharing it.
    pub rows: Vec<usize>,
}

impl OsEvidence {
    /// The evidence of the operating system's view of this machine, for a table whose row
    /// `i` measured CPU `cpus[i]`: the SMT sibling sets ([`OsView::cores`]) and the sets of
    /// rows sharing a data or unified cache of levels 2 and up ([`OsView::cache_groups`]),
    /// each restricted to the measured CPUs and kept when it holds at least two rows and
    /// not all of them.
    #[must_use]
    pub fn from_os_view(os: &OsView, cpus: &[u32]) -> Self {
        let rows = |set: &[u32]| -> Vec<usize> {
            let mut r: Vec<usize> = set
                .iter()
                .filter_map(|c| cpus.iter().position(|x| x == c))
                .collect();
            r.sort_unstable();
            r.dedup();
            r
        };
        let useful = |r: &Vec<usize>| r.len() >= 2 && r.len() < cpus.len();
        let smt_siblings = os.cores().iter().map(|c| rows(c)).filter(useful).collect();
        let mut levels: Vec<u8> = os
            .caches
            .iter()
            .map(|c| c.level)
            .filter(|&l| l >= 2)
            .collect();
        levels.sort_unstable();
        levels.dedup();
        let mut shared_caches: Vec<SharedCache> = Vec::new();
        for level in levels {
            for set in os.cache_groups(level) {
                let r = rows(&set);
                if useful(&r) && !shared_caches.iter().any(|c| c.rows == r) {
                    shared_caches.push(SharedCache { level, rows: r });
                }
            }
        }
        Self {
            smt_siblings,
            shared_caches,
        }
    }
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
            os_evidence: None,
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
