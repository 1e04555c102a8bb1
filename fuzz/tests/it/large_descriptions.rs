//! Large descriptions in little memory. The exports are written as they are made: the
//! writers of hwloc XML, the `hwloc-annotate` script, the JSON description, the matrix CSV
//! and the `.mct` file hold a small part of the text they write (a 4096-context export is
//! 100–550 MB; `infer --format hwloc-xml` peaked at 395 MiB while the XML was built
//! whole). A description is read holding its latency tables once (`show` of 4096 contexts
//! peaked at 281 MiB while the check of its structure copied both tables), and a matrix
//! file holding its table only (the widest CSV of 4096 contexts, 185 MB, was held whole).

use std::io::{self, Write};

use topoprobe_fuzz::alloc::measure;
use topoprobe_model::format::csv::read_matrix;
use topoprobe_model::format::json::read_description;
use topoprobe_model::format::{csv, hwloc_xml, json, mct};
use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, Topology, TopologyBuilder};

/// Contexts of the description: its distances are a million values.
const N: usize = 1024;

/// Counts what is written and drops it.
#[derive(Default)]
struct Counted(usize);

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `N` single-context cores in two sockets, every pair its own latency.
fn machine() -> Topology {
    let raw = LatencyMatrix::from_fn(N, |a, b| {
        (a != b).then(|| 50.0 + ((a.min(b) * 7919 + a.max(b) * 104_729) % 25_000) as f64 / 100.0)
    });
    let mut b = TopologyBuilder::new((0..N as u32).collect(), LatencyUnit::Ns);
    let cores: Vec<_> = (0..N).map(|c| b.core(vec![ContextId(c)])).collect();
    for half in cores.chunks(N / 2) {
        b.socket(half.iter().map(|&c| Member::Core(c)).collect());
    }
    b.latencies(raw.clone(), raw);
    b.build().expect("a valid topology")
}

#[test]
fn exports_hold_a_small_part_of_what_they_write() {
    let topo = machine();
    type Writer = fn(&Topology, &mut Counted) -> io::Result<()>;
    let writers: [(&str, Writer); 5] = [
        ("hwloc XML", |t, w| hwloc_xml::write(t, w)),
        ("hwloc-annotate", |t, w| hwloc_xml::annotate::write(t, w)),
        ("JSON", |t, w| json::write_json(t, w)),
        ("CSV", |t, w| csv::write_matrix(&t.latency_tables().raw, w)),
        ("mct", |t, w| mct::write_mct(t, Some(2.0), w)),
    ];
    for (name, write) in writers {
        let mut out = Counted::default();
        let (written, peak) = measure(|| write(&topo, &mut out));
        written.unwrap_or_else(|e| panic!("{name}: {e}"));
        eprintln!("{name}: {} bytes written, {peak} bytes held at most", out.0);
        assert!(out.0 > 4 * N * N, "{name}: only {} bytes", out.0);
        assert!(
            peak < out.0 / 8,
            "{name}: held {peak} bytes while writing {}",
            out.0
        );
    }
}

/// The text written into a file is the text [`hwloc_xml::render`] returns.
#[test]
fn written_and_rendered_exports_agree() {
    let topo = machine();
    let mut xml = Vec::new();
    hwloc_xml::write(&topo, &mut xml).expect("written");
    assert_eq!(
        String::from_utf8(xml).expect("UTF-8"),
        hwloc_xml::render(&topo)
    );
    let mut script = Vec::new();
    hwloc_xml::annotate::write(&topo, &mut script).expect("written");
    assert_eq!(
        String::from_utf8(script).expect("UTF-8"),
        hwloc_xml::annotate::render(&topo)
    );
}

/// A file `name` in a new temporary folder, with what `write` writes.
fn written(
    name: &str,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(name);
    let mut file = std::fs::File::create(&path).expect("created");
    write(&mut file).expect("written");
    (dir, path)
}

#[test]
fn a_description_is_read_holding_its_tables_once() {
    let topo = machine();
    let (_dir, path) = written("d.json", |w| json::write_json(&topo, w));
    let (read, peak) = measure(|| read_description(&path));
    let read = read.expect("read back");
    assert_eq!(read.contexts().len(), N);
    // The two tables, 4 bytes an entry each.
    let tables = 2 * 4 * N * N;
    eprintln!("read holding {peak} bytes at most, tables {tables}");
    assert!(
        peak < tables + tables / 2,
        "reading held {peak} bytes for {tables} bytes of tables"
    );
}

#[test]
fn a_matrix_file_is_read_holding_its_table_only() {
    let topo = machine();
    let raw = &topo.latency_tables().raw;
    let mut csv_text = Vec::new();
    csv::write_matrix(raw, &mut csv_text).expect("written");
    // Every line end the reader takes: a file of lone carriage returns is one line to a
    // reader that splits at `\n` only.
    for end in ["\n", "\r\n", "\r"] {
        let text = String::from_utf8(csv_text.clone())
            .expect("UTF-8")
            .replace('\n', end);
        let (_dir, path) = written("m.csv", |w| w.write_all(text.as_bytes()));
        let (read, peak) = measure(|| read_matrix(&path));
        assert_eq!(&read.expect("read back"), raw, "{end:?}");
        let table = 4 * N * N;
        eprintln!(
            "{end:?}: read holding {peak} bytes at most, table {table}, text {}",
            text.len()
        );
        assert!(
            peak < table + (1 << 20),
            "{end:?}: reading held {peak} bytes for a table of {table} bytes and {} bytes of text",
            text.len()
        );
    }
}
