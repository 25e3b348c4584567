//! Structured sparsity (`mma.sp::ordered_metadata`, `wgmma.sp`): a sparse tile keeps two of
//! every four A elements along K (2:4; tf32 keeps one of every two, which reads here as 2:4
//! with one index in each half of the group). The case holds the m×(k/2) kept values in `a` and
//! their positions in `meta` ([`MmaCase::meta`]); B stays dense (k×n) and the hardware reads
//! only the rows each kept value selects.
//!
//! This module turns dense cases into sparse ones (the generators make a dense tile of the
//! path's K, then keep two values per group), and names the six increasing index pairs.

use crate::case::MmaCase;
use rand::Rng;

/// The increasing index pairs a group of four may keep, in the order the fuzzing byte codec
/// numbers them. The first four have one index in each half of the group, the only pairs
/// tf32's 1:2 sparsity can express; the first is what an all-zero input means.
pub const PAIRS: [[u8; 2]; 6] = [[0, 2], [0, 3], [1, 2], [1, 3], [0, 1], [2, 3]];

/// How many of [`PAIRS`] a path's sparsity allows: 4 for tf32 (1:2), 6 otherwise.
pub fn pair_count(one_of_two: bool) -> usize {
    if one_of_two {
        4
    } else {
        6
    }
}

/// Keep the values of a dense case at the positions `meta` names (two per group of four, row
/// by row): the sparse case. A's other values are dropped; B, C and every other field stay.
pub fn compress(dense: &MmaCase, meta: Vec<u8>) -> MmaCase {
    let half = dense.k / 2;
    let a = (0..dense.m * half).map(|x| dense.a[(x / half) * dense.k + 4 * ((x % half) / 2) + meta[x] as usize]).collect();
    MmaCase { a, meta: Some(meta), ..dense.clone() }
}

/// The dense expansion of a sparse case: A as m×k with its kept values in place and +0
/// elsewhere, no metadata. (Not the same product where an unselected row of B holds an
/// infinity or NaN: the expansion multiplies it by zero.)
pub fn expand(sparse: &MmaCase) -> MmaCase {
    let a = (0..sparse.m * sparse.k).map(|x| sparse.a_at(x / sparse.k, x % sparse.k)).collect();
    MmaCase { a, meta: None, ..sparse.clone() }
}

/// Make a dense generated case sparse, the kept positions drawn from `rng`: a third of the
/// tiles keep one pattern of pairs in every row (so a recipe's structure down the columns of B
/// survives in every row), the rest draw each group's pair independently.
pub fn sparsify<R: Rng>(rng: &mut R, dense: &MmaCase, one_of_two: bool) -> MmaCase {
    let shared = rng.gen_bool(1.0 / 3.0);
    let meta = if shared {
        random_meta(rng, 1, dense.k, one_of_two).repeat(dense.m)
    } else {
        random_meta(rng, dense.m, dense.k, one_of_two)
    };
    compress(dense, meta)
}

/// Metadata for m rows of dense K: each group's pair drawn independently.
pub fn random_meta<R: Rng>(rng: &mut R, m: usize, k: usize, one_of_two: bool) -> Vec<u8> {
    let pairs = pair_count(one_of_two);
    (0..m * k / 4).flat_map(|_| PAIRS[rng.gen_range(0..pairs)]).collect()
}

/// Whether every group's pair is one tf32's 1:2 sparsity can express (one index in 0..=1, the
/// other in 2..=3).
pub fn one_of_two(meta: &[u8]) -> bool {
    meta.chunks_exact(2).all(|p| p[0] < 2 && p[1] >= 2)
}

/// A dense case made sparse by keeping [`PAIRS`]`[0]` in every group (an all-zero dense case
/// gives the all-zero sparse one).
pub fn zeros_like(dense: &MmaCase) -> MmaCase {
    let meta = PAIRS[0].iter().copied().cycle().take(dense.m * dense.k / 2).collect();
    compress(dense, meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use rand::SeedableRng;

    /// Sparsified tiles are valid, keep A's values at the positions their metadata names, and
    /// tf32's tiles only use pairs its 1:2 sparsity expresses.
    #[test]
    fn sparsify_keeps_the_named_values() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut dense = MmaCase::zeros(Format::F16, Format::F32, 4, 2, 16);
        dense.a.iter_mut().enumerate().for_each(|(x, v)| *v = x as u64);
        let (mut shared, mut pairs_seen) = (0, std::collections::HashSet::new());
        for _ in 0..60 {
            for tf32 in [false, true] {
                let s = sparsify(&mut rng, &dense, tf32);
                s.validate().unwrap();
                let meta = s.meta.as_ref().unwrap();
                assert_eq!(one_of_two(meta), tf32 || one_of_two(meta));
                if tf32 {
                    assert!(one_of_two(meta));
                }
                for i in 0..4 {
                    for (t, &kk) in s.picks(i).unwrap().iter().enumerate() {
                        assert_eq!(s.a[i * 8 + t], dense.a[i * 16 + kk]);
                        assert_eq!(s.a_at(i, kk), dense.a[i * 16 + kk]);
                    }
                }
                shared += (meta[..8] == meta[8..16] && meta[8..16] == meta[16..24]) as usize;
                meta.chunks_exact(2).for_each(|p| {
                    pairs_seen.insert([p[0], p[1]]);
                });
            }
        }
        assert_eq!(pairs_seen.len(), 6, "every pair is drawn");
        assert!((30..=80).contains(&shared), "about a third share one pattern: {shared} of 120");
        let z = zeros_like(&dense);
        assert!(z.validate().is_ok() && one_of_two(z.meta.as_ref().unwrap()));
    }
}
