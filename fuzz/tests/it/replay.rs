//! Replays the committed inputs of every fuzz target as an ordinary test: the curated seeds
//! (`seeds/<target>/`, written by `scripts/fuzz-seeds.py`) and the named regressions
//! (`regressions/<target>/`, see `reproducers.rs`). Each file must go through its target
//! without a panic. The queue a campaign grows is kept out of the repository
//! (`scripts/fuzz.sh` minimizes it into `target/fuzz-corpus/`).

use std::path::{Path, PathBuf};

/// The files of `dir`, sorted (none when it does not exist).
fn files_of(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    files
}

#[test]
fn every_seed_and_regression_replays() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, target) in topoprobe_fuzz::TARGETS {
        let seeds = files_of(&root.join("seeds").join(name));
        assert!(!seeds.is_empty(), "{name}: no seed in fuzz/seeds/{name}");
        let regressions = files_of(&root.join("regressions").join(name));
        for f in seeds.iter().chain(&regressions) {
            let data = std::fs::read(f).expect("a committed input");
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name}: {} panics", f.display());
        }
    }
    topoprobe_fuzz::sysfs_cleanup();
}
