//! Views of the richer memory measurements (`topoprobe mem --full`): the node × node
//! matrices and the mixes as text and HTML tables, the saturating thread counts, and the
//! loaded-latency curves as text and as an SVG plot (bandwidth across, latency up, the
//! knee marked).

use std::fmt::Write as _;

use topoprobe_model::format::escape_xml as e;
use topoprobe_model::{
    LoadedCurve, MemoryDetail, MixBandwidth, NodeMatrix, Saturation, KNEE_FACTOR,
};

/// The measurements this module shows, borrowed from a memory section or a `mem` result.
#[derive(Debug, Clone, Copy)]
pub struct MemoryLoad<'a> {
    /// The node × node matrices.
    pub matrix: Option<&'a NodeMatrix>,
    /// The mixes.
    pub mixes: &'a [MixBandwidth],
    /// The saturating thread counts.
    pub saturation: &'a [Saturation],
    /// The loaded-latency curves.
    pub loaded: &'a [LoadedCurve],
}

impl<'a> From<&'a MemoryDetail> for MemoryLoad<'a> {
    fn from(d: &'a MemoryDetail) -> Self {
        Self {
            matrix: d.node_matrix.as_ref(),
            mixes: &d.mixes,
            saturation: &d.saturation,
            loaded: &d.loaded_latency,
        }
    }
}

impl MemoryLoad<'_> {
    /// Whether there is anything to show.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.matrix.is_none()
            && self.mixes.is_empty()
            && self.saturation.is_empty()
            && self.loaded.is_empty()
    }
}

/// A cell: one decimal, `-` when missing.
fn cell(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(|| "-".into(), |x| format!("{x:.1}"))
}

/// The name of a curve: `socket 0 -> node 1 (local)`.
fn curve_name(c: &LoadedCurve) -> String {
    format!(
        "socket {} -> node {} ({})",
        c.socket,
        c.node,
        if c.local { "local" } else { "remote" }
    )
}

/// The measurements as text, for the terminal.
#[must_use]
pub fn text(m: &MemoryLoad<'_>) -> String {
    let mut out = String::new();
    if let Some(x) = m.matrix {
        for (title, rows) in [
            ("idle latency node × node (ns)", &x.latency_ns),
            (
                "read bandwidth node × node (GB/s, every context of the initiator)",
                &x.read_gbps,
            ),
        ] {
            let _ = writeln!(out, "{title}");
            let _ = write!(out, "  {:>10}", "");
            for t in &x.targets {
                let _ = write!(out, " {:>8}", format!("node {t}"));
            }
            let _ = writeln!(out);
            for (i, init) in x.initiators.iter().enumerate() {
                let _ = write!(out, "  {:>10}", init.name);
                for v in rows.get(i).into_iter().flatten() {
                    let _ = write!(out, " {:>8}", cell(*v));
                }
                let _ = writeln!(out);
            }
        }
        if x.pairs_measured < x.pairs_total {
            let _ = writeln!(
                out,
                "  ({} of {} pairs measured within the budget; `-`: left out)",
                x.pairs_measured, x.pairs_total
            );
        }
    }
    if !m.mixes.is_empty() {
        let _ = writeln!(
            out,
            "bandwidth of read/write mixes (GB/s of program reads and writes)"
        );
        let _ = writeln!(
            out,
            "  socket  node  threads  mix        regular stores  non-temporal stores"
        );
        for r in mix_rows(m.mixes) {
            let _ = writeln!(
                out,
                "  {:>6}  {:>4}  {:>7}  {:<9}  {:>14}  {:>19}",
                r.socket,
                r.node,
                r.threads,
                r.mix.name(),
                cell(r.regular),
                cell(r.non_temporal)
            );
        }
    }
    for sat in m.saturation {
        let points: Vec<String> = sat
            .points
            .iter()
            .map(|(t, g)| format!("{t}: {g:.1}"))
            .collect();
        let _ = writeln!(
            out,
            "saturation socket {} -> node {}: {} (peak {} GB/s; reads by thread count: {})",
            sat.socket,
            sat.node,
            saturating_threads(sat),
            cell(sat.peak_gbps),
            points.join(", ")
        );
    }
    for c in m.loaded {
        let _ = write!(
            out,
            "loaded latency {} (chase on CPU {}, {} loader{})",
            curve_name(c),
            c.chase_cpu,
            c.loaders.len(),
            if c.loaders.len() == 1 { "" } else { "s" }
        );
        // A curve that is not a measurement says why, and none of its figures.
        if let Some(reason) = &c.unavailable {
            let _ = writeln!(out, ": unavailable: {reason}");
            for w in &c.warnings {
                let _ = writeln!(out, "  warning: {w}");
            }
            continue;
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "     delay     GB/s  latency ns");
        for p in &c.points {
            let _ = writeln!(
                out,
                "  {:>8}  {:>7.1}  {:>10.1}",
                p.delay.map_or_else(|| "idle".into(), |d| d.to_string()),
                p.gbps,
                p.latency_ns
            );
        }
        match c.knee {
            Some(k) => {
                let _ = writeln!(
                    out,
                    "  knee: latency passes {KNEE_FACTOR}× idle at {:.1} GB/s",
                    k.gbps
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "  knee: not reached (latency stayed under {KNEE_FACTOR}× idle)"
                );
            }
        }
        for w in &c.warnings {
            let _ = writeln!(out, "  warning: {w}");
        }
    }
    out
}

