//! The matrix generator shared with the GPU-side scripts (`scripts/torch-lib.py` implements the
//! same function in NumPy): element `i` of operand `X` (0 = A, 1 = B, 2 = C) of seed `s` is a
//! function of `(s, X, i)` alone, so a whole GEMM of any shape is stored by reference.
//!
//! Values look like `randn` data: a random sign, a random significand and an exponent in
//! 2^-4 .. 2^3, so sums carry and cancel and every rounding of the schedule shows. A record's
//! `"values"` names a [`Style`] that draws them otherwise (planted specials, Irwin–Hall values,
//! a wide exponent range, halves of K that cancel); [`styled`] is the one entry point for all
//! of them, and `scripts/libgen.py` implements every style in NumPy and in PyTorch.

use crate::format::{Format, Overflow, Rounding};

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
    let r = splitmix64(key(seed, operand, index));
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

/// The key whose SplitMix64 output decides element `index` of `operand`: every style draws
/// from the same `r` for the same element.
fn key(seed: u64, operand: Operand, index: u64) -> u64 {
    (seed << 40).wrapping_add((operand as u64) << 36).wrapping_add(index)
}

/// How the values of a generated GEMM are drawn: a record's `"values"` (absent = uniform).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Style {
    /// [`element`]: random sign and significand, exponent 2^-4 .. 2^3.
    #[default]
    Uniform,
    /// Uniform, with specials planted into lines of A and B and elements of C
    /// ([`line_plant`], [`c_element_special`]).
    Special,
    /// [`normal_element`]: Irwin–Hall values in (−4, 4), rounded to the format.
    Normal,
    /// [`wide_element`]: the exponent uniform over ±[`wide_exponent_range`].
    Wide,
    /// The second half of K repeats the first with A negated and B one unit in the last place
    /// off, so that sums along K nearly cancel ([`KLine::at`]). C is uniform.
    Cancel,
}

impl Style {
    pub const ALL: [Style; 5] = [Style::Uniform, Style::Special, Style::Normal, Style::Wide, Style::Cancel];

    /// The name records and scripts use.
    pub fn name(self) -> &'static str {
        match self {
            Style::Uniform => "uniform",
            Style::Special => "special",
            Style::Normal => "normal",
            Style::Wide => "wide",
            Style::Cancel => "cancel",
        }
    }
}

impl std::fmt::Display for Style {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        out.write_str(self.name())
    }
}

/// A value style name that is none of [`Style::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a value style (uniform, special, normal, wide or cancel)")]
pub struct UnknownStyle(pub String);

impl std::str::FromStr for Style {
    type Err = UnknownStyle;

    fn from_str(s: &str) -> Result<Style, UnknownStyle> {
        Style::ALL.into_iter().find(|x| x.name() == s).ok_or_else(|| UnknownStyle(s.to_string()))
    }
}

/// How the generator numbers an operand's elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Row-major in the logical shape: element (row, col) of a rows×cols operand at
    /// `row·cols + col`.
    #[default]
    RowMajor,
    /// Generated as the transpose, cols×rows row-major: element (row, col) at `col·rows + row`
    /// (a record's `"layout": "bt"` B, made as Bᵀ, n×k).
    Transposed,
}

impl Order {
    /// (row, col) of the element at generator index `index`.
    #[inline]
    fn position(self, index: u64, rows: usize, cols: usize) -> (u64, u64) {
        match self {
            Order::RowMajor => (index / cols as u64, index % cols as u64),
            Order::Transposed => (index % rows as u64, index / rows as u64),
        }
    }

    /// The generator index of element (row, col).
    #[inline]
    fn index(self, row: u64, col: u64, rows: usize, cols: usize) -> u64 {
        match self {
            Order::RowMajor => row * cols as u64 + col,
            Order::Transposed => col * rows as u64 + row,
        }
    }
}

/// Element `index` (row-major) of `operand` of logical shape rows×cols (A m×k, B k×n, C m×n;
/// C ignores the shape, and the bias is C's first n elements) in style `style`.
pub fn styled(f: Format, style: Style, seed: u64, operand: Operand, index: u64, rows: usize, cols: usize) -> u64 {
    styled_in(f, style, seed, operand, Order::RowMajor, index, rows, cols)
}

