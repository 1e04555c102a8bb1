//! The result of a run: ranks, hosts, layers, the complete latency and bandwidth tables and
//! the split advice, as JSON ([`ClusterReport`] is the document), as text, and as a heatmap.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use topoprobe_model::format_cpu_list;
use topoprobe_view::heatmap::{render_matrix, Band, MatrixHeatmap};

use crate::advice::{splits, Split};
use crate::collect::{
    collect_bandwidth, collect_latency, BandwidthTable, CollectOptions, LatencyTable, Outlier,
    Strategy,
};
use crate::error::ClusterError;
use crate::layers::{find_layers, Layer};
use crate::probe::RankProbe;
use crate::ranks::{HostInfo, RankInfo, Ranks};

/// The `format` of a report.
pub const FORMAT: &str = "topoprobe-cluster/1";

/// Ranks up to this count get their matrices in the text output.
const TEXT_MATRIX_UP_TO: usize = 32;

/// How the tables were measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// How the latency pairs were chosen.
    pub strategy: Strategy,
    /// Number of rank pairs, `N(N-1)/2`.
    pub pairs_total: usize,
    /// Distinct pairs whose latency was measured.
    pub latency_pairs: usize,
    /// Latency measurements made (repetitions included).
    pub latency_measurements: usize,
    /// Bandwidth measurements made.
    pub bandwidth_pairs: usize,
    /// Pairs left out of the layers: they stayed far slower than the other pairs of their
    /// relation, however often measured (their ranks waited for busy CPUs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outliers: Vec<Outlier>,
    /// Settings of the transport (message sizes, round trips, …), by name.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
}

/// What a run found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterReport {
    /// Always [`FORMAT`].
    pub format: String,
    /// Number of ranks.
    pub ranks: usize,
    /// The hosts, in the order of their first rank.
    pub hosts: Vec<HostInfo>,
    /// Where every rank ran.
    pub placement: Vec<RankInfo>,
    /// The communication layers, fastest first.
    pub layers: Vec<Layer>,
    /// One-way latency between every pair of ranks, µs (`null` on the diagonal).
    pub latency_us: Vec<Vec<Option<f64>>>,
    /// Bandwidth between every pair of ranks, GB/s (`null` on the diagonal).
    pub bandwidth_gbps: Vec<Vec<Option<f64>>>,
    /// The layer of every pair (`null` on the diagonal).
    pub layer: Vec<Vec<Option<usize>>>,
    /// How the tables were measured.
    pub measurement: Measurement,
    /// Communicator splits that keep communication within the faster layers.
    pub advice: Vec<Split>,
}

/// What [`analyse`] is doing, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Latencies: `done` of (currently) `total` measurements.
    Latency {
        /// Measurements made.
        done: usize,
        /// Measurements planned so far.
        total: usize,
    },
    /// Bandwidths: `done` of `total` measurements.
    Bandwidth {
        /// Measurements made.
        done: usize,
        /// Measurements planned.
        total: usize,
    },
}

