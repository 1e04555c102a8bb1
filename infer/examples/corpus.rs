//! Scores the inference on a folder of measured matrices with ground truth, as the corpus
//! scorer counts levels (core, cluster — the innermost group holding more than one core, or
//! the socket — and socket, each compared as a partition), and shows which results carry
//! an `unresolved` flag.
//!
//! `cargo run --release -p topoprobe-infer --example corpus -- DIR [ID...]`
//!
//! `DIR` holds `matrices/ID.csv` and `truth/ID.tsv` (`cpu label core cluster die socket`);
//! an optional `DIR/excluded.tsv` (or the scorer's `rules.tsv` beside it, lines
//! `ID <TAB> level <TAB> excluded`) lists levels not identifiable from the latencies. Prints
//! one line per machine (outcome, the levels as `Y`/`n`, `(Y)`/`(n)` when excluded, counts,
//! the flagged levels and the time of the inference) and the totals: right, wrong, errors,
//! right answers that carry a flag and wrong answers that carry none.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use topoprobe_infer::{infer, InferOptions};
use topoprobe_model::{ContextId, Topology};

/// A partition as a set of sets of positions (label-free).
fn canon<T: Ord + Clone>(labels: &[T]) -> BTreeSet<Vec<usize>> {
    let mut by: BTreeMap<T, Vec<usize>> = BTreeMap::new();
    for (i, l) in labels.iter().enumerate() {
        by.entry(l.clone()).or_default().push(i);
    }
    by.into_values().collect()
}

/// The partitions of a topology: core, cluster and socket.
fn predicted(topo: &Topology) -> [BTreeSet<Vec<usize>>; 3] {
    let n = topo.num_contexts();
    let core: Vec<usize> = (0..n).map(|i| topo.contexts()[i].core.0).collect();
    let socket: Vec<usize> = (0..n).map(|i| topo.contexts()[i].socket.0).collect();
    let cluster: Vec<(usize, usize)> = (0..n)
        .map(|i| {
            topo.groups_of(ContextId(i))
                .into_iter()
                .find(|g| topo.groups()[g.0].cores.len() > 1)
                .map_or((0, topo.contexts()[i].socket.0), |g| (1, g.0))
        })
        .collect();
    [canon(&core), canon(&cluster), canon(&socket)]
}

/// The truth's partitions (core, cluster, socket), qualified by socket.
// A developer's tool reading the repository's own corpus files.
#[allow(clippy::disallowed_methods)]
fn expected(path: &Path) -> Result<[BTreeSet<Vec<usize>>; 3], String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or(format!("{}: no column {name}", path.display()))
    };
    let (cpu, core, cluster, socket) = (col("cpu")?, col("core")?, col("cluster")?, col("socket")?);
    let mut rows: Vec<(usize, [String; 3])> = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split('\t').collect();
        let id: usize = f
            .get(cpu)
            .and_then(|x| x.parse().ok())
            .ok_or(format!("{}: bad line {l:?}", path.display()))?;
        let get = |i: usize| f.get(i).map_or(String::new(), |s| (*s).to_string());
        rows.push((id, [get(core), get(cluster), get(socket)]));
    }
    rows.sort_by_key(|r| r.0);
    let by = |k: usize| -> Vec<(String, String)> {
        rows.iter()
            .map(|r| (r.1[2].clone(), r.1[k].clone()))
            .collect()
    };
    let socket: Vec<String> = rows.iter().map(|r| r.1[2].clone()).collect();
    Ok([canon(&by(0)), canon(&by(1)), canon(&socket)])
}

/// Levels excluded from scoring, per machine (from `excluded.tsv` or the scorer's rules).
// A developer's tool reading the repository's own corpus files.
#[allow(clippy::disallowed_methods)]
fn exclusions(dir: &Path) -> BTreeMap<String, Vec<usize>> {
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let candidates = [
        dir.join("excluded.tsv"),
        dir.join("../../tools/score/rules.tsv"),
    ];
    for path in candidates {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() >= 3 && f[2] == "excluded" {
                if let Some(k) = ["core", "cluster", "socket"]
                    .iter()
                    .position(|x| *x == f[1])
                {
                    out.entry(f[0].to_string()).or_default().push(k);
                }
            }
        }
        break;
    }
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "../shared/data/latency".into()),
    );
    let only: Vec<String> = args.collect();
    let excluded = exclusions(&dir);
    let mut ids: Vec<String> = std::fs::read_dir(dir.join("truth"))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    let p = e.path();
                    (p.extension()? == "tsv").then(|| p.file_stem()?.to_str().map(String::from))?
                })
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids.retain(|id| only.is_empty() || only.contains(id));
    let (mut ok, mut wrong, mut errors, mut ok_flagged, mut wrong_silent) = (0, 0, 0, 0, 0);
    for id in &ids {
        let matrix = dir.join("matrices").join(format!("{id}.csv"));
        let m = match topoprobe_model::format::csv::read_matrix(&matrix) {
            Ok(m) => m,
            Err(e) => {
                errors += 1;
                println!("{id:<30} error  {e}");
                continue;
            }
        };
        let truth = match expected(&dir.join("truth").join(format!("{id}.tsv"))) {
            Ok(t) => t,
            Err(e) => {
                errors += 1;
                println!("{id:<30} error  {e}");
                continue;
            }
        };
        let started = Instant::now();
        let topo = match infer(&m, &InferOptions::default()) {
            Ok(t) => t,
            Err(e) => {
                errors += 1;
                println!("{id:<30} error  {e}");
                continue;
            }
        };
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let pred = predicted(&topo);
        let skip = excluded.get(id).cloned().unwrap_or_default();
        let marks: Vec<String> = (0..3)
            .map(|k| {
                let right = if pred[k] == truth[k] { "Y" } else { "n" };
                if skip.contains(&k) {
                    format!("({right})")
                } else {
                    format!(" {right} ")
                }
            })
            .collect();
        let right = (0..3).all(|k| skip.contains(&k) || pred[k] == truth[k]);
        let flags: Vec<String> = topo
            .validation()
            .unresolved
            .iter()
            .map(|u| u.level.to_string())
            .collect();
        match (right, flags.is_empty()) {
            (true, true) => ok += 1,
            (true, false) => {
                ok += 1;
                ok_flagged += 1;
            }
            (false, true) => {
                wrong += 1;
                wrong_silent += 1;
            }
            (false, false) => wrong += 1,
        }
        println!(
            "{id:<30} {:<6} {} {:>4},{},{} / {},{},{}  {:>7.1} ms  flags: {}",
            if right { "ok" } else { "WRONG" },
            marks.join(""),
            pred[0].len(),
            pred[1].len(),
            pred[2].len(),
            truth[0].len(),
            truth[1].len(),
            truth[2].len(),
            ms,
            if flags.is_empty() {
                "-".to_string()
            } else {
                flags.join(",")
            }
        );
        if std::env::var_os("CORPUS_REASONS").is_some() {
            for u in &topo.validation().unresolved {
                println!("    # unresolved {}: {}", u.level, u.reason);
            }
        }
    }
    println!(
        "{} machines: ok={ok} wrong={wrong} error={errors}; right but flagged: {ok_flagged}; wrong without a flag: {wrong_silent}",
        ids.len()
    );
}
