//! Placement plans: the ordered hardware contexts a policy gives threads (pure).

use serde::Serialize;
use topoprobe_model::{
    format_cpu_list, Component, ContextId, CoreId, PowerScope, PowerState, SocketId, Threads,
    Topology,
};

use crate::error::PlaceError;
use crate::kind::{core_kinds, CoreKind};
use crate::policy::Policy;
use crate::sockets::{local_bandwidth, socket_order};

/// What to place: a policy and its optional limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The policy.
    pub policy: Policy,
    /// Number of threads; `None` for every usable context (for [`Policy::RrScale`]: the
    /// threads that saturate the sockets' local bandwidth).
    pub threads: Option<usize>,
    /// Number of sockets to use; `None` for as many as the threads need (round-robin
    /// policies: all).
    pub sockets: Option<usize>,
    /// Only cores of this kind (hybrid processors).
    pub kind: Option<CoreKind>,
    /// Only these operating-system CPUs.
    pub cpus: Option<Vec<u32>>,
}

impl Request {
    /// A request for `policy` with no limits.
    #[must_use]
    pub const fn new(policy: Policy) -> Self {
        Self {
            policy,
            threads: None,
            sockets: None,
            kind: None,
            cpus: None,
        }
    }

    /// The same request for `threads` threads.
    #[must_use]
    pub const fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// The same request on `sockets` sockets.
    #[must_use]
    pub const fn sockets(mut self, sockets: usize) -> Self {
        self.sockets = Some(sockets);
        self
    }

    /// The same request on cores of `kind` only.
    #[must_use]
    pub const fn kind(mut self, kind: CoreKind) -> Self {
        self.kind = Some(kind);
        self
    }
}

/// The result of a policy: which contexts threads get, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The policy.
    pub policy: Policy,
    /// Number of threads.
    pub threads: usize,
    /// Contexts in placement order: thread `i` gets `contexts[i]`. For [`Policy::None`]
    /// these are the contexts the unpinned threads may run on.
    pub contexts: Vec<ContextId>,
    /// Sockets used, in the policy's socket order.
    pub sockets: Vec<SocketId>,
    /// Whether threads are pinned.
    pub pinned: bool,
}

/// One socket, prepared for the policies: its cores in tree order with their usable
/// contexts.
#[derive(Debug, Clone)]
struct SocketCores {
    id: SocketId,
    cores: Vec<Vec<ContextId>>,
}

impl SocketCores {
    fn contexts(&self) -> usize {
        self.cores.iter().map(Vec::len).sum()
    }

    /// Every context of a core, core after core (CON_HWC inside a socket).
    fn by_hwc(&self) -> Vec<ContextId> {
        self.cores.iter().flatten().copied().collect()
    }

    /// `(pass, context)`: first contexts of every core, then second contexts...
    fn by_core_passes(&self) -> Vec<(usize, ContextId)> {
        let depth = self.cores.iter().map(Vec::len).max().unwrap_or(0);
        (0..depth)
            .flat_map(|k| {
                self.cores
                    .iter()
                    .filter_map(move |c| c.get(k).map(|&x| (k, x)))
            })
            .collect()
    }

    /// One context per core first (CON_CORE_HWC inside a socket).
    fn by_core(&self) -> Vec<ContextId> {
        self.by_core_passes().into_iter().map(|(_, x)| x).collect()
    }
}

/// Cores of a socket or group in tree order: members sorted P-cores first, then by their
/// lowest context; groups are walked depth first, so a group's cores are consecutive.
fn tree_cores(topo: &Topology, c: Component, kinds: Option<&[CoreKind]>, out: &mut Vec<CoreId>) {
    for m in sorted_members(topo, c, kinds) {
        match m {
            Component::Core(core) => out.push(core),
            Component::Group(_) => tree_cores(topo, m, kinds, out),
            Component::Context(_) | Component::Socket(_) => {}
        }
    }
}

