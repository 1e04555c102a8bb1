//! The views of `topoprobe matrix`: an aligned table (noisy pairs marked `*`, flagged pairs
//! listed below), the CSV of `infer --from-matrix`, and the notes on flagged pairs that go
//! beside a CSV (on standard error, and in the notes file `FILE.notes`).

use std::fmt::Write as _;

use topoprobe_model::format::{csv, plural};
use topoprobe_model::results::matrix::{FlaggedPair, MatrixResult, PairFlagKind};
use topoprobe_model::LatencyMatrix;

use super::Rendered;

/// Flagged pairs named in a block at most (the notes file has them all).
const SHOWN: usize = 20;

/// Width of a column of the table.
const WIDTH: usize = 6;

/// The block of `#` lines on the flagged pairs of `r` (empty when there are none): the
/// noisy pairs, kept in the matrix, and the pairs given up, left empty; `more` is said
/// after "and N more" when the list is cut.
#[must_use]
pub fn flagged_block(r: &MatrixResult, more: Option<&str>) -> String {
    let mut s = String::new();
    let mut section = |title: &str, pairs: Vec<&FlaggedPair>| {
        if pairs.is_empty() {
            return;
        }
        let _ = writeln!(s, "# {title}:");
        for p in pairs.iter().take(SHOWN) {
            let _ = writeln!(s, "#   CPUs {}-{}: {}", p.cpu_a, p.cpu_b, p.detail);
        }
        if pairs.len() > SHOWN {
            let _ = writeln!(
                s,
                "#   and {} more{}",
                pairs.len() - SHOWN,
                more.map(|m| format!(" ({m})")).unwrap_or_default()
            );
        }
    };
    section(
        "noisy pairs (kept; the spread of their samples stayed above the limit: is another program running on these CPUs?)",
        r.flagged_as(PairFlagKind::Noisy).collect(),
    );
    section(
        "pairs not measured (the probe gave up; empty in the matrix)",
        r.flagged_as(PairFlagKind::GivenUp).collect(),
    );
    s
}

/// The notes file of the matrix CSV named `csv`: one tab-separated line per flagged pair
/// (row and column in the CSV, 0-based; the two CPUs; `noisy` or `given_up`; what
/// happened).
#[must_use]
pub fn notes_file(r: &MatrixResult, csv: &str) -> String {
    let mut s = format!(
        "# notes on {csv} (topoprobe matrix): pairs measured with a caveat\n\
         # noisy: kept in the matrix, the spread of its samples stayed above the limit\n\
         # given_up: the probe gave up on it, empty in the matrix\n\
         row\tcolumn\tcpu_a\tcpu_b\tflag\tdetail\n"
    );
    for p in &r.flagged {
        let flag = match p.flag {
            PairFlagKind::Noisy => "noisy",
            PairFlagKind::GivenUp => "given_up",
        };
        let _ = writeln!(
            s,
            "{}\t{}\t{}\t{}\t{flag}\t{}",
            p.row, p.column, p.cpu_a, p.cpu_b, p.detail
        );
    }
    s
}

/// The matrix as a table with CPU numbers as row and column headers (ns, whole numbers);
/// a noisy pair's value is marked with `*`.
fn table(r: &MatrixResult) -> String {
    let mut s = format!("{:>WIDTH$}", "");
    for c in &r.cpus {
        let _ = write!(s, "{c:>WIDTH$}");
    }
    s.push('\n');
    for (a, ca) in r.cpus.iter().enumerate() {
        let _ = write!(s, "{ca:>WIDTH$}");
        for b in 0..r.cpus.len() {
            let v = r
                .latency_ns
                .get(a)
                .and_then(|row| row.get(b))
                .copied()
                .flatten();
            match v {
                Some(v) if a != b && r.is_noisy(a, b) => {
                    let _ = write!(s, "{:>w$.0}*", v, w = WIDTH - 1);
                }
                Some(v) if a != b => {
                    let _ = write!(s, "{v:>WIDTH$.0}");
                }
                _ => {
                    let _ = write!(s, "{:>WIDTH$}", "");
                }
            }
        }
        s.push('\n');
    }
    s
}

impl Rendered for MatrixResult {
    const HAS_CSV: bool = true;

