//! The C API from C: the committed header is what cbindgen generates from the code, and
//! the C example and the OpenMP example (a pool switched between two parallel regions)
//! build against it with gcc and run, every thread on exactly its context. They run on a
//! 2-CPU description (CPUs 0 and 1) so that they work on any machine with 2 CPUs or more.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The libtopoprobe.so cargo built: in this test's `deps/` directory (built with the
/// test), else the one above it.
fn built_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    for d in [Some(deps.clone()), deps.parent().map(Path::to_path_buf)]
        .into_iter()
        .flatten()
    {
        if d.join("libtopoprobe.so").is_file() {
            return d.join("libtopoprobe.so");
        }
    }
    panic!("libtopoprobe.so not found near {}", deps.display());
}

/// The SONAME the library must carry: `libtopoprobe.so.MAJOR`.
fn soname() -> String {
    format!("libtopoprobe.so.{}", env!("CARGO_PKG_VERSION_MAJOR"))
}

/// A library directory laid out as an install lays it (`libtopoprobe.so.MAJOR` and the
/// link `libtopoprobe.so` to it): programs linked against the library need the file its
/// SONAME names.
fn lib_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capi-lib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("lib dir");
        std::fs::copy(built_library(), dir.join(soname())).expect("copy the library");
        std::os::unix::fs::symlink(soname(), dir.join("libtopoprobe.so")).expect("link");
        dir
    })
    .clone()
}

