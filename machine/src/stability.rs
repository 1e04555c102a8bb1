//! Guests whose vCPUs move: what a measurement sees in a virtual machine is the host's
//! placement of the vCPUs at that moment, and the host may move them between its cores,
//! dies and SMT siblings during the run or between runs.
//!
//! A [`Monitor`] keeps reference pairs from the latency table (one per latency class, at
//! most [`MAX_REFERENCES`]) and re-measures them between the phases of the run (after the
//! table, after the SMT probe, before each plugin step, at the end). [`Monitor::findings`]
//! compares what they measured with the level the inferred topology gives each pair;
//! [`compare_saved`] compares the description with the one saved by the last run on this
//! machine; [`smt_findings`] compares the SMT probe's verdicts at the start and the end of
//! the run and with the OS's sibling lists. [`apply`] writes every finding into the
//! description as an `unstable_topology` warning and an unresolved level, so that it says
//! which levels moved and by how much instead of describing one moment with confidence.

use topoprobe_infer::Collected;
use topoprobe_measure::smt::SmtTest;
use topoprobe_model::{
    median, ContextId, LatencyMatrix, OsView, PairLatency, Role, StructureLevel, Topology,
    Unresolved, Warning, WarningKind,
};

/// Reference pairs kept at most.
pub const MAX_REFERENCES: usize = 4;
/// Two measured latencies further apart than this ratio are different latency classes.
const CLASS_GAP: f64 = 1.3;
/// A reference pair that measures further than this ratio from its level has moved.
pub const MOVED: f64 = 1.5;
/// Confidence left to a level found unstable.
const UNSTABLE_CONFIDENCE: f64 = 0.2;

/// One measurement of a reference pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The phase it was measured after (`pairs` for the table's own value).
    pub phase: String,
    /// Latency in ns, or why it could not be measured.
    pub ns: Result<f64, String>,
}

/// A pair re-measured through the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// Rows of the table (indices of the measured CPUs).
    pub rows: (usize, usize),
    /// OS CPU numbers.
    pub cpus: (u32, u32),
    /// Its measurements, in the order of the run.
    pub checks: Vec<Check>,
}

/// Something that moved, and by how much.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The structural level it makes uncertain.
    pub level: StructureLevel,
    /// What was seen, with the numbers.
    pub message: String,
}

/// The reference pairs of a run and their checks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Monitor {
    refs: Vec<Reference>,
}

