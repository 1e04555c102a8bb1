//! What topoprobe writes at the documented limits, its readers read back
//! (`docs/LIMITS.md`): every table entry within its width, and a matrix CSV, a
//! description, a `.mct` file and an hwloc XML file of [`MAX_CONTEXTS`] contexts whose
//! latencies are at their widest, each within the bound its reader's limit is sized from
//! and read back through the reader a user's file goes through.

use std::path::Path;

use topoprobe_model::format::csv::{parse_matrix, read_matrix, write_matrix};
use topoprobe_model::format::json::{read_description, to_json_string};
use topoprobe_model::format::mct::{read_mct, write_mct};
use topoprobe_model::format::{hwloc_xml, read_input};
use topoprobe_model::limits::{
    MAX_CONTEXTS, MAX_DESCRIPTION_WRITTEN_BYTES, MAX_FILE_BYTES, MAX_MATRIX_WRITTEN_BYTES,
    MAX_MCT_WRITTEN_BYTES, MAX_XML_WRITTEN_BYTES,
};
use topoprobe_model::{
    ContextId, LatencyMatrix, LatencyUnit, Member, Topology, TopologyBuilder, MAX_ENTRY_CHARS,
};

/// A table entry with five significant digits whose every form is long: its mantissa
/// varies with the pair, its exponent is `exp`.
fn widest(a: usize, b: usize, exp: i32) -> Option<f64> {
    let mantissa = 1.0 + ((a * 7919 + b * 104_729) % 9000 + 1000) as f64 / 1e4;
    (a != b).then(|| mantissa * 10f64.powi(exp))
}

/// `n` single-context cores in one socket, with `raw` as both latency tables (and as the
/// spread where `spread`).
fn machine(n: usize, unit: LatencyUnit, raw: &LatencyMatrix, spread: bool) -> Topology {
    let mut b = TopologyBuilder::new((0..n as u32).collect(), unit);
    let cores: Vec<_> = (0..n).map(|c| b.core(vec![ContextId(c)])).collect();
    b.socket(cores.iter().map(|&c| Member::Core(c)).collect());
    b.latencies(raw.clone(), raw.clone());
    if spread {
        b.spread(raw.clone());
    }
    b.build().expect("a valid topology")
}

/// Every magnitude a table holds, from about 10⁻³⁸ to the latency limit, with five
/// significant digits and as whole numbers: each entry is written within
/// [`MAX_ENTRY_CHARS`] characters, in CSV and in JSON, and reads back to itself.
#[test]
fn every_table_entry_is_written_within_its_width_and_reads_back() {
    let mut values: Vec<f64> = (-37..12)
        .flat_map(|e| [1.0, 1.2345, 9.8765, 9.9999].map(|m| m * 10f64.powi(e)))
        .collect();
    values.extend([1e12, 16_777_215.0, 16_777_216.0, 123.45, 0.1, 2.0e-38]);
    let n = values.len() + 1;
    let m = LatencyMatrix::from_fn(n, |a, b| match (a, b) {
        _ if a == b => None,
        (0, k) | (k, 0) => Some(values[k - 1]),
        _ => Some(1.0),
    });
    let mut csv = Vec::new();
    write_matrix(&m, &mut csv).expect("written");
    let csv = String::from_utf8(csv).expect("UTF-8");
    for field in csv.lines().flat_map(|l| l.split(',')) {
        assert!(field.len() <= MAX_ENTRY_CHARS, "{field:?}");
    }
    assert_eq!(
        parse_matrix(&csv, Path::new("m.csv")).expect("read back"),
        m
    );
    let json = serde_json::to_string(&m).expect("written");
    for token in json.split([',', '[', ']', '\n']).filter(|t| !t.is_empty()) {
        assert!(token.len() <= MAX_ENTRY_CHARS, "{token:?}");
    }
    let rows: Vec<Vec<Option<f64>>> = serde_json::from_str(&json).expect("read back");
    assert_eq!(LatencyMatrix::from_rows(rows).expect("square"), m);
}

