//! Mutations of a tile, as a guided hunt explores from the tiles that reached new situations:
//! exponent shifts, significand bit flips, copying and negating terms (duplicates and exact
//! cancellations), moving magnitude between A and B (same products, other operands), splicing
//! in parts of another tile, C at the edges of its format or against the products' sum, fresh
//! edge-biased values, broadcasting a row or column (many elements in one situation), zeros,
//! values trimmed to a few significant bits (as hand-made probes are), and one element's
//! products sunk to the bottom of the accumulator's range (tiny sums, window floors).

use crate::case::MmaCase;
use crate::format::{Class, Format, Overflow, Rounding};
use crate::gen;
use rand::Rng;

/// The mutations, by name (for statistics and tests).
pub const MUTATIONS: &[&str] = &["exponent", "bit", "copy-term", "negate-term", "move-magnitude", "splice", "c-edge", "fresh", "broadcast", "zero", "trim", "sink", "tiny", "pattern"];

/// Mutations that apply to a tile: "pattern" (moving the kept values of a group of a sparse
/// tile to other positions) only to sparse tiles, and it is last.
fn applicable(tile: &MmaCase) -> usize {
    MUTATIONS.len() - tile.meta.is_none() as usize
}

/// Apply one to six mutations (one half the time, two a quarter, …) to `tile`; `donor` is another tile of the same shape (splicing).
/// Returns the names of the mutations applied.
pub fn mutate<R: Rng>(rng: &mut R, tile: &mut MmaCase, donor: &MmaCase) -> Vec<&'static str> {
    let n = 1 + (rng.gen::<u32>() % 64).trailing_zeros().min(5) as usize;
    (0..n)
        .map(|_| {
            let which = rng.gen_range(0..applicable(tile));
            apply(rng, tile, donor, which);
            MUTATIONS[which]
        })
        .collect()
}

/// Which operand an element belongs to.
#[derive(Clone, Copy)]
enum Operand {
    A,
    B,
    C,
}

fn pick_operand<R: Rng>(rng: &mut R) -> Operand {
    match rng.gen_range(0..10) {
        0..=3 => Operand::A,
        4..=7 => Operand::B,
        _ => Operand::C,
    }
}

fn slot(tile: &mut MmaCase, op: Operand) -> (&mut Vec<u64>, Format) {
    match op {
        Operand::A => (&mut tile.a, tile.a_fmt),
        Operand::B => (&mut tile.b, tile.b_fmt),
        Operand::C => (&mut tile.c, tile.c_fmt),
    }
}

/// `x · 2^delta`, rounded to nearest into the format (into subnormals, zero or infinity at
/// the ends); NaN, infinities and zeros stay.
pub fn scale(f: Format, x: u64, delta: i32) -> u64 {
    let d = f.decode(x);
    if d.class != Class::Finite {
        return x;
    }
    f.round(d.neg, d.sig as u128, d.exp.saturating_add(delta), false, Rounding::Rne, Overflow::Ieee)
}

fn exponent_delta<R: Rng>(rng: &mut R) -> i32 {
    let mag = [1, 1, 2, 3, 4, 8, 12, 16, 24, 32][rng.gen_range(0..10)];
    if rng.gen_bool(0.5) {
        mag
    } else {
        -mag
    }
}

/// Apply mutation `which`. A sparse tile is mutated as its dense expansion (zeros where no
/// value is kept) and compressed back with its metadata: what lands on a position the row does
/// not keep is dropped.
fn apply<R: Rng>(rng: &mut R, t: &mut MmaCase, donor: &MmaCase, which: usize) {
    let Some(meta) = t.meta.clone() else {
        return apply_dense(rng, t, donor, which);
    };
    if MUTATIONS[which] == "pattern" {
        return move_kept(rng, t);
    }
    let mut dense = crate::sparse::expand(t);
    apply_dense(rng, &mut dense, &crate::sparse::expand(donor), which);
    *t = crate::sparse::compress(&dense, meta);
}

