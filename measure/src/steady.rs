//! Repeating a throughput measurement until it is steady: rounds are added until the last
//! few agree within a spread, or a round or time limit is reached; the figure is the median
//! of those last rounds, and the spread says how far to trust it.

/// When a repeated measurement stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyRule {
    /// Rounds measured at least.
    pub min_rounds: usize,
    /// Rounds measured at most.
    pub max_rounds: usize,
    /// Rounds that must agree.
    pub window: usize,
    /// Largest spread of the window, (max − min) / median.
    pub max_spread: f64,
    /// Seconds spent at most (the round under way is finished).
    pub max_seconds: f64,
}

impl Default for SteadyRule {
    /// At least 3 and at most 20 rounds, the last 3 within 3%, at most 2 s.
    fn default() -> Self {
        Self {
            min_rounds: 3,
            max_rounds: 20,
            window: 3,
            max_spread: 0.03,
            max_seconds: 2.0,
        }
    }
}

/// A repeated measurement in progress.
#[derive(Debug, Clone, PartialEq)]
pub struct Steady {
    rule: SteadyRule,
    values: Vec<f64>,
    seconds: f64,
}

/// Where a repeated measurement ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyFigure {
    /// The median of the last rounds.
    pub value: f64,
    /// Their spread, (max − min) / median.
    pub spread: f64,
    /// Rounds measured.
    pub rounds: usize,
    /// Whether the spread reached the rule's limit (else a round or time limit stopped it).
    pub steady: bool,
    /// The largest share of the rounds' time one of its threads waited for its CPU (other
    /// programs held it), 0 to 1; `None` where not known.
    pub waited: Option<f64>,
}

impl Steady {
    /// A measurement under `rule` (a window of at least one round).
    #[must_use]
    pub fn new(rule: SteadyRule) -> Self {
        Self {
            rule: SteadyRule {
                window: rule.window.max(1),
                ..rule
            },
            values: Vec::new(),
            seconds: 0.0,
        }
    }

    /// The last rounds' median and spread.
    fn window(&self) -> Option<(f64, f64)> {
        let w = self.rule.window.min(self.values.len());
        if w == 0 {
            return None;
        }
        let mut v = self.values[self.values.len() - w..].to_vec();
        v.sort_by(f64::total_cmp);
        let median = if w % 2 == 1 {
            v[w / 2]
        } else {
            (v[w / 2 - 1] + v[w / 2]) / 2.0
        };
        let spread = if median > 0.0 {
            (v[w - 1] - v[0]) / median
        } else {
            f64::INFINITY
        };
        Some((median, spread))
    }

    fn steady(&self) -> bool {
        self.values.len() >= self.rule.window
            && self
                .window()
                .is_some_and(|(_, s)| s <= self.rule.max_spread)
    }

    /// Adds a round that gave `value` and took `seconds`; returns whether to stop.
    pub fn push(&mut self, value: f64, seconds: f64) -> bool {
        self.values.push(value);
        self.seconds += seconds.max(0.0);
        let n = self.values.len();
        n >= self.rule.max_rounds
            || (n >= self.rule.min_rounds
                && (self.steady() || self.seconds >= self.rule.max_seconds))
    }

    /// The figure so far (`None` before the first round).
    #[must_use]
    pub fn figure(&self) -> Option<SteadyFigure> {
        let (value, spread) = self.window()?;
        Some(SteadyFigure {
            value,
            spread,
            rounds: self.values.len(),
            steady: self.steady(),
            waited: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_rounds_stop_at_the_minimum() {
        let mut s = Steady::new(SteadyRule::default());
        assert!(s.figure().is_none());
        assert!(!s.push(10.0, 0.01));
        assert!(!s.push(10.1, 0.01));
        assert!(s.push(10.05, 0.01));
        let f = s.figure().unwrap();
        assert_eq!(f.rounds, 3);
        assert!((f.value - 10.05).abs() < 1e-12);
        assert!(f.steady && f.spread < 0.011);
    }

    #[test]
    fn a_slow_round_delays_the_stop_and_is_left_out() {
        let mut s = Steady::new(SteadyRule::default());
        for v in [10.0, 6.0, 10.0, 10.1] {
            assert!(!s.push(v, 0.01), "{v}");
        }
        assert!(s.push(10.05, 0.01));
        let f = s.figure().unwrap();
        assert_eq!(f.rounds, 5);
        assert!((f.value - 10.05).abs() < 1e-12);
    }

    #[test]
    fn noise_stops_at_the_limits_and_says_so() {
        let rule = SteadyRule {
            max_rounds: 6,
            ..SteadyRule::default()
        };
        let mut s = Steady::new(rule);
        let mut stopped = 0;
        for (i, v) in [10.0, 12.0, 9.0, 11.5, 8.0, 12.5, 10.0].iter().enumerate() {
            if s.push(*v, 0.01) {
                stopped = i + 1;
                break;
            }
        }
        assert_eq!(stopped, 6);
        let f = s.figure().unwrap();
        assert!(!f.steady && f.spread > 0.3, "{f:?}");
        // The time limit stops too, once the minimum is reached.
        let mut s = Steady::new(SteadyRule::default());
        assert!(!s.push(1.0, 5.0));
        assert!(!s.push(2.0, 5.0));
        assert!(s.push(3.0, 5.0));
    }
}
