//! How to keep a memory measurement out of the caches, measured: for buffers of 16 MiB to
//! 1 GiB on one pinned thread (4 KiB pages), the read bandwidth after evicting the buffer
//! with `clflush` / `dc civac`, read again without eviction, read again with non-temporal
//! loads (x86_64 with AVX-512 only), the write bandwidth with regular and with non-temporal
//! stores, and what the eviction itself costs per line. The figures behind the choice of
//! the memory probe (docs/MEASURING.md, "Why eviction").
//!
//! `cargo run --release -p topoprobe-measure --example eviction [CPU] [ROUNDS]`

use std::time::Instant;

use topoprobe_measure::memory::kernels::{self, Isa, Kernel};
use topoprobe_sys::buffer::{Buffer, PagePlacement};
use topoprobe_sys::counter::{can_flush, flush_lines};

/// Seconds to evict every line of `b`.
fn evict(b: &Buffer) -> f64 {
    let t = Instant::now();
    flush_lines(b.words());
    t.elapsed().as_secs_f64()
}

/// The median of some figures (NaN for none).
fn median(v: &[f64]) -> f64 {
    topoprobe_model::median(v).unwrap_or(f64::NAN)
}

/// GB/s of `f` moving `bytes`.
fn rate(bytes: usize, f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    bytes as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// Reads `words` with non-temporal loads (`vmovntdqa`), when the CPU has AVX-512.
fn nt_read(words: &[u64]) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && (words.as_ptr() as usize).is_multiple_of(64)
        {
            // SAFETY: the CPU has AVX-512F (checked above) and the buffer is 64-byte
            // aligned; the loads stay within `words`.
            return Some(unsafe { nt_read_avx512(words) });
        }
    }
    let _ = words;
    None
}

/// # Safety
///
/// The CPU must have AVX-512F and `words` must be 64-byte aligned.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn nt_read_avx512(words: &[u64]) -> u64 {
    use std::arch::x86_64::{
        __m512i, _mm512_setzero_si512, _mm512_storeu_si512, _mm512_stream_load_si512,
        _mm512_xor_si512,
    };
    let mut acc = _mm512_setzero_si512();
    let p = words.as_ptr().cast::<__m512i>();
    for i in 0..words.len() / 8 {
        // SAFETY: `i < words.len() / 8`, so the 64 bytes at `p + i` lie in `words`, and
        // they are 64-byte aligned (the caller's promise).
        acc = _mm512_xor_si512(acc, unsafe { _mm512_stream_load_si512(p.add(i).cast()) });
    }
    let mut out = [0u64; 8];
    // SAFETY: `out` holds 64 bytes; an unaligned store is allowed.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), acc) };
    out.iter().fold(0, |a, b| a ^ b)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let cpu: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let rounds: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5).max(1);
    if let Err(e) = topoprobe_sys::affinity::pin_current_thread(cpu) {
        eprintln!("cannot pin to CPU {cpu}: {e}");
        std::process::exit(1);
    }
    if !can_flush() {
        eprintln!("lines cannot be evicted by instruction on this architecture");
        std::process::exit(1);
    }
    let isa = Isa::detect();
    println!(
        "CPU {cpu}, {} kernels, {rounds} rounds, medians; GB/s = 10^9 bytes/s",
        isa.name()
    );
    println!("size     read evicted  read again  NT loads again  write evicted  NT stores  eviction ns/line");
    for mib in [16usize, 64, 192, 1024] {
        let bytes = mib << 20;
        let placement = PagePlacement {
            node: None,
            huge_pages: Some(false),
        };
        let mut b = match Buffer::new(bytes, placement) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{mib} MiB: {e}");
                continue;
            }
        };
        b.words_mut().fill(1);
        let (mut evicted, mut again, mut nt, mut ev, mut write, mut ntw) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            ev.push(evict(&b) * 1e9 / (bytes / 64) as f64);
            evicted.push(rate(bytes, || {
                std::hint::black_box(kernels::run(Kernel::Read, isa, false, b.words(), &mut []));
            }));
            again.push(rate(bytes, || {
                std::hint::black_box(kernels::run(Kernel::Read, isa, false, b.words(), &mut []));
            }));
            if nt_read(&b.words()[..8]).is_some() {
                nt.push(rate(bytes, || {
                    std::hint::black_box(nt_read(b.words()));
                }));
            }
            evict(&b);
            write.push(rate(bytes, || {
                kernels::run(Kernel::Write, isa, false, &[], b.words_mut());
            }));
            evict(&b);
            ntw.push(rate(bytes, || {
                kernels::run(Kernel::Write, isa, true, &[], b.words_mut());
            }));
        }
        let nt = if nt.is_empty() {
            "-".to_string()
        } else {
            format!("{:.1}", median(&nt))
        };
        println!(
            "{mib:>5} MiB {:>11.1} {:>11.1} {:>15} {:>14.1} {:>10.1} {:>17.2}",
            median(&evicted),
            median(&again),
            nt,
            median(&write),
            median(&ntw),
            median(&ev)
        );
    }
}
