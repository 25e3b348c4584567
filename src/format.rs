//! Floating-point formats as descriptions, and exact decode/encode under an explicit rounding.
//!
//! A [`Format`] is data (precision, exponent range, storage width, special-value rules); every
//! conversion takes a [`Rounding`] and an [`Overflow`] policy, so no hidden state decides a result.
//! Values travel as exact triples: sign, integer significand and the exponent of its last bit.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Every number format mmafuzz can read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    F64,
    F32,
    /// TensorFloat-32: 19 significant bits in a 32-bit container whose low 13 bits are ignored.
    Tf32,
    Bf16,
    F16,
    /// OCP FP8 E4M3: no infinities, one NaN pattern per sign (S.1111.111), max 448.
    E4m3,
    E5m2,
    /// OCP MX FP6 E3M2 and E2M3 and FP4 E2M1 (`kind::f8f6f4`): every pattern a number, no
    /// infinities, no NaN; one value per element in the interchange format.
    E3m2,
    E2m3,
    E2m1,
    /// AMD's FP8 ("fnuz", CDNA3): no infinities, no negative zero; the pattern 0x80 is the one
    /// NaN; the exponent bias is one more than OCP's (8 and 16).
    E4m3fnuz,
    E5m2fnuz,
    /// Two's-complement 32-bit integer: the integer MMAs' C and D.
    S32,
    /// 8-bit integers, signed and unsigned (integer MMA inputs).
    S8,
    U8,
    /// 4-bit integers, signed and unsigned (one per value in the interchange format).
    S4,
    U4,
    /// One bit (`b1` MMAs: AND or XOR of bits, then population count).
    B1,
}

/// How a value that is not representable is brought onto the format's grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rounding {
    /// Round to nearest, ties to even (IEEE default).
    #[default]
    Rne,
    /// Round to nearest, ties away from zero (IEEE roundTiesToAway; `cvt.rna`).
    Rna,
    /// Toward zero (truncation).
    Rz,
    /// Toward +infinity.
    Ru,
    /// Toward -infinity.
    Rd,
    /// Away from zero (MPFR's RNDA).
    Ra,
}

impl Rounding {
    pub const ALL: [Rounding; 6] =
        [Rounding::Rne, Rounding::Rna, Rounding::Rz, Rounding::Ru, Rounding::Rd, Rounding::Ra];
    /// The directions MPFR can round in directly (it has no ties-away mode).
    pub const MPFR: [Rounding; 5] =
        [Rounding::Rne, Rounding::Rz, Rounding::Ru, Rounding::Rd, Rounding::Ra];

    pub fn name(self) -> &'static str {
        match self {
            Rounding::Rne => "rne",
            Rounding::Rna => "rna",
            Rounding::Rz => "rz",
            Rounding::Ru => "ru",
            Rounding::Rd => "rd",
            Rounding::Ra => "ra",
        }
    }

    /// Whether a magnitude with the given discarded part is rounded up (away from zero).
    /// `rem_vs_half` compares the discarded part with half a unit of the kept last place.
    #[inline]
    pub fn rounds_away(self, neg: bool, kept_is_odd: bool, rem_vs_half: std::cmp::Ordering, inexact: bool) -> bool {
        use std::cmp::Ordering::*;
        match self {
            Rounding::Rz => false,
            Rounding::Ru => inexact && !neg,
            Rounding::Rd => inexact && neg,
            Rounding::Ra => inexact,
            Rounding::Rne => rem_vs_half == Greater || (rem_vs_half == Equal && kept_is_odd),
            Rounding::Rna => rem_vs_half != Less,
        }
    }
}

impl fmt::Display for Rounding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What happens when a rounded result exceeds the largest finite value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overflow {
    /// IEEE 754: infinity or the largest finite value, as the rounding direction says; formats
    /// without infinities (E4M3) give NaN where IEEE would give infinity.
    #[default]
    Ieee,
    /// Clamp to the largest finite value of the right sign (`.satfinite` conversions).
    Saturate,
    /// Always infinity (NaN without infinities), whatever the rounding direction: a datapath
    /// that truncates toward zero yet flags overflow (H100 bf16 and tf32 accumulators).
    Infinity,
    /// Integer formats: two's-complement wrap-around (modulo 2^width), what integer MMAs do
    /// without `.satfinite`. Integer formats read `ieee` and `infinity` the same way (they have
    /// no infinity); float formats read `wrap` as `ieee`.
    Wrap,
}

/// The class of a decoded value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    Zero,
    Finite,
    Inf,
    Nan,
}

/// A decoded bit pattern. Finite values are exactly `(-1)^neg · sig · 2^exp`; `sig` carries the
/// hidden bit for normal numbers. NaNs keep their fraction field in `sig` (the payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decoded {
    pub class: Class,
    pub neg: bool,
    pub sig: u64,
    pub exp: i32,
}

impl Decoded {
    pub fn zero(neg: bool) -> Self {
        Decoded { class: Class::Zero, neg, sig: 0, exp: 0 }
    }
    pub fn is_nan(&self) -> bool {
        self.class == Class::Nan
    }
    /// The value as an f64 (exact for every format but f64 subnormal products; for display).
    pub fn to_f64(&self) -> f64 {
        let s = if self.neg { -1.0 } else { 1.0 };
        match self.class {
            Class::Zero => s * 0.0,
            Class::Inf => s * f64::INFINITY,
            Class::Nan => f64::NAN,
            Class::Finite => s * (self.sig as f64) * pow2(self.exp),
        }
    }
}

/// 2^e as f64 for any e that f64 can hold, without libm.
pub fn pow2(e: i32) -> f64 {
    if e > 1023 {
        f64::INFINITY
    } else if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else if e >= -1074 {
        f64::from_bits(1u64 << (e + 1074))
    } else {
        0.0
    }
}

/// The fixed facts of one format.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Significant bits including the hidden bit.
    pub precision: u32,
    pub exponent_bits: u32,
    pub bias: i32,
    /// Width of the bit pattern in the interchange format.
    pub storage_bits: u32,
    /// Low bits of the container that carry no information (tf32: 13).
    pub ignored_low_bits: u32,
    /// Where NaN lives (IEEE formats: the top exponent with a nonzero fraction, and infinities
    /// with a zero one; every other format has no infinity).
    pub nan: NanCode,
    /// Largest significand (with hidden bit) at `emax` (E4M3 reserves S.1111.111 for NaN).
    pub max_sig_at_emax: u64,
}

impl Spec {
    /// Whether the format has infinities (the IEEE formats; their top exponent is reserved).
    #[inline]
    pub const fn has_inf(&self) -> bool {
        matches!(self.nan, NanCode::Ieee)
    }
}

/// The NaN encoding of a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NanCode {
    /// IEEE: the top exponent with a nonzero fraction (the formats with infinities).
    Ieee,
    /// OCP E4M3: only S.1111.111 is NaN; the rest of the top exponent holds numbers.
    AllOnes,
    /// AMD fnuz: the negative-zero pattern is the one NaN; there is no -0.
    NegativeZero,
    /// FP6/FP4 (and integers): no NaN at all.
    None,
}

/// An integer format: its width and whether it is signed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntSpec {
    pub bits: u32,
    pub signed: bool,
}

