//! The views of `topoprobe cache`: the levels beside the OS's as a table (with the
//! sharing tests, the differences from the OS, the notes and, with `--curve`, the curve),
//! and the levels as CSV.

use std::fmt::Write as _;

use topoprobe_model::format::plural;
use topoprobe_model::results::cache::CacheResult;
use topoprobe_model::{ContextId, Origin};

use super::{csv_field, Rendered};

pub use topoprobe_model::size_text;

/// A size of the table as [`size_text`] says it; `-` when unknown.
fn cell(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "-".into(), size_text)
}

/// A level's instances: `{0,1} {2,3}`.
fn instances(shared_by: &[Vec<ContextId>]) -> String {
    if shared_by.is_empty() {
        return "unknown".into();
    }
    if shared_by.iter().all(|i| i.len() == 1) {
        return "each context alone".into();
    }
    let v: Vec<String> = shared_by
        .iter()
        .map(|i| {
            let ids: Vec<String> = i.iter().map(|c| c.0.to_string()).collect();
            format!("{{{}}}", ids.join(","))
        })
        .collect();
    v.join(" ")
}

/// An optional figure as CSV (empty when unknown).
fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}

impl Rendered for CacheResult {
    const HAS_CSV: bool = true;

    fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "caches of CPU {} ({} up to {}, 1 KiB positions in a random cyclic order, {}; {:.1} s)",
            self.cpu,
            plural(self.sizes_walked, "size"),
            size_text(self.max_bytes),
            self.pages,
            self.seconds
        );
        let _ = writeln!(
            out,
            "{:<5} {:<12} {:>10} {:>10} {:>22} {:>6}  found by",
            "level", "kind", "measured", "OS", "latency", "line"
        );
        for l in &self.levels {
            let latency = match (l.latency_ns, l.latency_cycles) {
                (Some(ns), Some(c)) => format!("{ns:.1} ns = {c:.0} cycles"),
                (Some(ns), None) => format!("{ns:.1} ns"),
                _ => "-".into(),
            };
            let _ = writeln!(
                out,
                "{:<5} {:<12} {:>10} {:>10} {:>22} {:>6}  {}",
                l.name,
                l.kind.map_or("-", |k| k.as_str()),
                cell(l.size_bytes),
                cell(l.os_size_bytes),
                latency,
                l.line_bytes.map_or("-".into(), |b| format!("{b} B")),
                l.method
            );
        }
        if let Some(ns) = self.memory_ns {
            let _ = writeln!(out, "beyond the last level: {ns:.1} ns per access");
        }
        for t in self.sharing_tests.iter().flatten() {
            let pairs: Vec<String> = t
                .test
                .pairs
                .iter()
                .map(|p| {
                    format!(
                        "{}+{}: {:.2}× alone, {:.0}% of the way to shared: {}",
                        p.a.0,
                        p.b.0,
                        p.ratio,
                        p.fraction * 100.0,
                        p.verdict.as_str()
                    )
                })
                .collect();
            let array = t.test.array_kib.map_or(String::new(), |k| {
                format!("arrays of {}, ", size_text(k * 1024))
            });
            let source = match t.test.source {
                Some(Origin::Os) => ", the OS's sharing kept",
                _ => "",
            };
            let _ = writeln!(
                out,
                "{} shared by: {} ({}{source}; {array}{})",
                t.level,
                instances(&t.shared_by),
                t.test.outcome.as_str(),
                if pairs.is_empty() {
                    "no pair walked".to_string()
                } else {
                    pairs.join(", ")
                }
            );
            if let Some(w) = &t.warning {
                let _ = writeln!(out, "warning: {w}");
            }
        }
        for d in self.os_differences.iter().flatten() {
            let _ = writeln!(
                out,
                "differs from the OS ({}): {} (re-run: {})",
                d.level.as_str(),
                d.message,
                d.rerun
            );
        }
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        if let Some(curve) = &self.curve {
            let _ = writeln!(out, "\nsize_bytes\tns_per_access\tns_4k_pages");
            for s in curve {
                let small = s.ns_4k_pages.map_or("-".to_string(), |x| format!("{x:.3}"));
                let _ = writeln!(out, "{}\t{:.3}\t{small}", s.size_bytes, s.ns);
            }
        }
        out
    }

    /// One line per level: its number, name and kind, measured and OS sizes, latency in
    /// ns and cycles, line size, agreement with the OS and how it was found.
    fn csv(&self) -> Option<String> {
        let mut out = String::from(
            "level,name,kind,size_bytes,os_size_bytes,latency_ns,latency_cycles,line_bytes,agreement,method\n",
        );
        for l in &self.levels {
            let agreement = l.agreement.and_then(|a| {
                serde_json::to_value(a)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
            });
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{}",
                l.level,
                csv_field(&l.name),
                l.kind.map_or("", |k| k.as_str()),
                opt(l.size_bytes),
                opt(l.os_size_bytes),
                opt(l.latency_ns.map(|x| format!("{x:.2}"))),
                opt(l.latency_cycles.map(|x| format!("{x:.1}"))),
                opt(l.line_bytes),
                agreement.unwrap_or_default(),
                csv_field(&l.method)
            );
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::results::cache::{CacheAgreement, CacheLevelResult};
    use topoprobe_model::{Budget, CacheType, CostPlan};

    fn result() -> CacheResult {
        CacheResult {
            cpu: 0,
            levels: vec![CacheLevelResult {
                level: 1,
                name: "L1d".into(),
                kind: Some(CacheType::Data),
                size_bytes: Some(32 << 10),
                os_size_bytes: Some(32 << 10),
                latency_ns: Some(1.234),
                latency_cycles: Some(3.0),
                line_bytes: Some(64),
                method: "step, = OS".into(),
                agreement: Some(CacheAgreement::Agrees),
                shared_by: Vec::new(),
            }],
            memory_ns: Some(80.0),
            notes: vec!["a note".into()],
            seconds: 1.0,
            max_bytes: 256 << 10,
            sizes_walked: 1,
            pages: "4 KiB pages".into(),
            cost: CostPlan::new(Budget::new(15.0, 1 << 29)),
            tlb: Vec::new(),
            sharing_tests: None,
            os_differences: None,
            curve: None,
        }
    }

    #[test]
    fn sizes_are_never_zero_kib() {
        assert_eq!(size_text(1), "1 B");
        assert_eq!(size_text(256 << 10), "256 KiB");
        assert_eq!(size_text(3 << 19), "1.5 MiB");
        assert_eq!(cell(Some(1)), "1 B");
        assert_eq!(cell(Some(2 << 20)), "2 MiB");
    }

    #[test]
    fn the_text_and_the_csv_show_every_level() {
        let r = result();
        let t = r.text();
        assert!(
            t.starts_with("caches of CPU 0 (1 size up to 256 KiB, 1 KiB positions"),
            "{t}"
        );
        assert!(
            t.contains("L1d   data             32 KiB     32 KiB"),
            "{t}"
        );
        assert!(
            t.contains("beyond the last level: 80.0 ns per access"),
            "{t}"
        );
        assert!(t.contains("note: a note"), "{t}");
        let c = r.csv().unwrap();
        assert_eq!(
            c.lines().nth(1),
            Some("1,L1d,data,32768,32768,1.23,3.0,64,agrees,\"step, = OS\"")
        );
        let j = crate::results::json(&r).unwrap();
        assert!(j.contains("\"agreement\": \"agrees\""), "{j}");
        assert!(!j.contains("sharing_tests"), "{j}");
    }
}