/// [`styled`] for an operand the generator numbers in `order`: `index` is the generator's
/// index, rows×cols still the logical shape.
#[allow(clippy::too_many_arguments)]
pub fn styled_in(f: Format, style: Style, seed: u64, operand: Operand, order: Order, index: u64, rows: usize, cols: usize) -> u64 {
    match (style, operand) {
        (Style::Uniform, _) | (Style::Cancel, Operand::C) => element(f, seed, operand, index),
        (Style::Normal, _) => normal_element(f, seed, operand, index),
        (Style::Wide, _) => wide_element(f, seed, operand, index),
        (Style::Special, Operand::C) => c_element_special(f, seed, index),
        (Style::Special | Style::Cancel, _) => {
            let (row, col) = order.position(index, rows, cols);
            let (line, pos) = if operand == Operand::A { (row, col) } else { (col, row) };
            KLine::new(f, style, seed, operand, order, line, rows, cols).at(pos as usize)
        }
    }
}

/// One line along K of a generated A (row `line`) or B (column `line`), numbered in `order`,
/// of logical shape rows×cols: the styles that work by lines (special plants, cancel pairs)
/// decide once per line what [`KLine::at`] applies to each element.
#[derive(Clone, Copy, Debug)]
pub struct KLine {
    f: Format,
    style: Style,
    seed: u64,
    operand: Operand,
    order: Order,
    line: u64,
    rows: usize,
    cols: usize,
    plant: LinePlant,
}

impl KLine {
    /// Line `line` of A or B (C has no lines: its styles go element by element).
    #[allow(clippy::too_many_arguments)]
    pub fn new(f: Format, style: Style, seed: u64, operand: Operand, order: Order, line: u64, rows: usize, cols: usize) -> KLine {
        assert!(operand != Operand::C, "C is generated element by element");
        let depth = if operand == Operand::A { cols } else { rows };
        let plant = if style == Style::Special { line_plant(seed, operand, line, depth) } else { LinePlant::None };
        KLine { f, style, seed, operand, order, line, rows, cols, plant }
    }

    /// The generator index of position `pos` along the line.
    #[inline]
    fn index(&self, pos: u64) -> u64 {
        let (row, col) = if self.operand == Operand::A { (self.line, pos) } else { (pos, self.line) };
        self.order.index(row, col, self.rows, self.cols)
    }

    /// Positions 0, 1, ... of the line (as many as `out` holds, at most the line's length):
    /// [`KLine::at`] of each, the style's choice made once for the whole line.
    pub fn fill(&self, out: &mut [u64]) {
        let (f, seed, operand) = (self.f, self.seed, self.operand);
        let (start, stride) = (self.index(0), self.index(1) - self.index(0));
        let index = |pos: usize| start + pos as u64 * stride;
        match self.style {
            Style::Normal => out.iter_mut().enumerate().for_each(|(pos, x)| *x = normal_element(f, seed, operand, index(pos))),
            Style::Wide => out.iter_mut().enumerate().for_each(|(pos, x)| *x = wide_element(f, seed, operand, index(pos))),
            Style::Uniform | Style::Special | Style::Cancel => out.iter_mut().enumerate().for_each(|(pos, x)| *x = element(f, seed, operand, index(pos))),
        }
        match (self.style, self.plant) {
            (Style::Special, LinePlant::Zeros) => out.iter_mut().for_each(|x| *x &= 1u64 << (layout(f).0 - 1)),
            (Style::Special, LinePlant::One { at, which }) if at < out.len() => out[at] = special_table(f)[which],
            (Style::Cancel, _) if !f.is_integer() => {
                let depth = if operand == Operand::A { self.cols } else { self.rows };
                let half = depth / 2;
                let flip = if operand == Operand::A { 1u64 << (layout(f).0 - 1) } else { 1 };
                for pos in half..(2 * half).min(out.len()) {
                    out[pos] = out[pos - half] ^ flip;
                }
            }
            _ => {}
        }
    }

