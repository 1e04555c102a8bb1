//! What a placement uses, like MCTOP-PLACE's printout (paper Figure 7).

use std::fmt::Write as _;

use serde::Serialize;
use topoprobe_model::{Access, PowerScope, PowerState, SocketId, Threads, Topology};

use crate::plan::Plan;
use crate::sockets::local_bandwidth;

/// One used socket.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SocketUse {
    /// Socket id.
    pub socket: usize,
    /// Threads (contexts) placed on it.
    pub contexts: usize,
    /// Distinct cores used on it.
    pub cores: usize,
    /// Its share of the placement's estimated memory bandwidth (when measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth_proportion: Option<f64>,
}

/// Estimated maximum power of the machine while the placement runs alone, W.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerEstimate {
    /// Per socket (every socket; unused ones idle), package only.
    pub sockets_package_w: Vec<f64>,
    /// Per socket, package and DRAM.
    pub sockets_total_w: Vec<f64>,
    /// Sum of the package figures.
    pub package_w: f64,
    /// Sum of the package and DRAM figures.
    pub total_w: f64,
}

/// The summary of a placement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Policy name.
    pub policy: String,
    /// Threads.
    pub threads: usize,
    /// Whether threads are pinned.
    pub pinned: bool,
    /// Distinct cores used.
    pub cores: usize,
    /// Operating-system CPU numbers, in placement order.
    pub contexts: Vec<u32>,
    /// Sockets used, in the policy's order.
    pub sockets: Vec<SocketUse>,
    /// Largest latency between two of the placement's contexts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_latency: Option<f64>,
    /// Unit of `max_latency`.
    pub latency_unit: String,
    /// Smallest read bandwidth between a used socket and a used socket's local node, GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_bandwidth_gbps: Option<f64>,
    /// Power estimate, when the topology has power measurements.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerEstimate>,
}

/// Power of one socket running `cores` cores with `contexts` busy contexts: idle, plus the
/// first core, the further cores and the further contexts (libmctop's increments).
fn socket_power(topo: &Topology, s: SocketId, cores: usize, contexts: usize) -> Option<(f64, f64)> {
    let power = topo.power()?;
    let get = |state: PowerState| {
        power
            .entries
            .iter()
            .find(|e| e.scope == PowerScope::Socket(s) && e.state == state)
            .map(|e| (e.package_w, e.total_w))
    };
    let idle = get(PowerState::Idle)?;
    if cores == 0 {
        return Some(idle);
    }
    let first = get(PowerState::FirstCore)?;
    let core = get(PowerState::SecondCore)?;
    let ctx = get(PowerState::SecondContext)?;
    let more_cores = (cores - 1) as f64;
    let more_ctx = contexts.saturating_sub(cores) as f64;
    Some((
        idle.0 + first.0 + more_cores * core.0 + more_ctx * ctx.0,
        idle.1 + first.1 + more_cores * core.1 + more_ctx * ctx.1,
    ))
}

