//! Text and CSV of `topoprobe bench <experiment>` ([`topoprobe_model::results::bench`]):
//! a header saying what ran, the table, then the advice. Every report is a table, so each
//! has CSV: one line per row of its `results`, figures rounded as in JSON.

use std::fmt::Write as _;

use topoprobe_model::format::plural;
use topoprobe_model::format::rounding::round_figure;
use topoprobe_model::results::bench::{
    compared, FalseSharingReport, LineOpsReport, LocksReport, Op, ReduceReport, Scope, SortReport,
    State,
};
use topoprobe_model::size_text;

use super::{csv_field, Rendered};

/// A figure in CSV and tables: rounded as in JSON; empty when it is not a number.
fn figure(x: f64) -> String {
    if x.is_finite() {
        round_figure(x).to_string()
    } else {
        String::new()
    }
}

/// `a / b` as a table cell (`1.37x`), `-` when it is not a number.
fn ratio(a: f64, b: f64) -> String {
    let r = a / b;
    if r.is_finite() && r > 0.0 {
        format!("{r:.2}x")
    } else {
        "-".to_string()
    }
}

/// Seconds as the user wrote them (`1`, `0.2`).
fn seconds(s: f64) -> String {
    format!("{} s", round_figure(s))
}

/// The advice after a table (nothing when there is none).
fn advice(out: &mut String, advice: &[String]) {
    if !advice.is_empty() {
        out.push_str("\nadvice\n");
        for a in advice {
            let _ = writeln!(out, "  - {a}");
        }
    }
}

