//! Exact reference (GMP/MPFR through `rug`): the mathematically exact `d_ij = c_ij + Σ a_ik·b_kj`
//! and its correct rounding into any format in every direction.
//!
//! This module shares only [`Format::decode`] and the packing of already-representable values
//! with the emulator; every rounding decision here is MPFR's, so the emulator is checked against
//! an independent oracle and never against itself.

use crate::case::MmaCase;
use crate::format::{Class, Format, Overflow, Rounding};
use rug::float::Round;
use rug::ops::AddAssignRound;
use rug::{Assign, Float, Integer};
use std::cmp::Ordering;

/// The exact value of one element of D.
#[derive(Clone, Debug, PartialEq)]
pub enum Exact {
    Nan,
    Inf { neg: bool },
    /// An exactly zero sum; its sign depends on the rounding direction (IEEE 754 §6.3).
    Zero { neg_nearest: bool, neg_down: bool },
    /// A nonzero finite value, held at a precision that made every step exact.
    Finite(Float),
}

/// Exact values of every element of D, row-major.
pub fn exact_tile(case: &MmaCase) -> Vec<Exact> {
    if let Some(rows) = case.dense_rows() {
        return rows.iter().flat_map(exact_tile).collect();
    }
    let mut out = Vec::with_capacity(case.m * case.n);
    for i in 0..case.m {
        for j in 0..case.n {
            out.push(exact_element(case, i, j));
        }
    }
    out
}

/// The exact value of `d_ij`.
pub fn exact_element(case: &MmaCase, i: usize, j: usize) -> Exact {
    if let Some(row) = case.dense_row(i) {
        return exact_element(&row, 0, j);
    }
    let c = case.c_fmt.decode(case.c_at(i, j));
    let mut nan = c.class == Class::Nan;
    let (mut pos_inf, mut neg_inf) = (c.class == Class::Inf && !c.neg, c.class == Class::Inf && c.neg);
    let (mut pos_zeros, mut neg_zeros) = (0usize, 0usize);
    // Terms as (negative, integer significand, exponent of its last bit).
    let mut terms: Vec<(bool, u128, i32)> = Vec::with_capacity(case.k + 1);
    match c.class {
        Class::Finite => terms.push((c.neg, c.sig as u128, c.exp)),
        Class::Zero if c.neg => neg_zeros += 1,
        Class::Zero => pos_zeros += 1,
        _ => {}
    }
    let xor = case.xor_pairs();
    for kk in 0..case.k {
        if xor {
            // b1 `.xor.popc`: each pair contributes a XOR b, 0 or 1.
            match case.a_fmt.int_value(case.a_at(i, kk)) ^ case.b_fmt.int_value(case.b_at(kk, j)) {
                0 => pos_zeros += 1,
                _ => terms.push((false, 1, 0)),
            }
            continue;
        }
        let mut a = case.a_fmt.decode(case.a_at(i, kk));
        let mut b = case.b_fmt.decode(case.b_at(kk, j));
        if let (Some(sa), Some(sb)) = (case.scale_of_a(i, kk), case.scale_of_b(kk, j)) {
            a = crate::blockscale::scaled(a, sa);
            b = crate::blockscale::scaled(b, sb);
        }
        let neg = a.neg ^ b.neg;
        match (a.class, b.class) {
            (Class::Nan, _) | (_, Class::Nan) => nan = true,
            (Class::Inf, Class::Zero) | (Class::Zero, Class::Inf) => nan = true,
            (Class::Inf, _) | (_, Class::Inf) => {
                if neg {
                    neg_inf = true
                } else {
                    pos_inf = true
                }
            }
            (Class::Zero, _) | (_, Class::Zero) => {
                if neg {
                    neg_zeros += 1
                } else {
                    pos_zeros += 1
                }
            }
            (Class::Finite, Class::Finite) => terms.push((neg, a.sig as u128 * b.sig as u128, a.exp + b.exp)),
        }
    }
    if nan || (pos_inf && neg_inf) {
        return Exact::Nan;
    }
    if pos_inf || neg_inf {
        return Exact::Inf { neg: neg_inf };
    }
    if terms.is_empty() {
        // A sum of zeros: -0 only when every term is -0, or rounding down with any -0.
        return Exact::Zero { neg_nearest: pos_zeros == 0, neg_down: neg_zeros > 0 };
    }
    let lo = terms.iter().map(|t| t.2).min().expect("nonempty");
    let hi = terms.iter().map(|t| t.2 + 128 - t.1.leading_zeros() as i32).max().expect("nonempty");
    let count_bits = 64 - (terms.len() as u64).leading_zeros();
    let prec = (hi - lo) as u32 + count_bits + 2;
    let mut sum = Float::with_val(prec, 0);
    let mut term = Float::new(prec);
    for &(neg, sig, exp) in &terms {
        term.assign(Integer::from(sig));
        term <<= exp;
        if neg {
            term = -term;
        }
        let dir = sum.add_assign_round(&term, Round::Nearest);
        assert_eq!(dir, Ordering::Equal, "reference precision {prec} was not enough: a bug");
    }
    if sum.is_zero() {
        // Nonzero terms that cancel exactly: +0, or -0 when rounding down.
        return Exact::Zero { neg_nearest: false, neg_down: true };
    }
    Exact::Finite(sum)
}

