//! Regressions of the first-user hardening pass: limits checked before allocating, `.mct`
//! sections that disagree with the header, byte-order marks, JSON given where a matrix is
//! expected, duplicate OS ids and readable error texts.

use std::path::Path;

use topoprobe_model::format::{csv, json, mct, read_input};
use topoprobe_model::limits::{MAX_CONTEXTS, MAX_FILE_BYTES};
use topoprobe_model::{parse_cpu_list, ModelError};

const SMALL: &str = "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 10\n1 0 10\n1 1 0\n";

fn parse_error(r: Result<impl std::fmt::Debug, ModelError>) -> (usize, String) {
    match r {
        Err(ModelError::Parse { line, message, .. }) => (line, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

fn description() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let m = csv::read_matrix(&dir.join("tests/data/nv-i7-6700k.csv")).unwrap();
    let mut b =
        topoprobe_model::TopologyBuilder::new((0..8).collect(), topoprobe_model::LatencyUnit::Ns);
    let cores: Vec<_> = (0..4)
        .map(|c| {
            b.core(vec![
                topoprobe_model::ContextId(2 * c),
                topoprobe_model::ContextId(2 * c + 1),
            ])
        })
        .collect();
    b.socket(
        cores
            .into_iter()
            .map(topoprobe_model::Member::Core)
            .collect(),
    );
    b.latencies(m.clone(), m);
    json::to_json_string(&b.build().unwrap())
}

/// Row 1: `#Nodes 100000000` in a tiny file is refused at once, naming the limit.
#[test]
fn mct_with_a_hundred_million_nodes_is_refused() {
    let text = SMALL.replace("#Nodes 1", "#Nodes 100000000");
    let (line, message) = parse_error(mct::parse_mct(&text, Path::new("big.mct")));
    assert_eq!(line, 1);
    assert!(
        message.contains("#Nodes 100000000") && message.contains("1024"),
        "{message}"
    );
    let text = SMALL.replace("#Nodes 1", "#Nodes 1000000");
    assert!(mct::parse_mct(&text, Path::new("mid.mct")).is_err());
}

/// Row 2: a memory section whose node count disagrees with `#Nodes` is an error naming it.
#[test]
fn mct_sections_must_agree_with_the_header() {
    let text = format!("{SMALL}#Mem_latencies 2\n0 0 1\n0 1 1\n1 0 1\n1 1 1\n");
    let (line, message) = parse_error(mct::parse_mct(&text, Path::new("x.mct")));
    assert_eq!(line, 6);
    assert!(
        message.contains("`#Mem_latencies 2`") && message.contains("#Nodes 1"),
        "{message}"
    );
    let text = format!(
        "{SMALL}#Mem_bw-READ 1\n0 0 1\n#Power_measurements 1\nPower_sockt_0_idle 1 2 3 4 5\n\
         Power_sockt_1_idle 1 2 3 4 5\nPower_total_2_idle 1 2 3 4 5\n"
    );
    let (_, message) = parse_error(mct::parse_mct(&text, Path::new("x.mct")));
    assert!(
        message.contains("#Power_measurements") && message.contains("#Mem_bw-READ"),
        "{message}"
    );
}

/// Row 15: two contexts with one OS CPU number are refused, naming both and the number.
#[test]
fn duplicate_os_ids_are_refused() {
    let text = description();
    let dup = text.replacen("\"os_id\": 1,", "\"os_id\": 0,", 1);
    assert_ne!(dup, text, "the fixture names os_id 1");
    let (_, message) = parse_error(json::from_json_str(&dup, Path::new("d.json")));
    assert!(
        message.contains("contexts 0 and 1") && message.contains("os_id) 0"),
        "{message}"
    );
}

/// An OS CPU number above the CPU limit (1 048 575) or a node number above Linux's is
/// refused (a 3 KB file with `os_id` 4294967295 once made `place --format mask` write 1 GiB).
#[test]
fn os_ids_above_the_limits_are_refused() {
    let text = description();
    for big in ["4294967295", "1048576"] {
        let bad = text.replacen("\"os_id\": 1,", &format!("\"os_id\": {big},"), 1);
        assert_ne!(bad, text, "the fixture names os_id 1");
        let (_, message) = parse_error(json::from_json_str(&bad, Path::new("d.json")));
        assert!(
            message.contains(big) && message.contains("1048575"),
            "{message}"
        );
    }
    let ok = text.replacen("\"os_id\": 1,", "\"os_id\": 1048575,", 1);
    assert!(json::from_json_str(&ok, Path::new("d.json")).is_ok());
}

/// Figures a description states are checked for their range: a level whose minimum is
/// above its maximum, a median over more pairs than the machine has, a confidence of 7.5,
/// a latency of 1e308.
#[test]
fn stated_figures_out_of_range_are_refused() {
    let text = description();
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    v["levels"] = serde_json::json!([
        {"id": 1, "role": "group", "min": 10.0, "median": 20.0, "max": 30.0, "count": 28}
    ]);
    let load = |v: &serde_json::Value| {
        json::from_json_str(
            &serde_json::to_string(v).expect("json"),
            Path::new("d.json"),
        )
    };
    if let Err(e) = load(&v) {
        panic!("the fixture loads: {e:?}");
    }
    let with = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut w = v.clone();
        edit(&mut w);
        let (_, message) = parse_error(load(&w));
        message
    };
    let m = with(&|w| {
        w["levels"][0]["min"] = 100.0.into();
        w["levels"][0]["max"] = 1.0.into();
    });
    assert!(m.contains("latency level 1") && m.contains("min"), "{m}");
    let m = with(&|w| w["levels"][0]["count"] = 77.into());
    assert!(m.contains("77 pairs") && m.contains("28"), "{m}");
    let m = with(&|w| {
        w["validation"]["confidence"] = serde_json::json!([
            {"level": "socket", "confidence": 7.5, "basis": "crafted"}
        ]);
    });
    assert!(m.contains("7.5") && m.contains("between 0 and 1"), "{m}");
    // Refused as it is read, before it is stored (an `f32` entry cannot hold it).
    let m = with(&|w| w["latency"]["raw"][0][1] = 1e308.into());
    assert!(m.contains("entry [0][1]") && m.contains("1e308"), "{m}");
}

/// A latency row longer than the context limit, or rows longer than the first, and lists
/// of more contexts than the limit are refused while reading, before the table grows
/// (a 200 MB row once took 1.8 GB before its refusal).
#[test]
fn oversized_tables_and_lists_are_refused_while_reading() {
    let text = description();
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let long_row: Vec<f64> = vec![1.0; MAX_CONTEXTS + 1];
    v["latency"]["raw"][1] = serde_json::json!(long_row);
    let (_, m) = parse_error(json::from_json_str(
        &serde_json::to_string(&v).expect("json"),
        Path::new("d.json"),
    ));
    assert!(m.contains("latency row longer than 8"), "{m}");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    v["latency"]["raw"] = serde_json::json!(vec![vec![1.0; MAX_CONTEXTS + 1]; 2]);
    let (_, m) = parse_error(json::from_json_str(
        &serde_json::to_string(&v).expect("json"),
        Path::new("d.json"),
    ));
    assert!(m.contains("longer than 4096"), "{m}");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let context = v["contexts"][0].clone();
    v["contexts"] = serde_json::json!(vec![context; MAX_CONTEXTS + 1]);
    let (_, m) = parse_error(json::from_json_str(
        &serde_json::to_string(&v).expect("json"),
        Path::new("d.json"),
    ));
    assert!(m.contains("more than 4096"), "{m}");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    v["latency"]["raw"] = serde_json::json!([[null, 1.0], [1.0, null], [1.0, 1.0]]);
    let (_, m) = parse_error(json::from_json_str(
        &serde_json::to_string(&v).expect("json"),
        Path::new("d.json"),
    ));
    assert!(m.contains("must be square"), "{m}");
}

/// The memory figures of a description name nodes below Linux's limit: a bandwidth to
/// node 4294967295 (found by the description generator of `fuzz/`) once made the hwloc
/// XML and the text views count four billion nodes.
#[test]
fn memory_figures_of_nodes_above_the_limit_are_refused() {
    let text = description();
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let entry = |node: u64| {
        serde_json::json!({"socket": 0, "node": node, "access": "read",
                           "threads": "all_contexts", "gbps": 20.0})
    };
    let load = |v: &serde_json::Value| {
        json::from_json_str(
            &serde_json::to_string(v).expect("json"),
            Path::new("d.json"),
        )
    };
    v["memory"] = serde_json::json!({"latency": [], "bandwidth": [entry(0), entry(1023)]});
    if let Err(e) = load(&v) {
        panic!("nodes below the limit load: {e:?}");
    }
    for big in [1024, 4_294_967_295] {
        v["memory"]["bandwidth"][1] = entry(big);
        let (_, m) = parse_error(load(&v));
        assert!(
            m.contains("memory.bandwidth[1]") && m.contains(&big.to_string()) && m.contains("1024"),
            "{m}"
        );
    }
}

/// Row 17: a UTF-8 byte-order mark is skipped in JSON and `.mct` as in CSV.
#[test]
fn byte_order_marks_are_skipped() {
    let text = format!("\u{feff}{}", description());
    assert!(json::from_json_str(&text, Path::new("d.json")).is_ok());
    let text = format!("\u{feff}{SMALL}");
    assert_eq!(
        mct::parse_mct(&text, Path::new("x.mct")).unwrap().contexts,
        2
    );
}

/// Row 18: JSON given as a matrix says so; non-object JSON says what a description is.
#[test]
fn json_where_a_matrix_is_expected_says_so() {
    let (line, message) = parse_error(csv::parse_matrix(&description(), Path::new("d.json")));
    assert_eq!(line, 1);
    assert!(
        message.contains("this is JSON") && message.contains("--topology"),
        "{message}"
    );
    let (_, message) = parse_error(json::from_json_str("[1, 2]", Path::new("a.json")));
    assert!(
        message.contains("JSON object") && message.contains("array"),
        "{message}"
    );
}

/// Row 19: no `file:0:`, no Rust debug dumps of model types.
#[test]
fn error_texts_are_readable() {
    let text = description().replacen("\"socket\": 0", "\"socket\": 1", 1);
    let e = json::from_json_str(&text, Path::new("d.json"))
        .unwrap_err()
        .to_string();
    assert!(!e.contains("d.json:0:"), "{e}");
    assert!(!e.contains("HwContext") && !e.contains("ContextId("), "{e}");
    assert!(
        e.starts_with("d.json: inconsistent description: context 0"),
        "{e}"
    );
    assert!(
        e.contains("`socket` is 1 in the file, 0 from the structure"),
        "{e}"
    );
}

/// Row 22: a file without end (`/dev/zero`) is refused at its first bytes; a large one at
/// the size limit, before it is read.
#[test]
fn endless_and_huge_inputs_are_refused_early() {
    if Path::new("/dev/zero").exists() {
        // Refused at its first byte, a NUL on line 1: read to the size limit, the error
        // would be the limit's, at line 0 (no clock is read: how fast this machine reads
        // is not the question).
        let (line, message) = parse_error(read_input(Path::new("/dev/zero")));
        assert!(message.contains("binary data"), "{message}");
        assert_eq!(line, 1, "{message}");
    }
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.csv");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(MAX_FILE_BYTES + 1).unwrap();
    let (line, message) = parse_error(csv::read_matrix(&big));
    assert_eq!(line, 0);
    assert!(
        message.contains("1 GiB") && message.contains("LIMITS"),
        "{message}"
    );
    let e = csv::read_matrix(&big).unwrap_err().to_string();
    assert!(!e.contains(":0:"), "{e}");
    let rows = ",\n".repeat(MAX_CONTEXTS + 1);
    let (_, message) = parse_error(csv::parse_matrix(&rows, Path::new("rows.csv")));
    assert!(message.contains("4096"), "{message}");
}

/// A CPU list that repeats a large range holds each CPU once while it is parsed.
#[test]
fn repeated_cpu_ranges_stay_small() {
    let list = vec!["0-1048575"; 50].join(",");
    assert_eq!(parse_cpu_list(&list).unwrap().len(), 1 << 20);
}

/// One element with 300 000 attributes (3.5 MB, far under the file, element and
/// attribute limits) is refused by its own count before the parser sees it: the parser
/// checks each attribute against the earlier ones, in time that grows with the square of
/// the count. Comments, quoted values and the document type do not count.
#[test]
fn an_element_with_a_huge_count_of_attributes_is_refused_before_parsing() {
    use topoprobe_model::format::hwloc_xml;
    use topoprobe_model::limits::MAX_XML_ELEMENT_ATTRIBUTES;
    let attrs: String = (0..300_000).map(|i| format!(" a{i}=\"1\"")).collect();
    let xml = format!(
        "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object{attrs}/>\n</topology>\n"
    );
    let (line, message) = parse_error(hwloc_xml::read::read_os_view(&xml, Path::new("wide.xml")));
    assert_eq!(line, 3, "{message}");
    assert!(
        message.contains(&format!(
            "more than {MAX_XML_ELEMENT_ATTRIBUTES} attributes"
        )),
        "{message}"
    );
    // At the limit, the count is no obstacle (the file fails later, for what it lacks).
    let attrs: String = (0..MAX_XML_ELEMENT_ATTRIBUTES)
        .map(|i| format!(" a{i}=\"x=y>\"")) // `=` and `>` inside values
        .collect();
    let xml = format!(
        "<!DOCTYPE topology [ <!ENTITY a \"b=c\"> ]>\n<!-- {} -->\n<topology version=\"2.0\"><object{attrs}/></topology>\n",
        "k=v ".repeat(1000)
    );
    let (_, message) = parse_error(hwloc_xml::read::read_os_view(&xml, Path::new("ok.xml")));
    assert!(!message.contains("attributes (the limit"), "{message}");
}

/// A matrix of millions of lines (blank or not) is refused at the row past the limit,
/// and its rows are not listed first.
#[test]
fn a_matrix_with_millions_of_rows_is_refused_at_the_row_past_the_limit() {
    let rows = "1\n".repeat(3_000_000);
    let (line, message) = parse_error(csv::parse_matrix(&rows, Path::new("tall.csv")));
    assert_eq!(line, MAX_CONTEXTS + 1, "{message}");
    assert!(message.contains("more than 4096 rows"), "{message}");
    let blank = format!(",1\n1,\n{}", "\n".repeat(3_000_000));
    csv::parse_matrix(&blank, Path::new("trailing.csv")).expect("blank lines may end a file");
    let (line, message) = parse_error(csv::parse_matrix(",1\n\n1,\n", Path::new("gap.csv")));
    assert_eq!(line, 2, "{message}");
}
