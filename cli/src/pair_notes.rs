//! Notes on flagged pairs (noisy, or given up) for the commands that measure latencies: a
//! `# noisy pairs` block on standard error, the companion notes file of a matrix CSV, and
//! the validation warnings of a measured description said on standard error whatever the
//! output format.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use topoprobe_infer::{Collected, FlaggedPair, PairFlag};
use topoprobe_model::format::write_atomic;
use topoprobe_model::Topology;

/// Flagged pairs named on standard error at most (the notes file has them all).
const SHOWN: usize = 20;

/// The validation warnings about flagged pairs.
const WARNING_KINDS: [&str; 2] = ["noisy_pairs", "pairs_given_up"];

/// The CPU numbers of a pair of rows ("1-14").
fn cpus_of(p: &FlaggedPair, cpus: &[u32]) -> String {
    let id = |r: usize| {
        cpus.get(r)
            .map_or_else(|| format!("row {r}"), u32::to_string)
    };
    format!("{}-{}", id(p.a), id(p.b))
}

/// The block of `#` lines on the flagged pairs of `c` (empty when there are none): the
/// noisy pairs, kept in the matrix, and the pairs given up, left empty.
#[must_use]
pub(crate) fn block(c: &Collected, cpus: &[u32], more: Option<&str>) -> String {
    let mut s = String::new();
    let mut section = |title: &str, pairs: Vec<&FlaggedPair>| {
        if pairs.is_empty() {
            return;
        }
        let _ = writeln!(s, "# {title}:");
        for p in pairs.iter().take(SHOWN) {
            let what = match &p.flag {
                PairFlag::GaveUp(why) => why.clone(),
                f @ PairFlag::Noisy { .. } => f.to_string(),
            };
            let _ = writeln!(s, "#   CPUs {}: {what}", cpus_of(p, cpus));
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
        c.noisy().collect(),
    );
    section(
        "pairs not measured (the probe gave up; empty in the matrix)",
        c.given_up().collect(),
    );
    s
}

/// Where the notes of a matrix written to `path` go: `path` with `.notes` added
/// (`m.csv.notes`).
#[must_use]
pub(crate) fn companion(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".notes");
    PathBuf::from(name)
}

/// The notes file of the matrix CSV `csv`: one tab-separated line per flagged pair (row and
/// column in the CSV, 0-based; the two CPUs; `noisy` or `given_up`; what happened).
#[must_use]
pub(crate) fn notes_file(c: &Collected, cpus: &[u32], csv: &Path) -> String {
    let mut s = format!(
        "# notes on {} (topoprobe matrix): pairs measured with a caveat\n\
         # noisy: kept in the matrix, the spread of its samples stayed above the limit\n\
         # given_up: the probe gave up on it, empty in the matrix\n\
         row\tcolumn\tcpu_a\tcpu_b\tflag\tdetail\n",
        csv.display()
    );
    for p in &c.flagged {
        let (flag, detail) = match &p.flag {
            PairFlag::Noisy { .. } => ("noisy", p.flag.to_string()),
            PairFlag::GaveUp(why) => ("given_up", why.clone()),
        };
        let id = |r: usize| cpus.get(r).map_or_else(String::new, u32::to_string);
        let _ = writeln!(
            s,
            "{}\t{}\t{}\t{}\t{flag}\t{detail}",
            p.a,
            p.b,
            id(p.a),
            id(p.b)
        );
    }
    s
}

/// Writes the notes of the matrix CSV at `csv` next to it when `c` has flagged pairs, and
/// removes the notes an earlier matrix left there otherwise; says so on standard error.
///
/// # Errors
///
/// Fails when the notes file cannot be written or the stale one removed.
pub(crate) fn write_companion(c: &Collected, cpus: &[u32], csv: &Path) -> Result<()> {
    let path = companion(csv);
    if c.flagged.is_empty() {
        if path.is_file() {
            std::fs::remove_file(&path).with_context(|| {
                format!("removing {} (notes of an earlier matrix)", path.display())
            })?;
            eprintln!(
                "topoprobe: removed {} (notes of an earlier matrix)",
                path.display()
            );
        }
        return Ok(());
    }
    write_atomic(&path, notes_file(c, cpus, csv).as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("topoprobe: wrote {} (flagged pairs)", path.display());
    Ok(())
}

/// Says the description's warnings about flagged pairs on standard error, whatever the
/// output format (a TSV partition has no room for them).
pub(crate) fn say_flagged_pairs(topo: &Topology) {
    for w in topo
        .validation()
        .warnings
        .iter()
        .filter(|w| WARNING_KINDS.contains(&w.kind.as_str()))
    {
        eprintln!("topoprobe: {}: {}", w.kind.replace('_', " "), w.message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{LatencyMatrix, Noisy};

    fn collected() -> Collected {
        let m = LatencyMatrix::from_fn(3, |a, b| (a != b).then_some(40.0));
        Collected {
            latency: m.clone(),
            spread: m.clone(),
            measured: m,
            pairs: 3,
            measurements: 3,
            resolution: None,
            flagged: vec![
                FlaggedPair {
                    a: 0,
                    b: 2,
                    flag: PairFlag::noisy(
                        0.3,
                        Noisy {
                            limit: 0.14,
                            batches: 5,
                        },
                    ),
                },
                FlaggedPair {
                    a: 1,
                    b: 2,
                    flag: PairFlag::GaveUp("the partner stalled".into()),
                },
            ],
        }
    }

    #[test]
    fn the_block_and_the_notes_name_cpus_and_rows() {
        let c = collected();
        let b = block(&c, &[4, 5, 6], None);
        assert!(b.starts_with("# noisy pairs (kept;"), "{b}");
        assert!(
            b.contains("#   CPUs 4-6: spread 30.0% above the 14.0% limit after 5 batches"),
            "{b}"
        );
        assert!(b.contains("#   CPUs 5-6: the partner stalled"), "{b}");
        let n = notes_file(&c, &[4, 5, 6], Path::new("m.csv"));
        assert!(
            n.contains("row\tcolumn\tcpu_a\tcpu_b\tflag\tdetail\n"),
            "{n}"
        );
        assert!(n.contains("0\t2\t4\t6\tnoisy\tspread 30.0%"), "{n}");
        assert!(
            n.contains("1\t2\t5\t6\tgiven_up\tthe partner stalled"),
            "{n}"
        );
        assert_eq!(
            companion(Path::new("d/m.csv")),
            PathBuf::from("d/m.csv.notes")
        );
        let quiet = Collected {
            flagged: Vec::new(),
            ..c
        };
        assert_eq!(block(&quiet, &[4, 5, 6], None), "");
    }
}
