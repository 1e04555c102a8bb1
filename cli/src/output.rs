//! The one output path of every command: where a result goes (`-o FILE`, `-` or nothing
//! for standard output), in which format (`--format`, `--json`, else the file's extension,
//! else the command's default), and how it is written (atomically for a regular file,
//! directly into a terminal, pipe or device).
//!
//! The Graphviz graphs of a topology go out the same way, as DOT text or as pictures next
//! to each other ([`dot_graphs`]).
//!
//! A command names the formats it writes with a [`Formats`] enum; [`choose`] applies the
//! rules the same way for all of them: an extension that names a format the command does
//! not write, or one that contradicts `--format`, is a usage error.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use topoprobe_model::format::{hwloc_xml, json, mct, tsv};
use topoprobe_model::{SocketId, Topology};
use topoprobe_view::color::{use_color, ColorWhen};
use topoprobe_view::dot;
use topoprobe_view::graphviz::{self, NO_GRAPHVIZ};
use topoprobe_view::picture::Picture;
use topoprobe_view::results::Rendered;
use topoprobe_view::text::{self, TextOptions};

use crate::args::{Format, Output, ReportOutput, ResultFormat};
use crate::error::Usage;

mod choice;

pub(crate) use choice::{choose, is_stdout, name_of, Formats, Kind, OutputArgs};

/// Checks, before any work, that a result can be written to `path`: its directory exists,
/// and it is none of the command's input files (`-o same.csv` would destroy the input).
///
/// # Errors
///
/// An error naming a missing directory; a usage error when the output is an input.
pub(crate) fn check_target(path: Option<&Path>, inputs: &[&Path]) -> Result<()> {
    let Some(path) = path.filter(|p| !is_stdout(Some(p))) else {
        return Ok(());
    };
    topoprobe_model::format::check_place(path)?;
    if let Some(input) = inputs.iter().find(|i| same_file(path, i)) {
        return Err(Usage(format!(
            "-o {} is the input file {}: writing would destroy it; name another file",
            path.display(),
            input.display()
        ))
        .into());
    }
    Ok(())
}

/// Whether two paths name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino() && x.is_file(),
        _ => false,
    }
}

/// Writes to standard output; a closed pipe (`topoprobe show | head`) is not an error.
///
/// # Errors
///
/// Fails when standard output cannot be written for another reason.
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<()> {
    write_to_with(None, |w| w.write_all(bytes))
}

/// Writes to `path` (atomically for a regular file, directly into a terminal, pipe or
/// device), or to standard output when there is no path or it is `-`.
///
/// # Errors
///
/// Fails when the file or standard output cannot be written.
pub(crate) fn write_to(path: Option<&Path>, bytes: &[u8]) -> Result<()> {
    write_to_with(path, |w| w.write_all(bytes))
}

/// Writes a topology in a format into `w` as it is made (a 4096-context description is
/// hundreds of MB in most formats); `ghz` converts ns into the cycles of a `.mct` file,
/// `text` says how to render the text view.
fn write_format(
    topo: &Topology,
    format: Format,
    ghz: Option<f64>,
    text: TextOptions,
    mut w: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        Format::Text => w.write_all(text::render_with(topo, text).as_bytes()),
        Format::Dot => w.write_all(dot::render(topo).as_bytes()),
        Format::HwlocXml => hwloc_xml::write(topo, w),
        Format::HwlocAnnotate => hwloc_xml::annotate::write(topo, w),
        Format::Json => json::write_json(topo, w),
        Format::Tsv => tsv::write_partition(topo, &mut w),
        Format::Csv => {
            topoprobe_model::format::csv::write_matrix(&topo.latency_tables().raw, &mut w)
        }
        Format::Mct => mct::write_mct(topo, ghz, &mut w),
    }
}

/// Writes a topology in a format (see [`write_format`]) to `path` as [`write_to`] does.
///
/// # Errors
///
/// Fails when the file or standard output cannot be written, or when a `.mct` file cannot
/// be made (a description in ns with no clock frequency), before anything is written.
pub(crate) fn write_topology(
    topo: &Topology,
    format: Format,
    ghz: Option<f64>,
    text: TextOptions,
    path: Option<&Path>,
) -> Result<()> {
    if format == Format::Mct {
        mct::check_mct_writable(topo, ghz).context("rendering the .mct file")?;
    }
    write_to_with(path, |w| write_format(topo, format, ghz, text, w))
}