/// Width and height of the plot, and its margins.
const W: f64 = 560.0;
const H: f64 = 300.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 36.0;
const TOP: f64 = 12.0;
const RIGHT: f64 = 150.0;
/// Colours of the curves, in turn.
const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// The loaded-latency curves as one SVG plot: total bandwidth across, chase latency up,
/// one polyline per curve with its points, the knee as a ring; a legend on the right.
#[must_use]
pub fn curves_svg(curves: &[LoadedCurve]) -> String {
    // A curve that is not a measurement is not drawn (the list beside says why).
    let curves: Vec<&LoadedCurve> = curves.iter().filter(|c| c.unavailable.is_none()).collect();
    let finite = |x: f64| x.is_finite().then_some(x);
    let max_x = curves
        .iter()
        .flat_map(|c| c.points.iter().filter_map(|p| finite(p.gbps)))
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.05;
    let max_y = curves
        .iter()
        .flat_map(|c| c.points.iter().filter_map(|p| finite(p.latency_ns)))
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let x = |g: f64| LEFT + g / max_x * pw;
    let y = |ns: f64| TOP + ph - ns / max_y * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"loaded\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = write!(
        s,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>"
    );
    for k in 0..=4 {
        let gx = max_x * f64::from(k) / 4.0;
        let gy = max_y * f64::from(k) / 4.0;
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{gx:.0}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{gy:.0}</text><line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>",
            x(gx),
            H - BOTTOM + 14.0,
            LEFT - 4.0,
            y(gy) + 4.0,
            LEFT + pw,
            y(gy),
            y(gy)
        );
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">bandwidth of the loaders, GB/s</text><text transform=\"translate(12 {:.1}) rotate(-90)\" text-anchor=\"middle\">chase latency, ns</text>",
        LEFT + pw / 2.0,
        H - 4.0,
        TOP + ph / 2.0
    );
    for (i, c) in curves.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let pts: Vec<String> = c
            .points
            .iter()
            .filter(|p| p.gbps.is_finite() && p.latency_ns.is_finite())
            .map(|p| format!("{:.1},{:.1}", x(p.gbps), y(p.latency_ns)))
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            pts.join(" ")
        );
        for p in &pts {
            let (px, py) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = write!(
                s,
                "<circle cx=\"{px}\" cy=\"{py}\" r=\"2.5\" fill=\"{colour}\"/>"
            );
        }
        if let Some(k) = c.knee {
            let _ = write!(
                s,
                "<circle class=\"knee\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"6\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"><title>knee: {:.1} GB/s</title></circle>",
                x(k.gbps),
                y(k.latency_ns),
                k.gbps
            );
        }
        let ly = TOP + 14.0 + 16.0 * i as f64;
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            W - RIGHT + 10.0,
            ly - 9.0,
            W - RIGHT + 24.0,
            ly,
            e(&curve_name(c))
        );
    }
    s.push_str("</svg>");
    s
}

