//! The text of `topoprobe latency A B`.

use std::fmt::Write as _;

use topoprobe_model::format::plural;
use topoprobe_model::results::latency::{PairLatencyResult, PingPongWait};

use super::Rendered;

/// `n` batches, in words.
fn batches(n: usize) -> String {
    if n == 1 {
        "1 batch".into()
    } else {
        format!("{n} batches")
    }
}

impl Rendered for PairLatencyResult {
    fn text(&self) -> String {
        let mut out = String::new();
        let how = match self.wait {
            PingPongWait::Cas => "CAS ping-pong",
            PingPongWait::Load => "ping-pong waiting on loads, then CAS",
        };
        let _ = writeln!(
            out,
            "CPU {} <-> CPU {}: {:.1} ns one way ({how})",
            self.a, self.b, self.median_ns
        );
        let _ = writeln!(
            out,
            "  min {:.1} ns, spread {:.1}%, {} of {} ({} rejected as {}), {}",
            self.min_ns,
            self.spread * 100.0,
            plural(self.samples, "sample"),
            plural(self.round_trips_per_sample as usize, "round trip"),
            self.rejected,
            if self.rejected == 1 {
                "an outlier"
            } else {
                "outliers"
            },
            batches(self.batches)
        );
        if let Some(note) = &self.noise_note {
            let _ = writeln!(
                out,
                "  noisy: {note}; the best batch is kept (is another program running on these CPUs?)"
            );
        }
        let _ = match self.frequency_ramp {
            Some(r) => writeln!(
                out,
                "  warm-up: {}; the first was {:.0}% slower (frequency ramp)",
                batches(self.warmup_batches),
                (r - 1.0) * 100.0
            ),
            None => writeln!(
                out,
                "  warm-up: {}, no frequency ramp",
                batches(self.warmup_batches)
            ),
        };
        if let (Some(slowdown), Some(shares)) = (self.smt_slowdown, self.shares_core) {
            let _ = writeln!(
                out,
                "  SMT probe: a compute loop runs {slowdown:.2}x slower beside its partner: {}",
                if shares {
                    "the two contexts share a core"
                } else {
                    "separate cores"
                }
            );
        }
        let _ = writeln!(out, "  timer: {}", self.timer);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> PairLatencyResult {
        PairLatencyResult {
            a: 0,
            b: 1,
            median_ns: 31.24,
            min_ns: 30.0,
            spread: 0.012,
            samples: 1,
            rejected: 1,
            round_trips_per_sample: 1,
            batches: 1,
            warmup_batches: 1,
            frequency_ramp: None,
            noisy: false,
            spread_limit: None,
            noise_note: None,
            wait: PingPongWait::Cas,
            timer: "tsc".into(),
            ghz: 2.5,
            smt_slowdown: Some(1.02),
            shares_core: Some(false),
        }
    }

    #[test]
    fn one_of_everything_is_said_in_the_singular() {
        let t = pair().text();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "CPU 0 <-> CPU 1: 31.2 ns one way (CAS ping-pong)");
        assert_eq!(
            lines[1],
            "  min 30.0 ns, spread 1.2%, 1 sample of 1 round trip (1 rejected as an outlier), 1 batch"
        );
        assert_eq!(lines[2], "  warm-up: 1 batch, no frequency ramp");
        assert!(lines[3].ends_with("1.02x slower beside its partner: separate cores"));
        assert_eq!(lines[4], "  timer: tsc");
    }

    #[test]
    fn the_json_keeps_its_fields_with_units() {
        let j = crate::results::json(&pair()).unwrap();
        for key in [
            "\"median_ns\": 31.24",
            "\"min_ns\"",
            "\"round_trips_per_sample\"",
            "\"wait\": \"cas\"",
        ] {
            assert!(j.contains(key), "{key} in {j}");
        }
        assert!(!j.contains("noise_note"), "{j}");
    }
}
