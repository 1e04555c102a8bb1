//! Whether a description is of this machine: the one check every command that acts on or
//! names this machine's CPUs from a description makes (`place`, `cpus`, `run`, `autopin`,
//! `balance`, this machine's saved description, the C API).
//!
//! A description is of another machine when it names CPUs this machine does not have
//! online (`/sys/devices/system/cpu/online`). The CPUs this process may run on are not
//! the measure: a process confined by a cpuset (Slurm, a container) still has its whole
//! machine's description, and places within its cpuset (`run` checks that separately,
//! with the placement's CPUs).

use topoprobe_model::{format_cpu_list, Topology};

/// A description names CPUs this machine does not have: which machine it is of, and the
/// CPUs that differ.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the topology is of another machine ({machine}): CPU{} {} {} not online here (this \
     machine's online CPUs are {})",
    if missing.len() == 1 { "" } else { "s" },
    format_cpu_list(missing),
    if missing.len() == 1 { "is" } else { "are" },
    format_cpu_list(online)
)]
pub struct Elsewhere {
    /// The description's machine, in words ([`machine_of`]).
    pub machine: String,
    /// Its CPUs this machine does not have online.
    pub missing: Vec<u32>,
    /// The CPUs this machine has online.
    pub online: Vec<u32>,
}

/// The machine a description is of, in words, for messages: its host name and CPU
/// model when it records them, and its contexts (`host epyc1, AMD EPYC 7742, 256
/// contexts: CPUs 0-255`).
#[must_use]
pub fn machine_of(topo: &Topology) -> String {
    let m = topo.machine();
    let mut parts = Vec::new();
    if let Some(h) = m.hostname.as_deref().filter(|h| !h.is_empty()) {
        parts.push(format!("host {}", shortened(h)));
    }
    if let Some(c) = m.cpu_model.as_deref().filter(|c| !c.is_empty()) {
        parts.push(shortened(c));
    }
    let cpus: Vec<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
    parts.push(format!(
        "{} context{}: CPUs {}",
        cpus.len(),
        if cpus.len() == 1 { "" } else { "s" },
        shortened(&format_cpu_list(&cpus))
    ));
    parts.join(", ")
}

/// At most 80 characters of `s`, the rest elided.
fn shortened(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// Checks that `topo` is of this machine: every CPU it names is online here.
/// `Ok` when this machine's online CPUs cannot be read (nothing to check against).
///
/// # Errors
///
/// [`Elsewhere`] naming the description's machine and the CPUs this one lacks.
pub fn check_this_machine(topo: &Topology) -> Result<(), Elsewhere> {
    let Ok(online) = crate::affinity::online_cpus() else {
        return Ok(());
    };
    check_against(topo, &online.to_vec())
}

/// [`check_this_machine`] against a given list of online CPUs.
///
/// # Errors
///
/// As [`check_this_machine`].
pub fn check_against(topo: &Topology, online: &[u32]) -> Result<(), Elsewhere> {
    let mut online = online.to_vec();
    online.sort_unstable();
    let mut missing: Vec<u32> = topo
        .contexts()
        .iter()
        .map(|c| c.os_id)
        .filter(|c| online.binary_search(c).is_err())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    missing.sort_unstable();
    Err(Elsewhere {
        machine: machine_of(topo),
        missing,
        online,
    })
}

#[cfg(test)]
mod tests {
    use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};

    use super::*;

    fn four() -> Topology {
        let mut b = TopologyBuilder::new(vec![0, 1, 2, 3], LatencyUnit::Ns);
        let c0 = b.core(vec![ContextId(0), ContextId(2)]);
        let c1 = b.core(vec![ContextId(1), ContextId(3)]);
        b.socket(vec![Member::Core(c0), Member::Core(c1)]);
        let lat = LatencyMatrix::from_fn(4, |a, b| Some(if a % 2 == b % 2 { 8.0 } else { 40.0 }));
        b.latencies(lat.clone(), lat);
        b.build().unwrap()
    }

    #[test]
    fn a_description_with_cpus_this_machine_lacks_is_of_another() {
        let t = four();
        assert!(check_against(&t, &[0, 1, 2, 3, 4]).is_ok());
        let e = check_against(&t, &[0, 1]).unwrap_err();
        assert_eq!(e.missing, [2, 3]);
        let text = e.to_string();
        assert!(
            text.contains("another machine (4 contexts: CPUs 0-3)"),
            "{text}"
        );
        assert!(text.contains("CPUs 2-3 are not online here"), "{text}");
        assert!(text.contains("online CPUs are 0-1"), "{text}");
    }
}