/// Another pair of positions for one group of four, in one row or (a third of the time) in
/// every row; the kept values stay, they only move (tf32 tiles keep their 1:2 pairs).
fn move_kept<R: Rng>(rng: &mut R, t: &mut MmaCase) {
    let (groups, half) = (t.k / 4, t.k / 2);
    let pairs = crate::sparse::pair_count(t.a_fmt == Format::Tf32);
    let g = rng.gen_range(0..groups);
    let pair = crate::sparse::PAIRS[rng.gen_range(0..pairs)];
    let (all, one) = (rng.gen_bool(1.0 / 3.0), rng.gen_range(0..t.m));
    let meta = t.meta.as_mut().expect("sparse tile");
    for i in (0..meta.len() / half).filter(|&i| all || i == one) {
        meta[i * half + 2 * g..i * half + 2 * g + 2].copy_from_slice(&pair);
    }
}

fn apply_dense<R: Rng>(rng: &mut R, t: &mut MmaCase, donor: &MmaCase, which: usize) {
    let (m, n, k) = (t.m, t.n, t.k);
    match MUTATIONS[which] {
        "exponent" => {
            let (v, f) = slot(t, pick_operand(rng));
            let i = rng.gen_range(0..v.len());
            v[i] = scale(f, v[i], exponent_delta(rng));
        }
        "bit" => {
            let (v, f) = slot(t, pick_operand(rng));
            let i = rng.gen_range(0..v.len());
            // Mostly the fraction, sometimes any bit (sign, exponent); tf32 ignores its low bits.
            let low = f.spec().ignored_low_bits;
            let bit = if rng.gen_bool(0.75) { low + rng.gen_range(0..f.precision().saturating_sub(1).max(1)) } else { rng.gen_range(low..f.storage_bits()) };
            v[i] ^= 1u64 << bit;
        }
        "copy-term" => {
            // Product k1 repeated at k2 for every element.
            let (k1, k2) = (rng.gen_range(0..k), rng.gen_range(0..k));
            for i in 0..m {
                t.a[i * k + k2] = t.a[i * k + k1];
            }
            for j in 0..n {
                t.b[k2 * n + j] = t.b[k1 * n + j];
            }
        }
        "negate-term" => {
            if rng.gen_bool(0.5) {
                // Product k2 = -product k1: an exact cancellation in every element.
                let (k1, k2) = (rng.gen_range(0..k), rng.gen_range(0..k));
                let fa = t.a_fmt;
                for i in 0..m {
                    t.a[i * k + k2] = negate(fa, t.a[i * k + k1]);
                }
                for j in 0..n {
                    t.b[k2 * n + j] = t.b[k1 * n + j];
                }
            } else {
                let op = pick_operand(rng);
                let (v, f) = slot(t, op);
                let i = rng.gen_range(0..v.len());
                v[i] = negate(f, v[i]);
            }
        }
        "move-magnitude" => {
            // a[.][kk]·2^s and b[kk][.]·2^-s: the same products from other operands (until a
            // side leaves its format's range).
            let kk = rng.gen_range(0..k);
            let s = exponent_delta(rng);
            let (fa, fb) = (t.a_fmt, t.b_fmt);
            for i in 0..m {
                t.a[i * k + kk] = scale(fa, t.a[i * k + kk], s);
            }
            for j in 0..n {
                t.b[kk * n + j] = scale(fb, t.b[kk * n + j], -s);
            }
        }
        "splice" => {
            if (donor.m, donor.n, donor.k) != (m, n, k) {
                return;
            }
            match rng.gen_range(0..3) {
                0 => {
                    // A range of K from the donor: its products there.
                    let lo = rng.gen_range(0..k);
                    let hi = rng.gen_range(lo..k) + 1;
                    for kk in lo..hi {
                        for i in 0..m {
                            t.a[i * k + kk] = donor.a[i * k + kk];
                        }
                        t.b[kk * n..(kk + 1) * n].copy_from_slice(&donor.b[kk * n..(kk + 1) * n]);
                    }
                }
                1 => {
                    // Rows of A and C.
                    let lo = rng.gen_range(0..m);
                    let hi = rng.gen_range(lo..m) + 1;
                    t.a[lo * k..hi * k].copy_from_slice(&donor.a[lo * k..hi * k]);
                    t.c[lo * n..hi * n].copy_from_slice(&donor.c[lo * n..hi * n]);
                }
                _ => t.c.copy_from_slice(&donor.c),
            }
        }
        "c-edge" => {
            let f = t.c_fmt;
            let (i, j) = (rng.gen_range(0..m), rng.gen_range(0..n));
            let neg = rng.gen_bool(0.5);
            if let Some(range) = f.integer() {
                // An end of the range, or C with C + A·B a few units from an end.
                let end = if neg { range.min() } else { range.max() };
                t.c[i * n + j] = if rng.gen_bool(0.3) { f.int_bits(end as i128, Overflow::Saturate) } else { gen::int_c_landing_at(t, i, j, end + rng.gen_range(-3..=3)) };
                return;
            }
            t.c[i * n + j] = match rng.gen_range(0..6) {
                0 => f.max_finite_bits(neg),
                1 => f.encode_exact(neg, 1, f.emin()).expect("smallest normal"),
                2 => f.encode_exact(neg, 1, f.min_lsb_exp()).expect("smallest subnormal"),
                3 => f.zero_bits(neg),
                _ => {
                    // Minus the products' sum (rounded), moved by a few ulps: C cancels them.
                    let sum: f64 = (0..k).map(|kk| t.a_fmt.to_f64(t.a[i * k + kk]) * t.b_fmt.to_f64(t.b[kk * n + j])).sum();
                    if !sum.is_finite() || sum == 0.0 {
                        gen::value(rng, f)
                    } else {
                        let bits = f64_into(f, -sum);
                        let d = f.decode(bits);
                        if d.class == Class::Finite {
                            let nudge = rng.gen_range(-2i64..=2);
                            let sig = (d.sig as i64 + nudge).max(1) as u128;
                            f.round(d.neg, sig, d.exp, false, Rounding::Rne, Overflow::Ieee)
                        } else {
                            bits
                        }
                    }
                }
            };
        }
        "fresh" => {
            let op = pick_operand(rng);
            let (v, f) = slot(t, op);
            let i = rng.gen_range(0..v.len());
            v[i] = gen::value(rng, f);
        }
        "broadcast" => {
            // One element's dot product (row i0 of A, column j0 of B, C there) copied over a
            // share of the rows, columns and C: up to every element in its situations.
            let share = [0.25, 0.5, 0.75, 1.0][rng.gen_range(0..4)];
            let (i0, j0) = (rng.gen_range(0..m), rng.gen_range(0..n));
            let (rows, cols, c) = match rng.gen_range(0..4) {
                0 => (true, false, false),
                1 => (false, true, false),
                2 => (false, false, true),
                _ => (true, true, true),
            };
            let row: Vec<u64> = t.a[i0 * k..(i0 + 1) * k].to_vec();
            let c0 = t.c[i0 * n + j0];
            for i in 0..m {
                if rows && rng.gen_bool(share) {
                    t.a[i * k..(i + 1) * k].copy_from_slice(&row);
                }
            }
            for j in 0..n {
                if cols && rng.gen_bool(share) {
                    for kk in 0..k {
                        t.b[kk * n + j] = t.b[kk * n + j0];
                    }
                }
            }
            if c {
                t.c.iter_mut().filter(|_| rng.gen_bool(share)).for_each(|x| *x = c0);
            }
        }
        "zero" => {
            if rng.gen_bool(0.5) {
                let op = pick_operand(rng);
                let (v, f) = slot(t, op);
                let i = rng.gen_range(0..v.len());
                v[i] = f.zero_bits(false);
            } else {
                // A whole product column: fewer live terms everywhere.
                let kk = rng.gen_range(0..k);
                for i in 0..m {
                    t.a[i * k + kk] = 0;
                }
            }
        }
        "trim" => {
            // A value, or a row of A, a column of B or all of C, cut to its leading few
            // significant bits: sums that fit the window, ties and exact results.
            let keep = [1, 1, 2, 3, 4, 6][rng.gen_range(0..6)];
            let op = pick_operand(rng);
            let (rows, cols) = match op {
                Operand::A => (m, k),
                Operand::B => (k, n),
                Operand::C => (m, n),
            };
            let (v, f) = slot(t, op);
            let picked: Vec<usize> = match (rng.gen_range(0..3), op) {
                (0, _) => vec![rng.gen_range(0..v.len())],
                (1, Operand::B) => {
                    let j = rng.gen_range(0..cols);
                    (0..rows).map(|r| r * cols + j).collect()
                }
                (1, _) => {
                    let r = rng.gen_range(0..rows);
                    (r * cols..(r + 1) * cols).collect()
                }
                _ => (0..v.len()).collect(),
            };
            // Single bits have nothing to trim but themselves.
            let keep = if f.storage_bits() == 1 { 0 } else { keep };
            for i in picked {
                v[i] = trim(f, v[i], keep);
            }
        }
        "sink" => sink(rng, t),
        "tiny" => tiny(rng, t),
        other => unreachable!("unknown mutation {other}"),
    }
}