/// The measurements as HTML for the report: the curves' plot and the knee of each, the
/// matrices, the mixes and the saturating thread counts as tables.
///
/// # Errors
///
/// Only those of writing to a `String` (none).
pub fn html(s: &mut String, m: &MemoryLoad<'_>) -> std::fmt::Result {
    if !m.loaded.is_empty() {
        writeln!(
            s,
            "<h3>Loaded latency</h3><p class=\"muted\">a dependent chase on one context while the socket's other contexts read with decreasing delays; the ring marks the knee, where latency first passes {KNEE_FACTOR}× idle.</p><div class=\"figure\">{}</div><ul>",
            curves_svg(m.loaded)
        )?;
        for c in m.loaded {
            if let Some(reason) = &c.unavailable {
                write!(
                    s,
                    "<li>{}: <span class=\"warn\">unavailable: {}</span>",
                    e(&curve_name(c)),
                    e(reason)
                )?;
            } else {
                let knee = c.knee.map_or_else(
                    || "knee not reached".into(),
                    |k| format!("knee at {:.1} GB/s", k.gbps),
                );
                write!(
                    s,
                    "<li>{}: idle {} ns, {}",
                    e(&curve_name(c)),
                    cell(c.points.first().map(|p| p.latency_ns)),
                    e(&knee)
                )?;
            }
            for w in &c.warnings {
                write!(s, "; <span class=\"warn\">{}</span>", e(w))?;
            }
            writeln!(s, "</li>")?;
        }
        writeln!(s, "</ul>")?;
    }
    if let Some(x) = m.matrix {
        for (title, rows) in [
            ("Idle latency node × node, ns", &x.latency_ns),
            ("Read bandwidth node × node, GB/s", &x.read_gbps),
        ] {
            write!(
                s,
                "<h3>{}</h3><table class=\"node-matrix\"><tr><th class=\"l\"></th>",
                e(title)
            )?;
            for t in &x.targets {
                write!(s, "<th>node {t}</th>")?;
            }
            writeln!(s, "</tr>")?;
            for (i, init) in x.initiators.iter().enumerate() {
                write!(s, "<tr><th class=\"l\">{}</th>", e(&init.name))?;
                for (t, v) in rows.get(i).into_iter().flatten().enumerate() {
                    let own = init.node.is_some() && init.node == x.targets.get(t).copied();
                    write!(
                        s,
                        "<td{}>{}</td>",
                        if own { " class=\"local\"" } else { "" },
                        cell(*v)
                    )?;
                }
                writeln!(s, "</tr>")?;
            }
            writeln!(s, "</table>")?;
        }
    }
    if !m.mixes.is_empty() {
        writeln!(
            s,
            "<h3>Read/write mixes, GB/s</h3><table class=\"mixes\"><tr><th class=\"l\">socket → node</th><th>threads</th><th class=\"l\">mix</th><th>regular stores</th><th>non-temporal stores</th></tr>"
        )?;
        for r in mix_rows(m.mixes) {
            writeln!(
                s,
                "<tr><td class=\"l\">{} → {}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
                r.socket,
                r.node,
                r.threads,
                e(r.mix.name()),
                cell(r.regular),
                cell(r.non_temporal)
            )?;
        }
        writeln!(s, "</table>")?;
    }
    if !m.saturation.is_empty() {
        writeln!(s, "<h3>Saturation</h3><ul>")?;
        for sat in m.saturation {
            writeln!(
                s,
                "<li>socket {} → node {}: {} (peak {} GB/s)</li>",
                sat.socket,
                sat.node,
                saturating_threads(sat),
                cell(sat.peak_gbps)
            )?;
        }
        writeln!(s, "</ul>")?;
    }
    Ok(())
}

/// The thread count that saturates a node, in words ("8 threads reach 95% of the peak").
fn saturating_threads(sat: &Saturation) -> String {
    sat.threads.map_or_else(
        || "not found".into(),
        |t| format!("{t} threads reach 95% of the peak"),
    )
}

/// One row of the mixes table: a mix at a socket, node and thread count, with its figure
/// with regular and with non-temporal stores.
struct MixRow {
    socket: usize,
    node: u32,
    threads: usize,
    mix: topoprobe_model::Mix,
    regular: Option<f64>,
    non_temporal: Option<f64>,
}

