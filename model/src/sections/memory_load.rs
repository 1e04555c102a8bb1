//! The richer memory measurements of `topoprobe mem --full`: the node × node latency and
//! bandwidth matrices, bandwidth of read/write mixes with the thread count that saturates
//! a node, and the loaded-latency curve with its knee. Every field that holds them is
//! optional in the memory section, so descriptions written before them still load.

use serde::{Deserialize, Serialize};

/// The figures of `mem --full` and `mem --c2c`, all optional: the same fields, under the
/// same names, in `mem --json` and in a description's memory section (flattened into
/// both).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryDetail {
    /// Idle latency and read bandwidth node × node (`--full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_matrix: Option<NodeMatrix>,
    /// Bandwidth of read/write mixes, with and without non-temporal stores (`--full`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mixes: Vec<MixBandwidth>,
    /// The thread count that saturates each node (`--full`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub saturation: Vec<Saturation>,
    /// Loaded-latency curves with their knees (`--full`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded_latency: Vec<LoadedCurve>,
    /// Cache-to-cache transfers by distance, state and home node (`--c2c`, the `c2c`
    /// plugin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_to_cache: Option<crate::results::cache_to_cache::CacheToCacheResult>,
}

/// Latency rises past this many times its idle value at the knee of a loaded-latency
/// curve ([`knee`]).
pub const KNEE_FACTOR: f64 = 2.0;

/// The share of a node's peak bandwidth that counts as saturating it.
pub const SATURATION_SHARE: f64 = 0.95;

/// Who issues the accesses of a matrix row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixInitiator {
    /// How the row is named for people: `node 3` or `socket 1`.
    pub name: String,
    /// The socket its contexts belong to (index in the topology).
    pub socket: usize,
    /// The node whose CPUs it runs on, when nodes have CPUs (OS number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// The OS CPU numbers that ran its accesses (the first one chases).
    pub cpus: Vec<u32>,
}

/// Idle latency and bandwidth from every initiator (a node with CPUs, else a socket) to
/// every node with memory (memory-only nodes included), as far as the budget allowed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeMatrix {
    /// The rows.
    pub initiators: Vec<MatrixInitiator>,
    /// The columns: OS numbers of the nodes with memory.
    pub targets: Vec<u32>,
    /// `latency_ns[i][t]`: ns per dependent load from initiator `i` to target `t` (`null`
    /// where the budget left the pair out).
    pub latency_ns: Vec<Vec<Option<f64>>>,
    /// `read_gbps[i][t]`: read bandwidth of all of the initiator's contexts, GB/s.
    pub read_gbps: Vec<Vec<Option<f64>>>,
    /// Pairs measured.
    pub pairs_measured: usize,
    /// Pairs in all.
    pub pairs_total: usize,
}

/// A read/write mix of a bandwidth kernel (MLC's `-W` mixes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mix {
    /// Loads only.
    AllReads,
    /// Three streams read, one written (`d = a ^ b ^ c`).
    ThreeToOne,
    /// Two streams read, one written (`c = a ^ b`).
    TwoToOne,
    /// One stream read, one written (copy).
    OneToOne,
    /// STREAM's triad, `a = b + 3 · c`: two reads and one write with arithmetic.
    Triad,
}

impl Mix {
    /// Every mix, in the order they are measured and shown.
    pub const ALL: [Self; 5] = [
        Self::AllReads,
        Self::ThreeToOne,
        Self::TwoToOne,
        Self::OneToOne,
        Self::Triad,
    ];

    /// Streams read and streams written.
    #[must_use]
    pub const fn streams(self) -> (usize, usize) {
        match self {
            Self::AllReads => (1, 0),
            Self::ThreeToOne => (3, 1),
            Self::TwoToOne | Self::Triad => (2, 1),
            Self::OneToOne => (1, 1),
        }
    }

    /// Its name in output.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::AllReads => "all reads",
            Self::ThreeToOne => "3:1",
            Self::TwoToOne => "2:1",
            Self::OneToOne => "1:1",
            Self::Triad => "triad",
        }
    }
}

/// Bandwidth of one mix from a socket to a node.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MixBandwidth {
    /// Socket of the threads (index in the topology).
    pub socket: usize,
    /// Node of the buffers (OS number).
    pub node: u32,
    /// The mix.
    pub mix: Mix,
    /// Whether the writes were non-temporal stores.
    pub non_temporal: bool,
    /// Threads.
    pub threads: usize,
    /// Bytes the program read and wrote per second, GB/s (the reads for ownership of
    /// regular stores are not counted, as MLC and STREAM do not).
    pub gbps: f64,
}

