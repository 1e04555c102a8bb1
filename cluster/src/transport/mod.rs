//! The MPI transport (the `mpi` feature): rank 0 coordinates, every other rank waits for
//! its commands, and each measurement involves only the two ranks measured.
//!
//! - **Coordination.** Rank 0 sends a command to the one or two ranks concerned (point to
//!   point; no collective, so idle ranks never spin). Idle ranks wait for commands with
//!   a non-blocking probe and growing sleeps (up to 0.5 ms), so that on an oversubscribed
//!   node they leave the CPUs to the pair being measured.
//! - **Latency.** Ping-pong of small messages (`latency_bytes`, 8 by default): warm-up,
//!   a calibration that sizes batches to about `sample_us` each, then `samples` batches;
//!   one sample is half a batch's mean round trip. The initiator sends rank 0 the median,
//!   the minimum and the relative spread.
//! - **Bandwidth.** Windows of `window` non-blocking sends of `bandwidth_bytes` each,
//!   acknowledged by the receiver once all arrived; one warm-up window, then `repetitions`
//!   timed windows, the median kept.
//! - **Descriptions.** Rank 0 gathers every rank's [`RankInfo`] and asks each host's
//!   first rank for its [`NodeLayout`], checking every report's size before receiving it.

mod protocol;

use std::collections::BTreeMap;
use std::thread::sleep;
use std::time::Duration;

use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Rank;
use topoprobe_model::{LatencySummary, PairSample, ProbeError};

use crate::layout::NodeLayout;
use crate::node::{self, LayoutSource};
use crate::probe::RankProbe;
use crate::ranks::{RankInfo, Ranks};
use crate::ClusterError;

use protocol::{
    Command, Role, MAX_LAYOUT_REPORT, MAX_RANK_REPORT, TAG_ACK, TAG_BATCH, TAG_CONTROL, TAG_DATA,
    TAG_PING, TAG_REPORT, TAG_RESULT,
};

/// Largest message of the latency test, bytes.
pub const MAX_LATENCY_BYTES: usize = 1 << 20;
/// Largest message of the bandwidth test, bytes.
pub const MAX_BANDWIDTH_BYTES: usize = 1 << 28;
/// Largest window of the bandwidth test.
pub const MAX_WINDOW: usize = 256;
/// Most bytes of one bandwidth window (the receiver holds all of it).
pub const MAX_WINDOW_BYTES: usize = 1 << 30;

/// Round trips of the latency warm-up.
const WARMUP_ROUND_TRIPS: u64 = 50;
/// Round trips timed to size the batches.
const CALIBRATION_ROUND_TRIPS: u64 = 20;
/// Most round trips in one batch.
const MAX_BATCH: u64 = 1_000_000;
/// Longest sleep of an idle rank between two looks for a command.
const MAX_IDLE_SLEEP: Duration = Duration::from_micros(500);

/// How pairs are measured (the same on every rank: every rank gets the same arguments).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Size of a ping-pong message, bytes.
    pub latency_bytes: usize,
    /// Target duration of one latency sample (a batch of round trips), µs.
    pub sample_us: f64,
    /// Latency samples per pair.
    pub samples: usize,
    /// Size of one bandwidth message, bytes.
    pub bandwidth_bytes: usize,
    /// Messages in flight in one bandwidth window.
    pub window: usize,
    /// Timed bandwidth windows per pair.
    pub repetitions: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            latency_bytes: 8,
            sample_us: 1000.0,
            samples: 7,
            bandwidth_bytes: 1 << 20,
            window: 8,
            repetitions: 4,
        }
    }
}

