//! Layout checks: integer-valued tiles whose exact result every path represents exactly, so a
//! kernel that reads or writes a fragment element in the wrong place cannot pass.

use super::paths::PathSpec;
use crate::case::MmaCase;
use rand::{Rng, SeedableRng};

/// `count` tiles of small distinct-ish integers (A, B in -3..=3, C in -8..=8); every partial sum
/// is an integer far inside every format's exact range, whatever the hardware's summation order.
pub fn integer_cases(path: &PathSpec, count: usize, seed: u64) -> Vec<MmaCase> {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let int = |rng: &mut rand_xoshiro::Xoshiro256PlusPlus, f: crate::Format, lo: i32, hi: i32| {
        // Integer formats: the part of the range they hold (u8: 0..=3, b1: 0..=1).
        let (lo, hi) = f.integer().map_or((lo, hi), |r| (lo.max(r.min() as i32), hi.min(r.max() as i32)));
        let v = rng.gen_range(lo..=hi) as f64;
        crate::probes::bits_of(f, v)
    };
    (0..count)
        .map(|_| {
            let mut c = path.zeros();
            c.a.iter_mut().for_each(|x| *x = int(&mut rng, path.a_fmt, -3, 3));
            c.b.iter_mut().for_each(|x| *x = int(&mut rng, path.b_fmt, -3, 3));
            c.c.iter_mut().for_each(|x| *x = int(&mut rng, path.c_fmt, -8, 8));
            if let Some(meta) = c.meta.as_mut() {
                // Every pair in every group, so a misread metadata nibble selects other rows of B.
                *meta = crate::sparse::random_meta(&mut rng, path.m, path.k, path.one_of_two());
            }
            path.conform(&mut c);
            c
        })
        .collect()
}

/// The exact result of an [`integer_cases`] tile: small integers, so f64 sums them exactly
/// (cheap enough for 2,048 wide wgmma tiles; the tests hold it to MPFR's exact value).
pub fn expected(path: &PathSpec, case: &MmaCase) -> Vec<u64> {
    if case.c_fmt.is_integer() {
        return expected_integer(case, path.xor_popc());
    }
    let dot = |i: usize, j: usize| (0..case.k).fold(case.c_fmt.to_f64(case.c_at(i, j)), |s, kk| s + case.a_fmt.to_f64(case.a_at(i, kk)) * case.b_fmt.to_f64(case.b_at(kk, j)));
    (0..case.m * case.n).map(|e| crate::probes::bits_of(case.c_fmt, dot(e / case.n, e % case.n))).collect()
}

/// [`expected`] for an integer path, whose `b1` pairs contribute `a XOR b` with `xor`.
fn expected_integer(case: &MmaCase, xor: bool) -> Vec<u64> {
    let pair = |a: i64, b: i64| if xor { a ^ b } else { a * b };
    let dot = |i: usize, j: usize| (0..case.k).fold(case.c_fmt.int_value(case.c_at(i, j)), |s, kk| s + pair(case.a_fmt.int_value(case.a_at(i, kk)), case.b_fmt.int_value(case.b_at(kk, j))));
    (0..case.m * case.n).map(|e| case.c_fmt.int_bits(dot(e / case.n, e % case.n) as i128, crate::format::Overflow::Wrap)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::PATHS;
    use crate::format::Rounding;

    /// The check is only as good as its cases: every element's exact value must be an integer
    /// that the output format holds exactly, and the cases must not be trivial.
    #[test]
    fn integer_cases_have_exact_nonzero_results() {
        for path in PATHS {
            let cases = integer_cases(path, 20, 1);
            let mut nonzero = 0;
            for c in &cases {
                path.check(c).unwrap();
                for (x, bits) in crate::exact::exact_tile(c).iter().zip(expected(path, c)) {
                    let v = c.c_fmt.decode(bits).to_f64();
                    assert_eq!(v.fract(), 0.0);
                    assert!(v.abs() <= 16.0 * 9.0 * (path.k as f64) + 8.0);
                    assert_eq!(x.round(c.c_fmt, Rounding::Rz), bits, "{}", path.id);
                    assert_eq!(x.round(c.c_fmt, Rounding::Rne), bits, "{}", path.id);
                    nonzero += (v != 0.0) as usize;
                }
            }
            assert!(nonzero > cases.len() * path.m * path.n / 2, "{}", path.id);
        }
    }
}
