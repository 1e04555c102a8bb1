//! Every figure of a memory measurement checked against the others of the same run, so
//! that a figure that cannot be right is flagged as not a measurement instead of printed
//! as one. A loader that never ran, an instruction set's kernel that read nothing, a
//! count that was never added, a timing window that missed the work: each shows as one
//! figure out of line with the others of the same machine, measured minutes apart.
//!
//! - **Loaded latency** ([`super::loaded`]): a curve is unavailable when its loaders read
//!   at their shortest delay less than [`LOADER_SHARE`] of what one thread read from the
//!   same node in the same run (each loader at delay 0 runs that thread's read kernel:
//!   0.0 GB/s beside a saturation step reading 14.4 GB/s is no measurement), or when the
//!   chase under load reads more than [`BELOW_IDLE`] below its idle latency (memory is
//!   not faster under load); its idle point far from the run's latency step is a warning.
//! - **Bandwidths** (the default steps, the saturation, the mixes, the node matrix's
//!   reads): a figure that is zero, negative or not a number is not a measurement; one
//!   more than [`BANDWIDTH_RATIO`] times away from the same socket, node and thread
//!   count's figure of another step is flagged, and so is a socket whose threads together
//!   read less than [`BANDWIDTH_RATIO`] times below one of them.
//! - **Latencies** (the default steps and the node matrix): zero, negative or not a
//!   number; a matrix cell more than [`LATENCY_RATIO`] times away from the latency step of
//!   the same socket and node.
//!
//! What is flagged goes into the report's warnings as `implausible: …` (the loaded curve
//! also carries its reason as [`topoprobe_model::LoadedCurve::unavailable`]). The
//! thresholds are wide: the host's other guests move a figure by tens of percent between
//! steps, and a busy machine must not turn measurements into findings.

use topoprobe_model::{LoadedCurve, Mix};

use super::MemReport;

/// The loaders at their shortest delay read at least this share of one thread's read
/// bandwidth to the same node (each loader at delay 0 runs the read kernel).
pub const LOADER_SHARE: f64 = 0.25;
/// A loaded point may read this share below the idle latency before it is implausible.
pub const BELOW_IDLE: f64 = 0.15;
/// Two bandwidth figures of the same socket, node and thread count may lie this many
/// times apart before they are implausible.
pub const BANDWIDTH_RATIO: f64 = 3.0;
/// Two idle latencies of the same socket and node may lie this many times apart before
/// they are implausible.
pub const LATENCY_RATIO: f64 = 1.5;