impl Settings {
    /// Checks every setting's range.
    ///
    /// # Errors
    ///
    /// [`ClusterError::Option`] naming the setting out of range.
    pub fn check(&self) -> Result<(), ClusterError> {
        let bad = |what: String| Err(ClusterError::Option(what));
        if self.latency_bytes == 0 || self.latency_bytes > MAX_LATENCY_BYTES {
            return bad(format!(
                "--latency-bytes {} must be 1 to {MAX_LATENCY_BYTES}",
                self.latency_bytes
            ));
        }
        if !(self.sample_us.is_finite() && (1.0..=1e7).contains(&self.sample_us)) {
            return bad(format!(
                "--sample-us {} must be 1 to 10000000",
                self.sample_us
            ));
        }
        if self.samples == 0 || self.samples > 1000 {
            return bad(format!("--samples {} must be 1 to 1000", self.samples));
        }
        if self.bandwidth_bytes == 0 || self.bandwidth_bytes > MAX_BANDWIDTH_BYTES {
            return bad(format!(
                "--bandwidth-bytes {} must be 1 to {MAX_BANDWIDTH_BYTES}",
                self.bandwidth_bytes
            ));
        }
        if self.window == 0 || self.window > MAX_WINDOW {
            return bad(format!(
                "--window {} must be 1 to {MAX_WINDOW}",
                self.window
            ));
        }
        if self.window.saturating_mul(self.bandwidth_bytes) > MAX_WINDOW_BYTES {
            return bad(format!(
                "--window {} × --bandwidth-bytes {} exceeds {MAX_WINDOW_BYTES} bytes",
                self.window, self.bandwidth_bytes
            ));
        }
        if self.repetitions == 0 || self.repetitions > 1000 {
            return bad(format!(
                "--repetitions {} must be 1 to 1000",
                self.repetitions
            ));
        }
        Ok(())
    }

    /// The settings by name, for the report.
    #[must_use]
    pub fn describe(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("latency_bytes".into(), self.latency_bytes.to_string());
        m.insert("latency_sample_us".into(), self.sample_us.to_string());
        m.insert("latency_samples".into(), self.samples.to_string());
        m.insert("bandwidth_bytes".into(), self.bandwidth_bytes.to_string());
        m.insert("bandwidth_window".into(), self.window.to_string());
        m.insert("bandwidth_repetitions".into(), self.repetitions.to_string());
        m.insert(
            "mpi_library".into(),
            mpi::environment::library_version()
                .map(|v| v.lines().next().unwrap_or("").trim().to_string())
                .unwrap_or_else(|_| "unknown".into()),
        );
        m
    }
}

/// A rank number as MPI's type (ranks come from a communicator's size, which is an
/// MPI `int`).
fn rank(r: usize) -> Rank {
    Rank::try_from(r).unwrap_or(Rank::MAX)
}

/// Waits, sleeping between looks, for a message with `tag` from `source` (`None`: any
/// rank), and returns its source and its size in bytes; the message is left to receive.
fn wait_for(world: &SimpleCommunicator, source: Option<usize>, tag: i32) -> (usize, usize) {
    let mut pause = Duration::from_micros(1);
    loop {
        let status = match source {
            Some(s) => world.process_at_rank(rank(s)).immediate_probe_with_tag(tag),
            None => world.any_process().immediate_probe_with_tag(tag),
        };
        if let Some(st) = status {
            let bytes = usize::try_from(st.count(u8::equivalent_datatype())).unwrap_or(0);
            return (usize::try_from(st.source_rank()).unwrap_or(0), bytes);
        }
        sleep(pause);
        pause = (pause * 2).min(MAX_IDLE_SLEEP);
    }
}

/// Receives a JSON report with `tag` from `source` (any rank when `None`), refusing one
/// larger than `limit` bytes or that does not parse.
fn receive_json<T: serde::de::DeserializeOwned>(
    world: &SimpleCommunicator,
    source: Option<usize>,
    limit: usize,
    what: &str,
) -> Result<(usize, T), ClusterError> {
    let (from, bytes) = wait_for(world, source, TAG_REPORT);
    if bytes > limit {
        return Err(ClusterError::Ranks(format!(
            "rank {from} sent a {what} of {bytes} bytes (at most {limit})"
        )));
    }
    let mut buf = vec![0_u8; bytes];
    world
        .process_at_rank(rank(from))
        .receive_into_with_tag(&mut buf[..], TAG_REPORT);
    let v = serde_json::from_slice(&buf)
        .map_err(|e| ClusterError::Ranks(format!("rank {from} sent an invalid {what}: {e}")))?;
    Ok((from, v))
}

