//! The integer datapath: s8/u8/s4/u4/b1 operands into s32 (`mma` and `wgmma` with integer
//! types). Products and block sums are exact; what a model decides is where C enters, how K is
//! cut into blocks, and what an addition beyond s32 does: wrap around (PTX's default) or clamp
//! (`.satfinite`) after each addition to the running sum.

use super::{Arithmetic, CPlacement};
use crate::case::MmaCase;
use crate::format::Format;

/// Why a model cannot run an integer case.
pub(crate) fn unsupported(ar: &Arithmetic, case: &MmaCase) -> Option<String> {
    let acc = ar.accumulator.format.unwrap_or(case.c_fmt);
    if !acc.is_integer() {
        return Some(format!("its accumulator is {acc}, a floating-point format: integer cases need an integer model (models/sm90/mma.*.s32.*)"));
    }
    None
}

/// Element (i, j) of D.
pub(crate) fn element(ar: &Arithmetic, blocks: &[Vec<usize>], case: &MmaCase, i: usize, j: usize) -> u64 {
    let a: Vec<i64> = (0..case.k).map(|kk| case.a_fmt.int_value(case.a_at(i, kk))).collect();
    let b: Vec<i64> = (0..case.k).map(|kk| case.b_fmt.int_value(case.b_at(kk, j))).collect();
    dot(ar, blocks, case, case.xor_pairs(), &a, &b, case.c_fmt.int_value(case.c_at(i, j)))
}

/// Every element of D, row-major, each operand decoded once. Where every block is a run of
/// consecutive k (every model measured so far), each block sum is a plain dot product over i32
/// slices, which the compiler vectorises; otherwise [`dot`] gathers each block's k.
pub(crate) fn tile(ar: &Arithmetic, blocks: &[Vec<usize>], case: &MmaCase) -> Vec<u64> {
    let (m, n, k) = (case.m, case.n, case.k);
    let c: Vec<i64> = case.c.iter().map(|&x| case.c_fmt.int_value(x)).collect();
    let xor = case.xor_pairs();
    let runs: Option<Vec<std::ops::Range<usize>>> = blocks.iter().map(|b| b.windows(2).all(|w| w[1] == w[0] + 1).then(|| b[0]..b[b.len() - 1] + 1)).collect();
    let acc = ar.accumulator.format.unwrap_or(case.c_fmt);
    match runs {
        // Operands of at most 8 bits: every product (at most 255·255) and block sum (at most
        // 256 of them) fits an i32. Into s32 (every integer instruction), eight columns at a time.
        Some(runs) if k <= 256 && case.a_fmt.storage_bits() <= 8 && case.b_fmt.storage_bits() <= 8 && acc == Format::S32 && case.c_fmt == Format::S32 => {
            // B with its rows padded to a multiple of eight columns (zeros past column n).
            let (a, mut b) = (decoded(case.a_fmt, &case.a), decoded(case.b_fmt, &case.b));
            if n % LANES != 0 {
                let n8 = n.div_ceil(LANES) * LANES;
                let mut padded = vec![0i32; k * n8];
                padded.chunks_exact_mut(n8).zip(b.chunks_exact(n)).for_each(|(row, src)| row[..n].copy_from_slice(src));
                b = padded;
            }
            let mut d = vec![0u64; m * n];
            let (saturate, after) = (ar.accumulator.overflow == crate::format::Overflow::Saturate, ar.blocks.c == CPlacement::After);
            s32_rows(&a, &b, &c, &runs, m, n, k, xor, saturate, after, &mut d);
            d
        }
        Some(runs) if k <= 256 && case.a_fmt.storage_bits() <= 8 && case.b_fmt.storage_bits() <= 8 => {
            let (a, bt): (Vec<i32>, Vec<i32>) = (decoded(case.a_fmt, &case.a), transposed(&decoded(case.b_fmt, &case.b), k, n));
            (0..m * n).map(|e| dot_runs(ar, &runs, case, xor, &a[e / n * k..][..k], &bt[e % n * k..][..k], c[e])).collect()
        }
        _ => {
            let a: Vec<i64> = case.a.iter().map(|&x| case.a_fmt.int_value(x)).collect();
            let b: Vec<i64> = case.b.iter().map(|&x| case.b_fmt.int_value(x)).collect();
            let bt = transposed(&b, k, n);
            (0..m * n).map(|e| dot(ar, blocks, case, xor, &a[e / n * k..][..k], &bt[e % n * k..][..k], c[e])).collect()
        }
    }
}

