//! The layer analysis on simulated clusters: every pair's layer is the true one, each layer
//! is explained by how its pairs are related, large clusters are sampled within 8·N
//! measurements, and the advice groups the ranks by host.

use topoprobe_cluster::sim::{SimCluster, SimProbe};
use topoprobe_cluster::{analyse, ClusterReport, CollectOptions, RankProbe, Strategy};
use topoprobe_model::{PairSample, ProbeError};

fn run(sim: &SimCluster, opts: &CollectOptions) -> (ClusterReport, usize, usize) {
    let mut probe = sim.probe();
    let report = analyse(&mut probe, &sim.ranks(), opts, &mut |_| {}).expect("analysis");
    (report, probe.latency_calls, probe.pairs.len())
}

fn names(report: &ClusterReport) -> Vec<&str> {
    report
        .layers
        .iter()
        .map(|l| l.explained_by.as_str())
        .collect()
}

/// Fraction of pairs whose layer is the true one (layers numbered as the simulator's).
fn agreement(sim: &SimCluster, report: &ClusterReport) -> f64 {
    let n = sim.len();
    let mut right = 0usize;
    for a in 0..n {
        for b in a + 1..n {
            if report.layer[a][b] == Some(sim.true_layer(a, b)) {
                right += 1;
            }
        }
    }
    right as f64 / (n * (n - 1) / 2) as f64
}

#[test]
fn three_layers_with_noise_all_pairs() {
    let sim = SimCluster::new(2, 2, 4); // 16 ranks: every pair measured
    let (report, _, pairs) = run(&sim, &CollectOptions::default());
    assert_eq!(report.measurement.strategy, Strategy::AllPairs);
    assert_eq!(pairs, 16 * 15 / 2);
    assert_eq!(
        names(&report),
        ["same socket", "other socket", "inter-node"]
    );
    assert!(report.layers.iter().all(|l| l.explained), "{report:?}");
    assert!((agreement(&sim, &report) - 1.0).abs() < f64::EPSILON);
    // Every pair has a latency and a bandwidth; the layers' medians are the simulated ones.
    for (a, row) in report.latency_us.iter().enumerate() {
        for (b, v) in row.iter().enumerate() {
            assert_eq!(v.is_some(), a != b);
            assert_eq!(report.bandwidth_gbps[a][b].is_some(), a != b);
        }
    }
    for (layer, want) in report.layers.iter().zip(sim.latency_us) {
        assert!((layer.latency_us / want - 1.0).abs() < 0.1, "{layer:?}");
    }
    for (layer, want) in report.layers.iter().zip(sim.bandwidth_gbps) {
        let got = layer.bandwidth_gbps.expect("bandwidth");
        assert!((got / want - 1.0).abs() < 0.1, "{layer:?}");
    }
}

#[test]
fn two_hundred_fifty_six_ranks_are_sampled_within_eight_per_rank() {
    for noise in [0.0, 0.03, 0.1] {
        let mut sim = SimCluster::new(8, 2, 16); // 256 ranks
        sim.noise = noise;
        let (report, calls, pairs) = run(&sim, &CollectOptions::default());
        assert_eq!(report.measurement.strategy, Strategy::Sampled);
        assert!(
            calls <= 8 * 256,
            "noise {noise}: {calls} measurements for 256 ranks"
        );
        assert!(pairs < 256 * 255 / 2 / 10, "{pairs} pairs measured");
        assert_eq!(
            names(&report),
            ["same socket", "other socket", "inter-node"],
            "noise {noise}"
        );
        assert!(report.layers.iter().all(|l| l.explained));
        let agree = agreement(&sim, &report);
        assert!(
            agree > 0.999,
            "noise {noise}: {agree} of the pairs in their true layer"
        );
        // The advice: the hosts (what MPI_COMM_TYPE_SHARED gives), then the sockets.
        let by_host = report
            .advice
            .iter()
            .find(|s| s.by_host)
            .expect("a split by host");
        assert_eq!(by_host.groups.len(), 8);
        assert!(by_host.clean);
        assert!(report
            .advice
            .iter()
            .any(|s| s.groups.len() == 16 && s.clean));
    }
}

#[test]
fn a_second_switch_is_a_fourth_layer() {
    let mut sim = SimCluster::new(6, 2, 4);
    sim.far_hosts = Some((3, 2.0));
    let (report, calls, _) = run(&sim, &CollectOptions::default());
    assert!(calls <= 8 * sim.len());
    assert_eq!(report.layers.len(), 4, "{:?}", names(&report));
    assert_eq!(report.layers[2].explained_by, "inter-node");
    assert_eq!(report.layers[3].explained_by, "inter-node");
    assert!(agreement(&sim, &report) > 0.999);
}

#[test]
fn ranks_mapped_round_robin_over_the_hosts() {
    let mut sim = SimCluster::new(4, 2, 8);
    sim.round_robin = true;
    let (report, _, _) = run(&sim, &CollectOptions::default());
    assert_eq!(
        names(&report),
        ["same socket", "other socket", "inter-node"]
    );
    assert!(agreement(&sim, &report) > 0.999);
    let by_host = report.advice.iter().find(|s| s.by_host).expect("by host");
    // Rank r is on host r % 4.
    for (r, &c) in by_host.color.iter().enumerate() {
        assert_eq!(by_host.groups[c].first().map(|f| f % 4), Some(r % 4));
    }
}

#[test]
fn unbound_ranks_leave_the_sockets_unexplained() {
    let mut sim = SimCluster::new(2, 2, 4);
    sim.bound = false;
    let (report, _, _) = run(&sim, &CollectOptions::default());
    assert_eq!(report.layers.len(), 3);
    // The descriptions cannot tell which socket an unbound rank is on: the two fast layers
    // are "same node" and say so; the slow one is still inter-node.
    assert_eq!(report.layers[2].explained_by, "inter-node");
    assert!(
        report.layers[..2].iter().all(|l| !l.explained),
        "{report:?}"
    );
}