/// Sends `value` as JSON to rank 0.
fn send_json<T: serde::Serialize>(world: &SimpleCommunicator, value: &T) {
    // Serialising plain data cannot fail.
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    world
        .process_at_rank(0)
        .send_with_tag(&bytes[..], TAG_REPORT);
}

/// What this rank reports about itself.
fn this_rank(world: &SimpleCommunicator) -> RankInfo {
    let allowed = topoprobe_sys::affinity::allowed_cpus()
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    RankInfo {
        rank: usize::try_from(world.rank()).unwrap_or(0),
        host: mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into()),
        allowed,
        cpu: topoprobe_sys::affinity::current_cpu(),
    }
}

/// Statistics of a pair's latency samples (µs): median, minimum, relative standard
/// deviation; `None` without samples.
fn sample_stats(samples: &[f64]) -> Option<PairSample> {
    let s = LatencySummary::of(samples.iter().copied())?;
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    Some(PairSample {
        median: s.median,
        min: s.min,
        spread: if s.median > 0.0 {
            var.sqrt() / s.median
        } else {
            0.0
        },
        noisy: None,
    })
}

/// The initiator's end of a ping-pong: returns the one-way latency samples, µs.
fn ping(world: &SimpleCommunicator, peer: usize, s: &Settings) -> Vec<f64> {
    let p = world.process_at_rank(rank(peer));
    let mut buf = vec![0_u8; s.latency_bytes];
    let batch = |k: u64, buf: &mut [u8]| -> f64 {
        p.send_with_tag(&k, TAG_BATCH);
        let t0 = mpi::time();
        for _ in 0..k {
            p.send_with_tag(&buf[..], TAG_PING);
            p.receive_into_with_tag(&mut buf[..], TAG_PING);
        }
        mpi::time() - t0
    };
    batch(WARMUP_ROUND_TRIPS, &mut buf);
    let t = batch(CALIBRATION_ROUND_TRIPS, &mut buf);
    let round_trip_us = (t * 1e6 / CALIBRATION_ROUND_TRIPS as f64).max(1e-3);
    let k = ((s.sample_us / round_trip_us).ceil() as u64).clamp(1, MAX_BATCH);
    let samples = (0..s.samples)
        .map(|_| batch(k, &mut buf) * 1e6 / k as f64 / 2.0)
        .collect();
    p.send_with_tag(&0_u64, TAG_BATCH);
    samples
}

/// The responder's end of a ping-pong: answers batches until an empty one.
fn pong(world: &SimpleCommunicator, peer: usize, s: &Settings) {
    let p = world.process_at_rank(rank(peer));
    let mut buf = vec![0_u8; s.latency_bytes];
    loop {
        let (k, _) = p.receive_with_tag::<u64>(TAG_BATCH);
        if k == 0 {
            return;
        }
        for _ in 0..k {
            p.receive_into_with_tag(&mut buf[..], TAG_PING);
            p.send_with_tag(&buf[..], TAG_PING);
        }
    }
}

/// The sender's end of the bandwidth test: returns GB/s (median of the timed windows).
fn stream(world: &SimpleCommunicator, peer: usize, s: &Settings) -> Option<f64> {
    let p = world.process_at_rank(rank(peer));
    let buf = vec![1_u8; s.bandwidth_bytes];
    let mut rates = Vec::with_capacity(s.repetitions);
    for rep in 0..=s.repetitions {
        let t0 = mpi::time();
        mpi::request::multiple_scope(s.window, |scope, coll| {
            for _ in 0..s.window {
                coll.add(p.immediate_send_with_tag(scope, &buf[..], TAG_DATA));
            }
            let mut done = Vec::with_capacity(s.window);
            coll.wait_all(&mut done);
        });
        let mut ack = 0_u8;
        p.receive_into_with_tag(&mut ack, TAG_ACK);
        let t = mpi::time() - t0;
        if rep > 0 && t > 0.0 {
            rates.push((s.window * s.bandwidth_bytes) as f64 / t / 1e9);
        }
    }
    LatencySummary::of(rates).map(|x| x.median)
}