impl IntSpec {
    pub fn min(self) -> i64 {
        if self.signed { -(1i64 << (self.bits - 1)) } else { 0 }
    }
    pub fn max(self) -> i64 {
        if self.signed { (1i64 << (self.bits - 1)) - 1 } else { (1i64 << self.bits) - 1 }
    }
}

impl Format {
    /// The floating-point formats.
    pub const ALL: [Format; 12] = [
        Format::F64,
        Format::F32,
        Format::Tf32,
        Format::Bf16,
        Format::F16,
        Format::E4m3,
        Format::E5m2,
        Format::E3m2,
        Format::E2m3,
        Format::E2m1,
        Format::E4m3fnuz,
        Format::E5m2fnuz,
    ];
    /// The formats of Hopper's instructions (the others are operands of other architectures' MMAs).
    pub const HOPPER: [Format; 7] =
        [Format::F64, Format::F32, Format::Tf32, Format::Bf16, Format::F16, Format::E4m3, Format::E5m2];
    /// The integer formats.
    pub const INTEGERS: [Format; 6] = [Format::S32, Format::S8, Format::U8, Format::S4, Format::U4, Format::B1];

    /// Width and signedness of an integer format; `None` for floating-point formats.
    #[inline]
    pub const fn integer(self) -> Option<IntSpec> {
        match self {
            Format::S32 => Some(IntSpec { bits: 32, signed: true }),
            Format::S8 => Some(IntSpec { bits: 8, signed: true }),
            Format::U8 => Some(IntSpec { bits: 8, signed: false }),
            Format::S4 => Some(IntSpec { bits: 4, signed: true }),
            Format::U4 => Some(IntSpec { bits: 4, signed: false }),
            Format::B1 => Some(IntSpec { bits: 1, signed: false }),
            _ => None,
        }
    }

    #[inline]
    pub const fn is_integer(self) -> bool {
        self.integer().is_some()
    }

    /// The value of an integer format's bit pattern (0 for floating-point formats).
    #[inline]
    pub fn int_value(self, bits: u64) -> i64 {
        match self.integer() {
            Some(IntSpec { bits: w, signed: true }) => ((bits << (64 - w)) as i64) >> (64 - w),
            Some(IntSpec { bits: w, signed: false }) => (bits & ((1u64 << w) - 1)) as i64,
            None => 0,
        }
    }

    /// An integer in an integer format: clamped to its range with `Overflow::Saturate`,
    /// otherwise wrapped modulo 2^width.
    pub fn int_bits(self, v: i128, ovf: Overflow) -> u64 {
        let s = self.integer().expect("an integer format");
        let v = if ovf == Overflow::Saturate { v.clamp(s.min() as i128, s.max() as i128) } else { v };
        (v as u64) & self.mask()
    }

    #[inline]
    pub const fn spec(self) -> Spec {
        const fn ieee(precision: u32, exponent_bits: u32, storage_bits: u32, ignored: u32) -> Spec {
            Spec {
                precision,
                exponent_bits,
                bias: (1 << (exponent_bits - 1)) - 1,
                storage_bits,
                ignored_low_bits: ignored,
                nan: NanCode::Ieee,
                max_sig_at_emax: (1u64 << precision) - 1,
            }
        }
        // A format without infinities whose top exponent holds numbers up to `max_sig`.
        const fn finite(precision: u32, exponent_bits: u32, bias: i32, storage_bits: u32, nan: NanCode, max_sig: u64) -> Spec {
            Spec { precision, exponent_bits, bias, storage_bits, ignored_low_bits: 0, nan, max_sig_at_emax: max_sig }
        }
        match self {
            Format::F64 => ieee(53, 11, 64, 0),
            Format::F32 => ieee(24, 8, 32, 0),
            Format::Tf32 => ieee(11, 8, 32, 13),
            Format::Bf16 => ieee(8, 8, 16, 0),
            Format::F16 => ieee(11, 5, 16, 0),
            Format::E5m2 => ieee(3, 5, 8, 0),
            // Integer formats: no exponent; every path that reads one branches on `integer()`
            // first. The precision is the magnitude's width, for code that sizes buffers by it.
            Format::S32 | Format::S8 | Format::U8 | Format::S4 | Format::U4 | Format::B1 => {
                let bits = match self.integer() {
                    Some(i) => i.bits,
                    None => 1,
                };
                Spec { precision: bits, exponent_bits: 1, bias: 0, storage_bits: bits, ignored_low_bits: 0, nan: NanCode::None, max_sig_at_emax: 0 }
            }
            Format::E4m3 => finite(4, 4, 7, 8, NanCode::AllOnes, 0b1110),
            Format::E3m2 => finite(3, 3, 3, 6, NanCode::None, 0b111),
            Format::E2m3 => finite(4, 2, 1, 6, NanCode::None, 0b1111),
            Format::E2m1 => finite(2, 2, 1, 4, NanCode::None, 0b11),
            Format::E4m3fnuz => finite(4, 4, 8, 8, NanCode::NegativeZero, 0b1111),
            Format::E5m2fnuz => finite(3, 5, 16, 8, NanCode::NegativeZero, 0b111),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::F64 => "f64",
            Format::F32 => "f32",
            Format::Tf32 => "tf32",
            Format::Bf16 => "bf16",
            Format::F16 => "f16",
            Format::E4m3 => "e4m3",
            Format::E5m2 => "e5m2",
            Format::E3m2 => "e3m2",
            Format::E2m3 => "e2m3",
            Format::E2m1 => "e2m1",
            Format::E4m3fnuz => "e4m3fnuz",
            Format::E5m2fnuz => "e5m2fnuz",
            Format::S32 => "s32",
            Format::S8 => "s8",
            Format::U8 => "u8",
            Format::S4 => "s4",
            Format::U4 => "u4",
            Format::B1 => "b1",
        }
    }

    #[inline]
    pub fn precision(self) -> u32 {
        self.spec().precision
    }
    #[inline]
    pub fn storage_bits(self) -> u32 {
        self.spec().storage_bits
    }
    /// Hex digits of one value in the interchange format.
    pub fn hex_digits(self) -> usize {
        self.storage_bits().div_ceil(4) as usize
    }
    /// Exponent of the smallest normal number.
    #[inline]
    pub fn emin(self) -> i32 {
        1 - self.spec().bias
    }
    /// Exponent of the largest finite number.
    #[inline]
    pub fn emax(self) -> i32 {
        let s = self.spec();
        let top = (1i32 << s.exponent_bits) - 1;
        // IEEE formats reserve the top exponent for inf/NaN; E4M3 uses it for numbers.
        (if s.has_inf() { top - 1 } else { top }) - s.bias
    }
    /// Exponent of the last bit of the smallest subnormal (the format's quantum floor).
    #[inline]
    pub fn min_lsb_exp(self) -> i32 {
        self.emin() - self.precision() as i32 + 1
    }
    #[inline]
    pub fn mask(self) -> u64 {
        if self.storage_bits() == 64 {
            u64::MAX
        } else {
            (1u64 << self.storage_bits()) - 1
        }
    }
    #[inline]
    fn frac_shift(self) -> u32 {
        self.spec().ignored_low_bits
    }
    #[inline]
    fn frac_bits(self) -> u32 {
        self.precision() - 1
    }
    #[inline]
    pub(crate) fn sign_bit(self) -> u64 {
        1u64 << (self.storage_bits() - 1)
    }

