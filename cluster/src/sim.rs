//! Simulated clusters, for tests, examples and benchmarks (behind the `sim` feature): hosts
//! of sockets of cores, one rank per core, latencies and bandwidths by layer with
//! log-normal noise, optionally a group of hosts behind another switch.
//!
//! ```
//! use topoprobe_cluster::sim::SimCluster;
//! use topoprobe_cluster::{analyse, CollectOptions};
//!
//! let sim = SimCluster::new(4, 2, 4); // 4 hosts × 2 sockets × 4 cores = 32 ranks
//! let mut probe = sim.probe();
//! let report = analyse(&mut probe, &sim.ranks(), &CollectOptions::default(), &mut |_| {})
//!     .unwrap();
//! let names: Vec<&str> = report.layers.iter().map(|l| l.explained_by.as_str()).collect();
//! assert_eq!(names, ["same socket", "other socket", "inter-node"]);
//! ```

use std::collections::{BTreeMap, BTreeSet};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use topoprobe_model::{PairSample, ProbeError};

use crate::layout::{CpuPlace, NodeLayout};
use crate::probe::RankProbe;
use crate::ranks::{RankInfo, Ranks};

/// Samples of one simulated latency measurement (the transport's default `--samples`).
pub const LATENCY_SAMPLES: usize = 7;

/// A simulated cluster: `hosts` hosts of `sockets` sockets of `cores` cores, one rank per
/// core.
#[derive(Debug, Clone, PartialEq)]
pub struct SimCluster {
    /// Number of hosts.
    pub hosts: usize,
    /// Sockets per host.
    pub sockets: usize,
    /// Cores per socket.
    pub cores: usize,
    /// Latency within a socket, across sockets and across hosts, µs.
    pub latency_us: [f64; 3],
    /// Bandwidth within a socket, across sockets and across hosts, GB/s.
    pub bandwidth_gbps: [f64; 3],
    /// Hosts from this index on sit behind another switch: latency to them from the
    /// others is multiplied by the factor, bandwidth divided by it.
    pub far_hosts: Option<(usize, f64)>,
    /// Standard deviation of the log-normal noise of every sample (0: exact). A latency
    /// measurement is the median of [`LATENCY_SAMPLES`] samples, as the MPI transport takes
    /// by default, and reports their relative spread; a bandwidth measurement is one sample.
    pub noise: f64,
    /// Ranks numbered round robin over the hosts (`--map-by node`) instead of host by
    /// host.
    pub round_robin: bool,
    /// Whether each rank is bound to its core; when not, the descriptions cannot tell the
    /// sockets of a host apart.
    pub bound: bool,
    /// Seed of the noise.
    pub seed: u64,
}

impl SimCluster {
    /// A cluster with typical figures: 0.3 µs in a socket, 0.6 µs across sockets, 2.5 µs
    /// across hosts; 12, 8 and 3 GB/s; 3% noise; ranks bound, host by host.
    #[must_use]
    pub fn new(hosts: usize, sockets: usize, cores: usize) -> Self {
        Self {
            hosts,
            sockets,
            cores,
            latency_us: [0.3, 0.6, 2.5],
            bandwidth_gbps: [12.0, 8.0, 3.0],
            far_hosts: None,
            noise: 0.03,
            round_robin: false,
            bound: true,
            seed: 1,
        }
    }

    /// Number of ranks.
    #[must_use]
    pub fn len(&self) -> usize {
        self.hosts * self.sockets * self.cores
    }

    /// Whether the cluster has no rank.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The host and the core (within its host) of rank `r`.
    #[must_use]
    pub fn place(&self, r: usize) -> (usize, usize) {
        let per_host = self.sockets * self.cores;
        if self.round_robin {
            (r % self.hosts, r / self.hosts)
        } else {
            (r / per_host, r % per_host)
        }
    }

    /// The layer of a pair: 0 same socket, 1 other socket, 2 other host, 3 other host
    /// behind the other switch.
    #[must_use]
    pub fn true_layer(&self, a: usize, b: usize) -> usize {
        let ((ha, ca), (hb, cb)) = (self.place(a), self.place(b));
        if ha != hb {
            return match self.far_hosts {
                Some((first, _)) if (ha >= first) != (hb >= first) => 3,
                _ => 2,
            };
        }
        usize::from(ca / self.cores != cb / self.cores)
    }

