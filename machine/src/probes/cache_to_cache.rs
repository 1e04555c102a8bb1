//! Cache-to-cache transfers (`mem --c2c`, the `c2c` plugin), planned from the topology
//! ([`cache_to_cache::plan`]) and run with the kernels `bench line-ops` runs too
//! ([`topoprobe_measure::cache_to_cache`]), with what makes the figures a guest's said.

use std::path::Path;

use topoprobe_measure::cache_to_cache::{self, C2cError, C2cPlan};
use topoprobe_model::results::cache_to_cache::CacheToCacheResult;

/// Runs the planned transfers, naming each step to `step`; in a virtual machine, warns that
/// the distances are the guest's.
///
/// # Errors
///
/// [`C2cError`] when a thread cannot be pinned or a buffer bound to its node.
pub fn run(plan: C2cPlan, step: &mut dyn FnMut(&str)) -> Result<CacheToCacheResult, C2cError> {
    let mut r = cache_to_cache::run(plan, step)?;
    if topoprobe_measure::os::is_virtual_machine(Path::new("/")) == Some(true) {
        r.warnings.push(
            "a virtual machine: the host places the vCPUs and may move them, so a distance \
             (SMT sibling, group, socket) is the guest's description, not necessarily where the \
             host ran the two threads; the home nodes are the guest's nodes"
                .to_string(),
        );
    }
    Ok(r)
}