    /// The element at position `pos` along K.
    ///
    /// Cancel: with half = ⌊K/2⌋, positions below half are [`element`]'s; position half + j
    /// repeats position j, A's with the sign flipped, B's with the lowest significand bit
    /// flipped (of the container: bit 0 for TF32 too); for odd K the last position is
    /// [`element`]'s. A dot product along K so sums pairs a·b − a·(b ± ulp): the exact sum is
    /// tiny against the products, and what a schedule rounds on the way shows whole. Integer
    /// formats: as [`element`].
    #[inline]
    pub fn at(&self, pos: usize) -> u64 {
        let (f, seed, operand, pos) = (self.f, self.seed, self.operand, pos as u64);
        match self.style {
            Style::Uniform => element(f, seed, operand, self.index(pos)),
            Style::Normal => normal_element(f, seed, operand, self.index(pos)),
            Style::Wide => wide_element(f, seed, operand, self.index(pos)),
            Style::Special => planted(f, self.plant, pos as usize, element(f, seed, operand, self.index(pos))),
            Style::Cancel => {
                let depth = if operand == Operand::A { self.cols } else { self.rows };
                let half = (depth / 2) as u64;
                if f.is_integer() || pos < half || pos >= 2 * half {
                    return element(f, seed, operand, self.index(pos));
                }
                let flip = if operand == Operand::A { 1u64 << (layout(f).0 - 1) } else { 1 };
                element(f, seed, operand, self.index(pos - half)) ^ flip
            }
        }
    }
}

/// Irwin–Hall values: the four 16-bit fields h0..h3 of `r` (h0 the lowest), the value
/// (h0 + h1 + h2 + h3 − 131070)·2^-15 (exact in f64 and f32, |value| < 4, mean 0, standard
/// deviation about 1.15) rounded to nearest, ties to even (the largest round to ±4 in the
/// narrow formats; the smallest to signed zeros in E4M3). TF32 is rounded as its f32
/// container. Integer formats: as [`element`].
pub fn normal_element(f: Format, seed: u64, operand: Operand, index: u64) -> u64 {
    if f.is_integer() {
        return element(f, seed, operand, index);
    }
    let r = splitmix64(key(seed, operand, index));
    let sum = (0..4).map(|i| ((r >> (16 * i)) & 0xffff) as i64).sum::<i64>() - 131_070;
    normal_value(f, sum)
}

/// `sum`·2^-15 (|sum| < 2^17) rounded to nearest even in `f` (TF32 as f32). The value is exact
/// in f32, so f32 and f64 take it as it is, and f16 and bf16 round it once from f32.
fn normal_value(f: Format, sum: i64) -> u64 {
    let value = sum as f32 * (1.0 / 32768.0);
    match f {
        Format::F32 | Format::Tf32 => value.to_bits() as u64,
        Format::F64 => (value as f64).to_bits(),
        Format::F16 => half::f16::from_f32(value).to_bits() as u64,
        Format::Bf16 => half::bf16::from_f32(value).to_bits() as u64,
        _ => f.round(sum < 0, sum.unsigned_abs() as u128, -15, false, Rounding::Rne, Overflow::Ieee),
    }
}

/// The exponent range ±W of the wide style: a product of two values (below 2^(2W+2)) stays
/// finite in the format with room left for sums of many (TF32 as its f32 container).
pub fn wide_exponent_range(f: Format) -> u64 {
    match f {
        Format::F16 => 5,
        Format::Bf16 | Format::F32 | Format::Tf32 => 60,
        Format::F64 => 500,
        Format::E4m3 | Format::E4m3fnuz => 3,
        Format::E5m2 | Format::E5m2fnuz => 6,
        Format::E3m2 => 1,
        // One binade of normals below the largest: no room to widen.
        Format::E2m3 | Format::E2m1 => 0,
        Format::S32 | Format::S8 | Format::U8 | Format::S4 | Format::U4 | Format::B1 => 0,
    }
}

