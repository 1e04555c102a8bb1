//! `topoprobe os`: the operating system's view of a hwloc-gather-topology capture, as text
//! and JSON, and the refusal of bad archives (a `..` entry, a link out, an entry over a
//! limit, a FIFO, a missing file, a file that is no tar archive) with clear errors, exit
//! status 1, and no temporary directory left behind.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{arg, outcome};

/// A capture made here with hwloc-gather-topology (`data/sysfs/` of the repository).
fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/sysfs")
        .join(format!("{name}.tar.bz2"))
}

/// Runs `topoprobe os ARGS` with its temporary files under `tmp`.
fn os(tmp: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(common::exe())
        .arg("os")
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .expect("running topoprobe");
    outcome(&out)
}

/// Asserts that `topoprobe os` left nothing in `tmp`.
fn nothing_left(tmp: &Path) {
    let left: Vec<_> = std::fs::read_dir(tmp).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn json_of_a_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let path = capture("intel-xeon-6-207-vm-16c");
    let (code, out, err) = os(tmp.path(), &["--root", arg(&path), "--json"]);
    assert_eq!(code, 0, "{err}");
    nothing_left(tmp.path());
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let counts = &v["counts"];
    assert_eq!(counts["packages"], 1);
    assert_eq!(counts["cores"], 16);
    assert_eq!(counts["pus"], 16);
    assert_eq!(counts["numa_nodes"], 1);
    // 16 L1d, 16 L1i, 16 L2, one L3.
    assert_eq!(counts["caches"], 49);
    let cpus = v["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 16);
    let cpu5 = &cpus[5];
    assert_eq!(cpu5["cpu"], 5);
    assert_eq!(cpu5["package"], 0);
    assert_eq!(cpu5["core"], 5);
    assert_eq!(cpu5["node"], 0);
    let caches = cpu5["caches"].as_array().unwrap();
    assert_eq!(caches.len(), 4);
    let l3 = caches.iter().find(|c| c["level"] == 3).unwrap();
    assert_eq!(l3["size_bytes"], 300 << 20);
    assert_eq!(l3["type"], "unified");
    assert_eq!(l3["cpus"].as_array().unwrap().len(), 16);
    let l2 = caches.iter().find(|c| c["level"] == 2).unwrap();
    assert_eq!(l2["cpus"], serde_json::json!([5]));
    let node = &v["nodes"][0];
    assert_eq!(node["node"], 0);
    assert_eq!(node["cpus"].as_array().unwrap().len(), 16);
    assert_eq!(node["memory_bytes"], 4_550_128_u64 * 1024);
    assert_eq!(node["distances"], serde_json::json!([10]));
    assert_eq!(v["cpuset"].as_array().unwrap().len(), 16);
    assert_eq!(v["disallowed"], serde_json::json!([]));
    assert_eq!(v["offline"], serde_json::json!([]));
}

#[test]
fn text_of_a_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let path = capture("amd-zen4-vm-2c");
    let (code, out, err) = os(tmp.path(), &["--root", arg(&path)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    nothing_left(tmp.path());
    assert!(out.contains("1 package,"), "{out}");
    assert!(
        out.contains("2 cores, 2 CPUs (no SMT), 1 NUMA node"),
        "{out}"
    );
    assert!(out.contains("Package 0: CPUs 0-1"), "{out}");
    assert!(
        out.contains("L3 unified ×1 (32 MiB, 64 B lines, 16-way): 0-1"),
        "{out}"
    );
    assert!(
        out.contains("L2 unified ×2 (1 MiB, 64 B lines, 8-way): 0 | 1"),
        "{out}"
    );
    assert!(out.contains("NUMA node 0: CPUs 0-1"), "{out}");
    assert!(
        out.contains("cgroup cpuset: 0-1; disallowed online CPUs: none"),
        "{out}"
    );
    // A sysfs root given as a directory reads the same.
    let unpacked = tmp.path().join("u");
    std::fs::create_dir(&unpacked).unwrap();
    let status = Command::new("tar")
        .args(["xjf", arg(&path), "-C", arg(&unpacked)])
        .status()
        .expect("running tar");
    assert!(status.success());
    let (code, dir_out, err) = os(
        tmp.path(),
        &["--root", arg(&unpacked.join("amd-zen4-vm-2c"))],
    );
    assert_eq!(code, 0, "{err}");
    let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&dir_out), body(&out));
}

