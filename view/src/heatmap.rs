//! The latency heatmap, as SVG: the measured latency matrix with the contexts ordered by
//! topology (socket, group, core), a colour scale with its unit and the latency levels
//! marked on it, context labels, and lines at group (thin) and socket (thick) boundaries.
//!
//! Rows are the context a transfer starts from, columns the one it goes to (the raw,
//! possibly directed, measurements); pairs that were not measured are grey. The colour
//! scale is anchored at the latency levels: each level's median gets a colour of its own,
//! spread evenly over the colour map, and latencies between two levels are interpolated,
//! so that SMT, group, die, socket and cross-socket levels all stay distinguishable
//! however unevenly they are spaced (levels whose medians are within 2% share a colour:
//! latency cannot tell them apart). Without levels, colours are spread over the ranks of
//! the values. [`data`] is the same picture as data (`topoprobe heatmap --json`).

use std::fmt::Write as _;

use topoprobe_model::format::{escape_xml, plural};
use topoprobe_model::results::heatmap::{Heatmap, HeatmapBand, HeatmapLevel};
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

/// Relative distance under which two level medians share one colour: levels that close
/// (the home-node effect makes a socket's inside as slow as crossing sockets) cannot be
/// told apart by latency, and painting them apart would speckle both.
const SAME_LEVEL: f64 = 0.02;

/// How values map to colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScaleKind {
    /// Anchored at the latency levels (the marks): each level its own colour.
    Levels,
    /// Anchored at quantiles of the values: colours spread over their ranks.
    Ranks,
}

impl ScaleKind {
    const fn name(self) -> &'static str {
        match self {
            Self::Levels => "levels",
            Self::Ranks => "ranks",
        }
    }
}

/// Maps a value to a position on the colour scale: piecewise linear between anchors that
/// are spread evenly over the colours, so that every anchor (a latency level, else a
/// quantile of the values) gets a colour of its own however unevenly the values are
/// spaced (a logarithmic scale paints 115 to 290 ns one yellow).
#[derive(Debug, Clone, PartialEq)]
struct Scale {
    /// `(value, position)`, both ascending; at least two.
    anchors: Vec<(f64, f64)>,
    kind: ScaleKind,
}

