//! Servet's memory-access overhead characterization (Fig. 6) as pure logic: pairs whose
//! concurrent bandwidth is similar form one overhead level, and the contexts connected by
//! a level's pairs form its groups.

use topoprobe_model::{ContentionLevel, ContentionPair, ContextId};

/// Bandwidths within this fraction of a level's are the same overhead (Servet's
/// "similar").
pub const SIMILAR: f64 = 0.10;
/// Concurrent bandwidth below this fraction of the bandwidth alone is an overhead.
pub const OVERHEAD: f64 = 0.90;

/// Groups measured pairs into overhead levels, highest overhead first. Pairs without a
/// significant overhead are in no level.
#[must_use]
pub fn levels(alone_gbps: f64, pairs: &[ContentionPair]) -> Vec<ContentionLevel> {
    // Fig. 6: each pair below the reference joins the first level of similar bandwidth,
    // or opens a new one.
    let mut found: Vec<(f64, Vec<&ContentionPair>)> = Vec::new();
    for p in pairs.iter().filter(|p| p.gbps < alone_gbps * OVERHEAD) {
        match found
            .iter_mut()
            .find(|(bw, _)| (p.gbps - *bw).abs() <= SIMILAR * *bw)
        {
            Some((_, members)) => members.push(p),
            None => found.push((p.gbps, vec![p])),
        }
    }
    found.sort_by(|a, b| a.0.total_cmp(&b.0));
    found
        .into_iter()
        .map(|(bw, members)| ContentionLevel {
            overhead: alone_gbps / bw,
            groups: components(&members),
            from_threads: None,
        })
        .collect()
}

/// Connected components of the pairs' contexts, each sorted, ordered by first context.
fn components(pairs: &[&ContentionPair]) -> Vec<Vec<ContextId>> {
    let mut ids: Vec<ContextId> = pairs.iter().flat_map(|p| [p.a, p.b]).collect();
    ids.sort_unstable();
    ids.dedup();
    let index = |c: ContextId| ids.binary_search(&c).unwrap_or(0);
    let mut parent: Vec<usize> = (0..ids.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for p in pairs {
        let (a, b) = (root(&mut parent, index(p.a)), root(&mut parent, index(p.b)));
        parent[a.max(b)] = a.min(b);
    }
    let mut groups: Vec<Vec<ContextId>> = Vec::new();
    let mut slot: Vec<Option<usize>> = vec![None; ids.len()];
    for (i, &id) in ids.iter().enumerate() {
        let r = root(&mut parent, i);
        let g = *slot[r].get_or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(id);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: usize, b: usize, gbps: f64) -> ContentionPair {
        ContentionPair {
            a: ContextId(a),
            b: ContextId(b),
            gbps,
            overhead: 10.0 / gbps,
        }
    }

    #[test]
    fn servets_example_gives_two_groups_per_level() {
        // Pm[i] = (0,1), (0,2), (3,4), (3,5): groups {0,1,2} and {3,4,5}.
        let pairs = [
            pair(0, 1, 5.0),
            pair(0, 2, 5.2),
            pair(3, 4, 4.9),
            pair(3, 5, 5.1),
            pair(0, 3, 8.0),
            pair(1, 4, 9.8),
        ];
        let lv = levels(10.0, &pairs);
        assert_eq!(lv.len(), 2, "{lv:?}");
        let ids = |g: &[ContextId]| g.iter().map(|c| c.0).collect::<Vec<_>>();
        assert_eq!(ids(&lv[0].groups[0]), [0, 1, 2]);
        assert_eq!(ids(&lv[0].groups[1]), [3, 4, 5]);
        assert!((lv[0].overhead - 2.0).abs() < 1e-9);
        assert_eq!(lv[1].groups.len(), 1);
        assert_eq!(ids(&lv[1].groups[0]), [0, 3]);
        // (1, 4) at 9.8 of 10 is no overhead.
    }

    #[test]
    fn simulated_two_socket_bus_machine() {
        // 8 contexts; 0-3 share one memory controller, 4-7 another: pairs inside a
        // controller get half the bandwidth, pairs across lose nothing.
        let mut pairs = Vec::new();
        for a in 0..8 {
            for b in a + 1..8 {
                let same = a / 4 == b / 4;
                let noise = 1.0 + 0.02 * ((a * 7 + b * 3) % 5) as f64 / 5.0;
                pairs.push(pair(a, b, if same { 6.0 * noise } else { 11.5 * noise }));
            }
        }
        let lv = levels(12.0, &pairs);
        assert_eq!(lv.len(), 1, "{lv:?}");
        assert_eq!(lv[0].groups.len(), 2);
        assert!(lv[0].groups.iter().all(|g| g.len() == 4));
        assert!(levels(12.0, &[]).is_empty());
    }
}
