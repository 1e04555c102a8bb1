//! Tests of the outputs of `show`, `heatmap` and `report`: one input rule for the three
//! (`--topology`, `--from-matrix`, else this machine's description), their formats and
//! `-o` (by extension, `-` for standard output, never over an input, usage errors that
//! name the formats), `infer -o g.svg` rendering the graphs as `show` does, and the views
//! of a 256-context machine (the dual EPYC 7742 of `tests/data/nv-2x-epyc-7742.csv`): CPU
//! lists as ranges, warnings by their message, a colour per latency level in the heatmap,
//! and a report whose boxes hold their content in headless Chromium.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use common::{data, exe};

/// A scratch directory of these tests.
fn scratch() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "views-output-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Runs `topoprobe` with `args` in `dir`; `file`: this machine's description
/// (`TOPOPROBE_FILE`).
fn topoprobe_in(dir: &Path, file: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(exe());
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    match file {
        Some(f) => cmd.env("TOPOPROBE_FILE", f),
        None => cmd.env_remove("TOPOPROBE_FILE"),
    };
    cmd.output().expect("run topoprobe")
}

/// Runs `topoprobe` in the crate's folder (where `tests/data` is).
fn topoprobe(args: &[&str]) -> Output {
    topoprobe_in(Path::new(env!("CARGO_MANIFEST_DIR")), None, args)
}

fn ok(out: &Output) -> &[u8] {
    assert!(
        out.status.success(),
        "failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    &out.stdout
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A description inferred from a matrix in `tests/data` (the file's path, absolute).
fn described(matrix: &str) -> PathBuf {
    let dir = scratch();
    let json = dir.join(matrix.replace(".csv", ".json"));
    let out = topoprobe(&[
        "infer",
        "--from-matrix",
        &data(matrix).to_string_lossy(),
        "-o",
        &json.to_string_lossy(),
    ]);
    ok(&out);
    json
}

/// The description of the 256-context dual EPYC 7742, inferred once.
fn epyc() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| described("nv-2x-epyc-7742.csv"))
}

/// The description of a 2-socket POWER7 (16 contexts), inferred once.
fn power7() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| described("nv-2x-power7.csv"))
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The description JSON without what differs from one run to the next (when it was
/// made and how long that took).
fn stable(json: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(json).expect("JSON");
    if let Some(p) = v.get_mut("provenance").and_then(|p| p.as_object_mut()) {
        p.remove("created");
        p.remove("duration_s");
        p.remove("cost");
    }
    v
}

/// Every list of comma-separated numbers in `text` that holds three consecutive
/// ascending numbers (`4,5,6`): a CPU list not written as ranges.
fn unranged_lists(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Vec<u64> = Vec::new();
    let mut token = String::new();
    let flush = |current: &mut Vec<u64>, found: &mut Vec<String>| {
        if current
            .windows(3)
            .any(|w| w[1] == w[0] + 1 && w[2] == w[1] + 1)
        {
            let list: Vec<String> = current.iter().map(u64::to_string).collect();
            found.push(list.join(","));
        }
        current.clear();
    };
    let mut last = ' ';
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit() {
            token.push(c);
        } else {
            if !token.is_empty() {
                if let Ok(n) = token.parse() {
                    current.push(n);
                }
                token.clear();
            }
            let continues = c == ',' && last.is_ascii_digit();
            if !continues {
                flush(&mut current, &mut found);
            }
        }
        last = c;
    }
    found
}

#[test]
fn unranged_lists_are_found() {
    assert_eq!(unranged_lists("a {1,2,3,9} b"), ["1,2,3,9"]);
    assert!(unranged_lists("0-3,8 and 0,128,1,129 and 1, 2, 3").is_empty());
}

// ---------------------------------------------------------------------------------------
// Row 2: one input rule

