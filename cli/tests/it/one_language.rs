//! Every command speaks one language: each one that prints a result accepts `-o FILE`,
//! `--format` and `--json`, and `-o -` writes to standard output.

use crate::common;

use std::process::Command;

use common::{arg, data, exe, run};

/// The subcommands of `topoprobe` (and of `topoprobe bench`), as `--help` lists them.
fn subcommands(prefix: &[&str]) -> Vec<String> {
    let out = Command::new(exe())
        .args(prefix)
        .arg("--help")
        .output()
        .expect("topoprobe runs");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut names = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            if !line.starts_with("  ") {
                break;
            }
            // A command's line starts with two spaces then its name; wrapped description
            // lines are indented further.
            let rest = &line[2..];
            if rest.starts_with(' ') {
                continue;
            }
            if let Some(name) = rest.split_whitespace().next() {
                if name != "help" {
                    names.push(name.to_string());
                }
            }
        }
    }
    names
}

fn help_of(args: &[&str]) -> String {
    let out = Command::new(exe())
        .args(args)
        .arg("--help")
        .output()
        .expect("topoprobe runs");
    assert!(out.status.success(), "{args:?} --help fails");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_command_that_prints_a_result_has_o_format_and_json() {
    let top = subcommands(&[]);
    assert!(top.len() >= 15, "too few commands found: {top:?}");
    let mut missing = Vec::new();
    let mut walked = 0;
    for name in &top {
        let nested = subcommands(&[name]);
        let paths: Vec<Vec<&str>> = if nested.is_empty() {
            vec![vec![name.as_str()]]
        } else {
            nested
                .iter()
                .map(|n| vec![name.as_str(), n.as_str()])
                .collect()
        };
        for path in paths {
            let help = help_of(&path);
            walked += 1;
            assert!(
                help.contains("Examples:") || help.contains("Example:"),
                "`topoprobe {}` --help has no example",
                path.join(" ")
            );
            // `completions` writes a script whose format is the shell named: -o only.
            let flags: &[&str] = if path == ["completions"] {
                &["-o, --output"]
            } else {
                &["-o, --output", "--format", "--json"]
            };
            for &flag in flags {
                if !help.contains(flag) {
                    missing.push(format!("{} {flag}", path.join(" ")));
                }
            }
        }
    }
    assert!(walked >= 19, "walked only {walked} commands");
    assert!(missing.is_empty(), "missing options: {missing:?}");
}

/// The fixture matrix the output tests write from.
const MATRIX: &str = "nv-i7-6700k.csv";

/// `topoprobe infer --from-matrix MATRIX` with `extra` arguments: (status, stdout,
/// stderr).
fn infer(extra: &[&str]) -> (i32, String, String) {
    let m = data(MATRIX);
    let mut args = vec!["infer", "--from-matrix", arg(&m)];
    args.extend_from_slice(extra);
    run(&args)
}

/// Asserts a run succeeded, showing its standard error when not.
fn assert_ok((code, _, err): &(i32, String, String)) {
    assert_eq!(*code, 0, "{err}");
}

/// `-o -` is standard output, for each kind of command: a file is never named `-`.
#[test]
fn dash_is_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let m = data(MATRIX);
    let m = arg(&m);
    let desc = dir.path().join("m.json");
    assert_ok(&infer(&["-o", arg(&desc)]));
    let desc = arg(&desc);
    let cases: Vec<Vec<&str>> = vec![
        vec!["infer", "--from-matrix", m, "--json", "-o", "-"],
        vec!["show", "--topology", desc, "--format", "tsv", "-o", "-"],
        vec![
            "place",
            "--topology",
            desc,
            "--policy",
            "rr_core",
            "-n",
            "2",
            "--json",
            "-o",
            "-",
        ],
        vec!["heatmap", "--topology", desc, "-o", "-"],
        vec!["report", "--topology", desc, "-o", "-"],
        vec!["mem", "--plan", "--json", "-o", "-"],
        vec!["latency", "0", "1", "--plan", "-o", "-"],
    ];
    for args in cases {
        let out = Command::new(exe())
            .current_dir(dir.path())
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty(), "{args:?} wrote nothing to stdout");
        assert!(
            !dir.path().join("-").exists(),
            "{args:?} wrote a file named -"
        );
    }
}

