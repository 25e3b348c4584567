//! The emulator's fast path for blocks of one or two exact products added separately: where a
//! model says "each block of at most two products is summed exactly and rounded to nearest
//! into f32, then added to the running value (C at first) by one f32 addition rounded to
//! nearest" (the H100's m8n8k4 f16 into f16, Volta's quad-pair shape), every step is IEEE
//! arithmetic the CPU has: the products are exact in f64, the pair's exact sum is f64's sum
//! plus its rounding error (TwoSum), rounded to f32 with that error breaking ties, and the
//! running additions are the CPU's f32 additions. D narrower than f32 is rounded to nearest
//! once at the end, as the general path's output step does.
//!
//! NaN results leave, as in `fma_chain`: the model's NaN rule is not the CPU's, so the general
//! path in `emulator.rs`, the specification, settles those elements.

use super::{Arithmetic, CPlacement, Normalise};
use crate::case::MmaCase;
use crate::format::{Format, Overflow, Rounding};

/// Whether this arithmetic on these formats is a chain of separately added pairs the CPU
/// computes exactly.
pub(super) fn applies(ar: &Arithmetic, case: &MmaCase, acc: Format) -> bool {
    // Products exact in f64 (at most 26 significant bits a factor, exponents far inside f64's).
    let narrow = |f: Format| !f.is_integer() && f.precision() <= 26;
    let c_fits = matches!(case.c_fmt, Format::F16 | Format::Bf16 | Format::F32);
    acc == Format::F32
        // Blocks of one or two products (width 0, the whole of K, goes to the general path).
        && matches!(ar.blocks.width, 1 | 2)
        && ar.blocks.normalise == Normalise::End
        && ar.blocks.c == CPlacement::Separate
        && ar.blocks.separate_rounding == Rounding::Rne
        && ar.blocks.group == 0
        && super::fma_chain::exact_ieee(ar)
        && ar.accumulator.overflow == Overflow::Ieee
        && ar.output.rounding == Rounding::Rne
        && ar.output.overflow == Overflow::Ieee
        && c_fits
        && case.d_fmt == case.c_fmt
        && narrow(case.a_fmt)
        && narrow(case.b_fmt)
}

/// D for every element, row-major, with `None` where the result is a NaN (the general path's
/// to settle). `blocks`: the k indices of each block, in the order the chain takes them.
pub(super) fn tile(case: &MmaCase, blocks: &[Vec<usize>]) -> Vec<Option<u64>> {
    let (m, n, k) = (case.m, case.n, case.k);
    let (a, b, c) = super::fma_chain::values(case);
    let mut d = vec![None; m * n];
    let mut acc = vec![0f32; n];
    for i in 0..m {
        // C converts exactly (f16, bf16 or f32).
        acc.iter_mut().zip(&c[i * n..(i + 1) * n]).for_each(|(s, &cv)| *s = cv as f32);
        for block in blocks {
            match block[..] {
                [kk] => {
                    let x = a[i * k + kk];
                    for (s, &y) in acc.iter_mut().zip(&b[kk * n..(kk + 1) * n]) {
                        *s += (x * y) as f32;
                    }
                }
                [k0, k1] => {
                    let (x0, x1) = (a[i * k + k0], a[i * k + k1]);
                    let (r0, r1) = (&b[k0 * n..(k0 + 1) * n], &b[k1 * n..(k1 + 1) * n]);
                    for ((s, &y0), &y1) in acc.iter_mut().zip(r0).zip(r1) {
                        *s += pair_to_f32(x0 * y0, x1 * y1);
                    }
                }
                _ => {}
            }
        }
        for j in 0..n {
            let v = acc[j];
            d[i * n + j] = (!v.is_nan()).then(|| to_format(case.d_fmt, v));
        }
    }
    d
}

/// `x + y` exactly, rounded to nearest f32 (ties to even): f64's sum and its error (TwoSum);
/// where f64's sum lies exactly halfway between two f32 values, the error's sign decides.
#[inline]
fn pair_to_f32(x: f64, y: f64) -> f32 {
    let s = x + y;
    let r = s as f32;
    if !s.is_finite() {
        return r;
    }
    let bb = s - x;
    let err = (x - (s - bb)) + (y - bb);
    if err == 0.0 || r as f64 == s {
        return r;
    }
    // The f32 neighbours of s (an overflowed r is 2^128 as a neighbour).
    let (lo, hi) = if (r as f64) < s { (r, next_up(r)) } else { (-next_up(-r), r) };
    let wide = |v: f32| if v.is_infinite() { 2f64.powi(128).copysign(v as f64) } else { v as f64 };
    if s - wide(lo) == wide(hi) - s {
        if err > 0.0 { hi } else { lo }
    } else {
        r
    }
}

