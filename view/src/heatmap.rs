//! The latency heatmap, as SVG: the measured latency matrix with the contexts ordered by
//! topology (socket, group, core), a colour scale with its unit and the latency levels
//! marked on it, context labels, and lines at group (thin) and socket (thick) boundaries.
//!
//! Rows are the context a transfer starts from, columns the one it goes to (the raw,
//! possibly directed, measurements); pairs that were not measured are grey. The colour
//! scale is logarithmic when the largest latency is more than eight times the smallest,
//! so that SMT, group, socket and cross-socket levels all stay distinguishable.

use std::fmt::Write as _;

use topoprobe_model::format::{escape_xml, plural};
use topoprobe_model::{ContextId, Topology};

use crate::common::{context_order, machine_name, num, outer_group};

/// Contexts up to this count get one label per row and column.
const LABEL_ALL_UP_TO: usize = 160;

/// Font stack of the SVG text.
const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";

/// Viridis colour map, sampled at nine points.
const VIRIDIS: [(f64, f64, f64); 9] = [
    (68.0, 1.0, 84.0),
    (71.0, 45.0, 123.0),
    (59.0, 82.0, 139.0),
    (44.0, 114.0, 142.0),
    (33.0, 145.0, 140.0),
    (40.0, 174.0, 128.0),
    (94.0, 201.0, 98.0),
    (170.0, 220.0, 50.0),
    (253.0, 231.0, 37.0),
];

/// Colour of a position `t` in `[0, 1]` of the scale, as `#rrggbb`.
fn colour(t: f64) -> String {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f).round().clamp(0.0, 255.0) as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// Maps a latency to a position on the colour scale.
#[derive(Debug, Clone, Copy)]
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Scale {
    fn new(values: impl Iterator<Item = f64>) -> Self {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            lo = 1.0;
            hi = 2.0;
        }
        if hi <= lo {
            hi = lo * 1.01 + 1e-9;
        }
        Self {
            lo,
            hi,
            log: hi / lo > 8.0,
        }
    }

    fn pos(&self, v: f64) -> f64 {
        if self.log {
            (v.max(self.lo).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }
}

/// A run of consecutive rows (in heatmap order) that belong to one socket, group or host,
/// drawn as a labelled band beside and above the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Band {
    /// First row of the run.
    pub start: usize,
    /// Number of rows.
    pub len: usize,
    /// Label written in the band (empty: the band is not drawn, but its start is still a
    /// boundary).
    pub label: String,
}

/// A square matrix to draw as a heatmap: rows and columns in display order, with labels,
/// bands and marks on the colour scale. [`render`] draws a topology's latencies with it;
/// other data (the ranks of a cluster) can be drawn the same way with [`render_matrix`].
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixHeatmap {
    /// Title (first line, and the SVG's accessible title).
    pub title: String,
    /// Second line under the title (what rows and columns are, what the lines mean).
    pub subtitle: String,
    /// Unit of the values, shown on the colour scale and in the cells' tooltips.
    pub unit: String,
    /// What the values are, above the colour scale (`latency`).
    pub quantity: String,
    /// Label of every row (and column), in display order.
    pub labels: Vec<String>,
    /// `values[i][j]`: from row `i` to column `j`, in display order; `None`: not measured
    /// (grey). The diagonal is drawn white.
    pub values: Vec<Vec<Option<f64>>>,
    /// Outer bands (sockets, hosts), with thick boundaries.
    pub outer: Vec<Band>,
    /// Inner bands (groups), with thin boundaries; the band row is drawn only when one of
    /// them has a label.
    pub inner: Vec<Band>,
    /// Values marked on the colour scale (a level's median) with their labels.
    pub marks: Vec<(f64, String)>,
}

/// Splits the order into runs of equal keys.
fn bands<K: PartialEq>(
    order: &[ContextId],
    key: impl Fn(ContextId) -> K,
) -> Vec<(usize, usize, K)> {
    let mut out: Vec<(usize, usize, K)> = Vec::new();
    for (i, &c) in order.iter().enumerate() {
        let k = key(c);
        match out.last_mut() {
            Some((_, len, last)) if *last == k => *len += 1,
            _ => out.push((i, 1, k)),
        }
    }
    out
}

