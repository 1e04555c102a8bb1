//! Progress shown on standard error for work that can take more than a second.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use topoprobe_machine::Progress;
use topoprobe_model::CostPlan;

/// Contexts from which inference usually takes more than a second.
const SLOW_CONTEXTS: usize = 768;

/// A spinner with the elapsed time while `work` runs, when the table has at least
/// [`SLOW_CONTEXTS`] contexts and standard error is a terminal (nothing is drawn otherwise).
pub(crate) fn while_inferring<T>(contexts: usize, work: impl FnOnce() -> T) -> T {
    if contexts < SLOW_CONTEXTS {
        return work();
    }
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(format!(
        "inferring the topology of {contexts} hardware contexts"
    ));
    bar.enable_steady_tick(Duration::from_millis(120));
    let out = work();
    bar.finish_and_clear();
    out
}

/// A spinner with a message and the elapsed time, for measurements that take seconds
/// (drawn only when standard error is a terminal).
pub(crate) fn spinner(what: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix}: {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_prefix(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// A bar over a measurement's plan: its length is the planned time, each step moves it to
/// where the plan puts that step's start, so the ETA follows the plan and corrects itself
/// by the pace so far (drawn only on a terminal).
pub(crate) struct PlanBar {
    bar: ProgressBar,
    plan: CostPlan,
    next: usize,
}

impl PlanBar {
    /// A bar for `plan`, named `what`.
    pub(crate) fn new(what: &str, plan: &CostPlan) -> Self {
        let bar = ProgressBar::new((plan.seconds() * 1000.0).ceil().max(1.0) as u64);
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix} [{wide_bar}] {msg} ({elapsed}, about {eta} left)",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Self {
            bar,
            plan: plan.clone(),
            next: 0,
        }
    }

    /// The step named `name` started, or the first step of the probe or plugin `name` (a
    /// name not in the plan only changes the message).
    pub(crate) fn step(&mut self, name: &str) {
        let n = self.plan.steps.len();
        let by_name = (self.next..n).find(|&i| self.plan.steps[i].what == name);
        let by_probe = || (self.next..n).find(|&i| self.plan.steps[i].probe == name);
        if let Some(i) = by_name.or_else(by_probe) {
            self.next = i + 1;
            self.bar
                .set_position((self.plan.seconds_before(i) * 1000.0) as u64);
            self.bar.set_message(format!("step {}/{n}: {name}", i + 1));
        } else {
            self.bar.set_message(name.to_string());
        }
    }

    /// Part `done` of `total` of the step under way is done (pairs of the latency step).
    pub(crate) fn within(&mut self, done: usize, total: usize, what: &str) {
        let i = self.next.saturating_sub(1);
        let (Some(step), true) = (self.plan.steps.get(i), total > 0) else {
            return;
        };
        let share = (done as f64 / total as f64).min(1.0);
        let at = self.plan.seconds_before(i) + share * step.seconds;
        self.bar.set_position((at * 1000.0) as u64);
        self.bar.set_message(format!("{what}: {done}/{total}"));
    }

    /// Clears the bar.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Shows a measurement's [`Progress`]: one bar over the plan's steps with an ETA, the
/// latency pairs counted inside their step.
pub(crate) struct MeasureProgress {
    bar: Option<PlanBar>,
}

impl MeasureProgress {
    /// Progress of measuring this machine.
    pub(crate) fn new() -> Self {
        Self { bar: None }
    }

    /// Shows one event.
    pub(crate) fn show(&mut self, p: Progress<'_>) {
        match p {
            Progress::Plan(plan) => {
                let mut bar = PlanBar::new("measuring", plan);
                if let Some(first) = plan.steps.first() {
                    bar.step(&first.what.clone());
                }
                self.bar = Some(bar);
            }
            Progress::Pairs { done, total } => {
                if let Some(b) = self.bar.as_mut() {
                    b.within(done, total.max(done), "pairs");
                }
            }
            Progress::Step(what) | Progress::Plugin(what) => {
                if let Some(b) = self.bar.as_mut() {
                    b.step(what);
                }
            }
            Progress::StepsDone => {
                if let Some(b) = self.bar.take() {
                    b.finish();
                }
            }
            _ => {}
        }
    }
}

impl Drop for MeasureProgress {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish();
        }
    }
}
