//! Integration tests of the file formats: real files, round trips, a corpus of bad inputs
//! and properties (readers never panic, writers and readers agree).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use topoprobe_model::format::csv::{parse_matrix, read_matrix, write_matrix};
use topoprobe_model::format::json::{
    from_json_str, read_description, to_json_string, write_description,
};
use topoprobe_model::format::mct::{parse_mct, read_mct, write_mct, MctFile};
use topoprobe_model::format::tsv::{partition_string, write_partition};
use topoprobe_model::{
    Access, ContextId, Evidence, LatencyMatrix, LatencyUnit, Machine, Member, ModelError, NodeId,
    PowerScope, PowerState, SocketId, StructureLevel, Threads, Topology, TopologyBuilder,
    Unresolved,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// `../shared/data` beside the repository, when present.
fn shared_data() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "note: {} is absent; skipping the test on shared data",
            dir.display()
        );
        None
    }
}

/// A topology with the structure of a libmctop file: `sockets` sockets, each with
/// `n / 2 / sockets` cores, core `c` made of contexts `c` and `c + n / 2`; one node per
/// socket; raw = normalized = the file's latencies; the file's sections attached.
fn topology_of(f: &MctFile, sockets: usize) -> Topology {
    let n = f.contexts;
    let cores = n / 2;
    let per_socket = cores / sockets;
    let mut b = TopologyBuilder::new((0..n as u32).collect(), LatencyUnit::Cycles);
    let core_ids: Vec<_> = (0..cores)
        .map(|c| b.core(vec![ContextId(c), ContextId(c + cores)]))
        .collect();
    for s in 0..sockets {
        let members = core_ids[s * per_socket..(s + 1) * per_socket]
            .iter()
            .map(|&c| Member::Core(c))
            .collect();
        let sid = b.socket(members);
        b.node(Some(s as u32), None, vec![sid]);
    }
    b.latencies(f.latency.clone(), f.latency.clone());
    b.machine(Machine {
        hostname: Some(f.host.clone()),
        ..Machine::default()
    });
    b.memory(f.memory.clone())
        .caches(f.caches.clone())
        .power(f.power.clone());
    b.build().unwrap()
}