/// Cores of a socket or group spread as far apart as its tree allows: round robin over its
/// members (in [`sorted_members`] order), each group's cores in this same order.
fn scatter_cores(topo: &Topology, c: Component) -> Vec<CoreId> {
    let lists: Vec<Vec<CoreId>> = sorted_members(topo, c, None)
        .into_iter()
        .filter_map(|m| match m {
            Component::Core(core) => Some(vec![core]),
            Component::Group(_) => Some(scatter_cores(topo, m)),
            Component::Context(_) | Component::Socket(_) => None,
        })
        .collect();
    interleave(&lists)
}

/// The first item of every list, then the second of every list that has one, ...
fn interleave<T: Copy>(lists: &[Vec<T>]) -> Vec<T> {
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|r| lists.iter().filter_map(move |l| l.get(r).copied()))
        .collect()
}

/// The members of a socket or group, P-cores first, then by their lowest context.
fn sorted_members(topo: &Topology, c: Component, kinds: Option<&[CoreKind]>) -> Vec<Component> {
    let mut members = topo.members_of(c);
    let key = |m: &Component| {
        let ctxs = topo.contexts_of(*m);
        let efficiency = kinds.is_some_and(|k| {
            ctxs.iter().all(|&x| {
                topo.core_of(x)
                    .and_then(|core| k.get(core.index()))
                    .is_some_and(|&kind| kind == CoreKind::Efficiency)
            })
        });
        (efficiency, ctxs.first().copied())
    };
    members.sort_by_key(key);
    members
}

/// The usable contexts after the CPU and kind filters, and the message naming the filters.
fn usable(
    topo: &Topology,
    req: &Request,
    kinds: Option<&[CoreKind]>,
) -> Result<(Vec<bool>, String), PlaceError> {
    let mut ok = vec![true; topo.num_contexts()];
    let mut scope = Vec::new();
    if let Some(cpus) = &req.cpus {
        let machine: Vec<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
        ok = vec![false; topo.num_contexts()];
        for &cpu in cpus {
            let ctx = topo
                .context_by_os_id(cpu)
                .ok_or_else(|| PlaceError::CpuOutsideMachine {
                    cpu,
                    machine: format_cpu_list(&machine),
                })?;
            ok[ctx.index()] = true;
        }
        scope.push(format!("CPUs {}", format_cpu_list(cpus)));
    }
    if let Some(kind) = req.kind {
        let kinds = kinds.ok_or(PlaceError::NoKinds)?;
        for (i, flag) in ok.iter_mut().enumerate() {
            let core = topo.core_of(ContextId(i));
            if core.and_then(|c| kinds.get(c.index())) != Some(&kind) {
                *flag = false;
            }
        }
        scope.push(format!("{kind} only"));
    }
    let scope = scope.join(", ");
    if !ok.iter().any(|&x| x) {
        return Err(PlaceError::NothingLeft(scope));
    }
    Ok((ok, scope))
}

/// The plan of [`Policy::List`]: thread `i` on the `i`-th CPU of `req.cpus`, in its order
/// (a CPU may repeat: threads then share it). With more threads than CPUs, the threads
/// beyond the list may run on any CPU of it (as the pinning library does); fewer threads
/// use the start of the list.
fn list_plan(topo: &Topology, req: &Request) -> Result<Plan, PlaceError> {
    let cpus = req
        .cpus
        .as_deref()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| PlaceError::NothingLeft("an empty CPU list".into()))?;
    if req.kind.is_some() || req.sockets.is_some() {
        return Err(PlaceError::ListWithFilters);
    }
    if req.threads == Some(0) {
        return Err(PlaceError::NoThreads);
    }
    let machine = || {
        let all: Vec<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
        format_cpu_list(&all)
    };
    let mut contexts = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        let ctx = topo
            .context_by_os_id(cpu)
            .ok_or_else(|| PlaceError::CpuOutsideMachine {
                cpu,
                machine: machine(),
            })?;
        contexts.push(ctx);
    }
    let threads = req.threads.unwrap_or(contexts.len());
    contexts.truncate(threads);
    let mut sockets: Vec<SocketId> = Vec::new();
    for c in &contexts {
        if let Some(s) = topo.socket_of(*c) {
            if !sockets.contains(&s) {
                sockets.push(s);
            }
        }
    }
    Ok(Plan {
        policy: Policy::List,
        threads,
        contexts,
        sockets,
        pinned: true,
    })
}

