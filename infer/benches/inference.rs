//! Speed of `topoprobe_infer::infer` on simulated machines of 64, 256, 512, 1024 and 2048 hardware
//! contexts. The latency matrix is generated once per machine, outside the timed loop.
//!
//! Two families of two-socket machines (log-normal noise sigma 0.01, seed 42):
//!
//! - `ccx`: sockets of CCXs of 8 SMT2 cores (8 ns SMT, 25 ns in a CCX, 120 ns between the
//!   CCXs of a socket, 230 ns between sockets), scaled by the number of CCXs per socket;
//! - `mesh`: flat sockets of SMT2 cores on a mesh (7.4 ns SMT, 48 ns in a socket with
//!   gradient 0.2, 140 ns between sockets), scaled by the number of cores per socket.
//!
//! `cargo bench -p topoprobe-infer --bench inference` (about 2 minutes on a 2-vCPU VM, most of
//! it at the two largest sizes); `cargo bench -p topoprobe-infer --bench inference --
//! '/(64|256|512)$'` skips them. `examples/infer_timing.rs` times the same machines without
//! criterion.

use std::time::Duration;

use criterion::{criterion_main, BenchmarkId, Criterion, SamplingMode};
use topoprobe_infer::infer;
use topoprobe_infer::sim::platforms::{ccx_server, mesh_server};
use topoprobe_infer::sim::Noise;

/// Noise of every benchmarked matrix.
const NOISE: Noise = Noise::lognormal(0.01, 42);

fn bench_infer(c: &mut Criterion) {
    let mut group = c.benchmark_group("infer");
    group.sample_size(10);
    for contexts in [64_usize, 256, 512, 1024, 2048] {
        if contexts >= 512 {
            // Few iterations per sample, 10 samples: a run takes about 50 ms at 512
            // contexts, 0.1 s at 1024 and 0.45 s at 2048 on a 2-vCPU Zen 5 guest.
            let secs = if contexts >= 1024 { 15 } else { 4 };
            group
                .sampling_mode(SamplingMode::Flat)
                .warm_up_time(Duration::from_millis(1))
                .measurement_time(Duration::from_secs(secs));
        } else {
            group
                .sampling_mode(SamplingMode::Auto)
                .warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(4));
        }
        for (family, spec) in [
            ("ccx", ccx_server(contexts / 32).with_noise(NOISE)),
            ("mesh", mesh_server(contexts / 4).with_noise(NOISE)),
        ] {
            let matrix = spec.matrix();
            assert_eq!(matrix.len(), contexts, "{}", spec.name);
            let opts = spec.infer_options();
            group.bench_with_input(BenchmarkId::new(family, contexts), &matrix, |b, matrix| {
                b.iter(|| infer(matrix, &opts).expect("the simulated matrix is valid"));
            });
        }
    }
    group.finish();
}

// The macros define undocumented items of criterion's own.
#[allow(missing_docs)]
mod harness {
    use super::bench_infer;
    criterion::criterion_group!(benches, bench_infer);
}
criterion_main!(harness::benches);