fn mct_text(topo: &Topology) -> String {
    let mut out = Vec::new();
    write_mct(topo, None, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

// ---------------------------------------------------------------------------------------
// libmctop files

#[test]
fn reads_lpdxeon2680() {
    let f = read_mct(&fixture("lpdxeon2680.mct")).unwrap();
    assert_eq!(f.host, "lpdxeon2680");
    assert_eq!((f.contexts, f.nodes, f.smt), (40, 2, true));
    assert_eq!(f.latency.len(), 40);
    assert_eq!(f.latency.get(0, 0), None);
    assert_eq!(f.latency.get(0, 20), Some(28.0));
    assert_eq!(f.latency.get(0, 1), Some(112.0));
    assert_eq!(f.latency.get(0, 10), Some(308.0));
    assert_eq!(f.latency.present(), 40 * 39);
    let mem = f.memory.as_ref().unwrap();
    let lat: Vec<(usize, usize, f64)> = mem
        .latency
        .iter()
        .map(|l| (l.context.0, l.node.0, l.latency))
        .collect();
    assert_eq!(
        lat,
        [(0, 0, 259.0), (0, 1, 505.0), (10, 0, 505.0), (10, 1, 259.0)]
    );
    assert_eq!(mem.bandwidth.len(), 16);
    assert_eq!(
        mem.bandwidth_of(SocketId(1), NodeId(0), Access::Read, Threads::AllContexts),
        Some(24.275843)
    );
    assert_eq!(
        mem.bandwidth_of(SocketId(0), NodeId(1), Access::Write, Threads::Single),
        Some(5.004246)
    );
    let caches = f.caches.as_ref().unwrap();
    assert_eq!(caches.levels.len(), 4);
    assert_eq!(caches.levels[0].latency, None);
    assert_eq!(caches.levels[3].latency, Some(41.0));
    assert_eq!(caches.levels[3].os_size_kib, Some(25600));
    assert_eq!(caches.levels[3].measured_size_kib, Some(22528));
    let power = f.power.as_ref().unwrap();
    assert_eq!(power.entries.len(), 18);
    let total_allhwc = power
        .entries
        .iter()
        .find(|e| e.scope == PowerScope::Total && e.state == PowerState::AllContexts)
        .unwrap();
    assert_eq!(total_allhwc.total_w, 228.710766);
    let s1_2ndhwc = power
        .entries
        .iter()
        .find(|e| {
            e.scope == PowerScope::Socket(SocketId(1)) && e.state == PowerState::SecondContext
        })
        .unwrap();
    assert_eq!(s1_2ndhwc.cores_w, 0.226602);
}

#[test]
fn reads_lpdpc4() {
    let f = read_mct(&fixture("lpdpc4.mct")).unwrap();
    assert_eq!(
        (f.host.as_str(), f.contexts, f.nodes, f.smt),
        ("lpdpc4", 8, 1, true)
    );
    assert_eq!(f.latency.get(0, 4), Some(28.0));
    assert_eq!(f.latency.get(0, 1), Some(88.0));
    let mem = f.memory.as_ref().unwrap();
    assert_eq!(mem.latency.len(), 1);
    assert_eq!(mem.bandwidth.len(), 4);
    assert!(f.caches.is_none() && f.power.is_none());
}

#[test]
fn writes_libmctop_layout_byte_for_byte() {
    for (name, sockets) in [("lpdxeon2680.mct", 2), ("lpdpc4.mct", 1)] {
        let original = std::fs::read_to_string(fixture(name)).unwrap();
        let f = parse_mct(&original, Path::new(name)).unwrap();
        let topo = topology_of(&f, sockets);
        let written = mct_text(&topo);
        // libmctop forgets the newline after the last cache level; topoprobe writes it.
        let expected = original.replace("SizeEst 22528#Power", "SizeEst 22528\n#Power");
        assert_eq!(written, expected, "{name}");
        let again = parse_mct(&written, Path::new(name)).unwrap();
        assert_eq!(again, f, "{name}");
    }
}

#[test]
fn mct_export_converts_nanoseconds_with_a_frequency() {
    let mut b = TopologyBuilder::new(vec![0, 1], LatencyUnit::Ns);
    let cores: Vec<_> = (0..2).map(|c| b.core(vec![ContextId(c)])).collect();
    b.socket(cores.iter().map(|&c| Member::Core(c)).collect());
    let m = LatencyMatrix::from_fn(2, |_, _| Some(40.0));
    b.latencies(m.clone(), m);
    let topo = b.build().unwrap();
    let mut out = Vec::new();
    let err = write_mct(&topo, None, &mut out).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("--ghz"), "{err}");
    let mut out = Vec::new();
    write_mct(&topo, Some(2.5), &mut out).unwrap();
    let f = parse_mct(&String::from_utf8(out).unwrap(), Path::new("x.mct")).unwrap();
    assert_eq!(f.latency.get(0, 1), Some(100.0));
}

#[test]
fn mct_export_of_an_inferred_topology() {
    // Normalized latencies are rounded, missing ones fall back to raw, the host name is
    // made a single token, and nodes default to sockets.
    let mut b = TopologyBuilder::new(vec![0, 1, 2], LatencyUnit::Cycles);
    let cores: Vec<_> = (0..3).map(|c| b.core(vec![ContextId(c)])).collect();
    b.socket(cores.iter().map(|&c| Member::Core(c)).collect());
    let raw = LatencyMatrix::from_fn(3, |a, b| Some(if a + b == 3 { 33.3 } else { 0.4 }));
    let mut normalized = raw.clone();
    normalized.set(1, 2, None);
    normalized.set(0, 1, Some(41.5));
    b.latencies(raw, normalized);
    b.machine(Machine {
        hostname: Some("my host#1".into()),
        ..Machine::default()
    });
    let topo = b.build().unwrap();
    let text = mct_text(&topo);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "#my_host_1 #HWCs 3 #Nodes 1 SMT 0");
    assert_eq!(lines[1], "0    0    0");
    assert_eq!(lines[2], "0    1    42");
    assert_eq!(lines[3], "0    2    1");
    assert_eq!(lines[6], "1    2    33");
    assert_eq!(lines.len(), 10);
    let f = parse_mct(&text, Path::new("x.mct")).unwrap();
    assert_eq!(f.latency.get(1, 2), Some(33.0));
}

