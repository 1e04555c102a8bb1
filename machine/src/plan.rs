//! The cost plan of measuring this machine: the latency pairs, the SMT probe, the
//! inference and every plugin, planned from the shape of the machine before anything is
//! measured, within one [`Budget`] (by default 10 s and 256 MiB for the default plugins,
//! 60 s with `shared-caches` or `contention`, 120 s and 1 GiB more with `mem-full`).
//!
//! The budget is shared in this order: the SMT probe, the inference and the stability
//! checks take what they need; the latency pairs take what they need up to half of the
//! rest (then a quicker probe setting, then a cap on the pairs: the structure is filled in
//! from what was measured, and that is said); the plugins share what is left in proportion
//! to what each would take unhindered, and each plans within its share ([`plugins`]).
//! Memory is not shared: steps run one after another and free their buffers, so every
//! plugin may use the whole memory budget.

use topoprobe_measure::pair::ProbeConfig;
use topoprobe_measure::plan::{Shape, MIB, PROCESS_BYTES};
use topoprobe_model::{size_text, Budget, CostPlan, CostStep, OsView};

use crate::pair_plan::{pair_seconds, Repetitions, Sampling, PAIRS_SHARE};
use crate::plugins::{self, Plugin};
use crate::MachineError;

pub use crate::deadlines::{share_of_time_left, Clock};
pub use crate::pair_plan::{plan_pairs, PairPlan};

/// Wall-clock budget of a measurement with the default plugins, seconds.
pub const DEFAULT_SECONDS: f64 = 10.0;
/// Wall-clock budget of a measurement with the slow plugins (`shared-caches`,
/// `contention`), seconds.
pub const SLOW_PLUGINS_SECONDS: f64 = 60.0;
/// Memory budget of a measurement, bytes.
pub const DEFAULT_BYTES: u64 = 256 * MIB;

/// The default budget for measuring with `plugins`: `mem-full` adds the budget of
/// `mem --full` ([`topoprobe_measure::memory::full_plan::FULL_BUDGET`]) to the others'.
#[must_use]
pub fn default_budget(plugins: &[Plugin]) -> Budget {
    let slow = plugins
        .iter()
        .any(|p| matches!(p, Plugin::SharedCaches | Plugin::Contention));
    let seconds = if slow {
        SLOW_PLUGINS_SECONDS
    } else {
        DEFAULT_SECONDS
    };
    if plugins.contains(&Plugin::MemFull) {
        let full = topoprobe_measure::memory::full_plan::FULL_BUDGET;
        Budget::new(seconds + full.seconds, DEFAULT_BYTES.max(full.bytes))
    } else {
        Budget::new(seconds, DEFAULT_BYTES)
    }
}

/// Share of the budget kept free of every step: steps a little slower than planned, a last
/// step ending past its deadline. The budget is counted from the process's start when the
/// caller says when that was ([`crate::MeasureOptions::started`]), so starting the process,
/// reading the OS view and planning are spent on the clock, and saving and printing the
/// description have their own reserve ([`finish_seconds`]).
const HEADROOM: f64 = 0.05;
/// Seconds of the end of a run besides writing its JSON: files created and renamed, the
/// process's exit.
const FINISH_S: f64 = 0.01;
/// Bytes of a description's JSON per ordered pair of contexts (its latency and spread
/// tables; 110 KB for 32 contexts with the default plugins' sections).
const DESCRIPTION_BYTES_PER_PAIR: f64 = 100.0;
/// Bytes a second a description is serialized and written at, at the plan's rates.
const WRITE_BYTES_PER_S: f64 = 200e6;
/// Most times slower than the plan's rates the end of a run is reserved for.
const MOST_SLOWER: f64 = 100.0;
/// Seconds of the inference of a table of `n` contexts: `INFERENCE_S_PER_PAIR × n²`
/// (0.45 s at 2048 contexts, `docs/BENCHMARKS.md`).
const INFERENCE_S_PER_PAIR: f64 = 1.1e-7;
/// Bytes the latency tables of a measurement and its inference hold per ordered pair of
/// contexts (the measured, filled-in and spread tables, the description's normalized and
/// raw tables, the inference's working copies): 117 MB of peak RSS for `infer
/// --from-matrix` of 1024 contexts.
pub const TABLE_BYTES_PER_PAIR: u64 = 110;

/// Seconds to save and print the description of `n` contexts at the plan's rates: its JSON
/// written twice (the description, the output) and a fixed 10 ms. A run reserves this at
/// the end of its budget, times how much slower than planned its inference ran
/// ([`MeasurePlan::ends`]).
#[must_use]
pub fn finish_seconds(n: usize) -> f64 {
    FINISH_S + 2.0 * DESCRIPTION_BYTES_PER_PAIR * (n * n) as f64 / WRITE_BYTES_PER_S
}

