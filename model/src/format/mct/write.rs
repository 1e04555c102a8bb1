//! Writing a topology in libmctop's `.mct` layout.

use std::collections::HashMap;
use std::io::{BufWriter, Write};

use super::layout::{mct_cache_line, scope_key, BANDWIDTH_SECTIONS};
use crate::sections::{
    CacheLevel, MemoryBandwidth, MemorySection, PowerScope, PowerSection, PowerState,
};
use crate::topology::Topology;

/// A latency as libmctop writes it: a whole number, at least 1 for a measured value; 0 for
/// none.
fn whole(v: Option<f64>) -> u64 {
    match v {
        Some(v) if v.is_finite() => {
            let r = v.round();
            if r < 1.0 {
                1
            } else {
                // Saturates for values beyond u64 (never produced by a reader).
                r as u64
            }
        }
        _ => 0,
    }
}

/// A host name usable as the first header token: no white space, no `#`.
fn header_host(topo: &Topology) -> String {
    let host = topo
        .machine()
        .hostname
        .as_deref()
        .filter(|h| !h.trim().is_empty())
        .unwrap_or("topoprobe");
    host.chars()
        .map(|c| {
            if c.is_whitespace() || c == '#' {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// Writes a topology in libmctop's `.mct` layout.
///
/// The header is `#<host> #HWCs <n> #Nodes <nodes> SMT <0|1>`, with the machine's host name
/// (`topoprobe` when unknown; white space and `#` replaced by `_`) and the number of memory
/// nodes (the number of sockets when no node is known). Then come N² lines `x y latency`
/// with the normalized latency rounded to a whole number (0 on the diagonal, at least 1 off
/// it; the raw latency where the normalized one is missing, the reverse direction where
/// both are missing, 0 when the pair has no latency at all, which libmctop cannot express),
/// then the memory sections (latencies and bandwidths, 0 where not measured; memory
/// latencies rounded like the latency table; copy bandwidths and fixed thread counts have
/// no place in the format and are left out), the cache levels and the power figures, each
/// only when the topology has them.
///
/// The format holds cycles. A topology in nanoseconds is converted with the clock
/// frequency `ghz`, or else the one recorded in its provenance (`ghz` parameter).
///
/// # Errors
///
/// Returns the error of the writer, or an [`std::io::ErrorKind::InvalidInput`] error when
/// the topology is in nanoseconds and no frequency is known.
pub fn write_mct(topo: &Topology, ghz: Option<f64>, w: &mut impl Write) -> std::io::Result<()> {
    let scale = checked_scale(topo, ghz)?;
    let whole = |v: Option<f64>| whole(v.map(|x| x * scale));
    let mut w = BufWriter::new(w);
    let n = topo.num_contexts();
    let nodes = if topo.num_nodes() > 0 {
        topo.num_nodes()
    } else {
        topo.num_sockets()
    };
    writeln!(
        w,
        "#{} #HWCs {n} #Nodes {nodes} SMT {}",
        header_host(topo),
        u8::from(topo.has_smt())
    )?;
    let t = topo.latency_tables();
    for x in 0..n {
        for y in 0..n {
            let lat = if x == y {
                0
            } else {
                whole(
                    t.normalized
                        .get(x, y)
                        .or_else(|| t.raw.get(x, y))
                        .or_else(|| t.normalized.get(y, x))
                        .or_else(|| t.raw.get(y, x)),
                )
            };
            writeln!(w, "{x:<4} {y:<4} {lat}")?;
        }
    }
    if let Some(mem) = topo.memory() {
        write_memory(&mut w, mem, n, nodes, topo.num_sockets(), scale)?;
    }
    if let Some(caches) = topo.caches() {
        writeln!(w, "#Cache_levels {}", caches.levels.len())?;
        let mut levels: Vec<(u32, &CacheLevel)> = caches
            .levels
            .iter()
            .map(|l| (mct_cache_line(l), l))
            .collect();
        levels.sort_by_key(|(line, _)| *line);
        for (line, l) in levels {
            writeln!(
                w,
                "Cache_level {:<3} Latency {:<6} SizeOS {:<5} SizeEst {:<5}",
                line,
                whole(l.latency),
                l.os_size_kib.unwrap_or(0),
                l.measured_size_kib.unwrap_or(0)
            )?;
        }
    }
    if let Some(power) = topo.power() {
        write_power(&mut w, power, topo.num_sockets())?;
    }
    w.flush()
}

/// Cycles per latency unit of a topology: 1 for cycles, the clock frequency in GHz for ns.
/// Checks, before anything is written, that [`write_mct`] can convert the topology's
/// latencies into cycles with `ghz` (or the frequency its provenance records).
///
/// # Errors
///
/// The [`std::io::ErrorKind::InvalidInput`] error [`write_mct`] would return.
pub fn check_mct_writable(topo: &Topology, ghz: Option<f64>) -> std::io::Result<()> {
    checked_scale(topo, ghz).map(|_| ())
}

/// Cycles per unit of the topology, checked against its figures.
fn checked_scale(topo: &Topology, ghz: Option<f64>) -> std::io::Result<f64> {
    let scale = cycles_per_unit(topo, ghz)?;
    check_scale(topo, scale)?;
    Ok(scale)
}

fn cycles_per_unit(topo: &Topology, ghz: Option<f64>) -> std::io::Result<f64> {
    match topo.units() {
        crate::units::LatencyUnit::Cycles => Ok(1.0),
        crate::units::LatencyUnit::Ns => ghz
            .or_else(|| {
                topo.provenance()
                    .parameters
                    .get("ghz")
                    .and_then(|g| g.parse().ok())
            })
            .filter(|g: &f64| g.is_finite() && *g > 0.0)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the .mct format holds latencies in cycles and this topology is in ns \
                     with no clock frequency recorded (descriptions measured by `topoprobe \
                     infer` record it, those inferred from a matrix do not): give it with \
                     --ghz to convert them",
                )
            }),
    }
}

/// Checks that the latencies survive the conversion to whole cycles: none above
/// [`MAX_LATENCY`](crate::format::csv::MAX_LATENCY), and distinct latency levels stay
/// distinct (a frequency far too low rounds them all to 1 cycle).
fn check_scale(topo: &Topology, scale: f64) -> std::io::Result<()> {
    if scale == 1.0 {
        return Ok(());
    }
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
    let ghz = format!("{:.4}", scale);
    let ghz = ghz.trim_end_matches('0').trim_end_matches('.');
    let t = topo.latency_tables();
    let max = (0..t.raw.len())
        .flat_map(|a| (0..t.raw.len()).filter_map(move |b| t.raw.get(a, b)))
        .fold(0.0_f64, f64::max);
    if max * scale > crate::format::lexer::MAX_LATENCY {
        return Err(invalid(format!(
            "at {ghz} GHz the largest latency ({max:.1} ns) is {:.3e} cycles, more than a \
             .mct reader accepts: is the frequency right?",
            max * scale
        )));
    }
    let mut cycles: Vec<u64> = topo
        .levels()
        .iter()
        .map(|l| whole(Some(l.latency.median * scale)))
        .collect();
    let levels = cycles.len();
    cycles.dedup();
    if cycles.len() < levels {
        return Err(invalid(format!(
            "at {ghz} GHz distinct latency levels round to the same number of cycles \
             ({}): is the frequency right?",
            cycles
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

fn write_memory(
    w: &mut impl Write,
    mem: &MemorySection,
    n: usize,
    nodes: usize,
    sockets: usize,
    scale: f64,
) -> std::io::Result<()> {
    if !mem.latency.is_empty() {
        let k = mem
            .latency
            .iter()
            .map(|l| l.node.0 + 1)
            .fold(nodes.max(1), usize::max);
        let mut table: HashMap<(usize, usize), f64> = HashMap::new();
        for l in &mem.latency {
            table.entry((l.context.0, l.node.0)).or_insert(l.latency);
        }
        writeln!(w, "#Mem_latencies {k}")?;
        for c in 0..n {
            for node in 0..k {
                let v = table.get(&(c, node)).copied().filter(|v| *v > 0.0);
                writeln!(w, "{c:<4} {node:<4} {}", whole(v.map(|x| x * scale)))?;
            }
        }
    }
    for (name, access, threads) in BANDWIDTH_SECTIONS {
        let entries: Vec<&MemoryBandwidth> = mem
            .bandwidth
            .iter()
            .filter(|b| b.access == access && b.threads == threads)
            .collect();
        if entries.is_empty() {
            continue;
        }
        let k = entries
            .iter()
            .map(|b| b.node.0 + 1)
            .fold(nodes.max(1), usize::max);
        let s_count = entries
            .iter()
            .map(|b| b.socket.0 + 1)
            .fold(sockets.max(1), usize::max);
        let mut table: HashMap<(usize, usize), f64> = HashMap::new();
        for b in &entries {
            table.entry((b.socket.0, b.node.0)).or_insert(b.gbps);
        }
        writeln!(w, "{name} {k}")?;
        for s in 0..s_count {
            for node in 0..k {
                let v = table.get(&(s, node)).copied().unwrap_or(0.0);
                writeln!(w, "{s:<4} {node:<4} {v:.6}")?;
            }
        }
    }
    Ok(())
}

fn write_power(w: &mut impl Write, power: &PowerSection, sockets: usize) -> std::io::Result<()> {
    let mut states: Vec<PowerState> = Vec::new();
    for s in PowerState::ALL {
        if power.entries.iter().any(|e| e.state == s) {
            states.push(s);
        }
    }
    let mut scopes: Vec<PowerScope> = power.entries.iter().map(|e| e.scope).collect();
    scopes.sort_by_key(scope_key);
    scopes.dedup();
    writeln!(w, "#Power_measurements {}", states.len())?;
    for scope in scopes {
        for &state in &states {
            let Some(e) = power
                .entries
                .iter()
                .find(|e| e.scope == scope && e.state == state)
            else {
                continue;
            };
            match scope {
                PowerScope::Socket(s) => write!(w, "Power_sockt_{}_{} \t", s.0, state.mct_name())?,
                PowerScope::Total => write!(w, "Power_total_{sockets}_{} \t", state.mct_name())?,
            }
            for v in [e.cores_w, e.rest_w, e.package_w, e.dram_w, e.total_w] {
                write!(w, "{v:<10.6} ")?;
            }
            writeln!(w)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_rounds_and_keeps_measured_values_positive() {
        assert_eq!(whole(None), 0);
        assert_eq!(whole(Some(0.2)), 1);
        assert_eq!(whole(Some(41.5)), 42);
        assert_eq!(whole(Some(f64::NAN)), 0);
        assert_eq!(whole(Some(1e300)), u64::MAX);
    }
}
