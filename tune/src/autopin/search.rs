//! The search over candidates (pure): per candidate a warm-up, then a measurement split
//! into samples; candidates whose confidence interval is clearly below the best one's
//! are stopped early. Driven by a clock and a cumulative metric, so that it can be
//! tested against scripted metrics.

use serde::Serialize;

use crate::stats::{summarize, Summary};

/// Durations of the phases, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    /// Before the first candidate: the program starts up (threads are created).
    pub initial_wait: f64,
    /// After each re-pinning, before measuring: caches refill, threads settle.
    pub warmup: f64,
    /// Measurement of each candidate.
    pub measure: f64,
    /// Length of one sample inside a measurement (the measurement's mean and confidence
    /// interval are over samples).
    pub sample: f64,
}

impl Phases {
    /// Phases with the sample length derived from the measurement: a tenth of it,
    /// between 50 ms and 1 s.
    #[must_use]
    pub fn new(initial_wait: f64, warmup: f64, measure: f64) -> Self {
        Self {
            initial_wait,
            warmup,
            measure,
            sample: (measure / 10.0).clamp(0.05, 1.0).min(measure),
        }
    }
}

/// What happened to a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Not tried yet.
    Pending,
    /// Pinned, warming up.
    WarmingUp,
    /// Being measured.
    Measuring,
    /// Measured for the full time.
    Measured,
    /// Stopped before the end: clearly worse than the best so far.
    StoppedEarly,
    /// The search ended before its measurement did (program exit, stop, phase change).
    Incomplete,
}

impl State {
    /// The state's name as in the JSON report.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::WarmingUp => "warming-up",
            Self::Measuring => "measuring",
            Self::Measured => "measured",
            Self::StoppedEarly => "stopped-early",
            Self::Incomplete => "incomplete",
        }
    }
}

/// The samples and state of one candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Its state.
    pub state: State,
    /// Its sample rates (metric units per second).
    pub samples: Vec<f64>,
}

impl Outcome {
    /// Mean, spread and confidence interval of its samples.
    #[must_use]
    pub fn summary(&self) -> Option<Summary> {
        summarize(&self.samples)
    }
}

/// What the driver must do after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing.
    Wait,
    /// Pin the program by candidate `i` (the previous one has a result).
    Apply(usize),
    /// A candidate's result changed (a sample was added).
    Sampled(usize),
    /// The search is over: pin by the best candidate (`None`: none has a score).
    Finished(Option<usize>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    Warmup {
        cand: usize,
        until: f64,
    },
    Measure {
        cand: usize,
        start: f64,
        last_t: f64,
        last_v: f64,
    },
    Done,
}

/// One round of the search over `n` candidates.
#[derive(Debug, Clone)]
pub struct Search {
    phases: Phases,
    early_stop: bool,
    min_samples: usize,
    stage: Stage,
    outcomes: Vec<Outcome>,
    saved_s: f64,
}

impl Search {
    /// Starts a round at time `now` (seconds): the driver must pin candidate 0 at once
    /// (the first [`Step`] is implied).
    #[must_use]
    pub fn new(candidates: usize, phases: Phases, early_stop: bool, now: f64) -> Self {
        let mut outcomes = vec![
            Outcome {
                state: State::Pending,
                samples: Vec::new()
            };
            candidates
        ];
        let stage = if candidates == 0 {
            Stage::Done
        } else {
            outcomes[0].state = State::WarmingUp;
            Stage::Warmup {
                cand: 0,
                until: now + phases.warmup,
            }
        };
        Self {
            phases,
            early_stop,
            min_samples: 3,
            stage,
            outcomes,
            saved_s: 0.0,
        }
    }

    /// The candidate pinned now (`None` once the search is over).
    #[must_use]
    pub fn current(&self) -> Option<usize> {
        match self.stage {
            Stage::Warmup { cand, .. } | Stage::Measure { cand, .. } => Some(cand),
            Stage::Done => None,
        }
    }