impl Monitor {
    /// Chooses the reference pairs from a measured table (`measured`: only the measured
    /// pairs; row `i` is OS CPU `cpus[i]`): the measured pairs sorted by latency are cut
    /// into classes where consecutive values differ by more than 1.3×, and the middle pair
    /// of each class is kept (the fastest and the slowest class first when there are more
    /// than [`MAX_REFERENCES`]). Their table values are the first checks (`pairs`).
    #[must_use]
    pub fn new(measured: &LatencyMatrix, cpus: &[u32]) -> Self {
        let n = measured.len().min(cpus.len());
        let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                if let Some(v) = measured.get(a, b).or_else(|| measured.get(b, a)) {
                    if v.is_finite() && v > 0.0 {
                        pairs.push((v, a, b));
                    }
                }
            }
        }
        pairs.sort_by(|x, y| x.0.total_cmp(&y.0).then((x.1, x.2).cmp(&(y.1, y.2))));
        let mut classes: Vec<Vec<(f64, usize, usize)>> = Vec::new();
        for p in pairs {
            match classes.last_mut() {
                Some(c) if c.last().is_some_and(|l| p.0 / l.0 <= CLASS_GAP) => c.push(p),
                _ => classes.push(vec![p]),
            }
        }
        if classes.len() > MAX_REFERENCES {
            // Keep the fastest and the slowest classes, and evenly spaced ones between.
            let k = classes.len();
            let keep: Vec<usize> = (0..MAX_REFERENCES)
                .map(|i| i * (k - 1) / (MAX_REFERENCES - 1))
                .collect();
            classes = classes
                .into_iter()
                .enumerate()
                .filter(|(i, _)| keep.contains(i))
                .map(|(_, c)| c)
                .collect();
        }
        let refs = classes
            .iter()
            .map(|c| {
                let (v, a, b) = c[c.len() / 2];
                Reference {
                    rows: (a, b),
                    cpus: (cpus[a], cpus[b]),
                    checks: vec![Check {
                        phase: "pairs".into(),
                        ns: Ok(v),
                    }],
                }
            })
            .collect();
        Self { refs }
    }

    /// [`Monitor::new`] on the measured pairs of a collected table, leaving out its noisy
    /// pairs: a reference pair whose value the probe could not settle would report its own
    /// noise as a move.
    #[must_use]
    pub fn for_table(collected: &Collected, cpus: &[u32]) -> Self {
        let mut measured = collected.measured.clone();
        for p in collected.noisy() {
            measured.set(p.a, p.b, None);
            measured.set(p.b, p.a, None);
        }
        Self::new(&measured, cpus)
    }

    /// The reference pairs and their checks so far.
    #[must_use]
    pub fn references(&self) -> &[Reference] {
        &self.refs
    }

    /// Re-measures every reference pair with `probe` (rows as in the table) after `phase`.
    /// A pair that cannot be measured is recorded as such, not an error of the run.
    pub fn check(&mut self, probe: &mut dyn PairLatency, phase: &str) {
        self.check_within(probe, phase, f64::INFINITY);
    }

    /// [`Monitor::check`] within `seconds`: once they are spent (a loaded machine makes each
    /// pair slow), the pairs not yet re-measured are left out of this phase. Returns how
    /// many were left out.
    pub fn check_within(
        &mut self,
        probe: &mut dyn PairLatency,
        phase: &str,
        seconds: f64,
    ) -> usize {
        let started = std::time::Instant::now();
        let mut left_out = 0;
        for r in &mut self.refs {
            if started.elapsed().as_secs_f64() >= seconds {
                left_out += 1;
                continue;
            }
            let ns = match probe.measure(r.rows.0, r.rows.1) {
                Ok(Some(s)) => Ok(s.median),
                Ok(None) => Err("the pair could not be measured".to_string()),
                Err(e) => Err(e.0),
            };
            r.checks.push(Check {
                phase: phase.to_string(),
                ns,
            });
        }
        left_out
    }

    /// What moved: each reference pair whose checks spread more than [`MOVED`]×, or that
    /// measured more than [`MOVED`]× away from the level the topology gives it.
    #[must_use]
    pub fn findings(&self, topo: &Topology) -> Vec<Finding> {
        let mut out = Vec::new();
        for r in &self.refs {
            let values: Vec<(&str, f64)> = r
                .checks
                .iter()
                .filter_map(|c| c.ns.as_ref().ok().map(|&v| (c.phase.as_str(), v)))
                .collect();
            let Some(&(lo_phase, lo)) = values.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
                continue;
            };
            let Some(&(hi_phase, hi)) = values.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
                continue;
            };
            let (ca, cb) = (
                topo.context_by_os_id(r.cpus.0),
                topo.context_by_os_id(r.cpus.1),
            );
            let level = ca
                .zip(cb)
                .and_then(|(a, b)| topo.level_of(a, b))
                .and_then(|id| topo.levels().iter().find(|l| l.id == id));
            let (structure, level_text, median) = match level {
                Some(l) => (
                    structure_of(l.role),
                    format!(
                        "level {} ({}, {:.1} ns)",
                        l.id,
                        l.role.as_str(),
                        l.latency.median
                    ),
                    Some(l.latency.median),
                ),
                None => (StructureLevel::Socket, "its level".to_string(), None),
            };
            let spread = hi / lo;
            let away = median.map(|m| (hi / m).max(m / lo));
            if spread <= MOVED && away.is_none_or(|a| a <= MOVED) {
                continue;
            }
            let all: Vec<String> = values
                .iter()
                .map(|(p, v)| format!("{v:.1} ns {}", phase_text(p)))
                .collect();
            out.push(Finding {
                level: structure,
                message: format!(
                    "the reference pair {}–{} of {level_text} measured {lo:.1} ns {} and {hi:.1} ns {} ({spread:.1}×): the latency between these CPUs changed during the run (a host moving vCPUs, or other programs on these CPUs, does this); {}",
                    r.cpus.0,
                    r.cpus.1,
                    phase_text(lo_phase),
                    phase_text(hi_phase),
                    all.join(", ")
                ),
            });
        }
        out
    }
}

