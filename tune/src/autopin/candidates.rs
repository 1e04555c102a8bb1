//! Candidate pinnings: generated from the topology (the distinct placements of the
//! MCTOP policies), from named policies, or given as schedules (`0:1:2:3`, autopin's
//! "CPU of thread i at position i").

use std::collections::HashSet;

use serde::Serialize;
use topoprobe_model::{ContextId, Topology};
use topoprobe_place::{core_kinds, export, plan, CoreKind, Policy, Request};
use topoprobe_sys::CpuSet;

use crate::error::TuneError;

/// One pinning to try: the CPU of thread `i` at position `i`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// Its name (`CON_HWC`, `BALANCE_CORE/2s`, `CON_HWC@e`, or the schedule `0:1`).
    pub name: String,
    /// Operating-system CPUs in thread order.
    pub cpus: Vec<u32>,
    /// Why it is a candidate (what it shares and spreads).
    pub why: String,
}

pub use topoprobe_model::results::autopin::Dropped;

/// The candidates generated from a topology, and the placements left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Generated {
    /// The candidates, in the order they are tried.
    pub candidates: Vec<Candidate>,
    /// The placements left out.
    pub dropped: Vec<Dropped>,
}

/// A policy to try, with an optional socket count, and what it is for.
struct Spec {
    policy: Policy,
    sockets: Option<usize>,
    why: &'static str,
}

/// The policies in the order candidates are tried: the most compact, one per core in a
/// socket, spread over every socket, spread over the sockets and their cache groups,
/// balanced over 2..S sockets, then the rest (which usually repeat one of these).
fn specs(sockets: usize) -> Vec<Spec> {
    let mut v = vec![
        Spec {
            policy: Policy::ConHwc,
            sockets: None,
            why: "compact: threads share cores (SMT) and their caches",
        },
        Spec {
            policy: Policy::ConCoreHwc,
            sockets: None,
            why: "one thread per core of a socket: threads share the socket's caches, not cores",
        },
        Spec {
            policy: Policy::RrCore,
            sockets: None,
            why: "round robin over all sockets: most caches and memory bandwidth",
        },
        Spec {
            policy: Policy::Scatter,
            sockets: None,
            why: "one thread per core, spread over the sockets and over each one's cache groups: most cache per thread",
        },
    ];
    for s in 2..sockets {
        v.push(Spec {
            policy: Policy::BalanceCore,
            sockets: Some(s),
            why: "one thread per core, balanced over fewer sockets",
        });
    }
    for (policy, why) in [
        (
            Policy::ConCore,
            "one thread per core of as few sockets as the cores need",
        ),
        (
            Policy::BalanceHwc,
            "compact inside each socket, balanced across sockets",
        ),
        (
            Policy::BalanceCoreHwc,
            "one thread per core inside each socket, balanced across sockets",
        ),
        (
            Policy::RrHwc,
            "round robin over sockets, compact inside each",
        ),
        (Policy::Power, "least estimated power"),
        (
            Policy::RrScale,
            "round robin up to each socket's bandwidth saturation",
        ),
        (Policy::Sequential, "the OS's CPU numbering"),
    ] {
        v.push(Spec {
            policy,
            sockets: None,
            why,
        });
    }
    for s in 2..=sockets {
        v.push(Spec {
            policy: Policy::BalanceHwc,
            sockets: Some(s),
            why: "compact inside each socket, balanced over this many sockets",
        });
    }
    v
}

/// What makes two placements equivalent on a symmetric machine: threads per socket,
/// per innermost group and per core (sorted), the kinds of cores used, and the latency
/// levels between the threads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Shape {
    per_socket: Vec<usize>,
    per_group: Vec<usize>,
    per_core: Vec<usize>,
    kinds: Vec<(u8, usize)>,
    levels: Vec<Option<usize>>,
}

