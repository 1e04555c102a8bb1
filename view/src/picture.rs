//! Picture formats (SVG, PNG), and, with the crate's `png` feature, SVG turned into PNG
//! with resvg (`svg_to_png`; without the feature the function does not exist).

use std::path::Path;

#[cfg(feature = "png")]
use resvg::{tiny_skia, usvg};

/// A picture format Graphviz or resvg writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Picture {
    /// SVG.
    Svg,
    /// PNG.
    Png,
}

impl Picture {
    /// The format's name and file extension.
    #[must_use]
    pub const fn ext(self) -> &'static str {
        match self {
            Self::Svg => "svg",
            Self::Png => "png",
        }
    }

    /// The format a file name asks for, from its extension (in any case).
    #[must_use]
    pub fn of_path(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "svg" => Some(Self::Svg),
            "png" => Some(Self::Png),
            _ => None,
        }
    }
}

/// Why an SVG document could not be turned into PNG.
#[cfg(feature = "png")]
#[derive(Debug, thiserror::Error)]
pub enum PngError {
    /// The SVG document could not be parsed (the cause is the error's source).
    #[error("parsing the SVG")]
    Parse(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The picture is empty or too large to rasterize.
    #[error("cannot make a {width}×{height} picture")]
    Size {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// The PNG could not be encoded (the cause is the error's source).
    #[error("encoding the PNG")]
    Encode(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Renders an SVG document to PNG with resvg, using the system's fonts; small pictures
/// are scaled up (up to twice) so that their text stays sharp.
///
/// # Errors
///
/// Returns [`PngError`] when the SVG cannot be parsed, is empty or too large to
/// rasterize, or the PNG cannot be encoded.
#[cfg(feature = "png")]
pub fn svg_to_png(svg: &str) -> Result<Vec<u8>, PngError> {
    let mut opt = usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| PngError::Parse(Box::new(e)))?;
    let size = tree.size();
    let scale = (1600.0 / size.width()).clamp(1.0, 2.0);
    let (width, height) = (
        (size.width() * scale).ceil() as u32,
        (size.height() * scale).ceil() as u32,
    );
    let mut pixmap =
        tiny_skia::Pixmap::new(width, height).ok_or(PngError::Size { width, height })?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| PngError::Encode(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_of_file_names() {
        assert_eq!(Picture::of_path(Path::new("a.PNG")), Some(Picture::Png));
        assert_eq!(Picture::of_path(Path::new("a.txt")), None);
    }

    // Runs where the `png` feature is on: `cargo test --workspace` (the CLI turns it on for
    // the whole build) or `cargo test -p topoprobe-view --features png`.
    #[cfg(feature = "png")]
    #[test]
    fn png_of_a_small_svg() {
        let png = svg_to_png(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"20\" height=\"10\"><rect width=\"10\" height=\"10\" fill=\"#ff0000\"/></svg>",
        )
        .unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
}
