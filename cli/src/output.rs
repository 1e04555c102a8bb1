//! Writing a topology in the chosen format, to a file (atomically) or standard output.

use std::io::Write;

use anyhow::{Context, Result};
use topoprobe_model::format::{hwloc_xml, json, mct, tsv, write_atomic};
use topoprobe_model::Topology;
use topoprobe_view::color::{use_color, ColorWhen};
use topoprobe_view::dot;
use topoprobe_view::text::{self, TextOptions};

use crate::args::{Format, Output};

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
    let bytes = render(topo, out.format(), ghz, text)?;
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
