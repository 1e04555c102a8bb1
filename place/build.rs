//! Compiles the pinning library of `topoprobe run` (`preload/src/lib.rs`, which needs
//! nothing but the standard library) with the same `rustc` as this crate, into
//! `$OUT_DIR/libtopoprobe_preload.so`; `src/preload.rs` carries it inside the binary so
//! that an installed `topoprobe` needs no separate file. Built optimised, without
//! unwinding or symbols, whatever the profile: it is loaded into every program `run`
//! starts. Without the source (a crate packaged alone), or where rustc cannot build it,
//! nothing is carried (a build warning says so) and `run` looks for the library on disk
//! only.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let source = manifest.join("../preload/src/lib.rs");
    let names = manifest.join("../sys/src/pin_env_names.rs");
    let out = out_dir.join("libtopoprobe_preload.so");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-changed={}", names.display());
    println!("cargo:rustc-check-cfg=cfg(topoprobe_embedded_preload)");
    if !source.is_file() {
        println!(
            "cargo:warning=no {}: `topoprobe run` will look for the pinning library on disk only",
            source.display()
        );
        return;
    }
    match compile(&source, &out) {
        Ok(()) => println!("cargo:rustc-cfg=topoprobe_embedded_preload"),
        // A target the library cannot be built for on its own: `run` then needs the
        // library on disk (the crate `topoprobe-preload`), and says so.
        Err(e) => println!("cargo:warning=the pinning library is not carried: {e}"),
    }
}

/// Compiles `source` into the shared library `out`.
fn compile(source: &Path, out: &Path) -> Result<(), String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = std::env::var("TARGET").map_err(|e| format!("TARGET: {e}"))?;
    let mut cmd = Command::new(rustc);
    cmd.args([
        "--crate-name",
        "topoprobe_preload",
        "--crate-type",
        "cdylib",
    ])
    .args([
        "--edition",
        "2021",
        "--target",
        &target,
        "--cap-lints",
        "warn",
    ])
    .args([
        "-C",
        "opt-level=2",
        "-C",
        "panic=abort",
        "-C",
        "debuginfo=0",
    ])
    // A shared library links the C library dynamically, also where static is the
    // target's default (musl).
    .args(["-C", "strip=symbols", "-C", "target-feature=-crt-static"]);
    if let Ok(linker) = std::env::var(format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace(['-', '.'], "_")
    )) {
        cmd.arg("-C").arg(format!("linker={linker}"));
    }
    let status = cmd
        .arg("-o")
        .arg(out)
        .arg(source)
        .status()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("rustc could not build {}", source.display()))
    }
}