/// `show`, `heatmap` and `report` without an input read this machine's description, and
/// fail alike (saying how to make one) when it is missing.
#[test]
fn show_without_topology_behaves_like_heatmap() {
    let dir = scratch();
    let desc = power7();
    for (with, without) in [
        (vec!["show", "--topology", &s(desc)], vec!["show"]),
        (
            vec!["show", "--topology", &s(desc), "--format", "tsv"],
            vec!["show", "--format", "tsv"],
        ),
        (vec!["heatmap", "--topology", &s(desc)], vec!["heatmap"]),
        (
            vec!["report", "--topology", &s(desc), "--json"],
            vec!["report", "--json"],
        ),
    ] {
        let a = topoprobe_in(&dir, None, &with);
        let b = topoprobe_in(&dir, Some(desc), &without);
        if with.contains(&"--json") {
            assert_eq!(stable(ok(&a)), stable(ok(&b)), "{without:?}");
        } else {
            assert_eq!(
                String::from_utf8_lossy(ok(&a)),
                String::from_utf8_lossy(ok(&b)),
                "{without:?}"
            );
        }
    }
    // Without a description, all three work from the operating system's view and say so.
    let missing = dir.join("no-such-description.json");
    for cmd in ["show", "heatmap", "report"] {
        let out = topoprobe_in(&dir, Some(&missing), &[cmd, "-o", "-"]);
        assert!(
            out.status.success(),
            "{cmd} failed without a description: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("`topoprobe infer` measures it"),
            "{cmd}: {}",
            stderr(&out)
        );
    }
    // And `--from-matrix` works for show as for the others.
    let m = data("nv-2x-power7.csv");
    let m = common::arg(&m);
    let out = topoprobe(&["show", "--from-matrix", m, "--format", "tsv"]);
    assert!(String::from_utf8_lossy(ok(&out)).starts_with("cpu\tcore\tsocket"));
}

