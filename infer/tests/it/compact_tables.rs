//! The latency tables are compact: 4 bytes an entry in memory, and a description writes
//! them one row per line with 5 significant digits, so that a description of 4096
//! contexts of ordinary latencies takes under 256 MiB, a quarter of what a reader accepts. Checked here at 512 contexts, and
//! scaled to 4096 (the full size is `docs/BENCHMARKS.md`'s benchmark).

use topoprobe_infer::sim::platforms;
use topoprobe_infer::sim::Noise;
use topoprobe_infer::{infer_owned, InferOptions};
use topoprobe_model::format::json::{from_json_str, to_json_string};
use topoprobe_model::limits::MAX_FILE_BYTES;

#[test]
fn a_large_description_is_written_compactly_and_reads_back_at_its_resolution() {
    // 2 sockets × 16 CCDs × 8 cores × 2 contexts: 512 contexts.
    let spec = platforms::chiplet_server(2, 16).with_noise(Noise::lognormal(0.01, 42));
    let m = spec.matrix();
    let n = m.len();
    assert_eq!(n, 512);
    assert_eq!(m.bytes(), 4 * n * n, "one f32 an entry");
    let topo = infer_owned(m, &InferOptions::default()).expect("inferred");
    let text = to_json_string(&topo);
    // One line per row of each table, not one per entry.
    assert!(
        text.lines().count() < n * n / 16,
        "{} lines",
        text.lines().count()
    );
    let tables = 2 * n * n;
    let per_entry = text.len() as f64 / tables as f64;
    // Scaled to 4096 contexts, the description fits the reader's limit with room.
    let at_4096 = per_entry * 2.0 * 4096.0 * 4096.0;
    assert!(
        at_4096 < 0.9 * (MAX_FILE_BYTES / 4) as f64,
        "{per_entry:.2} bytes an entry: {:.0} MB at 4096 contexts",
        at_4096 / 1e6
    );
    // Read back, it is the same description, tables included (at 5 significant digits).
    let back = from_json_str(&text, std::path::Path::new("d.json")).expect("read back");
    assert_eq!(back.latency_tables().raw, topo.latency_tables().raw);
    assert_eq!(to_json_string(&back), text);
}