// ---------------------------------------------------------------------------------------
// CSV files

#[test]
fn reads_fixture_matrices() {
    let m = read_matrix(&fixture("nv-i7-6700k.csv")).unwrap();
    assert_eq!(m.len(), 8);
    assert_eq!(m.get(0, 1), Some(6.93));
    assert_eq!(m.max_asymmetry(), 0.0);
    let d = read_matrix(&fixture("hy-apple-m1pro-10c.csv")).unwrap();
    assert_eq!(d.len(), 10);
    assert_eq!(d.get(0, 1), Some(37.0));
    assert_eq!(d.get(1, 0), Some(53.0));
    // Round trip through the writer.
    for m in [m, d] {
        let mut out = Vec::new();
        write_matrix(&m, &mut out).unwrap();
        let again = parse_matrix(std::str::from_utf8(&out).unwrap(), Path::new("x.csv")).unwrap();
        assert_eq!(again, m);
    }
}

#[test]
fn reads_every_shared_matrix() {
    let Some(data) = shared_data() else { return };
    let index = std::fs::read_to_string(data.join("latency/index.tsv")).unwrap();
    let mut lines = index.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (id_col, n_col, sym_col) = (col("id"), col("N"), col("symmetric"));
    let mut count = 0;
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let path = data
            .join("latency/matrices")
            .join(format!("{}.csv", f[id_col]));
        let m = read_matrix(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            m.len(),
            f[n_col].parse::<usize>().unwrap(),
            "{}",
            path.display()
        );
        assert_eq!(m.present(), m.len() * (m.len() - 1), "{}", path.display());
        if f[sym_col] == "yes" {
            assert_eq!(m.max_asymmetry(), 0.0, "{}", path.display());
        }
        count += 1;
    }
    assert!(count >= 13);
}

#[test]
fn reads_shared_mct_files() {
    let Some(data) = shared_data() else { return };
    for name in ["lpdxeon2680.mct", "lpdpc4.mct"] {
        let shared = read_mct(&data.join("mct").join(name)).unwrap();
        assert_eq!(shared, read_mct(&fixture(name)).unwrap());
    }
}

#[test]
fn a_zero_latency_is_kept_as_below_resolution() {
    // core-to-core-latency prints 0 for a pair below its timer's resolution.
    let m = read_matrix(&fixture("kc-core2quad-q9550.csv")).unwrap();
    assert_eq!(m.len(), 4);
    assert_eq!(m.get(0, 1), Some(0.0));
    assert_eq!(m.get(1, 0), Some(0.0));
    // Five significant digits: the tables' stated resolution.
    assert_eq!(m.get(2, 3), Some(26.667));
}

// ---------------------------------------------------------------------------------------
// Bad inputs

/// Every file of tests/bad: the 1-based line of the error and a phrase of its message.
const BAD: &[(&str, usize, &str)] = &[
    ("empty.csv", 1, "empty file"),
    ("blank.csv", 1, "empty file"),
    ("one.csv", 1, "at least 2"),
    ("nan.csv", 2, "NaN"),
    ("inf.csv", 3, "infinite"),
    ("negative.csv", 2, "negative latency"),
    ("huge.csv", 3, "implausibly large"),
    ("text.csv", 1, "not a number: \"This is not a matrix.\""),
    ("header.csv", 1, "not a number: \"cpu0\""),
    ("nonsquare.csv", 1, "must be square"),
    ("ragged.csv", 3, "row 3 has 1 field"),
    ("too_many_fields.csv", 3, "must be square"),
    ("blank_middle.csv", 3, "blank line"),
    ("empty_context.csv", 3, "context 2"),
    ("diagonal.csv", 1, "diagonal"),
    ("binary.csv", 2, "binary data, not a text file"),
    ("nul.csv", 2, "binary data"),
    ("long_token.csv", 2, "not a number"),
    ("semicolons.csv", 3, "separated by commas"),
    ("empty.mct", 1, "empty file"),
    ("bad_header.mct", 1, "bad header"),
    ("bad_smt.mct", 1, "SMT must be 0 or 1"),
    ("no_host.mct", 1, "host name"),
    ("huge_hwcs.mct", 1, "up to 4096 contexts"),
    (
        "truncated.mct",
        30,
        "needs 64 `x y latency` triples (#HWCs 8), only 29 are complete",
    ),
    ("truncated_section.mct", 69, "`#Mem_latencies 1` needs 8"),
    ("unknown_section.mct", 6, "unknown section \"#Mem_foo\""),
    ("duplicate_pair.mct", 4, "(0, 1) appears twice"),
    ("out_of_range.mct", 4, "context 2 is out of range"),
    ("zero_latency.mct", 3, "must be positive"),
    ("negative.mct", 4, "negative latency"),
    ("nan.mct", 3, "NaN"),
    ("text_latency.mct", 3, "not a number: \"fast\""),
    ("extra_triples.mct", 6, "more latency triples"),
    ("bw_not_multiple.mct", 6, "multiple of 2"),
    ("bad_cache.mct", 8, "size the OS reports"),
    ("bad_power.mct", 7, "only 3 are there"),
    ("power_state.mct", 7, "unknown power state \"turbo\""),
    (
        "duplicate_section.mct",
        7,
        "appears twice (first at line 6)",
    ),
    ("binary.mct", 1, "binary data, not a text file"),
    ("malformed.json", 3, "key must be a string"),
    ("not_json.json", 1, "a description is a JSON object"),
    ("truncated.json", 3, "EOF"),
];

