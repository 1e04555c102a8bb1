//! Where rendered pictures go: the views themselves, Graphviz and resvg are in
//! `topoprobe-view`.

use std::path::{Path, PathBuf};

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
    }
}
