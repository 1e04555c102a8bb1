//! Partitions of CPU numbers and their differences, and how to write them.

use std::collections::{BTreeMap, BTreeSet};

use topoprobe_model::format_cpu_list;

/// At most this many CPU sets are written out in one message.
const SHOWN: usize = 4;

/// A set of OS CPU numbers, ascending.
pub(super) type CpuSet = Vec<u32>;

/// The blocks of a labelling `cpu → label`, each ascending, sorted by first CPU.
pub(super) fn blocks<L: Ord>(labels: &BTreeMap<u32, L>) -> Vec<CpuSet> {
    let mut by: BTreeMap<&L, CpuSet> = BTreeMap::new();
    for (cpu, l) in labels {
        by.entry(l).or_default().push(*cpu);
    }
    let mut out: Vec<CpuSet> = by.into_values().collect();
    out.sort();
    out
}

/// A block of one partition that the other partition cuts into pieces.
pub(super) struct Cut {
    /// The block.
    pub(super) block: CpuSet,
    /// How the other partition divides it.
    pub(super) pieces: Vec<CpuSet>,
}

/// The blocks of `a` (a labelling of CPUs) that `b` cuts into several pieces; CPUs without a
/// label in `b` are ignored.
pub(super) fn cuts<A: Ord, B: Ord>(a: &BTreeMap<u32, A>, b: &BTreeMap<u32, B>) -> Vec<Cut> {
    let mut out = Vec::new();
    for block in blocks(a) {
        let restricted: BTreeMap<u32, &B> = block
            .iter()
            .filter_map(|c| b.get(c).map(|l| (*c, l)))
            .collect();
        let pieces = blocks(&restricted);
        if pieces.len() > 1 {
            out.push(Cut { block, pieces });
        }
    }
    out
}

/// `{0-3}`.
pub(super) fn set(cpus: &[u32]) -> String {
    format!("{{{}}}", format_cpu_list(cpus))
}

/// `{0-3}, {4-7}` (at most [`SHOWN`] sets, then `and N more`).
pub(super) fn sets(list: &[CpuSet]) -> String {
    let mut parts: Vec<String> = list.iter().take(SHOWN).map(|s| set(s)).collect();
    if list.len() > SHOWN {
        parts.push(format!("and {} more", list.len() - SHOWN));
    }
    parts.join(", ")
}

/// `{0,8} (OS: {0} | {8})` for each cut, at most [`SHOWN`] of them.
pub(super) fn cut_list(list: &[Cut]) -> String {
    let mut parts: Vec<String> = list
        .iter()
        .take(SHOWN)
        .map(|c| {
            let pieces: Vec<String> = c.pieces.iter().map(|p| set(p)).collect();
            format!("{} into {}", set(&c.block), pieces.join(" + "))
        })
        .collect();
    if list.len() > SHOWN {
        parts.push(format!("and {} more", list.len() - SHOWN));
    }
    parts.join("; ")
}

/// A pair of CPUs in different pieces of the first cut (to measure with `topoprobe latency`).
pub(super) fn pair_across(list: &[Cut]) -> Option<(u32, u32)> {
    let c = list.first()?;
    Some((*c.pieces.first()?.first()?, *c.pieces.get(1)?.first()?))
}

/// `sets` restricted to `keep`, without empty or duplicate sets.
pub(super) fn restrict(
    sets: impl IntoIterator<Item = CpuSet>,
    keep: &BTreeSet<u32>,
) -> Vec<CpuSet> {
    let mut out: Vec<CpuSet> = sets
        .into_iter()
        .map(|s| {
            s.into_iter()
                .filter(|c| keep.contains(c))
                .collect::<CpuSet>()
        })
        .filter(|s| !s.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_and_formats() {
        let a: BTreeMap<u32, u32> = [(0, 0), (1, 0), (2, 1), (3, 1)].into();
        let b: BTreeMap<u32, u32> = [(0, 0), (1, 1), (2, 2), (3, 2)].into();
        let c = cuts(&a, &b);
        assert_eq!(c.len(), 1);
        assert_eq!(cut_list(&c), "{0-1} into {0} + {1}");
        assert_eq!(pair_across(&c), Some((0, 1)));
        assert!(cuts(&b, &a).is_empty());
        let many: Vec<CpuSet> = (0..6).map(|i| vec![i]).collect();
        assert_eq!(sets(&many), "{0}, {1}, {2}, {3}, and 2 more");
        let keep: BTreeSet<u32> = [1, 2].into();
        assert_eq!(
            restrict(vec![vec![0, 1], vec![1], vec![3]], &keep),
            vec![vec![1]]
        );
    }
}