    /// Whether the search is over.
    #[must_use]
    pub fn done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// The outcomes so far, one per candidate.
    #[must_use]
    pub fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    /// Measurement time saved by stopping candidates early, in seconds.
    #[must_use]
    pub fn saved_s(&self) -> f64 {
        self.saved_s
    }

    /// Advances to time `now` with the metric's cumulative value `value`.
    pub fn step(&mut self, now: f64, value: f64) -> Step {
        match self.stage {
            Stage::Done => Step::Wait,
            Stage::Warmup { cand, until } => {
                if now < until {
                    return Step::Wait;
                }
                self.outcomes[cand].state = State::Measuring;
                self.stage = Stage::Measure {
                    cand,
                    start: now,
                    last_t: now,
                    last_v: value,
                };
                Step::Wait
            }
            Stage::Measure {
                cand,
                start,
                last_t,
                last_v,
            } => {
                let end = start + self.phases.measure;
                let dt = now - last_t;
                // The last sample ends with the measurement even if shorter.
                if dt < self.phases.sample && now < end - 1e-9 {
                    return Step::Wait;
                }
                if dt > 0.0 {
                    let rate = ((value - last_v) / dt).max(0.0);
                    self.outcomes[cand].samples.push(rate);
                }
                self.stage = Stage::Measure {
                    cand,
                    start,
                    last_t: now,
                    last_v: value,
                };
                if now >= end - 1e-9 {
                    self.outcomes[cand].state = State::Measured;
                    return self.next(cand, now);
                }
                if self.clearly_worse(cand) {
                    self.outcomes[cand].state = State::StoppedEarly;
                    self.saved_s += end - now;
                    return self.next(cand, now);
                }
                Step::Sampled(cand)
            }
        }
    }

    /// Whether candidate `cand`'s interval lies below the best measured one's.
    fn clearly_worse(&self, cand: usize) -> bool {
        if !self.early_stop || self.outcomes[cand].samples.len() < self.min_samples {
            return false;
        }
        let Some(me) = self.outcomes[cand].summary() else {
            return false;
        };
        self.best()
            .and_then(|b| self.outcomes[b].summary())
            .is_some_and(|best| me.high() < best.low())
    }

    fn next(&mut self, cand: usize, now: f64) -> Step {
        let n = cand + 1;
        if n < self.outcomes.len() {
            self.outcomes[n].state = State::WarmingUp;
            self.stage = Stage::Warmup {
                cand: n,
                until: now + self.phases.warmup,
            };
            Step::Apply(n)
        } else {
            self.stage = Stage::Done;
            Step::Finished(self.best())
        }
    }

    /// The fully measured candidate with the highest mean above zero: none when the program
    /// made no progress under any of them.
    #[must_use]
    pub fn best(&self) -> Option<usize> {
        self.best_where(|o| o.state == State::Measured)
    }

    /// The candidate with the highest mean among those with at least one sample,
    /// measured or not (the best known when the search is cut short).
    #[must_use]
    pub fn best_known(&self) -> Option<usize> {
        self.best().or_else(|| {
            self.best_where(|o| matches!(o.state, State::Measuring | State::Incomplete))
        })
    }

