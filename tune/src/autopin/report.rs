//! What autopin tells: events for a live table while it runs, and the report at the end
//! (data of `topoprobe_model::results::autopin`, rendered by `topoprobe-view`).

pub use topoprobe_model::results::autopin::{BestReport, CandidateReport, Report, RoundReport};

use super::candidates::Candidate;
use super::search::{Outcome, State};
use crate::stats::Summary;

/// Something that happened, for a live display.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// The program was started (`launched`) or attached to.
    Started {
        /// Its process id.
        pid: i32,
        /// Whether autopin started it.
        launched: bool,
    },
    /// The metric was chosen.
    Metric {
        /// Its name.
        name: &'a str,
        /// Its unit per second.
        unit: &'a str,
        /// Why it was chosen (and why better ones are unavailable).
        note: &'a str,
    },
    /// A round of the search starts.
    Round {
        /// Its number, from 1.
        round: usize,
        /// Why it starts.
        reason: &'a str,
        /// Its candidates.
        candidates: &'a [Candidate],
    },
    /// A candidate's state or score changed.
    Candidate {
        /// Its index in the round.
        index: usize,
        /// The candidate.
        candidate: &'a Candidate,
        /// Its state.
        state: State,
        /// Its score so far.
        summary: Option<Summary>,
    },
    /// A round ended; the program is pinned by its best candidate.
    Best {
        /// The candidate.
        candidate: &'a Candidate,
        /// Its score.
        summary: Option<Summary>,
        /// Time saved by early stops in this round, in seconds.
        saved_s: f64,
    },
    /// Autopin stops tuning; the program keeps `pinned` (`None`: its own masks).
    Stopped {
        /// Why.
        reason: &'a str,
        /// The pinning it keeps.
        pinned: Option<&'a Candidate>,
    },
    /// A warning (tuning goes on or stops cleanly).
    Warning(&'a str),
    /// Something worth knowing about how tuning proceeds (threads left out as idle, a
    /// candidate applied without measuring).
    Note(&'a str),
}

/// Receives [`Event`]s while autopin runs.
pub trait Observer {
    /// Called for every event.
    fn event(&mut self, event: &Event<'_>);
}

impl Observer for () {
    fn event(&mut self, _event: &Event<'_>) {}
}

/// The report of one candidate of a round.
pub(crate) fn candidate_report(c: &Candidate, o: &Outcome) -> CandidateReport {
    let s = o.summary();
    CandidateReport {
        name: c.name.clone(),
        cpus: c.cpus.clone(),
        score: s.map(|s| s.mean),
        spread: s.map(|s| {
            if s.half_width.is_finite() {
                s.half_width
            } else {
                0.0
            }
        }),
        state: o.state.name().to_string(),
        samples: o.samples.len(),
        why: c.why.clone(),
    }
}
