//! hwloc both ways, checked with hwloc's own tools (`scripts/setup.sh` installs them; the
//! tests that need them say so and pass without them): `show --format hwloc-xml` gives
//! lstopo caches, distances and memory attributes; `--format hwloc-annotate` adds the
//! figures to lstopo's XML of this machine; lstopo's XML is a `--topology` input of
//! `place`, `run`, `show` and `report`. Also: how a `--topology` file is recognized.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{arg, data, run, run_fail, tmp};

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = tmp().join("hwloc").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("making a scratch directory");
    dir
}

/// Whether hwloc's command-line tools are installed; prints why a test is skipped.
fn hwloc(test: &str) -> bool {
    let found = ["lstopo-no-graphics", "hwloc-annotate"].iter().all(|t| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !found {
        eprintln!("{test}: skipped: hwloc's tools (lstopo-no-graphics, hwloc-annotate) are not installed (scripts/setup.sh installs them)");
    }
    found
}

/// Runs a tool: standard output, after asserting success and an empty standard error.
fn tool(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .expect("running a tool");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd} {args:?} failed: {err}");
    assert!(err.trim().is_empty(), "{cmd} {args:?} complained: {err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The measured description of the 16-vCPU Intel Xeon guest kept in the repository.
fn machine16(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/machines/intel-xeon-vm-16cpu-2026-11-26")
        .join(file)
}

/// lstopo's XML of this machine, written into `dir`.
fn this_machine_xml(dir: &Path) -> PathBuf {
    let xml = dir.join("lstopo.xml");
    let text = tool("lstopo-no-graphics", &["--of", "xml"]);
    std::fs::write(&xml, text).expect("writing lstopo's XML");
    xml
}

/// `show --format hwloc-xml` of `input`, written into `dir`.
fn export(input: &Path, dir: &Path) -> PathBuf {
    let xml = dir.join("export.xml");
    let (code, _, err) = run(&[
        "show",
        "--topology",
        arg(input),
        "--format",
        "hwloc-xml",
        "-o",
        arg(&xml),
    ]);
    assert_eq!(code, 0, "{err}");
    xml
}

#[test]
fn the_ivy_mct_exports_caches_distances_and_memory_attributes_lstopo_reads() {
    if !hwloc("ivy export") {
        return;
    }
    let dir = scratch("the_ivy_mct_exports_caches_distances_and_memory_attributes_lstopo_reads");
    let xml = export(&data("lpdxeon2680.mct"), &dir);
    let view = tool("lstopo-no-graphics", &["--input", arg(&xml)]);
    // 2 sockets × 10 cores × 2 SMT; libmctop's sizes: L3 22 MiB measured, L2 256 KiB.
    assert_eq!(view.matches("L3 L#").count(), 2, "{view}");
    assert_eq!(view.matches("L2 L#").count(), 20, "{view}");
    assert_eq!(view.matches("L1d L#").count(), 20, "{view}");
    assert_eq!(view.matches("L1i L#").count(), 20, "{view}");
    assert!(view.contains("L3 L#0 (22MB)"), "{view}");
    assert!(view.contains("L2 L#0 (256KB) + L1d L#0 (32KB)"), "{view}");
    assert_eq!(view.matches("PU L#").count(), 40);
    let attrs = tool("lstopo-no-graphics", &["--input", arg(&xml), "--memattrs"]);
    // libmctop's 46.04 GB/s read bandwidth of socket 0 to node 0, in MiB/s; latencies in
    // cycles under topoprobe's own attribute.
    assert!(
        attrs.contains("NUMANode L#0 = 43912 from cpuset 0x3ff003ff"),
        "{attrs}"
    );
    let cycles = attrs
        .split("topoprobe-latency-cycles")
        .nth(1)
        .expect("the latency attribute");
    assert!(cycles.contains("NUMANode L#0 = 259"), "{attrs}");
    assert!(cycles.contains("NUMANode L#1 = 505"), "{attrs}");
    let distances = tool("lstopo-no-graphics", &["--input", arg(&xml), "--distances"]);
    assert!(
        distances.contains("name topoprobe-latency-cycles kind 6) between 40 PUs"),
        "{distances}"
    );
}

#[test]
fn a_measured_description_exports_its_measured_caches_bandwidth_and_latency() {
    if !hwloc("measured export") {
        return;
    }
    let dir = scratch("a_measured_description_exports_its_measured_caches_bandwidth_and_latency");
    let xml = export(&machine16("description.json"), &dir);
    let view = tool("lstopo-no-graphics", &["--input", arg(&xml)]);
    // The measured L3 (96 MiB of the OS's 300), one per socket; L1d, L1i, L2 per core.
    assert!(view.contains("L3 L#0 (96MB)"), "{view}");
    for cache in ["L2 L#15 (2048KB)", "L1d L#15 (48KB)", "L1i L#15 (32KB)"] {
        assert!(view.contains(cache), "{cache}: {view}");
    }
    let attrs = tool("lstopo-no-graphics", &["--input", arg(&xml), "--memattrs"]);
    // 14.69 GB/s read and 20.19 GB/s write (one thread), 130.2 ns.
    let after = |name: &str| {
        attrs
            .split(&format!("name `{name}'"))
            .nth(1)
            .and_then(|s| s.lines().nth(1))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        after("Bandwidth").contains("NUMANode L#0 = 14013 from cpuset 0x0000ffff"),
        "{attrs}"
    );
    assert!(after("WriteBandwidth").contains("= 19251"), "{attrs}");
    assert!(
        after("Latency").contains("NUMANode L#0 = 130 from cpuset 0x0000ffff"),
        "{attrs}"
    );
    let distances = tool("lstopo-no-graphics", &["--input", arg(&xml), "--distances"]);
    assert!(
        distances.contains("name topoprobe-latency-ps kind 6) between 16 PUs"),
        "{distances}"
    );
}

/// The OS numbers of the PUs of lstopo's XML.
fn pus(xml: &Path) -> Vec<u32> {
    tool("lstopo-no-graphics", &["--input", arg(xml), "--only", "pu"])
        .lines()
        .filter_map(|l| l.split("(P#").nth(1)?.split(')').next()?.parse().ok())
        .collect()
}

/// A description of this machine's CPUs (inferred from a made-up matrix, with the OS
/// numbers lstopo gives) with a memory section from its first CPU to node 0.
fn description_of_this_machine(dir: &Path, cpus: &[u32]) -> PathBuf {
    let n = cpus.len();
    let csv: String = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        String::new()
                    } else {
                        format!("{}", 40 + (i + j) % 7)
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
                + "\n"
        })
        .collect();
    let matrix = dir.join("m.csv");
    std::fs::write(&matrix, csv).expect("writing the matrix");
    let json = dir.join("m.json");
    let (code, _, err) = run(&["infer", "--from-matrix", arg(&matrix), "-o", arg(&json)]);
    assert_eq!(code, 0, "{err}");
    let mut d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("reading")).expect("JSON");
    for (c, &os) in d["contexts"]
        .as_array_mut()
        .expect("contexts")
        .iter_mut()
        .zip(cpus)
    {
        c["os_id"] = os.into();
    }
    d["memory"] = serde_json::json!({
        "latency": [{"context": 0, "node": 0, "latency": 101.6}],
        "bandwidth": [
            {"socket": 0, "node": 0, "access": "read", "threads": "single", "gbps": 12.5},
            {"socket": 0, "node": 0, "access": "write", "threads": "all_contexts", "gbps": 9.0}
        ]
    });
    std::fs::write(&json, d.to_string()).expect("writing the description");
    json
}

