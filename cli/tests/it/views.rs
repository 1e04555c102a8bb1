//! Tests of the views: snapshots of the text, DOT, TSV and `.mct` outputs; hwloc XML loaded
//! by hwloc's `lstopo-no-graphics`; Graphviz rendering and its fallback; the heatmap as SVG
//! and PNG; the HTML report opened in headless Chromium.
//!
//! Tests that need an external program (Graphviz's `dot`, hwloc's `lstopo-no-graphics`,
//! `chromium`) fail when it is missing and the environment variable `CI` is set (CI
//! installs them: `scripts/debian-packages.txt`), and are skipped with a note otherwise.
//!
//! Fixtures (copies of `shared/data`): `lpdxeon2680.mct` (libmctop, 2 sockets × 10 cores ×
//! 2 SMT, with memory, cache and power sections), `nv-2x-power7.csv` (2 sockets × 8 cores)
//! and `nv-ryzen9-5950x.csv` (2 CCDs × 8 cores × 2 SMT); `nv-2x-epyc-7742.csv` (256 contexts)
//! for the width of the report.

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};

use assert_cmd::Command;

/// The inputs of the snapshots.
const INPUTS: [&str; 3] = ["lpdxeon2680.mct", "nv-2x-power7.csv", "nv-ryzen9-5950x.csv"];

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_topoprobe"))
}

/// Runs `topoprobe` with the arguments and returns its standard output; it must succeed.
fn shown(args: &[&str]) -> String {
    let out = bin().args(args).env_remove("NO_COLOR").output().unwrap();
    assert!(
        out.status.success(),
        "topoprobe {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A fixture of `tests/data/` named relative to the crate (the directory tests run in), so
/// that the snapshots that print the path do not depend on where the checkout is.
fn relative_data(name: &str) -> String {
    format!("tests/data/{name}")
}

/// Whether an external program can be run (`probe` are its version arguments). Missing:
/// a failure under CI, a printed note and `false` otherwise.
fn have(program: &str, probe: &[&str], package: &str) -> bool {
    let ok = StdCommand::new(program)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{program} is missing: CI must install the Debian package {package}"
        );
        eprintln!(
            "note: skipping this test: {program} is not installed (Debian package {package})"
        );
    }
    ok
}

// ---------------------------------------------------------------------------------------
// Snapshots

fn snapshot(format: &str) {
    for input in INPUTS {
        let path = relative_data(input);
        let mut args = vec!["show", "--topology", &path, "--format", format];
        if format == "mct" {
            // .mct holds cycles: the ns of a matrix are converted at this clock.
            args.extend(["--ghz", "2.5"]);
        }
        let out = shown(&args);
        let name = format!("{format}-{}", input.replace('.', "-"));
        insta::assert_snapshot!(name, out);
    }
}

#[test]
fn snapshot_text() {
    snapshot("text");
}

#[test]
fn snapshot_dot() {
    snapshot("dot");
}

#[test]
fn snapshot_tsv() {
    snapshot("tsv");
}

#[test]
fn snapshot_mct() {
    snapshot("mct");
}

// ---------------------------------------------------------------------------------------
// Text view options

#[test]
fn text_colour_and_verbose() {
    let ivy = relative_data("lpdxeon2680.mct");
    let plain = shown(&["show", "--topology", &ivy]);
    assert!(!plain.contains('\x1b'), "no colour when not on a terminal");
    let coloured = shown(&["show", "--topology", &ivy, "--color", "always"]);
    assert!(coloured.contains("\x1b[36m112 cycles\x1b[0m"), "{coloured}");
    let verbose = shown(&["show", "--topology", &ivy, "--verbose", "--color", "never"]);
    assert!(verbose.contains("Core 0 · PU 0, PU 20 · 28 cycles between contexts"));
    assert!(verbose.contains("provenance"));
    assert!(verbose.contains("latency from context 10 to node 0: 505 cycles"));
    assert!(verbose.lines().count() > plain.lines().count() + 20);
}