/// The next f32 toward +infinity (`f32::next_up`, which needs Rust 1.86).
fn next_up(v: f32) -> f32 {
    if v.is_nan() || v == f32::INFINITY {
        return v;
    }
    if v == 0.0 {
        return f32::from_bits(1);
    }
    let bits = v.to_bits();
    f32::from_bits(if v > 0.0 { bits + 1 } else { bits - 1 })
}

/// A non-NaN f32 value in D's format (f16, bf16 or f32), rounded to nearest even once
/// (the `half` crate's conversions: IEEE rounding, subnormals and overflow included).
fn to_format(f: Format, v: f32) -> u64 {
    match f {
        Format::F16 => half::f16::from_f32(v).to_bits() as u64,
        Format::Bf16 => half::bf16::from_f32(v).to_bits() as u64,
        _ => v.to_bits() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conversion into D agrees with the general path's rounding on f16 ties, subnormals
    /// and overflow.
    #[test]
    fn f32_to_d_rounds_as_the_general_path() {
        let edge = [1.0 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-11), 2f32.powi(-25), 3.0 * 2f32.powi(-26), 65520.0, 65519.99, -(2f32.powi(-24)), -0.0, f32::INFINITY];
        for v in edge {
            for f in [Format::F16, Format::Bf16] {
                let bits = (v as f64).to_bits();
                let expect = if v == 0.0 || v.is_infinite() {
                    if v == 0.0 { f.zero_bits(v.is_sign_negative()) } else { f.inf_bits(v < 0.0) }
                } else {
                    let sig = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
                    f.round(v < 0.0, sig as u128, ((bits >> 52) & 0x7ff) as i32 - 1075, false, Rounding::Rne, Overflow::Ieee)
                };
                assert_eq!(to_format(f, v), expect, "{v} into {f:?}");
            }
        }
    }

    /// Exact sums rounded once, against the exact value worked out with integers: a tie in f64
    /// that the error breaks, a sum that f64 itself rounds, and the overflow edge.
    #[test]
    fn pairs_round_once_to_nearest_f32() {
        // 1 + 2^-24 is a tie between 1 and 1 + 2^-23 (to even: 1); adding 2^-80 breaks it upward.
        let tie_up = pair_to_f32(1.0 + 2f64.powi(-24), 2f64.powi(-80));
        assert_eq!(tie_up, 1.0 + 2f32.powi(-23));
        let tie_down = pair_to_f32(1.0 + 2f64.powi(-24), -(2f64.powi(-80)));
        assert_eq!(tie_down, 1.0);
        assert_eq!(pair_to_f32(1.0, 2f64.powi(-24)), 1.0);
        // f64 rounds 2^30 + 2^-30 to 2^30; the f32 result is 2^30 either way.
        assert_eq!(pair_to_f32(2f64.powi(30), 2f64.powi(-30)), 2f32.powi(30));
        // Halfway between f32's largest and 2^128, a hair below: the largest, not infinity.
        let max = f32::MAX as f64;
        let half_ulp = 2f64.powi(103);
        assert_eq!(pair_to_f32(max + half_ulp, -(2f64.powi(-900))), f32::MAX);
        assert_eq!(pair_to_f32(max + half_ulp, 2f64.powi(-900)), f32::INFINITY);
        // Signed zeros as IEEE addition gives them.
        assert!(pair_to_f32(-0.0, -0.0).is_sign_negative());
        assert!(pair_to_f32(1.0, -1.0).is_sign_positive());
        // Subnormal f32 results: halfway between 0 and 2^-149, nudged either way.
        assert_eq!(pair_to_f32(2f64.powi(-150), 2f64.powi(-300)), 2f32.powi(-149));
        assert_eq!(pair_to_f32(2f64.powi(-150), -(2f64.powi(-300))), 0.0);
        // And on the negative side.
        assert_eq!(pair_to_f32(-(1.0 + 2f64.powi(-24)), -(2f64.powi(-80))), -(1.0 + 2f32.powi(-23)));
        assert_eq!(pair_to_f32(-(2f64.powi(-150)), 2f64.powi(-300)), -0.0);
        for v in [0.0f32, -0.0, 1.0, -1.0, f32::MAX, -f32::MAX, 2f32.powi(-149), -(2f32.powi(-149)), f32::INFINITY, f32::NEG_INFINITY] {
            let up = next_up(v);
            assert!(up > v || v == f32::INFINITY, "{v}");
            assert!(f64::from(up) - f64::from(v) <= f64::from(v.abs()) * 2f64.powi(-23) + 2f64.powi(-149) || up.is_infinite(), "{v}");
        }
    }
}