/// A matrix CSV of 4096 contexts, every entry at its widest, is within
/// [`MAX_MATRIX_WRITTEN_BYTES`] and the file is read back.
#[test]
fn a_matrix_csv_at_the_context_limit_reads_back() {
    let m = LatencyMatrix::from_fn(MAX_CONTEXTS, |a, b| widest(a, b, -20));
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("m.csv");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("created"));
    write_matrix(&m, &mut out).expect("written");
    drop(out);
    let bytes = std::fs::metadata(&path).expect("written").len();
    assert!(bytes <= MAX_MATRIX_WRITTEN_BYTES, "{bytes} bytes");
    assert!(
        bytes > MAX_MATRIX_WRITTEN_BYTES * 9 / 10,
        "not the widest: {bytes}"
    );
    assert_eq!(read_matrix(&path).expect("read back"), m);
}

/// A description of 4096 contexts with its three tables at their widest is within
/// [`MAX_DESCRIPTION_WRITTEN_BYTES`] and read back whole from its file. About 600 MB of
/// JSON written and parsed: a minute on a busy 2-CPU machine, so `.ci/run` runs it on its
/// own, after the suite.
#[test]
#[ignore = "600 MB of JSON: run by .ci/run (cargo test -p topoprobe-model --test it -- --ignored)"]
fn a_description_at_the_context_limit_reads_back() {
    let m = LatencyMatrix::from_fn(MAX_CONTEXTS, |a, b| widest(a, b, -20));
    let topo = machine(MAX_CONTEXTS, LatencyUnit::Ns, &m, true);
    drop(m);
    let text = to_json_string(&topo);
    let bytes = text.len() as u64;
    assert!(bytes <= MAX_DESCRIPTION_WRITTEN_BYTES, "{bytes} bytes");
    assert!(
        bytes > MAX_FILE_BYTES / 4,
        "the tables are written at their widest"
    );
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("d.json");
    std::fs::write(&path, &text).expect("written");
    drop(text);
    let back = read_description(&path).expect("read back");
    assert_eq!(back.num_contexts(), MAX_CONTEXTS);
    assert_eq!(back.latency_tables().raw, topo.latency_tables().raw);
    assert_eq!(back.latency_tables().spread, topo.latency_tables().spread);
}

/// A `.mct` file of 4096 contexts whose latencies are whole cycles at the latency limit is
/// within [`MAX_MCT_WRITTEN_BYTES`] and read back.
#[test]
fn an_mct_file_at_the_context_limit_reads_back() {
    let m = LatencyMatrix::from_fn(MAX_CONTEXTS, |a, b| widest(a, b, 11));
    let topo = machine(MAX_CONTEXTS, LatencyUnit::Cycles, &m, false);
    drop(m);
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("m.mct");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("created"));
    write_mct(&topo, None, &mut out).expect("written");
    drop(out);
    let bytes = std::fs::metadata(&path).expect("written").len();
    assert!(bytes <= MAX_MCT_WRITTEN_BYTES, "{bytes} bytes");
    let back = read_mct(&path).expect("read back");
    assert_eq!(back.latency.len(), MAX_CONTEXTS);
    let (a, b) = (17, 4000);
    let written = topo
        .latency_tables()
        .normalized
        .get(a, b)
        .expect("an entry");
    assert_eq!(back.latency.get(a, b), Some(written.round()));
}

/// An hwloc XML file of 4096 contexts whose latency matrix is at its widest (picoseconds
/// of latencies near the limit) is within [`MAX_XML_WRITTEN_BYTES`], within the reader's
/// count of elements, and read back.
#[test]
fn an_hwloc_xml_file_at_the_context_limit_reads_back() {
    let m = LatencyMatrix::from_fn(MAX_CONTEXTS, |a, b| widest(a, b, 11));
    let topo = machine(MAX_CONTEXTS, LatencyUnit::Ns, &m, false);
    drop(m);
    let text = hwloc_xml::render(&topo);
    let bytes = text.len() as u64;
    assert!(bytes <= MAX_XML_WRITTEN_BYTES, "{bytes} bytes");
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("t.xml");
    std::fs::write(&path, &text).expect("written");
    drop(text);
    let text = read_input(&path).expect("within the file limit");
    let back = hwloc_xml::read::read_topology(&text, &path).expect("read back");
    assert_eq!(back.num_contexts(), MAX_CONTEXTS);
}