/// Read bandwidth of a socket to a node as threads are added, and the count that
/// saturates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// Socket (index in the topology).
    pub socket: usize,
    /// Node (OS number).
    pub node: u32,
    /// `(threads, GB/s)` of the all-reads mix, ascending by threads.
    pub points: Vec<(usize, f64)>,
    /// The smallest thread count reaching [`SATURATION_SHARE`] of the peak.
    pub threads: Option<usize>,
    /// The peak, GB/s.
    pub peak_gbps: Option<f64>,
}

impl Saturation {
    /// The saturation of `points` (`(threads, GB/s)`): the peak, and the smallest thread
    /// count reaching [`SATURATION_SHARE`] of it (non-finite figures are ignored).
    #[must_use]
    pub fn of(socket: usize, node: u32, mut points: Vec<(usize, f64)>) -> Self {
        points.sort_by_key(|p| p.0);
        let peak = points
            .iter()
            .map(|p| p.1)
            .filter(|x| x.is_finite())
            .max_by(f64::total_cmp);
        let threads = peak.and_then(|peak| {
            points
                .iter()
                .find(|p| p.1.is_finite() && p.1 >= SATURATION_SHARE * peak)
                .map(|p| p.0)
        });
        Self {
            socket,
            node,
            points,
            threads,
            peak_gbps: peak,
        }
    }
}

/// One point of a loaded-latency curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadedPoint {
    /// Delay loop iterations between two blocks of 8 lines each loader reads (`null`: no
    /// loader ran, the idle point). Descriptions of earlier versions counted them
    /// between two lines; the bandwidth beside it is what a point means either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<u32>,
    /// Bandwidth of the loaders together while the chase ran, GB/s.
    pub gbps: f64,
    /// ns per dependent load of the chase.
    pub latency_ns: f64,
}

/// Where latency explodes on a loaded-latency curve ([`knee`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// Bandwidth at the knee, GB/s.
    pub gbps: f64,
    /// Latency at the knee, ns ([`KNEE_FACTOR`] × idle when interpolated).
    pub latency_ns: f64,
}

/// Latency of a chase on one context while the socket's other contexts read with a sweep
/// of injection delays, from idle to saturation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedCurve {
    /// Socket of the chase and the loaders (index in the topology).
    pub socket: usize,
    /// Node of every buffer (OS number).
    pub node: u32,
    /// Whether the node is the socket's local node.
    pub local: bool,
    /// The context that chased (OS CPU number).
    pub chase_cpu: u32,
    /// The contexts that loaded (OS CPU numbers).
    pub loaders: Vec<u32>,
    /// The points, from the idle one (no loader: the lower of the idle latency measured
    /// before the sweep and after it) to the smallest delay.
    pub points: Vec<LoadedPoint>,
    /// The idle latency measured again after the sweep, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_again_ns: Option<f64>,
    /// The knee, when latency passed [`KNEE_FACTOR`] × idle within the sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<Knee>,
    /// Why the curve may not be trusted (the idle point moved during the sweep, the host
    /// stole time from the vCPUs, a single loader).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Why the curve is not a measurement, when it is not: its figures are implausible
    /// against themselves or against the other figures of the same run (the loaders read
    /// nothing while the saturation step read GB/s, latency under load below idle). The
    /// points are kept as read, for diagnosis; views print this reason instead of them,
    /// and the knee is `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl LoadedCurve {
    /// Marks the curve as not a measurement, for `reason` (the first reason stays): its
    /// knee is dropped and views print the reason instead of the points.
    pub fn set_unavailable(&mut self, reason: impl Into<String>) {
        if self.unavailable.is_none() {
            self.unavailable = Some(reason.into());
        }
        self.knee = None;
    }
}