/// Splits `n` threads over sockets of the given capacities as evenly as possible, earlier
/// sockets taking the remainder; a socket that is full passes its share on.
fn balanced(n: usize, caps: &[usize]) -> Vec<usize> {
    let mut counts = vec![0; caps.len()];
    let mut left = n;
    while left > 0 {
        let open: Vec<usize> = (0..caps.len()).filter(|&i| counts[i] < caps[i]).collect();
        if open.is_empty() {
            break;
        }
        let share = left / open.len();
        let extra = left % open.len();
        for (j, &i) in open.iter().enumerate() {
            let want = share + usize::from(j < extra);
            let take = want.min(caps[i] - counts[i]);
            counts[i] += take;
            left -= take;
        }
    }
    counts
}

/// Takes one context from each sequence in turn, skipping exhausted ones, up to `n`;
/// `caps` limits how many each sequence gives.
fn round_robin(
    seqs: &[Vec<ContextId>],
    caps: &[usize],
    n: usize,
    out: &mut Vec<ContextId>,
    taken: &mut [usize],
) {
    loop {
        let mut progressed = false;
        for (i, seq) in seqs.iter().enumerate() {
            if out.len() == n {
                return;
            }
            if taken[i] < caps[i].min(seq.len()) {
                out.push(seq[taken[i]]);
                taken[i] += 1;
                progressed = true;
            }
        }
        if !progressed {
            return;
        }
    }
}

/// Smallest number of leading sockets whose `capacity` holds `n` (all when none does).
fn needed(n: usize, capacity: impl Iterator<Item = usize>) -> usize {
    let mut sum = 0;
    let mut k = 0;
    for c in capacity {
        k += 1;
        sum += c;
        if sum >= n {
            return k;
        }
    }
    k
}

/// Power increments of a socket (total: package + DRAM), W.
#[derive(Debug, Clone, Copy)]
struct PowerCost {
    first_core: f64,
    second_core: f64,
    second_context: f64,
}

fn power_costs(topo: &Topology, sockets: &[SocketId]) -> Result<Vec<PowerCost>, PlaceError> {
    let missing = |what: String| {
        PlaceError::MissingData {
        policy: Policy::Power,
        what,
        hint: "measure power (RAPL) into the description, or give a libmctop file with a #Power_measurements section".into(),
    }
    };
    let power = topo
        .power()
        .ok_or_else(|| missing("a power section".into()))?;
    sockets
        .iter()
        .map(|&s| {
            let get = |state: PowerState| {
                power
                    .entries
                    .iter()
                    .find(|e| e.scope == PowerScope::Socket(s) && e.state == state)
                    .map(|e| e.total_w)
                    .ok_or_else(|| {
                        missing(format!(
                            "the {} power of socket {}",
                            state.mct_name(),
                            s.index()
                        ))
                    })
            };
            Ok(PowerCost {
                first_core: get(PowerState::FirstCore)?,
                second_core: get(PowerState::SecondCore)?,
                second_context: get(PowerState::SecondContext)?,
            })
        })
        .collect()
}

