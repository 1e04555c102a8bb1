//! The inference's memory is a few bytes per entry of its table, whatever the table holds,
//! so that `infer --from-matrix` of 4096 contexts stays within 256 MiB (docs/LIMITS.md,
//! "The inference's working tables"). Counted by this crate's allocator over every thread
//! of the process, so this test is a test binary of its own.

use topoprobe_fuzz::alloc::measure_process;
use topoprobe_infer::sim::{platforms, Noise};
use topoprobe_infer::{infer_owned, InferOptions};
use topoprobe_model::LatencyMatrix;

/// Contexts of the tables: 512 cores of two contexts, above the 384 components from which
/// the profile comparisons keep each one's nearest only, as at 4096.
const N: usize = 1024;

/// The most bytes the inference may hold at once per entry of the N×N table, besides the
/// input table it is given (4 bytes an entry), the description it returns included (its
/// normalized table, 4 more). 10.3 to 12.2 were measured at 1024 contexts, where the
/// tables of a few hundred components still weigh; at 4096 the whole of
/// `infer --from-matrix` of such tables peaks at 207–215 MiB (docs/BENCHMARKS.md), where it
/// took 703–734 MiB while the socket clustering held square tables.
const BYTES_PER_ENTRY: f64 = 13.0;

/// A number in `0..1` that looks random, from the unordered pair `(a, b)` and a seed.
fn scrambled(a: usize, b: usize, seed: u64) -> f64 {
    let (lo, hi) = (a.min(b) as u64, a.max(b) as u64);
    let mut x = lo
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(hi.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
        .wrapping_add(seed);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// The tables a user may bring: a machine with structure (a chiplet server),
/// latencies without any, and a directed measurement whose two directions of a pair
/// differ.
fn tables() -> Vec<(&'static str, LatencyMatrix)> {
    // 2 sockets of 32 CCDs of 8 cores of 2 contexts, 1% noise.
    let structured = platforms::chiplet_server(2, 32)
        .with_noise(Noise::lognormal(0.01, 42))
        .matrix();
    assert_eq!(structured.len(), N);
    let unstructured = LatencyMatrix::from_fn(N, |a, b| Some(50.0 + 250.0 * scrambled(a, b, 2)));
    let directed = LatencyMatrix::from_fn(N, |a, b| {
        Some(100.0 + 200.0 * scrambled(a, b, 3) + 5.0 * scrambled(b * N + a, a * N + b, 4))
    });
    vec![
        ("structured", structured),
        ("unstructured", unstructured),
        ("directed", directed),
    ]
}

#[test]
fn the_inference_holds_a_few_bytes_per_entry_of_any_table() {
    let entries = (N * N) as f64;
    for (name, m) in tables() {
        let (topo, peak) = measure_process(|| infer_owned(m, &InferOptions::default()));
        let topo = topo.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(topo.contexts().len(), N);
        let per_entry = peak as f64 / entries;
        eprintln!("{name}: {peak} bytes at most, {per_entry:.2} per entry");
        assert!(
            per_entry <= BYTES_PER_ENTRY,
            "{name}: the inference held {peak} bytes, {per_entry:.2} per entry of the {N}×{N} table"
        );
    }
}