/// CSV from a header and rows of already formatted fields.
fn csv(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut out = header.join(",");
    out.push('\n');
    for row in rows {
        let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

impl Rendered for LocksReport {
    const HAS_CSV: bool = true;

    fn text(&self) -> String {
        let mut out = format!(
            "{} ({}), {}, critical section {} ns, pause {} ns, median of {} of {}\n",
            plural(self.threads, "thread"),
            self.policy,
            plural(self.locks, "lock"),
            round_figure(self.cs_ns),
            round_figure(self.pause_ns),
            plural(self.runs, "run"),
            seconds(self.duration_s),
        );
        let _ = writeln!(out, "clock: {}\n", self.clock);
        let _ = writeln!(
            out,
            "{:<12} {:<9} {:>14} {:>9} {:>10} {:>9}",
            "lock", "backoff", "M acq/s", "fairness", "vs none", "vs std"
        );
        let std_rate = self
            .results
            .iter()
            .find(|r| r.lock == "std")
            .map_or(f64::NAN, |r| r.acquisitions_per_s);
        for r in &self.results {
            let none = self
                .results
                .iter()
                .find(|x| x.lock == r.lock && x.backoff == "none")
                .map_or(f64::NAN, |x| x.acquisitions_per_s);
            let _ = writeln!(
                out,
                "{:<12} {:<9} {:>14.3} {:>9.2} {:>10} {:>9}",
                r.lock,
                r.backoff,
                r.acquisitions_per_s / 1e6,
                r.fairness,
                if r.backoff == "native" {
                    "-".to_string()
                } else {
                    ratio(r.acquisitions_per_s, none)
                },
                ratio(r.acquisitions_per_s, std_rate)
            );
        }
        out.push_str(
            "(vs none, vs std: throughput as a multiple of the same lock without backoff and of \
             std::sync::Mutex; above 1x is faster)\n",
        );
        advice(&mut out, &self.advice);
        out
    }

    fn csv(&self) -> Option<String> {
        Some(csv(
            &[
                "lock",
                "backoff",
                "threads",
                "acquisitions_per_s",
                "fairness",
            ],
            self.results.iter().map(|r| {
                vec![
                    r.lock.clone(),
                    r.backoff.clone(),
                    r.threads.to_string(),
                    figure(r.acquisitions_per_s),
                    figure(r.fairness),
                ]
            }),
        ))
    }
}

impl Rendered for FalseSharingReport {
    const HAS_CSV: bool = true;

    fn text(&self) -> String {
        let mut out = format!(
            "{} ({}) each incrementing its own counter, median of {} of {}\n\n",
            plural(self.threads, "thread"),
            self.policy,
            plural(self.runs, "run"),
            seconds(self.duration_s),
        );
        let first = self.results.first();
        let vs = first.map_or_else(
            || "vs first".to_string(),
            |f| format!("vs {} B", f.stride_bytes),
        );
        let _ = writeln!(out, "{:>8} {:>16} {:>12}", "stride", "M incr/s", vs);
        for r in &self.results {
            let _ = writeln!(
                out,
                "{:>6} B {:>16.1} {:>12}",
                r.stride_bytes,
                r.ops_per_s / 1e6,
                ratio(r.ops_per_s, first.map_or(f64::NAN, |f| f.ops_per_s))
            );
        }
        if let Some(f) = first {
            let _ = writeln!(
                out,
                "({vs}: throughput as a multiple of counters {} apart; above 1x is faster)",
                plural(f.stride_bytes, "byte")
            );
        }
        if let Some(p) = self.padding_bytes {
            let _ = writeln!(out, "padding: {}", plural(p, "byte"));
        }
        advice(&mut out, &self.advice);
        out
    }

    fn csv(&self) -> Option<String> {
        Some(csv(
            &["stride_bytes", "threads", "ops_per_s"],
            self.results.iter().map(|r| {
                vec![
                    r.stride_bytes.to_string(),
                    r.threads.to_string(),
                    figure(r.ops_per_s),
                ]
            }),
        ))
    }
}

impl Rendered for LineOpsReport {
    const HAS_CSV: bool = true;

    fn text(&self) -> String {
        let mut out = format!(
            "latency of one operation from CPU {}, ns (median of {} of 32 dependent lines)\n\n",
            self.cpu,
            plural(self.rounds, "round"),
        );
        let find = |op: Op, state: State, scope: Scope| {
            self.results
                .iter()
                .find(|x| x.op == op && x.state == state && x.scope == scope)
        };
        let scopes: Vec<Scope> = Scope::ALL
            .into_iter()
            .filter(|s| self.results.iter().any(|x| x.scope == *s))
            .collect();
        let _ = write!(out, "{:<6} {:<10}", "op", "state");
        for s in &scopes {
            let _ = write!(out, " {:>12}", s.as_str());
        }
        out.push('\n');
        for state in State::ALL {
            for op in Op::ALL {
                if !self.results.iter().any(|x| x.op == op && x.state == state) {
                    continue;
                }
                let _ = write!(out, "{:<6} {:<10}", op.as_str(), state.as_str());
                for &s in &scopes {
                    match find(op, state, s) {
                        Some(x) => {
                            let _ = write!(out, " {:>12.1}", x.latency_ns);
                        }
                        None => {
                            let _ = write!(out, " {:>12}", "-");
                        }
                    }
                }
                out.push('\n');
            }
        }
        let mut homes: Vec<String> = Vec::new();
        for x in &self.results {
            if let Some(n) = x.home_node {
                let h = format!("{}: node {n}", x.scope.as_str());
                if !homes.contains(&h) {
                    homes.push(h);
                }
            }
        }
        if !homes.is_empty() {
            let _ = writeln!(out, "lines homed on {}", homes.join(", "));
        }
        for u in &self.unavailable {
            let _ = writeln!(
                out,
                "{}{}: unavailable: {}",
                u.scope.as_str(),
                u.state
                    .map(|s| format!(" {}", s.as_str()))
                    .unwrap_or_default(),
                u.reason
            );
        }
        if let Some(d) = &self.described_latency {
            if let [a, b, ..] = d.cpus[..] {
                let _ = write!(
                    out,
                    "\nCAS on a modified line, CPUs {a} and {b}: {:.1} ns; the description's \
                     latency for the pair: {:.1} {}",
                    d.cas_ns, d.latency, d.unit
                );
                let times = d.cas_ns / d.latency;
                if d.unit == "ns" && times.is_finite() && times > 0.0 {
                    let _ = write!(out, " (the CAS takes {times:.2} times as long)");
                }
                out.push('\n');
            }
        }
        advice(&mut out, &self.advice);
        out
    }

    fn csv(&self) -> Option<String> {
        let cpu = |c: Option<&u32>| c.map(u32::to_string).unwrap_or_default();
        Some(csv(
            &[
                "op",
                "state",
                "scope",
                "latency_ns",
                "cpu",
                "owner_cpu",
                "third_cpu",
            ],
            self.results.iter().map(|r| {
                vec![
                    r.op.as_str().to_string(),
                    r.state.as_str().to_string(),
                    r.scope.as_str().to_string(),
                    figure(r.latency_ns),
                    cpu(r.cpus.first()),
                    cpu(r.cpus.get(1)),
                    cpu(r.cpus.get(2)),
                ]
            }),
        ))
    }
}

impl Rendered for SortReport {
    const HAS_CSV: bool = true;

    fn text(&self) -> String {
        let mut out = format!(
            "{} of random keys, {}, median of {}; {}\n",
            size_text(self.bytes),
            plural(self.threads, "thread"),
            plural(self.runs, "run"),
            if self.verified {
                "every result verified"
            } else {
                "results not verified"
            }
        );
        for n in &self.calibration {
            let _ = writeln!(out, "  calibration: {n}");
        }
        let _ = writeln!(
            out,
            "\n{:<5} {:<26} {:>10} {:>10} {:>10}",
            "keys", "algorithm", "seconds", "vs rayon", "vs std"
        );
        let of = |keys: &str, alg: &str| {
            self.results
                .iter()
                .find(|x| x.keys == keys && x.algorithm == alg)
                .map_or(f64::NAN, |x| x.seconds)
        };
        for r in &self.results {
            let _ = writeln!(
                out,
                "{:<5} {:<26} {:>10} {:>10} {:>10}",
                r.keys,
                r.algorithm,
                figure(r.seconds),
                ratio(of(&r.keys, "rayon_par_sort_unstable"), r.seconds),
                ratio(of(&r.keys, "std_sort_unstable"), r.seconds)
            );
        }
        out.push_str(
            "(vs rayon, vs std: speed as a multiple of rayon's par_sort_unstable and std's \
             sort_unstable; above 1x is faster)\n",
        );
        let mut keys: Vec<&str> = self.results.iter().map(|r| r.keys.as_str()).collect();
        keys.dedup();
        let mut lines = Vec::new();
        for k in keys {
            let mine = of(k, "topoprobe");
            if mine.is_finite() {
                lines.push(format!(
                    "{k} keys: topoprobe is {} and {}",
                    compared(of(k, "rayon_par_sort_unstable") / mine, "rayon"),
                    compared(of(k, "std_sort_unstable") / mine, "std")
                ));
            }
        }
        if !lines.is_empty() {
            out.push('\n');
            for l in lines {
                let _ = writeln!(out, "{l}");
            }
        }
        out
    }

    fn csv(&self) -> Option<String> {
        Some(csv(
            &["keys", "algorithm", "bytes", "threads", "seconds"],
            self.results.iter().map(|r| {
                vec![
                    r.keys.clone(),
                    r.algorithm.clone(),
                    r.bytes.to_string(),
                    r.threads.to_string(),
                    figure(r.seconds),
                ]
            }),
        ))
    }
}

impl Rendered for ReduceReport {
    const HAS_CSV: bool = true;

    fn text(&self) -> String {
        let mut out = format!(
            "{} ({}), {} each, median of {}; {}\n\n",
            plural(self.threads, "worker"),
            self.policy,
            size_text(self.bytes),
            plural(self.runs, "run"),
            if self.verified {
                "both sums checked equal"
            } else {
                "sums not checked"
            }
        );
        let _ = writeln!(out, "{:<9} {:>6} {:>12}", "reduction", "rounds", "seconds");
        for r in &self.results {
            let _ = writeln!(
                out,
                "{:<9} {:>6} {:>12}",
                r.reduction,
                r.rounds,
                figure(r.seconds)
            );
        }
        let of = |name: &str| {
            self.results
                .iter()
                .find(|r| r.reduction == name)
                .map(|r| r.seconds)
        };
        if let (Some(tree), Some(flat)) = (of("tree"), of("flat")) {
            let _ = writeln!(
                out,
                "\nthe tree is {}",
                compared(flat / tree, "the flat reduction")
            );
        }
        out
    }

    fn csv(&self) -> Option<String> {
        Some(csv(
            &["reduction", "threads", "bytes", "rounds", "seconds"],
            self.results.iter().map(|r| {
                vec![
                    r.reduction.clone(),
                    r.threads.to_string(),
                    r.bytes.to_string(),
                    r.rounds.to_string(),
                    figure(r.seconds),
                ]
            }),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::results::bench::{
        DescribedLatency, LockResult, OpResult, ReduceResult, SortResult, StrideResult, Unavailable,
    };

    fn locks(runs: usize) -> LocksReport {
        let line = |lock: &str, backoff: &str, rate: f64| LockResult {
            lock: lock.into(),
            backoff: backoff.into(),
            threads: 1,
            acquisitions_per_s: rate,
            fairness: 1.0,
            runs: vec![rate; runs],
        };
        LocksReport {
            threads: 1,
            locks: 1,
            duration_s: 0.02,
            cs_ns: 1000.0,
            pause_ns: 100.0,
            policy: "con_core_hwc".into(),
            runs,
            clock: "tsc at 2.445 GHz, steps of 9.8 ns".into(),
            results: vec![
                line("ticket", "none", 2e6),
                line("ticket", "educated", 1.46e6),
                line("std", "native", 2e6),
            ],
            advice: vec!["ticket: educated backoff is 0.73x as fast as no backoff".into()],
        }
    }

    #[test]
    fn one_run_one_thread_one_lock_are_singular() {
        let t = locks(1).text();
        assert!(
            t.starts_with("1 thread (con_core_hwc), 1 lock, critical section 1000 ns, pause 100 ns, median of 1 run of 0.02 s\n"),
            "{t}"
        );
        assert!(
            t.contains("0.73x") && t.contains("above 1x is faster"),
            "{t}"
        );
        assert!(locks(3).text().contains("median of 3 runs"));
    }

    #[test]
    fn locks_csv_has_a_row_per_result() {
        let c = locks(1).csv().unwrap();
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines[0], "lock,backoff,threads,acquisitions_per_s,fairness");
        assert_eq!(lines[1], "ticket,none,1,2000000,1");
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn false_sharing_names_its_first_stride() {
        let r = FalseSharingReport {
            threads: 2,
            policy: "con_core".into(),
            runs: 1,
            duration_s: 0.2,
            padding_bytes: Some(64),
            results: [8, 64]
                .iter()
                .map(|&s| StrideResult {
                    stride_bytes: s,
                    threads: 2,
                    ops_per_s: s as f64 * 1e6,
                    runs: vec![],
                })
                .collect(),
            advice: vec![],
        };
        let t = r.text();
        assert!(t.contains("median of 1 run of 0.2 s"), "{t}");
        assert!(t.contains("vs 8 B") && t.contains("8.00x"), "{t}");
        assert!(t.contains("padding: 64 bytes"), "{t}");
        assert_eq!(
            r.csv().unwrap(),
            "stride_bytes,threads,ops_per_s\n8,2,8000000\n64,2,64000000\n"
        );
    }

    #[test]
    fn line_ops_show_the_table_what_is_missing_and_the_pair() {
        let r = LineOpsReport {
            rounds: 1,
            cpu: 0,
            results: vec![OpResult {
                op: Op::Cas,
                state: State::Modified,
                scope: Scope::Socket,
                latency_ns: 45.0,
                cpus: vec![0, 1],
                home_node: Some(1),
            }],
            unavailable: vec![Unavailable {
                scope: Scope::OtherSocket,
                state: None,
                reason: "one socket".into(),
            }],
            described_latency: Some(DescribedLatency {
                cpus: vec![0, 1],
                latency: 50.0,
                unit: "ns".into(),
                cas_ns: 45.0,
            }),
            advice: vec![],
        };
        let t = r.text();
        assert!(t.contains("median of 1 round of 32"), "{t}");
        assert!(t.contains("cas    modified           45.0"), "{t}");
        assert!(t.contains("other_socket: unavailable: one socket"), "{t}");
        assert!(t.contains("lines homed on socket: node 1"), "{t}");
        assert!(t.contains("0.90 times as long"), "{t}");
        assert_eq!(
            r.csv().unwrap(),
            "op,state,scope,latency_ns,cpu,owner_cpu,third_cpu\ncas,modified,socket,45,0,1,\n"
        );
    }

    #[test]
    fn sort_and_reduce_say_how_fast_in_words() {
        let sort = |alg: &str, s: f64| SortResult {
            algorithm: alg.into(),
            keys: "u32".into(),
            bytes: 4096,
            threads: 2,
            seconds: s,
            runs: vec![s],
        };
        let r = SortReport {
            verified: true,
            bytes: 4096,
            threads: 2,
            runs: 1,
            seed: 42,
            calibration: vec![],
            results: vec![
                sort("topoprobe", 1.0),
                sort("rayon_par_sort_unstable", 0.73),
                sort("std_sort_unstable", 2.0),
            ],
        };
        let t = r.text();
        assert!(
            t.starts_with("4 KiB of random keys, 2 threads, median of 1 run;"),
            "{t}"
        );
        assert!(
            t.contains("u32 keys: topoprobe is 0.73x as fast as rayon and 2.00x faster than std"),
            "{t}"
        );
        let red = |name: &str, s: f64| ReduceResult {
            reduction: name.into(),
            threads: 1,
            bytes: 8,
            rounds: 0,
            seconds: s,
            runs: vec![s],
        };
        let r = ReduceReport {
            verified: true,
            bytes: 8,
            threads: 1,
            policy: "rr_core".into(),
            runs: 1,
            results: vec![red("tree", 1.0), red("flat", 1.0)],
        };
        let t = r.text();
        assert!(
            t.starts_with("1 worker (rr_core), 8 B each, median of 1 run;"),
            "{t}"
        );
        assert!(
            t.contains("the tree is as fast as the flat reduction"),
            "{t}"
        );
        assert_eq!(r.csv().unwrap().lines().count(), 3);
    }
}