    /// Decode any bit pattern exactly. Bits above the storage width are ignored; so are the
    /// low 13 bits of a tf32 container, as the tensor cores ignore them.
    #[inline]
    pub fn decode(self, bits: u64) -> Decoded {
        if self.is_integer() {
            let v = self.int_value(bits);
            return if v == 0 { Decoded::zero(false) } else { Decoded { class: Class::Finite, neg: v < 0, sig: v.unsigned_abs(), exp: 0 } };
        }
        // One look at the spec; every field below derives from it (this runs per operand).
        let s = self.spec();
        let fb = s.precision - 1;
        let shift = s.ignored_low_bits;
        let bits = if s.storage_bits == 64 { bits } else { bits & ((1u64 << s.storage_bits) - 1) };
        let neg = bits >> (s.storage_bits - 1) & 1 == 1;
        let frac_mask = (1u64 << fb) - 1;
        let frac = (bits >> shift) & frac_mask;
        let top = (1i32 << s.exponent_bits) - 1;
        let biased = ((bits >> (shift + fb)) as i32) & top;
        let special = match s.nan {
            NanCode::Ieee => biased == top,
            NanCode::AllOnes => biased == top && frac == frac_mask,
            NanCode::NegativeZero => neg && biased == 0 && frac == 0,
            NanCode::None => false,
        };
        if special {
            let class = if !s.has_inf() || frac != 0 { Class::Nan } else { Class::Inf };
            let sig = if class == Class::Nan { frac } else { 0 };
            return Decoded { class, neg, sig, exp: 0 };
        }
        if biased == 0 {
            if frac == 0 {
                return Decoded::zero(neg);
            }
            return Decoded { class: Class::Finite, neg, sig: frac, exp: 1 - s.bias - fb as i32 };
        }
        Decoded { class: Class::Finite, neg, sig: frac | (1u64 << fb), exp: biased - s.bias - fb as i32 }
    }

    /// The value of a bit pattern as an f64, exactly (f64 holds every other format's values);
    /// NaN and infinities map to f64 NaN and infinities. Faster than [`Format::decode`]: for the
    /// emulator's operand preparation.
    #[inline]
    pub fn to_f64(self, bits: u64) -> f64 {
        match self {
            Format::F64 => f64::from_bits(bits),
            Format::F32 => f32::from_bits(bits as u32) as f64,
            Format::Tf32 => f32::from_bits(bits as u32 & 0xffff_e000) as f64,
            Format::Bf16 => f32::from_bits((bits as u32 & 0xffff) << 16) as f64,
            Format::F16 => f16_to_f64(bits as u16),
            Format::E4m3 | Format::E5m2 | Format::E3m2 | Format::E2m3 | Format::E2m1 | Format::E4m3fnuz | Format::E5m2fnuz => {
                small_table(self)[(bits & 0xff) as usize]
            }
            Format::S32 | Format::S8 | Format::U8 | Format::S4 | Format::U4 | Format::B1 => self.int_value(bits) as f64,
        }
    }

    /// [`Format::to_f64`] over a slice, with the format decided once (vectorised for AVX-512 or
    /// AVX2 where the CPU has it).
    pub fn to_f64_slice(self, src: &[u64], dst: &mut [f64]) {
        assert_eq!(src.len(), dst.len());
        #[cfg(target_arch = "x86_64")]
        if self == Format::F16 && std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("f16c") {
            // SAFETY: the CPU has AVX2 and F16C.
            return unsafe { f16_to_f64_slice_f16c(src, dst) };
        }
        patterns_slice_to_f64(self, src, dst)
    }

    /// [`Format::to_f64_slice`] of little-endian elements of `width` bytes (1, 2, 4 or 8), each
    /// this format's bit pattern: an npz member's bytes as they lie in the file, read without
    /// a vector of patterns first.
    pub fn le_to_f64_slice(self, bytes: &[u8], width: usize, dst: &mut [f64]) {
        assert_eq!(bytes.len(), width * dst.len());
        #[cfg(target_arch = "x86_64")]
        if self == Format::F16 && width == 2 && std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("f16c") {
            // SAFETY: the CPU has AVX2 and F16C.
            return unsafe { f16_le_to_f64_slice_f16c(bytes, dst) };
        }
        le_patterns_to_f64(self, bytes, width, dst)
    }

    /// [`Format::to_f64`] of each pattern of `src` into `dst`, one loop per format.
    #[inline(always)]
    fn patterns_to_f64(self, src: impl Iterator<Item = u64>, dst: &mut [f64]) {
        #[inline(always)]
        fn each(src: impl Iterator<Item = u64>, dst: &mut [f64], f: impl Fn(u64) -> f64) {
            // (A `for` loop, not `for_each`: the fold of a zip with a mapped chunks iterator
            // was left out of line, unvectorised.)
            for (d, b) in dst.iter_mut().zip(src) {
                *d = f(b);
            }
        }
        match self {
            Format::F16 => each(src, dst, |b| f16_to_f64(b as u16)),
            Format::Bf16 => each(src, dst, |b| f32::from_bits((b as u32 & 0xffff) << 16) as f64),
            Format::Tf32 => each(src, dst, |b| f32::from_bits(b as u32 & 0xffff_e000) as f64),
            // (Each format its own loop: a match per element is not hoisted out of the loop.)
            Format::F32 => each(src, dst, |b| f32::from_bits(b as u32) as f64),
            Format::F64 => each(src, dst, f64::from_bits),
            Format::E4m3 | Format::E5m2 | Format::E3m2 | Format::E2m3 | Format::E2m1 | Format::E4m3fnuz | Format::E5m2fnuz => {
                // The table looked up once, not per element.
                let table = small_table(self);
                each(src, dst, |b| table[(b & 0xff) as usize])
            }
            _ => each(src, dst, |b| self.to_f64(b)),
        }
    }

    /// Bits of a zero of the given sign.
    #[inline]
    pub fn zero_bits(self, neg: bool) -> u64 {
        if neg && !self.is_integer() && self.spec().nan != NanCode::NegativeZero {
            self.sign_bit()
        } else {
            0
        }
    }

    /// Bits of an infinity; formats without one give NaN.
    pub fn inf_bits(self, neg: bool) -> u64 {
        if self.is_integer() {
            return self.max_finite_bits(neg);
        }
        let s = self.spec();
        if !s.has_inf() {
            return self.nan_bits(neg, u64::MAX);
        }
        let e = ((1u64 << s.exponent_bits) - 1) << (self.frac_shift() + self.frac_bits());
        e | self.zero_bits(neg)
    }

    /// Bits of a NaN with the given fraction payload (truncated to fit; forced quiet and nonzero).
    /// Formats without NaN (integers, FP6, FP4) give the largest magnitude instead: the nearest
    /// thing a generator can ask for.
    pub fn nan_bits(self, neg: bool, payload: u64) -> u64 {
        let s = self.spec();
        match s.nan {
            NanCode::None => return self.max_finite_bits(neg),
            NanCode::NegativeZero => return self.sign_bit(),
            NanCode::Ieee | NanCode::AllOnes => {}
        }
        let fb = self.frac_bits();
        let fmask = (1u64 << fb) - 1;
        let frac = if s.has_inf() {
            // Quiet NaN: the top fraction bit set.
            (payload & fmask) | (1u64 << (fb - 1))
        } else {
            fmask
        };
        let e = ((1u64 << s.exponent_bits) - 1) << (self.frac_shift() + fb);
        e | (frac << self.frac_shift()) | self.zero_bits(neg)
    }

