//! Hints the latencies contradict.
//!
//! A hint settles what the latencies leave open: whether pairs near the SMT bound share a
//! core, whether a link near the socket bounds joins sockets or dies. A socket hint whose
//! sockets are separated at a latency level below a clear gap of the latencies (SMT siblings
//! 7.5 ns apart in two "sockets" while the widest gap is between 21 ns and 80 ns), or an SMT
//! hint against a clear verdict of the latencies, is *contradicted*. It is still followed
//! (the user asked, and may know what the latencies do not show), but the level's confidence
//! drops to at most [`CONTRADICTED_CONFIDENCE`] and a `hint_contradicted` warning names the
//! latencies and what they give without the hint. (An `--smt yes` with no set of contexts
//! fast enough to be made a core cannot be followed: it is not applied, and says so.)

use topoprobe_model::{median_in_place, Origin};

use super::{fmt_lat, given, given_past, Context, Decision, Kind};
use crate::tree::ComponentTree;

/// Most confidence a level keeps whose hint the latencies contradict: below the 0.5 of a
/// hint that is only implausible (a socket count no machine has).
pub(crate) const CONTRADICTED_CONFIDENCE: f64 = 0.25;

/// A link at least this slow (ns) may join sockets even below a wider gap: a fast
/// two-socket link, the dies of each socket of a two-socket server, sockets two hops apart.
const SOCKET_LINK_NS: f64 = 70.0;

/// A partition cuts at a latency class when it separates at least this share of the
/// class's pairs (a few stray pairs do not make the cut).
const CUT_SHARE: f64 = 0.05;

/// Smallest ratio between the two sides of a gap that the latencies clearly show.
const CLEAR_GAP: f64 = 1.3;

/// How a hint reads in a message: `--sockets 4` as typed, else the hint with its origin.
pub(crate) fn name(origin: Origin, option: &str, what: &str) -> String {
    match origin {
        Origin::Given => option.to_string(),
        _ => format!("the hint \"{what}\" ({})", given_past(origin)),
    }
}

/// Where a hinted partition cuts the latencies below a clear gap.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cut {
    /// Median latency of the separated pairs of the lowest latency class it cuts.
    pub(crate) at: f64,
    /// Where those pairs meet: "inside a core (SMT)", "inside a group of 16 contexts" or
    /// nothing.
    pub(crate) inside: String,
    /// The widest gap of the latencies above the cut: the largest latency of one class and
    /// the smallest of the next.
    pub(crate) gap: (f64, f64),
    /// Cores (as the latencies show them) whose contexts the partition puts in different
    /// parts.
    pub(crate) split_cores: usize,
}

/// The clear gap that sockets `sets` are cut below, if any: the lowest latency class of
/// which they separate a fair share of pairs lies below a gap of at least [`CLEAR_GAP`],
/// and is faster than any link between sockets ([`SOCKET_LINK_NS`]).
pub(crate) fn socket_cut(
    cx: &Context<'_>,
    tree: &ComponentTree,
    kind: &[Kind],
    sets: &[Vec<usize>],
) -> Option<Cut> {
    let t = cx.t;
    let classes = cx.thresholds.len() + 1;
    let class = |v: f64| cx.thresholds.iter().filter(|&&th| th < v).count();
    let mut part = vec![usize::MAX; t.n];
    for (i, s) in sets.iter().enumerate() {
        for &x in s {
            part[x] = i;
        }
    }
    let mut lo = vec![f64::INFINITY; classes];
    let mut hi = vec![0.0_f64; classes];
    let mut count = vec![0_usize; classes];
    let mut cut_pairs: Vec<Vec<(usize, usize)>> = vec![Vec::new(); classes];
    for a in 0..t.n {
        for b in a + 1..t.n {
            let v = t.get(a, b);
            if v.is_nan() {
                continue;
            }
            let c = class(v);
            lo[c] = lo[c].min(v);
            hi[c] = hi[c].max(v);
            count[c] += 1;
            if part[a] != part[b] {
                cut_pairs[c].push((a, b));
            }
        }
    }
    let cut = (0..classes).find(|&c| {
        !cut_pairs[c].is_empty() && cut_pairs[c].len() as f64 >= CUT_SHARE * count[c] as f64
    })?;
    let mut values: Vec<f64> = cut_pairs[cut].iter().map(|&(a, b)| t.get(a, b)).collect();
    let at = median_in_place(&mut values).unwrap_or(f64::NAN);
    if at >= cx.opts.ns_to_units(SOCKET_LINK_NS) {
        return None;
    }
    let gap = (cut..classes.saturating_sub(1))
        .filter(|&c| count[c] > 0 && count[c + 1] > 0)
        .map(|c| (hi[c], lo[c + 1]))
        .max_by(|x, y| (x.1 / x.0).total_cmp(&(y.1 / y.0)))?;
    if gap.1 < CLEAR_GAP * gap.0 {
        return None;
    }
    let split_cores = (0..kind.len())
        .filter(|&id| kind[id] == Kind::Core)
        .filter(|&id| {
            let m = &tree.nodes[id].members;
            m.iter().any(|&x| part[x] != part[m[0]])
        })
        .count();
    Some(Cut {
        at,
        inside: meeting(tree, kind, &cut_pairs[cut]),
        gap,
        split_cores,
    })
}

