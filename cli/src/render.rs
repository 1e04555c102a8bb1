//! Where rendered pictures go: the Graphviz graphs of a topology as DOT text or pictures
//! (for `show` and for every command that writes a topology with `-o FILE.svg`), and the
//! names of their files. The views themselves, Graphviz and resvg are in `topoprobe-view`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use topoprobe_model::{SocketId, Topology};
use topoprobe_view::dot;
use topoprobe_view::graphviz::{self, NO_GRAPHVIZ};
use topoprobe_view::picture::Picture;

use crate::error::Usage;
use crate::output::{is_stdout, write_to};

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
    if !graphviz::available() {
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

    #[test]
    fn sibling_names() {
        assert_eq!(
            sibling(Path::new("out/g.svg"), "cross-socket"),
            PathBuf::from("out/g-cross-socket.svg")
        );
        assert_eq!(sibling(Path::new("g"), "x"), PathBuf::from("g-x"));
    }
}