/// POWER: each thread where it adds the least power. Candidates: the next context of a
/// used core (cost `second_context`), the next core of a used socket (`second_core`), a
/// new socket (`first_core`); ties go to the cheaper kind of step in that order, then to
/// the socket order.
fn power_order(socks: &[SocketCores], costs: &[PowerCost], n: usize) -> Vec<ContextId> {
    // Per socket: cores used, and per core the contexts used.
    let mut used_cores = vec![0usize; socks.len()];
    let mut used_ctx: Vec<Vec<usize>> = socks.iter().map(|s| vec![0; s.cores.len()]).collect();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        // (cost, step kind, socket)
        let mut best: Option<(f64, u8, usize)> = None;
        for (i, s) in socks.iter().enumerate() {
            let step = if (0..used_cores[i]).any(|c| used_ctx[i][c] < s.cores[c].len()) {
                Some((costs[i].second_context, 0))
            } else if used_cores[i] > 0 && used_cores[i] < s.cores.len() {
                Some((costs[i].second_core, 1))
            } else if used_cores[i] == 0 && !s.cores.is_empty() {
                Some((costs[i].first_core, 2))
            } else {
                None
            };
            if let Some((cost, kind)) = step {
                let better = best.is_none_or(|(bc, bk, _)| cost < bc || (cost == bc && kind < bk));
                if better {
                    best = Some((cost, kind, i));
                }
            }
        }
        let Some((_, kind, i)) = best else { break };
        if kind == 0 {
            if let Some(c) = (0..used_cores[i]).find(|&c| used_ctx[i][c] < socks[i].cores[c].len())
            {
                out.push(socks[i].cores[c][used_ctx[i][c]]);
                used_ctx[i][c] += 1;
            }
        } else {
            let c = used_cores[i];
            out.push(socks[i].cores[c][0]);
            used_ctx[i][c] = 1;
            used_cores[i] += 1;
        }
    }
    out
}

/// Threads per socket that saturate its local read bandwidth: all-context bandwidth over
/// one thread's, rounded up, at most its cores.
fn saturation(topo: &Topology, s: &SocketCores) -> Result<usize, PlaceError> {
    let missing = PlaceError::MissingData {
        policy: Policy::RrScale,
        what: format!(
            "the local read bandwidth of socket {} with one thread and with all contexts",
            s.id.index()
        ),
        hint: "measure memory bandwidth into the description, or give a libmctop file with #Mem_bw-READ and #Mem_bw1-READ sections".into(),
    };
    let all = local_bandwidth(topo, s.id, Threads::AllContexts);
    let one = local_bandwidth(topo, s.id, Threads::Single);
    match (all, one) {
        (Some(all), Some(one)) if one > 0.0 && all.is_finite() => {
            let k = (all / one).ceil().max(1.0);
            // k is a small positive count.
            let k = k as usize;
            Ok(k.min(s.cores.len()).max(1))
        }
        _ => Err(missing),
    }
}

/// Computes the plan of a request over a topology.
///
/// # Errors
///
/// [`PlaceError::CpuOutsideMachine`] for a CPU that is not in the topology,
/// [`PlaceError::NoKinds`] for a core kind on a machine with one kind,
/// [`PlaceError::NothingLeft`] when the filters leave no context,
/// [`PlaceError::TooManySockets`], [`PlaceError::TooManyThreads`], [`PlaceError::NoThreads`]
/// for counts that do not fit, and [`PlaceError::MissingData`] when POWER has no power
/// section or RR_SCALE no bandwidth section.
pub fn plan(topo: &Topology, req: &Request) -> Result<Plan, PlaceError> {
    if req.policy == Policy::List {
        return list_plan(topo, req);
    }
    let kinds = core_kinds(topo);
    let kinds = kinds.as_deref();
    let (ok, scope) = usable(topo, req, kinds)?;
    let scope = if scope.is_empty() {
        String::new()
    } else {
        format!(" ({scope})")
    };
    let policy = req.policy;
    if req.threads == Some(0) {
        return Err(PlaceError::NoThreads);
    }
    let mut socks = usable_sockets(topo, &ok, kinds);
    if let Some(k) = req.sockets {
        if k == 0 || k > socks.len() {
            return Err(PlaceError::TooManySockets {
                asked: k,
                available: socks.len(),
            });
        }
        socks.truncate(k);
    }
    let available: usize = socks.iter().map(SocketCores::contexts).sum();
    let too_many = |asked: usize| PlaceError::TooManyThreads {
        policy,
        asked,
        available,
        scope: scope.clone(),
    };
    if matches!(policy, Policy::None | Policy::Sequential) {
        return os_order_plan(topo, &socks, policy, req.threads, &too_many);
    }
    let n = thread_count(topo, &socks, policy, req.threads, available)?;
    if n > available {
        return Err(too_many(n));
    }
    let contexts = policy_contexts(topo, &socks, policy, n, req.sockets.is_some())?;
    debug_assert_eq!(contexts.len(), n);
    let used = sockets_in_use(topo, &socks, &contexts);
    Ok(Plan {
        policy,
        threads: n,
        contexts,
        sockets: used,
        pinned: true,
    })
}

