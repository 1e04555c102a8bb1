//! Streaming kernels for bandwidth: read, write and copy over whole buffers, with AVX-512
//! or AVX2 where the CPU has them (chosen at run time), NEON-width portable loops
//! elsewhere, and non-temporal stores on request. What a kernel does and the instruction
//! set it runs with are named in [`super::kernel_kinds`].

pub use super::kernel_kinds::{Isa, Kernel};

/// The instruction set `run` uses for these buffers: `isa` when the CPU has it and the
/// buffers the kernel touches are 64-byte aligned and a multiple of 64 bytes long (an
/// unused buffer may be empty), else [`Isa::Portable`].
#[must_use]
pub fn effective_isa(kernel: Kernel, isa: Isa, src: &[u64], dst: &[u64]) -> Isa {
    let fits = |b: &[u64]| (b.as_ptr() as usize).is_multiple_of(64) && b.len().is_multiple_of(8);
    let aligned = match kernel {
        Kernel::Read => fits(src),
        Kernel::Write => fits(dst),
        Kernel::Copy | Kernel::Mix(_) => fits(src) && fits(dst),
    };
    let has = match isa {
        Isa::Avx512 => Isa::detect() == Isa::Avx512,
        Isa::Avx2 => Isa::detect() != Isa::Portable,
        Isa::Portable => true,
    };
    if aligned && has {
        isa
    } else {
        Isa::Portable
    }
}

/// Runs `kernel` once over `src` (and `dst` for write and copy; `dst` must be at least as
/// long as `src` for copy), with [`effective_isa`]. Returns a value that depends on what
/// was read, so the loads cannot be removed.
pub fn run(kernel: Kernel, isa: Isa, non_temporal: bool, src: &[u64], dst: &mut [u64]) -> u64 {
    if let Kernel::Mix(mix) = kernel {
        return super::mixes::run(mix, isa, non_temporal, src, dst);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let chosen = effective_isa(kernel, isa, src, dst);
        if chosen != Isa::Portable {
            return x86::run(kernel, chosen, non_temporal, src, dst);
        }
    }
    let _ = (isa, non_temporal);
    portable(kernel, src, dst)
}