    fn best_where(&self, keep: impl Fn(&Outcome) -> bool) -> Option<usize> {
        self.outcomes
            .iter()
            .enumerate()
            .filter(|(_, o)| keep(o))
            .filter_map(|(i, o)| o.summary().map(|s| (i, s.mean)))
            // A candidate under which the program made no progress is no winner, even the
            // "best" of several such (the program was idle or blocked throughout).
            .filter(|&(_, mean)| mean > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }

    /// Ends the round before its time (program exit, stop, phase change): the candidate
    /// being tried is marked incomplete.
    pub fn abort(&mut self) {
        if let Some(c) = self.current() {
            self.outcomes[c].state = State::Incomplete;
        }
        self.stage = Stage::Done;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a search over candidates with the given true rates (units per second), with
    /// a deterministic ripple of ±`noise`, at 10 ms steps; returns the search and the
    /// order of applied candidates.
    fn drive(rates: &[f64], noise: f64, early_stop: bool) -> (Search, Vec<usize>) {
        let phases = Phases::new(0.0, 0.2, 1.0);
        let mut s = Search::new(rates.len(), phases, early_stop, 0.0);
        let mut applied = vec![0];
        let mut cur = 0;
        let mut value = 0.0;
        let dt = 0.01;
        let mut k = 0_u64;
        let mut t = 0.0;
        while !s.done() {
            k += 1;
            t = k as f64 * dt;
            let ripple = if (k / 7).is_multiple_of(2) {
                noise
            } else {
                -noise
            };
            value += (rates[cur] + ripple) * dt;
            match s.step(t, value) {
                Step::Apply(i) => {
                    applied.push(i);
                    cur = i;
                }
                Step::Finished(_) | Step::Wait | Step::Sampled(_) => {}
            }
            assert!(t < 100.0, "the search ends");
        }
        let _ = t;
        (s, applied)
    }

    #[test]
    fn finds_the_best_of_n() {
        let rates = [3.0, 5.0, 9.0, 4.0, 8.5, 1.0];
        let (s, applied) = drive(&rates, 0.1, false);
        assert_eq!(applied, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(s.best(), Some(2));
        for (o, r) in s.outcomes().iter().zip(rates) {
            assert_eq!(o.state, State::Measured);
            let m = o.summary().expect("samples").mean;
            assert!((m - r).abs() < 0.2, "{m} vs {r}");
        }
        assert!(s.saved_s().abs() < 1e-12);
    }

    #[test]
    fn no_candidate_wins_when_every_score_is_zero() {
        let (s, _) = drive(&[0.0, 0.0, 0.0], 0.0, false);
        assert!(s.outcomes().iter().all(|o| o.state == State::Measured));
        assert_eq!(s.best(), None);
        assert_eq!(s.best_known(), None);
        let (s, _) = drive(&[0.0, 2.0, 0.0], 0.0, false);
        assert_eq!(s.best(), Some(1));
    }

    #[test]
    fn stops_clearly_worse_candidates_early() {
        let rates = [9.0, 3.0, 8.9, 1.0];
        let (s, _) = drive(&rates, 0.2, true);
        let states: Vec<State> = s.outcomes().iter().map(|o| o.state).collect();
        // 3.0 and 1.0 are far below 9.0: stopped after 3 samples; 8.9 overlaps: measured.
        assert_eq!(
            states,
            vec![
                State::Measured,
                State::StoppedEarly,
                State::Measured,
                State::StoppedEarly
            ]
        );
        assert_eq!(s.best(), Some(0));
        // Two candidates stopped after 3 samples of 0.1 s of a 1 s measurement.
        assert!((s.saved_s() - 2.0 * 0.7).abs() < 0.05, "{}", s.saved_s());
        // Without early stopping every candidate is measured fully.
        let (full, _) = drive(&rates, 0.2, false);
        assert!(full.outcomes().iter().all(|o| o.state == State::Measured));
    }

    #[test]
    fn an_aborted_round_knows_its_best_so_far() {
        let mut s = Search::new(2, Phases::new(0.0, 0.1, 1.0), true, 0.0);
        assert_eq!(s.current(), Some(0));
        assert_eq!(s.step(0.1, 0.0), Step::Wait);
        assert_eq!(s.step(0.2, 1.0), Step::Sampled(0));
        assert_eq!(s.best(), None);
        assert_eq!(s.best_known(), Some(0));
        s.abort();
        assert!(s.done());
        assert_eq!(s.outcomes()[0].state, State::Incomplete);
        assert_eq!(s.best_known(), Some(0));
        assert_eq!(s.outcomes()[1].state, State::Pending);
        let none = Search::new(0, Phases::new(0.0, 0.1, 1.0), true, 0.0);
        assert!(none.done() && none.best_known().is_none());
    }
}