fn counts<K: Eq + std::hash::Hash>(keys: impl Iterator<Item = K>) -> Vec<usize> {
    let mut m: std::collections::HashMap<K, usize> = std::collections::HashMap::new();
    for k in keys {
        *m.entry(k).or_insert(0) += 1;
    }
    let mut v: Vec<usize> = m.into_values().collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

fn shape(topo: &Topology, ctxs: &[ContextId], kinds: Option<&[CoreKind]>) -> Shape {
    let per_socket = counts(ctxs.iter().map(|&c| topo.socket_of(c)));
    let per_group = counts(
        ctxs.iter()
            .map(|&c| (topo.groups_of(c).first().copied(), topo.socket_of(c))),
    );
    let per_core = counts(ctxs.iter().map(|&c| topo.core_of(c)));
    let mut k: Vec<(u8, usize)> = Vec::new();
    for (kind, code) in [(CoreKind::Performance, 0_u8), (CoreKind::Efficiency, 1)] {
        let n = ctxs
            .iter()
            .filter(|&&c| {
                topo.core_of(c)
                    .and_then(|core| kinds.and_then(|k| k.get(core.index())))
                    == Some(&kind)
            })
            .count();
        if n > 0 {
            k.push((code, n));
        }
    }
    let mut levels = Vec::new();
    for (i, &a) in ctxs.iter().enumerate() {
        for &b in &ctxs[i + 1..] {
            levels.push(topo.level_of(a, b));
        }
    }
    levels.sort_unstable();
    Shape {
        per_socket,
        per_group,
        per_core,
        kinds: k,
        levels,
    }
}

/// The request for `spec` with `threads` threads on the allowed CPUs and core kind.
fn request(
    spec: &Spec,
    threads: usize,
    allowed: Option<&CpuSet>,
    kind: Option<CoreKind>,
) -> Request {
    Request {
        policy: spec.policy,
        threads: Some(threads),
        sockets: spec.sockets,
        kind,
        cpus: allowed.map(CpuSet::to_vec),
    }
}

/// The candidates kept so far and what makes a new one a duplicate.
struct Collector<'a> {
    topo: &'a Topology,
    kinds: Option<Vec<CoreKind>>,
    allowed: Option<&'a CpuSet>,
    threads: usize,
    max: usize,
    out: Generated,
    by_set: Vec<(Vec<u32>, String)>,
    by_shape: Vec<(Shape, String)>,
    names: HashSet<String>,
}

impl Collector<'_> {
    /// Plans `spec` for `planned` threads on CPUs of `kind`, spreads the program's
    /// threads over them (`per` consecutive threads on each, round robin when there are
    /// more), and keeps the result unless it repeats a kept candidate.
    fn consider(&mut self, spec: &Spec, kind: Option<CoreKind>, planned: usize, per: usize) {
        let mut name = spec.policy.name().to_string();
        if let Some(s) = spec.sockets {
            name.push_str(&format!("/{s}s"));
        }
        if let Some(k) = kind {
            name.push('@');
            name.push_str(k.short());
        }
        if per > 1 {
            name.push_str(&format!("*{per}"));
        }
        if !self.names.insert(name.clone()) {
            return;
        }
        let p = match plan(self.topo, &request(spec, planned, self.allowed, kind)) {
            Ok(p) if !p.contexts.is_empty() => p,
            Ok(_) => {
                self.drop(name, "not plannable: it places no thread".into());
                return;
            }
            Err(e) => {
                self.drop(name, format!("not plannable: {e}"));
                return;
            }
        };
        let threads = self.threads;
        let spread = |i: usize| (i / per) % p.contexts.len();
        let planned_cpus = export::cpus(self.topo, &p);
        let cpus: Vec<u32> = (0..threads).map(|i| planned_cpus[spread(i)]).collect();
        let ctxs: Vec<ContextId> = (0..threads).map(|i| p.contexts[spread(i)]).collect();
        let mut set = cpus.clone();
        set.sort_unstable();
        if let Some((_, same)) = self.by_set.iter().find(|(s, _)| *s == set) {
            let reason = format!("the same CPUs as {same}");
            self.drop(name, reason);
            return;
        }
        let sh = shape(self.topo, &ctxs, self.kinds.as_deref());
        if let Some((_, same)) = self.by_shape.iter().find(|(s, _)| *s == sh) {
            let reason = format!("the same shape as {same} (symmetric)");
            self.drop(name, reason);
            return;
        }
        if self.out.candidates.len() >= self.max {
            let reason = format!("beyond --max-candidates {}", self.max);
            self.drop(name, reason);
            return;
        }
        self.by_set.push((set, name.clone()));
        self.by_shape.push((sh, name.clone()));
        let mut why = if per > 1 {
            format!(
                "{per} threads per CPU on {}: threads share CPUs (for threads that mostly wait for each other)",
                plural(p.contexts.len(), "CPU")
            )
        } else {
            spec.why.to_string()
        };
        if per == 1 && threads > p.contexts.len() {
            why.push_str(&format!(
                " ({threads} threads on {}: some share one)",
                plural(p.contexts.len(), "CPU")
            ));
        }
        if let Some(k) = kind {
            why.push_str(&format!(" (on {k} only)"));
        }
        self.out.candidates.push(Candidate { name, cpus, why });
    }

    fn drop(&mut self, name: String, reason: String) {
        self.out.dropped.push(Dropped { name, reason });
    }
}

