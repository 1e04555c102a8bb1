//! Memory-access overhead groups and bandwidth scalability (Servet §III-C, Fig. 6 and 9).
//!
//! The bandwidth of one context copying alone is the reference; pairs copying at the same
//! time show the overhead of what they share (a memory controller, a bus, a ring). Pairs
//! are representatives chosen from the latency topology — from one context outwards, one
//! partner per scope (core, groups, socket, machine) — and each scope that shows an
//! overhead gives its components as groups ([`groups::levels`] clusters the overheads as
//! Servet does). Then the effective bandwidth is measured as threads are added inside one
//! group per level.

pub mod groups;

use topoprobe_model::{
    ContentionLevel, ContentionPair, ContentionSection, ContextId, ScalingPoint, Topology,
};

use crate::cache::shared::{instances, scopes};
use crate::memory::bandwidth::{self, Stream};
use crate::memory::kernels::{Isa, Kernel};
use crate::memory::MemError;

/// What [`measure_contention`] does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContentionOptions {
    /// Working set of each thread, bytes (larger than the last-level cache's share).
    pub bytes_per_thread: u64,
    /// Working set of all threads together, bytes, when it is to stay the same whatever
    /// the thread count (`None`: `bytes_per_thread` times the threads).
    pub total_bytes: Option<u64>,
    /// When the rounds of a measurement stop.
    pub rule: crate::steady::SteadyRule,
    /// Largest thread count of the scalability curve.
    pub max_threads: usize,
}

impl Default for ContentionOptions {
    fn default() -> Self {
        Self {
            bytes_per_thread: 512 << 20,
            total_bytes: None,
            rule: crate::steady::SteadyRule::default(),
            max_threads: 64,
        }
    }
}

fn copy(cpus: &[u32], opts: &ContentionOptions) -> Result<f64, MemError> {
    bandwidth::measure(
        cpus,
        &Stream {
            kernel: Kernel::Copy,
            isa: Isa::detect(),
            non_temporal: false,
            bytes: opts
                .total_bytes
                .unwrap_or(opts.bytes_per_thread * cpus.len() as u64),
            node: None,
            rule: opts.rule,
        },
    )
    .map(|f| f.value)
}

/// Measures the overhead levels and the scalability of one group per level.
///
/// # Errors
///
/// [`MemError`] when a thread cannot be pinned or its buffers allocated.
pub fn measure_contention(
    topo: &Topology,
    opts: &ContentionOptions,
    progress: impl FnMut(&str),
) -> Result<ContentionSection, MemError> {
    let os = |c: ContextId| topo.contexts()[c.0].os_id;
    contention_with(topo, opts.max_threads, progress, |ctxs| {
        let cpus: Vec<u32> = ctxs.iter().map(|&c| os(c)).collect();
        copy(&cpus, opts)
    })
}

/// [`measure_contention`] with the bandwidth measurement given: `copy(contexts)` is the
/// total copy bandwidth of those contexts copying at once (tests drive it with a
/// simulated memory system).
///
/// # Errors
///
/// What `copy` returns, or [`MemError::NoCpus`] for a topology without contexts.
pub fn contention_with(
    topo: &Topology,
    max_threads: usize,
    mut progress: impl FnMut(&str),
    mut copy: impl FnMut(&[ContextId]) -> Result<f64, MemError>,
) -> Result<ContentionSection, MemError> {
    let Some(first) = topo.contexts().first().map(|h| h.id) else {
        return Err(MemError::NoCpus);
    };
    progress("bandwidth alone");
    let alone = copy(&[first])?;
    let mut pairs = Vec::new();
    let mut per_scope = Vec::new();
    for scope in scopes(topo, first) {
        progress(&format!("pair {}+{}", first.0, scope.partner.0));
        let both = copy(&[first, scope.partner])? / 2.0;
        let pair = ContentionPair {
            a: first,
            b: scope.partner,
            gbps: both,
            overhead: alone / both,
        };
        pairs.push(pair);
        per_scope.push((scope, pair));
    }
    // Overhead levels from the representatives, then each level's groups from the
    // topology: the components of the widest scope showing that level's overhead.
    let mut levels: Vec<ContentionLevel> = groups::levels(alone, &pairs);
    for level in &mut levels {
        let widest = per_scope
            .iter()
            .filter(|(_, p)| {
                (alone / p.gbps - level.overhead).abs() <= groups::SIMILAR * level.overhead
            })
            .map(|(s, _)| s)
            .next_back();
        if let Some(scope) = widest {
            level.groups = instances(topo, Some(scope));
        }
    }
    let mut scalability = Vec::new();
    for (li, level) in levels.iter().enumerate() {
        let Some(group) = level.groups.first() else {
            continue;
        };
        for n in 1..=group.len().min(max_threads) {
            progress(&format!("scalability level {li}: {n} thread(s)"));
            let gbps = if n == 1 { alone } else { copy(&group[..n])? };
            scalability.push(ScalingPoint {
                level: li,
                group: 0,
                threads: n,
                gbps,
            });
        }
    }
    Ok(ContentionSection {
        alone_gbps: alone,
        pairs,
        levels,
        scalability,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_infer::{infer, InferOptions};
    use topoprobe_model::LatencyMatrix;

    #[test]
    fn a_simulated_two_socket_machine_has_one_overhead_level_per_socket() {
        // 2 sockets × 4 cores; each socket's memory controller gives 20 GB/s in all, one
        // core alone gets 10 GB/s: two cores of a socket share, cores of two sockets not.
        let lat = LatencyMatrix::from_fn(8, |a, b| {
            Some(if a == b {
                0.0
            } else if a / 4 == b / 4 {
                40.0
            } else {
                150.0
            })
        });
        let topo = infer(&lat, &InferOptions::default()).unwrap();
        let sim = |ctxs: &[ContextId]| -> Result<f64, MemError> {
            let per_socket = |s: usize| ctxs.iter().filter(|c| c.0 / 4 == s).count() as f64;
            Ok((0..2).map(|s| (per_socket(s) * 10.0).min(15.0)).sum())
        };
        let c = contention_with(&topo, 8, |_| {}, sim).unwrap();
        assert_eq!(c.alone_gbps, 10.0);
        assert_eq!(c.pairs.len(), 2, "{:?}", c.pairs);
        assert_eq!(c.levels.len(), 1, "{:?}", c.levels);
        let ids: Vec<Vec<usize>> = c.levels[0]
            .groups
            .iter()
            .map(|g| g.iter().map(|x| x.0).collect())
            .collect();
        assert_eq!(ids, [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert!((c.levels[0].overhead - 10.0 / 7.5).abs() < 1e-9);
        let curve: Vec<f64> = c.scalability.iter().map(|p| p.gbps).collect();
        assert_eq!(curve, [10.0, 15.0, 15.0, 15.0]);
    }
}