/// The receiver's end of the bandwidth test.
fn sink(world: &SimpleCommunicator, peer: usize, s: &Settings) {
    let p = world.process_at_rank(rank(peer));
    let mut bufs = vec![0_u8; s.window * s.bandwidth_bytes];
    for _ in 0..=s.repetitions {
        mpi::request::multiple_scope(s.window, |scope, coll| {
            for chunk in bufs.chunks_mut(s.bandwidth_bytes) {
                coll.add(p.immediate_receive_into_with_tag(scope, chunk, TAG_DATA));
            }
            let mut done = Vec::with_capacity(s.window);
            coll.wait_all(&mut done);
        });
        p.send_with_tag(&1_u8, TAG_ACK);
    }
}

/// Carries out one measurement command on this rank (rank 0 included).
fn execute(
    world: &SimpleCommunicator,
    command: Command,
    settings: &Settings,
    layout: &LayoutSource,
) {
    let result = |v: [f64; 3]| {
        if world.rank() != 0 {
            world.process_at_rank(0).send_with_tag(&v[..], TAG_RESULT);
        }
        v
    };
    match command {
        Command::Describe => send_json(world, &node::this_node(layout)),
        Command::Latency {
            peer,
            role: Role::Initiator,
        } => {
            let st = sample_stats(&ping(world, peer, settings));
            let v = st.map_or([f64::NAN; 3], |p| [p.median, p.min, p.spread]);
            let _ = result(v);
        }
        Command::Latency {
            peer,
            role: Role::Responder,
        } => pong(world, peer, settings),
        Command::Bandwidth {
            peer,
            role: Role::Initiator,
        } => {
            let v = stream(world, peer, settings).unwrap_or(f64::NAN);
            let _ = result([v, 0.0, 0.0]);
        }
        Command::Bandwidth {
            peer,
            role: Role::Responder,
        } => sink(world, peer, settings),
        Command::Stop => {}
    }
}

/// The loop of every rank but 0: carry out rank 0's commands until it says stop.
///
/// # Errors
///
/// [`ClusterError::Ranks`] when rank 0 sends a command that does not decode (the run is
/// broken; the caller should abort it).
pub fn serve(
    world: &SimpleCommunicator,
    settings: &Settings,
    layout: &LayoutSource,
) -> Result<(), ClusterError> {
    send_json(world, &this_rank(world));
    let size = usize::try_from(world.size()).unwrap_or(0);
    loop {
        wait_for(world, Some(0), TAG_CONTROL);
        let mut w = [0_u64; 4];
        world
            .process_at_rank(0)
            .receive_into_with_tag(&mut w[..], TAG_CONTROL);
        let command = Command::decode(w, size).map_err(ClusterError::Ranks)?;
        if command == Command::Stop {
            return Ok(());
        }
        execute(world, command, settings, layout);
    }
}

/// Rank 0's side: gathers the ranks and their hosts' layouts, then measures pairs.
pub struct Coordinator<'w> {
    world: &'w SimpleCommunicator,
    settings: Settings,
    layout: LayoutSource,
    size: usize,
}

impl std::fmt::Debug for Coordinator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator").finish_non_exhaustive()
    }
}

impl<'w> Coordinator<'w> {
    /// The coordinator of `world` (to be called on rank 0).
    #[must_use]
    pub fn new(world: &'w SimpleCommunicator, settings: Settings, layout: LayoutSource) -> Self {
        let size = usize::try_from(world.size()).unwrap_or(0);
        Self {
            world,
            settings,
            layout,
            size,
        }
    }

    fn command(&self, to: usize, c: Command) {
        if to == 0 {
            return;
        }
        self.world
            .process_at_rank(rank(to))
            .send_with_tag(&c.encode()[..], TAG_CONTROL);
    }