fn portable(kernel: Kernel, src: &[u64], dst: &mut [u64]) -> u64 {
    match kernel {
        Kernel::Read => {
            let mut acc = [0u64; 8];
            for chunk in src.chunks_exact(8) {
                for (a, v) in acc.iter_mut().zip(chunk) {
                    *a ^= v;
                }
            }
            acc.iter().fold(0, |x, y| x ^ y)
        }
        Kernel::Write => {
            dst.fill(1);
            dst.len() as u64
        }
        Kernel::Copy => {
            let n = src.len().min(dst.len());
            dst[..n].copy_from_slice(&src[..n]);
            n as u64
        }
        Kernel::Mix(mix) => super::mixes::run(mix, Isa::Portable, false, src, dst),
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Isa, Kernel};

    pub(super) fn run(kernel: Kernel, isa: Isa, nt: bool, src: &[u64], dst: &mut [u64]) -> u64 {
        let wide = isa == Isa::Avx512;
        // SAFETY: `effective_isa` checked that the CPU has AVX2 (and AVX-512 for `wide`)
        // and that the buffers the kernel touches are 64-byte aligned and a multiple of 64
        // bytes long; the kernels only touch `src[..len]` and `dst[..len]` with aligned
        // vector accesses.
        unsafe {
            match (kernel, wide) {
                (Kernel::Read, true) => read512(src),
                (Kernel::Read, false) => read256(src),
                (Kernel::Write, true) => write512(dst, nt),
                (Kernel::Write, false) => write256(dst, nt),
                (Kernel::Copy, true) => copy512(src, dst, nt),
                (Kernel::Copy, false) => copy256(src, dst, nt),
                (Kernel::Mix(_), _) => 0,
            }
        }
    }

    /// # Safety
    ///
    /// The CPU has AVX2 (the caller checked it at run time) and `src` starts 32-byte aligned; the kernel
    /// touches whole vectors within the slices only.
    #[target_feature(enable = "avx2")]
    unsafe fn read256(src: &[u64]) -> u64 {
        let p = src.as_ptr().cast::<__m256i>();
        let blocks = src.len() / 4;
        // Four independent accumulators, as many loads in flight as likwid-bench's
        // four-way unrolled load kernel.
        let (mut a, mut b, mut c, mut d) = (
            _mm256_setzero_si256(),
            _mm256_setzero_si256(),
            _mm256_setzero_si256(),
            _mm256_setzero_si256(),
        );
        let mut i = 0;
        while i + 4 <= blocks {
            // SAFETY: i + 3 < blocks; p is 32-byte aligned.
            unsafe {
                a = _mm256_xor_si256(a, _mm256_load_si256(p.add(i)));
                b = _mm256_xor_si256(b, _mm256_load_si256(p.add(i + 1)));
                c = _mm256_xor_si256(c, _mm256_load_si256(p.add(i + 2)));
                d = _mm256_xor_si256(d, _mm256_load_si256(p.add(i + 3)));
            }
            i += 4;
        }
        while i < blocks {
            // SAFETY: i < blocks.
            a = _mm256_xor_si256(a, unsafe { _mm256_load_si256(p.add(i)) });
            i += 1;
        }
        let x = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
        (_mm256_extract_epi64::<0>(x)
            ^ _mm256_extract_epi64::<1>(x)
            ^ _mm256_extract_epi64::<2>(x)
            ^ _mm256_extract_epi64::<3>(x)) as u64
    }

    /// # Safety
    ///
    /// The CPU has AVX-512F (the caller checked it at run time) and `src` starts 64-byte aligned; the kernel
    /// touches whole vectors within the slices only.
    #[target_feature(enable = "avx512f")]
    unsafe fn read512(src: &[u64]) -> u64 {
        let p = src.as_ptr().cast::<__m512i>();
        let blocks = src.len() / 8;
        let (mut a, mut b, mut c, mut d) = (
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
        );
        let mut i = 0;
        while i + 4 <= blocks {
            // SAFETY: i + 3 < blocks; p is 64-byte aligned.
            unsafe {
                a = _mm512_xor_si512(a, _mm512_load_si512(p.add(i)));
                b = _mm512_xor_si512(b, _mm512_load_si512(p.add(i + 1)));
                c = _mm512_xor_si512(c, _mm512_load_si512(p.add(i + 2)));
                d = _mm512_xor_si512(d, _mm512_load_si512(p.add(i + 3)));
            }
            i += 4;
        }
        while i < blocks {
            // SAFETY: i < blocks.
            a = _mm512_xor_si512(a, unsafe { _mm512_load_si512(p.add(i)) });
            i += 1;
        }
        let x = _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d));
        _mm512_reduce_add_epi64(x) as u64
    }

    /// # Safety
    ///
    /// The CPU has AVX2 (the caller checked it at run time) and `dst` starts 32-byte aligned; the kernel
    /// touches whole vectors within the slices only.
    #[target_feature(enable = "avx2")]
    unsafe fn write256(dst: &mut [u64], nt: bool) -> u64 {
        let p = dst.as_mut_ptr().cast::<__m256i>();
        let v = _mm256_set1_epi64x(1);
        for i in 0..dst.len() / 4 {
            // SAFETY: i < len / 4; p is aligned.
            unsafe {
                if nt {
                    _mm256_stream_si256(p.add(i), v);
                } else {
                    _mm256_store_si256(p.add(i), v);
                }
            }
        }
        _mm_sfence();
        dst.len() as u64
    }

    /// # Safety
    ///
    /// The CPU has AVX-512F (the caller checked it at run time) and `dst` starts 64-byte aligned; the kernel
    /// touches whole vectors within the slices only.
    #[target_feature(enable = "avx512f")]
    unsafe fn write512(dst: &mut [u64], nt: bool) -> u64 {
        let p = dst.as_mut_ptr().cast::<__m512i>();
        let v = _mm512_set1_epi64(1);
        for i in 0..dst.len() / 8 {
            // SAFETY: i < len / 8; p is 64-byte aligned.
            unsafe {
                if nt {
                    _mm512_stream_si512(p.add(i), v);
                } else {
                    _mm512_store_si512(p.add(i), v);
                }
            }
        }
        _mm_sfence();
        dst.len() as u64
    }

    /// # Safety
    ///
    /// The CPU has AVX2 (the caller checked it at run time) and `src` and `dst` start 32-byte aligned; the kernel
    /// touches whole vectors within the slices only.
    #[target_feature(enable = "avx2")]
    unsafe fn copy256(src: &[u64], dst: &mut [u64], nt: bool) -> u64 {
        let n = src.len().min(dst.len()) / 4;
        let (s, d) = (
            src.as_ptr().cast::<__m256i>(),
            dst.as_mut_ptr().cast::<__m256i>(),
        );
        for i in 0..n {
            // SAFETY: i < n blocks of both buffers; both aligned.
            unsafe {
                let v = _mm256_load_si256(s.add(i));
                if nt {
                    _mm256_stream_si256(d.add(i), v);
                } else {
                    // A volatile store: a plain one lets the compiler turn the loop into memcpy,
                    // whose non-temporal stores would measure another kernel.
                    std::ptr::write_volatile(d.add(i), v);
                }
            }
        }
        _mm_sfence();
        n as u64
    }

    /// # Safety
    ///
    /// The CPU has AVX-512F (the caller checked it at run time) and `src` and `dst` start 64-byte aligned; the kernel
    /// touches whole vectors within the slices only.
    #[target_feature(enable = "avx512f")]
    unsafe fn copy512(src: &[u64], dst: &mut [u64], nt: bool) -> u64 {
        let n = src.len().min(dst.len()) / 8;
        let (s, d) = (
            src.as_ptr().cast::<__m512i>(),
            dst.as_mut_ptr().cast::<__m512i>(),
        );
        for i in 0..n {
            // SAFETY: i < n blocks of both buffers; both 64-byte aligned.
            unsafe {
                let v = _mm512_load_si512(s.add(i));
                if nt {
                    _mm512_stream_si512(d.add(i), v);
                } else {
                    // Volatile for the same reason as in copy256.
                    std::ptr::write_volatile(d.add(i), v);
                }
            }
        }
        _mm_sfence();
        n as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_sys::buffer::{Buffer, PagePlacement};

    #[test]
    fn every_kernel_and_isa_reads_writes_and_copies_everything() {
        let mut a = Buffer::new(64 << 10, PagePlacement::default()).unwrap();
        let mut b = Buffer::new(64 << 10, PagePlacement::default()).unwrap();
        for (i, w) in a.words_mut().iter_mut().enumerate() {
            *w = i as u64;
        }
        for isa in [Isa::Avx512, Isa::Avx2, Isa::Portable] {
            for nt in [false, true] {
                b.words_mut().fill(0);
                run(Kernel::Copy, isa, nt, a.words(), b.words_mut());
                assert_eq!(a.words(), b.words(), "{isa:?} nt={nt}");
                run(Kernel::Write, isa, nt, &[], b.words_mut());
                assert!(b.words().iter().all(|&w| w == 1), "{isa:?} nt={nt}");
            }
        }
        // A read needs no destination: the vector kernel runs with an empty one.
        if Isa::detect() != Isa::Portable {
            assert_eq!(
                effective_isa(Kernel::Read, Isa::Avx2, a.words(), &[]),
                Isa::Avx2
            );
            assert_eq!(
                effective_isa(Kernel::Write, Isa::Avx2, &[], b.words()),
                Isa::Avx2
            );
        }
        assert_eq!(
            effective_isa(Kernel::Read, Isa::Avx2, &a.words()[1..], &[]),
            Isa::Portable
        );
        // Reading the buffer's words back gives a value that depends on them: all ones xor
        // to zero in pairs, a single changed word changes it.
        let zero = run(Kernel::Read, Isa::detect(), false, b.words(), &mut []);
        b.words_mut()[17] = 3;
        let changed = run(Kernel::Read, Isa::detect(), false, b.words(), &mut []);
        assert_ne!(zero, changed);
    }
}