/// Lanes of [`s32_rows`]: columns of D computed together.
const LANES: usize = 8;

simd_where_available! {
    /// D into s32 from an s32 accumulator, a row of A against eight columns of B at a time:
    /// for each block (a run of consecutive k, in chain order) the eight lanes' i32 block sums,
    /// each added to its lane's running sum, which wraps or clamps to s32 (`saturate`); C
    /// first or after the chain (`after`). `b` is B with its rows padded to a multiple of
    /// eight columns. What [`accumulate`] does element by element (a unit test holds them
    /// equal).
    #[allow(clippy::too_many_arguments)]
    fn s32_rows(a: &[i32], b: &[i32], c: &[i64], runs: &[std::ops::Range<usize>], m: usize, n: usize, k: usize, xor: bool, saturate: bool, after: bool, d: &mut [u64]) {
        let n8 = b.len() / k.max(1);
        let add = |run: i64, x: i64| {
            let exact = run + x;
            if saturate { exact.clamp(i32::MIN as i64, i32::MAX as i64) } else { exact as i32 as i64 }
        };
        for i in 0..m {
            let a_row = &a[i * k..(i + 1) * k];
            for j0 in (0..n).step_by(LANES) {
                let width = LANES.min(n - j0);
                // (Whole chunks through arrays of constant length, so that they vectorise.)
                let mut c_lanes = [0i64; LANES];
                if width == LANES {
                    let src = &c[i * n + j0..i * n + j0 + LANES];
                    (0..LANES).for_each(|l| c_lanes[l] = src[l]);
                } else {
                    c_lanes[..width].copy_from_slice(&c[i * n + j0..i * n + j0 + width]);
                }
                let mut run = if after { [0i64; LANES] } else { c_lanes };
                for r in runs {
                    let mut sum = [0i32; LANES];
                    // (B's rows a run-time stride apart: with rows of eight next to each other,
                    // the compiler vectorises along k instead, a transposition per step.)
                    for kk in r.clone() {
                        let (x, row) = (a_row[kk], &b[kk * n8 + j0..kk * n8 + j0 + LANES]);
                        if xor {
                            (0..LANES).for_each(|l| sum[l] += x ^ row[l]);
                        } else {
                            (0..LANES).for_each(|l| sum[l] += x * row[l]);
                        }
                    }
                    (0..LANES).for_each(|l| run[l] = add(run[l], sum[l] as i64));
                }
                if after {
                    (0..LANES).for_each(|l| run[l] = add(run[l], c_lanes[l]));
                }
                let bits: [u64; LANES] = std::array::from_fn(|l| run[l] as u32 as u64);
                if width == LANES {
                    let dst = &mut d[i * n + j0..i * n + j0 + LANES];
                    (0..LANES).for_each(|l| dst[l] = bits[l]);
                } else {
                    d[i * n + j0..i * n + j0 + width].copy_from_slice(&bits[..width]);
                }
            }
        }
    }
}

/// The values of bit patterns of an integer format of at most 32 bits, the format looked at
/// once (a shift pair per element, which vectorises), not per element as `Format::int_value`.
fn decoded(f: Format, bits: &[u64]) -> Vec<i32> {
    let spec = f.integer().expect("an integer format");
    let shift = 64 - spec.bits;
    if spec.signed {
        bits.iter().map(|&x| (((x << shift) as i64) >> shift) as i32).collect()
    } else {
        bits.iter().map(|&x| ((x << shift) >> shift) as i32).collect()
    }
}

/// A row-major rows×cols matrix transposed (column j becomes row j).
fn transposed<T: Copy + Default>(v: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut t = vec![T::default(); rows * cols];
    for (r, row) in v.chunks_exact(cols).enumerate() {
        for (j, &x) in row.iter().enumerate() {
            t[j * rows + r] = x;
        }
    }
    t
}

