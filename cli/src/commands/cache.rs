//! `topoprobe cache`: cache sizes and latencies by measurement, beside the OS's.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use topoprobe_measure::cache::check::size_text;
use topoprobe_measure::cache::{self, shared, CacheOptions, CacheReport, HugePages, Method};
use topoprobe_measure::os;
use topoprobe_measure::timer::Timer;
use topoprobe_model::{ContextId, OsDifference};
use topoprobe_sys::affinity;

use crate::args::CacheArgs;

/// Runs the command.
pub(crate) fn run(args: &CacheArgs) -> Result<()> {
    args.report.check(&[])?;
    let cpu = match args.cpu {
        Some(c) => c,
        None => affinity::allowed_cpus()
            .context("finding the CPUs this process may use")?
            .iter()
            .next()
            .context("this process may use no CPU")?,
    };
    let view = os::current().ok();
    let timer = Timer::calibrate();
    let opts = CacheOptions {
        cpu,
        max_bytes: args.max_size,
        ghz: timer.cycle_ghz(),
        pages: match (args.huge_pages, args.small_pages) {
            (true, _) => cache::Pages::Huge,
            (false, true) => cache::Pages::Small,
            (false, false) => cache::Pages::Both,
        },
        budget: args.planning.budget(cache::DEFAULT_BUDGET),
        ..CacheOptions::default()
    };
    if args.planning.plan {
        let levels = view
            .as_ref()
            .map_or_else(Vec::new, |os| topoprobe_measure::plan::cache_sizes(os, cpu));
        let mut plan =
            cache::plan_caches(&levels, topoprobe_measure::memory::thp_available(), &opts).cost();
        if args.shared {
            let topo = crate::inputs::topology(args.topology.as_deref())?;
            let shape = topoprobe_measure::plan::Shape::from_topology(&topo, view.as_ref());
            plan.extend(topoprobe_machine::plugins::plan_plugin(
                topoprobe_machine::plugins::Plugin::SharedCaches,
                &shape,
                None,
                view.as_ref(),
                opts.budget,
            ));
        }
        return crate::planned::print(&plan, args.report.is_json()?, args.report.output.as_deref());
    }
    let bar = crate::progress::spinner("caches");
    bar.set_message(format!("walking arrays on CPU {cpu}"));
    let report = cache::measure_caches(view.as_ref(), &opts);
    bar.finish_and_clear();
    let mut report = report.with_context(|| format!("measuring the caches on CPU {cpu}"))?;
    let mut tests = Vec::new();
    let mut differences = Vec::new();
    if args.shared {
        let mut topo = crate::inputs::topology(args.topology.as_deref())?;
        topo.set_caches(Some(report.section.clone()));
        let shape = topoprobe_measure::plan::Shape::from_topology(&topo, view.as_ref());
        let left = opts
            .budget
            .with_seconds((opts.budget.seconds - report.seconds).max(1.0));
        let (sharing, plan) =
            topoprobe_machine::plugins::shared_setup(&topo, view.as_ref(), &shape, left);
        report.notes.extend(plan.left_out);
        tests = topoprobe_machine::plugins::measure_sharing(
            &topo,
            view.as_ref(),
            &mut report.section,
            &sharing,
        )?;
        if let Some(v) = &view {
            topo.set_caches(Some(report.section.clone()));
            differences = topoprobe_infer::compare::section_differences(&topo, v);
        }
    }
    let text = if args.report.is_json()? {
        json(&report, &tests, &differences, args.curve)?
    } else {
        text(&report, &tests, &differences, cpu, args.curve)
    };
    args.report.write(text.as_bytes())
}

fn kib(v: Option<u64>) -> String {
    match v {
        None => "-".into(),
        Some(k) if k >= 1024 && k % 1024 == 0 => format!("{} MiB", k / 1024),
        Some(k) => format!("{k} KiB"),
    }
}

/// How a level's size was found and how it compares with the OS's.
fn method(report: &CacheReport, index: usize) -> String {
    let Some(check) = report.checks.get(index) else {
        return String::new();
    };
    let how = match check.found.map(|f| f.method) {
        None => return check.agreement.describe().to_string(),
        Some(Method::Step) => "step",
        Some(Method::Probabilistic) => "probabilistic",
        Some(Method::Incomplete) => "probabilistic (curve still rising)",
    };
    match (check.agreement, check.found) {
        (cache::check::Agreement::Explains, Some(f)) => format!(
            "{how}, {} (fit alone: {})",
            check.agreement.describe(),
            size_text(f.bytes)
        ),
        (a, _) => format!("{how}, {}", a.describe()),
    }
}

fn pages(report: &CacheReport) -> String {
    match &report.huge_pages {
        HugePages::Granted { fraction } => format!(
            "huge pages ({:.0}% of the array){}",
            fraction * 100.0,
            if report.small_pages.is_some() {
                ", then 4 KiB pages"
            } else {
                ""
            }
        ),
        HugePages::Unavailable(_) => "4 KiB pages".into(),
    }
}