/// Sockets with usable contexts (`ok`), in policy order, with their cores in tree order
/// (only those with usable contexts, and of the kinds given).
fn usable_sockets(topo: &Topology, ok: &[bool], kinds: Option<&[CoreKind]>) -> Vec<SocketCores> {
    let candidates: Vec<SocketId> = (0..topo.num_sockets())
        .map(SocketId)
        .filter(|&s| topo.socket_contexts(s).iter().any(|c| ok[c.index()]))
        .collect();
    let order = socket_order(topo, &candidates);
    order
        .iter()
        .map(|&s| {
            let mut core_ids = Vec::new();
            tree_cores(topo, Component::Socket(s), kinds, &mut core_ids);
            let mut cores = Vec::new();
            for core in core_ids {
                let ctxs: Vec<ContextId> = topo
                    .core_contexts(core)
                    .iter()
                    .copied()
                    .filter(|c| ok[c.index()])
                    .collect();
                if !ctxs.is_empty() {
                    cores.push(ctxs);
                }
            }
            SocketCores { id: s, cores }
        })
        .collect()
}

/// The plan of [`Policy::None`] and [`Policy::Sequential`]: contexts in the order of their
/// OS numbers (SEQUENTIAL: the first `threads`, which must fit), with the sockets in the
/// order of first use.
fn os_order_plan(
    topo: &Topology,
    socks: &[SocketCores],
    policy: Policy,
    threads: Option<usize>,
    too_many: &dyn Fn(usize) -> PlaceError,
) -> Result<Plan, PlaceError> {
    let mut all: Vec<ContextId> = socks.iter().flat_map(SocketCores::by_hwc).collect();
    all.sort_by_key(|c| (topo.contexts()[c.index()].os_id, *c));
    let n = threads.unwrap_or(all.len());
    if policy == Policy::Sequential {
        if n > all.len() {
            return Err(too_many(n));
        }
        all.truncate(n);
    }
    let mut used: Vec<SocketId> = Vec::new();
    for c in &all {
        if let Some(s) = topo.socket_of(*c) {
            if !used.contains(&s) {
                used.push(s);
            }
        }
    }
    Ok(Plan {
        policy,
        threads: n,
        contexts: all,
        sockets: used,
        pinned: policy.pins(),
    })
}

/// The number of threads to place: as asked; else, for [`Policy::RrScale`], the threads
/// that saturate every socket's local bandwidth; else every usable context (`available`).
fn thread_count(
    topo: &Topology,
    socks: &[SocketCores],
    policy: Policy,
    threads: Option<usize>,
    available: usize,
) -> Result<usize, PlaceError> {
    Ok(match (threads, policy) {
        (Some(n), _) => n,
        (None, Policy::RrScale) => {
            let mut sum = 0;
            for s in socks {
                sum += saturation(topo, s)?;
            }
            sum
        }
        (None, _) => available,
    })
}