/// `x` with only its `keep` leading significant bits (the rest cleared; integers keep their
/// top bits the same way); NaN, infinities and zeros stay.
pub fn trim(f: Format, x: u64, keep: u32) -> u64 {
    if f.is_integer() {
        let v = f.int_value(x) as i128;
        let drop = (128 - v.unsigned_abs().leading_zeros()).saturating_sub(keep);
        let cut = (v.unsigned_abs() >> drop << drop) as i128;
        return f.int_bits(if v < 0 { -cut } else { cut }, Overflow::Wrap);
    }
    let d = f.decode(x);
    if d.class != Class::Finite {
        return x;
    }
    let drop = (64 - d.sig.leading_zeros()).saturating_sub(keep);
    f.encode_exact(d.neg, d.sig >> drop << drop, d.exp).unwrap_or(x)
}

/// The exponent of a finite value's leading bit.
fn lead(f: Format, x: u64) -> Option<i32> {
    let d = f.decode(x);
    (d.class == Class::Finite).then(|| d.exp + 63 - d.sig.leading_zeros() as i32)
}

/// The leading exponent of element (i, j)'s largest finite nonzero product, and its k.
fn top_product(t: &MmaCase, i: usize, j: usize) -> Option<(i32, usize)> {
    let (n, k) = (t.n, t.k);
    (0..k).filter_map(|kk| Some((lead(t.a_fmt, t.a[i * k + kk])? + lead(t.b_fmt, t.b[kk * n + j])?, kk))).max()
}