/// A probe whose first measurement of some pairs is slowed, as when another program runs
/// on one rank's CPU for a moment.
struct Burst {
    probe: SimProbe,
    /// The pairs slowed, and by how much.
    slowed: Vec<((usize, usize), f64)>,
}

impl RankProbe for Burst {
    fn ranks(&self) -> usize {
        self.probe.ranks()
    }

    fn latency(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        let burst = self.slowed.iter().position(|&(p, _)| p == (a, b));
        let sample = self.probe.latency(a, b)?;
        Ok(match burst {
            Some(i) => {
                let (_, by) = self.slowed.remove(i);
                sample.map(|s| PairSample {
                    median: s.median * by,
                    min: s.min * by,
                    ..s
                })
            }
            None => sample,
        })
    }

    fn bandwidth(&mut self, a: usize, b: usize) -> Result<Option<f64>, ProbeError> {
        self.probe.bandwidth(a, b)
    }
}

/// The analysis of `sim` measured through [`Burst`] with `slowed`; every burst must have
/// happened.
fn with_bursts(sim: &SimCluster, slowed: Vec<((usize, usize), f64)>) -> ClusterReport {
    let mut probe = Burst {
        probe: sim.probe(),
        slowed,
    };
    let report = analyse(
        &mut probe,
        &sim.ranks(),
        &CollectOptions::default(),
        &mut |_| {},
    )
    .expect("analysis");
    assert!(probe.slowed.is_empty(), "every burst happened");
    report
}

#[test]
fn a_burst_on_two_pairs_does_not_split_their_layer() {
    // Two hosts of two ranks, as the network-namespace run: half the inter-node pairs are
    // three times slower the first time they are measured.
    let sim = SimCluster::new(2, 1, 2);
    let report = with_bursts(&sim, vec![((0, 2), 3.0), ((1, 3), 3.0)]);
    assert_eq!(names(&report), ["same socket", "inter-node"], "{report:?}");
    assert_eq!(report.layers[1].pairs, 4);
    assert!(report.layers.iter().all(|l| l.explained));
    // The 6 pairs, and the 2 slowed pairs measured again.
    assert_eq!(report.measurement.latency_measurements, 8);
}

#[test]
fn a_pair_descheduled_for_milliseconds_does_not_merge_the_layers() {
    let sim = SimCluster::new(2, 1, 2);
    // Slowed twice: measured again twice.
    let report = with_bursts(
        &sim,
        vec![((0, 1), 2.5), ((0, 3), 1500.0), ((0, 3), 1500.0)],
    );
    assert_eq!(names(&report), ["same socket", "inter-node"], "{report:?}");
    assert!(report.layers.iter().all(|l| l.explained));
    assert!(report.layers[1].latency_range_us[1] < 3.0, "{report:?}");
}

#[test]
fn a_pair_slow_every_time_is_an_outlier_left_out_of_the_layers() {
    // Two hosts of three ranks: the other two pairs within host 0 keep their layer.
    let sim = SimCluster::new(2, 1, 3);
    let report = with_bursts(&sim, vec![((0, 1), 400.0); 3]);
    let outliers = &report.measurement.outliers;
    assert_eq!(outliers.len(), 1, "{report:?}");
    assert_eq!(outliers[0].pair, [0, 1]);
    assert_eq!(outliers[0].measurements, 3);
    assert_eq!(outliers[0].relation, "same socket");
    // The other pairs keep their layers; the outlier has none, but keeps its latency.
    assert_eq!(names(&report), ["same socket", "inter-node"], "{report:?}");
    assert_eq!(report.layers[0].pairs, 5);
    assert_eq!(report.layers[1].pairs, 9);
    assert_eq!(report.layer[0][1], None);
    assert!(report.latency_us[0][1].is_some_and(|v| v > 100.0));
    let text = report.to_text();
    assert!(
        text.contains("not trustworthy: ranks 0 and 1:") && text.contains("left out of the layers"),
        "{text}"
    );
    let json = report.to_json();
    assert!(json.contains("\"outliers\""), "{json}");
}

#[test]
fn a_far_switch_stays_a_layer_of_its_own_when_measured_again() {
    let mut sim = SimCluster::new(3, 1, 2);
    sim.far_hosts = Some((2, 3.0));
    let (report, calls, _) = run(&sim, &CollectOptions::default());
    assert_eq!(names(&report), ["same socket", "inter-node", "inter-node"]);
    assert!(!report.layers[2].explained);
    // 15 pairs, then the 8 pairs to the far host twice more.
    assert_eq!(calls, 15 + 2 * 8);
}

#[test]
fn the_report_round_trips_through_json() {
    let sim = SimCluster::new(2, 1, 3);
    let (report, _, _) = run(&sim, &CollectOptions::default());
    let json = report.to_json();
    let back: ClusterReport = serde_json::from_str(&json).expect("JSON");
    assert_eq!(back.ranks, 6);
    assert_eq!(back.layers.len(), report.layers.len());
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    for key in ["ranks", "hosts", "layers", "latency_us", "bandwidth_gbps"] {
        assert!(value.get(key).is_some(), "{key}");
    }
    for key in ["latency_us", "bandwidth_gbps", "pairs", "explained_by"] {
        assert!(value["layers"][0].get(key).is_some(), "{key}");
    }
    assert!(report.heatmap().starts_with("<svg"));
    assert!(report.to_text().contains("inter-node"));
}