/// A random sign (bit 63 of `r`), a random significand (the low significand bits of `r`, as
/// [`element`]) and the unbiased exponent ((r >> 40) mod (2W+1)) − W, W =
/// [`wide_exponent_range`]. Integer formats: as [`element`].
pub fn wide_element(f: Format, seed: u64, operand: Operand, index: u64) -> u64 {
    if f.is_integer() {
        return element(f, seed, operand, index);
    }
    let r = splitmix64(key(seed, operand, index));
    let (width, mant, bias) = layout(f);
    let w = wide_exponent_range(f);
    // bias − W + ((r >> 40) mod (2W+1)): never below 1 (no subnormals), never at the top.
    let field = bias - w + (r >> 40) % (2 * w + 1);
    ((r >> 63) << (width - 1)) | (field << mant) | (r & ((1u64 << mant) - 1))
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

    const FORMATS: [Format; 6] = [Format::F16, Format::Bf16, Format::F32, Format::F64, Format::E4m3, Format::E5m2];

    /// `count` elements of an operand, row-major or numbered as the transpose.
    fn styled_all(f: Format, style: Style, seed: u64, operand: Operand, order: Order, rows: usize, cols: usize) -> Vec<u64> {
        (0..(rows * cols) as u64).map(|i| styled_in(f, style, seed, operand, order, i, rows, cols)).collect()
    }

    /// The new styles' first elements as scripts/libgen.py prints them (`python3
    /// scripts/libgen.py selftest`: A of seed 1, C of seed 9; cancel A 2×5, B 5×2 and B 5×2
    /// numbered as Bᵀ, seed 4): the Rust, NumPy and PyTorch sides must stay identical.
    #[test]
    fn new_styles_match_the_numpy_generator() {
        let want: [(Style, Format, [u64; 4], [u64; 3]); 12] = [
            (Style::Normal, Format::F16, [14458, 47642, 48287, 42360], [47675, 11560, 16971]),
            (Style::Normal, Format::Bf16, [16143, 48963, 49044, 48303], [48967, 15781, 16457]),
            (Style::Normal, Format::F32, [1057964032, 3208852480, 3214138368, 3165585408], [3209125888, 1034219520, 1078553856]),
            (
                Style::Normal,
                Format::F64,
                [4603215380847001600, 13828415355782955008, 13831253195294244864, 13805186523378745344],
                [13828562140585263104, 4590467643034566656, 4614269458435801088],
            ),
            (Style::Normal, Format::E4m3, [49, 180, 185, 139], [180, 26, 69]),
            (Style::Normal, Format::E5m2, [56, 186, 189, 165], [186, 45, 66]),
            (Style::Wide, Format::F16, [21385, 20933, 12278, 43915], [12108, 16287, 52798]),
            (Style::Wide, Format::Bf16, [19721, 12741, 14454, 52619], [11596, 9247, 51006]),
            (Style::Wide, Format::F32, [1292944265, 834981317, 940121078, 3455540107], [759865164, 608925599, 3343961662]),
            (
                Style::Wide,
                Format::F64,
                [3345454518896739209, 2897224642735689157, 4692606864457276406, 15742760514980633483],
                [4095756962351456076, 4809483167025821599, 12266674536330612286],
            ),
            (Style::Wide, Format::E4m3, [49, 45, 38, 163], [44, 79, 206]),
            (Style::Wide, Format::E5m2, [81, 49, 82, 171], [72, 83, 202]),
        ];
        for (style, f, a, c) in want {
            assert_eq!(styled_all(f, style, 1, Operand::A, Order::RowMajor, 1, 4), a, "{style} {f} A");
            assert_eq!(styled_all(f, style, 9, Operand::C, Order::RowMajor, 1, 3), c, "{style} {f} C");
            if f == Format::F32 {
                // TF32 GEMMs read f32 arrays: the same bits.
                assert_eq!(styled_all(Format::Tf32, style, 1, Operand::A, Order::RowMajor, 1, 4), a, "{style} tf32 A");
            }
        }
        // (format, A 2×5, B 5×2, B 5×2 as Bᵀ)
        type Cancel = (Format, [u64; 10], [u64; 10], [u64; 10]);
        let cancel: [Cancel; 6] = [
            (
                Format::F16,
                [48253, 11810, 15485, 44578, 17196, 19095, 46236, 51863, 13468, 50135],
                [46158, 48947, 17248, 16942, 46159, 48946, 17249, 16943, 12167, 49807],
                [46158, 48947, 46159, 48946, 49890, 13735, 44711, 13734, 44710, 49807],
            ),
            (
                Format::Bf16,
                [49149, 15778, 16381, 48546, 16428, 16663, 48796, 49431, 16028, 49239],
                [48846, 49075, 16480, 16430, 48847, 49074, 16481, 16431, 15751, 49167],
                [48846, 49075, 48847, 49074, 49250, 16039, 48551, 16038, 48550, 49167],
            ),
            (
                Format::F32,
                [3221210237, 1032414754, 1073726589, 3179898402, 1081212716, 1096120983, 3196647580, 3243604631, 1049163932, 3225263063],
                [3199196238, 3220635443, 1081830240, 1075733038, 3199196239, 3220635442, 1081830241, 1075733039, 1038864263, 3223483023],
                [3199196238, 3220635443, 3199196239, 3220635442, 3224280802, 1053494695, 3184317095, 1053494694, 3184317094, 3223483023],
            ),
            (
                Format::F64,
                [
                    13834767037500474493,
                    4590590923620574754,
                    4611395000645698685,
                    13813962960475350562,
                    4615931983199076140,
                    4623475683695622807,
                    13821874911377422492,
                    13846847720550398615,
                    4598502874522646684,
                    13837188660903910359,
                ],
                [
                    13824103700570823758,
                    13833925575811989299,
                    4615835540271098720,
                    4615490998928040494,
                    13824103700570823759,
                    13833925575811989298,
                    4615835540271098721,
                    4615490998928040495,
                    4590735016759906183,
                    13837772401156453007,
                ],
                [
                    13824103700570823758,
                    13833925575811989299,
                    13824103700570823759,
                    13833925575811989298,
                    13838262042394271458,
                    4599344457639988647,
                    13815456841994130087,
                    4599344457639988646,
                    13815456841994130086,
                    13837772401156453007,
                ],
            ),
            (
                Format::E4m3,
                [189, 26, 61, 154, 68, 87, 172, 215, 44, 199],
                [174, 187, 64, 70, 175, 186, 65, 71, 31, 199],
                [174, 187, 175, 186, 194, 47, 159, 46, 158, 199],
            ),
            (
                Format::E5m2,
                [189, 46, 61, 174, 64, 75, 180, 203, 52, 195],
                [182, 191, 64, 66, 183, 190, 65, 67, 47, 195],
                [182, 191, 183, 190, 194, 55, 175, 54, 174, 195],
            ),
        ];
        for (f, a, b, bt) in cancel {
            assert_eq!(styled_all(f, Style::Cancel, 4, Operand::A, Order::RowMajor, 2, 5), a, "cancel {f} A");
            assert_eq!(styled_all(f, Style::Cancel, 4, Operand::B, Order::RowMajor, 5, 2), b, "cancel {f} B");
            assert_eq!(styled_all(f, Style::Cancel, 4, Operand::B, Order::Transposed, 5, 2), bt, "cancel {f} B as Bᵀ");
        }
        // Specials of a B numbered as Bᵀ: planted by B's columns (the stored rows).
        assert_eq!(
            styled_all(Format::F16, Style::Special, 5, Operand::B, Order::Transposed, 6, 3),
            [49880, 12789, 14902, 16155, 45107, 50346, 11459, 18994, 45489, 17073, 47411, 51534, 0, 32768, 0, 32768, 0, 32768]
        );
    }

    /// `styled` in the uniform and special styles is the generator and plants as they were.
    #[test]
    fn uniform_and_special_styles_are_the_plain_and_planted_generator() {
        let (m, k, n) = (24, 40, 16);
        for f in FORMATS {
            for i in 0..(m * k) as u64 {
                let g = element(f, 5, Operand::A, i);
                assert_eq!(styled(f, Style::Uniform, 5, Operand::A, i, m, k), g);
                let p = line_plant(5, Operand::A, i / k as u64, k);
                assert_eq!(styled(f, Style::Special, 5, Operand::A, i, m, k), planted(f, p, (i % k as u64) as usize, g));
                assert_eq!(styled(f, Style::Special, 5, Operand::C, i, m, k), c_element_special(f, 5, i));
            }
            for kk in 0..k {
                for j in 0..n {
                    let p = line_plant(5, Operand::B, j as u64, k);
                    let (at, at_t) = ((kk * n + j) as u64, (j * k + kk) as u64);
                    let want = planted(f, p, kk, element(f, 5, Operand::B, at));
                    assert_eq!(styled(f, Style::Special, 5, Operand::B, at, k, n), want);
                    let want_t = planted(f, p, kk, element(f, 5, Operand::B, at_t));
                    assert_eq!(styled_in(f, Style::Special, 5, Operand::B, Order::Transposed, at_t, k, n), want_t);
                }
            }
        }
    }

    /// A line filled at once is the line element by element, whole or in part.
    #[test]
    fn filled_lines_are_their_elements() {
        for f in FORMATS {
            for style in Style::ALL {
                for (operand, order, rows, cols) in
                    [(Operand::A, Order::RowMajor, 5, 33), (Operand::B, Order::RowMajor, 33, 5), (Operand::B, Order::Transposed, 33, 5)]
                {
                    for line in 0..5 {
                        for seed in 0..8 {
                            let l = KLine::new(f, style, seed, operand, order, line, rows, cols);
                            let mut whole = vec![0; 33];
                            l.fill(&mut whole);
                            assert_eq!(whole, (0..33).map(|pos| l.at(pos)).collect::<Vec<_>>(), "{style} {f} {operand:?} {order:?}");
                            let each: Vec<u64> = (0..33u64)
                                .map(|pos| {
                                    let (row, col) = if operand == Operand::A { (line, pos) } else { (pos, line) };
                                    styled_in(f, style, seed, operand, order, order.index(row, col, rows, cols), rows, cols)
                                })
                                .collect();
                            assert_eq!(whole, each, "{style} {f} {operand:?} {order:?}");
                            let mut part = vec![0; 20];
                            l.fill(&mut part);
                            assert_eq!(part, whole[..20]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn style_names_read_back() {
        for s in Style::ALL {
            assert_eq!(s.name().parse::<Style>(), Ok(s));
            assert_eq!(s.to_string(), s.name());
        }
        assert_eq!(Style::default(), Style::Uniform);
        let e = "gaussian".parse::<Style>().unwrap_err().to_string();
        assert!(e.contains("'gaussian'") && e.contains("cancel"), "{e}");
    }

    /// Normal values lie in [−4, 4] (below 4 before rounding), finite, spread like a Gaussian
    /// of standard deviation 1.15; every format rounds the same value.
    #[test]
    fn normal_values_are_bounded_and_spread() {
        for f in FORMATS {
            let v: Vec<f64> = (0..20_000).map(|i| f.to_f64(normal_element(f, 3, Operand::A, i))).collect();
            assert!(v.iter().all(|x| x.is_finite() && x.abs() <= 4.0), "{f}");
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let sd = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64).sqrt();
            assert!(mean.abs() < 0.05 && (1.1..1.2).contains(&sd), "{f}: mean {mean}, sd {sd}");
            if f != Format::F64 {
                // The f64 value rounded once to the format.
                for i in 0..2000 {
                    let exact = Format::F64.to_f64(normal_element(Format::F64, 3, Operand::A, i));
                    let got = f.to_f64(normal_element(f, 3, Operand::A, i));
                    let (neg, mag, exp) = (exact < 0.0, (exact.abs() * 32768.0) as u128, -15);
                    assert_eq!(got, f.to_f64(f.round(neg, mag, exp, false, Rounding::Rne, Overflow::Ieee)));
                }
            }
        }
        // Exact in f64: (sum − 131070)·2^-15 with the sum of four 16-bit fields.
        let r = splitmix64(key(3, Operand::A, 7));
        let sum: u64 = (0..4).map(|i| (r >> (16 * i)) & 0xffff).sum();
        assert_eq!(Format::F64.to_f64(normal_element(Format::F64, 3, Operand::A, 7)), (sum as f64 - 131070.0) / 32768.0);
    }

    /// Every value the normal style can take, rounded by the format description (one rounding
    /// to nearest even of the exact value) and as `normal_value` rounds it.
    #[test]
    fn normal_values_round_once_to_nearest_even() {
        for f in [Format::F16, Format::Bf16, Format::F32, Format::Tf32, Format::F64, Format::E4m3, Format::E5m2] {
            let container = if f == Format::Tf32 { Format::F32 } else { f };
            for sum in -131_070i64..=131_070 {
                let want = container.round(sum < 0, sum.unsigned_abs() as u128, -15, false, Rounding::Rne, Overflow::Ieee);
                assert_eq!(normal_value(f, sum), want, "{f}: {sum}·2^-15");
            }
        }
    }

    /// Wide values: finite, normal, the exponent over all of ±W.
    #[test]
    fn wide_exponents_cover_their_range() {
        for f in [Format::F16, Format::Bf16, Format::F32, Format::Tf32, Format::F64, Format::E4m3, Format::E5m2] {
            let (_, mant, bias) = layout(f);
            let w = wide_exponent_range(f) as i64;
            let mut seen = std::collections::BTreeSet::new();
            for i in 0..40_000 {
                let x = wide_element(f, 7, Operand::B, i);
                assert!(f.to_f64(x).is_finite() && f.to_f64(x) != 0.0, "{f}: {x:#x}");
                let e = ((x >> mant) & ((1 << (layout(f).0 - 1 - mant)) - 1)) as i64 - bias as i64;
                assert!(e.abs() <= w, "{f}: exponent {e}");
                seen.insert(e);
            }
            assert_eq!(seen.len() as i64, 2 * w + 1, "{f}");
            // A product of two of the widest stays finite.
            let top = f.to_f64(f.max_finite_bits(false));
            assert!(2f64.powi(2 * w as i32 + 2) < top, "{f}");
        }
    }

    /// The cancel style's halves pair up along K (A negated, B one bit off), an odd K's last
    /// position is the generator's, and an A row times a B column sums to almost nothing:
    /// exactly (MPFR), the sum of the pairs is at most 2^-mant of the sum of |products|.
    #[test]
    fn cancel_halves_pair_up_and_nearly_cancel() {
        use rug::Float;
        for f in [Format::F16, Format::Bf16, Format::F32, Format::F64, Format::E4m3, Format::E5m2] {
            let (width, mant, _) = layout(f);
            for (m, n, k) in [(3, 2, 64), (2, 3, 1001), (1, 1, 4096), (2, 2, 7)] {
                let a = |i: usize, kk: usize| styled(f, Style::Cancel, 11, Operand::A, (i * k + kk) as u64, m, k);
                let b = |kk: usize, j: usize| styled(f, Style::Cancel, 11, Operand::B, (kk * n + j) as u64, k, n);
                let half = k / 2;
                for i in 0..m {
                    for j in 0..n {
                        for kk in 0..half {
                            assert_eq!(a(i, kk), element(f, 11, Operand::A, (i * k + kk) as u64));
                            assert_eq!(a(i, kk + half), a(i, kk) ^ (1 << (width - 1)));
                            assert_eq!(b(kk + half, j), b(kk, j) ^ 1);
                        }
                        if k % 2 == 1 {
                            assert_eq!(a(i, k - 1), element(f, 11, Operand::A, (i * k + k - 1) as u64));
                            assert_eq!(b(k - 1, j), element(f, 11, Operand::B, ((k - 1) * n + j) as u64));
                        }
                        let (mut pairs, mut magnitude) = (Float::with_val(4096, 0), Float::with_val(4096, 0));
                        for kk in 0..2 * half {
                            let p = Float::with_val(4096, f.to_f64(a(i, kk))) * f.to_f64(b(kk, j));
                            magnitude += p.clone().abs();
                            pairs += p;
                        }
                        let bound = magnitude * 2f64.powi(-(mant as i32));
                        assert!(pairs.clone().abs() <= bound, "{f} {m}x{n}x{k} ({i}, {j}): {pairs} against {bound}");
                    }
                }
            }
        }
        // C is the uniform C; as Bᵀ, B pairs along its stored rows.
        assert_eq!(styled(Format::F16, Style::Cancel, 2, Operand::C, 9, 4, 4), element(Format::F16, 2, Operand::C, 9));
        let bt = |kk: u64, j: u64| styled_in(Format::F16, Style::Cancel, 2, Operand::B, Order::Transposed, j * 8 + kk, 8, 3);
        assert_eq!(bt(5, 2), bt(1, 2) ^ 1);
        assert_eq!(bt(1, 2), element(Format::F16, 2, Operand::B, 2 * 8 + 1));
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
