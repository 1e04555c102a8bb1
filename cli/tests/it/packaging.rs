//! topoprobe as it is installed: `run` from a binary with no library beside it (the
//! pinning library carried inside, written to a per-user cache), shell completions and
//! man pages generated from the command-line definition, and `--version` with the build's
//! commit.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{exe, outcome, run_ok, tmp, two_cpus};

/// A scratch directory of its own for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = tmp().join(format!("packaging-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The `topoprobe` binary copied alone into `root/bin`, as `cargo install --root root`
/// leaves it: no pinning library beside it, in `../lib` or in `deps/`.
fn installed_alone(root: &Path) -> PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    let copy = bin.join("topoprobe");
    std::fs::copy(exe(), &copy).expect("copy the binary");
    copy
}

/// Builds `tests/progs/affinity.c`: it prints the CPUs its main thread and one thread
/// it creates may run on.
fn affinity_program(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/progs/affinity.c");
    let out = dir.join("affinity");
    let st = Command::new("gcc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("gcc runs");
    assert!(st.success(), "cannot build affinity.c");
    out
}

/// Runs the installed binary with a cache of its own and no `TOPOPROBE_PRELOAD`.
fn run_installed(bin: &Path, cache: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin)
        .args(args)
        .env_remove("TOPOPROBE_PRELOAD")
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("running the installed topoprobe");
    outcome(&out)
}

/// Row 4: an installed binary alone pins as `place` says: the main thread on the first CPU
/// of the placement, the thread it creates on the second.
#[test]
fn an_installed_binary_alone_runs_with_its_threads_pinned() {
    let dir = scratch("alone");
    let bin = installed_alone(&dir.join("root"));
    let prog = affinity_program(&dir);
    let cache = dir.join("cache");
    let place = run_ok(&[
        "place",
        "--policy",
        "rr_core",
        "-n",
        "2",
        "-q",
        "--topology",
        two_cpus(),
    ]);
    let cpus: Vec<&str> = place.trim().split(',').collect();
    assert_eq!(cpus.len(), 2, "{place}");
    let report = dir.join("run.json");
    let args = [
        "run",
        "--policy",
        "rr_core",
        "-n",
        "2",
        "--topology",
        two_cpus(),
        "-o",
        report.to_str().expect("utf-8"),
        "--",
        prog.to_str().expect("utf-8"),
    ];
    let (code, out, err) = run_installed(&bin, &cache, &args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("main {}\n", cpus[0])), "{out}");
    assert!(out.contains(&format!("thread1 {}\n", cpus[1])), "{out}");
    // The carried library went to the cache, and the report names it.
    let cached: Vec<PathBuf> = std::fs::read_dir(cache.join("topoprobe"))
        .expect("the cache directory")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let name = cached[0].file_name().and_then(|n| n.to_str()).unwrap_or("");
    assert!(
        name.starts_with("libtopoprobe_preload-") && name.ends_with(".so"),
        "{name}"
    );
    let text = std::fs::read_to_string(&report).expect("report");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON report");
    assert_eq!(v["preload"].as_str(), cached[0].to_str(), "{text}");
    // A second run uses the same file.
    let (code, out, err) = run_installed(&bin, &cache, &args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("main {}\n", cpus[0])), "{out}");
    let again = std::fs::read_dir(cache.join("topoprobe"))
        .expect("cache")
        .count();
    assert_eq!(again, 1);
}