#[test]
fn hwloc_annotate_applies_the_annotate_script_to_this_machines_own_xml() {
    if !hwloc("annotate") {
        return;
    }
    let dir = scratch("hwloc_annotate_applies_the_annotate_script_to_this_machines_own_xml");
    let xml = this_machine_xml(&dir);
    let cpus = pus(&xml);
    if cpus.len() < 2 {
        eprintln!("annotate: skipped: this machine has one PU, and a latency matrix needs two");
        return;
    }
    let desc = description_of_this_machine(&dir, &cpus);
    let script = dir.join("annotate.sh");
    let (code, _, err) = run(&[
        "show",
        "--topology",
        arg(&desc),
        "--format",
        "hwloc-annotate",
        "-o",
        arg(&script),
    ]);
    assert_eq!(code, 0, "{err}");
    let out = dir.join("annotated.xml");
    tool("sh", &[arg(&script), arg(&xml), arg(&out)]);
    let distances = tool("lstopo-no-graphics", &["--input", arg(&out), "--distances"]);
    assert!(
        distances.contains(&format!(
            "name topoprobe-latency-ps kind 6) between {} PUs",
            cpus.len()
        )),
        "{distances}"
    );
    let attrs = tool("lstopo-no-graphics", &["--input", arg(&out), "--memattrs"]);
    // 12.5 GB/s = 11921 MiB/s; 101.6 ns rounds to 102.
    assert!(attrs.contains("= 11921 from cpuset"), "{attrs}");
    assert!(attrs.contains("= 8583 from cpuset"), "{attrs}");
    assert!(attrs.contains("= 102 from cpuset"), "{attrs}");
    // The machine's own objects are kept (the script only adds).
    let before = tool("lstopo-no-graphics", &["--input", arg(&xml)]);
    let after = tool("lstopo-no-graphics", &["--input", arg(&out)]);
    assert_eq!(before, after);
}