fn mpfr_round(r: Rounding) -> Round {
    match r {
        Rounding::Rne => Round::Nearest,
        Rounding::Rz => Round::Zero,
        Rounding::Ru => Round::Up,
        Rounding::Rd => Round::Down,
        Rounding::Ra => Round::AwayZero,
        Rounding::Rna => unreachable!("ties-away is built from RZ and RA"),
    }
}

impl Exact {
    /// The correct rounding of this value into `fmt` in direction `rnd` (IEEE overflow rules; E4M3
    /// overflows to NaN). NaN results carry the format's default quiet NaN.
    pub fn round(&self, fmt: Format, rnd: Rounding) -> u64 {
        match self {
            Exact::Nan => fmt.nan_bits(false, 0),
            Exact::Inf { neg } => fmt.inf_bits(*neg),
            Exact::Zero { neg_nearest, neg_down } => {
                fmt.zero_bits(if rnd == Rounding::Rd { *neg_down } else { *neg_nearest })
            }
            Exact::Finite(x) => round_finite(x, fmt, rnd),
        }
    }

    /// Error of `bits` (in `fmt`) against this exact value, in units in the last place of `fmt`
    /// at the exact value. `None` when either side is not finite.
    pub fn ulp_error(&self, fmt: Format, bits: u64) -> Option<f64> {
        let got = fmt.decode(bits);
        let x = match self {
            Exact::Finite(x) => x.clone(),
            Exact::Zero { .. } => Float::with_val(64, 0),
            _ => return None,
        };
        if matches!(got.class, Class::Nan | Class::Inf) {
            return None;
        }
        let lead = if x.is_zero() { fmt.emin() } else { x.get_exp().expect("finite") - 1 };
        let ulp_exp = lead.max(fmt.emin()) - fmt.precision() as i32 + 1;
        let prec = x.prec().max(64) + 128;
        let mut diff = Float::with_val(prec, Integer::from(got.sig));
        diff <<= got.exp;
        if got.neg {
            diff = -diff;
        }
        diff -= &x;
        diff >>= ulp_exp;
        Some(diff.to_f64())
    }

    /// The exact value as text: a decimal approximation and, for finite values, `m·2^e` exactly.
    pub fn describe(&self) -> String {
        match self {
            Exact::Nan => "NaN".into(),
            Exact::Inf { neg } => if *neg { "-inf" } else { "+inf" }.into(),
            Exact::Zero { neg_nearest, .. } => if *neg_nearest { "-0" } else { "0" }.into(),
            Exact::Finite(x) => {
                let (m, e) = x.to_integer_exp().expect("finite");
                let tz = m.find_one(0).unwrap_or(0);
                let m: Integer = m >> tz;
                format!("{:e} (= {}·2^{})", x.to_f64(), m, e + tz as i32)
            }
        }
    }
}

