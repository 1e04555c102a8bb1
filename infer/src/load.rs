//! Loading a topology from any file topoprobe reads: a JSON description, a libmctop `.mct`
//! file (inferred with the file's socket count and SMT flag as hints), a latency matrix,
//! or the hwloc XML that `lstopo` writes (the OS's structure, no latency).
//!
//! The extension decides first (`.json`, `.xml`, `.mct`, `.csv`; a `.tsv` file is a
//! latency matrix unless it is the partition table `infer --format tsv` writes, which
//! cannot be read back); without a known extension the content decides ([`sniff`]).

use std::path::Path;

use topoprobe_model::format::{csv, hwloc_xml, json, mct};
use topoprobe_model::{LatencyMatrix, LatencyUnit, ModelError, NodeId, Origin, Source, Topology};

use crate::error::InferError;
use crate::options::InferOptions;

/// The kinds of file a topology can be loaded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A JSON description (`topoprobe/1`).
    Description,
    /// A libmctop `.mct` file.
    Mct,
    /// A latency-matrix CSV.
    Matrix,
    /// hwloc XML (`lstopo --of xml`).
    HwlocXml,
    /// The partition table `infer --format tsv` writes (not readable as a topology).
    PartitionTable,
}

/// The header of the partition table (`infer --format tsv`).
const PARTITION_HEADER: &str = "cpu\tcore\tsocket\tnode\tgroups";

/// Whether the text starts with the partition table's header.
fn is_partition_table(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .lines()
        .next()
        .is_some_and(|l| l.trim_end() == PARTITION_HEADER)
}

/// Guesses the kind of a file from its content: the partition table's header, else its
/// first non-blank character (after a byte-order mark): `{` or `[` for JSON (a
/// description), `<` for XML, `#` for a `.mct` file, anything else for a matrix.
#[must_use]
pub fn sniff(text: &str) -> FileKind {
    if is_partition_table(text) {
        return FileKind::PartitionTable;
    }
    match text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .next()
    {
        Some('{' | '[') => FileKind::Description,
        Some('<') => FileKind::HwlocXml,
        Some('#') => FileKind::Mct,
        _ => FileKind::Matrix,
    }
}

/// The kind of a file: by its extension (`.json`, `.xml`, `.mct`, `.csv`, `.tsv`, in any
/// case), else by its content ([`sniff`]). A `.tsv` file is a matrix unless it starts
/// with the partition table's header.
#[must_use]
pub fn kind_of(path: &Path, text: &str) -> FileKind {
    match extension(path).as_deref() {
        Some("json") => FileKind::Description,
        Some("xml") => FileKind::HwlocXml,
        Some("mct") => FileKind::Mct,
        Some("csv") => FileKind::Matrix,
        Some("tsv") if is_partition_table(text) => FileKind::PartitionTable,
        Some("tsv") => FileKind::Matrix,
        _ => sniff(text),
    }
}

/// A file's extension, in lower case.
fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// Infers a topology from a parsed `.mct` file: the latencies are libmctop's (normalized,
/// in cycles), `#Nodes` is the socket hint and `SMT` the SMT hint (both reported as taken
/// from the file), and the memory, cache and power sections are kept. Each socket's local
/// node is the node with the lowest memory latency from it, when the file has latencies.
///
/// # Errors
///
/// Returns [`InferError`] when inference fails (see [`crate::infer`]).
pub fn infer_mct(
    file: &mct::MctFile,
    path: &Path,
    opts: &InferOptions,
) -> Result<Topology, InferError> {
    let mut o = opts.clone();
    o.units = LatencyUnit::Cycles;
    if o.sockets.is_none() && file.nodes >= 1 && file.nodes <= file.contexts {
        o.sockets = Some(file.nodes);
        o.sockets_origin = Origin::File;
    }
    if o.smt.is_none() {
        o.smt = Some(file.smt);
        o.smt_origin = Origin::File;
    }
    o.source = Source::Mct {
        path: path.display().to_string(),
    };
    if o.machine.hostname.is_none() && !file.host.is_empty() {
        o.machine.hostname = Some(file.host.clone());
    }
    let mut topo = crate::infer(&file.latency, &o)?;
    topo.set_memory(file.memory.clone());
    topo.set_caches(file.caches.clone());
    topo.set_power(file.power.clone());
    let local: Vec<Option<NodeId>> = topo
        .sockets()
        .iter()
        .map(|s| {
            file.memory.as_ref().and_then(|m| {
                (0..file.nodes)
                    .filter_map(|n| m.latency_from(&s.contexts, NodeId(n)).map(|l| (l, n)))
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, n)| NodeId(n))
            })
        })
        .collect();
    // Two sockets cannot share a local node in the model; keep the first claim.
    let mut seen = Vec::new();
    let local: Vec<Option<NodeId>> = local
        .into_iter()
        .map(|n| match n {
            Some(x) if seen.contains(&x) => None,
            Some(x) => {
                seen.push(x);
                Some(x)
            }
            None => None,
        })
        .collect();
    topo.set_nodes(file.nodes, &local)?;
    Ok(topo)
}

