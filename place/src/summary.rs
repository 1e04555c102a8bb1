//! What a placement uses, like MCTOP-PLACE's printout (paper Figure 7).

use topoprobe_model::results::placement::{PlacementSummary, PowerEstimate, SocketUse};
use topoprobe_model::{Access, PowerScope, PowerState, SocketId, Threads, Topology};

use crate::plan::Plan;
use crate::sockets::local_bandwidth;

/// The summary of a placement (paper Figure 7), computed from a plan: plain data
/// ([`PlacementSummary`]) that its fields read through.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary(PlacementSummary);

impl std::ops::Deref for Summary {
    type Target = PlacementSummary;
    fn deref(&self) -> &PlacementSummary {
        &self.0
    }
}

impl From<Summary> for PlacementSummary {
    fn from(s: Summary) -> Self {
        s.0
    }
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
        Self(PlacementSummary {
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
        })
    }

    /// A summary made already.
    pub(crate) const fn from_data(data: PlacementSummary) -> Self {
        Self(data)
    }

    /// The plain data of the summary.
    #[must_use]
    pub const fn data(&self) -> &PlacementSummary {
        &self.0
    }
}