/// Each level's sharing test: its name and result.
type SharingTests = [(String, shared::LevelSharing)];

fn text(
    report: &CacheReport,
    tests: &SharingTests,
    differences: &[OsDifference],
    cpu: u32,
    curve: bool,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "caches of CPU {cpu} ({} sizes up to {}, 1 KiB positions in a random cyclic order, {}; {:.1} s)",
        report.samples.len(),
        size_text(report.max_bytes),
        pages(report),
        report.seconds
    );
    let _ = writeln!(
        out,
        "{:<5} {:<12} {:>10} {:>10} {:>22} {:>6}  found by",
        "level", "kind", "measured", "OS", "latency", "line"
    );
    for (i, l) in report.section.levels.iter().enumerate() {
        let latency = match (l.latency, l.cycles) {
            (Some(ns), Some(c)) => format!("{ns:.1} ns = {c:.0} cycles"),
            (Some(ns), None) => format!("{ns:.1} ns"),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:<5} {:<12} {:>10} {:>10} {:>22} {:>6}  {}",
            l.name(),
            l.kind.map_or("-", |k| k.as_str()),
            kib(l.measured_size_kib),
            kib(l.os_size_kib),
            latency,
            l.line_bytes.map_or("-".into(), |b| format!("{b} B")),
            method(report, i)
        );
    }
    if let Some(mem) = report.found.last() {
        let _ = writeln!(
            out,
            "beyond the last level: {:.1} ns per access",
            mem.miss_ns
        );
    }
    for (name, t) in tests {
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
            Some(topoprobe_model::Origin::Os) => ", the OS's sharing kept",
            _ => "",
        };
        let _ = writeln!(
            out,
            "{name} shared by: {} ({}{source}; {array}{})",
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
    for d in differences {
        let _ = writeln!(
            out,
            "differs from the OS ({}): {} (re-run: {})",
            d.level.as_str(),
            d.message,
            d.rerun
        );
    }
    for n in &report.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if curve {
        let _ = writeln!(out, "\nsize_bytes\tns_per_access\tns_4k_pages");
        for (i, s) in report.samples.iter().enumerate() {
            let small = report
                .small_pages
                .as_ref()
                .and_then(|v| v.get(i))
                .map_or("-".to_string(), |x| format!("{:.3}", x.ns));
            let _ = writeln!(out, "{}\t{:.3}\t{small}", s.bytes, s.ns);
        }
    }
    out
}

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

fn json(
    report: &CacheReport,
    tests: &SharingTests,
    differences: &[OsDifference],
    curve: bool,
) -> Result<String> {
    let levels: Vec<serde_json::Value> = report
        .section
        .levels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            serde_json::json!({
                "level": l.level,
                "kind": l.kind.map(|k| k.as_str()),
                "size_bytes": l.measured_size_kib.map(|k| k * 1024),
                "os_size_bytes": l.os_size_kib.map(|k| k * 1024),
                "latency_ns": l.latency,
                "line_bytes": l.line_bytes,
                "latency_cycles": l.cycles,
                "method": method(report, i),
                "agreement": report.checks.get(i).map(|c| format!("{:?}", c.agreement).to_lowercase()),
                "shared_by": l.shared_by.iter().map(|i| i.iter().map(|c| c.0).collect::<Vec<_>>()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut v = serde_json::json!({
        "levels": levels,
        "memory_ns": report.found.last().map(|f| f.miss_ns),
        "notes": report.notes,
        "seconds": report.seconds,
        "max_bytes": report.max_bytes,
        "pages": pages(report),
        "cost": report.cost,
        "tlb": report.tlb.iter().map(|t| serde_json::json!({
            "page_bytes": t.page_bytes,
            "reach_bytes": t.reach_bytes,
            "entries": t.entries(),
            "extra_ns": t.extra_ns,
        })).collect::<Vec<_>>(),
    });
    if !tests.is_empty() {
        v["sharing_tests"] = tests
            .iter()
            .map(|(name, t)| {
                serde_json::json!({
                    "level": name,
                    "shared_by": t.shared_by.iter().map(|i| i.iter().map(|c| c.0).collect::<Vec<_>>()).collect::<Vec<_>>(),
                    "test": t.test,
                    "warning": t.warning,
                })
            })
            .collect();
        v["os_differences"] = serde_json::to_value(differences)?;
    }
    if curve {
        v["curve"] = report
            .samples
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let small = report
                    .small_pages
                    .as_ref()
                    .and_then(|v| v.get(i))
                    .map(|x| x.ns);
                serde_json::json!({"size_bytes": s.bytes, "ns": s.ns, "ns_4k_pages": small})
            })
            .collect();
    }
    Ok(format!("{}\n", serde_json::to_string_pretty(&v)?))
}