fn round_finite(x: &Float, fmt: Format, rnd: Rounding) -> u64 {
    if rnd == Rounding::Rna {
        // Ties away: of the two neighbours, the one away from zero unless x lies below their midpoint.
        let (toward, away) = (round_finite(x, fmt, Rounding::Rz), round_finite(x, fmt, Rounding::Ra));
        if toward == away {
            return toward;
        }
        let prec = x.prec() + 64;
        let magnitude = |bits: u64| {
            let d = fmt.decode(bits);
            let mut f = Float::with_val(prec, Integer::from(d.sig));
            f <<= d.exp;
            f
        };
        let mid = if fmt.decode(away).class == Class::Finite {
            Float::with_val(prec, magnitude(toward) + magnitude(away)) / 2u32
        } else {
            // Away overflows: the midpoint lies half an ulp above the largest finite value.
            let mut half_ulp = Float::with_val(prec, 1);
            half_ulp <<= fmt.emax() - fmt.precision() as i32;
            Float::with_val(prec, magnitude(toward) + half_ulp)
        };
        return if Float::with_val(prec, x.abs_ref()) >= mid { away } else { toward };
    }
    let neg = x.is_sign_negative();
    if fmt.is_integer() {
        // The nearest integer in the direction asked, then the format's nearest value to it:
        // beyond the range, its end (an exact reference neither wraps nor overflows).
        let (i, _) = x.to_integer_round(mpfr_round(rnd)).expect("finite");
        let v = i.to_i128().unwrap_or(if neg { i128::MIN } else { i128::MAX });
        return fmt.int_bits(v, Overflow::Saturate);
    }
    let p = fmt.precision();
    let r = mpfr_round(rnd);
    let (mut y, dir) = Float::with_val_round(p, x, r);
    // MPFR writes values as 0.1xxx·2^e, so the smallest normal 2^emin has e = emin + 1.
    y.subnormalize_round(fmt.emin() + 1, dir, r);
    if y.is_zero() {
        return fmt.zero_bits(neg);
    }
    let mut max = Float::with_val(p, fmt.spec().max_sig_at_emax);
    max <<= fmt.emax() - p as i32 + 1;
    if (*y.as_abs()).partial_cmp(&*max.as_abs()) == Some(Ordering::Greater) {
        return fmt.overflow_bits(neg, rnd, Overflow::Ieee);
    }
    let (m, e) = y.to_integer_exp().expect("finite");
    let m = m.abs();
    let tz = m.find_one(0).expect("nonzero");
    let sig = (m >> tz).to_u64().expect("fits the format");
    fmt.encode_exact(neg, sig, e + tz as i32).expect("MPFR result is representable")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a_fmt: Format, c_fmt: Format, a: &[u64], b: &[u64], c: u64) -> MmaCase {
        let mut case = MmaCase::zeros(a_fmt, c_fmt, 1, 1, a.len());
        case.a = a.to_vec();
        case.b = b.to_vec();
        case.c = vec![c];
        case
    }

    #[test]
    fn rounds_an_exact_sum_in_every_direction() {
        // 1 + 2^-24 + 2^-25 in f32: above half an ulp (2^-12·2^-12 + 2^-12·2^-13).
        let case = dot(Format::F16, Format::F32, &[0x0c00, 0x0c00], &[0x0c00, 0x0800], 0x3f80_0000);
        let x = exact_element(&case, 0, 0);
        assert_eq!(x.round(Format::F32, Rounding::Rne), 0x3f80_0001);
        assert_eq!(x.round(Format::F32, Rounding::Rz), 0x3f80_0000);
        assert_eq!(x.round(Format::F32, Rounding::Ru), 0x3f80_0001);
        assert_eq!(x.round(Format::F32, Rounding::Rd), 0x3f80_0000);
        assert_eq!(x.round(Format::F32, Rounding::Ra), 0x3f80_0001);
        assert_eq!(x.round(Format::F32, Rounding::Rna), 0x3f80_0001);
        let e = x.ulp_error(Format::F32, 0x3f80_0000).unwrap();
        assert_eq!(e, -0.75);
    }

    #[test]
    fn specials_zero_signs_subnormals_and_overflow() {
        let inf_times_zero = dot(Format::F16, Format::F32, &[0x7c00], &[0x0000], 0);
        assert_eq!(exact_element(&inf_times_zero, 0, 0), Exact::Nan);
        let minus_zeros = dot(Format::F16, Format::F32, &[0x8000], &[0x3c00], 0x8000_0000);
        assert_eq!(exact_element(&minus_zeros, 0, 0).round(Format::F32, Rounding::Rne), 0x8000_0000);
        let cancel = dot(Format::F16, Format::F32, &[0x3c00], &[0xbc00], 0x3f80_0000);
        let x = exact_element(&cancel, 0, 0);
        assert_eq!(x.round(Format::F32, Rounding::Rne), 0);
        assert_eq!(x.round(Format::F32, Rounding::Rd), 0x8000_0000);
        // 2^-14 · 2^-1 = 2^-15: an f16 subnormal.
        let sub = dot(Format::F16, Format::F16, &[0x0400], &[0x3800], 0);
        assert_eq!(exact_element(&sub, 0, 0).round(Format::F16, Rounding::Rne), 0x0200);
        // 3·2^-26 → f16: 0.75 of the smallest subnormal.
        let tiny = dot(Format::F16, Format::F16, &[0x0001], &[0x3a00], 0);
        let x = exact_element(&tiny, 0, 0);
        assert_eq!(x.round(Format::F16, Rounding::Rne), 0x0001);
        assert_eq!(x.round(Format::F16, Rounding::Rz), 0x0000);
        // 65504 + 16 = 65520 rounds to inf under RNE, max under RZ.
        let big = dot(Format::F16, Format::F16, &[0x7bff, 0x4c00], &[0x3c00, 0x3c00], 0);
        let x = exact_element(&big, 0, 0);
        assert_eq!(x.round(Format::F16, Rounding::Rne), 0x7c00);
        assert_eq!(x.round(Format::F16, Rounding::Rz), 0x7bff);
        assert_eq!(x.round(Format::F16, Rounding::Rna), 0x7c00);
        assert_eq!(x.round(Format::E4m3, Rounding::Rne), 0x7f);
    }

    #[test]
    fn rna_breaks_ties_away() {
        // 1 + 2^-11 in f16 is a tie.
        let tie = dot(Format::F32, Format::F16, &[0x3f80_0000], &[0x3f80_1000], 0);
        let x = exact_element(&tie, 0, 0);
        assert_eq!(x.round(Format::F16, Rounding::Rne), 0x3c00);
        assert_eq!(x.round(Format::F16, Rounding::Rna), 0x3c01);
    }
}