/// The knee of a loaded-latency curve: the bandwidth at which the chase's latency first
/// exceeds [`KNEE_FACTOR`] × its idle latency (the first point's), interpolated linearly
/// between the last point below and the first point above; `None` when no point exceeds it
/// (the loaders could not push latency that far) or without points. Points are taken in
/// the order given (from the largest delay to none).
#[must_use]
pub fn knee(points: &[LoadedPoint]) -> Option<Knee> {
    let idle = points.first()?.latency_ns;
    if !idle.is_finite() || idle <= 0.0 {
        return None;
    }
    let limit = KNEE_FACTOR * idle;
    let i = points
        .iter()
        .position(|p| p.latency_ns.is_finite() && p.latency_ns > limit)?;
    let above = points[i];
    let below = points[i - 1];
    let span = above.latency_ns - below.latency_ns;
    let t = if span > 0.0 {
        ((limit - below.latency_ns) / span).clamp(0.0, 1.0)
    } else {
        1.0
    };
    Some(Knee {
        gbps: below.gbps + t * (above.gbps - below.gbps),
        latency_ns: limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(f64, f64)]) -> Vec<LoadedPoint> {
        points
            .iter()
            .enumerate()
            .map(|(i, &(gbps, latency_ns))| LoadedPoint {
                delay: (i > 0).then(|| 1000 / i as u32),
                gbps,
                latency_ns,
            })
            .collect()
    }

    #[test]
    fn the_knee_is_where_latency_first_passes_twice_idle_interpolated() {
        // Idle 100 ns; 150 ns at 40 GB/s, 300 ns at 60 GB/s: 200 ns is crossed two thirds
        // of the way from 40 to 60 GB/s.
        let c = curve(&[
            (0.0, 100.0),
            (20.0, 110.0),
            (40.0, 150.0),
            (60.0, 300.0),
            (61.0, 900.0),
        ]);
        let k = knee(&c).unwrap();
        assert!(
            (k.gbps - (40.0 + 20.0 * 50.0 / 150.0)).abs() < 1e-9,
            "{k:?}"
        );
        assert!((k.latency_ns - 200.0).abs() < 1e-9);
    }

    #[test]
    fn a_curve_that_never_doubles_has_no_knee() {
        assert_eq!(
            knee(&curve(&[(0.0, 100.0), (10.0, 120.0), (20.0, 199.0)])),
            None
        );
        assert_eq!(knee(&[]), None);
        assert_eq!(knee(&curve(&[(0.0, f64::NAN), (1.0, 500.0)])), None);
    }

    #[test]
    fn a_jump_at_the_first_loaded_point_puts_the_knee_between_idle_and_it() {
        let k = knee(&curve(&[(0.0, 100.0), (10.0, 300.0)])).unwrap();
        assert!((k.gbps - 5.0).abs() < 1e-9, "{k:?}");
    }

    #[test]
    fn saturation_is_the_smallest_count_within_five_percent_of_the_peak() {
        let s = Saturation::of(
            0,
            0,
            vec![(8, 99.0), (1, 20.0), (4, 96.0), (2, 50.0), (16, 100.0)],
        );
        assert_eq!(s.threads, Some(4));
        assert_eq!(s.peak_gbps, Some(100.0));
        assert_eq!(s.points[0], (1, 20.0));
        assert_eq!(Saturation::of(0, 0, Vec::new()).threads, None);
    }

    #[test]
    fn a_richer_memory_section_round_trips_and_an_older_one_still_loads() {
        use crate::sections::MemorySection;
        let old = r#"{"latency":[{"context":0,"node":0,"latency":91.5}],"bandwidth":[{"socket":0,"node":0,"access":"read","threads":"single","gbps":20.0}]}"#;
        let m: MemorySection = serde_json::from_str(old).unwrap();
        assert_eq!(m.latency.len(), 1);
        let d = &m.detail;
        assert!(d.node_matrix.is_none() && d.mixes.is_empty() && d.loaded_latency.is_empty());
        // Written again, an old section gains no field.
        assert!(!serde_json::to_string(&m).unwrap().contains("mixes"));
        let points = curve(&[(0.0, 100.0), (30.0, 250.0)]);
        let detail = MemoryDetail {
            node_matrix: Some(NodeMatrix {
                initiators: vec![MatrixInitiator {
                    name: "node 0".into(),
                    socket: 0,
                    node: Some(0),
                    cpus: vec![0, 1],
                }],
                targets: vec![0, 1],
                latency_ns: vec![vec![Some(90.0), None]],
                read_gbps: vec![vec![Some(30.0), None]],
                pairs_measured: 1,
                pairs_total: 2,
            }),
            mixes: vec![MixBandwidth {
                socket: 0,
                node: 0,
                mix: Mix::Triad,
                non_temporal: true,
                threads: 2,
                gbps: 33.0,
            }],
            saturation: vec![Saturation::of(0, 0, vec![(1, 20.0), (2, 30.0)])],
            loaded_latency: vec![LoadedCurve {
                socket: 0,
                node: 0,
                local: true,
                chase_cpu: 0,
                loaders: vec![1],
                knee: knee(&points),
                points,
                idle_again_ns: Some(101.0),
                warnings: vec!["1 loader".into()],
                unavailable: None,
            }],
            cache_to_cache: None,
        };
        let rich = MemorySection { detail, ..m };
        let json = serde_json::to_string(&rich).unwrap();
        // Flattened: the fields stand in the section itself.
        assert!(
            json.contains(",\"mixes\":[") && !json.contains("detail"),
            "{json}"
        );
        let back: MemorySection = serde_json::from_str(&json).unwrap();
        assert_eq!(back, rich);
    }

    #[test]
    fn mixes_name_their_streams() {
        assert_eq!(Mix::ThreeToOne.streams(), (3, 1));
        assert_eq!(Mix::Triad.streams(), (2, 1));
        assert_eq!(Mix::ALL.len(), 5);
        assert_eq!(
            serde_json::to_string(&Mix::ThreeToOne).unwrap(),
            "\"three_to_one\""
        );
    }
}