    /// Bits of the largest finite value.
    pub fn max_finite_bits(self, neg: bool) -> u64 {
        if let Some(i) = self.integer() {
            return self.int_bits(if neg { i.min() } else { i.max() } as i128, Overflow::Saturate);
        }
        self.encode_exact(neg, self.spec().max_sig_at_emax, self.emax() - self.frac_bits() as i32)
            .expect("max finite is representable")
    }

    /// Encode a value that is exactly representable (no rounding); `None` if it is not.
    pub fn encode_exact(self, neg: bool, sig: u64, exp: i32) -> Option<u64> {
        let r = self.round(neg, sig as u128, exp, false, Rounding::Rz, Overflow::Ieee);
        let d = self.decode(r);
        let same = match d.class {
            Class::Zero => sig == 0,
            Class::Finite => sig != 0 && same_value(d.sig, d.exp, sig, exp),
            _ => false,
        };
        same.then_some(r)
    }

    /// Round the exact value `(-1)^neg · (mag + δ) · 2^exp` to this format, where `δ ∈ (0, 1)`
    /// when `sticky` is set and 0 otherwise. A caller that sets `sticky` must pass a `mag` with at
    /// least `precision + 2` significant bits, so that the sticky part lies below the rounding bit.
    #[inline]
    pub fn round(self, neg: bool, mag: u128, exp: i32, sticky: bool, rnd: Rounding, ovf: Overflow) -> u64 {
        if self.is_integer() {
            return self.round_integer(neg, mag, exp, sticky, rnd, ovf);
        }
        let p = self.precision() as i32;
        let len = 128 - mag.leading_zeros() as i32;
        if len == 0 && !sticky {
            return self.zero_bits(neg);
        }
        let lead = exp + len - 1;
        // The last place of the result: p bits below the leading bit, never below the subnormal quantum.
        let q = (lead - p + 1).max(self.min_lsb_exp());
        let shift = q as i64 - exp as i64;
        let (mut kept, rem_vs_half, inexact) = if shift <= 0 {
            (mag << (-shift) as u32, std::cmp::Ordering::Less, sticky)
        } else if shift >= 128 {
            // Everything lies below half a unit (mag < 2^127 ≤ half when shift ≥ 128).
            let inexact = mag != 0 || sticky;
            let vs = if shift == 128 && mag >> 127 == 1 {
                if mag == 1 << 127 && !sticky { std::cmp::Ordering::Equal } else { std::cmp::Ordering::Greater }
            } else {
                std::cmp::Ordering::Less
            };
            (0, vs, inexact)
        } else {
            let shift = shift as u32;
            let rem = mag & ((1u128 << shift) - 1);
            let half = 1u128 << (shift - 1);
            let vs = match rem.cmp(&half) {
                std::cmp::Ordering::Equal if sticky => std::cmp::Ordering::Greater,
                o => o,
            };
            (mag >> shift, vs, rem != 0 || sticky)
        };
        let mut q = q;
        if rnd.rounds_away(neg, kept & 1 == 1, rem_vs_half, inexact) {
            kept += 1;
            if kept >> p == 1 {
                kept >>= 1;
                q += 1;
            }
        }
        if kept == 0 {
            return self.zero_bits(neg);
        }
        let kept = kept as u64;
        let top = q + (64 - kept.leading_zeros() as i32) - 1;
        let emax = self.emax();
        if top > emax || (top == emax && kept > self.spec().max_sig_at_emax) {
            return self.overflow_bits(neg, rnd, ovf);
        }
        self.pack(neg, kept, q)
    }

    /// [`Format::round`] into an integer format: to an integer by `rnd`, then wrapped or
    /// clamped by `ovf` (magnitudes beyond 2^100 saturate either way: no MMA sum comes near).
    fn round_integer(self, neg: bool, mag: u128, exp: i32, sticky: bool, rnd: Rounding, ovf: Overflow) -> u64 {
        use std::cmp::Ordering::*;
        let (kept, vs_half, inexact) = if exp >= 0 {
            let fits = exp < 100 && (mag >> (100 - exp.min(100))) == 0;
            (if fits { mag << exp } else { 1u128 << 100 }, Less, sticky)
        } else if exp <= -127 {
            (0, Less, mag != 0 || sticky)
        } else {
            let sh = (-exp) as u32;
            let rem = mag & ((1u128 << sh) - 1);
            let half = 1u128 << (sh - 1);
            let vs = match rem.cmp(&half) {
                Equal if sticky => Greater,
                o => o,
            };
            (mag >> sh, vs, rem != 0 || sticky)
        };
        let kept = kept + rnd.rounds_away(neg, kept & 1 == 1, vs_half, inexact) as u128;
        let v = if neg { -(kept as i128) } else { kept as i128 };
        self.int_bits(v, ovf)
    }

    /// Bits for a result beyond the largest finite value.
    pub fn overflow_bits(self, neg: bool, rnd: Rounding, ovf: Overflow) -> u64 {
        let to_inf = match rnd {
            Rounding::Rne | Rounding::Rna | Rounding::Ra => true,
            Rounding::Rz => false,
            Rounding::Ru => !neg,
            Rounding::Rd => neg,
        };
        if ovf == Overflow::Infinity || (to_inf && matches!(ovf, Overflow::Ieee | Overflow::Wrap)) {
            self.inf_bits(neg)
        } else {
            self.max_finite_bits(neg)
        }
    }

    /// Pack a significand whose last bit has exponent `q` (already on this format's grid).
    #[inline]
    pub(crate) fn pack(self, neg: bool, sig: u64, q: i32) -> u64 {
        let s = self.spec();
        let fb = self.frac_bits();
        let (biased, frac) = if sig >> fb == 0 {
            debug_assert_eq!(q, self.min_lsb_exp());
            (0u64, sig)
        } else {
            ((q + fb as i32 + s.bias) as u64, sig & ((1u64 << fb) - 1))
        };
        let sign = if neg { self.sign_bit() } else { 0 };
        sign | (((biased << fb) | frac) << self.frac_shift())
    }

    /// Canonical form of a bit pattern: tf32's ignored bits cleared, high bits masked.
    pub fn canonical(self, bits: u64) -> u64 {
        let keep = self.mask() & !((1u64 << self.frac_shift()) - 1);
        bits & keep
    }
}

/// IEEE binary16 to binary64, exactly: normals re-biased, subnormals scaled by 2^-24, the top
/// exponent to infinity or NaN. Branch-free, so that slices convert as vectors.
#[inline]
fn f16_to_f64(b: u16) -> f64 {
    const TWO_M24: f64 = 1.0 / 16_777_216.0;
    let sign = ((b >> 15) as u64) << 63;
    let (e, f) = (((b >> 10) & 0x1f) as u64, (b & 0x3ff) as u64);
    let normal = sign | ((e + 1023 - 15) << 52) | (f << 42);
    // (Through i32: a vector conversion on AVX2, which has none from i64.)
    let subnormal = sign | ((f as i32) as f64 * TWO_M24).to_bits();
    let special = sign | (0x7ff << 52) | (f << 42);
    f64::from_bits(if e == 0 { subnormal } else if e == 0x1f { special } else { normal })
}

