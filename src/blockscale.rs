//! Block scales of block-scaled MMAs (PTX `mma ... kind::mxf8f6f4.block32 ... .ue8m0`,
//! `kind::mxf4nvf4.block16 ... .ue4m3`): every run of `block` consecutive elements along K of a
//! row of A shares one scale factor, and so does every such run of a column of B. The element
//! that enters the dot product is `A[i][kk] · scale_a[i][kk / block]` (and likewise for B).
//!
//! Scale formats: `ue8m0` is an 8-bit biased exponent, `2^(x - 127)`, with 0xFF for NaN (no zero,
//! no sign); `ue4m3` is E4M3 without its sign bit (bias 7, subnormals, 0x7F NaN), so 0x00 is a
//! zero scale. A NaN scale makes every product of its block NaN, whatever the element (MMA-Sim's
//! reading: `s_a · s_b · s_alpha · s_beta` with a NaN `s_alpha`).

use crate::format::{Class, Decoded, Format};
use std::fmt;
use std::str::FromStr;

/// The format of a block's scale factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScaleFormat {
    /// `2^(x - 127)`; 0xFF is NaN.
    Ue8m0,
    /// Unsigned E4M3: `x` in 0x00..=0x7F read as the E4M3 bit pattern; 0x7F is NaN.
    Ue4m3,
}

impl ScaleFormat {
    pub const ALL: [ScaleFormat; 2] = [ScaleFormat::Ue8m0, ScaleFormat::Ue4m3];

    pub fn name(self) -> &'static str {
        match self {
            ScaleFormat::Ue8m0 => "ue8m0",
            ScaleFormat::Ue4m3 => "ue4m3",
        }
    }

    /// The bit pattern of 1.
    pub fn one(self) -> u8 {
        match self {
            ScaleFormat::Ue8m0 => 127,
            ScaleFormat::Ue4m3 => 0x38,
        }
    }

    /// A scale's value as findings print it: `2^e`, `s·2^e`, `0` or `NaN`.
    pub fn text(self, bits: u8) -> String {
        let d = self.decode(bits);
        match d.class {
            Class::Nan => "NaN".to_string(),
            Class::Zero => "0".to_string(),
            _ if d.sig == 1 => format!("2^{}", d.exp),
            _ => format!("{}·2^{}", d.sig, d.exp),
        }
    }

    /// The largest valid bit pattern.
    pub fn max_bits(self) -> u8 {
        match self {
            ScaleFormat::Ue8m0 => 0xff,
            ScaleFormat::Ue4m3 => 0x7f,
        }
    }

    /// The scale's value: zero, NaN, or `sig · 2^exp` (`Decoded`'s convention, never negative).
    pub fn decode(self, bits: u8) -> Decoded {
        match self {
            ScaleFormat::Ue8m0 if bits == 0xff => Decoded { class: Class::Nan, neg: false, sig: 0, exp: 0 },
            ScaleFormat::Ue8m0 => Decoded { class: Class::Finite, neg: false, sig: 1, exp: bits as i32 - 127 },
            ScaleFormat::Ue4m3 => Format::E4m3.decode((bits & 0x7f) as u64),
        }
    }

    /// The exponent of the scale's leading bit where it has one (what an exponent adder sees):
    /// `exp` for ue8m0, E4M3's exponent field (subnormals: its emin) for ue4m3.
    pub fn field(self, d: &Decoded) -> i32 {
        match self {
            ScaleFormat::Ue8m0 => d.exp,
            ScaleFormat::Ue4m3 => d.exp + Format::E4m3.precision() as i32 - 1,
        }
    }
}

impl fmt::Display for ScaleFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ScaleFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ScaleFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown scale format '{s}' (ue8m0 or ue4m3)"))
    }
}

/// The scale factors of one tile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockScales {
    pub fmt: ScaleFormat,
    /// Elements along K that share one scale (16 or 32 in PTX).
    pub block: usize,
    /// m × (k / block), row-major: row i's scale for K positions `[t·block, (t+1)·block)`.
    pub a: Vec<u8>,
    /// (k / block) × n, row-major (laid out as B is): column j's scale for block t at `t·n + j`.
    pub b: Vec<u8>,
}

impl BlockScales {
    /// Unit scales (every factor 1) for an m×n×k tile.
    pub fn ones(fmt: ScaleFormat, block: usize, m: usize, n: usize, k: usize) -> Self {
        let one = fmt.one();
        BlockScales { fmt, block, a: vec![one; m * (k / block)], b: vec![one; (k / block) * n] }
    }