    fn text(&self) -> String {
        let mut s = table(self);
        let _ = writeln!(
            s,
            "one-way latency in ns, CAS ping-pong; {} of {} measured in {:.1} s{}; timer: {}",
            self.pairs_measured,
            plural(self.pairs_total, "pair"),
            self.seconds,
            if self.pairs_measured < self.pairs_total {
                " (the others filled in from their class; --full measures all)"
            } else {
                ""
            },
            self.timer
        );
        s.push_str(&flagged_block(self, None));
        if self.flagged_as(PairFlagKind::Noisy).next().is_some() {
            let _ = writeln!(
                s,
                "# * a noisy pair: its value is the best estimate there is"
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        s
    }

    /// N lines of N values in ns, the diagonal and pairs given up empty: the layout of
    /// core-to-core-latency's `--csv`, and the input of `infer --from-matrix`.
    fn csv(&self) -> Option<String> {
        let n = self.cpus.len();
        let m = LatencyMatrix::from_fn(n, |a, b| {
            self.latency_ns
                .get(a)
                .and_then(|row| row.get(b))
                .copied()
                .flatten()
        });
        let mut v = Vec::new();
        csv::write_matrix(&m, &mut v).ok()?;
        String::from_utf8(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(flagged: Vec<FlaggedPair>) -> MatrixResult {
        MatrixResult {
            cpus: vec![4, 5, 6],
            latency_ns: (0..3)
                .map(|a| (0..3).map(|b| (a != b).then_some(40.25)).collect())
                .collect(),
            pairs_measured: 3,
            pairs_total: 3,
            seconds: 0.5,
            timer: "tsc".into(),
            flagged,
            notes: Vec::new(),
        }
    }

    fn flagged() -> Vec<FlaggedPair> {
        vec![
            FlaggedPair {
                row: 0,
                column: 2,
                cpu_a: 4,
                cpu_b: 6,
                flag: PairFlagKind::Noisy,
                detail: "spread 30.0% above the 14.0% limit after 5 batches".into(),
            },
            FlaggedPair {
                row: 1,
                column: 2,
                cpu_a: 5,
                cpu_b: 6,
                flag: PairFlagKind::GivenUp,
                detail: "the partner stalled".into(),
            },
        ]
    }

    #[test]
    fn the_block_and_the_notes_name_cpus_and_rows() {
        let r = result(flagged());
        let b = flagged_block(&r, None);
        assert!(b.starts_with("# noisy pairs (kept;"), "{b}");
        assert!(
            b.contains("#   CPUs 4-6: spread 30.0% above the 14.0% limit after 5 batches"),
            "{b}"
        );
        assert!(b.contains("#   CPUs 5-6: the partner stalled"), "{b}");
        let n = notes_file(&r, "m.csv");
        assert!(n.starts_with("# notes on m.csv (topoprobe matrix)"), "{n}");
        assert!(
            n.contains("row\tcolumn\tcpu_a\tcpu_b\tflag\tdetail\n"),
            "{n}"
        );
        assert!(n.contains("0\t2\t4\t6\tnoisy\tspread 30.0%"), "{n}");
        assert!(
            n.contains("1\t2\t5\t6\tgiven_up\tthe partner stalled"),
            "{n}"
        );
        assert_eq!(flagged_block(&result(Vec::new()), None), "");
    }

    #[test]
    fn the_table_marks_noisy_pairs_and_says_one_pair_in_the_singular() {
        let t = result(flagged()).text();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "           4     5     6");
        assert_eq!(lines[1], "     4          40   40*");
        assert!(t.contains("# * a noisy pair"), "{t}");
        let mut one = result(Vec::new());
        one.cpus.truncate(2);
        one.latency_ns = vec![vec![None, Some(40.0)], vec![Some(40.0), None]];
        one.pairs_measured = 1;
        one.pairs_total = 1;
        let t = one.text();
        assert!(
            t.contains("; 1 of 1 pair measured in 0.5 s; timer: tsc"),
            "{t}"
        );
    }

    #[test]
    fn the_csv_is_the_square_matrix() {
        let c = result(Vec::new()).csv().unwrap();
        assert_eq!(c, ",40.25,40.25\n40.25,,40.25\n40.25,40.25,\n");
    }
}