/// [`f16_to_f64`] over a slice by the CPU's conversion (F16C), eight at a time: each u64's low
/// 16 bits gathered and packed (AVX2), converted to f32 and widened to f64, both exact. The
/// conversion makes a NaN quiet (bit 51 of the f64 set); in groups holding one, that bit is
/// put back to the f16's own quiet bit, so every result is [`f16_to_f64`]'s to the bit (the
/// last few elements go through it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn f16_to_f64_slice_f16c(src: &[u64], dst: &mut [f64]) {
    use std::arch::x86_64::*;
    let whole = src.len() / 8 * 8;
    let low32 = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    let (mask, nan_above) = (_mm256_set1_epi64x(0xffff), _mm_set1_epi16(0x7c00));
    // SAFETY (both): the CPU has AVX2, as this function requires.
    let special = |x, v| unsafe { f16_specials(x, v) };
    for (s, d) in src[..whole].chunks_exact(8).zip(dst[..whole].chunks_exact_mut(8)) {
        // SAFETY: `s` and `d` hold eight elements each; unaligned loads and stores.
        unsafe {
            let x0 = _mm256_and_si256(_mm256_loadu_si256(s.as_ptr().cast()), mask);
            let x1 = _mm256_and_si256(_mm256_loadu_si256(s.as_ptr().add(4).cast()), mask);
            // Each u64's low 32 bits to the low half, then the eight packed into u16s.
            let lo = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(x0, low32));
            let hi = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(x1, low32));
            let h = _mm_packus_epi32(lo, hi);
            let f = _mm256_cvtph_ps(h);
            let (mut v0, mut v1) = (_mm256_cvtps_pd(_mm256_castps256_ps128(f)), _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
            // |h| above infinity's pattern: a NaN.
            if _mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), nan_above)) != 0 {
                (v0, v1) = (special(x0, v0), special(x1, v1));
            }
            _mm256_storeu_pd(d.as_mut_ptr(), v0);
            _mm256_storeu_pd(d.as_mut_ptr().add(4), v1);
        }
    }
    dst[whole..].iter_mut().zip(&src[whole..]).for_each(|(d, &b)| *d = f16_to_f64(b as u16));
}

simd_where_available! {
    /// [`Format::to_f64_slice`] where F16C does not take it.
    fn patterns_slice_to_f64(f: Format, src: &[u64], dst: &mut [f64]) {
        f.patterns_to_f64(src.iter().copied(), dst)
    }
}

simd_where_available! {
    /// [`Format::le_to_f64_slice`] where F16C does not take it: one loop per width, each a
    /// widening load.
    fn le_patterns_to_f64(f: Format, bytes: &[u8], width: usize, dst: &mut [f64]) {
        match width {
            1 => f.patterns_to_f64(bytes.iter().map(|&b| b as u64), dst),
            2 => f.patterns_to_f64(bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as u64), dst),
            4 => f.patterns_to_f64(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64), dst),
            _ => f.patterns_to_f64(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))), dst),
        }
    }
}

/// `v`, four f16 patterns `x` (one in each u64) converted by F16C, with the f16's own quiet
/// bit (9) put back in place of the f64's (51) where `x` has an all-ones exponent: the
/// conversion makes every NaN quiet; [`f16_to_f64`] keeps its payload as it is.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn f16_specials(x: std::arch::x86_64::__m256i, v: std::arch::x86_64::__m256d) -> std::arch::x86_64::__m256d {
    use std::arch::x86_64::*;
    let exp = _mm256_set1_epi64x(0x7c00);
    let is = _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(x, exp), exp));
    let quiet = _mm256_slli_epi64::<42>(_mm256_and_si256(x, _mm256_set1_epi64x(0x200)));
    let own = _mm256_or_si256(_mm256_andnot_si256(_mm256_set1_epi64x(1 << 51), _mm256_castpd_si256(v)), quiet);
    _mm256_blendv_pd(v, _mm256_castsi256_pd(own), is)
}

/// [`f16_to_f64_slice_f16c`]'s counterpart for little-endian f16 elements (an npz member's
/// bytes): eight loaded at once, converted by F16C to f32 and widened to f64, both exact, a
/// NaN's quiet bit put back as there; the last few elements go through [`f16_to_f64`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn f16_le_to_f64_slice_f16c(bytes: &[u8], dst: &mut [f64]) {
    use std::arch::x86_64::*;
    let whole = dst.len() / 8 * 8;
    for (s, d) in bytes[..2 * whole].chunks_exact(16).zip(dst[..whole].chunks_exact_mut(8)) {
        // SAFETY: `s` holds sixteen bytes and `d` eight elements; unaligned loads and stores.
        unsafe {
            let h = _mm_loadu_si128(s.as_ptr().cast());
            let f = _mm256_cvtph_ps(h);
            let (mut v0, mut v1) = (_mm256_cvtps_pd(_mm256_castps256_ps128(f)), _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
            // |h| above infinity's pattern: a NaN.
            if _mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7c00))) != 0 {
                let (x0, x1) = (_mm256_cvtepu16_epi64(h), _mm256_cvtepu16_epi64(_mm_srli_si128::<8>(h)));
                (v0, v1) = (f16_specials(x0, v0), f16_specials(x1, v1));
            }
            _mm256_storeu_pd(d.as_mut_ptr(), v0);
            _mm256_storeu_pd(d.as_mut_ptr().add(4), v1);
        }
    }
    let rest = dst[whole..].iter_mut().zip(bytes[2 * whole..].chunks_exact(2));
    rest.for_each(|(d, c)| *d = f16_to_f64(u16::from_le_bytes([c[0], c[1]])));
}

/// An f64 that is not NaN rounded to nearest-even IEEE binary16 (overflow to infinity, gradual
/// underflow, zeros and infinities keep their sign), by integer arithmetic on its bits: what
/// [`Format::round`] gives for F16 with `Rounding::Rne` and `Overflow::Ieee`, without its general
/// u128 path. Written as selects (no branch), so that a slice of them vectorises.
#[inline]
pub(crate) fn f64_to_f16_rne(d: f64) -> u64 {
    let bits = d.to_bits();
    let sign = (bits >> 48) & 0x8000;
    let field = ((bits >> 52) & 0x7ff) as i64;
    let e = field - 1023;
    let sig = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    // Normals keep 10 fraction bits (shift 42) with the exponent field added, so that a carry
    // out of the significand steps the exponent (up to infinity); subnormals count 2^-24 units,
    // and from 2^-25 down every value rounds to zero (shift 54 leaves less than half).
    let normal = e >= -14;
    let shift = if normal { 42 } else { (28 - e).clamp(43, 54) as u64 };
    let base = if normal { ((e + 14) as u64) << 10 } else { 0 };
    let kept = sig >> shift;
    let rem = sig & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    let up = ((rem > half) | ((rem == half) & (kept & 1 == 1))) as u64;
    // For normals `kept` carries the implicit bit at 2^10, which adds one to the exponent field.
    let rounded = sign | (base + kept + up);
    let rounded = if e >= 16 { sign | 0x7c00 } else { rounded };
    // Zeros and f64 subnormals (far below half of f16's least subnormal): a zero of their sign.
    if field == 0 {
        sign
    } else {
        rounded
    }
}