/// Renders the heatmap of a topology's raw latency matrix as an SVG document (see the
/// [module documentation](self)).
#[must_use]
pub fn render(topo: &Topology) -> String {
    let order = context_order(topo);
    let n = order.len();
    let raw = &topo.latency_tables().raw;
    let groups = bands(&order, |c| {
        (topo.contexts()[c.0].socket, outer_group(topo, c))
    });
    let sockets = bands(&order, |c| topo.contexts()[c.0].socket);
    let name = machine_name(topo);
    let heatmap = MatrixHeatmap {
        title: format!(
            "Core-to-core latency of {name}: {}, ordered by socket, group and core",
            plural(n, "context")
        ),
        subtitle: "row: from, column: to · {unit} · grey: not measured · thin lines: groups, thick lines: sockets".into(),
        unit: topo.units().to_string(),
        quantity: "latency".into(),
        labels: order
            .iter()
            .map(|c| topo.contexts()[c.0].os_id.to_string())
            .collect(),
        values: order
            .iter()
            .map(|a| order.iter().map(|b| raw.get(a.0, b.0)).collect())
            .collect(),
        outer: sockets
            .iter()
            .map(|(start, len, sk)| Band {
                start: *start,
                len: *len,
                label: format!("socket {}", sk.0),
            })
            .collect(),
        inner: groups
            .iter()
            .map(|(start, len, (_, g))| Band {
                start: *start,
                len: *len,
                label: g.map_or_else(String::new, |g| format!("G{}", g.0)),
            })
            .collect(),
        marks: topo
            .levels()
            .iter()
            .map(|l| {
                let m = l.latency.median;
                (m, format!("{} {}", num(m), l.role.as_str().replace('_', "-")))
            })
            .collect(),
    };
    render_matrix(&heatmap)
}

