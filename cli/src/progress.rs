//! Progress shown on standard error for work that can take more than a second.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use topoprobe_machine::Progress;

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

/// A progress bar on standard error (drawn only on a terminal) counting pairs, with ETA.
pub(crate) fn pair_bar(what: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix} [{wide_bar}] {pos}/{len} pairs ({elapsed}, about {eta} left)",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(what.to_string());
    bar
}

/// Shows a measurement's [`Progress`]: a bar while pairs are measured, then a spinner
/// naming each plugin step.
pub(crate) struct MeasureProgress {
    pairs: ProgressBar,
    steps: Option<ProgressBar>,
}

impl MeasureProgress {
    /// Progress of measuring this machine.
    pub(crate) fn new() -> Self {
        Self {
            pairs: pair_bar("measuring"),
            steps: None,
        }
    }

    /// Shows one event.
    pub(crate) fn show(&mut self, p: Progress<'_>) {
        match p {
            Progress::Pairs { done, total } => {
                self.pairs.set_length(total.max(done) as u64);
                self.pairs.set_position(done as u64);
            }
            Progress::PairsDone => self.pairs.finish_and_clear(),
            Progress::Step(what) => self
                .steps
                .get_or_insert_with(|| spinner("plugins"))
                .set_message(what.to_string()),
            Progress::StepsDone => {
                if let Some(s) = self.steps.take() {
                    s.finish_and_clear();
                }
            }
            _ => {}
        }
    }
}