/// Measures the ranks of `probe` and analyses them: latency table, layers, bandwidth
/// table, explanations and advice (the whole of Servet's communication benchmark).
///
/// # Errors
///
/// See [`collect_latency`] and [`collect_bandwidth`].
pub fn analyse(
    probe: &mut dyn RankProbe,
    ranks: &Ranks,
    opts: &CollectOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<ClusterReport, ClusterError> {
    let latency = collect_latency(probe, ranks, opts, &mut |done, total| {
        progress(Progress::Latency { done, total });
    })?;
    let mut layers = find_layers(&latency.for_layers(), &latency.measured, ranks);
    let bandwidth = collect_bandwidth(
        probe,
        ranks,
        &latency,
        &|a, b| layers.of(a, b),
        opts,
        &mut |done, total| progress(Progress::Bandwidth { done, total }),
    )?;
    layers.set_bandwidth(&bandwidth.bandwidth);
    Ok(report(ranks, &latency, &bandwidth, layers))
}

/// Assembles the report of measured tables.
fn report(
    ranks: &Ranks,
    latency: &LatencyTable,
    bandwidth: &BandwidthTable,
    layers: crate::layers::Layers,
) -> ClusterReport {
    let n = ranks.len();
    let advice = splits(&layers, ranks);
    ClusterReport {
        format: FORMAT.into(),
        ranks: n,
        hosts: ranks.hosts().to_vec(),
        placement: ranks.ranks().to_vec(),
        latency_us: latency.latency.to_rows(),
        bandwidth_gbps: bandwidth.bandwidth.to_rows(),
        layer: layers.rows(),
        measurement: Measurement {
            strategy: latency.strategy,
            pairs_total: n * n.saturating_sub(1) / 2,
            latency_pairs: latency.pairs,
            latency_measurements: latency.measurements,
            bandwidth_pairs: bandwidth.pairs,
            outliers: latency.outliers.clone(),
            settings: BTreeMap::new(),
        },
        layers: layers.layers,
        advice,
    }
}

/// A number for people: three significant digits, no exponent.
fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Ranks as a compact list (`0-3,8`).
fn rank_list(ranks: &[usize]) -> String {
    let v: Vec<u32> = ranks
        .iter()
        .map(|&r| u32::try_from(r).unwrap_or(u32::MAX))
        .collect();
    format_cpu_list(&v)
}

impl ClusterReport {
    /// The report as pretty-printed JSON ending with a newline, its figures rounded as in
    /// every JSON topoprobe writes (`topoprobe_view::results::json`).
    #[must_use]
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        topoprobe_view::results::json(self).unwrap_or_default()
    }

    /// The rank order that keeps each host's ranks together (hosts in order).
    fn host_order(&self) -> Vec<usize> {
        self.hosts.iter().flat_map(|h| h.ranks.clone()).collect()
    }

    /// The report as text: hosts, ranks, layers, advice, and for small runs both tables.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let m = &self.measurement;
        let _ = writeln!(
            s,
            "{} ranks on {} host{}: {} of {} pairs measured ({}{})",
            self.ranks,
            self.hosts.len(),
            if self.hosts.len() == 1 { "" } else { "s" },
            m.latency_pairs,
            m.pairs_total,
            m.strategy.as_str(),
            if m.strategy == Strategy::Sampled {
                format!(
                    ", {} latency and {} bandwidth measurements",
                    m.latency_measurements, m.bandwidth_pairs
                )
            } else {
                String::new()
            }
        );
        for o in &m.outliers {
            let _ = writeln!(
                s,
                "not trustworthy: ranks {} and {}: {} µs after {} measurements, {:.0}× the fastest {} pair ({} µs): their ranks waited for busy CPUs (oversubscribed, or other programs); left out of the layers",
                o.pair[0],
                o.pair[1],
                num(o.latency_us),
                o.measurements,
                o.latency_us / o.fastest_us,
                o.relation,
                num(o.fastest_us)
            );
        }
        let _ = writeln!(s, "\nhosts:");
        for h in &self.hosts {
            let _ = writeln!(
                s,
                "  {}: ranks {} (layout: {})",
                h.name,
                rank_list(&h.ranks),
                h.description
            );
        }
        let _ = writeln!(s, "\nranks:");
        for r in &self.placement {
            let _ = writeln!(
                s,
                "  {:>4}  {}  CPU {}  allowed {}",
                r.rank,
                r.host,
                r.cpu.map_or_else(|| "?".into(), |c| c.to_string()),
                format_cpu_list(&r.allowed)
            );
        }
        let _ = writeln!(s, "\nlayers:");
        let _ = writeln!(
            s,
            "  {:>2}  {:>12}  {:>14}  {:>7}  explained by",
            "#", "latency µs", "bandwidth GB/s", "pairs"
        );
        for (i, l) in self.layers.iter().enumerate() {
            let _ = writeln!(
                s,
                "  {i:>2}  {:>12}  {:>14}  {:>7}  {}",
                num(l.latency_us),
                l.bandwidth_gbps.map_or_else(|| "-".into(), num),
                l.pairs,
                l.explained_by
            );
            if let Some(note) = &l.note {
                let _ = writeln!(s, "      note: {note}");
            }
        }
        let _ = writeln!(s, "\nadvice:");
        if self.advice.is_empty() {
            let _ = writeln!(
                s,
                "  no split: {}",
                if self.layers.len() < 2 {
                    "one layer, every pair communicates alike"
                } else {
                    "the faster layers do not divide the ranks into groups"
                }
            );
        }
        for sp in &self.advice {
            let groups: Vec<String> = sp.groups.iter().map(|g| rank_list(g)).collect();
            let _ = writeln!(
                s,
                "  groups within layer {} ({}, below {} µs){}: {}",
                sp.up_to_layer,
                sp.within,
                num(sp.below_latency_us),
                if sp.by_host {
                    ", one per host (MPI_COMM_TYPE_SHARED)"
                } else {
                    ""
                },
                groups.join(" | ")
            );
            let colors: Vec<String> = sp.color.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                s,
                "    MPI_Comm_split(comm, color[rank], rank, &sub) with color = {{{}}}{}",
                colors.join(","),
                if sp.clean {
                    ""
                } else {
                    " (not clean: some pairs inside a group are slower)"
                }
            );
        }
        if self.ranks <= TEXT_MATRIX_UP_TO {
            for (title, rows) in [
                ("latency (µs)", &self.latency_us),
                ("bandwidth (GB/s)", &self.bandwidth_gbps),
            ] {
                let _ = writeln!(s, "\n{title}:");
                let _ = write!(s, "{:>6}", "");
                for b in 0..self.ranks {
                    let _ = write!(s, " {b:>7}");
                }
                let _ = writeln!(s);
                for (a, row) in rows.iter().enumerate() {
                    let _ = write!(s, "{a:>6}");
                    for v in row {
                        let _ = write!(s, " {:>7}", v.map_or_else(|| "-".into(), num));
                    }
                    let _ = writeln!(s);
                }
            }
        }
        s
    }

    /// The latency table as an SVG heatmap, ranks grouped by host, layers marked on the
    /// colour scale.
    #[must_use]
    pub fn heatmap(&self) -> String {
        let order = self.host_order();
        let mut outer = Vec::new();
        let mut start = 0;
        for h in &self.hosts {
            outer.push(Band {
                start,
                len: h.ranks.len(),
                label: h.name.clone(),
            });
            start += h.ranks.len();
        }
        let cell = |a: usize, b: usize| self.latency_us.get(a).and_then(|r| r.get(b)).copied();
        let h = MatrixHeatmap {
            title: format!(
                "Rank-to-rank latency: {} ranks on {} host{}, grouped by host",
                self.ranks,
                self.hosts.len(),
                if self.hosts.len() == 1 { "" } else { "s" }
            ),
            subtitle: "row: from, column: to · {unit} · one-way latency (half a ping-pong) · thick lines: hosts".into(),
            unit: "µs".into(),
            quantity: "latency".into(),
            labels: order.iter().map(|r| format!("r{r}")).collect(),
            values: order
                .iter()
                .map(|&a| order.iter().map(|&b| cell(a, b).flatten()).collect())
                .collect(),
            outer,
            inner: Vec::new(),
            marks: self
                .layers
                .iter()
                .map(|l| (l.latency_us, format!("{} {}", num(l.latency_us), l.explained_by)))
                .collect(),
        };
        render_matrix(&h)
    }
}

impl topoprobe_view::results::Rendered for ClusterReport {
    fn text(&self) -> String {
        self.to_text()
    }
}