/// Writes a topology where `out` says (`ghz`: see [`render`]); the text view is coloured
/// on a terminal unless `NO_COLOR` is set, and the graphs of `--format dot` written to a
/// `.svg` or `.png` file are rendered by Graphviz, as `show` renders them.
pub(crate) fn emit(topo: &Topology, out: &Output, ghz: Option<f64>) -> Result<()> {
    let format = out.format()?;
    let path = out.output.as_deref();
    if let (Format::Dot, Some(picture)) = (format, path.and_then(Picture::of_path)) {
        return dot_graphs(topo, 0, Some(picture), path);
    }
    let text = TextOptions {
        color: use_color(ColorWhen::Auto, is_stdout(path)),
        verbose: false,
    };
    write_topology(topo, format, ghz, text, path)
}

/// Writes what `write` writes, as it goes, to `path` (atomically for a regular file,
/// directly into a terminal, pipe or device), or to standard output when there is no path
/// or it is `-`; a closed pipe on standard output is not an error.
///
/// # Errors
///
/// Fails when the file or standard output cannot be written, and with the errors of
/// `write`.
fn write_to_with(
    path: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    match path {
        Some(path) if !is_stdout(Some(path)) => {
            let regular = std::fs::metadata(path).map_or(true, |m| m.is_file());
            topoprobe_model::format::write_atomic_with(path, write)?;
            if regular {
                eprintln!("topoprobe: wrote {}", path.display());
            }
            Ok(())
        }
        _ => {
            let mut stdout = std::io::stdout().lock();
            match write(&mut stdout).and_then(|()| stdout.flush()) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(e).context("writing to standard output"),
            }
        }
    }
}

impl<F: Formats> OutputArgs<F> {
    /// Checks the request before any work: the format, and that the `-o` file's directory
    /// exists and is none of `inputs` (a measurement is not thrown away at the end for a
    /// typing error, an input is not overwritten).
    ///
    /// # Errors
    ///
    /// A usage error for conflicting formats or an output that is an input; an error
    /// naming a missing directory.
    pub(crate) fn check(&self, inputs: &[&Path]) -> Result<()> {
        self.format()?;
        check_target(self.output.as_deref(), inputs)
    }
}

impl ReportOutput {
    /// [`ReportOutput::check`], and that a result of type `R` has the chosen format
    /// (`--format csv` is refused for a result that is not a table).
    ///
    /// # Errors
    ///
    /// As [`ReportOutput::check`]; a usage error for CSV of a result with no table.
    pub(crate) fn check_for<R: Rendered>(&self, inputs: &[&Path]) -> Result<()> {
        self.check(inputs)?;
        if self.format()? == ResultFormat::Csv && !R::HAS_CSV {
            return Err(Usage(
                "this result is not a table: --format csv is not available (choose text or json)"
                    .into(),
            )
            .into());
        }
        Ok(())
    }

    /// Writes a result in the chosen format.
    ///
    /// # Errors
    ///
    /// A usage error for a format the result does not have; fails when the file or
    /// standard output cannot be written.
    pub(crate) fn emit<R: Rendered>(&self, result: &R) -> Result<()> {
        let text = match self.format()? {
            ResultFormat::Text => result.text(),
            ResultFormat::Json => {
                topoprobe_view::results::json(result).context("rendering the result as JSON")?
            }
            ResultFormat::Csv => result.csv().ok_or_else(|| {
                Usage(
                    "this result is not a table: --format csv is not available (choose text or json)"
                        .into(),
                )
            })?,
        };
        self.write(text.as_bytes())
    }

    /// Writes already rendered bytes where the result goes.
    ///
    /// # Errors
    ///
    /// Fails when the file or standard output cannot be written.
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<()> {
        write_to(self.output.as_deref(), bytes)
    }
}

/// `dir/stem-suffix.ext` for `dir/stem.ext`.
pub(crate) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{suffix}"),
    };
    path.with_file_name(name)
}