/// `-o` naming the input is refused before anything is written, for every view.
#[test]
fn the_output_is_never_the_input() {
    let dir = scratch();
    let desc = dir.join("m.json");
    std::fs::copy(power7(), &desc).unwrap();
    let before = std::fs::read(&desc).unwrap();
    for args in [
        vec!["show", "--topology", "m.json", "-o", "m.json"],
        vec!["show", "--topology", "m.json", "--json", "-o", "./m.json"],
        vec!["heatmap", "--topology", "m.json", "-o", "m.json"],
        vec!["report", "--topology", "m.json", "--json", "-o", "m.json"],
    ] {
        let out = topoprobe_in(&dir, None, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("is the input file"),
            "{}",
            stderr(&out)
        );
    }
    let matrix = dir.join("m.csv");
    std::fs::copy(data("nv-2x-power7.csv"), &matrix).unwrap();
    let out = topoprobe_in(
        &dir,
        None,
        &["show", "--from-matrix", "m.csv", "-o", "m.csv"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read(&desc).unwrap(), before);
    assert_eq!(
        std::fs::read(&matrix).unwrap(),
        std::fs::read(data("nv-2x-power7.csv")).unwrap()
    );
}

// ---------------------------------------------------------------------------------------
// Rows 1, 3, 5: formats and -o

/// `-o -` is standard output for the three views, and no file named `-` appears.
#[test]
fn dash_is_standard_output() {
    let dir = scratch();
    let desc = s(power7());
    for (args, starts) in [
        (vec!["show", "--topology", &desc], "topoprobe: 16"),
        (vec!["show", "--topology", &desc, "--json"], "{"),
        (vec!["heatmap", "--topology", &desc], "<svg"),
        (vec!["heatmap", "--topology", &desc, "--json"], "{"),
        (vec!["report", "--topology", &desc], "<!DOCTYPE html>"),
    ] {
        let mut dashed = args.clone();
        dashed.extend(["-o", "-"]);
        let a = topoprobe_in(&dir, None, &args);
        let b = topoprobe_in(&dir, None, &dashed);
        let (a, b) = (
            String::from_utf8_lossy(ok(&a)).into_owned(),
            String::from_utf8_lossy(ok(&b)).into_owned(),
        );
        assert!(
            b.starts_with(starts),
            "{dashed:?}: {}",
            &b[..b.len().min(80)]
        );
        if args[0] != "report" {
            // (the report says when it was made)
            assert_eq!(a, b, "{dashed:?}");
        }
        assert!(!dir.join("-").exists(), "{dashed:?} wrote a file named -");
    }
    let png = topoprobe_in(
        &dir,
        None,
        &["heatmap", "--topology", &desc, "--png", "-o", "-"],
    );
    assert_eq!(&ok(&png)[1..4], b"PNG");
}

#[test]
fn report_to_a_png_is_a_usage_error() {
    let dir = scratch();
    let desc = s(power7());
    let out = topoprobe_in(&dir, None, &["report", "--topology", &desc, "-o", "r.png"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("html or json"), "{}", stderr(&out));
    assert!(!dir.join("r.png").exists());
    let out = topoprobe_in(
        &dir,
        None,
        &[
            "report",
            "--topology",
            &desc,
            "--format",
            "json",
            "-o",
            "r.html",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // The extension chooses: .json is the description the page shows.
    ok(&topoprobe_in(
        &dir,
        None,
        &["report", "--topology", &desc, "-o", "r.json"],
    ));
    let shown = ok(&topoprobe_in(
        &dir,
        None,
        &["show", "--topology", &desc, "--json"],
    ))
    .to_vec();
    assert_eq!(
        stable(&std::fs::read(dir.join("r.json")).unwrap()),
        stable(&shown)
    );
    ok(&topoprobe_in(
        &dir,
        None,
        &["report", "--topology", &desc, "-o", "r.html"],
    ));
    let html = std::fs::read_to_string(dir.join("r.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
}

#[test]
fn show_to_html_is_a_usage_error() {
    let dir = scratch();
    let desc = s(power7());
    let out = topoprobe_in(&dir, None, &["show", "--topology", &desc, "-o", "m.html"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("text") && err.contains("json") && err.contains("csv"),
        "{err}"
    );
    assert!(!dir.join("m.html").exists());
}

#[test]
fn show_json_to_a_text_file_is_a_usage_error() {
    let dir = scratch();
    let desc = s(power7());
    let out = topoprobe_in(
        &dir,
        None,
        &["show", "--topology", &desc, "--json", "-o", "x.txt"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!dir.join("x.txt").exists());
}

/// `show -o m.csv` writes the latency matrix: 16 lines of 16 fields, numbers or empty.
#[test]
fn show_to_csv_is_the_latency_matrix() {
    let dir = scratch();
    let out = topoprobe_in(
        &dir,
        None,
        &["show", "--topology", &s(power7()), "-o", "m.csv"],
    );
    ok(&out);
    let csv = std::fs::read_to_string(dir.join("m.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 16, "{csv}");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), 16, "row {i}: {row:?}");
        for (j, cell) in row.iter().enumerate() {
            if i == j {
                continue;
            }
            let v: f64 = cell
                .parse()
                .unwrap_or_else(|_| panic!("({i},{j}) = {cell:?}"));
            assert!(v > 100.0 && v < 500.0, "({i},{j}) = {v}");
        }
    }
    // It reads back as a matrix.
    ok(&topoprobe_in(
        &dir,
        None,
        &["show", "--from-matrix", "m.csv", "--format", "tsv"],
    ));
}

/// `heatmap` takes `--format svg|png|json`, `--json`, `--png`, `--svg` and follows the
/// extension of `-o`; conflicting choices are usage errors.
#[test]
fn heatmap_formats() {
    let dir = scratch();
    let desc = s(power7());
    let run = |args: &[&str]| topoprobe_in(&dir, None, args);
    ok(&run(&["heatmap", "--topology", &desc, "-o", "h.png"]));
    assert_eq!(&std::fs::read(dir.join("h.png")).unwrap()[1..4], b"PNG");
    ok(&run(&[
        "heatmap",
        "--topology",
        &desc,
        "--format",
        "png",
        "-o",
        "h2",
    ]));
    assert_eq!(&std::fs::read(dir.join("h2")).unwrap()[1..4], b"PNG");
    ok(&run(&["heatmap", "--topology", &desc, "-o", "h.json"]));
    let by_ext: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("h.json")).unwrap()).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(ok(&run(&["heatmap", "--topology", &desc, "--json"]))).unwrap();
    assert_eq!(by_ext, json);
    let svg = ok(&run(&["heatmap", "--topology", &desc, "--svg"])).to_vec();
    assert!(svg.starts_with(b"<svg"));
    for bad in [
        vec!["heatmap", "--topology", &desc, "--png", "-o", "h.svg"],
        vec!["heatmap", "--topology", &desc, "--json", "-o", "h.png"],
        vec!["heatmap", "--topology", &desc, "-o", "h.html"],
        vec!["heatmap", "--topology", &desc, "--png", "--json"],
    ] {
        let out = run(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
    }
    let out = run(&["heatmap", "--topology", &desc, "-o", "h.txt"]);
    assert!(
        stderr(&out).contains("svg, png or json"),
        "{}",
        stderr(&out)
    );
    // The JSON: the matrix in drawing order, and the levels.
    let cpus = json["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 16);
    let matrix = json["matrix"].as_array().unwrap();
    assert_eq!(matrix.len(), 16);
    assert!(matrix.iter().all(|r| r.as_array().unwrap().len() == 16));
    assert!(matrix[0][0].is_null());
    assert!(matrix[0][1].as_f64().unwrap() > 100.0);
    assert_eq!(json["unit"], "ns");
    let levels = json["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2, "{levels:?}");
    assert_eq!(levels[1]["role"], "cross_socket");
    assert!(levels[0]["colour"].as_str().unwrap().starts_with('#'));
    assert_eq!(json["sockets"].as_array().unwrap().len(), 2);
}

/// `infer -o g.svg` renders the graphs with Graphviz, as `show -o g.svg` does (the
/// cross-socket graph next to it), instead of writing DOT text under a .svg name.
#[test]
fn infer_to_svg_renders_the_graphs() {
    let graphviz = Command::new("dot")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !graphviz {
        assert!(std::env::var_os("CI").is_none(), "CI must install graphviz");
        eprintln!("note: skipping this test: Graphviz's dot is not installed");
        return;
    }
    let dir = scratch();
    let matrix = data("nv-2x-power7.csv");
    ok(&topoprobe_in(
        &dir,
        None,
        &["infer", "--from-matrix", &s(&matrix), "-o", "g.svg"],
    ));
    ok(&topoprobe_in(
        &dir,
        None,
        &["show", "--from-matrix", &s(&matrix), "-o", "s.svg"],
    ));
    for name in ["g.svg", "g-cross-socket.svg", "s.svg", "s-cross-socket.svg"] {
        let svg = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(
            svg.contains("<svg"),
            "{name} is not SVG: {}",
            &svg[..svg.len().min(60)]
        );
        assert!(!svg.starts_with("digraph"), "{name} holds DOT text");
    }
    assert_eq!(
        std::fs::read(dir.join("g-cross-socket.svg")).unwrap(),
        std::fs::read(dir.join("s-cross-socket.svg")).unwrap()
    );
    ok(&topoprobe_in(
        &dir,
        None,
        &["infer", "--from-matrix", &s(&matrix), "-o", "g.png"],
    ));
    assert_eq!(&std::fs::read(dir.join("g.png")).unwrap()[1..4], b"PNG");
    // DOT text where it was asked for.
    let dot = ok(&topoprobe_in(
        &dir,
        None,
        &["infer", "--from-matrix", &s(&matrix), "--format", "dot"],
    ))
    .to_vec();
    assert!(dot.starts_with(b"digraph"));
}

// ---------------------------------------------------------------------------------------
// Row 11: the views of 256 contexts

/// The text view: CPU lists as ranges, warnings by their message, not their key.
#[test]
fn text_view_of_256_contexts() {
    let text =
        String::from_utf8(ok(&topoprobe(&["show", "--topology", &s(epyc())])).to_vec()).unwrap();
    assert!(
        unranged_lists(&text).is_empty(),
        "{:?}",
        unranged_lists(&text)
    );
    let warnings: Vec<&str> = text
        .split("\nwarnings\n")
        .nth(1)
        .expect("the EPYC's description has warnings")
        .lines()
        .take_while(|l| l.starts_with("  - "))
        .collect();
    assert!(!warnings.is_empty());
    for w in &warnings {
        let first = w[4..].split([' ', ':']).next().unwrap_or("");
        assert!(
            !(first.contains('_') || w[4..].starts_with(&format!("{first}:"))),
            "a warning shows its key: {w}"
        );
    }
    let verbose =
        String::from_utf8(ok(&topoprobe(&["show", "--topology", &s(epyc()), "-v"])).to_vec())
            .unwrap();
    assert!(unranged_lists(&verbose).is_empty());
}

/// The heatmap's colours separate every latency level: any two levels whose medians
/// differ by more than 10% are painted clearly different colours (a logarithmic scale
/// painted 115 to 290 ns one yellow).
#[test]
fn heatmap_colours_separate_the_levels_of_256_contexts() {
    let json: serde_json::Value = serde_json::from_slice(ok(&topoprobe(&[
        "heatmap",
        "--topology",
        &s(epyc()),
        "--json",
    ])))
    .unwrap();
    assert_eq!(json["cpus"].as_array().unwrap().len(), 256);
    let rgb = |c: &str| -> [f64; 3] {
        let v = u32::from_str_radix(c.trim_start_matches('#'), 16).unwrap();
        [
            f64::from((v >> 16) & 0xff),
            f64::from((v >> 8) & 0xff),
            f64::from(v & 0xff),
        ]
    };
    let levels: Vec<(f64, [f64; 3])> = json["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["median"].as_f64().unwrap(),
                rgb(l["colour"].as_str().unwrap()),
            )
        })
        .collect();
    assert!(levels.len() >= 5, "{levels:?}");
    for (i, a) in levels.iter().enumerate() {
        for b in &levels[i + 1..] {
            if (a.0 - b.0).abs() > 0.1 * a.0.max(b.0) {
                let d = (0..3)
                    .map(|k| (a.1[k] - b.1[k]).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(d > 40.0, "{} and {} ns look alike: {a:?} {b:?}", a.0, b.0);
            }
        }
    }
    let svg =
        String::from_utf8(ok(&topoprobe(&["heatmap", "--topology", &s(epyc())])).to_vec()).unwrap();
    assert!(
        svg.contains("a colour per latency"),
        "the legend says how colours map"
    );
}

/// The report's HTML: warnings by their message, CPU lists as ranges (the placements'
/// full orders are in tooltips only), policy names that do not wrap.
#[test]
fn report_of_256_contexts() {
    let html =
        String::from_utf8(ok(&topoprobe(&["report", "--topology", &s(epyc())])).to_vec()).unwrap();
    assert!(!html.contains("<b>profile_pairs</b>"));
    assert!(html.contains("data-kind=\"profile_pairs\""));
    // Visible text: tags and attributes dropped.
    let mut visible = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => visible.push(c),
            _ => {}
        }
    }
    assert!(
        unranged_lists(&visible).is_empty(),
        "{:?}",
        unranged_lists(&visible)
    );
    assert!(visible.contains("0-63,128-191"), "no CPU set as ranges");
    assert!(html.contains("<td class=\"l name\">CON_CORE_HWC</td>"));
}

/// Whether Chromium can run: a failure under CI, a printed reason and `false` otherwise.
fn have_chromium() -> Option<&'static str> {
    let path = "/usr/bin/chromium";
    let ok = Command::new(path)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "chromium is missing: CI must install the Debian package chromium"
    );
    eprintln!("note: skipping this test: {path} is not installed (Debian package chromium)");
    None
}

/// A script added to a copy of the report: it measures the layout and writes what it
/// found into the page, as JSON in `<pre id="layout-results">`, for `--dump-dom`.
const PROBE: &str = r#"<script>
(function () {
  const out = { viewport: window.innerWidth, page: document.documentElement.scrollWidth,
                overflow: [], tree: null, policies: [], text: document.body.innerText };
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (typeof el.className === 'string' && el.className ? '.' + el.className.split(' ').join('.') : '');
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg') || el.tagName === 'SCRIPT') continue;
    const cw = el.clientWidth;
    if (cw > 0 && el.scrollWidth > cw + 1) {
      out.overflow.push(name(el) + ': ' + el.scrollWidth + ' px in a ' + cw + ' px box');
    }
    const r = el.getBoundingClientRect();
    if (r.right > out.viewport + 1) {
      out.overflow.push(name(el) + ': right edge at ' + Math.round(r.right) + ' px');
    }
  }
  const tree = document.querySelector('#tree pre');
  out.tree = { scroll: tree.scrollHeight, client: tree.clientHeight };
  for (const row of document.querySelectorAll('#placements tr')) {
    const td = row.querySelector('td');
    if (!td) continue;
    const range = document.createRange();
    range.selectNodeContents(td);
    const cs = getComputedStyle(td);
    out.policies.push({ name: td.textContent, text: range.getBoundingClientRect().width,
      cell: td.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
      lines: range.getClientRects().length });
  }
  const pre = document.createElement('pre');
  pre.id = 'layout-results';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script></body>"#;

/// The report of the 256-context matrix in a 1400 px wide headless Chromium: no element
/// is wider than its box (the tree wraps instead of scrolling sideways, and is not cut
/// at a fixed height), the placements' policy column fits its longest policy name on one
/// line, and the CPU lists the page shows are ranges.
#[test]
fn report_of_256_contexts_in_chromium() {
    let Some(chromium) = have_chromium() else {
        return;
    };
    let dir = scratch();
    let html =
        String::from_utf8(ok(&topoprobe(&["report", "--topology", &s(epyc())])).to_vec()).unwrap();
    let page = dir.join("measured.html");
    std::fs::write(&page, html.replacen("</body>", PROBE, 1)).unwrap();
    let profile = dir.join("chromium-profile");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,2000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium failed: {}", stderr(&out));
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("<pre id=\"layout-results\">")
        .unwrap_or_else(|| panic!("the probe wrote nothing: {}", stderr(&out)));
    let body = &dom[start + "<pre id=\"layout-results\">".len()..];
    let body = &body[..body.find("</pre>").expect("end of the results")];
    let text = body
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let r: serde_json::Value = serde_json::from_str(&text).expect("results JSON");

    let viewport = r["viewport"].as_f64().unwrap();
    assert!(viewport > 1000.0, "{r}");
    assert!(
        r["page"].as_f64().unwrap() <= viewport,
        "the page scrolls sideways"
    );
    let overflow: Vec<&str> = r["overflow"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        overflow.is_empty(),
        "elements overflow their box: {overflow:#?}"
    );
    let tree = &r["tree"];
    assert!(
        tree["scroll"].as_f64().unwrap() <= tree["client"].as_f64().unwrap() + 1.0,
        "the tree is cut: {tree}"
    );
    let policies = r["policies"].as_array().unwrap();
    assert!(policies.len() >= 4, "{policies:?}");
    let longest = policies
        .iter()
        .max_by(|a, b| {
            a["text"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["text"].as_f64().unwrap())
        })
        .unwrap();
    for p in policies {
        assert_eq!(p["lines"], 1, "a policy name wraps: {p}");
        assert!(
            p["text"].as_f64().unwrap() <= p["cell"].as_f64().unwrap() + 1.0,
            "the policy column is narrower than {p}"
        );
    }
    assert!(
        longest["name"].as_str().unwrap().len() >= "CON_CORE_HWC".len(),
        "{longest}"
    );
    let shown = r["text"].as_str().unwrap();
    assert!(
        unranged_lists(shown).is_empty(),
        "CPU lists not written as ranges: {:?}",
        unranged_lists(shown)
    );
    assert!(shown.contains("0-63,128-191"), "no CPU set as ranges");
}
