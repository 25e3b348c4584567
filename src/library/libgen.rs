//! The matrix generator shared with the GPU-side scripts (`scripts/torch-lib.py` implements the
//! same function in NumPy): element `i` of operand `X` (0 = A, 1 = B, 2 = C) of seed `s` is a
//! function of `(s, X, i)` alone, so a whole GEMM of any shape is stored by reference.
//!
//! Values look like `randn` data: a random sign, a random significand and an exponent in
//! 2^-4 .. 2^3, so sums carry and cancel and every rounding of the schedule shows.

use crate::format::Format;

/// SplitMix64's output function.
pub fn splitmix64(x: u64) -> u64 {
    let x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let z = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Which operand of the GEMM an element belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    A = 0,
    B = 1,
    C = 2,
}

/// The raw bits of element `index` (row-major) of `operand` in format `f`. Formats with a
/// 32-bit container (f32, tf32) draw all 23 significand bits: a TF32 GEMM reads f32 arrays and
/// its conversion is part of what is modelled.
pub fn element(f: Format, seed: u64, operand: Operand, index: u64) -> u64 {
    let key = (seed << 40).wrapping_add((operand as u64) << 36).wrapping_add(index);
    let r = splitmix64(key);
    if f.is_integer() {
        // Integer GEMMs: uniform over the format's patterns.
        return r & f.mask();
    }
    let (width, mant, bias) = layout(f);
    let sign = r >> 63;
    let field = bias - 4 + ((r >> 56) & 7);
    (sign << (width - 1)) | (field << mant) | (r & ((1u64 << mant) - 1))
}

/// `count` consecutive elements from index 0.
pub fn elements(f: Format, seed: u64, operand: Operand, count: usize) -> Vec<u64> {
    (0..count as u64).map(|i| element(f, seed, operand, i)).collect()
}

/// (storage bits, significand field bits, exponent bias) of the container the generator fills.
fn layout(f: Format) -> (u32, u32, u64) {
    match f {
        Format::F16 => (16, 10, 15),
        Format::Bf16 => (16, 7, 127),
        Format::F32 | Format::Tf32 => (32, 23, 127),
        Format::F64 => (64, 52, 1023),
        Format::E4m3 => (8, 3, 7),
        Format::E5m2 => (8, 2, 15),
        // Formats no library path takes: their own layouts, for completeness.
        Format::E3m2 | Format::E2m3 | Format::E2m1 | Format::E4m3fnuz | Format::E5m2fnuz => {
            let s = f.spec();
            (s.storage_bits, s.precision - 1, s.bias as u64)
        }
        // Integer formats take the branch in `element` and never get here.
        Format::S32 | Format::S8 | Format::U8 | Format::S4 | Format::U4 | Format::B1 => (f.storage_bits(), 0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first elements as the NumPy generator of scripts/torch-lib.py prints them
    /// (`gen_bits('float16', 1, 0, 4)` etc.): the two sides must stay identical.
    #[test]
    fn matches_the_numpy_generator() {
        assert_eq!(elements(Format::F16, 1, Operand::A, 4), vec![19337, 16837, 12278, 49035]);
        assert_eq!(elements(Format::Bf16, 1, Operand::A, 4), vec![16649, 16453, 15862, 49035]);
        assert_eq!(elements(Format::F64, 1, Operand::C, 2), vec![4618731576728322392, 13846428842324195163]);
    }

    #[test]
    fn values_are_finite_and_in_range() {
        for f in [Format::F16, Format::Bf16, Format::F32, Format::F64] {
            for x in elements(f, 7, Operand::B, 1000) {
                let v = f.to_f64(x).abs();
                assert!((0.0625..16.0).contains(&v), "{f}: {v}");
            }
        }
    }
}