/// Writes the Graphviz graphs of a topology (the intra-socket graph of `socket`, and the
/// cross-socket graph of a machine with several sockets) to `out` (`None` or `-`: standard
/// output): as DOT text, or rendered by Graphviz when `picture` says so, the cross-socket
/// graph then next to `out` (`g.svg`, `g-cross-socket.svg`). Without Graphviz, the DOT
/// text is written instead (to `out` with the extension `.dot`), and that is said.
///
/// # Errors
///
/// A usage error for a socket the topology lacks, or for several pictures to standard
/// output; fails when Graphviz fails or a file cannot be written.
pub(crate) fn dot_graphs(
    topo: &Topology,
    socket: usize,
    picture: Option<Picture>,
    out: Option<&Path>,
) -> Result<()> {
    let out = out.filter(|p| !is_stdout(Some(p)));
    let Ok(graphs) = dot::graphs_for(topo, SocketId(socket)) else {
        return Err(Usage(format!(
            "--socket {socket}: the topology has {}, numbered from 0",
            topoprobe_model::format::plural(topo.num_sockets(), "socket")
        ))
        .into());
    };
    let text: String = graphs
        .iter()
        .map(|(_, g)| g.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let Some(picture) = picture else {
        return write_to(out, text.as_bytes());
    };
    // A renderer that is there but fails or hangs is an error (exit 1), not "not found".
    if !graphviz::check()? {
        eprintln!(
            "topoprobe: {NO_GRAPHVIZ}; writing the DOT text instead of {}",
            picture.ext().to_uppercase()
        );
        let dot_path = out.map(|p| p.with_extension("dot"));
        return write_to(dot_path.as_deref(), text.as_bytes());
    }
    if graphs.len() > 1 && out.is_none() {
        return Err(Usage(format!(
            "this topology has {} graphs (intra-socket and cross-socket): name a file with -o; the cross-socket graph goes next to it",
            graphs.len()
        ))
        .into());
    }
    for (i, (name, g)) in graphs.iter().enumerate() {
        let bytes = graphviz::render(g, picture)?;
        let path = match out {
            Some(p) if i > 0 => Some(sibling(p, name)),
            Some(p) => Some(p.to_path_buf()),
            None => None,
        };
        write_to(path.as_deref(), &bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(format: Option<Format>, json: bool, path: Option<&str>) -> Output {
        Output {
            format,
            json,
            output: path.map(std::path::PathBuf::from),
        }
    }

    #[test]
    fn the_extension_picks_the_format() {
        assert_eq!(
            out(None, false, Some("m.json")).format().unwrap(),
            Format::Json
        );
        assert_eq!(
            out(None, false, Some("m.MCT")).format().unwrap(),
            Format::Mct
        );
        assert_eq!(
            out(None, false, Some("m.csv")).format().unwrap(),
            Format::Csv
        );
        assert_eq!(
            out(None, false, Some("m.out")).format().unwrap(),
            Format::Text
        );
        assert_eq!(out(None, false, Some("-")).format().unwrap(), Format::Text);
        assert_eq!(out(None, false, None).format().unwrap(), Format::Text);
        assert_eq!(
            out(None, true, Some("m.json")).format().unwrap(),
            Format::Json
        );
        assert_eq!(
            out(Some(Format::Tsv), false, Some("m")).format().unwrap(),
            Format::Tsv
        );
        let e = out(Some(Format::Tsv), false, Some("m.json"))
            .format()
            .unwrap_err();
        assert!(
            e.0.contains("--format tsv") && e.0.contains("means json"),
            "{e}"
        );
        let e = out(None, false, Some("m.html")).format().unwrap_err();
        assert!(e.0.contains("does not write"), "{e}");
    }

    #[test]
    fn results_take_text_json_or_csv() {
        let r = |path: &str| choose::<ResultFormat>(None, false, Some(Path::new(path)));
        assert_eq!(r("x.csv").unwrap(), ResultFormat::Csv);
        assert_eq!(r("x.json").unwrap(), ResultFormat::Json);
        assert_eq!(r("x.log").unwrap(), ResultFormat::Text);
        let e = r("x.png").unwrap_err();
        assert!(e.0.contains("text, json or csv"), "{e}");
    }

    #[test]
    fn sibling_names() {
        assert_eq!(
            sibling(Path::new("out/g.svg"), "cross-socket"),
            PathBuf::from("out/g-cross-socket.svg")
        );
        assert_eq!(sibling(Path::new("g"), "x"), PathBuf::from("g-x"));
    }
}