/// `in the table`, `after the SMT probe`, `before caches`, `at the end`.
fn phase_text(phase: &str) -> String {
    match phase {
        "pairs" => "in the table".into(),
        "after pairs" => "after the table".into(),
        "smt" => "after the SMT probe".into(),
        "end" => "at the end".into(),
        other => format!("before {other}"),
    }
}

/// The structural level a latency level's role speaks for.
fn structure_of(role: Role) -> StructureLevel {
    match role {
        Role::Smt => StructureLevel::Core,
        Role::Group => StructureLevel::Group,
        Role::Socket | Role::CrossSocket => StructureLevel::Socket,
    }
}

/// Compares the SMT probe's verdicts at the start and at the end of the run (the same
/// pairs, in order), and, in a guest, the final verdict with the OS's sibling lists: a
/// verdict that changed is the host moving the vCPUs; a "shares a core" the guest's OS does
/// not list is the host's placement of the moment, never a silent SMT structure.
#[must_use]
pub fn smt_findings(start: &[SmtTest], end: &[SmtTest], os: Option<&OsView>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (s, e) in start.iter().zip(end) {
        if s.shares_core() != e.shares_core() {
            out.push(Finding {
                level: StructureLevel::Core,
                message: format!(
                    "the SMT probe on CPUs {} and {} found {} at the start ({:.2}×) and {} at the end ({:.2}×): the verdict changed during the run (a host moving vCPUs, or other programs on these CPUs, does this)",
                    s.a,
                    s.b,
                    verdict(s),
                    s.slowdown,
                    verdict(e),
                    e.slowdown
                ),
            });
        }
    }
    if let Some(os) = os {
        for e in end.iter().filter(|t| t.shares_core()) {
            let os_siblings = os
                .cpu(e.a)
                .is_some_and(|c| c.thread_siblings.contains(&e.b));
            if !os_siblings
                && start
                    .iter()
                    .any(|s| s.a == e.a && s.b == e.b && s.shares_core())
            {
                out.push(Finding {
                    level: StructureLevel::Core,
                    message: format!(
                        "the SMT probe found CPUs {} and {} sharing a core ({:.2}×) where this guest's OS lists separate cores: the host runs the two vCPUs on SMT siblings now, and may move them",
                        e.a, e.b, e.slowdown
                    ),
                });
            }
        }
    }
    out
}

fn verdict(t: &SmtTest) -> &'static str {
    if t.shares_core() {
        "a shared core"
    } else {
        "separate cores"
    }
}

