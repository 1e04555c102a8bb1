//! The views of `topoprobe mem`: latency from each measured context, the bandwidth table,
//! the local nodes, warnings and notes; and the socket -> node table as CSV.

use std::fmt::Write as _;

use topoprobe_model::format::plural;
use topoprobe_model::results::memory::MemoryResult;

use super::cache::size_text;
use super::Rendered;

/// A figure of the table with one decimal, `-` when missing.
fn fig(v: Option<f64>, width: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:>width$.1}"),
        _ => format!("{:>width$}", "-"),
    }
}

/// An optional value as CSV (empty when missing).
fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}

/// What ACPI HMAT says of each measured node (CPU initiators' class when given, else any
/// initiator's), beside the best latency and read bandwidth measured to it.
fn firmware(r: &MemoryResult) -> String {
    let mut out = String::new();
    let mut nodes: Vec<u32> = r.hmat.iter().map(|h| h.node).collect();
    nodes.dedup();
    if nodes.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "firmware (ACPI HMAT) beside the measurement, per node: from its best initiators"
    );
    for node in nodes {
        let Some(h) = r
            .hmat
            .iter()
            .filter(|h| h.node == node)
            .max_by_key(|h| h.class)
        else {
            continue;
        };
        let ns = |v: Option<u64>| v.map_or("-".into(), |x| format!("{x} ns"));
        let gbps =
            |v: Option<u64>| v.map_or("-".into(), |x| format!("{:.1} GB/s", x as f64 / 1000.0));
        let rows = r.results.iter().filter(|x| x.node == node);
        let latency = rows
            .clone()
            .filter_map(|x| x.latency_ns)
            .min_by(f64::total_cmp);
        let read = rows.filter_map(|x| x.read_gbps).max_by(f64::total_cmp);
        let initiators: Vec<String> = h.initiators.iter().map(u32::to_string).collect();
        let mut measured: Vec<String> = Vec::new();
        if let Some(l) = latency {
            measured.push(format!("{l:.1} ns"));
        }
        if let Some(b) = read {
            measured.push(format!("{b:.1} GB/s read"));
        }
        if measured.is_empty() {
            measured.push("nothing".into());
        }
        let _ =
            writeln!(
            out,
            "  node {node} (access{}, initiator nodes {}): read {} {}, write {} {}; measured: {}",
            h.class,
            if initiators.is_empty() { "-".to_string() } else { initiators.join(",") },
            ns(h.read_latency_ns),
            gbps(h.read_bandwidth_mbps),
            ns(h.write_latency_ns),
            gbps(h.write_bandwidth_mbps),
            measured.join(", ")
        );
    }
    out
}

impl Rendered for MemoryResult {
    const HAS_CSV: bool = true;

    fn text(&self) -> String {
        let mut out = String::new();
        // Whether the huge pages asked for were granted, from /proc/self/smaps.
        let huge = match self.huge_pages_share {
            Some(s) => format!("huge pages ({:.0}% of the buffer granted)", s * 100.0),
            None => "huge pages".into(),
        };
        let _ = writeln!(
            out,
            "memory latency ({}; {huge}, and scattered over the buffer on 4 KiB pages)",
            self.working_set
        );
        for l in &self.latency {
            let ns = l.huge_pages_ns.or(l.small_pages_ns);
            let cyc = match (ns, self.ghz) {
                (Some(ns), Some(g)) => format!(" = {:.0} cycles", ns * g),
                _ => String::new(),
            };
            let huge = l.huge_pages_ns.map_or("-".into(), |h| format!("{h:.1} ns"));
            let huge = match (l.huge_pages_ns, l.small_pages_ns) {
                (None, Some(s)) => format!("{s:.1} ns on 4 KiB pages"),
                _ => huge,
            };
            let small = match (l.scattered_ns, ns) {
                (Some(s), Some(n)) => format!(
                    " / scattered {s:.1} ns (+{:.1} ns of TLB misses and DRAM page changes)",
                    s - n
                ),
                (Some(s), None) => format!(" / scattered {s:.1} ns"),
                (None, _) => String::new(),
            };
            let _ = writeln!(
                out,
                "  socket {} (CPU {}) -> node {}: {huge}{cyc}{small}",
                l.socket, l.cpu, l.node
            );
        }
        let bandwidth: Vec<_> = self.results.iter().filter(|r| r.spread.is_some()).collect();
        if let (Some(bytes), false) = (self.bandwidth_working_set_bytes, bandwidth.is_empty()) {
            let _ = writeln!(
                out,
                "memory bandwidth (GB/s, {} kernels{}, {} working set, evicted before every pass)",
                self.isa,
                if self.non_temporal {
                    ", non-temporal stores for write and copy"
                } else {
                    ""
                },
                size_text(bytes)
            );
            let _ = writeln!(
                out,
                "  socket  node  threads     read    write     copy  spread  rounds"
            );
            for b in bandwidth {
                let _ = writeln!(
                    out,
                    "  {:>6}  {:>4}  {:>7}  {}  {}  {}  {:>5.1}%  {:>6}",
                    b.socket,
                    b.node,
                    b.threads,
                    fig(b.read_gbps, 7),
                    fig(b.write_gbps, 7),
                    fig(b.copy_gbps, 7),
                    b.spread.unwrap_or(0.0) * 100.0,
                    b.rounds.unwrap_or(0)
                );
            }
        }
        out.push_str(&firmware(self));
        if let Some(c2c) = &self.detail.cache_to_cache {
            out.push_str(&super::cache_to_cache::text(c2c));
        }
        out.push_str(&crate::memory_load::text(
            &crate::memory_load::MemoryLoad::from(&self.detail),
        ));
        for l in &self.local_nodes {
            let _ = writeln!(
                out,
                "socket {}: local node {} (lowest latency)",
                l.socket, l.node
            );
        }
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        let _ = writeln!(
            out,
            "measured {} of {}; {}",
            self.pairs_measured,
            plural(self.pairs_total, "socket -> node pair"),
            crate::cost::summary(&self.cost)
        );
        out
    }

