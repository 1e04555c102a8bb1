//! What a streaming kernel does ([`Kernel`]: read, write, copy or a read/write mix) and
//! the instruction set it runs with ([`Isa`]): the names that the kernels
//! ([`super::kernels`]) and the mixes ([`super::mixes`]) both run by.

/// What a kernel does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Loads every word (likwid-bench `load`).
    Read,
    /// Stores every word (likwid-bench `store`).
    Write,
    /// Loads one buffer and stores another (likwid-bench `copy`).
    Copy,
    /// A written read/write mix ([`super::mixes`]): several streams read, one written.
    Mix(topoprobe_model::Mix),
}

/// The instruction set a kernel runs with.
///
/// With the `clap` feature it is a command-line value (`topoprobe mem --isa`): the first
/// paragraph of each variant's documentation is its help there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Isa {
    /// AVX-512.
    ///
    /// 512-bit loads and stores.
    Avx512,
    /// AVX2.
    ///
    /// 256-bit loads and stores.
    Avx2,
    /// Plain loops (SSE2 / NEON by the compiler).
    ///
    /// Loops the compiler vectorizes (SSE2 on x86_64, NEON on aarch64).
    Portable,
}

impl Isa {
    /// The widest instruction set this CPU has.
    #[must_use]
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Self::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Self::Avx2;
            }
        }
        Self::Portable
    }

    /// Its name in output.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Avx512 => "avx512",
            Self::Avx2 => "avx2",
            Self::Portable => {
                if cfg!(target_arch = "aarch64") {
                    "neon"
                } else {
                    "sse2"
                }
            }
        }
    }
}