/// The contexts a CON, BALANCE, RR or POWER policy gives `n` threads, in order.
/// `fixed_sockets`: the number of sockets was given, so the CON and BALANCE policies use
/// every socket of `socks` rather than as few as hold the threads.
fn policy_contexts(
    topo: &Topology,
    socks: &[SocketCores],
    policy: Policy,
    n: usize,
    fixed_sockets: bool,
) -> Result<Vec<ContextId>, PlaceError> {
    // Sockets the CON and BALANCE policies use: as given, or as few as hold the threads.
    let by_contexts = || {
        if fixed_sockets {
            socks.len()
        } else {
            needed(n, socks.iter().map(SocketCores::contexts))
        }
    };
    let by_cores = || {
        if fixed_sockets {
            socks.len()
        } else {
            needed(n, socks.iter().map(|s| s.cores.len()))
        }
    };
    Ok(match policy {
        Policy::ConHwc => socks[..by_contexts()]
            .iter()
            .flat_map(SocketCores::by_hwc)
            .take(n)
            .collect(),
        Policy::ConCoreHwc => socks[..by_contexts()]
            .iter()
            .flat_map(SocketCores::by_core)
            .take(n)
            .collect(),
        Policy::ConCore => con_core(&socks[..by_cores()], n),
        Policy::BalanceHwc | Policy::BalanceCoreHwc => {
            balance(&socks[..by_contexts()], n, policy == Policy::BalanceHwc)
        }
        Policy::BalanceCore => balance_core(&socks[..by_cores()], n),
        Policy::RrHwc | Policy::RrCore => rr(socks, n, policy == Policy::RrHwc),
        Policy::RrScale => rr_scale(topo, socks, n)?,
        Policy::Scatter => scatter(topo, socks, n),
        Policy::Power => {
            let ids: Vec<SocketId> = socks.iter().map(|s| s.id).collect();
            let costs = power_costs(topo, &ids)?;
            power_order(socks, &costs, n)
        }
        Policy::None | Policy::Sequential | Policy::List => Vec::new(),
    })
}

/// CON_CORE over the sockets `used`: first contexts of every core of every socket, socket
/// after socket, then second contexts...; the first `n`.
fn con_core(used: &[SocketCores], n: usize) -> Vec<ContextId> {
    let mut all: Vec<(usize, usize, ContextId)> = Vec::new();
    for (i, s) in used.iter().enumerate() {
        all.extend(s.by_core_passes().into_iter().map(|(k, x)| (k, i, x)));
    }
    // Stable: inside a pass and a socket, the socket's core order is kept.
    all.sort_by_key(|&(k, i, _)| (k, i));
    all.into_iter().map(|(_, _, x)| x).take(n).collect()
}

/// BALANCE_HWC (`by_hwc`) or BALANCE_CORE_HWC over the sockets `used`: `n` threads split
/// evenly, each socket's share in its HWC or CORE_HWC order.
fn balance(used: &[SocketCores], n: usize, by_hwc: bool) -> Vec<ContextId> {
    let caps: Vec<usize> = used.iter().map(SocketCores::contexts).collect();
    let counts = balanced(n, &caps);
    used.iter()
        .zip(counts)
        .flat_map(|(s, k)| {
            let seq = if by_hwc { s.by_hwc() } else { s.by_core() };
            seq.into_iter().take(k)
        })
        .collect()
}

/// BALANCE_CORE over the sockets `used`: `n` threads split evenly, each socket's share
/// taken by core passes, then ordered pass by pass across the sockets.
fn balance_core(used: &[SocketCores], n: usize) -> Vec<ContextId> {
    let caps: Vec<usize> = used.iter().map(SocketCores::contexts).collect();
    let counts = balanced(n, &caps);
    let mut all: Vec<(usize, usize, ContextId)> = Vec::new();
    for (i, (s, k)) in used.iter().zip(counts).enumerate() {
        all.extend(
            s.by_core_passes()
                .into_iter()
                .take(k)
                .map(|(p, x)| (p, i, x)),
        );
    }
    all.sort_by_key(|&(p, i, _)| (p, i));
    all.into_iter().map(|(_, _, x)| x).collect()
}