/// Why a topology file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file is unreadable or malformed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Inference from the file's latencies failed.
    #[error("{path}: {source}")]
    Infer {
        /// The file.
        path: String,
        /// The inference error.
        #[source]
        source: InferError,
    },
}

/// Loads a topology from a JSON description, a `.mct` file or a latency matrix (inferred
/// with `opts`), or an hwloc XML file (the OS's structure, no latency: see
/// [`hwloc_xml::read`]), telling them apart as [`kind_of`] does.
///
/// # Errors
///
/// Returns [`LoadError`] when the file cannot be read or parsed (naming the file, line and
/// problem), when it is a partition table (which cannot be read back), or when inference
/// fails.
pub fn load_topology(path: &Path, opts: &InferOptions) -> Result<Topology, LoadError> {
    if extension(path).as_deref() == Some("json") {
        // Streamed: a list over its limit is refused before the rest is read.
        return Ok(json::read_description(path)?);
    }
    let infer_err = |source| LoadError::Infer {
        path: path.display().to_string(),
        source,
    };
    if extension(path).as_deref() == Some("csv") {
        // Read line by line: the widest matrix file is 185 MB.
        let m = csv::read_matrix(path)?;
        return infer_matrix(m, path, opts).map_err(infer_err);
    }
    let text = topoprobe_model::format::read_input(path)?;
    match kind_of(path, &text) {
        FileKind::Description => Ok(json::from_json_str(&text, path)?),
        FileKind::HwlocXml => Ok(hwloc_xml::read::read_topology(&text, path)?),
        FileKind::PartitionTable => Err(ModelError::parse(
            path,
            1,
            "this is the partition table `topoprobe infer --format tsv` writes (cpu, core, \
             socket, node, groups): it cannot be read back as a topology; use the JSON \
             description (`topoprobe infer -o m.json`)",
        )
        .into()),
        FileKind::Mct => {
            let file = mct::parse_mct(&text, path)?;
            infer_mct(&file, path, opts).map_err(infer_err)
        }
        FileKind::Matrix => {
            let m = csv::parse_matrix(&text, path)?;
            infer_matrix(m, path, opts).map_err(infer_err)
        }
    }
}

/// Infers the topology of a latency matrix read from `path`.
fn infer_matrix(
    m: LatencyMatrix,
    path: &Path,
    opts: &InferOptions,
) -> Result<Topology, InferError> {
    let mut o = opts.clone();
    o.source = Source::Matrix {
        path: path.display().to_string(),
    };
    crate::infer_owned(m, &o)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use super::*;

    #[test]
    fn the_extension_decides_before_the_content() {
        let kind = |name: &str, text: &str| kind_of(Path::new(name), text);
        // `null` and a comment would be a matrix by content; a .json file is a description.
        assert_eq!(kind("m.json", "null"), FileKind::Description);
        assert_eq!(kind("m.JSON", "// x\n{}"), FileKind::Description);
        assert_eq!(kind("m.xml", "{"), FileKind::HwlocXml);
        assert_eq!(kind("m.mct", "1,2"), FileKind::Mct);
        assert_eq!(kind("m.csv", "<a/>"), FileKind::Matrix);
        assert_eq!(kind("m.tsv", "0\t1\n1\t0\n"), FileKind::Matrix);
        let table = "cpu\tcore\tsocket\tnode\tgroups\n0\t0\t0\t0\t\n";
        assert_eq!(kind("m.tsv", table), FileKind::PartitionTable);
        // Without a known extension, the content.
        assert_eq!(kind("m.txt", table), FileKind::PartitionTable);
        assert_eq!(kind("lstopo-output", "\u{feff}  <?xml"), FileKind::HwlocXml);
        assert_eq!(kind("m", "{}"), FileKind::Description);
        assert_eq!(kind("m", "#h #HWCs 2"), FileKind::Mct);
        assert_eq!(kind("m", "0,1\n1,0"), FileKind::Matrix);
    }

    #[test]
    fn a_partition_table_is_refused_with_what_to_use_instead() {
        let path = std::env::temp_dir().join(format!("topoprobe-{}-p.tsv", std::process::id()));
        std::fs::write(&path, "cpu\tcore\tsocket\tnode\tgroups\n0\t0\t0\t0\t\n").expect("writing");
        let err = load_topology(&path, &InferOptions::default())
            .expect_err("refused")
            .to_string();
        let _ = std::fs::remove_file(&path);
        assert!(
            err.contains("p.tsv:1: this is the partition table"),
            "{err}"
        );
        assert!(err.contains("use the JSON description"), "{err}");
    }
}