/// `n` things, with the noun in the plural when `n` is not 1.
fn plural(n: usize, noun: &str) -> String {
    topoprobe_model::format::plural(n, noun)
}

/// Why no placement was possible, each reason once with the placements it applies to
/// (`CON_HWC, RR_CORE: 3 threads asked for, but only 2 hardware contexts are available`).
fn summarize(dropped: &[Dropped]) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for d in dropped {
        let reason = d
            .reason
            .strip_prefix("not plannable: ")
            .unwrap_or(&d.reason);
        // Plan errors start with the policy's name; the rest is what they share.
        let base = d.name.split(['/', '@', '*']).next().unwrap_or(&d.name);
        let reason = reason
            .strip_prefix(base)
            .and_then(|r| r.strip_prefix(": "))
            .unwrap_or(reason)
            .to_string();
        match groups.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, names)) => names.push(&d.name),
            None => groups.push((reason, vec![&d.name])),
        }
    }
    groups
        .iter()
        .map(|(reason, names)| format!("{}: {reason}", names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Generates the default candidates for `threads` threads: the distinct placements of the
/// MCTOP policies (on a hybrid processor, also on P-cores only and E-cores only), on the
/// `allowed` CPUs, deduplicated by CPU set and by shape (threads per socket, group and
/// core, core kinds, latency levels between them), at most `max`. With more threads than
/// allowed CPUs, each policy places as many threads as there are CPUs and the threads
/// share them round robin. When the policies give fewer than two different placements
/// (one socket without SMT, or more threads than CPUs), one where threads share CPUs is
/// added, so that there is something to compare: `CON_HWC*2` (two consecutive threads on
/// each CPU), else `CON_HWC*4` (four)…, down to every thread on one CPU.
///
/// # Errors
///
/// [`TuneError::Usage`] when `threads` or `max` is 0 or no policy can place the threads
/// (each reason said once, with the placements it applies to).
pub fn generate(
    topo: &Topology,
    threads: usize,
    allowed: Option<&CpuSet>,
    max: usize,
) -> Result<Generated, TuneError> {
    if threads == 0 || max == 0 {
        return Err(TuneError::Usage(
            "candidates need at least one thread and --max-candidates of at least 1".into(),
        ));
    }
    let kinds = core_kinds(topo);
    let kind_options: Vec<Option<CoreKind>> = if kinds.is_some() {
        vec![
            None,
            Some(CoreKind::Performance),
            Some(CoreKind::Efficiency),
        ]
    } else {
        vec![None]
    };
    let capacity = topo
        .contexts()
        .iter()
        .filter(|c| allowed.is_none_or(|a| a.contains(c.os_id)))
        .count();
    let planned = threads.min(capacity.max(1));
    let mut c = Collector {
        topo,
        kinds,
        allowed,
        threads,
        max,
        out: Generated {
            candidates: Vec::new(),
            dropped: Vec::new(),
        },
        by_set: Vec::new(),
        by_shape: Vec::new(),
        names: HashSet::new(),
    };
    for spec in specs(topo.num_sockets()) {
        for &kind in &kind_options {
            c.consider(&spec, kind, planned, 1);
        }
    }
    if c.out.candidates.len() < 2 && threads >= 2 {
        let spec = Spec {
            policy: Policy::ConHwc,
            sockets: None,
            why: "",
        };
        let mut per = 2;
        while c.out.candidates.len() < 2 {
            let cpus = threads.div_ceil(per);
            if cpus < planned {
                c.consider(&spec, None, cpus, per);
            }
            if cpus <= 1 {
                break;
            }
            per *= 2;
        }
    }
    let out = c.out;
    if out.candidates.is_empty() {
        return Err(TuneError::Usage(format!(
            "no placement of {threads} threads on the allowed CPUs: {}",
            summarize(&out.dropped)
        )));
    }
    Ok(out)
}

/// Candidates from named policies (`--policies con_core,rr_core`), in the order given;
/// the same CPU list twice is kept once.
///
/// # Errors
///
/// [`TuneError::Usage`] naming the policy that cannot place `threads` threads.
pub fn from_policies(
    topo: &Topology,
    threads: usize,
    allowed: Option<&CpuSet>,
    policies: &[Policy],
) -> Result<Vec<Candidate>, TuneError> {
    let mut out: Vec<Candidate> = Vec::new();
    for &policy in policies {
        let spec = Spec {
            policy,
            sockets: None,
            why: policy.description(),
        };
        let p = plan(topo, &request(&spec, threads, allowed, None)).map_err(|e| {
            TuneError::Usage(format!(
                "--policies: {} cannot place {threads} threads: {e}",
                policy.name()
            ))
        })?;
        if !p.pinned {
            return Err(TuneError::Usage(format!(
                "--policies: {} does not pin threads; it cannot be a candidate",
                policy.name()
            )));
        }
        let cpus = export::cpus(topo, &p);
        if out.iter().any(|c| c.cpus == cpus) {
            continue;
        }
        out.push(Candidate {
            name: policy.name().to_string(),
            cpus,
            why: spec.why.to_string(),
        });
    }
    Ok(out)
}

/// Longest schedule accepted (positions).
pub const MAX_SCHEDULE: usize = 4096;

/// Parses a schedule in autopin's format: the CPU of thread `i` at position `i`,
/// separated by colons (`0:1:2:3`); a single CPU is a one-thread schedule.
///
/// # Errors
///
/// [`TuneError::Usage`] naming the schedule and the position that is not a CPU number.
pub fn parse_schedule(text: &str) -> Result<Vec<u32>, TuneError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(TuneError::Usage(
            "--schedule: empty; give the CPU of each thread, as 0:1:2:3".into(),
        ));
    }
    let parts: Vec<&str> = t.split(':').collect();
    if parts.len() > MAX_SCHEDULE {
        return Err(TuneError::Usage(format!(
            "--schedule: {} positions, more than {MAX_SCHEDULE}",
            parts.len()
        )));
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            p.trim().parse::<u32>().map_err(|_| {
                TuneError::Usage(format!(
                    "--schedule {t:?}: position {i} ({p:?}) is not a CPU number; the format is the CPU of each thread separated by colons, as 0:1:2:3"
                ))
            })
        })
        .collect()
}