/// [`dot`] with every block a run of consecutive k.
fn dot_runs(ar: &Arithmetic, runs: &[std::ops::Range<usize>], case: &MmaCase, xor: bool, a: &[i32], b: &[i32], c: i64) -> u64 {
    let block_sum = |r: &std::ops::Range<usize>| -> i64 {
        let (x, y) = (&a[r.clone()], &b[r.clone()]);
        if xor { x.iter().zip(y).map(|(p, q)| p ^ q).sum::<i32>() as i64 } else { x.iter().zip(y).map(|(p, q)| p * q).sum::<i32>() as i64 }
    };
    accumulate(ar, case, runs.iter().map(block_sum), c)
}

/// C + a·b over K (a XOR b with `xor`: what a pair contributes is the instruction's, so the
/// case says it: b1 `.xor.popc` cases carry `"op": "xor"`, `.and.popc` pairs are products),
/// block by block as `blocks` deals K, into C's format.
fn dot(ar: &Arithmetic, blocks: &[Vec<usize>], case: &MmaCase, xor: bool, a: &[i64], b: &[i64], c: i64) -> u64 {
    let term = |kk: usize| if xor { a[kk] ^ b[kk] } else { a[kk] * b[kk] };
    accumulate(ar, case, blocks.iter().map(|block| block.iter().map(|&kk| term(kk)).sum()), c)
}

