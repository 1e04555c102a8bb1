//! Turning views into pictures and deciding on colour: Graphviz for the graphs, resvg
//! for SVG → PNG, terminal detection for the text view.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use resvg::{tiny_skia, usvg};

use crate::args::ColorWhen;

/// The Graphviz program: `$TOPOPROBE_DOT` when set, else `dot` on the `PATH`.
fn dot_program() -> PathBuf {
    std::env::var_os("TOPOPROBE_DOT").map_or_else(|| PathBuf::from("dot"), PathBuf::from)
}

/// Whether Graphviz's `dot` can be run.
pub(crate) fn graphviz_available() -> bool {
    Command::new(dot_program())
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What to say when Graphviz is missing.
pub(crate) const NO_GRAPHVIZ: &str =
    "Graphviz's `dot` was not found (install Graphviz: Debian package `graphviz`)";

/// A picture format Graphviz or resvg writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Picture {
    /// SVG.
    Svg,
    /// PNG.
    Png,
}

impl Picture {
    /// The format's name and file extension.
    pub(crate) const fn ext(self) -> &'static str {
        match self {
            Self::Svg => "svg",
            Self::Png => "png",
        }
    }

    /// The format a file name asks for, from its extension.
    pub(crate) fn of_path(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "svg" => Some(Self::Svg),
            "png" => Some(Self::Png),
            _ => None,
        }
    }
}

/// Renders DOT text with Graphviz.
///
/// # Errors
///
/// Fails when `dot` cannot be started or rejects the graph (its message is included).
pub(crate) fn dot_to(dot: &str, picture: Picture) -> Result<Vec<u8>> {
    let program = dot_program();
    let mut child = Command::new(&program)
        .arg(format!("-T{}", picture.ext()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| anyhow!("no standard input for {}", program.display()))?;
    let text = dot.to_string();
    // Write from another thread so that a large output cannot dead-lock the pipes.
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child
        .wait_with_output()
        .with_context(|| format!("running {}", program.display()))?;
    writer
        .join()
        .map_err(|_| anyhow!("the thread writing to {} panicked", program.display()))?
        .with_context(|| format!("writing the graph to {}", program.display()))?;
    if !out.status.success() {
        bail!(
            "{} -T{} failed ({}): {}",
            program.display(),
            picture.ext(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// Renders an SVG document to PNG with resvg, using the system's fonts; small pictures
/// are scaled up (up to twice) so that their text stays sharp.
///
/// # Errors
///
/// Fails when the SVG cannot be parsed, is empty or too large to rasterize.
pub(crate) fn svg_to_png(svg: &str) -> Result<Vec<u8>> {
    let mut opt = usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = usvg::Tree::from_str(svg, &opt).context("parsing the SVG")?;
    let size = tree.size();
    let scale = (1600.0 / size.width()).clamp(1.0, 2.0);
    let (w, h) = (
        (size.width() * scale).ceil() as u32,
        (size.height() * scale).ceil() as u32,
    );
    let mut pixmap =
        tiny_skia::Pixmap::new(w, h).ok_or_else(|| anyhow!("cannot make a {w}×{h} picture"))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().context("encoding the PNG")
}

/// Whether to colour text written to standard output (`to_stdout`) or to a file.
pub(crate) fn use_color(when: ColorWhen, to_stdout: bool) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            to_stdout
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sibling_names() {
        assert_eq!(
            sibling(Path::new("out/g.svg"), "cross-socket"),
            PathBuf::from("out/g-cross-socket.svg")
        );
        assert_eq!(sibling(Path::new("g"), "x"), PathBuf::from("g-x"));
        assert_eq!(Picture::of_path(Path::new("a.PNG")), Some(Picture::Png));
        assert_eq!(Picture::of_path(Path::new("a.txt")), None);
    }

    #[test]
    fn png_of_a_small_svg() {
        let png = svg_to_png(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"20\" height=\"10\"><rect width=\"10\" height=\"10\" fill=\"#ff0000\"/></svg>",
        )
        .unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
}