/// Candidates from schedules, checked against the topology's CPUs (without a topology:
/// the CPUs the kernel has online) and the allowed ones.
///
/// # Errors
///
/// [`TuneError::Usage`] naming the schedule and the CPU that is not in the topology or not
/// allowed; [`TuneError::Io`] when there is no topology and the online CPUs cannot be read.
pub fn from_schedules(
    topo: Option<&Topology>,
    allowed: Option<&CpuSet>,
    schedules: &[Vec<u32>],
) -> Result<Vec<Candidate>, TuneError> {
    let known: HashSet<u32> = match topo {
        Some(t) => t.contexts().iter().map(|c| c.os_id).collect(),
        None => topoprobe_sys::affinity::online_cpus()
            .map_err(|source| TuneError::Io {
                what: "reading the online CPUs".into(),
                source,
            })?
            .iter()
            .collect(),
    };
    schedules
        .iter()
        .map(|s| {
            let name = s
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(":");
            for &cpu in s {
                if !known.contains(&cpu) {
                    return Err(TuneError::Usage(format!(
                        "--schedule {name}: CPU {cpu} is not in the topology (its CPUs: {})",
                        topoprobe_model::format_cpu_list(&{
                            let mut k: Vec<u32> = known.iter().copied().collect();
                            k.sort_unstable();
                            k
                        })
                    )));
                }
                if allowed.is_some_and(|a| !a.contains(cpu)) {
                    return Err(TuneError::Usage(format!(
                        "--schedule {name}: CPU {cpu} is not allowed for the program (allowed: {})",
                        allowed.map(ToString::to_string).unwrap_or_default()
                    )));
                }
            }
            Ok(Candidate {
                name,
                cpus: s.clone(),
                why: "given with --schedule".into(),
            })
        })
        .collect()
}
