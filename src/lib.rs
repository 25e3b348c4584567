//! mmafuzz finds, explains and pins down how GPU matrix units really do floating-point
//! arithmetic.
//!
//! The pipeline: structured `D = A·B + C` cases ([`case`]) in any [`format`] are executed three
//! ways — on the GPU, on the bit-accurate [`model::Emulator`] parameterised by a numeric
//! [`model::Model`] (TOML data), and on the exact MPFR reference ([`exact`]) — and compared.
//! [`probes`] holds the hand-made experiments of the seed papers, [`gemm`] whole-matrix schedules
//! such as FTTN's `D = C − A·B`, [`gen`] edge-biased case generators and [`bench`] the throughput
//! measurement. Cases travel as JSONL lines ([`case`]) or, a batch of one shape at a time, as
//! NumPy `.npz` arrays ([`npz`]).
//!
//! ```
//! use mmafuzz::{exact, Emulator, Format, MmaCase, Model, Rounding};
//!
//! let mut case = MmaCase::zeros(Format::F16, Format::F32, 1, 1, 4);
//! case.a = vec![0x3c00; 4]; // 1.0
//! case.b = vec![0x0001; 4]; // 2^-24
//! case.c = vec![0x3f80_0000]; // 1.0
//! let v100 = Emulator::new(Model::load("v100")?);
//! assert_eq!(v100.run(&case)?, vec![0x3f80_0000]); // the four 2^-24 are lost (Fasi et al.)
//! let x = &exact::exact_tile(&case)[0];
//! assert_eq!(x.round(Format::F32, Rounding::Rne), 0x3f80_0002); // 1 + 2^-22
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// `fn NAME(ARGS) BODY` whose body is compiled three times: for AVX-512 and for AVX2, each taken
/// where the CPU has it (detected at run time), and for the crate's baseline (SSE2 on x86-64)
/// otherwise. For the slice loops around the lane kernel and over npz elements, which the
/// baseline leaves half as wide or scalar (the lane kernel itself chooses the same way).
macro_rules! simd_where_available {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn any($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2")]
            unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                any($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                any($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if $crate::has_avx512() {
                // SAFETY: the CPU has these AVX-512 subsets and AVX2.
                return unsafe { avx512($($arg),*) };
            }
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                return unsafe { avx2($($arg),*) };
            }
            any($($arg),*)
        }
    };
}

/// Whether this CPU has the AVX-512 subsets (F, VL, BW, DQ) and AVX2 that
/// `simd_where_available!` compiles its widest form for (checked once).
#[cfg(target_arch = "x86_64")]
#[doc(hidden)]
pub fn has_avx512() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx2")
    })
}

pub mod bench;
pub mod blockscale;
pub mod case;
pub mod corpus;
pub mod engine;
pub mod exact;
pub mod exec;
pub mod features;
pub mod fuzzing;
pub mod format;
pub mod gemm;
pub mod gen;
pub mod hunt;
pub mod infer;
pub mod library;
pub mod model;
pub mod npy_header;
pub mod npz;
pub mod probes;
pub mod replay;
pub mod sparse;
pub mod report;
pub mod store;

pub use case::MmaCase;
pub use format::{Format, Rounding};
pub use model::{Emulator, Model};
