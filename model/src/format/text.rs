//! The text view: a tree of sockets, groups, cores and contexts with the latency of every
//! level, like libmctop's textual output, followed by confidence, warnings and what was
//! given rather than inferred.

use std::fmt::Write as _;

use crate::components::Member;
use crate::ids::{CoreId, GroupId};
use crate::topology::Topology;

/// Renders the text view of a topology.
#[must_use]
pub fn render(topo: &Topology) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_view(topo, &mut out);
    out
}

/// `n thing` or `n things`.
fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

fn lat(topo: &Topology, v: f64) -> String {
    if v >= 100.0 || (v - v.round()).abs() < 1e-9 {
        format!("{v:.0} {}", topo.units())
    } else {
        format!("{v:.1} {}", topo.units())
    }
}

fn write_view(topo: &Topology, out: &mut String) -> std::fmt::Result {
    let facts = topo.facts();
    let per_core = topo.contexts_per_core();
    writeln!(
        out,
        "topoprobe: {}, {}, {}, {} ({})",
        plural(topo.num_contexts(), "hardware context"),
        plural(topo.num_cores(), "core"),
        plural(topo.num_groups(), "group"),
        plural(topo.num_sockets(), "socket"),
        topo.provenance().source
    )?;
    writeln!(
        out,
        "  sockets: {} ({})   SMT: {} ({})   nodes: {}   units: {}",
        facts.sockets.value,
        facts.sockets.origin,
        if facts.smt.value {
            format!("yes, up to {per_core} contexts per core")
        } else {
            "no".to_string()
        },
        facts.smt.origin,
        if topo.num_nodes() == 0 {
            "unknown".to_string()
        } else {
            topo.num_nodes().to_string()
        },
        topo.units()
    )?;
    writeln!(out)?;
    writeln!(out, "latency levels")?;
    for l in topo.levels() {
        writeln!(
            out,
            "  level {:<2} {:>12}  {:<12}  min {}  max {}  ({} pairs)",
            l.id,
            lat(topo, l.latency.median),
            l.role.as_str(),
            lat(topo, l.latency.min),
            lat(topo, l.latency.max),
            l.latency.count
        )?;
    }
    for s in topo.sockets() {
        writeln!(out)?;
        let node = s
            .local_node
            .map_or(String::new(), |n| format!("  [local node {}]", n.0));
        let inside = s.latency.map_or(String::new(), |l| {
            format!("  {} between its members", lat(topo, l.median))
        });
        writeln!(
            out,
            "socket {}: {}, {}{node}{inside}",
            s.id.0,
            plural(s.cores.len(), "core"),
            plural(s.contexts.len(), "context")
        )?;
        write_members(topo, &s.members, 1, out)?;
    }
    if !topo.interconnects().is_empty() {
        writeln!(out)?;
        writeln!(out, "interconnects")?;
        for i in topo.interconnects() {
            writeln!(
                out,
                "  socket {} <-> socket {}: {} (level {}, {} hop{})",
                i.a.0,
                i.b.0,
                lat(topo, i.latency.median),
                i.level,
                i.hops,
                if i.hops == 1 { "" } else { "s" }
            )?;
        }
    }
    write_sections(topo, out)?;
    let v = topo.validation();
    if !v.confidence.is_empty() {
        writeln!(out)?;
        writeln!(out, "confidence")?;
        for c in &v.confidence {
            writeln!(
                out,
                "  {:<7} {:.2}  {}",
                c.level.as_str(),
                c.confidence,
                c.basis
            )?;
        }
    }
    if !v.warnings.is_empty() {
        writeln!(out)?;
        writeln!(out, "warnings")?;
        for w in &v.warnings {
            writeln!(out, "  - {}: {}", w.kind, w.message)?;
        }
    }
    if !v.unresolved.is_empty() {
        writeln!(out)?;
        writeln!(out, "unresolved")?;
        for u in &v.unresolved {
            writeln!(out, "  - {}: {}", u.level.as_str(), u.reason)?;
        }
    }
    if !v.os_differences.is_empty() {
        writeln!(out)?;
        writeln!(out, "differences from the operating system")?;
        for d in &v.os_differences {
            writeln!(
                out,
                "  - {}: {} (re-run: {})",
                d.level.as_str(),
                d.message,
                d.rerun
            )?;
        }
    }
    Ok(())
}

fn core_label(topo: &Topology, c: CoreId) -> String {
    let ids: Vec<String> = topo
        .core_contexts(c)
        .iter()
        .map(|x| topo.contexts()[x.0].os_id.to_string())
        .collect();
    format!("core {} ({})", c.0, ids.join(","))
}