/// A library beside the binary, in `../lib` or in `../lib/topoprobe`, is used before the
/// carried copy; `TOPOPROBE_PRELOAD` before all.
#[test]
fn a_library_installed_on_disk_is_used_first() {
    let dir = scratch("on-disk");
    let root = dir.join("root");
    let bin = installed_alone(&root);
    let cache = dir.join("cache");
    let carried = {
        // The carried copy, written to the cache by a first run.
        let args = [
            "run",
            "--policy",
            "con_hwc",
            "--topology",
            two_cpus(),
            "-n",
            "1",
            "--json",
            "--",
            "true",
        ];
        let (code, _, err) = run_installed(&bin, &cache, &args);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&err).expect("JSON report");
        PathBuf::from(v["preload"].as_str().expect("preload"))
    };
    let lib = root.join("lib").join("topoprobe");
    std::fs::create_dir_all(&lib).expect("lib dir");
    let installed = lib.join("libtopoprobe_preload.so");
    std::fs::copy(&carried, &installed).expect("install the library");
    let args = [
        "run",
        "--policy",
        "con_hwc",
        "--topology",
        two_cpus(),
        "-n",
        "1",
        "--json",
        "--",
        "true",
    ];
    let (code, _, err) = run_installed(&bin, &cache, &args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&err).expect("JSON report");
    let used = PathBuf::from(v["preload"].as_str().expect("preload"));
    assert_eq!(
        used.canonicalize().expect("used"),
        installed.canonicalize().expect("installed")
    );
    // TOPOPROBE_PRELOAD names a file that is not there: said, exit 1.
    let out = Command::new(&bin)
        .args(args)
        .env("TOPOPROBE_PRELOAD", dir.join("nothing.so"))
        .output()
        .expect("runs");
    let (code, _, err) = outcome(&out);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("TOPOPROBE_PRELOAD="), "{err}");
}

/// Row 9: bash completions name the commands and their options.
#[test]
fn completions_are_generated_for_every_shell() {
    let bash = run_ok(&["completions", "bash"]);
    for word in ["infer", "--policy", "run", "place", "completions"] {
        assert!(
            bash.contains(word),
            "{word} missing from the bash completions"
        );
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let script = run_ok(&["completions", shell]);
        assert!(script.contains("policy"), "{shell}: {script}");
    }
    // -o FILE, as every command writes its output.
    let dir = scratch("completions");
    let file = dir.join("topoprobe.fish");
    let (code, _, err) = common::run(&["completions", "fish", "-o", file.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&file).expect("written");
    assert!(text.contains("complete -c topoprobe"), "{text}");
    // An unknown shell is a usage error.
    let (code, _, err) = common::run(&["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("tcsh"), "{err}");
}

/// The commands `topoprobe --help` lists (without `help`).
fn listed_commands() -> Vec<String> {
    let help = run_ok(&["--help"]);
    let start = help.find("Commands:").expect("a command list");
    help[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A description wrapped onto more lines is indented further.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// Row 9: a man page for topoprobe and for every command it lists, in roff.
#[test]
fn manpages_are_written_for_every_command() {
    let dir = scratch("man").join("man1");
    let (code, _, err) = common::run(&["manpages", dir.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    let commands = listed_commands();
    assert!(commands.len() >= 15, "{commands:?}");
    assert!(
        !commands.iter().any(|c| c == "manpages"),
        "manpages is hidden"
    );
    for c in &commands {
        let page = dir.join(format!("topoprobe-{c}.1"));
        let text =
            std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert!(text.starts_with(".ie \\n(.g .ds Aq"), "{c}: not roff");
        assert!(text.contains(&format!("topoprobe\\-{c}")), "{c}: its name");
    }
    let top = std::fs::read_to_string(dir.join("topoprobe.1")).expect("topoprobe.1");
    assert!(top.contains(".SH SUBCOMMANDS"), "{top}");
    // The options of a command are in its page.
    let run = std::fs::read_to_string(dir.join("topoprobe-run.1")).expect("run page");
    assert!(run.contains("\\-\\-policy"), "{run}");
    // Subcommands of subcommands too.
    assert!(dir.join("topoprobe-bench-locks.1").is_file());
}

/// Row 9: `--version` and `-V`: one line, the version first, then the commit, profile and
/// features of the build.
#[test]
fn version_names_the_commit_and_the_build() {
    for flag in ["--version", "-V"] {
        let v = run_ok(&[flag]);
        assert!(v.starts_with("topoprobe 0.1.0 ("), "{v}");
        assert_eq!(v.lines().count(), 1, "{v}");
        assert!(v.contains("commit "), "{v}");
        assert!(v.contains(" profile, opt-level "), "{v}");
        assert!(v.contains("features: "), "{v}");
        // A short hash (with +dirty for a changed tree), or `unknown` outside git.
        let commit = v
            .split("commit ")
            .nth(1)
            .and_then(|r| r.split(';').next())
            .unwrap_or("");
        let hash = commit.trim_end_matches("+dirty");
        assert!(
            hash == "unknown" || (hash.len() >= 7 && hash.chars().all(|c| c.is_ascii_hexdigit())),
            "{v}"
        );
    }
}
