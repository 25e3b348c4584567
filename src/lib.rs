//! mmafuzz finds, explains and pins down how GPU matrix units really do floating-point
//! arithmetic.
//!
//! The pipeline: structured `D = A·B + C` cases ([`case`]) in any [`format`] are executed three
//! ways — on the GPU, on the bit-accurate [`model::Emulator`] parameterised by a numeric
//! [`model::Model`] (TOML data), and on the exact MPFR reference ([`exact`]) — and compared.
//! [`probes`] holds the hand-made experiments of the seed papers, [`gemm`] whole-matrix schedules
//! such as FTTN's `D = C − A·B`, [`gen`] edge-biased case generators and [`bench`] the throughput
//! measurement.

pub mod bench;
pub mod case;
pub mod exact;
pub mod format;
pub mod gemm;
pub mod gen;
pub mod model;
pub mod probes;

pub use case::MmaCase;
pub use format::{Format, Rounding};
pub use model::{Emulator, Model};