#[test]
fn svg_without_dot_format_is_a_usage_error() {
    bin()
        .args([
            "show",
            "--topology",
            &relative_data("lpdxeon2680.mct"),
            "--svg",
        ])
        .assert()
        .code(2);
    bin()
        .args([
            "heatmap",
            "--topology",
            &relative_data("lpdxeon2680.mct"),
            "-o",
            "x.txt",
        ])
        .assert()
        .code(2);
    bin()
        .args([
            "show",
            "--topology",
            &relative_data("lpdxeon2680.mct"),
            "--format",
            "dot",
            "--socket",
            "2",
        ])
        .assert()
        .code(2);
}

// ---------------------------------------------------------------------------------------
// hwloc XML

/// Counts the lines of `lstopo-no-graphics` output that start (after indentation) with
/// `kind` followed by a space.
fn count_objects(console: &str, kind: &str) -> usize {
    console
        .lines()
        .filter(|l| l.trim_start().starts_with(&format!("{kind} ")))
        .count()
}

/// Exports `input` as hwloc XML and runs `lstopo-no-graphics --input` on it with `extra`
/// options; lstopo must accept the file without a complaint. Returns its output.
fn lstopo_on(input: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("topo.xml");
    bin()
        .args([
            "show",
            "--topology",
            &relative_data(input),
            "--format",
            "hwloc-xml",
            "-o",
        ])
        .arg(&xml)
        .assert()
        .success();
    let out = StdCommand::new("lstopo-no-graphics")
        .arg("--input")
        .arg(&xml)
        .args(["--of", "console"])
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "lstopo rejected the XML: {err}");
    assert!(err.trim().is_empty(), "lstopo complained: {err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn check_hwloc(input: &str, packages: usize, pus: usize, name: &str) {
    let lstopo = |extra: &[&str]| lstopo_on(input, extra);
    let tree = lstopo(&[]);
    assert_eq!(count_objects(&tree, "Package"), packages, "{tree}");
    assert_eq!(count_objects(&tree, "PU"), pus, "{tree}");
    let distances = lstopo(&["--distances"]);
    assert!(
        distances.contains(&format!("name {name} kind 6"))
            && distances.contains(&format!("between {pus} PUs")),
        "no latency distances in:\n{distances}"
    );
}

#[test]
fn hwloc_xml_loads_in_lstopo() {
    if !have("lstopo-no-graphics", &["--version"], "hwloc") {
        return;
    }
    check_hwloc("lpdxeon2680.mct", 2, 40, "topoprobe-latency-cycles");
    check_hwloc("nv-ryzen9-5950x.csv", 1, 32, "topoprobe-latency-ps");
}

#[test]
fn hwloc_xml_carries_memory_attributes() {
    if !have("lstopo-no-graphics", &["--version"], "hwloc") {
        return;
    }
    let text = lstopo_on("lpdxeon2680.mct", &["--memattrs"]);
    // Local read bandwidth 46.04 GB/s = 43912 MiB/s; local latency 259 cycles.
    assert!(text.contains("NUMANode L#0 = 43912 from cpuset"), "{text}");
    assert!(
        text.contains("name `topoprobe-latency-cycles' flags 6"),
        "{text}"
    );
    assert!(text.contains("NUMANode L#0 = 259 from cpuset"), "{text}");
}

// ---------------------------------------------------------------------------------------
// Graphviz

#[test]
fn dot_renders_both_graphs() {
    if !have("dot", &["-V"], "graphviz") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("ivy.svg");
    bin()
        .args([
            "show",
            "--topology",
            &relative_data("lpdxeon2680.mct"),
            "--format",
            "dot",
            "--svg",
            "-o",
        ])
        .arg(&svg)
        .assert()
        .success();
    let intra = std::fs::read_to_string(&svg).unwrap();
    let cross = std::fs::read_to_string(dir.path().join("ivy-cross-socket.svg")).unwrap();
    assert!(intra.contains("<svg") && intra.contains("Node 0 (local)"));
    assert!(intra.contains("259 cycles"));
    assert!(cross.contains("<svg") && cross.contains("308 (lvl 3)"));
    let png = dir.path().join("g.png");
    bin()
        .args([
            "show",
            "--topology",
            &relative_data("nv-ryzen9-5950x.csv"),
            "--format",
            "dot",
            "--png",
            "-o",
        ])
        .arg(&png)
        .assert()
        .success();
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
}