fn read_any(path: &Path) -> Result<(), ModelError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => read_matrix(path).map(drop),
        Some("mct") => read_mct(path).map(drop),
        Some("json") => read_description(path).map(drop),
        other => panic!("unexpected file {} ({other:?})", path.display()),
    }
}

#[test]
fn bad_inputs_give_errors_naming_file_and_line() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut listed: Vec<String> = BAD.iter().map(|b| b.0.to_string()).collect();
    listed.sort();
    assert_eq!(
        names, listed,
        "every file of tests/bad must be listed in BAD, and only those"
    );
    for &(name, line, needle) in BAD {
        let path = dir.join(name);
        let result = std::panic::catch_unwind(|| read_any(&path));
        let err = match result {
            Ok(Ok(())) => panic!("{name}: accepted"),
            Ok(Err(e)) => e,
            Err(_) => panic!("{name}: the reader panicked"),
        };
        let shown = err.to_string();
        assert!(shown.contains(name), "{name}: {shown}");
        assert!(
            shown.contains(&format!(":{line}: ")),
            "{name}: expected line {line}: {shown}"
        );
        match &err {
            ModelError::Parse {
                path: p,
                line: l,
                message,
            } => {
                assert_eq!(p, &path);
                assert_eq!(*l, line, "{name}: {message}");
                assert!(
                    message.contains(needle),
                    "{name}: expected {needle:?} in {message:?}"
                );
                assert!(message.len() < 400, "{name}: message too long: {message}");
            }
            other => panic!("{name}: not a parse error: {other:?}"),
        }
    }
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let path = Path::new("/nonexistent/topoprobe/missing.csv");
    for r in [
        read_matrix(path).map(drop),
        read_mct(path).map(drop),
        read_description(path).map(drop),
    ] {
        let e = r.unwrap_err();
        assert!(matches!(e, ModelError::Io { .. }));
        assert!(e.to_string().contains("missing.csv"));
    }
}

// ---------------------------------------------------------------------------------------
// Descriptions (JSON)

fn xeon() -> Topology {
    let f = read_mct(&fixture("lpdxeon2680.mct")).unwrap();
    topology_of(&f, 2)
}

fn grouped() -> Topology {
    // One socket, two groups of two SMT cores, with unresolved levels and a spread table.
    let mut b = TopologyBuilder::new(vec![0, 1, 2, 3, 4, 5, 6, 7], LatencyUnit::Ns);
    let cores: Vec<_> = (0..4)
        .map(|c| b.core(vec![ContextId(c), ContextId(c + 4)]))
        .collect();
    let g0 = b.group(
        vec![Member::Core(cores[0]), Member::Core(cores[1])],
        Evidence::LatencyGap,
    );
    let g1 = b.group(
        vec![Member::Core(cores[2]), Member::Core(cores[3])],
        Evidence::Profile,
    );
    let s = b.socket(vec![Member::Group(g0), Member::Group(g1)]);
    b.node(Some(0), Some(1 << 34), vec![s]);
    let lat = LatencyMatrix::from_fn(8, |a, b| {
        Some(if a % 4 == b % 4 {
            7.25
        } else if a % 4 / 2 == b % 4 / 2 {
            20.0 + (a + b) as f64 / 3.0
        } else {
            80.1
        })
    });
    b.latencies(lat.clone(), lat.symmetrized());
    b.spread(LatencyMatrix::from_fn(8, |_, _| Some(0.01)));
    b.symmetrization("mean of both directions");
    b.validation(topoprobe_model::Validation {
        unresolved: vec![Unresolved {
            level: StructureLevel::Node,
            reason: "no memory measurement".into(),
        }],
        ..Default::default()
    });
    b.build().unwrap()
}