/// The whole measurement's plan.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasurePlan {
    /// The budget.
    pub budget: Budget,
    /// The latency pairs.
    pub pairs: PairPlan,
    /// Each plugin with its share of the budget, in the order they run.
    pub plugins: Vec<(Plugin, Budget)>,
    /// Every step: latency pairs, SMT probe, inference, the plugins' steps (planned on the
    /// OS's view of the machine; the plugins plan again on the measured topology).
    pub cost: CostPlan,
    /// Seconds after the start by which the plugins must be done: the budget less its
    /// headroom, the reserve of the end ([`MeasurePlan::finish`]) and what runs after them
    /// (the last stability checks), at the plan's rates ([`MeasurePlan::ends`] learns them).
    pub plugins_end: f64,
    /// Seconds reserved at the end for saving and printing the description, at the plan's
    /// rates ([`finish_seconds`]).
    pub finish: f64,
    /// Seconds planned after the plugins: the last reference pairs and the SMT probe again
    /// (when watching).
    pub after_plugins: f64,
    /// Seconds of one run of the SMT probe (it runs again at the end when watching): it
    /// stops there ([`topoprobe_measure::smt::probe_within`]).
    pub smt_share: f64,
    /// Seconds the plugins would take unhindered (what the pairs leave them when time is
    /// short, [`MeasurePlan::pairs_room_at`]).
    pub plugins_wanted: f64,
}

impl MeasurePlan {
    /// The plan with the latency pairs as they were measured (calibrated on this machine,
    /// see [`PairPlan::calibrate`]): their step's seconds and notes follow.
    pub fn set_pairs(&mut self, pairs: PairPlan) {
        if let Some(step) = self.cost.steps.iter_mut().find(|s| s.probe == "latency") {
            *step = pairs.step();
        }
        for n in &pairs.notes {
            if !self.cost.left_out.contains(n) {
                self.cost.left_out.push(n.clone());
            }
        }
        self.pairs = pairs;
    }

    /// Seconds after the start of the budget planned for the steps besides the pairs and
    /// the plugins: the SMT probe, the inference, the stability checks.
    #[must_use]
    pub fn fixed_seconds(&self) -> f64 {
        self.cost
            .steps
            .iter()
            .filter(|s| matches!(s.probe.as_str(), "smt" | "inference" | "stability"))
            .map(|s| s.seconds)
            .sum()
    }

    /// The pairs' share when they start `now` seconds after the start of the budget (the
    /// process's start, the OS view and planning were spent before): the rule of the plan
    /// (what the plugins leave, at least half of the time after the fixed steps) on the
    /// time actually left, never more than planned.
    #[must_use]
    pub fn pairs_room_at(&self, now: f64) -> f64 {
        let after_fixed = (self.ends(1.0).1 - now - self.fixed_seconds()).max(0.0);
        let room = (after_fixed - self.plugins_wanted).max(PAIRS_SHARE * after_fixed);
        self.pairs.room.min(room)
    }

    /// When the plugins must be done and when measuring must be done, seconds after the
    /// start of the budget, on a machine `slower` times slower than the plan's rates (how
    /// much longer than planned the inference took): the end's reserve
    /// ([`MeasurePlan::finish`]) grows in proportion (at most 100 times).
    #[must_use]
    pub fn ends(&self, slower: f64) -> (f64, f64) {
        let slower = if slower.is_finite() {
            slower.clamp(1.0, MOST_SLOWER)
        } else {
            1.0
        };
        let end = (self.budget.seconds * (1.0 - HEADROOM) - self.finish * slower).max(0.0);
        ((end - self.after_plugins).max(0.0), end)
    }
}

/// Shares `seconds` among claims of `wants` seconds: every claim below an even share gets
/// what it wants, and the others split what is left evenly (what a small plugin does not
/// need goes to the large ones; a large one cannot starve a small one). Slack left when
/// every claim is met is spread in proportion, so that steps running a little slower than
/// planned still fit.
#[must_use]
pub fn share_out(seconds: f64, wants: &[f64]) -> Vec<f64> {
    let mut given = vec![0.0; wants.len()];
    let mut left = seconds.max(0.0);
    let mut open: Vec<usize> = (0..wants.len()).collect();
    open.sort_by(|&a, &b| wants[a].total_cmp(&wants[b]));
    while let Some(&i) = open.first() {
        let even = left / open.len() as f64;
        if wants[i] <= even {
            given[i] = wants[i];
            left -= wants[i];
            open.remove(0);
        } else {
            for &j in &open {
                given[j] = even;
            }
            return given;
        }
    }
    let total: f64 = wants.iter().sum();
    if total > 0.0 {
        for (g, w) in given.iter_mut().zip(wants) {
            *g += left * w / total;
        }
    }
    given
}

/// Seconds of the SMT probe on up to three pairs, run again at the end when watching.
fn smt_seconds(n: usize, watch: bool) -> f64 {
    let pairs = 3.min(n / 2).max(usize::from(n >= 2));
    pairs as f64 * topoprobe_measure::smt::expected_seconds() * if watch { 2.0 } else { 1.0 }
}