    /// The scales element (i, j) of an m×n×k tile meets, as a 1×1×k tile's: row i's of A and
    /// column j's of B, one per block each.
    pub fn of_element(&self, i: usize, j: usize, k: usize, n: usize) -> BlockScales {
        let blocks = k / self.block;
        BlockScales {
            fmt: self.fmt,
            block: self.block,
            a: (0..blocks).map(|t| self.a_at(i, t * self.block, k)).collect(),
            b: (0..blocks).map(|t| self.b_at(t * self.block, j, n)).collect(),
        }
    }

    pub fn a_at(&self, i: usize, kk: usize, k: usize) -> u8 {
        self.a[i * (k / self.block) + kk / self.block]
    }

    pub fn b_at(&self, kk: usize, j: usize, n: usize) -> u8 {
        self.b[(kk / self.block) * n + j]
    }
}

/// `x · s` for a decoded element `x` and a decoded scale `s`, exactly (as `Decoded`): a NaN
/// scale or element gives NaN, an infinity times a zero scale NaN, a zero scale a zero of the
/// element's sign, and finite values multiply their significands and add their exponents.
pub fn scaled(x: Decoded, s: Decoded) -> Decoded {
    match (x.class, s.class) {
        (Class::Nan, _) => x,
        (_, Class::Nan) => Decoded { class: Class::Nan, neg: false, sig: 0, exp: 0 },
        (Class::Inf, Class::Zero) => Decoded { class: Class::Nan, neg: false, sig: 0, exp: 0 },
        (Class::Inf, _) => x,
        (Class::Zero, _) | (_, Class::Zero) => Decoded::zero(x.neg),
        (Class::Finite, _) => Decoded { class: Class::Finite, neg: x.neg, sig: x.sig * s.sig, exp: x.exp + s.exp },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ue8m0_is_a_power_of_two_or_nan() {
        let f = ScaleFormat::Ue8m0;
        assert_eq!(f.decode(127), Decoded { class: Class::Finite, neg: false, sig: 1, exp: 0 });
        assert_eq!(f.decode(0).exp, -127);
        assert_eq!(f.decode(254).exp, 127);
        assert_eq!(f.decode(0xff).class, Class::Nan);
        assert_eq!(f.field(&f.decode(130)), 3);
    }

    #[test]
    fn ue4m3_reads_e4m3_without_the_sign() {
        let f = ScaleFormat::Ue4m3;
        // 0x38: exponent field 7 (bias 7), fraction 0: 1.0.
        let one = f.decode(0x38);
        assert_eq!((one.sig as f64) * 2f64.powi(one.exp), 1.0);
        assert_eq!(f.field(&one), 0);
        assert_eq!(f.decode(0).class, Class::Zero);
        assert_eq!(f.decode(0x7f).class, Class::Nan);
        // Smallest subnormal 2^-9; the field reads emin (-6).
        let tiny = f.decode(1);
        assert_eq!((tiny.sig, tiny.exp), (1, -9));
        assert_eq!(f.field(&tiny), -6);
        assert_eq!("ue4m3".parse::<ScaleFormat>(), Ok(ScaleFormat::Ue4m3));
        assert!("e8m0".parse::<ScaleFormat>().is_err());
    }

    #[test]
    fn scaling_multiplies_exactly_and_keeps_the_ieee_specials() {
        let x = Format::F16.decode(0xc200); // -3
        let s = ScaleFormat::Ue8m0.decode(127 + 5);
        let y = scaled(x, s);
        assert!(y.neg);
        assert_eq!((y.sig as f64) * 2f64.powi(y.exp), 96.0);
        assert_eq!(scaled(x, ScaleFormat::Ue8m0.decode(0xff)).class, Class::Nan);
        assert_eq!(scaled(Format::F16.decode(0x0000), ScaleFormat::Ue8m0.decode(0xff)).class, Class::Nan);
        assert_eq!(scaled(Format::F16.decode(0x7c00), ScaleFormat::Ue4m3.decode(0)).class, Class::Nan);
        assert_eq!(scaled(x, ScaleFormat::Ue4m3.decode(0)), Decoded::zero(true));
        let z = scaled(Format::E4m3.decode(0x3c), ScaleFormat::Ue4m3.decode(0x3c)); // 1.5 * 1.5
        assert_eq!((z.sig as f64) * 2f64.powi(z.exp), 2.25);
    }
}