/// Compares the description with the one the last run saved for this machine: its
/// structure (sockets, groups, cores, SMT) and the latency of each level.
#[must_use]
pub fn compare_saved(saved: &Topology, topo: &Topology) -> Vec<Finding> {
    let mut out = Vec::new();
    let when = saved
        .provenance()
        .created
        .clone()
        .unwrap_or_else(|| "an earlier run".into());
    let counts = |t: &Topology| (t.num_sockets(), t.num_groups(), t.num_cores(), t.has_smt());
    let (a, b) = (counts(saved), counts(topo));
    if a != b {
        let level = if a.3 != b.3 || a.2 != b.2 {
            StructureLevel::Core
        } else if a.1 != b.1 {
            StructureLevel::Group
        } else {
            StructureLevel::Socket
        };
        out.push(Finding {
            level,
            message: format!(
                "the description saved at {when} has {} socket(s), {} group(s), {} core(s), SMT {}; this run measured {} socket(s), {} group(s), {} core(s), SMT {}: the machine measured differently this time (in a guest, the host may have placed the vCPUs differently)",
                a.0,
                a.1,
                a.2,
                yes_no(a.3),
                b.0,
                b.1,
                b.2,
                yes_no(b.3)
            ),
        });
    }
    // The latency between the same contexts, level by level of this run.
    for l in topo.levels() {
        let pairs = pairs_at(topo, l.id);
        let before: Vec<f64> = pairs
            .iter()
            .filter_map(|&(x, y)| {
                let (ox, oy) = (topo.contexts()[x.0].os_id, topo.contexts()[y.0].os_id);
                let sx = saved.context_by_os_id(ox)?;
                let sy = saved.context_by_os_id(oy)?;
                saved.context_latency(sx, sy)
            })
            .collect();
        // The same median as the level's own (`l.latency.median`), so that a level whose
        // pairs measure as before compares equal whatever their count.
        let Some(old) = median(&before) else {
            continue;
        };
        let now = l.latency.median;
        let ratio = (now / old).max(old / now);
        if ratio > MOVED {
            out.push(Finding {
                level: structure_of(l.role),
                message: format!(
                    "level {} ({}) is {now:.1} ns now and was {old:.1} ns between the same CPUs in the description saved at {when} ({ratio:.1}×): the machine measured differently this time (in a guest, the host may have placed the vCPUs differently)",
                    l.id,
                    l.role.as_str()
                ),
            });
        }
    }
    out
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The context pairs of level `id`.
fn pairs_at(topo: &Topology, id: usize) -> Vec<(ContextId, ContextId)> {
    let n = topo.num_contexts();
    let mut out = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            if topo.level_of(ContextId(a), ContextId(b)) == Some(id) {
                out.push((ContextId(a), ContextId(b)));
            }
        }
    }
    out
}

/// Writes the findings into the description: one `unstable_topology` warning each, one
/// unresolved entry per structural level they concern, and that level's confidence lowered
/// to 0.2.
pub fn apply(topo: &mut Topology, findings: &[Finding]) {
    if findings.is_empty() {
        return;
    }
    let v = topo.validation_mut();
    for f in findings {
        v.warnings.push(Warning::new(
            WarningKind::UnstableTopology,
            f.message.clone(),
        ));
    }
    let mut levels: Vec<StructureLevel> = findings.iter().map(|f| f.level).collect();
    levels.sort();
    levels.dedup();
    for level in levels {
        let what: Vec<&str> = findings
            .iter()
            .filter(|f| f.level == level)
            .map(|f| f.message.as_str())
            .collect();
        v.unresolved.push(Unresolved {
            level,
            reason: format!(
                "unstable: latencies that do not change on a quiet, fixed machine changed during the run, so this level describes one moment, not the machine ({}); measure again on a quiet machine (in a guest, with its vCPUs pinned on the host)",
                what.join("; ")
            ),
        });
        match v.confidence.iter_mut().find(|c| c.level == level) {
            Some(c) => {
                c.confidence = c.confidence.min(UNSTABLE_CONFIDENCE);
                c.basis = format!(
                    "unstable: the latencies changed during the run ({})",
                    c.basis
                );
            }
            None => v.confidence.push(topoprobe_model::LevelConfidence {
                level,
                confidence: UNSTABLE_CONFIDENCE,
                basis: "unstable: the latencies changed during the run".into(),
            }),
        }
    }
}

/// Whether a description carries the findings of [`apply`].
#[must_use]
pub fn is_unstable(topo: &Topology) -> bool {
    topo.validation()
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::UnstableTopology)
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::MatrixProbe;

    #[test]
    fn the_checks_keep_within_their_time() {
        let m = LatencyMatrix::from_fn(4, |a, b| Some(if a / 2 == b / 2 { 50.0 } else { 200.0 }));
        let mut monitor = Monitor::new(&m, &[0, 1, 2, 3]);
        let n = monitor.references().len();
        assert!(n >= 2, "{monitor:?}");
        let mut probe = MatrixProbe::new(&m);
        // No time left: every pair of this phase is left out, none measured.
        assert_eq!(monitor.check_within(&mut probe, "smt", 0.0), n);
        // Time enough: every pair measured.
        assert_eq!(monitor.check_within(&mut probe, "end", f64::INFINITY), 0);
        for r in monitor.references() {
            assert!(r.checks.iter().all(|c| c.phase != "smt"), "{r:?}");
            assert_eq!(r.checks.iter().filter(|c| c.phase == "end").count(), 1);
        }
    }
}