#[test]
fn the_annotate_script_refuses_the_xml_of_another_machine_and_writes_nothing() {
    if !hwloc("annotate, another machine") {
        return;
    }
    let dir = scratch("the_annotate_script_refuses_the_xml_of_another_machine_and_writes_nothing");
    let script = dir.join("ivy.sh");
    let (code, _, err) = run(&[
        "show",
        "--topology",
        arg(&data("lpdxeon2680.mct")),
        "--format",
        "hwloc-annotate",
        "-o",
        arg(&script),
    ]);
    assert_eq!(code, 0, "{err}");
    // A synthetic machine of 4 PUs: the Ivy's 40 are not there.
    let small = dir.join("small.xml");
    let text = tool_lenient(
        "lstopo-no-graphics",
        &["--input", "pack:1 core:4 pu:1", "--of", "xml"],
    );
    std::fs::write(&small, text).expect("writing");
    let out = dir.join("out.xml");
    let o = Command::new("sh")
        .args([arg(&script), arg(&small), arg(&out)])
        .output()
        .expect("running sh");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("pu P#4 is not in the input file"), "{err}");
    assert!(!out.exists());
}

/// Runs a tool that may print notes on standard error: standard output.
fn tool_lenient(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .expect("running a tool");
    assert!(out.status.success(), "{cmd} {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn place_reads_the_xml_lstopo_writes_here_and_on_the_16_vcpu_guest() {
    let dir = scratch("place_reads_the_xml_lstopo_writes_here_and_on_the_16_vcpu_guest");
    // The 16-vCPU guest's XML is in the repository: no hwloc needed.
    let (code, out, err) = run(&[
        "place",
        "--topology",
        arg(&machine16("lstopo.xml")),
        "--policy",
        "rr_core",
        "-n",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "0,1");
    assert!(
        err.contains("structure from hwloc XML, with no latency"),
        "{err}"
    );
    if !hwloc("place on this machine's XML") {
        return;
    }
    let xml = this_machine_xml(&dir);
    let n = pus(&xml).len().min(2).to_string();
    let (code, out, err) = run(&[
        "place",
        "--topology",
        arg(&xml),
        "--policy",
        "rr_core",
        "-n",
        &n,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim().split(',').count(),
        n.parse::<usize>().unwrap_or(0),
        "{out}"
    );
    assert!(err.contains("structure from hwloc XML"), "{err}");
}

#[test]
fn show_report_and_run_take_lstopo_xml_with_a_note() {
    let xml = machine16("lstopo.xml");
    let (code, out, err) = run(&["show", "--topology", arg(&xml)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("16 hardware contexts, 16 cores"), "{out}");
    assert!(out.contains("no latency measurements"), "{out}");
    // The OS's caches and their sharing.
    assert!(out.contains("1 instance of 16 contexts"), "{out}");
    assert!(
        err.contains("structure from hwloc XML, with no latency"),
        "{err}"
    );
    let (code, out, err) = run(&["report", "--topology", arg(&xml)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("<html"), "report");
    assert!(err.contains("structure from hwloc XML"), "{err}");
    let (code, _, err) = run(&[
        "run",
        "--topology",
        arg(&xml),
        "--policy",
        "rr_core",
        "-n",
        "1",
        "--",
        "true",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("structure from hwloc XML"), "{err}");
}

#[test]
fn lstopo_xml_round_trips_through_show_with_its_caches() {
    if !hwloc("round trip") {
        return;
    }
    let dir = scratch("lstopo_xml_round_trips_through_show_with_its_caches");
    let xml = export(&machine16("lstopo.xml"), &dir);
    let ours = tool("lstopo-no-graphics", &["--input", arg(&xml), "--no-io"]);
    let theirs = tool(
        "lstopo-no-graphics",
        &["--input", arg(&machine16("lstopo.xml")), "--no-io"],
    );
    let shape = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.trim_start().starts_with("Machine"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(shape(&ours), shape(&theirs));
}

#[test]
fn files_are_recognized_by_extension_then_content() {
    let dir = scratch("files_are_recognized_by_extension_then_content");
    // A .json file is a description, whatever it holds: JSON errors with line and column.
    let null = dir.join("null.json");
    std::fs::write(&null, "null\n").expect("writing");
    let err = run_fail(&["show", "--topology", arg(&null)], 1);
    assert!(
        err.contains("null.json:1: a description is a JSON object"),
        "{err}"
    );
    assert!(err.contains("this is JSON null"), "{err}");
    let comment = dir.join("comment.json");
    std::fs::write(&comment, "// a comment\n{}\n").expect("writing");
    let err = run_fail(&["show", "--topology", arg(&comment)], 1);
    assert!(err.contains("comment.json:1:"), "{err}");
    assert!(err.contains("not JSON: expected value (column 1)"), "{err}");
    assert!(!err.contains("matrix"), "{err}");
    // The partition table infer writes cannot be read back: said so, .tsv or not.
    let table = dir.join("m.tsv");
    let (code, _, err) = run(&[
        "infer",
        "--from-matrix",
        arg(&data("nv-i7-6700k.csv")),
        "-o",
        arg(&table),
    ]);
    assert_eq!(code, 0, "{err}");
    for name in ["m.tsv", "m.txt"] {
        let path = dir.join(name);
        if name != "m.tsv" {
            std::fs::copy(&table, &path).expect("copying");
        }
        let err = run_fail(&["show", "--topology", arg(&path)], 1);
        assert!(err.contains("is the partition table"), "{err}");
        assert!(err.contains("use the JSON description"), "{err}");
    }
    // .xml is hwloc XML: a clear error for other XML; without an extension, `<` is XML.
    let html = dir.join("page.xml");
    std::fs::write(&html, "<html></html>").expect("writing");
    let err = run_fail(&["show", "--topology", arg(&html)], 1);
    assert!(
        err.contains("page.xml:1: not an hwloc topology: the root element is <html>"),
        "{err}"
    );
    let bare = dir.join("lstopo-output");
    std::fs::copy(machine16("lstopo.xml"), &bare).expect("copying");
    let (code, out, err) = run(&["show", "--topology", arg(&bare)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("16 hardware contexts"), "{out}");
    // A matrix named .csv stays a matrix.
    let (code, _, err) = run(&["show", "--topology", arg(&data("nv-i7-6700k.csv"))]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn this_machines_export_has_the_caches_lstopo_sees_here() {
    if !hwloc("this machine's caches") {
        return;
    }
    // No description here: the OS's view, with the OS's caches and their sharing.
    let dir = scratch("this_machines_export_has_the_caches_lstopo_sees_here");
    let xml = dir.join("ours.xml");
    let (code, _, err) = common::run_in(&dir, &["show", "--format", "hwloc-xml", "-o", arg(&xml)]);
    assert_eq!(code, 0, "{err}");
    let ours = tool("lstopo-no-graphics", &["--input", arg(&xml), "--no-io"]);
    let theirs = tool("lstopo-no-graphics", &["--no-io"]);
    for cache in ["L1d L#", "L1i L#", "L2 L#", "L3 L#", "L4 L#"] {
        assert_eq!(
            ours.matches(cache).count(),
            theirs.matches(cache).count(),
            "{cache}: ours:\n{ours}\nlstopo's:\n{theirs}"
        );
    }
}