/// Two topologies with the same contexts, cores, groups, sockets and nodes, and latency
/// tables equal to 4 significant digits.
fn assert_same_structure(a: &Topology, b: &Topology) {
    assert_eq!(a.contexts(), b.contexts());
    assert_eq!(a.cores(), b.cores());
    let members = |t: &Topology| -> Vec<_> {
        t.groups()
            .iter()
            .map(|g| (g.members.clone(), g.contexts.clone()))
            .collect()
    };
    assert_eq!(members(a), members(b));
    assert_eq!(a.sockets(), b.sockets());
    assert_eq!(a.nodes(), b.nodes());
    let n = a.contexts().len();
    for i in 0..n {
        for j in 0..n {
            let (x, y) = (
                a.context_latency(ContextId(i), ContextId(j)),
                b.context_latency(ContextId(i), ContextId(j)),
            );
            match (x, y) {
                (Some(x), Some(y)) => assert!((x - y).abs() <= 1e-3 * y.abs().max(1.0), "{x} {y}"),
                (x, y) => assert_eq!(x, y),
            }
        }
    }
}

#[test]
fn json_round_trip_with_sections() {
    for topo in [xeon(), grouped()] {
        let text = to_json_string(&topo);
        assert!(text.ends_with('\n'));
        assert!(text.contains("\"format\": \"topoprobe/1\""));
        let back = from_json_str(&text, Path::new("t.json")).unwrap();
        // Figures are rounded to 4 significant digits when written: the structure comes
        // back whole, and a second round trip changes nothing.
        assert_same_structure(&back, &topo);
        assert_eq!(to_json_string(&back), text);
        assert_eq!(from_json_str(&text, Path::new("t.json")).unwrap(), back);
    }
    assert!(xeon().power().is_some() && xeon().memory().is_some() && xeon().caches().is_some());
}

#[test]
fn write_description_is_atomic_and_creates_directories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/host.json");
    let topo = xeon();
    write_description(&topo, &path).unwrap();
    assert_same_structure(&read_description(&path).unwrap(), &topo);
    // Overwrite with another description: the file is replaced whole.
    let other = grouped();
    write_description(&other, &path).unwrap();
    assert_same_structure(&read_description(&path).unwrap(), &other);
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("host.json")]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o600, 0o600);
    }
}

#[test]
fn write_description_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let target = file.join("host.json");
    let e = write_description(&grouped(), &target).unwrap_err();
    assert!(matches!(e, ModelError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("plain"), "{e}");
    // A directory in the way of the target.
    let target = dir.path().join("taken");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("inside"), "x").unwrap();
    let e = write_description(&grouped(), &target).unwrap_err();
    assert!(e.to_string().contains("taken"), "{e}");
}

fn edited(topo: &Topology, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&to_json_string(topo)).unwrap();
    edit(&mut v);
    serde_json::to_string_pretty(&v).unwrap()
}

