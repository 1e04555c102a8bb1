//! Writing a topology in the chosen format, to a file (atomically) or standard output.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use topoprobe_model::format::{hwloc_xml, json, mct, tsv, write_atomic};
use topoprobe_model::Topology;
use topoprobe_view::color::{use_color, ColorWhen};
use topoprobe_view::dot;
use topoprobe_view::text::{self, TextOptions};

use crate::args::{Format, Output, ReportOutput};
use crate::error::Usage;

/// Renders a topology in a format; `ghz` converts ns into the cycles of a `.mct` file,
/// `text` says how to render the text view.
pub(crate) fn render(
    topo: &Topology,
    format: Format,
    ghz: Option<f64>,
    text: TextOptions,
) -> Result<Vec<u8>> {
    Ok(match format {
        Format::Text => text::render_with(topo, text).into_bytes(),
        Format::Dot => dot::render(topo).into_bytes(),
        Format::HwlocXml => hwloc_xml::render(topo).into_bytes(),
        Format::Json => json::to_json_string(topo).into_bytes(),
        Format::Tsv => tsv::partition_string(topo).into_bytes(),
        Format::Mct => {
            let mut v = Vec::new();
            mct::write_mct(topo, ghz, &mut v).context("rendering the .mct file")?;
            v
        }
    })
}

/// Writes a topology where `out` says (`ghz`: see [`render`]); the text view is coloured
/// on a terminal unless `NO_COLOR` is set.
pub(crate) fn emit(topo: &Topology, out: &Output, ghz: Option<f64>) -> Result<()> {
    let text = TextOptions {
        color: use_color(ColorWhen::Auto, out.output.is_none()),
        verbose: false,
    };
    let bytes = render(topo, out.format()?, ghz, text)?;
    write_to(out.output.as_deref(), &bytes)
}

/// Writes to standard output; a closed pipe (`topoprobe show | head`) is not an error.
///
/// # Errors
///
/// Fails when standard output cannot be written for another reason.
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(e).context("writing to standard output"),
    }
}

/// Writes to `path` atomically, or to standard output when there is no path.
///
/// # Errors
///
/// Fails when the file or standard output cannot be written.
pub(crate) fn write_to(path: Option<&std::path::Path>, bytes: &[u8]) -> Result<()> {
    match path {
        Some(path) => {
            write_atomic(path, bytes)?;
            eprintln!("topoprobe: wrote {}", path.display());
            Ok(())
        }
        None => write_stdout(bytes),
    }
}

/// The format a file's extension names: `.json`, `.tsv`, `.mct`, `.dot`/`.gv`, `.xml`,
/// `.txt`; `None` for any other extension.
fn format_of_extension(path: &std::path::Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "json" => Format::Json,
        "tsv" => Format::Tsv,
        "mct" => Format::Mct,
        "dot" | "gv" => Format::Dot,
        "xml" => Format::HwlocXml,
        "txt" | "text" => Format::Text,
        _ => return None,
    })
}

/// The name of a format on the command line.
pub(crate) fn format_name(f: Format) -> String {
    use clap::ValueEnum;
    f.to_possible_value()
        .map_or_else(|| format!("{f:?}"), |v| v.get_name().to_string())
}

impl Output {
    /// Checks the request before measuring: the format, and that the `-o` file's directory
    /// exists.
    ///
    /// # Errors
    ///
    /// A usage error for conflicting formats; an error naming a missing directory.
    pub(crate) fn check(&self) -> Result<()> {
        self.format()?;
        if let Some(path) = &self.output {
            topoprobe_model::format::check_place(path)?;
        }
        Ok(())
    }

    /// The chosen format: `--format` (or `--json`), else the extension of `-o FILE`, else
    /// text.
    ///
    /// # Errors
    ///
    /// A usage error when `--format` and the extension of the file name different formats.
    pub(crate) fn format(&self) -> Result<Format, Usage> {
        let given = if self.json {
            Some(Format::Json)
        } else {
            self.format
        };
        let by_ext = self.output.as_deref().and_then(format_of_extension);
        match (given, by_ext) {
            (Some(g), Some(e)) if g != e => Err(Usage(format!(
                "--format {} conflicts with -o {}, whose extension means {}: drop one, or \
                 name the file to match",
                format_name(g),
                self.output
                    .as_deref()
                    .unwrap_or_else(|| Path::new(""))
                    .display(),
                format_name(e)
            ))),
            (Some(g), _) => Ok(g),
            (None, Some(e)) => Ok(e),
            (None, None) => Ok(Format::Text),
        }
    }
}

impl ReportOutput {
    /// Whether the report is JSON: `--json`, or an `-o` file whose name ends in `.json`.
    ///
    /// # Errors
    ///
    /// A usage error for `--json` with a file named for another format (`-o r.txt`).
    pub(crate) fn is_json(&self) -> Result<bool, Usage> {
        let path = self.output.as_deref();
        match (self.json, path.and_then(format_of_extension)) {
            (_, Some(Format::Json)) => Ok(true),
            (true, Some(other)) => Err(Usage(format!(
                "--json conflicts with -o {}, whose extension means {}: drop one, or name the \
                 file .json",
                path.unwrap_or_else(|| Path::new("")).display(),
                format_name(other)
            ))),
            (json, _) => Ok(json),
        }
    }

    /// Checks the request before measuring: the format, and that the `-o` file's directory
    /// exists (a measurement is not thrown away at the end for a typing error).
    ///
    /// # Errors
    ///
    /// A usage error for conflicting formats; an error naming a missing directory.
    pub(crate) fn check(&self) -> Result<()> {
        self.is_json()?;
        if let Some(path) = &self.output {
            topoprobe_model::format::check_place(path)?;
        }
        Ok(())
    }

    /// Writes the report to the `-o` file (atomically), or to standard output.
    ///
    /// # Errors
    ///
    /// Fails when the file or standard output cannot be written.
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<()> {
        write_to(self.output.as_deref(), bytes)
    }
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
            out(None, false, Some("m.out")).format().unwrap(),
            Format::Text
        );
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
    }
}