/// The running sum over the block sums in chain order, C fused at the start or added after,
/// each addition exact and then wrapped or clamped to the accumulator; into C's format.
fn accumulate(ar: &Arithmetic, case: &MmaCase, block_sums: impl Iterator<Item = i64>, c: i64) -> u64 {
    let acc = ar.accumulator.format.unwrap_or(case.c_fmt);
    let ovf = ar.accumulator.overflow;
    // One addition into the running sum: exact, then wrapped or clamped to the accumulator.
    let add = |run: i64, x: i64| acc.int_value(acc.int_bits(run as i128 + x as i128, ovf));
    let after = ar.blocks.c == CPlacement::After;
    let mut run = if after { 0 } else { c };
    for sum in block_sums {
        run = add(run, sum);
    }
    if after {
        run = add(run, c);
    }
    case.c_fmt.int_bits(run as i128, ovf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::model::knobs::model_of;

    fn model(overflow: &str, c: &str, width: usize) -> crate::model::Model {
        let src = format!(
            "[blocks]\nwidth = {width}\nc = \"{c}\"\n[align]\nmode = \"exact\"\n[accumulator]\nformat = \"s32\"\nrounding = \"rz\"\noverflow = \"{overflow}\"\n"
        );
        crate::model::Model::from_toml("int", &src).unwrap()
    }

    fn case(a_fmt: Format, a: &[i64], b: &[i64], c: i64) -> MmaCase {
        let k = a.len();
        let mut case = MmaCase::zeros(a_fmt, Format::S32, 1, 1, k);
        case.a = a.iter().map(|&x| (x as u64) & a_fmt.mask()).collect();
        case.b = b.iter().map(|&x| (x as u64) & a_fmt.mask()).collect();
        case.c = vec![(c as u64) & Format::S32.mask()];
        case
    }

    fn run(m: &crate::model::Model, case: &MmaCase) -> i64 {
        let d = crate::model::Emulator::new(m.clone()).run(case).unwrap();
        Format::S32.int_value(d[0])
    }

    #[test]
    fn exact_dot_products_wrap_or_saturate() {
        let max = i32::MAX as i64;
        let (wrap, sat) = (model("wrap", "fused", 0), model("saturate", "fused", 0));
        let plain = case(Format::S8, &[-128, 127, 3], &[-128, 127, -5], 10);
        assert_eq!(run(&wrap, &plain), 16384 + 16129 - 15 + 10);
        assert_eq!(run(&sat, &plain), 16384 + 16129 - 15 + 10);
        let over = case(Format::S8, &[100, 1], &[2, 1], max - 150);
        assert_eq!(run(&wrap, &over), i32::MIN as i64 + 50);
        assert_eq!(run(&sat, &over), max);
        let under = case(Format::S8, &[-128], &[127], i32::MIN as i64 + 5);
        assert_eq!(run(&sat, &under), i32::MIN as i64);
        // Saturating per block: C + block 0 clamps, then block 1 brings the sum back down.
        let back = case(Format::S8, &[100, -100], &[1, 1], max - 50);
        assert_eq!(run(&sat, &back), max - 50, "one block: exact sum in range");
        assert_eq!(run(&model("saturate", "fused", 1), &back), max - 100);
        assert_eq!(run(&model("saturate", "after", 1), &back), max - 50);
    }

    #[test]
    fn unsigned_four_bit_and_single_bit_operands() {
        let wrap = model("wrap", "fused", 0);
        assert_eq!(run(&wrap, &case(Format::U8, &[255, 200], &[255, 2], 0)), 65025 + 400);
        assert_eq!(run(&wrap, &case(Format::S4, &[-8, 7], &[-8, 7], 1)), 64 + 49 + 1);
        assert_eq!(run(&wrap, &case(Format::U4, &[15], &[15], -1)), 224);
        let mut bits = case(Format::B1, &[1, 1, 0, 1, 0], &[1, 0, 1, 1, 0], 5);
        assert_eq!(run(&wrap, &bits), 7, "and.popc: two pairs of ones");
        bits.extra.insert("op".into(), "xor".into());
        assert_eq!(run(&wrap, &bits), 7, "xor.popc: two pairs differ");
        let x = crate::exact::exact_element(&bits, 0, 0);
        assert_eq!(x.round(Format::S32, crate::format::Rounding::Rne), 7, "the reference XORs too");
        let float = model_of("f", crate::model::Model::load("h100").unwrap().arithmetic(Format::F16)).unwrap();
        let err = crate::model::Emulator::new(float).run(&case(Format::S8, &[1], &[1], 0)).unwrap_err();
        assert!(err.to_string().contains("integer"), "{err}");
    }

    /// The vectorised block runs of `tile` equal the per-element gather of `element` on every
    /// integer path's generated tiles (wrap, clamp, XOR pairs, C at the ends of s32).
    #[test]
    fn tile_runs_equal_elements_on_every_integer_path() {
        let mut checked = 0;
        for path in crate::exec::PATHS.iter().filter(|p| p.c_fmt.is_integer()) {
            let model = crate::model::Model::load(&crate::model::default_name(&path.id)).unwrap();
            let ar = model.arithmetic(path.a_fmt);
            let blocks = crate::model::emulator::block_members(&ar.blocks, path.k);
            for i in 0..20 {
                let case = crate::gen::case_at(path, 11, i);
                let d = tile(ar, &blocks, &case);
                for e in 0..case.m * case.n {
                    assert_eq!(d[e], element(ar, &blocks, &case, e / case.n, e % case.n), "{} tile {i} element {e}", path.id);
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    /// The same beyond the measured models: every block width, C first or after the chain,
    /// wrap-around or clamping, on every integer path's tiles with C near the ends of s32.
    #[test]
    fn tile_runs_equal_elements_under_every_integer_knob() {
        let mut checked = 0;
        for path in crate::exec::PATHS.iter().filter(|p| p.c_fmt.is_integer()) {
            for (overflow, c, width) in [("wrap", "fused", 4), ("saturate", "after", 8), ("saturate", "fused", 16), ("wrap", "after", 0), ("saturate", "fused", 32)] {
                let model = model(overflow, c, width);
                let ar = model.arithmetic(path.a_fmt);
                let blocks = crate::model::emulator::block_members(&ar.blocks, path.k);
                for i in 0..4 {
                    let mut case = crate::gen::case_at(path, 12, i);
                    for (e, x) in case.c.iter_mut().enumerate() {
                        *x = [i32::MAX as u64, i32::MIN as u32 as u64, *x][e % 3];
                    }
                    let d = tile(ar, &blocks, &case);
                    for e in 0..case.m * case.n {
                        assert_eq!(d[e], element(ar, &blocks, &case, e / case.n, e % case.n), "{} under {overflow} {c} {width}, tile {i} element {e}", path.id);
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 50_000, "{checked}");
    }
}
