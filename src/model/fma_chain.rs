//! The emulator's fast path for chains of fused multiply-adds in a format the CPU has: where a
//! model says "one product per block, exact, added to the running value with one round to
//! nearest into f32 or f64" (FP64 tensor cores, m8n8k4 f16 into f32), each step is the CPU's own
//! IEEE `fma`, bit for bit: signed zeros, subnormals, infinities and overflow included.
//!
//! Only NaN results leave: the model's NaN rule (payloads passed on, or a fixed pattern) is not
//! the CPU's, so the general path in `emulator.rs`, the specification, settles those elements.

use super::{AccRange, AlignMode, Arithmetic, CPlacement, Normalise, Subnormals, ZeroSign};
use crate::case::MmaCase;
use crate::format::{Format, Overflow, Rounding};

/// Whether this arithmetic on these formats is an IEEE FMA chain the CPU computes exactly.
pub(super) fn applies(ar: &Arithmetic, case: &MmaCase, acc: Format) -> bool {
    // Every input converts exactly into the accumulator's type.
    let fits = |f: Format| match acc {
        Format::F64 => !f.is_integer(),
        Format::F32 => !f.is_integer() && f.precision() <= 24 && f.emax() <= 127 && f.emin() >= -126,
        _ => false,
    };
    ar.blocks.width == 1
        && ar.blocks.interleave == 0
        && ar.blocks.normalise == Normalise::End
        && (ar.blocks.c == CPlacement::Fused || (ar.blocks.c == CPlacement::After && ar.blocks.separate_rounding == Rounding::Rne))
        && exact_ieee(ar)
        && matches!(ar.accumulator.overflow, Overflow::Ieee | Overflow::Wrap)
        && !case.c_fmt.is_integer()
        && case.c_fmt == acc
        && fits(case.a_fmt)
        && fits(case.b_fmt)
}

/// Exact products and blocks, rounded to nearest in the accumulator's own range, every
/// subnormal kept, IEEE zero signs (or D's zeros all +0): the arithmetic the CPU's IEEE
/// operations compute, whatever the blocks (the CPU paths add their own block conditions).
pub(super) fn exact_ieee(ar: &Arithmetic) -> bool {
    ar.align.mode == AlignMode::Exact
        && ar.align.carry_bits.is_none()
        && ar.products.round_to.is_none()
        && ar.products.inf_above.is_none()
        && ar.accumulator.precision.is_none()
        && ar.accumulator.rounding == Rounding::Rne
        && ar.accumulator.range == AccRange::Format
        && ar.accumulator.subnormals == Subnormals::Keep
        && ar.inputs.subnormals == Subnormals::Keep
        && ar.inputs.c_subnormals == Subnormals::Keep
        && ar.output.subnormals == Subnormals::Keep
        && matches!(ar.specials.zero_sign, ZeroSign::Ieee | ZeroSign::Unsigned)
}

/// D for every element, row-major, with `None` where the result is a NaN (the general path's
/// to settle). `order`: the k indices in the order the chain takes them.
pub(super) fn tile(ar: &Arithmetic, case: &MmaCase, order: &[usize]) -> Vec<Option<u64>> {
    let (m, n, k) = (case.m, case.n, case.k);
    let (a, b, c) = values(case);
    let after = ar.blocks.c == CPlacement::After;
    let mut d = vec![None; m * n];
    match case.c_fmt {
        Format::F64 => chains_f64(&a, &b, &c, m, n, k, order, after, &mut d),
        _ => chains_f32(&a, &b, &c, m, n, k, order, after, &mut d),
    }
    d
}

/// D(p, p) for p below `count` (what [`tile`] gives on the diagonal of a square case): each
/// element's own chain, eight side by side so that their FMAs pipeline.
pub(super) fn diagonal(ar: &Arithmetic, case: &MmaCase, order: &[usize], count: usize) -> Vec<Option<u64>> {
    let (n, k) = (case.n, case.k);
    let mut a = vec![0f64; case.m * k];
    case.a_fmt.to_f64_slice(&case.a, &mut a);
    let mut b = vec![0f64; k * n];
    case.b_fmt.to_f64_slice(&case.b, &mut b);
    let c: Vec<f64> = (0..count).map(|p| case.c_fmt.to_f64(case.c_at(p, p))).collect();
    let after = ar.blocks.c == CPlacement::After;
    match case.c_fmt {
        Format::F64 => diagonal_f64(&a, &b, &c, n, k, order, after),
        _ => diagonal_f32(&a, &b, &c, n, k, order, after),
    }
}

