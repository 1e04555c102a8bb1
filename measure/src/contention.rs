//! Memory-access overhead groups and bandwidth scalability (Servet §III-C, Fig. 6 and 9).
//!
//! The bandwidth of one context copying alone is the reference; pairs copying at the same
//! time show the overhead of what they share (a memory controller, a bus, a ring). Pairs
//! are representatives chosen from the latency topology — from one context outwards, one
//! partner per scope (core, groups, socket, machine) — and each scope that shows an
//! overhead gives its components as groups ([`groups::levels`] clusters the overheads as
//! Servet does).
//!
//! Two contexts of a large socket rarely saturate its memory, so pairs alone often find
//! nothing. The socket curve answers what they cannot: the copy bandwidth of the first
//! context's socket at 1, 2, 4, … threads up to all its contexts (capped by
//! [`ContentionOptions::max_threads`]), threads spread over the socket's cores and groups
//! ([`plan::curve_order`]), is always measured. When no pair shows an overhead and, from
//! some count on, each thread gets less than 90% of the bandwidth alone
//! ([`curve::contention_from`]), the socket's contexts contend: that is a level whose
//! groups are the sockets, with the count in [`ContentionLevel::from_threads`]; otherwise
//! the curve says there is no contention up to that many threads. A level found by pairs
//! gets the socket curve when its group is the socket, and a curve of its own inside its
//! group otherwise.
//!
//! Every measurement is planned from the topology and the options ([`plan`]), and no
//! measurement's working set exceeds [`ContentionOptions::max_total_bytes`].

pub mod curve;
pub mod groups;
pub mod plan;

use std::collections::BTreeMap;

use topoprobe_model::{
    ContentionLevel, ContentionPair, ContentionSection, ContextId, CurvePoint, ScalingPoint,
    SocketCurve, Topology,
};

use crate::cache::shared::{instances, scopes};
use crate::memory::bandwidth::{self, Stream};
use crate::memory::kernel_kinds::{Isa, Kernel};
use crate::memory::MemError;
use plan::{level_curve, measurements, Measurement, Step};

/// Largest working set of one measurement, all threads together, when not told
/// otherwise: 2 GiB.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 2 << 30;

/// What [`measure_contention`] does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContentionOptions {
    /// Working set of each thread, bytes (larger than the last-level cache's share).
    pub bytes_per_thread: u64,
    /// Working set of all threads together, bytes, when it is to stay the same whatever
    /// the thread count (`None`: `bytes_per_thread` times the threads).
    pub total_bytes: Option<u64>,
    /// Largest working set of one measurement, all threads together, bytes: caps
    /// `bytes_per_thread` times the threads.
    pub max_total_bytes: u64,
    /// When the rounds of a measurement stop.
    pub rule: crate::steady::SteadyRule,
    /// Largest thread count of a scalability curve.
    pub max_threads: usize,
}

impl Default for ContentionOptions {
    fn default() -> Self {
        Self {
            bytes_per_thread: 512 << 20,
            total_bytes: None,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            rule: crate::steady::SteadyRule::default(),
            max_threads: 64,
        }
    }
}

impl ContentionOptions {
    /// Working set of `threads` threads copying at once, all together, bytes:
    /// `total_bytes`, or `bytes_per_thread` times the threads, at most `max_total_bytes`.
    #[must_use]
    pub fn working_set(&self, threads: usize) -> u64 {
        self.total_bytes
            .unwrap_or_else(|| self.bytes_per_thread.saturating_mul(threads as u64))
            .min(self.max_total_bytes)
    }
}

fn copy(cpus: &[u32], bytes: u64, opts: &ContentionOptions) -> Result<f64, MemError> {
    bandwidth::measure(
        cpus,
        &Stream {
            kernel: Kernel::Copy,
            isa: Isa::detect(),
            non_temporal: false,
            bytes,
            node: None,
            rule: opts.rule,
        },
    )
    .map(|f| f.value)
}

/// Measures the overhead levels, the socket curve and the scalability of one group per
/// level.
///
/// # Errors
///
/// [`MemError`] when a thread cannot be pinned or its buffers allocated.
pub fn measure_contention(
    topo: &Topology,
    opts: &ContentionOptions,
    progress: impl FnMut(&str),
) -> Result<ContentionSection, MemError> {
    let os = |c: &ContextId| topo.contexts().get(c.0).map(|h| h.os_id);
    contention_with(topo, opts, progress, |ctxs, bytes| {
        let cpus: Vec<u32> = ctxs.iter().filter_map(os).collect();
        copy(&cpus, bytes, opts)
    })
}

/// The measurements already made, by contexts and bytes.
struct Made<C> {
    copy: C,
    done: BTreeMap<(Vec<ContextId>, u64), f64>,
}

impl<C: FnMut(&[ContextId], u64) -> Result<f64, MemError>> Made<C> {
    /// The total bandwidth of `m`, measured unless an earlier measurement had its
    /// contexts and bytes.
    fn get(&mut self, m: &Measurement, progress: &mut impl FnMut(&str)) -> Result<f64, MemError> {
        if let Some(&v) = self.done.get(&m.key()) {
            return Ok(v);
        }
        progress(&m.step.describe(&m.contexts));
        let v = (self.copy)(&m.contexts, m.bytes)?;
        self.done.insert(m.key(), v);
        Ok(v)
    }
}