/// `-o /dev/stdout` (and any special file) is written in place, never replaced by a
/// temporary file renamed over it.
#[test]
fn special_files_are_written_directly() {
    let done = infer(&["--format", "tsv", "-o", "/dev/stdout"]);
    assert_ok(&done);
    assert!(done.1.starts_with("cpu\tcore"));
    // A FIFO stays a FIFO, and its reader gets the bytes.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    assert_ok(&infer(&["-o", arg(&fifo)]));
    let text = reader.join().unwrap();
    assert!(text.contains("\"format\": \"topoprobe/1\""), "{text}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    // /dev/null and, as root, a character device made with mknod (a copy of /dev/null)
    // stay character devices: written into, never replaced by a regular file.
    assert_ok(&infer(&["--json", "-o", "/dev/null"]));
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    let node = dir.path().join("null-copy");
    let made = Command::new("mknod")
        .arg(&node)
        .args(["c", "1", "3"])
        .output()
        .is_ok_and(|o| o.status.success());
    if made {
        for cmd in [&["--json"][..], &["--format", "tsv"][..]] {
            let mut args = cmd.to_vec();
            args.extend(["-o", arg(&node)]);
            assert_ok(&infer(&args));
            assert!(
                std::fs::metadata(&node)
                    .unwrap()
                    .file_type()
                    .is_char_device(),
                "{cmd:?}: the device node was replaced"
            );
        }
    } else {
        eprintln!("skipped: mknod needs root (the device-node case)");
    }
}

/// An output that is an input is refused before anything is written.
#[test]
fn output_over_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("same.csv");
    std::fs::copy(data(MATRIX), &m).unwrap();
    let before = std::fs::read(&m).unwrap();
    let (code, _, err) = run(&["infer", "--from-matrix", arg(&m), "-o", arg(&m)]);
    assert_eq!(code, 2);
    assert!(err.contains("input"));
    assert_eq!(std::fs::read(&m).unwrap(), before);
}

/// Whether `text` holds a figure with more fractional digits than `pattern` allows, or a
/// negative zero.
fn assert_figures(text: &str, pattern: &str) {
    let long = regex::Regex::new(pattern).unwrap();
    assert!(long.find(text).is_none(), "{:?}", long.find(text));
    assert!(
        !text.contains(": -0.0") && !text.contains(" -0,"),
        "negative zero"
    );
}

/// JSON results are rounded to what a measurement resolves (4 significant digits), a
/// description keeps 10 (what its source wrote, without binary tails); no `-0` anywhere.
#[test]
fn json_figures_are_rounded() {
    let dir = tempfile::tempdir().unwrap();
    let desc = dir.path().join("m.json");
    assert_ok(&infer(&["-o", arg(&desc)]));
    let text = std::fs::read_to_string(&desc).unwrap();
    assert_figures(&text, r"[ \[,]-?[0-9]+\.[0-9]{11,}");
    let done = run(&[
        "place",
        "--policy",
        "rr_core",
        "--json",
        "--topology",
        arg(&desc),
    ]);
    assert_ok(&done);
    assert_figures(&done.1, r"[ \[,]-?[0-9]+\.0*[1-9][0-9]{4,}");
}

/// `show -o m.csv` writes the latency matrix, not the text view; a known extension that
/// the command does not write is a usage error.
#[test]
fn the_extension_picks_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("m.csv");
    assert_ok(&infer(&["-o", arg(&csv)]));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 8, "{text}");
    assert!(text.lines().all(|l| l.split(',').count() == 8), "{text}");
    let html = dir.path().join("m.html");
    assert_eq!(infer(&["-o", arg(&html)]).0, 2);
}

/// A usage error found late names the subcommand's own usage line (`bench sort`, not
/// `bench <COMMAND>`).
#[test]
fn late_usage_errors_show_the_subcommands_usage() {
    let (code, _, err) = run(&["bench", "sort", "--size", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("Usage: topoprobe bench sort"), "{err}");
}