/// Renders any [`MatrixHeatmap`] as an SVG document, with the same colour scale, bands and
/// boundaries as a topology's heatmap. In the subtitle, `{unit}` stands for the unit.
#[must_use]
pub fn render_matrix(h: &MatrixHeatmap) -> String {
    let n = h.labels.len();
    let value = |a: usize, b: usize| h.values.get(a).and_then(|r| r.get(b)).copied().flatten();
    let scale = Scale::new((0..n).flat_map(|a| (0..n).filter_map(move |b| value(a, b))));
    let labels = n <= LABEL_ALL_UP_TO;
    let cell = if labels {
        (800.0 / n.max(1) as f64).clamp(10.0, 28.0)
    } else {
        (1000.0 / n as f64).clamp(3.0, 10.0)
    };
    let font = (cell * 0.62).clamp(7.0, 12.0);
    let side = cell * n as f64;
    // Left: row labels, inner band, outer band. Top: title and the same.
    let label_w = if labels { font * 3.2 + 4.0 } else { 0.0 };
    let band_w = 16.0;
    let has_inner = h.inner.iter().any(|b| !b.label.is_empty());
    let band_rows = if has_inner { 2.0 } else { 1.0 };
    // Outer band, inner band, labels, matrix: from the left edge and below the title.
    let (band_left, band_top) = (12.0, 52.0);
    let left = band_left + band_rows * band_w + label_w;
    let top = band_top + band_rows * band_w + label_w;
    let legend_x = left + side + 24.0;
    let width = legend_x + 150.0;
    let height = (top + side + 46.0).max(top + 320.0);

    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"{FONT}\" role=\"img\">"
    );
    let _ = writeln!(s, "<title>{}</title>", escape_xml(&h.title));
    let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>");
    let _ = writeln!(
        s,
        "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        escape_xml(&h.title)
    );
    let _ = writeln!(
        s,
        "<text x=\"12\" y=\"40\" font-size=\"11\" fill=\"#444\">{}</text>",
        escape_xml(&h.subtitle.replace("{unit}", &h.unit))
    );

    // Cells.
    let _ = writeln!(
        s,
        "<g shape-rendering=\"crispEdges\" transform=\"translate({left:.1},{top:.1})\">"
    );
    let with_titles = n <= 64;
    for i in 0..n {
        for j in 0..n {
            let (x, y) = (j as f64 * cell, i as f64 * cell);
            let fill = if i == j {
                "#ffffff".to_string()
            } else {
                value(i, j).map_or_else(|| "#d0d0d0".to_string(), |v| colour(scale.pos(v)))
            };
            if with_titles {
                let v = value(i, j).map_or_else(
                    || "not measured".to_string(),
                    |v| format!("{} {}", num(v), h.unit),
                );
                let _ = writeln!(
                    s,
                    "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{cell:.2}\" height=\"{cell:.2}\" fill=\"{fill}\"><title>{} → {}: {}</title></rect>",
                    escape_xml(&h.labels[i]),
                    escape_xml(&h.labels[j]),
                    escape_xml(&v)
                );
            } else {
                let _ = writeln!(
                    s,
                    "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{cell:.2}\" height=\"{cell:.2}\" fill=\"{fill}\"/>"
                );
            }
        }
    }
    // Boundaries.
    for b in h.inner.iter().skip(1) {
        let p = b.start as f64 * cell;
        let _ = writeln!(
            s,
            "<path d=\"M{p:.2} 0V{side:.2}M0 {p:.2}H{side:.2}\" stroke=\"#ffffff\" stroke-width=\"1\"/>"
        );
    }
    for b in h.outer.iter().skip(1) {
        let p = b.start as f64 * cell;
        let _ = writeln!(
            s,
            "<path d=\"M{p:.2} 0V{side:.2}M0 {p:.2}H{side:.2}\" stroke=\"#000000\" stroke-width=\"2.5\"/>"
        );
    }
    let _ = writeln!(
        s,
        "<rect x=\"0\" y=\"0\" width=\"{side:.2}\" height=\"{side:.2}\" fill=\"none\" stroke=\"#000000\" stroke-width=\"1\"/>"
    );
    let _ = writeln!(s, "</g>");

    // Row and column labels.
    if labels {
        let _ = writeln!(
            s,
            "<g font-size=\"{font:.1}\" fill=\"#222\" font-family=\"DejaVu Sans Mono, monospace\">"
        );
        for (i, label) in h.labels.iter().enumerate() {
            let label = escape_xml(label);
            let mid = (i as f64 + 0.5) * cell + font * 0.35;
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
                left - 3.0,
                top + mid
            );
            let cx = left + (i as f64 + 0.5) * cell + font * 0.35;
            let _ = writeln!(
                s,
                "<text transform=\"translate({cx:.1},{:.1}) rotate(-90)\" text-anchor=\"start\">{label}</text>",
                top - 3.0
            );
        }
        let _ = writeln!(s, "</g>");
    }

    // Bands: outer and inner, on the left and on top.
    let band_row = |s: &mut String, bands: &[Band], row: f64, fills: [&str; 2]| {
        for (k, b) in bands.iter().enumerate() {
            if b.label.is_empty() {
                continue;
            }
            let (p, l) = (b.start as f64 * cell, b.len as f64 * cell);
            let fill = fills[k % 2];
            // Left band (vertical) at `x`, top band (horizontal) at `y`.
            let x = band_left + row * band_w;
            let y = band_top + row * band_w;
            let _ = writeln!(
                s,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{l:.1}\" fill=\"{fill}\"/>",
                top + p,
                band_w - 2.0
            );
            // Top band (horizontal).
            let _ = writeln!(
                s,
                "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{l:.1}\" height=\"{:.1}\" fill=\"{fill}\"/>",
                left + p,
                band_w - 2.0
            );
            let chars = b.label.chars().count() as f64;
            if l >= chars * 6.5 + 4.0 {
                let _ = writeln!(
                    s,
                    "<text transform=\"translate({:.1},{:.1}) rotate(-90)\" font-size=\"10\" text-anchor=\"middle\" fill=\"#ffffff\">{}</text>",
                    x + band_w / 2.0 + 2.5,
                    top + p + l / 2.0,
                    escape_xml(&b.label)
                );
                let _ = writeln!(
                    s,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#ffffff\">{}</text>",
                    left + p + l / 2.0,
                    y + band_w / 2.0 + 2.5,
                    escape_xml(&b.label)
                );
            }
        }
    };
    band_row(&mut s, &h.outer, 0.0, ["#333333", "#666666"]);
    if has_inner {
        band_row(&mut s, &h.inner, 1.0, ["#3b6ea5", "#6a94c4"]);
    }

    // Colour scale.
    legend(&mut s, h, scale, legend_x, top);
    s.push_str("</svg>\n");
    s
}