    /// Gathers every rank's report and every host's layout (its first rank's).
    ///
    /// # Errors
    ///
    /// [`ClusterError::Ranks`] when a report is too large, invalid, or repeated, or
    /// the reports do not form a valid run.
    pub fn gather(&self) -> Result<Ranks, ClusterError> {
        let mut infos: Vec<Option<RankInfo>> = vec![None; self.size];
        infos[0] = Some(this_rank(self.world));
        for _ in 1..self.size {
            let (from, info): (usize, RankInfo) =
                receive_json(self.world, None, MAX_RANK_REPORT, "rank report")?;
            if info.rank != from || infos[from].is_some() {
                return Err(ClusterError::Ranks(format!(
                    "rank {from} reported itself as rank {} (or twice)",
                    info.rank
                )));
            }
            infos[from] = Some(info);
        }
        let infos: Vec<RankInfo> = infos.into_iter().flatten().collect();
        let mut leaders: BTreeMap<String, usize> = BTreeMap::new();
        for i in &infos {
            leaders.entry(i.host.clone()).or_insert(i.rank);
        }
        let mut layouts = BTreeMap::new();
        for (host, &leader) in &leaders {
            let layout: NodeLayout = if leader == 0 {
                node::this_node(&self.layout)
            } else {
                self.command(leader, Command::Describe);
                receive_json(self.world, Some(leader), MAX_LAYOUT_REPORT, "node layout")?.1
            };
            if layout.cpus.len() > crate::layout::MAX_LAYOUT_CPUS {
                return Err(ClusterError::Ranks(format!(
                    "host {host} described {} CPUs (at most {})",
                    layout.cpus.len(),
                    crate::layout::MAX_LAYOUT_CPUS
                )));
            }
            layouts.insert(host.clone(), layout);
        }
        Ranks::new(infos, layouts)
    }

    /// Runs one measurement between `a` (initiator) and `b` and returns the initiator's
    /// three result words.
    fn measure(&mut self, a: usize, b: usize, latency: bool) -> Result<[f64; 3], ProbeError> {
        if a >= self.size || b >= self.size || a == b {
            return Err(ProbeError(format!(
                "no pair ({a}, {b}) among {} ranks",
                self.size
            )));
        }
        let make = |peer, role| {
            if latency {
                Command::Latency { peer, role }
            } else {
                Command::Bandwidth { peer, role }
            }
        };
        self.command(b, make(a, Role::Responder));
        self.command(a, make(b, Role::Initiator));
        let (settings, layout) = (self.settings.clone(), self.layout.clone());
        if a == 0 {
            let mut v = [f64::NAN; 3];
            if latency {
                if let Some(p) = sample_stats(&ping(self.world, b, &settings)) {
                    v = [p.median, p.min, p.spread];
                }
            } else {
                v[0] = stream(self.world, b, &settings).unwrap_or(f64::NAN);
            }
            return Ok(v);
        }
        if b == 0 {
            execute(self.world, make(a, Role::Responder), &settings, &layout);
        }
        wait_for(self.world, Some(a), TAG_RESULT);
        let mut v = [0.0_f64; 3];
        self.world
            .process_at_rank(rank(a))
            .receive_into_with_tag(&mut v[..], TAG_RESULT);
        Ok(v)
    }

    /// Tells every other rank that the run is over.
    pub fn stop(&self) {
        for r in 1..self.size {
            self.command(r, Command::Stop);
        }
    }
}

impl RankProbe for Coordinator<'_> {
    fn ranks(&self) -> usize {
        self.size
    }

    fn latency(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        let v = self.measure(a, b, true)?;
        Ok((v[0].is_finite() && v[0] > 0.0).then_some(PairSample {
            median: v[0],
            min: v[1],
            spread: v[2],
            noisy: None,
        }))
    }

    fn bandwidth(&mut self, a: usize, b: usize) -> Result<Option<f64>, ProbeError> {
        let v = self.measure(a, b, false)?;
        Ok((v[0].is_finite() && v[0] > 0.0).then_some(v[0]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_statistics() {
        let p = sample_stats(&[2.0, 1.0, 3.0]).unwrap();
        assert_eq!((p.median, p.min), (2.0, 1.0));
        assert!((p.spread - (2.0_f64 / 3.0).sqrt() / 2.0).abs() < 1e-12);
        assert!(sample_stats(&[]).is_none());
    }

    #[test]
    fn settings_are_checked() {
        assert!(Settings::default().check().is_ok());
        let s = Settings {
            window: 0,
            ..Settings::default()
        };
        assert!(s.check().unwrap_err().to_string().contains("--window 0"));
        let s = Settings {
            window: 256,
            bandwidth_bytes: 1 << 28,
            ..Settings::default()
        };
        assert!(s.check().unwrap_err().to_string().contains("exceeds"));
    }
}