impl Summary {
    /// Summarizes a plan over its topology.
    #[must_use]
    pub fn new(topo: &Topology, plan: &Plan) -> Self {
        let placed = if plan.pinned {
            &plan.contexts[..]
        } else {
            &[][..]
        };
        let mut cores_used: Vec<_> = placed.iter().filter_map(|&c| topo.core_of(c)).collect();
        cores_used.sort_unstable();
        cores_used.dedup();
        let mut sockets: Vec<SocketUse> = plan
            .sockets
            .iter()
            .map(|&s| {
                let ctxs: Vec<_> = placed
                    .iter()
                    .filter(|&&c| topo.socket_of(c) == Some(s))
                    .collect();
                let mut cores: Vec<_> = ctxs.iter().filter_map(|&&c| topo.core_of(c)).collect();
                cores.sort_unstable();
                cores.dedup();
                SocketUse {
                    socket: s.index(),
                    contexts: ctxs.len(),
                    cores: cores.len(),
                    bandwidth_proportion: None,
                }
            })
            .collect();
        // Bandwidth each used socket can draw: its all-context local bandwidth, scaled down
        // when it runs fewer threads than saturate it.
        let estimates: Option<Vec<f64>> = sockets
            .iter()
            .map(|u| {
                let s = SocketId(u.socket);
                let all = local_bandwidth(topo, s, Threads::AllContexts)?;
                let share = match local_bandwidth(topo, s, Threads::Single) {
                    Some(one) if one > 0.0 => ((u.contexts as f64) * one / all).min(1.0),
                    _ => 1.0,
                };
                Some(all * share)
            })
            .collect();
        if let Some(est) = estimates {
            let sum: f64 = est.iter().sum();
            if sum > 0.0 {
                for (u, e) in sockets.iter_mut().zip(est) {
                    u.bandwidth_proportion = Some(e / sum);
                }
            }
        }
        let nodes: Vec<_> = plan
            .sockets
            .iter()
            .filter_map(|&s| topo.sockets()[s.index()].local_node)
            .collect();
        let min_bandwidth_gbps = topo.memory().and_then(|m| {
            let mut v = Vec::new();
            for &s in &plan.sockets {
                for &n in &nodes {
                    v.extend(m.bandwidth_of(s, n, Access::Read, Threads::AllContexts));
                }
            }
            v.into_iter().min_by(f64::total_cmp)
        });
        let power = (|| {
            let mut pkg = Vec::new();
            let mut tot = Vec::new();
            for s in 0..topo.num_sockets() {
                let u = sockets.iter().find(|u| u.socket == s);
                let (p, t) = socket_power(
                    topo,
                    SocketId(s),
                    u.map_or(0, |u| u.cores),
                    u.map_or(0, |u| u.contexts),
                )?;
                pkg.push(p);
                tot.push(t);
            }
            Some(PowerEstimate {
                package_w: pkg.iter().sum(),
                total_w: tot.iter().sum(),
                sockets_package_w: pkg,
                sockets_total_w: tot,
            })
        })();
        Self {
            policy: plan.policy.name().to_string(),
            threads: plan.threads,
            pinned: plan.pinned,
            cores: cores_used.len(),
            contexts: plan
                .contexts
                .iter()
                .map(|c| topo.contexts()[c.index()].os_id)
                .collect(),
            sockets,
            max_latency: topo.max_latency(placed),
            latency_unit: topo.units().to_string(),
            min_bandwidth_gbps,
            power,
        }
    }

    /// The summary as text, one `# name : value` line per figure.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let join = |v: Vec<String>| v.join(" ");
        let _ = writeln!(s, "## topoprobe placement: {}", self.policy);
        if !self.pinned {
            let _ = writeln!(s, "# Threads             : {} (not pinned)", self.threads);
        }
        let _ = writeln!(s, "# # Cores             : {}", self.cores);
        let _ = writeln!(
            s,
            "# HW contexts ({:<3})   : {}",
            self.contexts.len(),
            join(self.contexts.iter().map(ToString::to_string).collect())
        );
        let _ = writeln!(
            s,
            "# Sockets ({:<3})       : {}",
            self.sockets.len(),
            join(self.sockets.iter().map(|u| u.socket.to_string()).collect())
        );
        let _ = writeln!(
            s,
            "# # HW ctx / socket    : {}",
            join(
                self.sockets
                    .iter()
                    .map(|u| u.contexts.to_string())
                    .collect()
            )
        );
        let _ = writeln!(
            s,
            "# # Cores / socket     : {}",
            join(self.sockets.iter().map(|u| u.cores.to_string()).collect())
        );
        let props: Option<Vec<String>> = self
            .sockets
            .iter()
            .map(|u| u.bandwidth_proportion.map(|p| format!("{p:.3}")))
            .collect();
        let _ = writeln!(
            s,
            "# BW proportions       : {}",
            props.map_or_else(|| "unavailable: no bandwidth measurements".into(), join)
        );
        match &self.power {
            Some(p) => {
                let f = |v: &[f64]| join(v.iter().map(|x| format!("{x:.1}")).collect());
                let _ = writeln!(
                    s,
                    "# Max pow no DRAM      : {} = {:.1} Watt",
                    f(&p.sockets_package_w),
                    p.package_w
                );
                let _ = writeln!(
                    s,
                    "# Max pow with DRAM    : {} = {:.1} Watt",
                    f(&p.sockets_total_w),
                    p.total_w
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "# Max pow              : unavailable: no power measurements"
                );
            }
        }
        match self.max_latency {
            Some(l) => {
                let _ = writeln!(
                    s,
                    "# Max latency          : {} {}",
                    topoprobe_model::format::short_latency(l),
                    self.latency_unit
                );
            }
            None => {
                let _ = writeln!(s, "# Max latency          : - (fewer than two contexts)");
            }
        }
        match self.min_bandwidth_gbps {
            Some(b) => {
                let _ = writeln!(s, "# Min bandwidth        : {b:.2} GB/s");
            }
            None => {
                let _ = writeln!(
                    s,
                    "# Min bandwidth        : unavailable: no bandwidth measurements"
                );
            }
        }
        s
    }
}
