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

/// How one line of a generated operand (a row of A, a column of B) is planted with special
/// values in records with `"values": "special"`: decided by (seed, operand, line) alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinePlant {
    /// The line as generated.
    None,
    /// Every element a zero of the element's own sign.
    Zeros,
    /// One element, at this position along the line, is `special_table(f)[which]`.
    One { at: usize, which: usize },
}

/// The special values planted: +inf, −inf, NaN, +max, −max, +0, −0, ± the least subnormal
/// (e4m3 has no infinity: its largest finite value stands in; NaN is the quiet one).
pub fn special_table(f: Format) -> [u64; 9] {
    let (width, mant, _) = layout(f);
    let sign = 1u64 << (width - 1);
    let exp_all = ((1u64 << (width - 1 - mant)) - 1) << mant;
    let (mut inf, mut nan, mut top) = (exp_all, exp_all | (1 << (mant - 1)), (exp_all - (1 << mant)) | ((1 << mant) - 1));
    if f == Format::E4m3 {
        (top, nan) = (0x7e, 0x7f);
        inf = top;
    }
    [inf, inf | sign, nan, top, top | sign, 0, sign, 1, 1 | sign]
}

/// The plant of line `line` (of `len` elements) of operand A (by rows) or B (by columns): an
/// eighth of the lines all signed zeros, a quarter with one special.
pub fn line_plant(seed: u64, operand: Operand, line: u64, len: usize) -> LinePlant {
    let u = splitmix64((seed << 40).wrapping_add((operand as u64 + 4) << 36).wrapping_add(line));
    match u % 8 {
        0 => LinePlant::Zeros,
        1 | 2 => LinePlant::One { at: ((u >> 8) % len as u64) as usize, which: ((u >> 40) % 9) as usize },
        _ => LinePlant::None,
    }
}

/// Element `pos` along a line under its plant, from the element as generated.
pub fn planted(f: Format, plant: LinePlant, pos: usize, generated: u64) -> u64 {
    match plant {
        LinePlant::None => generated,
        LinePlant::Zeros => generated & (1u64 << (layout(f).0 - 1)),
        LinePlant::One { at, which } if at == pos => special_table(f)[which],
        LinePlant::One { .. } => generated,
    }
}

/// Element `index` of C (or of the bias, C's first n elements) in a special record: an eighth
/// of them +inf, −inf, NaN, +0 or −0.
pub fn c_element_special(f: Format, seed: u64, index: u64) -> u64 {
    let u = splitmix64((seed << 40).wrapping_add(6 << 36).wrapping_add(index));
    if u % 8 != 0 {
        return element(f, seed, Operand::C, index);
    }
    let t = special_table(f);
    [t[0], t[1], t[2], t[5], t[6]][((u >> 8) % 5) as usize]
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

    /// Planted specials as scripts/torch-lib.py plants them (`line_plant(5, 0, i, 100)` for
    /// i < 12, `special_table('float16')`, `plant_c('float32', 5, gen_bits('float32', 5, 2, 40))`):
    /// both sides must stay identical.
    #[test]
    fn special_plants_match_the_numpy_generator() {
        assert_eq!(special_table(Format::F16), [0x7c00, 0xfc00, 0x7e00, 0x7bff, 0xfbff, 0, 0x8000, 1, 0x8001]);
        assert_eq!(special_table(Format::E4m3), [0x7e, 0xfe, 0x7f, 0x7e, 0xfe, 0, 0x80, 1, 0x81]);
        let plants: Vec<LinePlant> = (0..12).map(|i| line_plant(5, Operand::A, i, 100)).collect();
        let (one, none, zeros) = (|at, which| LinePlant::One { at, which }, LinePlant::None, LinePlant::Zeros);
        assert_eq!(plants, vec![one(30, 7), none, one(28, 5), none, none, none, none, none, zeros, zeros, none, none]);
        let planted_c: Vec<(u64, u64)> =
            (0..40).map(|i| (i, c_element_special(Format::F32, 5, i))).filter(|&(i, x)| x != element(Format::F32, 5, Operand::C, i)).collect();
        assert_eq!(planted_c, vec![(0, 0x8000_0000), (9, 0), (18, 0), (26, 0x7f80_0000)]);
        // Zeros keep the generated sign; other places of a one-special line stay as generated.
        let g = element(Format::F16, 5, Operand::A, 3);
        assert_eq!(planted(Format::F16, LinePlant::Zeros, 3, g), g & 0x8000);
        assert_eq!(planted(Format::F16, LinePlant::One { at: 2, which: 2 }, 2, g), 0x7e00);
        assert_eq!(planted(Format::F16, LinePlant::One { at: 2, which: 2 }, 3, g), g);
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
