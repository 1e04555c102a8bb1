//! Progress shown on standard error for work that can take more than a second.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

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