/// Whether `x` can be a measured rate or time: finite and above zero.
fn measured(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Whether `a` and `b` lie within `ratio` of each other.
fn near(a: f64, b: f64, ratio: f64) -> bool {
    a <= b * ratio && b <= a * ratio
}

/// One thread's read bandwidth from `socket` to `node` in `r`, and the step it comes
/// from: the bandwidth step's or the saturation's one-thread point, the higher.
fn one_thread(r: &MemReport, socket: usize, node: u32) -> Option<(f64, &'static str)> {
    let steps = r
        .bandwidth
        .iter()
        .filter(|b| b.socket == socket && b.node == node && b.threads == 1)
        .map(|b| (b.read, "the bandwidth step"));
    let saturation = r
        .saturation
        .iter()
        .filter(|s| s.socket == socket && s.node == node)
        .flat_map(|s| s.points.iter().filter(|p| p.0 == 1))
        .map(|p| (p.1, "the saturation step"));
    steps
        .chain(saturation)
        .filter(|(g, _)| measured(*g))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// The run's idle latency from `socket` to `node` (the latency step's lowest).
fn idle_latency(r: &MemReport, socket: usize, node: u32) -> Option<f64> {
    r.latency
        .iter()
        .filter(|l| l.socket == socket && l.node == node)
        .map(super::LatencyResult::ns)
        .filter(|&x| measured(x))
        .min_by(f64::total_cmp)
}

/// The read bandwidth of the default step from `socket` to `node` with `threads`.
fn read_with(r: &MemReport, socket: usize, node: u32, threads: usize) -> Option<f64> {
    r.bandwidth
        .iter()
        .find(|b| b.socket == socket && b.node == node && b.threads == threads)
        .map(|b| b.read)
        .filter(|&g| measured(g))
}

/// Why `c` is not a measurement, judged against the other figures of `r`.
#[must_use]
pub fn curve_unavailable(c: &LoadedCurve, r: &MemReport) -> Option<String> {
    if let Some(reason) = super::loaded::empty_load(&c.points) {
        let beside = one_thread(r, c.socket, c.node)
            .map(|(g, step)| {
                format!(
                    " (one thread read {g:.1} GB/s from node {} in {step} of this run)",
                    c.node
                )
            })
            .unwrap_or_default();
        return Some(format!("{reason}{beside}"));
    }
    let loaded = || c.points.iter().filter(|p| p.delay.is_some());
    let top = loaded().map(|p| p.gbps).fold(f64::NAN, f64::max);
    if !top.is_finite() {
        return None;
    }
    if let Some((one, step)) = one_thread(r, c.socket, c.node) {
        if top < LOADER_SHARE * one {
            return Some(format!(
                "the loaders read at most {top:.1} GB/s where one thread read {one:.1} GB/s \
                 from node {} in {step} of this run (each loader at delay 0 runs that read \
                 kernel): the load was not applied as counted",
                c.node
            ));
        }
    }
    let idle = c
        .points
        .first()
        .map(|p| p.latency_ns)
        .filter(|&x| measured(x))?;
    if let Some(p) = loaded().find(|p| p.latency_ns < (1.0 - BELOW_IDLE) * idle) {
        return Some(format!(
            "the chase read {:.1} ns under load (delay {}) against {idle:.1} ns idle: memory is \
             not faster under load",
            p.latency_ns,
            p.delay.unwrap_or(0)
        ));
    }
    None
}

/// Checks every figure of `r` against the others of the same run: a loaded-latency curve
/// that is not a measurement is marked unavailable (its knee dropped), and every
/// implausible figure gets an `implausible: …` warning in the report.
pub fn check(r: &mut MemReport) {
    let mut warnings = Vec::new();
    // The default steps.
    for l in &r.latency {
        if !measured(l.ns()) {
            warnings.push(format!(
                "implausible: latency CPU {} -> node {} read {} ns: not a measurement",
                l.cpu,
                l.node,
                l.ns()
            ));
        }
    }
    for b in &r.bandwidth {
        for (what, g) in [("read", b.read), ("write", b.write), ("copy", b.copy)] {
            // A kernel the budget did not run is NaN and says nothing; zero is a reading.
            if !g.is_nan() && !measured(g) {
                warnings.push(format!(
                    "implausible: {what} bandwidth socket {} -> node {}, {} thread(s) read {g:.1} \
                     GB/s: not a measurement",
                    b.socket, b.node, b.threads
                ));
            }
        }
        if b.threads > 1 {
            if let (Some(one), true) = (read_with(r, b.socket, b.node, 1), measured(b.read)) {
                if b.read * BANDWIDTH_RATIO < one {
                    warnings.push(format!(
                        "implausible: {} threads of socket {} read {:.1} GB/s from node {} where \
                         one of them alone read {one:.1} GB/s: not a measurement",
                        b.threads, b.socket, b.read, b.node
                    ));
                }
            }
        }
    }
    // The loaded-latency curves.
    let reasons: Vec<Option<String>> = r
        .loaded_latency
        .iter()
        .map(|c| curve_unavailable(c, r))
        .collect();
    let idles: Vec<Option<f64>> = r
        .loaded_latency
        .iter()
        .map(|c| idle_latency(r, c.socket, c.node))
        .collect();
    for ((c, reason), idle) in r.loaded_latency.iter_mut().zip(reasons).zip(idles) {
        if let Some(reason) = reason {
            warnings.push(format!(
                "implausible: loaded latency socket {} -> node {}: unavailable: {reason}",
                c.socket, c.node
            ));
            c.set_unavailable(reason);
            continue;
        }
        let first = c.points.first().map(|p| p.latency_ns);
        if let (Some(step), Some(own)) = (idle, first.filter(|&x| measured(x))) {
            if !near(own, step, LATENCY_RATIO) {
                c.warnings.push(format!(
                    "implausible: the curve's idle latency {own:.1} ns is far from the {step:.1} \
                     ns of this run's latency step to node {}",
                    c.node
                ));
            }
        }
    }
    // The saturation.
    for s in &r.saturation {
        for &(t, g) in &s.points {
            if !measured(g) {
                warnings.push(format!(
                    "implausible: saturation socket {} -> node {} read {g:.1} GB/s with {t} \
                     thread(s): not a measurement",
                    s.socket, s.node
                ));
            } else if let Some(step) = read_with(r, s.socket, s.node, t) {
                if !near(g, step, BANDWIDTH_RATIO) {
                    warnings.push(format!(
                        "implausible: saturation socket {} -> node {} read {g:.1} GB/s with {t} \
                         thread(s) where the bandwidth step read {step:.1} GB/s",
                        s.socket, s.node
                    ));
                }
            }
        }
    }
    // The mixes.
    for m in &r.mixes {
        if !measured(m.gbps) {
            warnings.push(format!(
                "implausible: mix {} socket {} -> node {}{} read {:.1} GB/s: not a measurement",
                m.mix.name(),
                m.socket,
                m.node,
                if m.non_temporal {
                    " (non-temporal stores)"
                } else {
                    ""
                },
                m.gbps
            ));
        } else if m.mix == Mix::AllReads {
            if let Some(step) = read_with(r, m.socket, m.node, m.threads) {
                if !near(m.gbps, step, BANDWIDTH_RATIO) {
                    warnings.push(format!(
                        "implausible: mix all reads socket {} -> node {} read {:.1} GB/s with {} \
                         thread(s) where the bandwidth step read {step:.1} GB/s",
                        m.socket, m.node, m.gbps, m.threads
                    ));
                }
            }
        }
    }
    // The node × node matrix.
    if let Some(x) = &r.node_matrix {
        for (i, init) in x.initiators.iter().enumerate() {
            for (t, &node) in x.targets.iter().enumerate() {
                let lat = x
                    .latency_ns
                    .get(i)
                    .and_then(|row| row.get(t))
                    .copied()
                    .flatten();
                if let Some(ns) = lat {
                    let step = init
                        .cpus
                        .first()
                        .and_then(|&cpu| {
                            r.latency
                                .iter()
                                .find(|l| l.cpu == cpu && l.node == node)
                                .map(super::LatencyResult::ns)
                        })
                        .filter(|&x| measured(x));
                    if !measured(ns) {
                        warnings.push(format!(
                            "implausible: matrix latency {} -> node {node} read {ns:.1} ns: not a \
                             measurement",
                            init.name
                        ));
                    } else if let Some(step) = step.filter(|&s| !near(ns, s, LATENCY_RATIO)) {
                        warnings.push(format!(
                            "implausible: matrix latency {} -> node {node} read {ns:.1} ns where \
                             the latency step of the same CPU read {step:.1} ns",
                            init.name
                        ));
                    }
                }
                let read = x
                    .read_gbps
                    .get(i)
                    .and_then(|row| row.get(t))
                    .copied()
                    .flatten();
                if let Some(g) = read {
                    if !measured(g) {
                        warnings.push(format!(
                            "implausible: matrix read {} -> node {node} read {g:.1} GB/s: not a \
                             measurement",
                            init.name
                        ));
                    } else if let Some(step) = read_with(r, init.socket, node, init.cpus.len())
                        .filter(|&s| !near(g, s, BANDWIDTH_RATIO))
                    {
                        warnings.push(format!(
                            "implausible: matrix read {} -> node {node} read {g:.1} GB/s where \
                             the bandwidth step with as many threads read {step:.1} GB/s",
                            init.name
                        ));
                    }
                }
            }
        }
    }
    r.warnings.extend(warnings);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{BandwidthResult, LatencyResult};
    use topoprobe_model::{Budget, CostPlan, LoadedPoint, Saturation};

    fn report() -> MemReport {
        MemReport {
            latency: vec![LatencyResult {
                cpu: 0,
                socket: 0,
                node: 0,
                huge_ns: Some(113.0),
                small_ns: None,
                scattered_ns: None,
                waited: None,
                huge_share: None,
            }],
            bandwidth: vec![
                BandwidthResult {
                    socket: 0,
                    node: 0,
                    threads: 1,
                    read: 14.4,
                    write: 9.0,
                    copy: 12.0,
                    spread: 0.01,
                    rounds: 3,
                },
                BandwidthResult {
                    socket: 0,
                    node: 0,
                    threads: 2,
                    read: 20.0,
                    write: 12.0,
                    copy: 16.0,
                    spread: 0.01,
                    rounds: 3,
                },
            ],
            local_nodes: vec![(0, 0)],
            notes: Vec::new(),
            warnings: Vec::new(),
            latency_bytes: 64 << 20,
            evicted: true,
            bandwidth_bytes: 192 << 20,
            non_temporal: false,
            pairs: (1, 1),
            cost: CostPlan::new(Budget::new(120.0, 1 << 30)),
            node_matrix: None,
            mixes: Vec::new(),
            saturation: vec![Saturation::of(0, 0, vec![(1, 14.4), (2, 20.0)])],
            loaded_latency: Vec::new(),
        }
    }

    fn curve(points: &[(Option<u32>, f64, f64)]) -> LoadedCurve {
        let points: Vec<LoadedPoint> = points
            .iter()
            .map(|&(delay, gbps, latency_ns)| LoadedPoint {
                delay,
                gbps,
                latency_ns,
            })
            .collect();
        LoadedCurve {
            socket: 0,
            node: 0,
            local: true,
            chase_cpu: 0,
            loaders: vec![1],
            knee: topoprobe_model::knee(&points),
            points,
            idle_again_ns: Some(113.0),
            warnings: Vec::new(),
            unavailable: None,
        }
    }

    /// The Intel guest's curve: 0.0 GB/s at every delay, the latency flat, while the
    /// saturation step read 14.4 GB/s for one thread.
    #[test]
    fn a_curve_at_zero_bandwidth_beside_a_saturation_reading_gbps_is_unavailable() {
        let mut r = report();
        r.loaded_latency = vec![curve(&[
            (None, 0.0, 113.0),
            (Some(4096), 0.0, 111.0),
            (Some(64), 0.0, 114.0),
            (Some(0), 0.0, 115.0),
        ])];
        check(&mut r);
        let c = &r.loaded_latency[0];
        let reason = c.unavailable.as_deref().expect("unavailable");
        assert!(reason.starts_with("the loaders read nothing"), "{reason}");
        assert!(reason.contains("14.4 GB/s"), "{reason}");
        assert_eq!(c.knee, None);
        assert!(
            r.warnings
                .iter()
                .any(|w| w
                    .starts_with("implausible: loaded latency socket 0 -> node 0: unavailable")),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn loaders_far_below_one_thread_or_latency_below_idle_are_unavailable() {
        let mut r = report();
        r.loaded_latency = vec![
            curve(&[
                (None, 0.0, 113.0),
                (Some(64), 0.5, 114.0),
                (Some(0), 1.0, 118.0),
            ]),
            curve(&[
                (None, 0.0, 113.0),
                (Some(64), 6.0, 80.0),
                (Some(0), 14.0, 150.0),
            ]),
            curve(&[
                (None, 0.0, 113.0),
                (Some(64), 6.0, 112.0),
                (Some(0), 14.0, 240.0),
            ]),
        ];
        check(&mut r);
        let [a, b, c] = &r.loaded_latency[..] else {
            panic!("three curves")
        };
        assert!(
            a.unavailable
                .as_deref()
                .is_some_and(|u| u.contains("at most 1.0 GB/s")),
            "{a:?}"
        );
        assert!(
            b.unavailable
                .as_deref()
                .is_some_and(|u| u.contains("not faster under load")),
            "{b:?}"
        );
        // A curve rising from idle to saturation is a measurement, its knee kept.
        assert_eq!(c.unavailable, None);
        assert!(c.knee.is_some());
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    }

    #[test]
    fn zero_or_far_apart_bandwidths_of_one_run_are_flagged() {
        let mut r = report();
        r.saturation = vec![Saturation::of(0, 0, vec![(1, 0.0), (2, 20.0)])];
        r.mixes = vec![topoprobe_model::MixBandwidth {
            socket: 0,
            node: 0,
            mix: Mix::AllReads,
            non_temporal: false,
            threads: 2,
            gbps: 200.0,
        }];
        r.bandwidth[1].read = 3.0;
        check(&mut r);
        let w = r.warnings.join("\n");
        assert!(
            w.contains(
                "saturation socket 0 -> node 0 read 0.0 GB/s with 1 thread(s): not a measurement"
            ),
            "{w}"
        );
        assert!(
            w.contains("mix all reads socket 0 -> node 0 read 200.0 GB/s"),
            "{w}"
        );
        assert!(w.contains("2 threads of socket 0 read 3.0 GB/s"), "{w}");
        // A run whose figures agree has nothing to say.
        let mut ok = report();
        check(&mut ok);
        assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);
    }
}