/// The rows of the mixes table: per socket, node and thread count (in the order measured),
/// each mix measured with regular or non-temporal stores.
fn mix_rows(mixes: &[MixBandwidth]) -> Vec<MixRow> {
    let mut keys: Vec<(usize, u32, usize)> = mixes
        .iter()
        .map(|x| (x.socket, x.node, x.threads))
        .collect();
    keys.dedup();
    let mut rows = Vec::new();
    for (socket, node, threads) in keys {
        for mix in topoprobe_model::Mix::ALL {
            let find = |nt: bool| {
                mixes
                    .iter()
                    .find(|x| {
                        x.socket == socket
                            && x.node == node
                            && x.threads == threads
                            && x.mix == mix
                            && x.non_temporal == nt
                    })
                    .map(|x| x.gbps)
            };
            let (regular, non_temporal) = (find(false), find(true));
            if regular.is_some() || non_temporal.is_some() {
                rows.push(MixRow {
                    socket,
                    node,
                    threads,
                    mix,
                    regular,
                    non_temporal,
                });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{knee, LoadedPoint, MatrixInitiator};

    fn curve() -> LoadedCurve {
        let points: Vec<LoadedPoint> = [(0.0, 100.0), (10.0, 120.0), (20.0, 260.0)]
            .iter()
            .enumerate()
            .map(|(i, &(gbps, latency_ns))| LoadedPoint {
                delay: (i > 0).then(|| 100 / i as u32),
                gbps,
                latency_ns,
            })
            .collect();
        LoadedCurve {
            socket: 0,
            node: 1,
            local: false,
            chase_cpu: 0,
            loaders: vec![1, 2],
            knee: knee(&points),
            points,
            idle_again_ns: Some(101.0),
            warnings: vec!["not trustworthy: x".into()],
            unavailable: None,
        }
    }

    #[test]
    fn the_plot_has_a_line_per_curve_its_points_and_its_knee() {
        let svg = curves_svg(&[curve()]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(svg.matches("r=\"2.5\"").count(), 3);
        assert!(svg.contains("class=\"knee\""), "{svg}");
        assert!(svg.contains("socket 0 -&gt; node 1 (remote)"), "{svg}");
    }

    #[test]
    fn text_and_html_show_the_matrix_with_left_out_pairs_and_the_curve() {
        let m = NodeMatrix {
            initiators: vec![MatrixInitiator {
                name: "node 0".into(),
                socket: 0,
                node: Some(0),
                cpus: vec![0, 1],
            }],
            targets: vec![0, 2],
            latency_ns: vec![vec![Some(90.0), None]],
            read_gbps: vec![vec![Some(30.0), None]],
            pairs_measured: 1,
            pairs_total: 2,
        };
        let c = [curve()];
        let load = MemoryLoad {
            matrix: Some(&m),
            mixes: &[],
            saturation: &[],
            loaded: &c,
        };
        let t = text(&load);
        assert!(t.contains("node 2"), "{t}");
        assert!(t.contains("1 of 2 pairs"), "{t}");
        assert!(t.contains("knee: latency passes 2× idle at"), "{t}");
        assert!(t.contains("warning: not trustworthy"), "{t}");
        let mut h = String::new();
        html(&mut h, &load).unwrap();
        assert!(h.contains("<svg") && h.contains("node-matrix"), "{h}");
        assert!(h.contains("<td class=\"local\">90.0</td><td>-</td>"), "{h}");
    }

    #[test]
    fn a_curve_that_is_not_a_measurement_says_why_and_shows_no_figure() {
        let mut c = curve();
        c.points[1].gbps = 0.0;
        c.points[2].gbps = 0.0;
        c.set_unavailable("the loaders read nothing");
        assert_eq!(c.knee, None);
        let c = [c, curve()];
        let load = MemoryLoad {
            matrix: None,
            mixes: &[],
            saturation: &[],
            loaded: &c,
        };
        let t = text(&load);
        assert!(
            t.contains("loaded latency socket 0 -> node 1 (remote) (chase on CPU 0, 2 loaders): unavailable: the loaders read nothing"),
            "{t}"
        );
        // Only the measured curve prints points and a knee.
        assert_eq!(t.matches("delay     GB/s").count(), 1, "{t}");
        assert_eq!(t.matches("knee:").count(), 1, "{t}");
        let svg = curves_svg(&c);
        assert_eq!(svg.matches("<polyline").count(), 1, "{svg}");
        let mut h = String::new();
        html(&mut h, &load).unwrap();
        assert!(h.contains("unavailable: the loaders read nothing"), "{h}");
    }
}
