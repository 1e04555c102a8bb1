//! Replays the minimized corpus of every fuzz target (`corpus/<target>/`) as an ordinary
//! test: each file must go through its target without a panic.

use std::path::Path;

#[test]
fn every_corpus_file_replays() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut total = 0;
    for (name, target) in topoprobe_fuzz::TARGETS {
        let dir = corpus.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: empty corpus", dir.display());
        for f in &files {
            let data = std::fs::read(f).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name}: {} panics", f.display());
        }
        total += files.len();
    }
    topoprobe_fuzz::sysfs_cleanup();
    assert!(total >= topoprobe_fuzz::TARGETS.len());
}