/// The products moved so that one element's largest lands near the bottom of the
/// accumulator's range (a few places above its smallest normal down to well below it, where
/// window floors act) or, where the inputs cannot reach that low, at the bottom of the
/// products' own range: all of A and B scaled (every element moves alike), or only that
/// element's row of A and column of B; C becomes zero or as tiny.
fn sink<R: Rng>(rng: &mut R, t: &mut MmaCase) {
    let (m, n, k) = (t.m, t.n, t.k);
    let (fa, fb, fc) = (t.a_fmt, t.b_fmt, t.c_fmt);
    let (i, j) = (rng.gen_range(0..m), rng.gen_range(0..n));
    if fa.is_integer() || fb.is_integer() || fc.is_integer() {
        // No range bottom to reach: the smallest magnitudes instead (a row of ±1 and 0).
        for kk in 0..k {
            t.a[i * k + kk] = fa.int_bits(rng.gen_range(-1..=1), Overflow::Saturate);
        }
        return;
    }
    let Some((top, _)) = top_product(t, i, j) else { return };
    let bottom = fa.min_lsb_exp() + fb.min_lsb_exp() + 2;
    let target = (fc.emin() - rng.gen_range(-3..=12)).max(bottom);
    let delta = target - top;
    // Split about evenly between A and B, so neither leaves its range first.
    let share = delta / 2 + rng.gen_range(-2..=2);
    let whole = rng.gen_bool(2.0 / 3.0);
    for r in (0..m).filter(|&r| whole || r == i) {
        for kk in 0..k {
            t.a[r * k + kk] = scale(fa, t.a[r * k + kk], share);
        }
    }
    for kk in 0..k {
        for c in (0..n).filter(|&c| whole || c == j) {
            t.b[kk * n + c] = scale(fb, t.b[kk * n + c], delta - share);
        }
    }
    let tiny = |rng: &mut R| {
        if rng.gen_bool(0.5) {
            fc.zero_bits(rng.gen_bool(0.5))
        } else {
            fc.round(rng.gen_bool(0.5), rng.gen_range(1..256), target - rng.gen_range(0..12), false, Rounding::Rne, Overflow::Ieee)
        }
    };
    if whole {
        for x in 0..m * n {
            t.c[x] = tiny(rng);
        }
    } else {
        t.c[i * n + j] = tiny(rng);
    }
}

