//! A view narrowed to some CPUs and memory nodes: the machine as a process confined to
//! them sees it (hwloc's default view of a cgroup cpuset), or the CPUs a measurement
//! covered.

use super::OsView;

impl OsView {
    /// The view with only the online CPUs of `cpus` and, when `nodes` is given, only those
    /// NUMA nodes: sibling lists, caches and node members keep only those CPUs, caches
    /// left without one are dropped, and a node's distance row keeps the columns of the
    /// nodes kept. Offline CPUs, the cpuset and the notes are kept as they are.
    #[must_use]
    pub fn restricted(&self, cpus: &[u32], nodes: Option<&[u32]>) -> OsView {
        let keep = |set: &[u32]| -> Vec<u32> {
            set.iter().copied().filter(|c| cpus.contains(c)).collect()
        };
        let mut view = self.clone();
        view.cpus.retain(|c| cpus.contains(&c.id));
        for c in &mut view.cpus {
            c.thread_siblings = keep(&c.thread_siblings);
            c.core_siblings = keep(&c.core_siblings);
        }
        view.caches
            .retain(|c| c.cpus.iter().any(|x| cpus.contains(x)));
        for c in &mut view.caches {
            c.cpus = keep(&c.cpus);
        }
        if let Some(list) = view.nodes.as_mut() {
            let kept: Vec<usize> = (0..list.len())
                .filter(|&i| nodes.is_none_or(|n| n.contains(&list[i].id)))
                .collect();
            let all = list.len();
            let mut out = Vec::with_capacity(kept.len());
            for &i in &kept {
                let mut n = list[i].clone();
                n.cpus = keep(&n.cpus);
                if n.distances.len() == all {
                    n.distances = kept.iter().map(|&j| list[i].distances[j]).collect();
                }
                out.push(n);
            }
            *list = out;
        }
        if let Some(nodes) = nodes {
            view.memory_side_caches.retain(|m| nodes.contains(&m.node));
            view.initiators.retain(|n, _| nodes.contains(n));
        }
        for near in view.initiators.values_mut() {
            *near = keep(near);
        }
        view
    }

    /// The view a process confined by the cgroup cpuset sees, as hwloc shows it by
    /// default: only the allowed CPUs ([`OsView::cpuset`]) and NUMA nodes
    /// ([`OsView::allowed_nodes`]); the view itself when there is no cpuset.
    #[must_use]
    pub fn allowed_only(&self) -> OsView {
        if self.cpuset.is_none() && self.allowed_nodes.is_none() {
            return self.clone();
        }
        let cpus: Vec<u32> = match &self.cpuset {
            Some(allowed) => self
                .online()
                .into_iter()
                .filter(|c| allowed.contains(c))
                .collect(),
            None => self.online(),
        };
        self.restricted(&cpus, self.allowed_nodes.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use crate::{OsCpu, OsNode, OsView};

    fn view() -> OsView {
        let cpu = |id: u32| OsCpu {
            id,
            package: i64::from(id / 2),
            die: None,
            core: i64::from(id % 2),
            cluster: None,
            thread_siblings: vec![id],
            core_siblings: vec![id & !1, id | 1],
            node: Some(id / 2),
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        };
        let node = |id: u32, cpus: Vec<u32>, distances: Vec<u32>| OsNode {
            id,
            cpus,
            distances,
            memory_bytes: Some(1 << 30),
        };
        OsView {
            cpus: (0..4).map(cpu).collect(),
            nodes: Some(vec![
                node(0, vec![0, 1], vec![10, 20, 17]),
                node(1, vec![2, 3], vec![20, 10, 28]),
                node(2, vec![], vec![17, 28, 10]),
            ]),
            ..OsView::default()
        }
    }

    #[test]
    fn a_cpuset_narrows_cpus_nodes_and_distances() {
        let mut v = view();
        assert_eq!(v.allowed_only(), v, "no cpuset: the whole view");
        v.cpuset = Some(vec![1, 2, 3]);
        v.allowed_nodes = Some(vec![1, 2]);
        let a = v.allowed_only();
        assert_eq!(a.online(), vec![1, 2, 3]);
        assert_eq!(a.cpus[0].core_siblings, vec![1]);
        let nodes = a.nodes.as_ref().unwrap();
        let ids: Vec<u32> = nodes.iter().map(|n| n.id).collect();
        assert_eq!(ids, vec![1, 2]);
        assert_eq!(nodes[0].distances, vec![10, 28]);
        assert_eq!(nodes[1].distances, vec![28, 10]);
    }
}
