//! The text of `topoprobe contention`: the bandwidth alone, the pairs copying together,
//! the socket curve and the overhead levels with their scalability.

use std::fmt::Write as _;

use topoprobe_model::format::plural;
use topoprobe_model::results::contention::ContentionResult;
use topoprobe_model::ContextId;

use super::Rendered;

/// A group of contexts: `{0,1}`.
fn ids(g: &[ContextId]) -> String {
    let v: Vec<String> = g.iter().map(|c| c.0.to_string()).collect();
    format!("{{{}}}", v.join(","))
}

impl Rendered for ContentionResult {
    fn text(&self) -> String {
        let s = &self.section;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "copy bandwidth of one context alone: {:.1} GB/s",
            s.alone_gbps
        );
        if !s.pairs.is_empty() {
            let _ = writeln!(
                out,
                "pairs copying at the same time (GB/s per thread, slowdown):"
            );
        }
        for p in &s.pairs {
            let _ = writeln!(
                out,
                "  {} + {}: {:.1} GB/s, {:.2}×",
                p.a.0, p.b.0, p.gbps, p.overhead
            );
        }
        if s.levels.is_empty() {
            let _ = writeln!(
                out,
                "no overhead groups: concurrent copies lose less than 10%"
            );
        }
        if let Some(c) = &s.socket_curve {
            let points: Vec<String> = c
                .points
                .iter()
                .map(|p| format!("{}: {:.1}", p.threads, p.gbps))
                .collect();
            let _ = writeln!(
                out,
                "socket {} curve, threads spread over its cores (GB/s in all): {}",
                c.socket.0,
                points.join(", ")
            );
            let _ = writeln!(out, "  {}", c.summary(s.alone_gbps));
        }
        for (i, l) in s.levels.iter().enumerate() {
            let groups: Vec<String> = l.groups.iter().map(|g| ids(g)).collect();
            let how = match l.from_threads {
                Some(k) => format!(
                    "{:.2}× slower per thread at the curve's largest count, from {} on",
                    l.overhead,
                    plural(k, "thread")
                ),
                None => format!("{:.2}× slower together", l.overhead),
            };
            let _ = writeln!(
                out,
                "overhead level {i}: {how}; groups {}",
                groups.join(" ")
            );
            let points: Vec<String> = s
                .scalability
                .iter()
                .filter(|p| p.level == i)
                .map(|p| format!("{}: {:.1}", p.threads, p.gbps))
                .collect();
            if !points.is_empty() {
                let _ = writeln!(
                    out,
                    "  bandwidth by threads in one group (GB/s): {}",
                    points.join(", ")
                );
            }
        }
        for n in self.cost.left_out.iter().chain(&self.notes) {
            let _ = writeln!(out, "note: {n}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{Budget, ContentionPair, ContentionSection, CostPlan};

    #[test]
    fn the_json_is_the_section_with_its_cost() {
        let r = ContentionResult {
            section: ContentionSection {
                alone_gbps: 10.0,
                pairs: vec![ContentionPair {
                    a: ContextId(0),
                    b: ContextId(1),
                    gbps: 9.5,
                    overhead: 1.05,
                }],
                ..ContentionSection::default()
            },
            cost: CostPlan::new(Budget::new(15.0, 1 << 29)),
            notes: Vec::new(),
        };
        let t = r.text();
        assert!(
            t.starts_with("copy bandwidth of one context alone: 10.0 GB/s\n"),
            "{t}"
        );
        assert!(t.contains("  0 + 1: 9.5 GB/s, 1.05×"), "{t}");
        assert!(t.contains("no overhead groups"), "{t}");
        let j = crate::results::json(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["alone_gbps"], 10.0);
        assert_eq!(v["pairs"][0]["overhead"], 1.05);
        assert!(v["cost"]["budget"].is_object(), "{v}");
    }
}