/// One product of an element made a power of two (or a full significand) leading just below
/// the accumulator's precision under its largest product (the places where the window drops or just keeps a bit), mostly of the
/// opposite sign: "one big term plus a tiny one" inside any tile.
fn tiny<R: Rng>(rng: &mut R, t: &mut MmaCase) {
    let (m, n, k) = (t.m, t.n, t.k);
    let (fa, fb, fc) = (t.a_fmt, t.b_fmt, t.c_fmt);
    let (i, j) = (rng.gen_range(0..m), rng.gen_range(0..n));
    if fa.is_integer() || fb.is_integer() || fc.is_integer() {
        // Integers: a product of ±1 (the smallest there is).
        let kk = rng.gen_range(0..k);
        t.a[i * k + kk] = fa.int_bits(if rng.gen_bool(0.5) { 1 } else { -1 }, Overflow::Saturate);
        t.b[kk * n + j] = fb.int_bits(1, Overflow::Saturate);
        return;
    }
    if k < 2 {
        return;
    }
    let Some((top, big)) = top_product(t, i, j) else { return };
    let kk = (big + rng.gen_range(1..k)) % k;
    // Split the exponent between a and b within their ranges (as evenly as they allow); narrow
    // inputs (FP8) that cannot reach so far below give their smallest product.
    let (lo_a, hi_a) = (fa.min_lsb_exp(), fa.emax());
    let (lo_b, hi_b) = (fb.min_lsb_exp(), fb.emax());
    let want = (top - fc.precision() as i32 - rng.gen_range(-3..=5)).max(lo_a + lo_b);
    let ea = (want / 2).clamp(lo_a, hi_a).clamp(want - hi_b, want - lo_b);
    let eb = want - ea;
    if !(lo_a..=hi_a).contains(&ea) || !(lo_b..=hi_b).contains(&eb) {
        return;
    }
    let big_neg = (t.a[i * k + big] & fa.zero_bits(true) != 0) != (t.b[big * n + j] & fb.zero_bits(true) != 0);
    let neg = if rng.gen_bool(0.75) { !big_neg } else { big_neg };
    // A power of two, or a full significand (its bits cover several places at once).
    let bits = if rng.gen_bool(0.5) { 1 } else { fa.precision() };
    let sig = (1u64 << (bits - 1)) | (rng.gen::<u64>() & ((1u64 << (bits - 1)) - 1));
    if let (Some(a), Some(b)) = (fa.encode_exact(neg, sig, ea - bits as i32 + 1), fb.encode_exact(false, 1, eb)) {
        t.a[i * k + kk] = a;
        t.b[kk * n + j] = b;
    }
}