fn write_members(
    topo: &Topology,
    members: &[Member],
    depth: usize,
    out: &mut String,
) -> std::fmt::Result {
    let indent = "  ".repeat(depth);
    let mut line = String::new();
    let flush = |line: &mut String, out: &mut String| -> std::fmt::Result {
        if !line.is_empty() {
            writeln!(out, "{indent}{line}")?;
            line.clear();
        }
        Ok(())
    };
    for m in members {
        match *m {
            Member::Core(c) => {
                let label = core_label(topo, c);
                if !line.is_empty() && line.len() + label.len() + 2 > 96 {
                    flush(&mut line, out)?;
                }
                if !line.is_empty() {
                    line.push_str("  ");
                }
                line.push_str(&label);
            }
            Member::Group(g) => {
                flush(&mut line, out)?;
                write_group(topo, g, depth, out)?;
            }
        }
    }
    flush(&mut line, out)?;
    // SMT latency of the cores listed at this depth, once.
    let smt: Vec<f64> = members
        .iter()
        .filter_map(|m| match *m {
            Member::Core(c) if topo.core_contexts(c).len() > 1 => {
                let cs = topo.core_contexts(c);
                topo.context_latency(cs[0], cs[1])
            }
            _ => None,
        })
        .collect();
    if let (Some(min), Some(max)) = (
        smt.iter().copied().reduce(f64::min),
        smt.iter().copied().reduce(f64::max),
    ) {
        if (max - min).abs() < 1e-9 {
            writeln!(out, "{indent}(contexts of a core: {})", lat(topo, min))?;
        } else {
            writeln!(
                out,
                "{indent}(contexts of a core: {} to {})",
                lat(topo, min),
                lat(topo, max)
            )?;
        }
    }
    Ok(())
}

fn write_group(topo: &Topology, g: GroupId, depth: usize, out: &mut String) -> std::fmt::Result {
    let group = &topo.groups()[g.0];
    let indent = "  ".repeat(depth);
    let inside = group.latency.map_or(String::new(), |l| {
        format!(", {} between its members", lat(topo, l.median))
    });
    writeln!(
        out,
        "{indent}group {}: {}{inside} [{}]",
        g.0,
        plural(group.cores.len(), "core"),
        group.evidence
    )?;
    write_members(topo, &group.members, depth + 1, out)
}

fn write_sections(topo: &Topology, out: &mut String) -> std::fmt::Result {
    if let Some(mem) = topo.memory() {
        if !mem.latency.is_empty() || !mem.bandwidth.is_empty() {
            writeln!(out)?;
            writeln!(out, "memory")?;
            for l in &mem.latency {
                writeln!(
                    out,
                    "  latency from hwc {} to node {}: {}",
                    l.context.0,
                    l.node.0,
                    lat(topo, l.latency)
                )?;
            }
            for b in &mem.bandwidth {
                writeln!(
                    out,
                    "  bandwidth socket {} -> node {} ({:?}, {:?}): {:.1} GB/s",
                    b.socket.0, b.node.0, b.access, b.threads, b.gbps
                )?;
            }
        }
    }
    if let Some(c) = topo.caches() {
        if !c.levels.is_empty() {
            writeln!(out)?;
            writeln!(out, "caches")?;
            for l in &c.levels {
                let size = |v: Option<u64>| v.map_or("?".to_string(), |k| format!("{k} KiB"));
                writeln!(
                    out,
                    "  {:<4} latency {}, size {} (OS {})",
                    l.name(),
                    l.latency.map_or("?".to_string(), |v| lat(topo, v)),
                    size(l.measured_size_kib),
                    size(l.os_size_kib)
                )?;
            }
        }
    }
    if let Some(p) = topo.power() {
        if !p.entries.is_empty() {
            writeln!(out)?;
            writeln!(out, "power (W: cores, rest, package, dram, total)")?;
            for e in &p.entries {
                let scope = match e.scope {
                    crate::sections::PowerScope::Socket(s) => format!("socket {}", s.0),
                    crate::sections::PowerScope::Total => "total".to_string(),
                };
                writeln!(
                    out,
                    "  {scope:<9} {:<8} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2}",
                    e.state.mct_name(),
                    e.cores_w,
                    e.rest_w,
                    e.package_w,
                    e.dram_w,
                    e.total_w
                )?;
            }
        }
    }
    Ok(())
}