macro_rules! diagonal_chains {
    ($name:ident, $t:ty) => {
        fn $name(a: &[f64], b: &[f64], c: &[f64], n: usize, k: usize, order: &[usize], after: bool) -> Vec<Option<u64>> {
            const W: usize = 8;
            let mut d = Vec::with_capacity(c.len());
            for p0 in (0..c.len()).step_by(W) {
                let width = W.min(c.len() - p0);
                // With C added after the chain, the chain starts from +0.
                let mut acc: [$t; W] = std::array::from_fn(|l| if after || l >= width { 0.0 } else { c[p0 + l] as $t });
                for &kk in order {
                    for l in 0..width {
                        let (x, y) = (a[(p0 + l) * k + kk] as $t, b[kk * n + p0 + l] as $t);
                        acc[l] = x.fma(y, acc[l]);
                    }
                }
                for l in 0..width {
                    let v = if after { acc[l] + c[p0 + l] as $t } else { acc[l] };
                    d.push((!v.is_nan()).then(|| v.to_bits() as u64));
                }
            }
            d
        }
    };
}
diagonal_chains!(diagonal_f32, f32);
diagonal_chains!(diagonal_f64, f64);

/// A, B (k×n, row-major) and C of a case as f64 values, exactly (every format the CPU paths
/// take converts exactly).
pub(super) fn values(case: &MmaCase) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (m, n, k) = (case.m, case.n, case.k);
    let mut a = vec![0f64; m * k];
    case.a_fmt.to_f64_slice(&case.a, &mut a);
    let mut b = vec![0f64; k * n];
    for (kk, row) in b.chunks_mut(n).enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = case.b_fmt.to_f64(case.b_at(kk, j));
        }
    }
    let mut c = vec![0f64; m * n];
    case.c_fmt.to_f64_slice(&case.c, &mut c);
    (a, b, c)
}

/// One chain per element, a row at a time (the n chains of a row are independent, so the
/// FMAs pipeline). Written once for f32 and f64.
macro_rules! chains {
    ($name:ident, $t:ty) => {
        #[allow(clippy::too_many_arguments)]
        fn $name(a: &[f64], b: &[f64], c: &[f64], m: usize, n: usize, k: usize, order: &[usize], after: bool, d: &mut [Option<u64>]) {
            let b: Vec<$t> = b.iter().map(|&x| x as $t).collect();
            let mut acc: Vec<$t> = vec![0.0; n];
            for i in 0..m {
                let c_row = &c[i * n..(i + 1) * n];
                for (s, &cv) in acc.iter_mut().zip(c_row) {
                    // With C added after the chain, the chain starts from +0.
                    *s = if after { 0.0 } else { cv as $t };
                }
                for &kk in order {
                    let x = a[i * k + kk] as $t;
                    fma_row(x, &b[kk * n..(kk + 1) * n], &mut acc);
                }
                for j in 0..n {
                    let v = if after { acc[j] + c_row[j] as $t } else { acc[j] };
                    d[i * n + j] = (!v.is_nan()).then(|| v.to_bits() as u64);
                }
            }
        }
    };
}
chains!(chains_f32, f32);
chains!(chains_f64, f64);

/// `acc[j] = fma(x, row[j], acc[j])`, through the CPU's FMA instruction where it has one (the
/// library's `mul_add` is the same operation, exactly rounded, in software otherwise).
fn fma_row<T: Fma>(x: T, row: &[T], acc: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU has FMA (checked at run time).
        return unsafe { fma_row_x86(x, row, acc) };
    }
    fma_row_any(x, row, acc)
}

#[inline(always)]
fn fma_row_any<T: Fma>(x: T, row: &[T], acc: &mut [T]) {
    for (s, &y) in acc.iter_mut().zip(row) {
        *s = x.fma(y, *s);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma,avx2")]
unsafe fn fma_row_x86<T: Fma>(x: T, row: &[T], acc: &mut [T]) {
    fma_row_any(x, row, acc)
}

#[cfg(target_arch = "x86_64")]
fn has_fma() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| std::is_x86_feature_detected!("fma") && std::is_x86_feature_detected!("avx2"))
}

/// The two CPU formats' fused multiply-add.
trait Fma: Copy {
    fn fma(self, y: Self, z: Self) -> Self;
}

impl Fma for f32 {
    #[inline(always)]
    fn fma(self, y: f32, z: f32) -> f32 {
        self.mul_add(y, z)
    }
}

impl Fma for f64 {
    #[inline(always)]
    fn fma(self, y: f64, z: f64) -> f64 {
        self.mul_add(y, z)
    }
}
