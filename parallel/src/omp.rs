//! OpenMP by policy: the `OMP_PLACES`, `OMP_PROC_BIND` and `OMP_NUM_THREADS` of each
//! parallel region of a program from its placement policy (paper §7.4, where libmctop's
//! pool switches policies between regions).
//!
//! OpenMP runtimes (GCC's libgomp, LLVM's libomp) read `OMP_PLACES` once, at start-up, so
//! one process cannot change it between regions. The regions of one process change policy
//! through the C API's pool instead (`tp_pool_set_policy` before the region,
//! `tp_pool_pin` at its start: `capi/examples/openmp.c`); a program run once per phase takes
//! the phase's environment from [`regions`]. `docs/OPENMP.md` shows both with libgomp and
//! libomp.

use topoprobe_model::Topology;
use topoprobe_place::{export, plan, Request};

use crate::error::ParallelError;

/// One region's OpenMP environment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RegionEnv {
    /// The region's name.
    pub name: String,
    /// The policy, as named on the command line.
    pub policy: String,
    /// `NAME=value` pairs: `OMP_NUM_THREADS`, `OMP_PLACES` (one place per thread, in the
    /// policy's order) and `OMP_PROC_BIND` (`close`: thread `i` on place `i`).
    pub env: Vec<(String, String)>,
}

/// The environment of each region `(name, request)`.
///
/// # Errors
///
/// When a request cannot be planned on the topology.
pub fn regions(
    topo: &Topology,
    regions: &[(String, Request)],
) -> Result<Vec<RegionEnv>, ParallelError> {
    regions
        .iter()
        .map(|(name, req)| {
            let p = plan(topo, req)?;
            Ok(RegionEnv {
                name: name.clone(),
                policy: req.policy.to_string(),
                env: export::omp_env(topo, &p),
            })
        })
        .collect()
}

/// The `OMP_PLACES` value of a request: `{3},{7},{4}` (empty for an unpinned policy).
///
/// # Errors
///
/// When the request cannot be planned on the topology.
pub fn places(topo: &Topology, req: &Request) -> Result<String, ParallelError> {
    let p = plan(topo, req)?;
    Ok(export::omp_env(topo, &p)
        .into_iter()
        .find(|(k, _)| k == "OMP_PLACES")
        .map(|(_, v)| v)
        .unwrap_or_default())
}