fn structure_error(text: &str) -> String {
    match from_json_str(text, Path::new("edited.json")) {
        Err(ModelError::Parse {
            path,
            line,
            message,
        }) => {
            assert_eq!(path, Path::new("edited.json"));
            assert_eq!(line, 0, "{message}");
            message
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn hand_edited_inconsistent_descriptions_are_rejected() {
    let topo = grouped();
    // A context listed in two cores.
    let text = edited(&topo, |v| {
        v["cores"][1]["contexts"]
            .as_array_mut()
            .unwrap()
            .push(0.into());
    });
    let m = structure_error(&text);
    assert!(m.contains("context 0 is in core 0 and core 1"), "{m}");
    // A stale derived field: a context's socket.
    let text = edited(&xeon(), |v| {
        v["contexts"][3]["socket"] = 1.into();
    });
    let m = structure_error(&text);
    assert!(m.contains("context 3 disagrees with the structure"), "{m}");
    // A stale group content.
    let text = edited(&topo, |v| {
        v["groups"][0]["cores"] = serde_json::json!([0]);
    });
    let m = structure_error(&text);
    assert!(m.contains("group 0 disagrees"), "{m}");
    // Stale facts.
    let text = edited(&topo, |v| {
        v["facts"]["smt"]["value"] = false.into();
    });
    assert!(structure_error(&text).contains("facts disagree"));
}

#[test]
fn malformed_description_errors_carry_the_line() {
    let text = to_json_string(&grouped());
    // An unknown unit.
    let broken = text.replacen("\"units\": \"ns\"", "\"units\": \"furlongs\"", 1);
    let line = broken.lines().position(|l| l.contains("furlongs")).unwrap() + 1;
    match from_json_str(&broken, Path::new("b.json")) {
        Err(ModelError::Parse {
            line: l, message, ..
        }) => {
            assert_eq!(l, line, "{message}");
            assert!(message.contains("unknown variant `furlongs`"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A non-square latency table is a shape error at its line.
    let broken = edited(&grouped(), |v| {
        v["latency"]["raw"][2].as_array_mut().unwrap().pop();
    });
    match from_json_str(&broken, Path::new("b.json")) {
        Err(ModelError::Parse { line, message, .. }) => {
            assert!(line > 1, "{message}");
            assert!(message.contains("square"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Partition TSV

#[test]
fn partition_of_xeon_parses_as_the_scorer_expects() {
    let topo = xeon();
    let text = partition_string(&topo);
    let mut out = Vec::new();
    write_partition(&topo, &mut out).unwrap();
    assert_eq!(out, text.as_bytes());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "cpu\tcore\tsocket\tnode\tgroups");
    assert_eq!(lines.len(), 41);
    assert_eq!(lines[1], "0\t0\t0\t0\t");
    assert_eq!(lines[11], "10\t10\t1\t1\t");
    assert_eq!(lines[21], "20\t0\t0\t0\t");
    assert_eq!(lines[40], "39\t19\t1\t1\t");
    let g = partition_string(&grouped());
    assert!(g.starts_with("cpu\t"), "{g}");
    assert!(
        g.ends_with("\n# unresolved: node: no memory measurement\n"),
        "{g}"
    );
    assert!(g.contains("\n5\t1\t0\t0\t0\n"), "{g}");
    assert!(g.contains("\n6\t2\t0\t0\t1\n"), "{g}");
}

// ---------------------------------------------------------------------------------------
// Properties

fn matrix_strategy() -> impl Strategy<Value = LatencyMatrix> {
    (2usize..40).prop_flat_map(|n| {
        let value = prop_oneof![
            (1u32..1_000_000).prop_map(|x| f64::from(x) / 1000.0),
            1e-9f64..1e12,
            (1u32..1000).prop_map(f64::from),
        ];
        let pair = (
            prop::bool::weighted(0.8),
            prop::bool::ANY,
            value.clone(),
            value,
        );
        prop::collection::vec(pair, n * (n - 1) / 2).prop_map(move |pairs| {
            let mut m = LatencyMatrix::empty(n);
            let mut k = 0;
            for a in 0..n {
                for b in a + 1..n {
                    let (present, symmetric, x, y) = pairs[k];
                    k += 1;
                    if present {
                        m.set(a, b, Some(x));
                        m.set(b, a, Some(if symmetric { x } else { y }));
                    }
                }
            }
            // Every context needs at least one latency.
            for a in 0..n {
                if m.row(a).all(|v| v.is_none()) {
                    let b = (a + 1) % n;
                    m.set(a, b, Some(5.0));
                    m.set(b, a, Some(5.0));
                }
            }
            m
        })
    })
}

fn mct_soup() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("#h".to_string()),
        Just("#HWCs".to_string()),
        Just("#Nodes".to_string()),
        Just("SMT".to_string()),
        Just("#Mem_latencies".to_string()),
        Just("#Mem_bw-READ".to_string()),
        Just("#Mem_bw1-WRITE".to_string()),
        Just("#Cache_levels".to_string()),
        Just("Cache_level".to_string()),
        Just("Latency".to_string()),
        Just("SizeOS".to_string()),
        Just("SizeEst".to_string()),
        Just("#Power_measurements".to_string()),
        Just("Power_sockt_0_idle".to_string()),
        Just("Power_total_1_allhwc".to_string()),
        Just("Power_sockt_99999999999999999999_idle".to_string()),
        (0u64..5).prop_map(|x| x.to_string()),
        any::<u64>().prop_map(|x| x.to_string()),
        any::<f64>().prop_map(|x| x.to_string()),
        "[ -~]{0,6}",
    ];
    let sep = prop_oneof![Just(" "), Just("\n"), Just("\t"), Just("")];
    prop::collection::vec((token, sep), 0..80).prop_map(|v| {
        let mut s = String::from("#h #HWCs 2 #Nodes 1 SMT 1\n0 0 0\n0 1 9\n1 0 9\n1 1 0\n");
        for (t, sep) in v {
            s.push_str(&t);
            s.push_str(sep);
        }
        s
    })
}

fn mutated_fixture() -> impl Strategy<Value = Vec<u8>> {
    let original = std::fs::read(fixture("lpdpc4.mct")).unwrap();
    let len = original.len();
    (0..=len, prop::collection::vec((0..len, any::<u8>()), 0..4)).prop_map(move |(cut, edits)| {
        let mut bytes = original.clone();
        for (at, b) in edits {
            bytes[at] = b;
        }
        bytes.truncate(cut);
        bytes
    })
}

proptest! {
    #[test]
    fn csv_parser_never_panics_on_strings(s in "\\PC*") {
        let _ = parse_matrix(&s, Path::new("p.csv"));
    }

    #[test]
    fn csv_parser_never_panics_on_csvish_text(
        s in "[0-9eE.,\\-+ \\r\\n]{0,200}|([0-9,]{0,12}\n){0,12}"
    ) {
        let _ = parse_matrix(&s, Path::new("p.csv"));
    }

    #[test]
    fn parsers_never_panic_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let s = String::from_utf8_lossy(&bytes);
        let _ = parse_matrix(&s, Path::new("p.csv"));
        let _ = parse_mct(&s, Path::new("p.mct"));
        let _ = from_json_str(&s, Path::new("p.json"));
    }

    #[test]
    fn mct_parser_never_panics_on_strings(s in "\\PC*") {
        let _ = parse_mct(&s, Path::new("p.mct"));
    }

    #[test]
    fn mct_parser_never_panics_on_token_soup(s in mct_soup()) {
        if let Err(e) = parse_mct(&s, Path::new("p.mct")) {
            let ok = matches!(e, ModelError::Parse { line, .. } if line >= 1);
            prop_assert!(ok, "{}", e);
        }
    }

    #[test]
    fn mct_parser_never_panics_on_mutated_files(bytes in mutated_fixture()) {
        let s = String::from_utf8_lossy(&bytes);
        if let Err(e) = parse_mct(&s, Path::new("p.mct")) {
            let ok = matches!(e, ModelError::Parse { line, .. } if line >= 1);
            prop_assert!(ok, "{}", e);
        }
    }

    #[test]
    fn matrices_round_trip(m in matrix_strategy()) {
        let mut out = Vec::new();
        write_matrix(&m, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let back = parse_matrix(&text, Path::new("r.csv"));
        prop_assert_eq!(back.ok(), Some(m));
    }
}

#[test]
fn parses_a_4096_matrix() {
    let n = 4096;
    let mut text = String::with_capacity(n * n * 5);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for a in 0..n {
        for b in 0..n {
            if b > 0 {
                text.push(',');
            }
            if a != b {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let _ = write!(text, "{}", 10 + (state >> 33) % 990);
            }
        }
        text.push('\n');
    }
    let m = parse_matrix(&text, Path::new("big.csv")).unwrap();
    assert_eq!(m.len(), n);
    assert_eq!(m.present(), n * (n - 1));
    assert!(m.get(4095, 0).is_some_and(|v| (10.0..1000.0).contains(&v)));
}
