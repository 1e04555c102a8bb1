//! The ground truth of a simulated machine, and its comparison with an inferred topology.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use topoprobe_model::Topology;

/// The structure of a simulated machine, in context-id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truth {
    /// Core of every context (cores numbered in canonical order: socket, then tree order).
    pub core: Vec<usize>,
    /// Socket of every context.
    pub socket: Vec<usize>,
    /// Every group strictly between core and socket that contains more than one core and is
    /// not a whole socket, as a sorted list of context ids; the list is sorted and has no
    /// duplicates (nested groups with the same contexts count once).
    pub groups: Vec<Vec<usize>>,
}

impl Truth {
    /// Number of hardware contexts.
    #[must_use]
    pub fn num_contexts(&self) -> usize {
        self.core.len()
    }

    /// Number of cores.
    #[must_use]
    pub fn num_cores(&self) -> usize {
        self.core.iter().collect::<BTreeSet<_>>().len()
    }

    /// Number of sockets.
    #[must_use]
    pub fn num_sockets(&self) -> usize {
        self.socket.iter().collect::<BTreeSet<_>>().len()
    }

    /// The cores as sets of context ids (sorted).
    #[must_use]
    pub fn core_sets(&self) -> Vec<Vec<usize>> {
        partition(&self.core)
    }

    /// The sockets as sets of context ids (sorted).
    #[must_use]
    pub fn socket_sets(&self) -> Vec<Vec<usize>> {
        partition(&self.socket)
    }

    /// Compares an inferred topology with the truth, up to relabelling: the same partition
    /// into cores, the same partition into sockets, and the same set of multi-core groups
    /// (groups of `topo` with a single core, or equal to a whole socket, are ignored).
    ///
    /// # Errors
    ///
    /// Returns a message saying what differs: the number of contexts, or for cores, sockets
    /// or groups the counts and the first set of each side missing from the other.
    pub fn check(&self, topo: &Topology) -> Result<(), String> {
        let n = topo.contexts().len();
        if n != self.num_contexts() {
            return Err(format!(
                "contexts: expected {}, found {n}",
                self.num_contexts()
            ));
        }
        let core: Vec<usize> = topo.contexts().iter().map(|c| c.core.0).collect();
        let socket: Vec<usize> = topo.contexts().iter().map(|c| c.socket.0).collect();
        compare("cores", &self.core_sets(), &partition(&core))?;
        compare("sockets", &self.socket_sets(), &partition(&socket))?;
        let found: BTreeSet<Vec<usize>> = topo
            .groups()
            .iter()
            .filter(|g| g.cores.len() > 1)
            .filter(|g| {
                topo.sockets()
                    .get(g.socket.0)
                    .is_none_or(|s| s.contexts.len() != g.contexts.len())
            })
            .map(|g| {
                let mut v: Vec<usize> = g.contexts.iter().map(|c| c.0).collect();
                v.sort_unstable();
                v
            })
            .collect();
        let found: Vec<Vec<usize>> = found.into_iter().collect();
        compare("multi-core groups", &self.groups, &found)
    }
}

/// The classes of a labelling, as sorted sets of positions, sorted.
fn partition(labels: &[usize]) -> Vec<Vec<usize>> {
    let mut by: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, &l) in labels.iter().enumerate() {
        by.entry(l).or_default().push(i);
    }
    let mut sets: Vec<Vec<usize>> = by.into_values().collect();
    sets.sort();
    sets
}

/// Compares two sorted lists of sets.
fn compare(what: &str, expected: &[Vec<usize>], found: &[Vec<usize>]) -> Result<(), String> {
    let e: BTreeSet<&Vec<usize>> = expected.iter().collect();
    let f: BTreeSet<&Vec<usize>> = found.iter().collect();
    if e == f {
        return Ok(());
    }
    let mut msg = format!("{what}: expected {}, found {}", e.len(), f.len());
    if let Some(missing) = e.difference(&f).next() {
        let _ = write!(msg, "; first expected set not found: {}", list(missing));
    }
    if let Some(extra) = f.difference(&e).next() {
        let _ = write!(msg, "; first found set not expected: {}", list(extra));
    }
    Err(msg)
}

/// A set of context ids in Linux list syntax (`0-3,8`).
fn list(set: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < set.len() {
        let mut j = i;
        while j + 1 < set.len() && set[j + 1] == set[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j == i {
            let _ = write!(out, "{}", set[i]);
        } else {
            let _ = write!(out, "{}-{}", set[i], set[j]);
        }
        i = j + 1;
    }
    format!("{{{out}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_ranges() {
        assert_eq!(list(&[0, 1, 2, 3, 8, 10, 11]), "{0-3,8,10-11}");
        assert_eq!(list(&[]), "{}");
    }

    #[test]
    fn compares_sets() {
        let a = vec![vec![0, 1], vec![2, 3]];
        let b = vec![vec![0, 1], vec![2], vec![3]];
        assert!(compare("cores", &a, &a).is_ok());
        let e = compare("cores", &a, &b).unwrap_err();
        assert!(e.contains("expected 2, found 3"), "{e}");
        assert!(e.contains("{2-3}"), "{e}");
        assert!(e.contains("{2}"), "{e}");
    }
}