/// The dynamic section of an ELF file, as `readelf -d` prints it.
fn dynamic_section(file: &Path) -> String {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(file)
        .output()
        .expect("readelf is installed (binutils)");
    assert!(out.status.success(), "readelf -d {}", file.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A 2-CPU topology: a 2x2 latency matrix (two cores of one socket, CPUs 0 and 1).
fn two_cpus(dir: &Path) -> PathBuf {
    let p = dir.join("m2.csv");
    std::fs::write(&p, ",50\n50,\n").expect("matrix");
    p
}

fn build_and_run(src: &str, flags: &[&str], env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    build_and_run_with(src, flags, env, &two_cpus(dir.path()))
}

/// Builds `src` with gcc against the library and runs it with `arg`.
fn build_and_run_with(src: &str, flags: &[&str], env: &[(&str, &str)], arg: &Path) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = build(src, flags, dir.path());
    run_example(src, &bin, env, arg)
}

/// Builds `src` with gcc against the library into `dir`; the program's path.
fn build(src: &str, flags: &[&str], dir: &Path) -> PathBuf {
    let bin = dir.join("prog");
    let lib = lib_dir();
    let st = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(manifest().join("examples").join(src))
        .arg(format!("-I{}", manifest().join("include").display()))
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-ltopoprobe", "-pthread"])
        .status()
        .expect("gcc runs");
    assert!(st.success(), "gcc {src} failed");
    bin
}

/// Runs an example program with `arg`; its standard output.
fn run_example(src: &str, bin: &Path, env: &[(&str, &str)], arg: &Path) -> String {
    let out = Command::new(bin)
        .arg(arg)
        .env_remove("LD_LIBRARY_PATH")
        .envs(env.iter().copied())
        .output()
        .expect("example runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{src}: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn header_is_up_to_date() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("topoprobe.h");
    let st = Command::new("cbindgen")
        .current_dir(manifest())
        .args(["--config", "cbindgen.toml", "--quiet", "--output"])
        .arg(&out)
        .status()
        .expect("cbindgen is installed (scripts/debian-packages.txt)");
    assert!(st.success());
    let want = std::fs::read_to_string(&out).expect("generated");
    let have = std::fs::read_to_string(manifest().join("include/topoprobe.h")).expect("committed");
    assert!(want == have, "capi/include/topoprobe.h is stale: run `cbindgen --config cbindgen.toml --output include/topoprobe.h` in capi/");
}

#[test]
fn header_keeps_the_levels_and_cargos_version() {
    let h = std::fs::read_to_string(manifest().join("include/topoprobe.h")).expect("header");
    for (level, n) in [("CONTEXT", 0), ("CORE", 1), ("SOCKET", 2), ("NODE", 3)] {
        assert!(
            h.contains(&format!("TP_LEVEL_{level} = {n},")),
            "TP_LEVEL_{level}"
        );
    }
    assert!(h.contains("typedef enum TpLevel {"), "the TpLevel enum");
    for (part, v) in [
        ("MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        let line = format!("#define TOPOPROBE_VERSION_{part} {v}\n");
        assert!(h.contains(&line), "{line}");
    }
}

#[test]
fn the_shared_library_has_a_versioned_soname() {
    let d = dynamic_section(&built_library());
    let want = format!("Library soname: [{}]", soname());
    assert!(d.contains(&want), "{want} in:\n{d}");
    // A program linked against it needs the versioned name.
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = build("place.c", &["-O1"], dir.path());
    let needed = dynamic_section(&bin);
    let want = format!("Shared library: [{}]", soname());
    assert!(needed.contains(&want), "{want} in:\n{needed}");
}

#[test]
fn c_example_pins_its_threads() {
    let text = build_and_run("place.c", &["-O1"], &[]);
    assert!(
        text.contains("2 contexts, 2 cores, 1 sockets, 0 nodes"),
        "{text}"
    );
    let v = env!("CARGO_PKG_VERSION");
    let number: u32 = [
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
    ]
    .iter()
    .map(|p| p.parse::<u32>().expect("number"))
    .fold(0, |n, p| n * 100 + p);
    let line = format!("library {v}, header {v} (TOPOPROBE_VERSION {number})");
    assert!(text.contains(&line), "{line} in {text}");
    assert!(text.contains("RR_CORE"), "{text}");
    let mut cpus: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("thread "))
        .map(|l| l.split_whitespace().nth(4).unwrap_or(""))
        .collect();
    cpus.sort_unstable();
    assert_eq!(cpus, vec!["0", "1"], "{text}");
}

#[test]
fn c_example_measures_places_and_pins() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if cpus < 2 {
        eprintln!("skipped: measuring needs two CPUs, this process has one");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let saved = dir.path().join("this-machine.json");
    let text = build_and_run_with("measure.c", &["-O1"], &[], &saved);
    assert!(
        text.contains(&format!("measured: {cpus} contexts")),
        "{text}"
    );
    assert!(
        text.contains(&format!("loaded back: {cpus} contexts")),
        "{text}"
    );
    assert!(saved.is_file(), "{text}");
    let pinned = text.lines().filter(|l| l.starts_with("thread ")).count();
    assert_eq!(pinned, 2, "{text}");
    assert!(!text.contains("NOT PINNED"), "{text}");
    assert!(
        text.contains("bad option: unknown plugin \"bogus\""),
        "{text}"
    );
}

#[test]
fn openmp_example_switches_policy_between_regions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = build("openmp.c", &["-O1", "-fopenmp"], dir.path());
    let m = two_cpus(dir.path());
    // Threads arrive in any order: several runs give the order a chance to vary.
    let text: String = (0..5)
        .map(|_| run_example("openmp.c", &bin, &[("OMP_NUM_THREADS", "2")], &m))
        .collect();
    // OpenMP thread i on slot i, whatever order the threads arrived in.
    for line in text.lines().filter(|l| l.contains(": OpenMP thread ")) {
        let n = line
            .split("OpenMP thread ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or("?");
        assert!(line.contains(&format!("(slot {n})")), "{line}\n{text}");
    }
    for region in ["CON_HWC", "RR_CORE"] {
        let mut cpus: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{region}:")))
            .map(|l| {
                l.split(" on CPU ")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next())
                    .unwrap_or("")
            })
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        assert_eq!(cpus, vec!["0", "1"], "{region}: {text}");
    }
    assert!(!text.contains("NOT PINNED"), "{text}");
}

#[test]
fn heartbeats_reach_shared_memory() {
    use topoprobe_sys::heartbeat::{HeartbeatReader, HEARTBEAT_VAR};
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("hb");
    let reader = HeartbeatReader::open(&page).expect("page");
    let page_s = page.to_string_lossy().into_owned();
    let out = build_and_run("heartbeat.c", &["-O1"], &[(HEARTBEAT_VAR, &page_s)]);
    assert!(out.contains("heartbeats on, 2000 beats"), "{out}");
    let hb = reader.read();
    assert_eq!((hb.beats, hb.phase), (2000, 2));
    // Without the variable the calls do nothing.
    let out = build_and_run("heartbeat.c", &["-O1"], &[]);
    assert!(out.contains("heartbeats off"), "{out}");
}

#[test]
fn locks_example_counts_every_section() {
    let text = build_and_run("locks.c", &["-O1"], &[]);
    // One thread per CPU, 2 to 4, 20000 sections each: every section counted.
    for kind in ["tas", "ttas", "ticket", "mcs", "clh", "cohort"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{kind}: ")))
            .unwrap_or_else(|| panic!("no line for {kind}: {text}"));
        let (done, total) = line[kind.len() + 2..]
            .split_once(" of ")
            .unwrap_or_else(|| panic!("{line}"));
        assert_eq!(done, total, "{line}");
        assert!(["40000", "60000", "80000"].contains(&total), "{line}");
    }
    assert!(
        text.contains("no topology: the cohort lock needs a topology"),
        "{text}"
    );
}

#[test]
fn omp_places_follow_the_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = two_cpus(dir.path());
    let path = std::ffi::CString::new(m.to_str().expect("utf-8")).expect("path");
    // SAFETY: a NUL-terminated path; the objects are freed once.
    unsafe {
        let t = topoprobe::tp_topology_load(path.as_ptr());
        assert!(!t.is_null());
        let s = topoprobe::omp::tp_omp_places(t, topoprobe::TP_POLICY_CON_CORE, 2);
        assert!(!s.is_null());
        assert_eq!(std::ffi::CStr::from_ptr(s).to_str().unwrap(), "{0},{1}");
        topoprobe::tp_string_free(s);
        assert!(topoprobe::omp::tp_omp_places(t, 99, 2).is_null());
        topoprobe::tp_topology_free(t);
    }
}