/// Seconds of the stability checks: up to four reference pairs measured before each plugin
/// and at the end.
fn stability_seconds(plugins: usize, config: &ProbeConfig, watch: bool) -> f64 {
    if watch {
        (4 * (plugins + 3)) as f64 * pair_seconds(config)
    } else {
        0.0
    }
}

/// Plans measuring the `n` contexts of a machine of `shape` (its OS view `os`) with
/// `plugins` within `budget`; `watch`: whether the stability checks run.
///
/// # Errors
///
/// [`MachineError::OverBudget`] when `--full` pairs cannot fit the budget.
#[allow(clippy::too_many_arguments)]
pub fn plan_measurement(
    shape: &Shape,
    os: Option<&OsView>,
    plugins: &[Plugin],
    sampling: Sampling,
    repetitions: Repetitions,
    budget: Budget,
    watch: bool,
) -> Result<MeasurePlan, MachineError> {
    let n = shape.contexts();
    let smt = smt_seconds(n, watch);
    let inference = INFERENCE_S_PER_PAIR * (n * n) as f64 + 0.01;
    let default_config = ProbeConfig {
        policy: repetitions.policy(),
        ..ProbeConfig::default()
    };
    let stability = stability_seconds(plugins.len(), &default_config, watch);
    let fixed = smt + inference + stability;
    let finish = finish_seconds(n);
    let after_fixed = (budget.seconds * (1.0 - HEADROOM) - finish - fixed).max(0.0);
    let natural: Vec<CostPlan> = plugins
        .iter()
        .map(|&p| plugins::plan_plugin(p, shape, None, os, budget.with_seconds(f64::MAX)))
        .collect();
    let natural_total: f64 = natural.iter().map(CostPlan::seconds).sum();
    debug_assert!(natural_total >= 0.0);
    let pairs_natural = plan_pairs(n, sampling, repetitions, f64::MAX)?;
    let room = (after_fixed - natural_total).max(PAIRS_SHARE * after_fixed);
    let mut pairs = if pairs_natural.seconds <= room {
        pairs_natural
    } else {
        plan_pairs(n, sampling, repetitions, room)?
    };
    pairs.room = room.max(pairs.seconds);
    let rest = (after_fixed - pairs.seconds).max(0.0);
    let mut cost = CostPlan::new(budget);
    cost.steps.push(pairs.step());
    cost.left_out.extend(pairs.notes.iter().cloned());
    cost.steps.push(CostStep::new(
        "smt",
        "SMT probe",
        0,
        3.min(n / 2) as u64,
        smt,
    ));
    let tables = TABLE_BYTES_PER_PAIR * (n * n) as u64;
    cost.steps.push(CostStep::new(
        "inference",
        format!("inference of {n} contexts"),
        tables,
        1,
        inference,
    ));
    if tables.saturating_add(PROCESS_BYTES) > budget.bytes {
        cost.left_out.push(format!(
            "the latency tables of {n} contexts (N² values, kept whole by the inference and \
             the description) take about {}, over the {} memory budget: the budget bounds the \
             probes' buffers, not these tables",
            size_text(tables),
            size_text(budget.bytes)
        ));
    }
    if stability > 0.0 {
        cost.steps.push(CostStep::new(
            "stability",
            "reference pairs between the phases",
            0,
            (4 * (plugins.len() + 3)) as u64,
            stability,
        ));
    }
    let wants: Vec<f64> = natural.iter().map(CostPlan::seconds).collect();
    let given = share_out(rest, &wants);
    let mut shares = Vec::new();
    for (&p, &seconds) in plugins.iter().zip(&given) {
        let b = budget.with_seconds(seconds);
        cost.extend(plugins::plan_plugin(p, shape, None, os, b));
        shares.push((p, b));
    }
    // When watching, the reference pairs at the end and the SMT probe again follow the
    // plugins.
    let after_plugins = if watch {
        smt / 2.0 + 4.0 * pair_seconds(&default_config)
    } else {
        0.0
    };
    Ok(MeasurePlan {
        budget,
        pairs,
        plugins: shares,
        cost,
        plugins_end: (budget.seconds * (1.0 - HEADROOM) - finish - after_plugins).max(0.0),
        finish,
        after_plugins,
        smt_share: if watch { smt / 2.0 } else { smt },
        plugins_wanted: natural_total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_claims_are_met_and_large_ones_split_the_rest() {
        let g = share_out(10.0, &[1.0, 100.0, 2.0, 50.0]);
        assert_eq!(g[0], 1.0);
        assert_eq!(g[2], 2.0);
        assert!(
            (g[1] - 3.5).abs() < 1e-9 && (g[3] - 3.5).abs() < 1e-9,
            "{g:?}"
        );
        // Room for all: each gets what it wants, and the slack in proportion.
        let g = share_out(10.0, &[1.0, 3.0]);
        assert!(
            (g[0] - 2.5).abs() < 1e-9 && (g[1] - 7.5).abs() < 1e-9,
            "{g:?}"
        );
        assert!(share_out(5.0, &[]).is_empty());
        assert_eq!(share_out(-1.0, &[1.0]), [0.0]);
    }
}