#[test]
fn dot_without_graphviz_writes_the_dot_text() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("ivy.svg");
    bin()
        .env("TOPOPROBE_DOT", dir.path().join("no-such-dot"))
        .args([
            "show",
            "--topology",
            &relative_data("lpdxeon2680.mct"),
            "--format",
            "dot",
            "--svg",
            "-o",
        ])
        .arg(&svg)
        .assert()
        .success()
        .stderr(predicates::str::contains("Graphviz's `dot` was not found"));
    assert!(!svg.exists());
    let dot = std::fs::read_to_string(dir.path().join("ivy.dot")).unwrap();
    assert!(dot.starts_with("digraph \"socket0\""));
}

// ---------------------------------------------------------------------------------------
// Heatmap

#[test]
fn heatmap_svg_and_png() {
    let svg = shown(&["heatmap", "--topology", &relative_data("lpdxeon2680.mct")]);
    assert!(svg.starts_with("<svg"));
    // One cell per pair, in topology order: context 20 (core 0's sibling) is second.
    assert!(svg.matches("<rect x=").count() >= 40 * 40);
    assert!(svg.contains("<title>0 → 20: 28 cycles</title>"));
    assert!(svg.contains("latency (cycles)"));
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("heat.png");
    bin()
        .args([
            "heatmap",
            "--from-matrix",
            &relative_data("nv-ryzen9-5950x.csv"),
            "-o",
        ])
        .arg(&png)
        .assert()
        .success();
    let pixmap = resvg::tiny_skia::Pixmap::load_png(&png).unwrap();
    assert!(pixmap.width() > 500 && pixmap.height() > 500);
    assert!(non_white_fraction(&pixmap) > 0.3);
}

/// Fraction of pixels that are not (nearly) white.
fn non_white_fraction(p: &resvg::tiny_skia::Pixmap) -> f64 {
    let px = p.pixels();
    let coloured = px
        .iter()
        .filter(|c| c.red() < 240 || c.green() < 240 || c.blue() < 240)
        .count();
    coloured as f64 / px.len() as f64
}

// ---------------------------------------------------------------------------------------
// Report

/// Opens `html` with `script` run at the end of its body in headless Chromium (in `dir`),
/// and returns the console line that starts with `tag`, the first two numbers after it,
/// every console message and the screenshot.
fn logged_in_chromium(
    dir: &Path,
    html: &str,
    script: &str,
    tag: &str,
) -> (String, Vec<u32>, Vec<String>, resvg::tiny_skia::Pixmap) {
    let measured = dir.join("measured.html");
    let probe = format!("<script>{script}</script></body>");
    std::fs::write(&measured, html.replacen("</body>", &probe, 1)).unwrap();
    let png = dir.join("report.png");
    let console = chromium(&measured, &png);
    let line = console
        .iter()
        .find(|l| l.contains(tag))
        .unwrap_or_else(|| panic!("no {tag}logged: {console:?}"))
        .clone();
    let nums: Vec<u32> = line
        .split(tag)
        .nth(1)
        .unwrap()
        .split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .take(2)
        .map(|t| t.parse().unwrap())
        .collect();
    let shot = resvg::tiny_skia::Pixmap::load_png(&png).unwrap();
    (line, nums, console, shot)
}

