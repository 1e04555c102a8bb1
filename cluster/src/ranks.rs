//! The ranks of a run and where they are: host, binding and the CPU they ran on, with the
//! layout of every host; from them, how any two ranks are related ([`Relation`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::ClusterError;
use crate::layout::{NodeLayout, Relation};

/// Longest host name accepted.
pub const MAX_HOST_NAME: usize = 255;

/// What one rank reports about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankInfo {
    /// Its rank in the communicator.
    pub rank: usize,
    /// Its host (node) name, as MPI reports it (`MPI_Get_processor_name`).
    pub host: String,
    /// The CPUs it may run on (its binding), ascending; every CPU of the node when the
    /// launcher did not bind it.
    pub allowed: Vec<u32>,
    /// The CPU it ran on when it reported, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
}

/// One host of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Its name.
    pub name: String,
    /// Its ranks, ascending.
    pub ranks: Vec<usize>,
    /// Where its layout comes from (see [`NodeLayout::source`]).
    pub description: String,
}

/// The ranks of a run, their hosts and the hosts' layouts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ranks {
    ranks: Vec<RankInfo>,
    /// Host index of every rank.
    host_of: Vec<usize>,
    hosts: Vec<HostInfo>,
    layouts: Vec<NodeLayout>,
}

impl Ranks {
    /// The ranks of a run (`ranks[i].rank == i`) and the layout of every host by name (a
    /// host without one gets an unavailable layout). Hosts are numbered in the order of
    /// their first rank.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Ranks`] when a rank is missing, repeated or out of order, or a host
    /// name is empty or too long.
    pub fn new(
        ranks: Vec<RankInfo>,
        mut layouts: BTreeMap<String, NodeLayout>,
    ) -> Result<Self, ClusterError> {
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        let mut hosts: Vec<HostInfo> = Vec::new();
        let mut host_of = Vec::with_capacity(ranks.len());
        for (i, r) in ranks.iter().enumerate() {
            if r.rank != i {
                return Err(ClusterError::Ranks(format!(
                    "rank {i} reported itself as rank {}",
                    r.rank
                )));
            }
            if r.host.is_empty() || r.host.len() > MAX_HOST_NAME {
                return Err(ClusterError::Ranks(format!(
                    "rank {i} reported a host name of {} bytes (1 to {MAX_HOST_NAME} expected)",
                    r.host.len()
                )));
            }
            let next = hosts.len();
            let h = *index.entry(r.host.clone()).or_insert(next);
            if h == next {
                hosts.push(HostInfo {
                    name: r.host.clone(),
                    ranks: Vec::new(),
                    description: String::new(),
                });
            }
            hosts[h].ranks.push(i);
            host_of.push(h);
        }
        let layouts: Vec<NodeLayout> = hosts
            .iter_mut()
            .map(|h| {
                let l = layouts
                    .remove(&h.name)
                    .unwrap_or_else(|| NodeLayout::unavailable("no layout was reported"));
                h.description.clone_from(&l.source);
                l
            })
            .collect();
        Ok(Self {
            ranks,
            host_of,
            hosts,
            layouts,
        })
    }

    /// Number of ranks.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ranks.len()
    }

    /// Whether there is no rank.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// What every rank reported.
    #[must_use]
    pub fn ranks(&self) -> &[RankInfo] {
        &self.ranks
    }

    /// The hosts, in the order of their first rank.
    #[must_use]
    pub fn hosts(&self) -> &[HostInfo] {
        &self.hosts
    }

    /// The host index of rank `r` (panics when out of range: ranks are `0..len()`).
    #[must_use]
    pub fn host_of(&self, r: usize) -> usize {
        self.host_of[r]
    }

    /// The layout of host `h`.
    #[must_use]
    pub fn layout(&self, h: usize) -> &NodeLayout {
        &self.layouts[h]
    }

    /// How ranks `a` and `b` are related.
    #[must_use]
    pub fn relation(&self, a: usize, b: usize) -> Relation {
        let (ha, hb) = (self.host_of[a], self.host_of[b]);
        if ha != hb {
            return Relation::InterNode;
        }
        self.layouts[ha].relation(&self.ranks[a].allowed, &self.ranks[b].allowed)
    }

    /// The finest partition of the ranks the descriptions vouch for: by host, and within a
    /// host by the socket a rank is bound to (ranks not bound within one socket form a set
    /// of their own). Sets are ascending, in order of their first rank.
    #[must_use]
    pub fn partition(&self) -> Vec<Vec<usize>> {
        let mut sets: BTreeMap<(usize, Option<usize>), Vec<usize>> = BTreeMap::new();
        for (r, info) in self.ranks.iter().enumerate() {
            let h = self.host_of[r];
            let socket = self.layouts[h].socket_of(&info.allowed);
            sets.entry((h, socket)).or_default().push(r);
        }
        let mut v: Vec<Vec<usize>> = sets.into_values().collect();
        v.sort_by_key(|s| s[0]);
        v
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::layout::CpuPlace;

    /// `hosts` hosts of `sockets` sockets of `cores` cores, one rank bound to each core.
    pub(crate) fn bound_cluster(hosts: usize, sockets: usize, cores: usize) -> Ranks {
        let per_host = sockets * cores;
        let layout = NodeLayout {
            source: "test description".into(),
            cpus: (0..per_host)
                .map(|c| {
                    (
                        c as u32,
                        CpuPlace {
                            core: c,
                            groups: Vec::new(),
                            socket: c / cores,
                        },
                    )
                })
                .collect(),
        };
        let ranks = (0..hosts * per_host)
            .map(|r| RankInfo {
                rank: r,
                host: format!("node{}", r / per_host),
                allowed: vec![(r % per_host) as u32],
                cpu: Some((r % per_host) as u32),
            })
            .collect();
        let layouts = (0..hosts)
            .map(|h| (format!("node{h}"), layout.clone()))
            .collect();
        Ranks::new(ranks, layouts).unwrap()
    }

    #[test]
    fn relations_and_partition_follow_hosts_and_sockets() {
        let r = bound_cluster(2, 2, 2);
        assert_eq!(r.hosts().len(), 2);
        assert_eq!(r.hosts()[1].ranks, vec![4, 5, 6, 7]);
        assert_eq!(r.relation(0, 1), Relation::Socket);
        assert_eq!(r.relation(0, 2), Relation::OtherSocket);
        assert_eq!(r.relation(0, 4), Relation::InterNode);
        assert_eq!(
            r.partition(),
            vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
        );
    }

    #[test]
    fn bad_rank_lists_are_refused() {
        let info = |rank: usize, host: &str| RankInfo {
            rank,
            host: host.into(),
            allowed: vec![0],
            cpu: None,
        };
        let e = Ranks::new(vec![info(1, "a")], BTreeMap::new()).unwrap_err();
        assert!(
            e.to_string().contains("rank 0 reported itself as rank 1"),
            "{e}"
        );
        let e = Ranks::new(vec![info(0, "")], BTreeMap::new()).unwrap_err();
        assert!(e.to_string().contains("host name of 0 bytes"), "{e}");
        // A host without a layout: only the node is known.
        let r = Ranks::new(vec![info(0, "a"), info(1, "a")], BTreeMap::new()).unwrap();
        assert_eq!(r.relation(0, 1), Relation::Node);
        assert!(r.hosts()[0].description.starts_with("unavailable"));
    }
}
