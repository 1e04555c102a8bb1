//! Read/write mixes of the bandwidth kernels (MLC's `-W` mixes): three streams read and one
//! written, two and one, STREAM's triad; all reads and 1:1 are the read and copy kernels
//! ([`super::kernels`]). Each mix runs with regular and with non-temporal stores, through
//! the same rounds, eviction and spinning gate as read, write and copy
//! ([`super::bandwidth::measure_kernels`] with [`Kernel::Mix`]).

use topoprobe_model::Mix;

use super::kernel_kinds::{Isa, Kernel};

/// The kernel that runs `mix`.
#[must_use]
pub const fn kernel(mix: Mix) -> Kernel {
    match mix {
        Mix::AllReads => Kernel::Read,
        Mix::OneToOne => Kernel::Copy,
        m => Kernel::Mix(m),
    }
}

/// Words of each stream when `words` words hold the streams of `mix`: an equal share,
/// a whole number of 64-byte lines.
#[must_use]
pub const fn stream_words(mix: Mix, words: usize) -> usize {
    let (r, w) = mix.streams();
    words / (r + w) / 8 * 8
}

/// One pass of a written mix: `src` holds its read streams back to back (each
/// `dst.len()` words), `dst` the written one. Returns a value that depends on what was
/// read. All reads and 1:1 are not written mixes: they run the read and copy kernels.
pub fn run(mix: Mix, isa: Isa, non_temporal: bool, src: &[u64], dst: &mut [u64]) -> u64 {
    let n = dst.len();
    let (reads, _) = mix.streams();
    if src.len() < reads * n {
        return 0;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let aligned = |p: *const u64| (p as usize).is_multiple_of(32);
        if isa != Isa::Portable
            && Isa::detect() != Isa::Portable
            && n.is_multiple_of(4)
            && aligned(src.as_ptr())
            && aligned(dst.as_ptr())
        {
            // SAFETY: the CPU has AVX2 (checked above at run time), both slices start
            // 32-byte aligned, every read stream is `n` words within `src` (checked above)
            // and `n` is a whole number of 256-bit vectors.
            return unsafe { x86::run(mix, non_temporal, src, dst) };
        }
    }
    let _ = (isa, non_temporal);
    portable(mix, src, dst)
}

fn portable(mix: Mix, src: &[u64], dst: &mut [u64]) -> u64 {
    let n = dst.len();
    match mix {
        Mix::ThreeToOne => {
            let (a, rest) = src.split_at(n);
            let (b, c) = rest.split_at(n);
            for (((d, a), b), c) in dst.iter_mut().zip(a).zip(b).zip(c) {
                *d = a ^ b ^ c;
            }
        }
        Mix::TwoToOne => {
            let (a, b) = src.split_at(n);
            for ((d, a), b) in dst.iter_mut().zip(a).zip(b) {
                *d = a ^ b;
            }
        }
        Mix::Triad => {
            let (b, c) = src.split_at(n);
            for ((d, b), c) in dst.iter_mut().zip(b).zip(c) {
                *d = b.wrapping_add(c.wrapping_mul(3));
            }
        }
        Mix::AllReads | Mix::OneToOne => {}
    }
    dst.first().copied().unwrap_or(0) ^ dst.last().copied().unwrap_or(0)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use topoprobe_model::Mix;

    /// # Safety
    ///
    /// The CPU has AVX2; `src` and `dst` start 32-byte aligned; `src` holds at least as
    /// many read streams of `dst.len()` words as `mix` reads; `dst.len()` is a multiple of 4.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn run(mix: Mix, nt: bool, src: &[u64], dst: &mut [u64]) -> u64 {
        let n = dst.len();
        let blocks = n / 4;
        let s = src.as_ptr().cast::<__m256i>();
        let d = dst.as_mut_ptr().cast::<__m256i>();
        let store = |p: *mut __m256i, v: __m256i| {
            // SAFETY: `p` is a 32-byte-aligned vector within `dst` (the callers below).
            unsafe {
                if nt {
                    _mm256_stream_si256(p, v);
                } else {
                    _mm256_store_si256(p, v);
                }
            }
        };
        for i in 0..blocks {
            // SAFETY: i < blocks; the streams are `blocks` vectors apart, all within `src`.
            let v = unsafe {
                match mix {
                    Mix::ThreeToOne => _mm256_xor_si256(
                        _mm256_xor_si256(
                            _mm256_load_si256(s.add(i)),
                            _mm256_load_si256(s.add(blocks + i)),
                        ),
                        _mm256_load_si256(s.add(2 * blocks + i)),
                    ),
                    Mix::TwoToOne => _mm256_xor_si256(
                        _mm256_load_si256(s.add(i)),
                        _mm256_load_si256(s.add(blocks + i)),
                    ),
                    _ => {
                        let c = _mm256_load_si256(s.add(blocks + i));
                        _mm256_add_epi64(
                            _mm256_load_si256(s.add(i)),
                            _mm256_add_epi64(_mm256_slli_epi64::<1>(c), c),
                        )
                    }
                }
            };
            // SAFETY: i < blocks, within `dst`.
            store(unsafe { d.add(i) }, v);
        }
        if nt {
            _mm_sfence();
        }
        dst.first().copied().unwrap_or(0) ^ dst.last().copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_written_mix_computes_the_same_with_and_without_vectors_and_streaming_stores() {
        // 64-byte aligned words from a buffer.
        let n = 64;
        for mix in [Mix::ThreeToOne, Mix::TwoToOne, Mix::Triad] {
            let mut buf = topoprobe_sys::buffer::Buffer::new(
                8 * 4 * n,
                topoprobe_sys::buffer::PagePlacement::default(),
            )
            .unwrap();
            for (i, w) in buf.words_mut().iter_mut().enumerate() {
                *w = i as u64 * 7 + 1;
            }
            let words = buf.words_mut();
            let per = stream_words(mix, words.len());
            let (r, _) = mix.streams();
            let (src, rest) = words.split_at_mut(r * per);
            let mut expected = vec![0u64; per];
            portable(mix, src, &mut expected);
            for nt in [false, true] {
                let dst = &mut rest[..per];
                dst.fill(0);
                run(mix, Isa::detect(), nt, src, dst);
                assert_eq!(dst, &expected[..], "{mix:?} nt {nt}");
            }
            let b = src[per];
            let c = src[(r - 1) * per];
            let want = match mix {
                Mix::Triad => src[0].wrapping_add(c.wrapping_mul(3)),
                Mix::TwoToOne => src[0] ^ b,
                _ => src[0] ^ b ^ c,
            };
            assert_eq!(expected[0], want, "{mix:?}");
        }
        assert_eq!(kernel(Mix::AllReads), Kernel::Read);
        assert_eq!(kernel(Mix::OneToOne), Kernel::Copy);
    }
}