/// Opens `page` in headless Chromium, takes a screenshot to `png` and returns the console
/// messages Chromium logged.
fn chromium(page: &Path, png: &Path) -> Vec<String> {
    let profile = tempfile::tempdir().unwrap();
    let out = StdCommand::new("/usr/bin/chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect()
}

#[test]
fn report_opens_in_chromium() {
    if !have("/usr/bin/chromium", &["--version"], "chromium") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    bin()
        .args([
            "report",
            "--topology",
            &relative_data("lpdxeon2680.mct"),
            "-o",
        ])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing loaded from elsewhere.
    for outside in ["<script", "<link", "src=\"http", "url(http", "@import"] {
        assert!(!html.contains(outside), "the report contains {outside}");
    }
    for section in [
        "Summary",
        "Topology tree",
        "Latency heatmap",
        "Graphs",
        "Memory",
        "Caches",
        "Power",
        "Placements",
        "Provenance",
    ] {
        assert!(
            html.contains(&format!("{section}</h2>")),
            "no {section} section"
        );
    }
    let png = dir.path().join("report.png");
    let console = chromium(&page, &png);
    assert!(console.is_empty(), "console messages: {console:?}");
    let shot = resvg::tiny_skia::Pixmap::load_png(&png).unwrap();
    assert!(non_white_fraction(&shot) > 0.05, "the screenshot is blank");

    // The check can fail: a page with a console error is caught.
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<html><body>x<script>console.error('broken')</script></body></html>",
    )
    .unwrap();
    let console = chromium(&bad, &dir.path().join("bad.png"));
    assert!(!console.is_empty(), "a console error went unnoticed");
}

/// The report of this machine's description with the memory section of `mem --full` and
/// `c2c` (`epyc-2vcpu-mem-full.json`: the loaded-latency curve, the node × node matrices,
/// the mixes, the cache-to-cache transfers) shows the curve as an SVG plot and the
/// matrices and transfers as tables, and Chromium draws it: the plot has a size on the
/// page and no console message.
#[test]
fn report_shows_the_loaded_latency_curve_in_chromium() {
    if !have("/usr/bin/chromium", &["--version"], "chromium") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    bin()
        .args([
            "report",
            "--topology",
            &relative_data("epyc-2vcpu-mem-full.json"),
            "-o",
        ])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    for part in [
        "<h3>Loaded latency</h3>",
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"loaded\"",
        "<polyline",
        "class=\"node-matrix\"",
        "Read/write mixes",
        "socket 0 -&gt; node 0 (local)",
        "<h3>Cache-to-cache transfers</h3>",
        "<td class=\"l\">CPU 0 &lt;- CPU 1</td>",
        "<td class=\"l\">CPU 0 &lt;- memory</td>",
    ] {
        assert!(html.contains(part), "no {part} in the report");
    }
    let script = "var r = document.querySelector('svg.loaded').getBoundingClientRect(); \
                  console.log('plot ' + Math.round(r.width) + ' ' + Math.round(r.height))";
    let (line, nums, console, shot) = logged_in_chromium(dir.path(), &html, script, "plot ");
    assert!(nums[0] > 200 && nums[1] > 100, "{line}");
    assert_eq!(console.len(), 1, "console messages: {console:?}");
    assert!(non_white_fraction(&shot) > 0.05, "the screenshot is blank");
    // Without the section (the page of the plain matrix) there is no plot.
    let plain = dir.path().join("plain.html");
    bin()
        .args([
            "report",
            "--topology",
            &relative_data("nv-ryzen9-5950x.csv"),
            "-o",
        ])
        .arg(&plain)
        .assert()
        .success();
    assert!(!std::fs::read_to_string(&plain)
        .unwrap()
        .contains("class=\"loaded\""));
}

/// The report of the 256-context matrix fits a 1400 px window: no horizontal scrolling
/// (document width ≤ viewport), with the screenshot taken and the width measured by a
/// script added to a copy of the page (the report itself has no script).
#[test]
fn report_of_256_contexts_fits_the_window() {
    if !have("/usr/bin/chromium", &["--version"], "chromium") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    bin()
        .args([
            "report",
            "--topology",
            &relative_data("nv-2x-epyc-7742.csv"),
            "-o",
        ])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    let script = "console.log('widths ' + document.documentElement.scrollWidth + ' ' + \
                  window.innerWidth)";
    let (line, nums, _, shot) = logged_in_chromium(dir.path(), &html, script, "widths ");
    let (document, viewport) = (nums[0], nums[1]);
    assert!(viewport > 1000, "{line}");
    assert!(
        document <= viewport,
        "the page scrolls sideways: document {document} px in a {viewport} px window"
    );
    assert!(non_white_fraction(&shot) > 0.05, "the screenshot is blank");
}