    /// One line per socket -> node pair and thread count: latency (ns and cycles) and
    /// read, write and copy bandwidth (GB/s; empty with `--latency-only`).
    fn csv(&self) -> Option<String> {
        let mut out = String::from(
            "socket,node,threads,latency_ns,latency_cycles,read_gbps,write_gbps,copy_gbps,spread,rounds\n",
        );
        let f =
            |v: Option<f64>, d: usize| opt(v.filter(|x| x.is_finite()).map(|x| format!("{x:.d$}")));
        for r in &self.results {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{}",
                r.socket,
                r.node,
                r.threads,
                f(r.latency_ns, 2),
                f(r.latency_cycles, 0),
                f(r.read_gbps, 2),
                f(r.write_gbps, 2),
                f(r.copy_gbps, 2),
                f(r.spread, 4),
                opt(r.rounds)
            );
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::results::memory::{LocalNode, MemoryLatencyRow, MemoryRow};
    use topoprobe_model::{Budget, CostPlan};

    fn result() -> MemoryResult {
        MemoryResult {
            results: vec![MemoryRow {
                socket: 0,
                node: 0,
                threads: 1,
                latency_ns: Some(95.5),
                latency_cycles: None,
                read_gbps: None,
                write_gbps: None,
                copy_gbps: None,
                spread: None,
                rounds: None,
            }],
            latency: vec![MemoryLatencyRow {
                cpu: 0,
                socket: 0,
                node: 0,
                huge_pages_ns: Some(95.5),
                small_pages_ns: None,
                scattered_ns: None,
                huge_pages_share: Some(1.0),
            }],
            local_nodes: vec![LocalNode { socket: 0, node: 0 }],
            isa: "avx2".into(),
            working_set_bytes: 1 << 20,
            working_set: "random chase in 256 KiB windows over 1 MiB in its steady state".into(),
            evicted: false,
            huge_pages_share: Some(1.0),
            bandwidth_working_set_bytes: None,
            non_temporal: false,
            last_level_cache_bytes: Some(32 << 20),
            memory_reached: false,
            pairs_measured: 1,
            pairs_total: 1,
            ghz: None,
            warnings: vec!["the chase's 1 MiB is less than twice the cache".into()],
            notes: Vec::new(),
            cost: CostPlan::new(Budget::new(15.0, 1 << 29)),
            hmat: Vec::new(),
            detail: topoprobe_model::MemoryDetail::default(),
        }
    }

    #[test]
    fn hmat_figures_stand_beside_the_measured_ones() {
        let mut r = result();
        assert!(!r.text().contains("HMAT"));
        r.hmat = vec![topoprobe_model::OsHmatAccess {
            node: 0,
            class: 1,
            initiators: vec![0],
            read_latency_ns: Some(90),
            write_latency_ns: None,
            read_bandwidth_mbps: Some(20_000),
            write_bandwidth_mbps: None,
        }];
        let t = r.text();
        assert!(
            t.contains("  node 0 (access1, initiator nodes 0): read 90 ns 20.0 GB/s, write - -; measured: 95.5 ns"),
            "{t}"
        );
        let j = crate::results::json(&r).unwrap();
        assert!(j.contains("\"read_latency_ns\": 90"), "{j}");
    }

    #[test]
    fn a_latency_only_result_warns_and_counts_in_the_singular() {
        let t = result().text();
        assert!(t.contains("  socket 0 (CPU 0) -> node 0: 95.5 ns\n"), "{t}");
        assert!(t.contains("huge pages (100% of the buffer granted)"), "{t}");
        assert!(!t.contains("memory bandwidth"), "{t}");
        assert!(t.contains("warning: the chase's 1 MiB"), "{t}");
        assert!(t.contains("measured 1 of 1 socket -> node pair; "), "{t}");
        let c = result().csv().unwrap();
        assert_eq!(c.lines().nth(1), Some("0,0,1,95.50,,,,,,"));
        let j = crate::results::json(&result()).unwrap();
        assert!(j.contains("\"memory_reached\": false"), "{j}");
        assert!(j.contains("\"huge_pages_share\": 1"), "{j}");
        assert!(j.contains("\"read_gbps\": null"), "{j}");
        // The `--full` fields are left out of a default run's JSON.
        assert!(
            !j.contains("loaded_latency") && !j.contains("node_matrix"),
            "{j}"
        );
    }

    #[test]
    fn a_full_result_shows_mixes_and_saturation() {
        let mut r = result();
        r.detail.mixes = vec![topoprobe_model::MixBandwidth {
            socket: 0,
            node: 0,
            mix: topoprobe_model::Mix::TwoToOne,
            non_temporal: true,
            threads: 2,
            gbps: 41.0,
        }];
        r.detail.saturation = vec![topoprobe_model::Saturation::of(
            0,
            0,
            vec![(1, 20.0), (2, 39.0)],
        )];
        let t = r.text();
        assert!(t.contains("2:1"), "{t}");
        assert!(t.contains("41.0"), "{t}");
        assert!(t.contains("2 threads reach 95% of the peak"), "{t}");
    }
}