/// Where separated pairs meet in the tree: inside a core when some do (then the latency is
/// an SMT level), else inside the smallest node that holds the first pair, unless that is
/// the whole machine.
fn meeting(tree: &ComponentTree, kind: &[Kind], pairs: &[(usize, usize)]) -> String {
    // The innermost node of each context: nodes are listed parents first.
    let n = tree.nodes[0].members.len();
    let mut innermost = vec![0_usize; n];
    for (id, node) in tree.nodes.iter().enumerate() {
        for &x in &node.members {
            if let Some(slot) = innermost.get_mut(x) {
                if tree.nodes[*slot].members.len() >= node.members.len() {
                    *slot = id;
                }
            }
        }
    }
    let common = |a: usize, b: usize| -> usize {
        let mut id = innermost[a];
        while tree.nodes[id].members.binary_search(&b).is_err() {
            match tree.nodes[id].parent {
                Some(p) => id = p,
                None => return 0,
            }
        }
        id
    };
    if pairs.iter().any(|&(a, b)| kind[common(a, b)] == Kind::Core) {
        return " inside a core (SMT)".to_string();
    }
    match pairs.first().map(|&(a, b)| common(a, b)) {
        Some(id) if id != 0 => format!(
            " inside a group of {} contexts",
            tree.nodes[id].members.len()
        ),
        _ => String::new(),
    }
}

/// "the 4 sockets it forces are 7.5 ns apart inside a core (SMT), splitting 2 cores, while
/// the latencies' widest gap above that is between 21.0 ns and 80.0 ns".
pub(crate) fn describe_cut(cx: &Context<'_>, want: usize, cut: &Cut) -> String {
    let split = match cut.split_cores {
        0 => String::new(),
        1 => ", splitting 1 core".to_string(),
        k => format!(", splitting {k} cores"),
    };
    format!(
        "the {want} sockets it forces are {} apart{}{split}, while the latencies' widest gap \
         above that is between {} and {}",
        fmt_lat(cut.at, cx.opts),
        cut.inside,
        fmt_lat(cut.gap.0, cx.opts),
        fmt_lat(cut.gap.1, cx.opts)
    )
}

/// A decision that follows a hint the latencies contradict: its confidence at most
/// [`CONTRADICTED_CONFIDENCE`], its basis and a contradiction that say so. `hint` is how
/// the hint reads ([`name`]), `what` what the latencies show, `without` what they give
/// without the hint, in a few words ("1 socket").
pub(crate) fn contradicted(
    mut d: Decision,
    hint: &str,
    what: &str,
    without: &str,
    origin: Origin,
) -> Decision {
    d.confidence = d.confidence.min(CONTRADICTED_CONFIDENCE);
    d.basis = format!(
        "{}; contradicted by the latencies, which give {without}",
        d.basis
    );
    let advice = if origin == Origin::Given {
        " (leave it out to keep what the latencies show)"
    } else {
        ""
    };
    d.contradiction = Some(format!(
        "{hint} contradicts the latencies: {what}; inferred without the hint: {without}; \
         the hint is followed {}{advice}",
        given(origin)
    ));
    d
}