/// Every pattern's value of a format of at most 8 bits, built once from [`Format::decode`]
/// (bits above the format's width are ignored, as `decode` ignores them).
fn small_table(f: Format) -> &'static [f64; 256] {
    const N: usize = 7;
    static TABLES: [std::sync::OnceLock<[f64; 256]>; N] = [const { std::sync::OnceLock::new() }; N];
    let i = match f {
        Format::E4m3 => 0,
        Format::E5m2 => 1,
        Format::E3m2 => 2,
        Format::E2m3 => 3,
        Format::E2m1 => 4,
        Format::E4m3fnuz => 5,
        Format::E5m2fnuz => 6,
        _ => unreachable!("small_table is for formats of at most 8 bits"),
    };
    TABLES[i].get_or_init(|| std::array::from_fn(|b| f.decode(b as u64).to_f64()))
}

fn same_value(s1: u64, e1: i32, s2: u64, e2: i32) -> bool {
    let (t1, t2) = (s1.trailing_zeros() as i32, s2.trailing_zeros() as i32);
    s1 >> t1 == s2 >> t2 && e1 + t1 == e2 + t2
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .chain(Format::INTEGERS)
            .find(|f| f.name() == s.to_ascii_lowercase())
            .ok_or_else(|| format!("unknown format '{s}' (expected one of f64, f32, tf32, bf16, f16, e4m3, e5m2, e3m2, e2m3, e2m1, e4m3fnuz, e5m2fnuz, s32, s8, u8, s4, u4, b1)"))
    }
}