impl Scale {
    /// The scale of `values`, anchored at `marks` (level medians) when one of them lies
    /// between the smallest and largest value, else at the values' quantiles.
    fn new(values: impl Iterator<Item = f64>, marks: &[f64]) -> Self {
        let mut sorted: Vec<f64> = values.filter(|v| v.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let (lo, hi) = match (sorted.first(), sorted.last()) {
            (Some(&lo), Some(&hi)) if hi > lo => (lo, hi),
            (Some(&lo), _) => (lo, lo + lo.abs().max(1.0) * 0.01),
            _ => (1.0, 2.0),
        };
        let mut inner: Vec<f64> = marks
            .iter()
            .copied()
            .filter(|m| m.is_finite() && *m > lo && *m < hi)
            .collect();
        let kind = if inner.is_empty() {
            // Rank-based: the octiles of the values.
            let n = sorted.len();
            inner = (1..8)
                .filter_map(|k| sorted.get(k * n.saturating_sub(1) / 8).copied())
                .filter(|v| *v > lo && *v < hi)
                .collect();
            ScaleKind::Ranks
        } else {
            ScaleKind::Levels
        };
        inner.sort_by(f64::total_cmp);
        let close = |a: f64, b: f64| (b - a).abs() <= SAME_LEVEL * a.abs().max(b.abs());
        let mut values = vec![lo];
        for v in inner {
            if values.last().is_some_and(|&last| !close(last, v)) && !close(v, hi) {
                values.push(v);
            }
        }
        values.push(hi);
        let last = (values.len() - 1) as f64;
        Self {
            anchors: values
                .into_iter()
                .enumerate()
                .map(|(k, v)| (v, k as f64 / last))
                .collect(),
            kind,
        }
    }

    fn lo(&self) -> f64 {
        self.anchors[0].0
    }

    fn hi(&self) -> f64 {
        self.anchors[self.anchors.len() - 1].0
    }

    /// The position of `v` in `[0, 1]`.
    fn pos(&self, v: f64) -> f64 {
        if !v.is_finite() || v <= self.lo() {
            return 0.0;
        }
        let k = self.anchors.partition_point(|&(a, _)| a < v);
        let Some(&(b, pb)) = self.anchors.get(k) else {
            return 1.0;
        };
        let (a, pa) = self.anchors[k - 1];
        if b > a {
            pa + (pb - pa) * (v - a) / (b - a)
        } else {
            pb
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

/// The heatmap of a topology as data (what `topoprobe heatmap --json` writes): its raw
/// latency matrix with the contexts in topology order (socket, group, core), its levels
/// with the colour each is painted in, and the runs of rows of every socket and
/// outermost group.
#[must_use]
pub fn data(topo: &Topology) -> Heatmap {
    let order = context_order(topo);
    let raw = &topo.latency_tables().raw;
    let matrix: Vec<Vec<Option<f64>>> = order
        .iter()
        .map(|a| {
            order
                .iter()
                .map(|b| if a == b { None } else { raw.get(a.0, b.0) })
                .collect()
        })
        .collect();
    let medians: Vec<f64> = topo.levels().iter().map(|l| l.latency.median).collect();
    let scale = Scale::new(matrix.iter().flatten().filter_map(|v| *v), &medians);
    let band = |(first, rows, label): (usize, usize, String)| HeatmapBand { label, first, rows };
    Heatmap {
        unit: topo.units(),
        cpus: order.iter().map(|c| topo.contexts()[c.0].os_id).collect(),
        matrix,
        levels: topo
            .levels()
            .iter()
            .map(|l| HeatmapLevel {
                level: l.clone(),
                colour: colour(scale.pos(l.latency.median)),
            })
            .collect(),
        sockets: bands(&order, |c| topo.contexts()[c.0].socket)
            .into_iter()
            .map(|(first, rows, s)| band((first, rows, format!("socket {}", s.0))))
            .collect(),
        groups: bands(&order, |c| {
            (topo.contexts()[c.0].socket, outer_group(topo, c))
        })
        .into_iter()
        .map(|(first, rows, (_, g))| {
            band((
                first,
                rows,
                g.map_or_else(String::new, |g| format!("group {}", g.0)),
            ))
        })
        .collect(),
        scale: scale.kind.name().to_string(),
    }
}

/// Renders the heatmap of a topology's raw latency matrix as an SVG document (see the
/// [module documentation](self)).
#[must_use]
pub fn render(topo: &Topology) -> String {
    render_data(&data(topo), &machine_name(topo))
}

/// Renders the [`data`] of a topology's heatmap as an SVG document; `name` is the
/// machine's name in the title.
#[must_use]
pub fn render_data(d: &Heatmap, name: &str) -> String {
    let n = d.cpus.len();
    let to_band = |b: &HeatmapBand, short: bool| Band {
        start: b.first,
        len: b.rows,
        label: if short {
            b.label.replace("group ", "G")
        } else {
            b.label.clone()
        },
    };
    let heatmap = MatrixHeatmap {
        title: format!(
            "Core-to-core latency of {name}: {}, ordered by socket, group and core",
            plural(n, "context")
        ),
        subtitle: "row: from, column: to · {unit} · grey: not measured · thin lines: groups, thick lines: sockets".into(),
        unit: d.unit.to_string(),
        quantity: "latency".into(),
        labels: d.cpus.iter().map(u32::to_string).collect(),
        values: d.matrix.clone(),
        outer: d.sockets.iter().map(|b| to_band(b, false)).collect(),
        inner: d.groups.iter().map(|b| to_band(b, true)).collect(),
        marks: d
            .levels
            .iter()
            .map(|l| {
                let m = l.level.latency.median;
                (
                    m,
                    format!("{} {}", num(m), l.level.role.as_str().replace('_', "-")),
                )
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
    let marks: Vec<f64> = h.marks.iter().map(|(m, _)| *m).collect();
    let scale = Scale::new(
        (0..n).flat_map(|a| {
            (0..n)
                .filter(move |&b| b != a)
                .filter_map(move |b| value(a, b))
        }),
        &marks,
    );
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
    legend(&mut s, h, &scale, legend_x, top);
    s.push_str("</svg>\n");
    s
}

/// The colour scale: a vertical gradient from low (top) to high values, with the minimum,
/// the maximum and every mark between them.
fn legend(s: &mut String, h: &MatrixHeatmap, scale: &Scale, x: f64, y: f64) {
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
        (scale.lo(), format!("{} min", num(scale.lo()))),
        (scale.hi(), format!("{} max", num(scale.hi()))),
    ];
    for (m, label) in &h.marks {
        if *m > scale.lo() && *m < scale.hi() {
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
    let lines: [&str; 2] = match scale.kind {
        ScaleKind::Levels => ["a colour per latency", "level, linear between"],
        ScaleKind::Ranks => ["colours spread over", "the ranks of the values"],
    };
    for (k, line) in lines.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#444\">{line}</text>",
            y + height + 16.0 + 12.0 * k as f64,
        );
    }
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
    fn every_level_gets_its_own_colour() {
        // The levels of a 2 × 64-core EPYC 7742: a logarithmic scale painted 115 to 290 ns
        // one yellow.
        let levels = [8.0, 25.3, 115.0, 135.0, 249.0, 267.0, 268.0];
        let values = [8.0, 10.4, 23.8, 27.9, 96.7, 158.0, 224.0, 290.0];
        let s = Scale::new(values.into_iter(), &levels);
        assert_eq!(s.kind, ScaleKind::Levels);
        assert!(s.pos(8.0).abs() < 1e-12);
        assert!((s.pos(290.0) - 1.0).abs() < 1e-12);
        let pos: Vec<f64> = levels[..6].iter().map(|&l| s.pos(l)).collect();
        assert!(pos.windows(2).all(|w| w[1] - w[0] > 0.15), "{pos:?}");
        // 267 and 268 ns cannot be told apart: one colour.
        assert!((s.pos(268.0) - s.pos(267.0)).abs() < 0.01);
        let colours: std::collections::HashSet<String> = pos.iter().map(|&p| colour(p)).collect();
        assert_eq!(colours.len(), 6);
        assert!(s.pos(120.0) > s.pos(115.0) && s.pos(120.0) < s.pos(135.0));
    }

    #[test]
    fn without_levels_the_ranks_spread_the_colours() {
        let values: Vec<f64> = (0..100)
            .map(|i| {
                if i < 90 {
                    100.0 + f64::from(i) * 0.1
                } else {
                    1000.0
                }
            })
            .collect();
        let s = Scale::new(values.iter().copied(), &[]);
        assert_eq!(s.kind, ScaleKind::Ranks);
        // The 90 values near 100 use most of the colours, not the bottom tenth.
        assert!(s.pos(108.0) > 0.5, "{s:?}");
        let flat = Scale::new([5.0, 5.0].into_iter(), &[]);
        assert!(flat.pos(5.0).abs() < 1e-12);
        assert!(Scale::new(std::iter::empty(), &[]).anchors.len() >= 2);
    }
}
