//! `topoprobe heatmap --json`: the latency matrix in the order the heatmap draws it
//! (socket by socket, group by group, core by core), its latency levels with the colour
//! each is painted in, and the runs of rows that make up sockets and groups.

use serde::{Deserialize, Serialize};

use crate::{LatencyLevel, LatencyUnit};

/// The heatmap of a topology as data.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Heatmap {
    /// Unit of every latency here (`ns` or `cycles`).
    pub unit: LatencyUnit,
    /// OS CPU numbers of the rows (and columns), in drawing order.
    pub cpus: Vec<u32>,
    /// `matrix[i][j]`: the raw (possibly directed) latency from `cpus[i]` to `cpus[j]`;
    /// `null` on the diagonal and for pairs that were not measured.
    pub matrix: Vec<Vec<Option<f64>>>,
    /// The latency levels, lowest first, with their colours.
    pub levels: Vec<HeatmapLevel>,
    /// Runs of rows that belong to one socket, in order.
    pub sockets: Vec<HeatmapBand>,
    /// Runs of rows that belong to one outermost group (or to no group) within a socket,
    /// in order.
    pub groups: Vec<HeatmapBand>,
    /// How latencies map to colours: `levels` (each latency level its own colour,
    /// interpolated between the levels' medians) or `ranks` (colours spread over the
    /// ranks of the values, when there are no levels).
    pub scale: String,
}

/// One latency level of the heatmap.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HeatmapLevel {
    /// The level as the description has it (id, role, min, median, max, count).
    #[serde(flatten)]
    pub level: LatencyLevel,
    /// Colour of the level's median in the heatmap, `#rrggbb`.
    pub colour: String,
}

/// A run of consecutive rows (and columns) of the heatmap.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HeatmapBand {
    /// What the rows are (`socket 0`, `group 4`; empty for cores outside every group).
    pub label: String,
    /// Index of the first row.
    pub first: usize,
    /// Number of rows.
    pub rows: usize,
}