    /// Noise-free latency and bandwidth of a pair.
    #[must_use]
    pub fn truth(&self, a: usize, b: usize) -> (f64, f64) {
        let l = self.true_layer(a, b);
        let far = self.far_hosts.map_or(1.0, |f| f.1);
        match l {
            3 => (self.latency_us[2] * far, self.bandwidth_gbps[2] / far),
            _ => (self.latency_us[l], self.bandwidth_gbps[l]),
        }
    }

    /// What the ranks report: hosts `sim0`, `sim1`, …, each bound to its core (or allowed
    /// on the whole host), with every host's layout.
    #[must_use]
    pub fn ranks(&self) -> Ranks {
        let per_host = self.sockets * self.cores;
        let cpus = |c: usize| u32::try_from(c).unwrap_or(u32::MAX);
        let layout = NodeLayout {
            source: "simulated".into(),
            cpus: (0..per_host)
                .map(|c| {
                    (
                        cpus(c),
                        CpuPlace {
                            core: c,
                            groups: Vec::new(),
                            socket: c / self.cores,
                        },
                    )
                })
                .collect(),
        };
        let info = (0..self.len())
            .map(|r| {
                let (h, c) = self.place(r);
                RankInfo {
                    rank: r,
                    host: format!("sim{h}"),
                    allowed: if self.bound {
                        vec![cpus(c)]
                    } else {
                        (0..per_host).map(cpus).collect()
                    },
                    cpu: Some(cpus(c)),
                }
            })
            .collect();
        let layouts: BTreeMap<String, NodeLayout> = (0..self.hosts)
            .map(|h| (format!("sim{h}"), layout.clone()))
            .collect();
        // The simulated reports are valid by construction.
        Ranks::new(info, layouts).unwrap_or_default()
    }

    /// A probe measuring this cluster.
    #[must_use]
    pub fn probe(&self) -> SimProbe {
        SimProbe {
            sim: self.clone(),
            rng: ChaCha8Rng::seed_from_u64(self.seed),
            latency_calls: 0,
            bandwidth_calls: 0,
            pairs: BTreeSet::new(),
        }
    }
}

/// A [`RankProbe`] over a [`SimCluster`], counting what it is asked.
#[derive(Debug, Clone)]
pub struct SimProbe {
    sim: SimCluster,
    rng: ChaCha8Rng,
    /// Latency measurements made.
    pub latency_calls: usize,
    /// Bandwidth measurements made.
    pub bandwidth_calls: usize,
    /// Distinct pairs whose latency was measured.
    pub pairs: BTreeSet<(usize, usize)>,
}

impl SimProbe {
    /// A log-normal factor of the simulation's noise.
    fn noise(&mut self) -> f64 {
        if self.sim.noise <= 0.0 {
            return 1.0;
        }
        // Box–Muller.
        let u1: f64 = self.rng.random_range(f64::EPSILON..1.0);
        let u2: f64 = self.rng.random();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (self.sim.noise * z).exp()
    }

    fn check(&self, a: usize, b: usize) -> Result<(), ProbeError> {
        let n = self.sim.len();
        if a >= n || b >= n || a == b {
            return Err(ProbeError(format!("no pair ({a}, {b}) among {n} ranks")));
        }
        Ok(())
    }
}

impl RankProbe for SimProbe {
    fn ranks(&self) -> usize {
        self.sim.len()
    }

    fn latency(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        self.check(a, b)?;
        self.latency_calls += 1;
        self.pairs.insert((a.min(b), a.max(b)));
        let truth = self.sim.truth(a, b).0;
        let mut samples: Vec<f64> = (0..LATENCY_SAMPLES).map(|_| truth * self.noise()).collect();
        samples.sort_by(f64::total_cmp);
        let median = samples[LATENCY_SAMPLES / 2];
        let mean = samples.iter().sum::<f64>() / LATENCY_SAMPLES as f64;
        let var = samples.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / LATENCY_SAMPLES as f64;
        Ok(Some(PairSample {
            median,
            min: samples[0],
            spread: var.sqrt() / median,
            noisy: None,
        }))
    }

    fn bandwidth(&mut self, a: usize, b: usize) -> Result<Option<f64>, ProbeError> {
        self.check(a, b)?;
        self.bandwidth_calls += 1;
        Ok(Some(self.sim.truth(a, b).1 * self.noise()))
    }
}