/// RR_HWC (`by_hwc`) or RR_CORE: `n` threads dealt round-robin over every socket, each in
/// its HWC or CORE_HWC order.
fn rr(socks: &[SocketCores], n: usize, by_hwc: bool) -> Vec<ContextId> {
    let seqs: Vec<Vec<ContextId>> = socks
        .iter()
        .map(|s| if by_hwc { s.by_hwc() } else { s.by_core() })
        .collect();
    let caps = vec![usize::MAX; seqs.len()];
    let mut out = Vec::with_capacity(n);
    round_robin(&seqs, &caps, n, &mut out, &mut vec![0; seqs.len()]);
    out
}

/// SCATTER: every socket's usable cores in [`scatter_cores`] order, the sockets dealt
/// round robin; the first contexts of all of them, then the second contexts...; the first
/// `n`.
fn scatter(topo: &Topology, socks: &[SocketCores], n: usize) -> Vec<ContextId> {
    let per_socket: Vec<Vec<&Vec<ContextId>>> = socks
        .iter()
        .map(|s| {
            scatter_cores(topo, Component::Socket(s.id))
                .into_iter()
                .filter_map(|core| {
                    s.cores
                        .iter()
                        .find(|ctxs| ctxs.first().and_then(|&x| topo.core_of(x)) == Some(core))
                })
                .collect()
        })
        .collect();
    let cores = interleave(&per_socket);
    let depth = cores.iter().map(|c| c.len()).max().unwrap_or(0);
    (0..depth)
        .flat_map(|k| cores.iter().filter_map(move |c| c.get(k).copied()))
        .take(n)
        .collect()
}

/// RR_SCALE: `n` threads dealt round-robin over the sockets up to each one's saturation
/// of its local bandwidth, the rest round-robin beyond it.
fn rr_scale(
    topo: &Topology,
    socks: &[SocketCores],
    n: usize,
) -> Result<Vec<ContextId>, PlaceError> {
    let seqs: Vec<Vec<ContextId>> = socks.iter().map(SocketCores::by_core).collect();
    let mut caps = Vec::with_capacity(socks.len());
    for s in socks {
        caps.push(saturation(topo, s)?);
    }
    let mut taken = vec![0; seqs.len()];
    let mut out = Vec::with_capacity(n);
    round_robin(&seqs, &caps, n, &mut out, &mut taken);
    round_robin(
        &seqs,
        &vec![usize::MAX; seqs.len()],
        n,
        &mut out,
        &mut taken,
    );
    Ok(out)
}

/// The sockets that hold any of `contexts`, in the order of first use (POWER may start
/// elsewhere than the policy's first socket).
fn sockets_in_use(topo: &Topology, socks: &[SocketCores], contexts: &[ContextId]) -> Vec<SocketId> {
    let mut used: Vec<SocketId> = Vec::new();
    for s in socks {
        if s.cores.iter().flatten().any(|c| contexts.contains(c)) {
            used.push(s.id);
        }
    }
    used.sort_by_key(|s| {
        contexts
            .iter()
            .position(|c| topo.socket_of(*c) == Some(*s))
            .unwrap_or(usize::MAX)
    });
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_split_passes_on_full_sockets() {
        assert_eq!(balanced(12, &[20, 20]), vec![6, 6]);
        assert_eq!(balanced(13, &[20, 20]), vec![7, 6]);
        assert_eq!(balanced(10, &[2, 20, 20]), vec![2, 4, 4]);
        assert_eq!(balanced(0, &[2]), vec![0]);
    }

    #[test]
    fn needed_sockets() {
        assert_eq!(needed(12, [20, 20].into_iter()), 1);
        assert_eq!(needed(12, [10, 10].into_iter()), 2);
        assert_eq!(needed(50, [10, 10].into_iter()), 2);
    }
}
