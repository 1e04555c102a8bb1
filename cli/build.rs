//! Records what `topoprobe --version` says beside the version: the git commit the binary
//! was built from (short hash, `+dirty` when tracked files had changes; `unknown` outside
//! a git checkout or without git), the profile and the features, in the variable
//! `TOPOPROBE_BUILD_INFO`.
//!
//! The script runs again when the commit moves (`HEAD`, the branch's ref, packed refs),
//! when the index changes (`git add`, a commit) and when a source file of the workspace
//! changes, so that `+dirty` follows the tree.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=build.rs");
    let commit = commit(&manifest);
    watch(&manifest);
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    let opt = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "?".into());
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| k.strip_prefix("CARGO_FEATURE_").map(str::to_lowercase))
        .collect();
    features.sort();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(",")
    };
    let target = std::env::var("TARGET").unwrap_or_default();
    println!(
        "cargo:rustc-env=TOPOPROBE_BUILD_INFO=commit {commit}; {profile} profile, opt-level \
         {opt}; features: {features}; {target}"
    );
}

/// Runs git in `dir`; its trimmed output when it succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        // `git status` must not rewrite the index: that would run this script again.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The short commit hash, with `+dirty` when tracked files differ from it; `unknown`.
fn commit(dir: &Path) -> String {
    let Some(hash) = git(dir, &["rev-parse", "--short", "HEAD"]).filter(|h| !h.is_empty()) else {
        return "unknown".into();
    };
    let dirty =
        git(dir, &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{hash}+dirty")
    } else {
        hash
    }
}

/// Asks cargo to run this script again when the commit, the index or a source file of
/// the workspace changes (only paths that exist: a missing one would run it every time).
fn watch(manifest: &Path) {
    let mut paths = Vec::new();
    if let Some(git_dir) = git(manifest, &["rev-parse", "--absolute-git-dir"]) {
        let git_dir = PathBuf::from(git_dir);
        paths.push(git_dir.join("HEAD"));
        paths.push(git_dir.join("index"));
        if let Some(common) = git(manifest, &["rev-parse", "--git-common-dir"]) {
            let common = manifest.join(common);
            paths.push(common.join("packed-refs"));
            if let Some(head) = git(manifest, &["symbolic-ref", "-q", "HEAD"]) {
                paths.push(common.join(head));
            }
        }
    }
    let root = manifest.parent().unwrap_or(manifest);
    if let Ok(entries) = std::fs::read_dir(root) {
        for e in entries.flatten() {
            let src = e.path().join("src");
            if e.path().join("Cargo.toml").is_file() && src.is_dir() {
                paths.push(src);
            }
        }
    }
    for p in paths.into_iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}