#[test]
fn this_machine_and_csv_refused() {
    let out = common::run_ok(&["os", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["counts"]["pus"].as_u64().unwrap() >= 1);
    let err = common::run_fail(&["os", "--format", "csv"], 2);
    assert!(err.contains("not a table"), "{err}");
}

/// One ustar header and its data, padded to 512 bytes.
fn entry(name: &str, kind: u8, data: &[u8], size: u64, link: &str) -> Vec<u8> {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(b"0000644");
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = kind;
    h[157..157 + link.len()].copy_from_slice(link.as_bytes());
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    let mut out = h.to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out
}

/// A tar archive of `entries` (each from [`entry`]), ended by two zero blocks.
fn archive(dir: &Path, name: &str, entries: &[Vec<u8>]) -> PathBuf {
    let mut bytes: Vec<u8> = entries.concat();
    bytes.resize(bytes.len() + 1024, 0);
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Runs `os --root ARCHIVE`, expects exit status 1 and an error holding every one of
/// `words`, and nothing left in the temporary directory.
fn refused(archive: &Path, words: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = os(tmp.path(), &["--root", arg(archive)]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(out, "");
    for w in words {
        assert!(err.contains(w), "{w:?} not in {err:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
    nothing_left(tmp.path());
}

#[test]
fn bad_archives_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let top = entry("m/", b'5', b"", 0, "");
    let cpu = entry("m/sys/devices/system/cpu/", b'5', b"", 0, "");
    // An entry with `..`.
    let a = archive(
        d,
        "dotdot.tar",
        &[top.clone(), entry("m/../../evil", b'0', b"x", 1, "")],
    );
    refused(&a, &["dotdot.tar", "entry 2", "m/../../evil", "`..`"]);
    // An absolute path.
    let a = archive(d, "absolute.tar", &[entry("/etc/evil", b'0', b"x", 1, "")]);
    refused(&a, &["entry 1", "absolute"]);
    // A link out of the capture.
    let a = archive(
        d,
        "link.tar",
        &[top.clone(), entry("m/sys", b'2', b"", 0, "../../../etc")],
    );
    refused(&a, &["entry 2", "m/sys", "leads out of the capture"]);
    // A file over the limit: refused from its header, before any byte is written.
    let a = archive(
        d,
        "big.tar",
        &[
            top.clone(),
            entry("m/proc/cpuinfo", b'0', b"", 17 << 20, ""),
        ],
    );
    refused(
        &a,
        &["entry 2", "m/proc/cpuinfo", "17825792 bytes", "LIMITS.md"],
    );
    // A FIFO.
    let a = archive(
        d,
        "fifo.tar",
        &[
            top.clone(),
            entry("m/sys/devices/system/cpu/online", b'6', b"", 0, ""),
        ],
    );
    refused(&a, &["entry 2", "a FIFO"]);
    // A pax name longer than PATH_MAX: refused before it is created, its name shortened
    // in the message.
    let long = format!("m/{}", "n".repeat(5000));
    let record = format!("path={long}\n");
    let record = format!(
        "{} {record}",
        record.len() + 1 + (record.len() + 5).to_string().len()
    );
    let a = archive(
        d,
        "pax.tar",
        &[
            top.clone(),
            entry("pax", b'x', record.as_bytes(), record.len() as u64, ""),
            entry("m/short", b'0', b"", 0, ""),
        ],
    );
    refused(&a, &["entry 3", "longer than 4096 bytes", "nnn…"]);
    // An archive without the CPUs' files: the error names the file inside the archive.
    let a = archive(d, "empty.tar", &[top, cpu]);
    refused(&a, &["empty.tar:m/sys/devices/system/cpu", "no online CPU"]);
    // No tar archive at all.
    let a = d.join("notes.tar.bz2");
    std::fs::write(&a, "these are not the sysfs you are looking for\n").unwrap();
    refused(&a, &["notes.tar.bz2", "not a tar archive"]);
    // A missing file.
    refused(
        &d.join("missing.tar.bz2"),
        &["missing.tar.bz2", "No such file"],
    );
}