/// [`measure_contention`] with the bandwidth measurement given: `copy(contexts, bytes)`
/// is the total copy bandwidth of those contexts copying at once over `bytes` in all
/// (tests drive it with a simulated memory system). It makes [`plan::measurements`] in
/// order, then the curves of levels found in groups other than the socket curve's.
///
/// # Errors
///
/// What `copy` returns, or [`MemError::NoCpus`] for a topology without contexts.
pub fn contention_with(
    topo: &Topology,
    opts: &ContentionOptions,
    mut progress: impl FnMut(&str),
    copy: impl FnMut(&[ContextId], u64) -> Result<f64, MemError>,
) -> Result<ContentionSection, MemError> {
    let Some(first) = topo.contexts().first().map(|h| h.id) else {
        return Err(MemError::NoCpus);
    };
    let mut made = Made {
        copy,
        done: BTreeMap::new(),
    };
    let planned = measurements(topo, opts);
    let mut alone = 0.0;
    let mut pairs = Vec::new();
    let mut per_scope = Vec::new();
    let mut scope_list = scopes(topo, first).into_iter();
    let mut curve_points = Vec::new();
    for m in &planned {
        let total = made.get(m, &mut progress)?;
        match m.step {
            Step::Alone => {
                alone = total;
                curve_points.push(CurvePoint {
                    threads: 1,
                    gbps: total,
                });
            }
            Step::Pair { .. } => {
                let both = total / 2.0;
                let pair = ContentionPair {
                    a: first,
                    b: m.contexts.get(1).copied().unwrap_or(first),
                    gbps: both,
                    overhead: alone / both,
                };
                pairs.push(pair);
                if let Some(scope) = scope_list.next() {
                    per_scope.push((scope, pair));
                }
            }
            Step::Curve { .. } | Step::LevelCurve { .. } => {}
        }
    }
    // The socket curve, its counts measured above (or, for a count whose contexts a
    // pair had, by that pair).
    let socket_curve = plan::curve_contexts(topo).map(|(socket, order)| {
        for n in plan::thread_counts(order.len(), opts.max_threads) {
            if n == 1 {
                continue;
            }
            let key = Measurement {
                step: Step::Curve { threads: n },
                contexts: order[..n].to_vec(),
                bytes: opts.working_set(n),
            }
            .key();
            if let Some(&gbps) = made.done.get(&key) {
                curve_points.push(CurvePoint { threads: n, gbps });
            }
        }
        SocketCurve {
            socket,
            contention_from: curve::contention_from(alone, &curve_points),
            contexts: order,
            points: curve_points.clone(),
        }
    });
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
    // No pair showed an overhead: the socket curve says whether the socket's contexts
    // contend, and from how many threads.
    if let (true, Some(c)) = (levels.is_empty(), &socket_curve) {
        if let Some(k) = c.contention_from {
            levels.push(ContentionLevel {
                overhead: curve::overhead_at_largest(alone, &c.points).unwrap_or(1.0),
                groups: topo.sockets().iter().map(|s| s.contexts.clone()).collect(),
                from_threads: Some(k),
            });
        }
    }
    let scalability = scalability(
        first,
        &levels,
        socket_curve.as_ref(),
        opts,
        &mut made,
        &mut progress,
        alone,
    )?;
    Ok(ContentionSection {
        alone_gbps: alone,
        pairs,
        levels,
        scalability,
        socket_curve,
    })
}

/// The curve of each level inside its group that holds `first` (its first group
/// otherwise): the socket curve's points when that group is the curve's socket, new
/// measurements otherwise.
fn scalability<C: FnMut(&[ContextId], u64) -> Result<f64, MemError>>(
    first: ContextId,
    levels: &[ContentionLevel],
    socket_curve: Option<&SocketCurve>,
    opts: &ContentionOptions,
    made: &mut Made<C>,
    progress: &mut impl FnMut(&str),
    alone: f64,
) -> Result<Vec<ScalingPoint>, MemError> {
    let mut out = Vec::new();
    for (li, level) in levels.iter().enumerate() {
        let Some((gi, group)) = level
            .groups
            .iter()
            .enumerate()
            .find(|(_, g)| g.contains(&first))
            .or_else(|| level.groups.first().map(|g| (0, g)))
        else {
            continue;
        };
        let point = |threads: usize, gbps: f64| ScalingPoint {
            level: li,
            group: gi,
            threads,
            gbps,
        };
        let mut sorted = group.clone();
        sorted.sort_unstable();
        let on_curve = socket_curve.filter(|c| {
            let mut s = c.contexts.clone();
            s.sort_unstable();
            s == sorted
        });
        if let Some(c) = on_curve {
            out.extend(c.points.iter().map(|p| point(p.threads, p.gbps)));
            continue;
        }
        out.push(point(1, alone));
        for m in level_curve(li, group, opts) {
            let gbps = made.get(&m, progress)?;
            out.push(point(m.contexts.len(), gbps));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