/// -x: the sign flipped (floats), or the two's-complement negation (integers; unsigned ones
/// and the most negative value wrap).
fn negate(f: Format, x: u64) -> u64 {
    if f.is_integer() {
        f.int_bits(-(f.int_value(x) as i128), Overflow::Wrap)
    } else {
        x ^ f.zero_bits(true)
    }
}

/// A finite nonzero f64 rounded to nearest into a format.
fn f64_into(f: Format, v: f64) -> u64 {
    let d = Format::F64.decode(v.to_bits());
    f.round(d.neg, d.sig as u128, d.exp, false, Rounding::Rne, Overflow::Ieee)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn every_mutation_keeps_the_tile_valid_and_changes_something() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        for p in crate::exec::PATHS.iter().filter(|p| p.m <= 64) {
            // A base with some variety in A and B (a C-dominant tile may hold one value in
            // each, which copying terms cannot change).
            let varied = |t: &MmaCase| [&t.a, &t.b].iter().all(|v| v.iter().collect::<std::collections::HashSet<_>>().len() > 1);
            let base = std::iter::repeat_with(|| gen::path_case(&mut rng, p)).find(varied).expect("a varied tile");
            let donor = gen::path_case(&mut rng, p);
            assert_eq!(applicable(&base), MUTATIONS.len() - !p.sparse() as usize);
            for which in 0..applicable(&base) {
                let mut changed = false;
                for _ in 0..50 {
                    let mut t = base.clone();
                    apply(&mut rng, &mut t, &donor, which);
                    t.validate().unwrap_or_else(|e| panic!("{} after {}: {e}", p.id, MUTATIONS[which]));
                    changed |= t != base;
                    // What the guided hunt runs: the mutant conformed to the path (sparse
                    // metadata must stay valid; C goes back to +0 where the path ignores it).
                    p.conform(&mut t);
                    p.check(&t).unwrap_or_else(|e| panic!("{} after {}: {e}", p.id, MUTATIONS[which]));
                }
                assert!(changed, "{}: {} never changed the tile", p.id, MUTATIONS[which]);
            }
        }
    }

    #[test]
    fn trimming_keeps_the_leading_bits() {
        assert_eq!(trim(Format::F32, 0x3fff_ffff, 2), 0x3fc0_0000); // 1.99999988 -> 1.5
        assert_eq!(trim(Format::F32, 0xbfff_ffff, 1), 0xbf80_0000); // -1.99999988 -> -1
        assert_eq!(trim(Format::F16, 0x0007, 1), 0x0004, "subnormals keep their own leading bits");
        assert_eq!(trim(Format::F16, 0x7e00, 1), 0x7e00, "NaN stays");
        assert_eq!(Format::S8.int_value(trim(Format::S8, Format::S8.int_bits(-7, Overflow::Wrap), 1)), -4);
    }

    /// Leading exponents of every finite nonzero product of element (i, j).
    fn product_leads(t: &MmaCase, i: usize, j: usize) -> Vec<i32> {
        (0..t.k).filter_map(|kk| Some(lead(t.a_fmt, t.a[i * t.k + kk])? + lead(t.b_fmt, t.b[kk * t.n + j])?)).collect()
    }

    #[test]
    fn sinking_puts_an_element_at_the_bottom_of_the_accumulators_range() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let p = crate::exec::path_by_id("mma.m16n8k16.f32.bf16.bf16.f32").unwrap();
        let emin = Format::F32.emin();
        for _ in 0..40 {
            // Normal values between 2^-4 and 2^5, either sign.
            let mut t = MmaCase::zeros(Format::Bf16, Format::F32, p.m, p.n, p.k);
            for x in t.a.iter_mut().chain(t.b.iter_mut()) {
                *x = (rng.gen_range(0..2u64) << 15) | (((127 + rng.gen_range(-4i64..=4)) as u64) << 7) | rng.gen_range(0..128);
            }
            sink(&mut rng, &mut t);
            // Some element's largest product now leads from 3 places above emin to 12 below
            // (one more each way for rounding at the split between A and B).
            let near = (0..t.m).flat_map(|i| (0..t.n).map(move |j| (i, j))).any(|(i, j)| product_leads(&t, i, j).into_iter().max().is_some_and(|top| (emin - 13..=emin + 4).contains(&top)));
            assert!(near);
        }
        // f16 inputs cannot reach f32's bottom: their products' own bottom instead.
        let p = crate::exec::path_by_id("mma.m16n8k16.f32.f16.f16.f32").unwrap();
        let mut t = gen::path_case(&mut rng, p);
        t.a.iter_mut().for_each(|x| *x = 0x3c00);
        t.b.iter_mut().for_each(|x| *x = 0x3c00);
        sink(&mut rng, &mut t);
        let lowest = (0..t.m).flat_map(|i| (0..t.n).map(move |j| (i, j))).filter_map(|(i, j)| product_leads(&t, i, j).into_iter().max()).min().unwrap();
        assert!(lowest <= -40, "products of 1 sunk to {lowest}");
    }

    #[test]
    fn a_tiny_term_lands_just_below_the_accumulators_precision() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(4);
        let p = crate::exec::path_by_id("mma.m16n8k8.f32.tf32.tf32.f32").unwrap();
        let mut placed = 0;
        for _ in 0..200 {
            let mut t = MmaCase::zeros(Format::Tf32, Format::F32, p.m, p.n, p.k);
            t.a.iter_mut().for_each(|x| *x = 0x3f80_0000); // 1
            t.b.iter_mut().for_each(|x| *x = 0x3f80_0000);
            tiny(&mut rng, &mut t);
            // One element holds products of 1 and one product leading 24 - 3 to 24 + 5 places
            // lower (its row and column share only one of the two small factors).
            let smallest: Vec<(i32, usize)> = (0..t.m).flat_map(|i| (0..t.n).map(move |j| (i, j))).map(|(i, j)| {
                let leads = product_leads(&t, i, j);
                (*leads.iter().min().unwrap(), leads.iter().filter(|&&l| l == 0).count())
            }).collect();
            let low = smallest.iter().map(|s| s.0).min().unwrap();
            if low < 0 {
                assert!((-29..=-21).contains(&low), "{low}");
                let at: Vec<_> = smallest.iter().filter(|s| s.0 == low).collect();
                assert_eq!(at.len(), 1);
                assert_eq!(at[0].1, t.k - 1);
                placed += 1;
            }
        }
        assert!(placed >= 190, "nearly every call places one tiny product ({placed} of 200)");
    }

    #[test]
    fn scaling_moves_exponents_and_saturates() {
        let f = Format::F16;
        assert_eq!(scale(f, 0x3c00, 1), 0x4000); // 1 -> 2
        assert_eq!(scale(f, 0x3c00, -24), 0x0001); // 1 -> 2^-24, the smallest subnormal
        assert_eq!(scale(f, 0x3c00, 16), 0x7c00); // 2^16 overflows to +inf
        assert_eq!(scale(f, 0x7e00, 3), 0x7e00, "NaN stays");
        // Moving magnitude keeps the products.
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let mut t = MmaCase::zeros(Format::F16, Format::F32, 1, 1, 1);
        t.a[0] = 0x3c00;
        t.b[0] = 0x4000;
        let before = Format::F16.to_f64(t.a[0]) * Format::F16.to_f64(t.b[0]);
        let donor = t.clone();
        for _ in 0..20 {
            apply(&mut rng, &mut t, &donor, 4);
        }
        let after = Format::F16.to_f64(t.a[0]) * Format::F16.to_f64(t.b[0]);
        assert!(after == before || after == 0.0 || after.is_infinite(), "{before} -> {after}");
    }
}
