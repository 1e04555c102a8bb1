//! Notes on flagged pairs (noisy, or given up) where a result has no room for them: the
//! `# noisy pairs` block of a matrix on standard error, the companion notes file of a
//! matrix CSV, and the validation warnings of a measured description said on standard
//! error whatever the output format.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use topoprobe_model::format::write_atomic;
use topoprobe_model::results::matrix::MatrixResult;
use topoprobe_model::{Topology, WarningKind};
use topoprobe_view::results::matrix::{flagged_block, notes_file};

use crate::args::{ReportOutput, ResultFormat};
use crate::output::is_stdout;

/// The validation warnings about flagged pairs.
const WARNING_KINDS: [WarningKind; 2] = [WarningKind::NoisyPairs, WarningKind::PairsGivenUp];

/// Where the notes of a matrix written to `path` go: `path` with `.notes` added
/// (`m.csv.notes`).
#[must_use]
pub(crate) fn companion(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".notes");
    PathBuf::from(name)
}

/// Writes `notes` (the notes of the matrix CSV at `csv`) next to it, or, when there are
/// none, removes the notes an earlier matrix left there; says so on standard error.
///
/// # Errors
///
/// Fails when the notes file cannot be written or the stale one removed.
pub(crate) fn write_companion(notes: Option<&str>, csv: &Path) -> Result<()> {
    let path = companion(csv);
    let Some(notes) = notes else {
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
    };
    write_atomic(&path, notes.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("topoprobe: wrote {} (flagged pairs)", path.display());
    Ok(())
}

/// Says what a matrix written as `report` asks has no room for: its flagged pairs on
/// standard error (unless the table goes to standard output, where they are), the notes of
/// its plan too beside a CSV, and beside a CSV file the notes file (or the removal of an
/// older one).
///
/// # Errors
///
/// A usage error for a format the matrix does not have; fails when the notes file cannot
/// be written or removed.
pub(crate) fn beside_matrix(result: &MatrixResult, report: &ReportOutput) -> Result<()> {
    let format = report.format()?;
    let file = report.output.as_deref().filter(|p| !is_stdout(Some(p)));
    let csv = format == ResultFormat::Csv;
    if format != ResultFormat::Text || file.is_some() {
        let more = file.filter(|_| csv).map(|_| "see the notes file");
        eprint!("{}", flagged_block(result, more));
    }
    if csv {
        for n in &result.notes {
            eprintln!("topoprobe: {n}");
        }
    }
    match file {
        Some(path) if csv => {
            let notes = (!result.flagged.is_empty())
                .then(|| notes_file(result, &path.display().to_string()));
            write_companion(notes.as_deref(), path)
        }
        _ => Ok(()),
    }
}

/// Says the description's warnings about flagged pairs on standard error, whatever the
/// output format (a TSV partition has no room for them).
pub(crate) fn say_flagged_pairs(topo: &Topology) {
    for w in topo
        .validation()
        .warnings
        .iter()
        .filter(|w| WARNING_KINDS.contains(&w.kind))
    {
        eprintln!(
            "topoprobe: {}: {}",
            w.kind.as_str().replace('_', " "),
            w.message
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notes_of_a_matrix_go_beside_it() {
        assert_eq!(
            companion(Path::new("d/m.csv")),
            PathBuf::from("d/m.csv.notes")
        );
    }
}
