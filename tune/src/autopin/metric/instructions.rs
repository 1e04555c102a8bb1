//! Instructions retired by the program's threads, from hardware counters (one
//! `perf_event_open` counter per thread), as autopin measured them.

use super::Metric;
use crate::error::TuneError;
use crate::perf::{available, Event, ThreadCounters};

/// The instructions metric.
#[derive(Debug)]
pub struct Instructions {
    counters: ThreadCounters,
}

impl Instructions {
    /// The metric, when this machine can count instructions.
    ///
    /// # Errors
    ///
    /// [`TuneError::MetricUnavailable`] with the reason (no PMU, not permitted).
    pub fn new() -> Result<Self, TuneError> {
        available(Event::Instructions).map_err(|reason| TuneError::MetricUnavailable {
            metric: "instructions".into(),
            reason,
        })?;
        Ok(Self {
            counters: ThreadCounters::new(Event::Instructions),
        })
    }
}

impl Metric for Instructions {
    fn name(&self) -> &str {
        "instructions"
    }

    fn unit(&self) -> &str {
        "instructions/s"
    }

    fn total(&mut self, tids: &[i32]) -> Result<f64, TuneError> {
        self.counters
            .total(tids)
            .map(|n| n as f64)
            .map_err(|reason| TuneError::MetricUnavailable {
                metric: "instructions".into(),
                reason,
            })
    }
}