/// The colour scale: a vertical gradient from low (top) to high values, with the minimum,
/// the maximum and every mark between them.
fn legend(s: &mut String, h: &MatrixHeatmap, scale: Scale, x: f64, y: f64) {
    let height = 240.0;
    let w = 18.0;
    let _ = writeln!(
        s,
        "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" font-weight=\"bold\">{} ({})</text>",
        y - 10.0,
        escape_xml(&h.quantity),
        escape_xml(&h.unit)
    );
    let _ = writeln!(
        s,
        "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
    );
    for k in 0..=8 {
        let t = f64::from(k) / 8.0;
        let _ = writeln!(s, "<stop offset=\"{t:.3}\" stop-color=\"{}\"/>", colour(t));
    }
    let _ = writeln!(s, "</linearGradient></defs>");
    let _ = writeln!(
        s,
        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w}\" height=\"{height}\" fill=\"url(#scale)\" stroke=\"#000\" stroke-width=\"0.5\"/>"
    );
    let mut ticks: Vec<(f64, String)> = vec![
        (scale.lo, format!("{} min", num(scale.lo))),
        (scale.hi, format!("{} max", num(scale.hi))),
    ];
    for (m, label) in &h.marks {
        if *m > scale.lo && *m < scale.hi {
            ticks.push((*m, label.clone()));
        }
    }
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let wanted: Vec<f64> = ticks
        .iter()
        .map(|(v, _)| y + scale.pos(*v) * height + 4.0)
        .collect();
    let placed = spread_labels(&wanted, 12.0, y + 4.0, y + height + 4.0);
    for ((v, label), label_y) in ticks.iter().zip(placed) {
        let ty = y + scale.pos(*v) * height;
        // A tick, and a leader to its label when the label had to move away from it.
        let _ = writeln!(
            s,
            "<path d=\"M{:.1} {ty:.1}h6L{:.1} {:.1}\" stroke=\"#000\" fill=\"none\" stroke-width=\"0.7\"/>",
            x + w,
            x + w + 9.0,
            label_y - 4.0
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{label_y:.1}\" font-size=\"10\">{}</text>",
            x + w + 11.0,
            escape_xml(label)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#444\">{} scale</text>",
        y + height + 16.0,
        if scale.log { "logarithmic" } else { "linear" }
    );
}

/// Positions for labels that want to sit at `wanted` (ascending): at least `gap` apart and
/// within `lo..=hi` when there is room (labels are pushed down past their neighbours,
/// then back up from `hi`).
fn spread_labels(wanted: &[f64], gap: f64, lo: f64, hi: f64) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::with_capacity(wanted.len());
    for &w in wanted {
        let y = out
            .last()
            .map_or(w.max(lo), |&prev: &f64| w.max(prev + gap));
        out.push(y);
    }
    let mut limit = hi;
    for y in out.iter_mut().rev() {
        *y = y.min(limit);
        limit = *y - gap;
    }
    if let Some(&first) = out.first() {
        if first < lo {
            // No room: keep the gaps from the top instead.
            let shift = lo - first;
            for y in &mut out {
                *y += shift;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_labels_do_not_overlap() {
        let placed = spread_labels(&[10.0, 200.0, 243.0, 244.0, 244.0], 12.0, 4.0, 244.0);
        assert_eq!(placed, [10.0, 200.0, 220.0, 232.0, 244.0]);
        assert!(placed.windows(2).all(|p| p[1] - p[0] >= 12.0));
    }

    #[test]
    fn colours_span_viridis() {
        assert_eq!(colour(0.0), "#440154");
        assert_eq!(colour(1.0), "#fde725");
        assert_eq!(colour(f64::NAN), "#440154");
    }

    #[test]
    fn scale_is_logarithmic_for_wide_ranges() {
        let s = Scale::new([7.0, 20.0, 140.0].into_iter());
        assert!(s.log);
        assert!((s.pos(7.0)).abs() < 1e-12);
        assert!((s.pos(140.0) - 1.0).abs() < 1e-12);
        let s = Scale::new([100.0, 150.0].into_iter());
        assert!(!s.log);
        assert!((s.pos(125.0) - 0.5).abs() < 1e-12);
    }
}