impl FromStr for Rounding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rounding::ALL
            .into_iter()
            .find(|r| r.name() == s.to_ascii_lowercase())
            .ok_or_else(|| format!("unknown rounding '{s}' (expected rne, rna, rz, ru, rd or ra)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(f: Format, bits: u64) -> f64 {
        f.decode(bits).to_f64()
    }

    /// The bit-level f64 -> f16 rounding equals the general `round` on every f16 value, every
    /// midpoint between neighbours (ties to even), a step either side of each midpoint, and
    /// values far below the least subnormal and above the largest finite.
    #[test]
    fn f64_to_f16_rne_equals_the_general_rounding() {
        let general = |d: f64| {
            if d == 0.0 || d.is_infinite() {
                return if d == 0.0 { Format::F16.zero_bits(d.is_sign_negative()) } else { Format::F16.inf_bits(d < 0.0) };
            }
            let (bits, biased) = (d.to_bits(), ((d.to_bits() >> 52) & 0x7ff) as i32);
            let sig = if biased == 0 { bits & ((1u64 << 52) - 1) } else { (bits & ((1u64 << 52) - 1)) | (1u64 << 52) };
            Format::F16.round(d < 0.0, sig as u128, biased.max(1) - 1075, false, Rounding::Rne, Overflow::Ieee)
        };
        let mut checked = 0;
        for b in 0u64..0x7bff {
            let (x, next) = (Format::F16.to_f64(b), Format::F16.to_f64(b + 1));
            let mid = (x + next) / 2.0;
            for d in [x, mid, f64::from_bits(mid.to_bits() - 1), f64::from_bits(mid.to_bits() + 1)] {
                for d in [d, -d] {
                    assert_eq!(f64_to_f16_rne(d), general(d), "{d:e}");
                    checked += 1;
                }
            }
        }
        for d in [1e-300, 2.9e-8, 3.0e-8, 5.960464477539063e-8 / 2.0, 65519.99, 65520.0, 1e5, f64::INFINITY, 5e-324] {
            for d in [d, -d] {
                assert_eq!(f64_to_f16_rne(d), general(d), "{d:e}");
            }
        }
        assert_eq!(f64_to_f16_rne(65520.0), 0x7c00, "the midpoint above the largest finite rounds to infinity");
        assert_eq!(f64_to_f16_rne(-2.9802322387695312e-8), 0x8000, "half the least subnormal ties to -0");
        assert!(checked > 200_000);
    }

    #[test]
    fn integer_formats_decode_and_round_as_twos_complement() {
        assert_eq!(Format::S8.int_value(0x80), -128);
        assert_eq!(Format::U8.int_value(0x80), 128);
        assert_eq!(Format::S4.int_value(0xf), -1);
        assert_eq!(Format::U4.int_value(0xf), 15);
        assert_eq!(Format::B1.int_value(1), 1);
        assert_eq!(Format::S32.int_value(0x8000_0000), i32::MIN as i64);
        assert_eq!(Format::S8.decode(0xfe), Decoded { class: Class::Finite, neg: true, sig: 2, exp: 0 });
        assert_eq!(Format::S32.decode(0), Decoded::zero(false));
        assert_eq!(Format::S8.to_f64(0x81), -127.0);
        // Rounding into s32: wrap or clamp beyond the range; fractions by the direction asked.
        let max = i32::MAX as u128;
        assert_eq!(Format::S32.round(false, max + 1, 0, false, Rounding::Rz, Overflow::Wrap), 0x8000_0000);
        assert_eq!(Format::S32.round(false, max + 1, 0, false, Rounding::Rz, Overflow::Ieee), 0x8000_0000);
        assert_eq!(Format::S32.round(false, max + 1, 0, false, Rounding::Rz, Overflow::Saturate), 0x7fff_ffff);
        assert_eq!(Format::S32.round(true, max + 2, 0, false, Rounding::Rz, Overflow::Saturate), 0x8000_0000);
        assert_eq!(Format::S32.round(false, 5, -1, false, Rounding::Rne, Overflow::Wrap), 2, "2.5 to even");
        assert_eq!(Format::S32.round(true, 5, -1, false, Rounding::Rd, Overflow::Wrap), (-3i64 as u64) & 0xffff_ffff);
        assert_eq!(Format::S32.round(false, 3, 2, false, Rounding::Rne, Overflow::Wrap), 12);
        assert_eq!(Format::S8.max_finite_bits(true), 0x80);
        assert_eq!(Format::U4.max_finite_bits(false), 0xf);
        assert_eq!(Format::S32.zero_bits(true), 0, "no negative zero");
        assert_eq!(Format::B1.hex_digits(), 1);
        for f in Format::INTEGERS {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
            assert!(f.is_integer());
        }
        assert!(Format::ALL.iter().all(|f| !f.is_integer()));
    }

    #[test]
    fn known_bit_patterns() {
        let table: &[(Format, u64, f64)] = &[
            (Format::F16, 0x3c00, 1.0),
            (Format::F16, 0x7bff, 65504.0),
            (Format::F16, 0x0001, 2f64.powi(-24)),
            (Format::F16, 0x0400, 2f64.powi(-14)),
            (Format::F16, 0xc000, -2.0),
            (Format::Bf16, 0x3f80, 1.0),
            (Format::Bf16, 0x7f7f, 3.3895313892515355e38),
            (Format::Bf16, 0x0001, 2f64.powi(-133)),
            (Format::Tf32, 0x3f80_0000, 1.0),
            (Format::Tf32, 0x3f80_1fff, 1.0), // ignored low bits
            (Format::Tf32, 0x3f80_2000, 1.0 + 2f64.powi(-10)),
            (Format::Tf32, 0x0000_2000, 2f64.powi(-136)),
            (Format::E4m3, 0x7e, 448.0),
            (Format::E4m3, 0x01, 2f64.powi(-9)),
            (Format::E4m3, 0x08, 2f64.powi(-6)),
            (Format::E4m3, 0x38, 1.0),
            (Format::E4m3, 0x78, 256.0),
            (Format::E5m2, 0x7b, 57344.0),
            (Format::E5m2, 0x01, 2f64.powi(-16)),
            (Format::E5m2, 0x3c, 1.0),
            (Format::F32, 0x0000_0001, 2f64.powi(-149)),
            (Format::F32, 0x7f7f_ffff, f32::MAX as f64),
            (Format::F64, 0x3ff0_0000_0000_0000, 1.0),
            (Format::F64, 1, 2f64.powi(-1074)),
            (Format::E2m1, 0x7, 6.0),
            (Format::E2m1, 0x1, 0.5),
            (Format::E2m1, 0x2, 1.0),
            (Format::E2m1, 0xf, -6.0),
            (Format::E2m3, 0x1f, 7.5),
            (Format::E2m3, 0x01, 0.125),
            (Format::E2m3, 0x08, 1.0),
            (Format::E3m2, 0x1f, 28.0),
            (Format::E3m2, 0x01, 0.0625),
            (Format::E3m2, 0x0c, 1.0),
            (Format::E3m2, 0x3f, -28.0),
            (Format::E4m3fnuz, 0x7f, 240.0),
            (Format::E4m3fnuz, 0x01, 2f64.powi(-10)),
            (Format::E4m3fnuz, 0x40, 1.0),
            (Format::E4m3fnuz, 0xc0, -1.0),
            (Format::E5m2fnuz, 0x7f, 57344.0),
            (Format::E5m2fnuz, 0x01, 2f64.powi(-17)),
            (Format::E5m2fnuz, 0x40, 1.0),
        ];
        for &(f, bits, v) in table {
            assert_eq!(val(f, bits), v, "{f} {bits:x}");
        }
        assert!(Format::E4m3.decode(0x7f).is_nan());
        assert!(Format::E4m3.decode(0xff).is_nan());
        assert_eq!(Format::E4m3.decode(0x7e).class, Class::Finite);
        assert_eq!(Format::E5m2.decode(0x7c).class, Class::Inf);
        assert!(Format::E5m2.decode(0x7d).is_nan());
        assert_eq!(Format::F16.decode(0xfc00).class, Class::Inf);
        assert_eq!(Format::E4m3.max_finite_bits(false), 0x7e);
        assert_eq!(Format::E4m3.inf_bits(true), 0xff);
        assert_eq!(Format::F32.nan_bits(false, 0), 0x7fc0_0000);
        assert_eq!(Format::Tf32.max_finite_bits(false), 0x7f7f_e000);
        assert_eq!((Format::E4m3.emin(), Format::E4m3.emax()), (-6, 8));
        assert_eq!((Format::E5m2.emin(), Format::E5m2.emax()), (-14, 15));
        // FP6/FP4: no NaN or infinity; a generator's NaN or infinity is the largest magnitude.
        for f in [Format::E2m1, Format::E2m3, Format::E3m2] {
            assert!((0..=f.mask()).all(|b| f.decode(b).class != Class::Nan), "{f}");
            assert_eq!(f.nan_bits(true, 1), f.max_finite_bits(true), "{f}");
            assert_eq!(f.inf_bits(false), f.max_finite_bits(false), "{f}");
        }
        assert_eq!(Format::E2m1.max_finite_bits(true), 0xf);
        assert_eq!(Format::E2m3.hex_digits(), 2);
        assert_eq!(Format::E2m1.hex_digits(), 1);
        // fnuz: 0x80 is the only NaN, no negative zero, the top exponent holds numbers.
        for f in [Format::E4m3fnuz, Format::E5m2fnuz] {
            let nans: Vec<u64> = (0..=0xff).filter(|&b| f.decode(b).is_nan()).collect();
            assert_eq!(nans, vec![0x80], "{f}");
            assert_eq!(f.zero_bits(true), 0, "{f}");
            assert_eq!(f.nan_bits(false, 0), 0x80, "{f}");
            assert_eq!(f.inf_bits(true), 0x80, "{f}");
            assert_eq!(f.round(true, 1, -40, false, Rounding::Rne, Overflow::Ieee), 0, "{f}: underflow to +0");
            assert_eq!(f.max_finite_bits(true), 0xff, "{f}");
        }
        assert_eq!((Format::E4m3fnuz.emin(), Format::E4m3fnuz.emax()), (-7, 7));
        assert_eq!((Format::E2m1.emin(), Format::E2m1.emax()), (0, 2));
        assert_eq!((Format::E3m2.emin(), Format::E3m2.emax()), (-2, 4));
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
    }

    /// Every 8- and 16-bit pattern decodes to a value that encodes back to the same pattern under
    /// every rounding direction; NaNs stay NaN with their payload.
    #[test]
    fn exhaustive_round_trips_8_and_16_bit() {
        for f in Format::ALL.into_iter().filter(|f| f.storage_bits() <= 16) {
            for bits in 0..=f.mask() {
                let d = f.decode(bits);
                let back: Vec<u64> = match d.class {
                    Class::Nan => {
                        let b = f.nan_bits(d.neg, d.sig);
                        // Quieting may set the top fraction bit; the result is still NaN with the same sign.
                        assert!(f.decode(b).is_nan() && f.decode(b).neg == d.neg);
                        continue;
                    }
                    Class::Inf => vec![f.inf_bits(d.neg)],
                    Class::Zero => vec![f.zero_bits(d.neg)],
                    Class::Finite => Rounding::ALL
                        .iter()
                        .map(|&r| f.round(d.neg, d.sig as u128, d.exp, false, r, Overflow::Ieee))
                        .collect(),
                };
                for b in back {
                    assert_eq!(b, bits, "{f} {bits:#x}");
                }
            }
        }
    }

    #[test]
    fn to_f64_agrees_with_decode_on_every_narrow_pattern() {
        for f in Format::ALL.into_iter().filter(|f| f.storage_bits() <= 16) {
            for bits in 0..=f.mask() {
                let (a, b) = (f.to_f64(bits), f.decode(bits).to_f64());
                assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{f} {bits:x}");
            }
        }
        for bits in [0u64, 1, 0x3f80_1fff, 0x8000_2000, 0x7f80_0000, 0x7fc0_0000, 0x0080_0000] {
            for f in [Format::F32, Format::Tf32] {
                let (a, b) = (f.to_f64(bits), f.decode(bits).to_f64());
                assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{f} {bits:x}");
            }
        }
    }

    /// The slice conversion (F16C where the CPU has it, eight at a time) gives each element's
    /// `to_f64` to the bit: every pattern, at every place in a group of eight, NaNs among others,
    /// slices of every length up to 20 (whole groups and tails).
    #[test]
    fn to_f64_slice_is_to_f64_bit_for_bit() {
        for f in Format::ALL.into_iter().filter(|f| f.storage_bits() <= 16) {
            let all: Vec<u64> = (0..=f.mask()).collect();
            for shift in [0, 3] {
                let src = &all[shift..];
                let mut dst = vec![0.0; src.len()];
                f.to_f64_slice(src, &mut dst);
                for (&b, d) in src.iter().zip(&dst) {
                    assert_eq!(d.to_bits(), f.to_f64(b).to_bits(), "{f} {b:x}");
                }
            }
            for len in 0..=20 {
                let src: Vec<u64> = (0..len as u64).map(|i| (i * 0x2f1b + 0x3c00) & f.mask()).collect();
                let mut dst = vec![0.0; len];
                f.to_f64_slice(&src, &mut dst);
                assert!(src.iter().zip(&dst).all(|(&b, d)| d.to_bits() == f.to_f64(b).to_bits()), "{f} len {len}");
            }
        }
    }

    /// Little-endian elements as an npz holds them, in containers as wide as their format,
    /// convert as their patterns do: every pattern of the narrow formats (NaN payloads of
    /// either quietness among them) at two offsets into the bytes, wide formats on patterns
    /// with every kind of field, and lengths that leave the F16C loop a tail.
    #[test]
    fn le_to_f64_slice_is_to_f64_bit_for_bit() {
        for f in Format::ALL.into_iter().filter(|f| !f.is_integer() && f.storage_bits() % 8 == 0) {
            let width = f.storage_bits() as usize / 8;
            let patterns: Vec<u64> = if width <= 2 {
                (0..=f.mask()).collect()
            } else {
                // Random patterns, a quarter with an all-ones exponent (NaN payloads quiet and
                // not, infinities), some with a zero one (subnormals, zeros).
                use rand::{Rng, SeedableRng};
                let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
                let exp: u64 = if width == 8 { 0x7ff0_0000_0000_0000 } else { 0x7f80_0000 };
                let special = |i: usize| if i % 4 == 1 { exp } else { 0 };
                let subnormal = |b: u64| if b % 7 == 0 { b & !exp } else { b };
                (0..4096).map(|i| subnormal(rng.gen::<u64>() & f.mask()) | special(i)).collect()
            };
            let bytes: Vec<u8> = patterns.iter().flat_map(|&b| b.to_le_bytes()[..width].to_vec()).collect();
            for (skip, len) in [(0, patterns.len()), (3, patterns.len() - 3), (1, 13), (0, 7), (2, 0)] {
                let mut dst = vec![0.0; len];
                f.le_to_f64_slice(&bytes[skip * width..(skip + len) * width], width, &mut dst);
                for (&b, d) in patterns[skip..skip + len].iter().zip(&dst) {
                    assert_eq!(d.to_bits(), f.to_f64(b).to_bits(), "{f} {b:x}");
                }
            }
        }
    }

    /// Our f32 rounding of arbitrary f64 values agrees with Rust's casts, and our f16/bf16 rounding
    /// of f32 values with the `half` crate (all round to nearest even), subnormals and overflow included.
    #[test]
    fn rne_matches_half_crate_and_casts() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        for _ in 0..200_000 {
            let x = f64::from_bits(rng.gen::<u64>());
            if !x.is_finite() || x == 0.0 {
                continue;
            }
            // Narrow the exponent so many land in the interesting ranges.
            let x = x.abs().log2().fract().exp2() * pow2(rng.gen_range(-160..140)) * x.signum();
            let d = Format::F64.decode(x.to_bits());
            let ours = |f: Format| f.round(d.neg, d.sig as u128, d.exp, false, Rounding::Rne, Overflow::Ieee);
            assert_eq!(ours(Format::F32), (x as f32).to_bits() as u64, "f32 {x:e}");
            // half's from_f64 goes through f32 (double rounding), so compare from an f32 value.
            let y = x as f32;
            if y.is_finite() && y != 0.0 {
                let e = Format::F32.decode(y.to_bits() as u64);
                let from_f32 = |f: Format| f.round(e.neg, e.sig as u128, e.exp, false, Rounding::Rne, Overflow::Ieee);
                assert_eq!(from_f32(Format::F16), half::f16::from_f32(y).to_bits() as u64, "f16 {y:e}");
                assert_eq!(from_f32(Format::Bf16), half::bf16::from_f32(y).to_bits() as u64, "bf16 {y:e}");
            }
        }
    }

    #[test]
    fn directed_roundings_and_overflow() {
        // 1 + 2^-11 + 2^-12 in f16: above half an ulp (2^-10).
        let (sig, exp) = ((1u128 << 12) + 2 + 1, -12);
        let f = Format::F16;
        let r = |rnd| f.round(false, sig, exp, false, rnd, Overflow::Ieee);
        assert_eq!(r(Rounding::Rne), 0x3c01);
        assert_eq!(r(Rounding::Rz), 0x3c00);
        assert_eq!(r(Rounding::Ru), 0x3c01);
        assert_eq!(r(Rounding::Rd), 0x3c00);
        assert_eq!(r(Rounding::Ra), 0x3c01);
        // Exact tie 1 + 2^-11: even stays, away goes up.
        let t = |rnd| f.round(true, (1u128 << 11) + 1, -11, false, rnd, Overflow::Ieee);
        assert_eq!(t(Rounding::Rne), 0xbc00);
        assert_eq!(t(Rounding::Rna), 0xbc01);
        assert_eq!(t(Rounding::Rd), 0xbc01);
        assert_eq!(t(Rounding::Ru), 0xbc00);
        // Overflow: 65520 is the f16 rounding boundary.
        let o = |rnd, ovf| f.round(false, 65520, 0, false, rnd, ovf);
        assert_eq!(o(Rounding::Rne, Overflow::Ieee), 0x7c00);
        assert_eq!(o(Rounding::Rz, Overflow::Ieee), 0x7bff);
        assert_eq!(o(Rounding::Rne, Overflow::Saturate), 0x7bff);
        assert_eq!(f.round(false, 65519, 0, false, Rounding::Rne, Overflow::Ieee), 0x7bff);
        // E4M3: 464 ties to 448 (even), 465 overflows to NaN, or saturates.
        let e = Format::E4m3;
        assert_eq!(e.round(false, 464, 0, false, Rounding::Rne, Overflow::Ieee), 0x7e);
        assert_eq!(e.round(false, 465, 0, false, Rounding::Rne, Overflow::Ieee), 0x7f);
        assert_eq!(e.round(true, 1000, 0, false, Rounding::Rne, Overflow::Saturate), 0xfe);
        // Subnormal results and underflow to a signed zero.
        assert_eq!(f.round(false, 3, -26, false, Rounding::Rne, Overflow::Ieee), 0x0001);
        assert_eq!(f.round(true, 1, -26, false, Rounding::Rne, Overflow::Ieee), 0x8000);
        assert_eq!(f.round(true, 1, -26, false, Rounding::Rd, Overflow::Ieee), 0x8001);
        // Sticky below a tie breaks it upward.
        assert_eq!(f.round(false, (1u128 << 11) + 1, -11, true, Rounding::Rne, Overflow::Ieee), 0x3c01);
        // Rounding up into the next binade and from the largest subnormal into the smallest normal.
        assert_eq!(f.round(false, (1u128 << 12) - 1, -11, false, Rounding::Rne, Overflow::Ieee), 0x4000);
        assert_eq!(f.round(false, 0x7ff, -25, false, Rounding::Rne, Overflow::Ieee), 0x0400);
    }
}
