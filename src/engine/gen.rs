//! The GPU engine's tile generator, in Rust: tile `i` of seed `s` is a pure function of `(s, i)`
//! computed with integer arithmetic only, so the GPU (`kernels/engine.cu`, which must stay its
//! bit-for-bit twin) makes the same tiles, and the CPU can regenerate any tile the GPU flagged
//! to minimise it.
//!
//! Each tile draws a recipe: a band of exponents around a centre (narrow or wide), one big
//! product among tiny ones, pairs that cancel exactly (or leave one last bit), sums at the
//! bottom of C's format (window floor, subnormal results), zero rows, columns and elements
//! (products that vanish, leaving C alone), or raw bit patterns; specials
//! (±0, ±inf, NaN, extremes) sprinkled at one of three rates; C at the products' scale, far
//! above or below it, subnormal, zero, or raw bits.

use crate::case::MmaCase;
use crate::exec::PathSpec;
use crate::format::Format;
use serde_json::json;

/// The tile's M×N×K: the engine runs m16n8k16 paths.
pub const M: usize = 16;
pub const N: usize = 8;
pub const K: usize = 16;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn tile_key(seed: u64, tile: u64) -> u64 {
    mix(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ mix(tile ^ 0xD6E8_FEB8_6659_FD93))
}

fn slot_hash(key: u64, slot: u64) -> u64 {
    mix(key ^ slot.wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// Exponent bits and fraction bits of the formats the engine generates.
fn eb_mb(f: Format) -> (i32, i32) {
    match f {
        Format::F16 => (5, 10),
        Format::Bf16 => (8, 7),
        Format::F32 => (8, 23),
        other => unreachable!("the engine generates no {other}"),
    }
}

fn bias(f: Format) -> i32 {
    (1 << (eb_mb(f).0 - 1)) - 1
}

struct Params {
    recipe: u64,
    width: i32,
    special: u64,
    cstyle: u64,
    kbig: usize,
    gap: i32,
    ca: i32,
    cb: i32,
}

fn params(key: u64, inf: Format, cf: Format) -> Params {
    const WIDTHS: [i32; 6] = [0, 1, 2, 4, 8, 16];
    const SPECIALS: [u64; 4] = [0, 0, 4, 32];
    let (p, q) = (slot_hash(key, 1000), slot_hash(key, 1001));
    let (_, mb) = eb_mb(inf);
    let (lo, hi) = (1 - bias(inf) - mb, bias(inf));
    let span = (hi - lo + 1) as u64;
    let mut t = Params {
        recipe: p % 7,
        width: WIDTHS[((p >> 8) % 6) as usize],
        special: SPECIALS[((p >> 16) % 4) as usize],
        cstyle: (p >> 24) % 8,
        kbig: ((p >> 32) % 16) as usize,
        gap: 6 + ((p >> 40) % 24) as i32,
        ca: lo + (q % span) as i32,
        cb: lo + ((q >> 20) % span) as i32,
    };
    if t.recipe == 4 {
        // Sums near the bottom of C's format (the window floor, subnormal results).
        let target = (1 - bias(cf)) + ((q >> 40) % 24) as i32 - 16;
        t.ca = (target / 2 + (q % 5) as i32 - 2).clamp(lo, hi);
        t.cb = (target - t.ca).clamp(lo, hi);
    }
    t
}

fn sign_bit(f: Format) -> u64 {
    let (eb, mb) = eb_mb(f);
    1 << (eb + mb)
}

fn inf_bits(f: Format, neg: bool) -> u64 {
    let (eb, mb) = eb_mb(f);
    (neg as u64 * sign_bit(f)) | (((1 << eb) - 1) << mb)
}

fn max_bits(f: Format, neg: bool) -> u64 {
    let (eb, mb) = eb_mb(f);
    (neg as u64 * sign_bit(f)) | (((1 << eb) - 2) << mb) | ((1 << mb) - 1)
}

/// A value of format `f` with its leading bit at 2^e; below emin, the subnormal it shifts to
/// (never zero).
fn encode(f: Format, neg: bool, e: i32, mant: u64) -> u64 {
    let (eb, mb) = eb_mb(f);
    let s = neg as u64 * sign_bit(f);
    let biased = (e + bias(f)).min((1 << eb) - 2);
    if biased >= 1 {
        return s | ((biased as u64) << mb) | mant;
    }
    let shift = 1 - biased;
    let sig = if shift > mb { 0 } else { ((1 << mb) | mant) >> shift };
    s | sig.max(1)
}

fn special_value(f: Format, h: u64, rate: u64) -> Option<u64> {
    if (h >> 48) & 0xff >= rate {
        return None;
    }
    let (eb, mb) = eb_mb(f);
    let neg = h & 1 == 1;
    Some(match (h >> 56) & 7 {
        0 => 0,
        1 => sign_bit(f),
        2 => inf_bits(f, false),
        3 => inf_bits(f, true),
        4 => (((1 << eb) - 1) << mb) | (1 << (mb - 1)),
        5 => max_bits(f, neg),
        6 => (neg as u64 * sign_bit(f)) | 1,
        _ => (neg as u64 * sign_bit(f)) | (1 << mb),
    })
}

fn banded(f: Format, centre: i32, width: i32, h: u64) -> u64 {
    let (_, mb) = eb_mb(f);
    let mut mant = (h >> 1) & ((1 << mb) - 1);
    if (h >> 40) & 3 == 0 {
        mant &= !((1u64 << (mb / 2)) - 1);
    }
    let off = ((h >> 24) % (width as u64 + 1)) as i32 - width / 2;
    encode(f, h & 1 == 1, centre + off, mant)
}

fn raw(f: Format, h: u64) -> u64 {
    h & (sign_bit(f) * 2 - 1)
}

fn a_plain(key: u64, t: &Params, f: Format, r: usize, k: usize) -> u64 {
    let h = slot_hash(key, (r * K + k) as u64);
    if t.recipe == 5 {
        return raw(f, h);
    }
    if let Some(v) = special_value(f, h, t.special) {
        return v;
    }
    // Zero rows (one in four) and zero elements (one in four): products that vanish.
    if t.recipe == 6 && (slot_hash(key, 2000 + r as u64) & 3 == 0 || (h >> 44) & 3 == 0) {
        return (h & 1) * sign_bit(f);
    }
    let centre = if t.recipe == 2 && k != t.kbig { t.ca - t.gap } else { t.ca };
    banded(f, centre, t.width, h)
}

fn b_plain(key: u64, t: &Params, f: Format, k: usize, n: usize) -> u64 {
    let h = slot_hash(key, (M * K + k * N + n) as u64);
    if t.recipe == 5 {
        return raw(f, h);
    }
    if let Some(v) = special_value(f, h, t.special) {
        return v;
    }
    if t.recipe == 6 && (slot_hash(key, 3000 + n as u64) & 3 == 0 || (h >> 44) & 3 == 0) {
        return (h & 1) * sign_bit(f);
    }
    banded(f, t.cb, t.width, h)
}

/// Cancellation: odd k repeats B's row k-1 and negates A's column k-1 (one pair in eight with
/// A's last bit flipped: a tiny remainder).
fn a_at(key: u64, t: &Params, f: Format, r: usize, k: usize) -> u64 {
    if t.recipe != 3 || k % 2 == 0 {
        return a_plain(key, t, f, r, k);
    }
    let v = a_plain(key, t, f, r, k - 1) ^ sign_bit(f);
    if slot_hash(key, (r * K + k) as u64) & 7 == 0 {
        v ^ 1
    } else {
        v
    }
}

fn b_at(key: u64, t: &Params, f: Format, k: usize, n: usize) -> u64 {
    b_plain(key, t, f, if t.recipe == 3 && k % 2 == 1 { k - 1 } else { k }, n)
}

fn c_at(key: u64, t: &Params, f: Format, r: usize, n: usize) -> u64 {
    let h = slot_hash(key, (M * K + K * N + r * N + n) as u64);
    if let Some(v) = special_value(f, h, t.special) {
        return v;
    }
    let (_, mb) = eb_mb(f);
    let scale = t.ca + t.cb;
    let spread = ((h >> 24) % 30) as i32;
    match t.cstyle {
        0 => (h & 1) * sign_bit(f),
        2 => raw(f, h),
        3 => banded(f, scale + 10 + spread, 0, h),
        4 => banded(f, scale - 10 - spread, 0, h),
        5 => banded(f, (1 - bias(f)) - 1 - ((h >> 24) % mb as u64) as i32, 0, h),
        7 => banded(f, scale, 2, h),
        _ => banded(f, scale, 8, h),
    }
}

/// Whether the engine's generator makes tiles for this path.
pub fn supports(path: &PathSpec) -> bool {
    (path.m, path.n, path.k) == (M, N, K) && !path.sparse() && path.a_fmt == path.b_fmt && matches!(path.a_fmt, Format::F16 | Format::Bf16) && matches!(path.c_fmt, Format::F16 | Format::F32)
}

/// Tile `index` of `seed` for `path` (one of the engine's paths), recording both in `"engine"`.
pub fn tile(path: &PathSpec, seed: u64, index: u64) -> MmaCase {
    debug_assert!(supports(path));
    let (inf, cf) = (path.a_fmt, path.c_fmt);
    let key = tile_key(seed, index);
    let t = params(key, inf, cf);
    let mut c = MmaCase::zeros(inf, cf, M, N, K);
    for r in 0..M {
        for k in 0..K {
            c.a[r * K + k] = a_at(key, &t, inf, r, k);
        }
    }
    for k in 0..K {
        for n in 0..N {
            c.b[k * N + n] = b_at(key, &t, inf, k, n);
        }
    }
    for r in 0..M {
        for n in 0..N {
            c.c[r * N + n] = c_at(key, &t, cf, r, n);
        }
    }
    c.extra.insert("engine".into(), json!([seed, index]));
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::paths::path_by_id;
    use crate::format::Class;

    #[test]
    fn tiles_are_reproducible_and_varied() {
        let p = path_by_id("mma.m16n8k16.f32.f16.f16.f32").unwrap();
        assert_eq!(tile(p, 7, 123).a, tile(p, 7, 123).a);
        assert_ne!(tile(p, 7, 123).a, tile(p, 7, 124).a);
        assert_ne!(tile(p, 7, 123).a, tile(p, 8, 123).a);
        // Over a few thousand tiles every class of value appears in A and C, subnormals too.
        let mut seen = std::collections::HashSet::new();
        for i in 0..4000 {
            let c = tile(p, 1, i);
            for &x in &c.a {
                let d = Format::F16.decode(x);
                seen.insert(("a", format!("{:?}", d.class), d.class == Class::Finite && d.sig >> 10 == 0));
            }
            for &x in &c.c {
                let d = Format::F32.decode(x);
                seen.insert(("c", format!("{:?}", d.class), d.class == Class::Finite && d.sig >> 23 == 0));
            }
        }
        for side in ["a", "c"] {
            for class in ["Zero", "Inf", "Nan"] {
                assert!(seen.contains(&(side, class.to_string(), false)), "{side} never {class}");
            }
            assert!(seen.contains(&(side, "Finite".to_string(), true)), "{side} never subnormal");
            assert!(seen.contains(&(side, "Finite".to_string(), false)), "{side} never normal");
        }
    }

    #[test]
    fn cancellation_pairs_cancel() {
        let p = path_by_id("mma.m16n8k16.f32.bf16.bf16.f32").unwrap();
        let i = (0..1000).find(|&i| params(tile_key(3, i), Format::Bf16, Format::F32).recipe == 3).expect("a cancelling tile");
        let c = tile(p, 3, i);
        let flipped = (0..M * K / 2).filter(|&x| c.a[2 * x + 1] != c.a[2 * x] ^ 0x8000).count();
        assert!(flipped < M * K / 4, "{flipped} of 128 pairs do not cancel");
        assert!((0..K / 2).all(|k| c.b[(2 * k + 1) * N..(2 * k + 2) * N] == c.b[2 * k * N..(2 * k + 1) * N]));
    }
}
