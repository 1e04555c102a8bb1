//! The text of `topoprobe power`: a table like libmctop's, with notes on what it means;
//! or, without usable energy counters, `power: unavailable: <reason>`.

use std::fmt::Write as _;

use topoprobe_model::results::power::PowerResult;
use topoprobe_model::{PowerScope, PowerState};

use super::Rendered;

impl Rendered for PowerResult {
    fn text(&self) -> String {
        if let Some(reason) = &self.unavailable {
            return format!("power: unavailable: {reason}\n");
        }
        let mut out = String::new();
        let _ = writeln!(
            out,
            "power: {}, {:.2} s per state, watts",
            self.source.as_deref().unwrap_or("?"),
            self.seconds_per_state.unwrap_or(0.0)
        );
        let _ = writeln!(
            out,
            "{:<9} {:<8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "scope", "state", "cores", "rest", "package", "dram", "total"
        );
        let w = |v: f64, measured: bool| {
            if measured {
                format!("{v:>8.2}")
            } else {
                format!("{:>8}", "-")
            }
        };
        for e in &self.entries {
            let scope = match e.scope {
                PowerScope::Socket(s) => format!("socket {}", s.0),
                PowerScope::Total => "total".to_string(),
            };
            let _ = writeln!(
                out,
                "{scope:<9} {:<8} {} {} {} {} {}",
                e.state.mct_name(),
                w(e.cores_w, self.cores_measured),
                w(e.rest_w, self.cores_measured),
                w(e.package_w, true),
                w(e.dram_w, self.dram_measured),
                w(e.total_w, true),
            );
        }
        let increments: Vec<&str> = [
            PowerState::FirstCore,
            PowerState::SecondCore,
            PowerState::SecondContext,
        ]
        .into_iter()
        .filter(|s| self.entries.iter().any(|e| e.state == *s))
        .map(PowerState::mct_name)
        .collect();
        let _ = writeln!(
            out,
            "{} {} (over idle for 1stcore, over 1stcore for the others); idle, \
             allcor and allhwc are absolute; total is the sum over the sockets",
            increments.join(", "),
            if increments.len() == 1 {
                "is an increment"
            } else {
                "are increments"
            }
        );
        if !self.cores_measured {
            let _ = writeln!(
                out,
                "the cores' power (RAPL PP0) is not reported by this machine: cores and rest are \
                 not known separately (0 in the description)"
            );
        }
        if !self.dram_measured {
            let _ = writeln!(
                out,
                "DRAM power is not reported by this machine: total is the package alone (dram \
                 is 0 in the description)"
            );
        }
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{PowerEntry, SocketId};

    fn entry(scope: PowerScope, state: PowerState, package_w: f64) -> PowerEntry {
        PowerEntry {
            scope,
            state,
            cores_w: 0.0,
            rest_w: package_w,
            package_w,
            dram_w: 0.0,
            total_w: package_w,
        }
    }

    #[test]
    fn the_table_shows_unmeasured_domains_as_dashes_and_says_what_is_an_increment() {
        let s0 = PowerScope::Socket(SocketId(0));
        let r = PowerResult {
            unavailable: None,
            source: Some("powercap /x (intel-rapl:0)".to_string()),
            seconds_per_state: Some(0.5),
            cores_measured: false,
            dram_measured: false,
            entries: vec![
                entry(s0, PowerState::Idle, 14.42),
                entry(s0, PowerState::FirstCore, 13.29),
                entry(PowerScope::Total, PowerState::Idle, 14.42),
            ],
            notes: Vec::new(),
        };
        let text = r.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "power: powercap /x (intel-rapl:0), 0.50 s per state, watts"
        );
        assert_eq!(
            lines[2],
            "socket 0  idle            -        -    14.42        -    14.42"
        );
        assert!(lines[3].starts_with("socket 0  1stcore "), "{text}");
        assert!(lines[4].starts_with("total     idle "), "{text}");
        assert!(text.contains("1stcore is an increment"), "{text}");
        assert!(text.contains("DRAM power is not reported"), "{text}");
        assert!(
            text.contains("cores and rest are not known separately"),
            "{text}"
        );
    }

    #[test]
    fn unavailable_power_says_why_in_text_and_json() {
        let r = PowerResult::unavailable("no RAPL zones under /x");
        assert_eq!(r.text(), "power: unavailable: no RAPL zones under /x\n");
        let v: serde_json::Value =
            serde_json::from_str(&crate::results::json(&r).unwrap()).unwrap();
        assert_eq!(v["unavailable"], "no RAPL zones under /x");
    }
}
