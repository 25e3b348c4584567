//! The corpus line codec: how a recorded tile is written compactly and read back losslessly.
//!
//! A tile the recorder generated with [`gen::case_at`] is stored by reference: `"seed":
//! [seed, index]` (with the recipe, for readers) and `"inputs"`, a 64-bit FNV-1a hash of its A, B
//! and C bit patterns, so a generator that has changed since the recording is an error, never a
//! silently different tile. Tiles of the first recordings, whose generator drew one stream per
//! recording, are stored the same way with the stream's state before them (`"gen_state"`, see
//! [`first_gen`](super::first_gen)). Any other tile (promoted findings, deciding tiles, hand-made cases)
//! keeps its `"a"`, `"b"`, `"c"` hex arrays.
//!
//! The GPU's D is stored either as `"d"` (hex bit patterns, readable) or as `"d_steps"`: for
//! each element, how many steps through the output format's ordered bit patterns D lies from
//! [`reference`], a plain f64 sum computed the same way everywhere. Hardware results sit within
//! a step or two of it, so the steps are mostly 0 and ±1 and the gzipped file stays small enough
//! to travel with the repository; the recorded bits come back exactly (NaN payloads included),
//! and none of the emulator's code is involved in decoding them.
//!
//! Hardware that drops the low bits of small terms (FP8 wgmma keeps about 13 bits below the
//! largest term) sits hundreds of steps from the exact sum. For such a tile the encoder picks a
//! window `w`: every term is first cut toward zero to a multiple of 2^(E−w), E the
//! largest term's exponent, and the sum cut toward zero to `p` significant bits (`"d_ref": [w,
//! p]`, either null), which brings the steps back near 0. The window is only a predictor chosen
//! per tile for size; any window decodes the same bits.

use crate::case::{FieldError, MmaCase};
use crate::exec::PathSpec;
use crate::format::Format;
use serde_json::{json, Map, Value};

fn err(field: &str, message: impl Into<String>) -> FieldError {
    FieldError { field: field.into(), message: message.into() }
}

/// FNV-1a over the little-endian bytes of every A, B and C bit pattern (then a sparse tile's
/// metadata indices, one byte each, or a block-scaled tile's scale format, block size and
/// scales), as 16 hex digits.
pub fn inputs_hash(c: &MmaCase) -> String {
    let mut bytes: Vec<u8> = c.a.iter().chain(&c.b).chain(&c.c).flat_map(|x| x.to_le_bytes()).collect();
    // A sparse tile's metadata is part of its inputs (dense tiles hash as they always did).
    bytes.extend(c.meta.iter().flatten());
    // So are a block-scaled tile's scales, with their format and block size.
    if let Some(s) = &c.scales {
        bytes.extend(s.fmt.name().bytes().chain((s.block as u64).to_le_bytes()).chain(s.a.iter().copied()).chain(s.b.iter().copied()));
    }
    format!("{:016x}", crate::hunt::finding::fnv1a(&bytes))
}

/// A bit pattern's place in the format's total order (-0 just below +0, NaNs beyond the
/// infinities): an order-preserving bijection between the format's patterns and integers.
pub fn order_key(bits: u64, f: Format) -> i64 {
    if f.is_integer() {
        return f.int_value(bits);
    }
    let w = f.storage_bits();
    let sign = bits >> (w - 1) & 1 == 1;
    let mag = (bits & (f.mask() >> 1)) as i64;
    if sign { -mag - 1 } else { mag }
}

/// The inverse of [`order_key`].
pub fn from_order_key(key: i64, f: Format) -> u64 {
    if f.is_integer() {
        return key as u64 & f.mask();
    }
    let sign_bit = 1u64 << (f.storage_bits() - 1);
    if key >= 0 { key as u64 } else { sign_bit | (-(key + 1)) as u64 }
}

/// The order key of the largest non-NaN pattern of `f` whose value is at most `r`, by binary
/// search over the keys (no rounding code involved); a NaN `r` gives +0's key. For f32 and f64
/// the search starts from the nearest pattern (a native conversion) and steps to the floor: the
/// same key, found in one or two decodings instead of 32 or 64.
fn floor_key(r: f64, f: Format) -> i64 {
    if r.is_nan() {
        return 0;
    }
    let inf = order_key(f.inf_bits(false), f);
    let value = |k: i64| f.to_f64(from_order_key(k, f));
    let near = match f {
        Format::F64 => Some(order_key(r.to_bits(), f)),
        Format::F32 => Some(order_key((r as f32).to_bits() as u64, f)),
        _ => None,
    };
    if let Some(mut k) = near {
        while k > -inf - 1 && value(k) > r {
            k -= 1;
        }
        while k < inf && value(k + 1) <= r {
            k += 1;
        }
        return k;
    }
    let (mut lo, mut hi) = (-inf - 1, inf); // every non-NaN key; value(lo) = -inf <= r
    while lo < hi {
        let mid = ((lo as i128 + hi as i128 + 1) >> 1) as i64;
        if value(mid) <= r {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The codec's reference for element (i, j): `c + a0·b0 + a1·b1 + …` in f64, left to right,
/// each term first cut toward zero to a multiple of 2^(E−w) when a window `w` is given (E: the
/// exponent of the largest finite term, or with `field` the largest sum of the operands'
/// exponents, subnormals counted at their format's emin, as hardware that aligns on exponent
/// fields does), and the sum cut toward zero to `p` significant bits when `sum` is given.
/// Deterministic on every IEEE machine (no library functions, only exact scalings by powers of
/// two); only its closeness to D matters, not its accuracy.
pub fn reference(c: &MmaCase, i: usize, j: usize, window: Window) -> f64 {
    Terms::new(c).reference(i, j, window)
}

/// A tile's terms as [`reference`] reads them, decoded once for all its elements: A and B as
/// f64 (a block-scaled tile's elements with their scales; a sparse tile's kept A values and its
/// rows' picks of B), C, and whether pairs are XORed.
struct Terms<'c> {
    c: &'c MmaCase,
    a: Vec<f64>,
    b: Vec<f64>,
    picks: Option<Vec<Vec<usize>>>,
    terms_k: usize,
    xor: bool,
}

impl<'c> Terms<'c> {
    fn new(c: &'c MmaCase) -> Self {
        // A block-scaled tile's elements enter with their scales (NaN scales as NaN).
        let scale = |s: Option<crate::format::Decoded>| match s {
            None => 1.0,
            Some(d) if d.class == crate::format::Class::Nan => f64::NAN,
            Some(d) => d.sig as f64 * crate::format::pow2(d.exp.max(-1022)),
        };
        let picks = c.meta.as_ref().map(|_| (0..c.m).map(|i| c.picks(i).expect("a sparse case")).collect::<Vec<_>>());
        let terms_k = if picks.is_some() { c.k / 2 } else { c.k };
        // A sparse row's terms are its kept values with the rows of B they select (no scales).
        let a = match &picks {
            None => (0..c.m * c.k).map(|x| c.a_fmt.to_f64(c.a_at(x / c.k, x % c.k)) * scale(c.scale_of_a(x / c.k, x % c.k))).collect(),
            Some(_) => c.a.iter().map(|&x| c.a_fmt.to_f64(x)).collect(),
        };
        let b = match &picks {
            None => (0..c.k * c.n).map(|x| c.b_fmt.to_f64(c.b_at(x / c.n, x % c.n)) * scale(c.scale_of_b(x / c.n, x % c.n))).collect(),
            Some(_) => c.b.iter().map(|&x| c.b_fmt.to_f64(x)).collect(),
        };
        // b1 `.xor.popc` pairs contribute a XOR b, not a·b.
        Terms { c, a, b, picks, terms_k, xor: c.xor_pairs() }
    }

    fn reference(&self, i: usize, j: usize, window: Window) -> f64 {
        let Window { terms: window, sum, field } = window;
        let (c, terms_k, n) = (self.c, self.terms_k, self.c.n);
        let operands = |kk: usize| match &self.picks {
            None => (self.a[i * terms_k + kk], self.b[kk * n + j]),
            Some(p) => (self.a[i * terms_k + kk], self.b[p[i][kk] * n + j]),
        };
        let cv = c.c_fmt.to_f64(c.c_at(i, j));
        let xor = self.xor;
        let terms = || {
            std::iter::once(cv).chain((0..terms_k).map(move |kk| {
                let (a, b) = operands(kk);
                if xor { ((a as i64) ^ (b as i64)) as f64 } else { a * b }
            }))
        };
        let live = |t: f64| t.is_finite() && t != 0.0;
        let quantum = window.and_then(|w| {
            let e = if field {
                let at = |x: f64, f: Format| exponent(x).max(f.emin());
                let products = (0..terms_k).map(operands).filter(|&(a, b)| live(a) && live(b));
                products.map(|(a, b)| at(a, c.a_fmt) + at(b, c.b_fmt)).chain(live(cv).then(|| at(cv, c.c_fmt))).max()?
            } else {
                terms().filter(|&t| live(t)).map(exponent).max()?
            };
            // Quanta below f64's normal range would make the scaling inexact: no cut then.
            // With the quantum its reciprocal, a power of two too (2^-1023 at the least, exact):
            // t·(1/q) is t/q exactly, without a division per term.
            (-1022..=1023).contains(&(e - w)).then(|| (crate::format::pow2(e - w), crate::format::pow2(w - e)))
        });
        let mut acc = 0.0;
        for (no, t) in terms().enumerate() {
            let t = match quantum {
                Some((q, per_q)) if t.is_finite() => trunc(t * per_q) * q,
                _ => t,
            };
            acc = if no == 0 { t } else { acc + t };
        }
        match sum {
            Some(p) if acc.is_finite() && acc != 0.0 => {
                let q = crate::format::pow2((exponent(acc) - p + 1).max(-1022));
                trunc(acc / q) * q
            }
            _ => acc,
        }
    }

    /// [`Terms::reference`] of every element, row-major: per element the same operations in
    /// the same order (bit for bit the same values), computed a row at a time with B's rows
    /// read contiguously (k outer, columns inner): what decoding a whole tile costs.
    fn references(&self, window: Window) -> Vec<f64> {
        let Window { terms: window, sum, field } = window;
        let (c, terms_k, n) = (self.c, self.terms_k, self.c.n);
        let live = |t: f64| t.is_finite() && t != 0.0;
        let xor = self.xor;
        let product = |a: f64, b: f64| if xor { ((a as i64) ^ (b as i64)) as f64 } else { a * b };
        let mut out = vec![0.0; c.m * n];
        // Per column of the row: the largest exponent (i32::MIN: no live term), then the
        // quantum and its reciprocal ((0, 0): no cut).
        let mut top = vec![i32::MIN; n];
        let (mut q, mut per_q) = (vec![0.0; n], vec![0.0; n]);
        for (i, acc) in out.chunks_exact_mut(n).enumerate() {
            let a_row = &self.a[i * terms_k..(i + 1) * terms_k];
            let b_row = |kk: usize| {
                let r = self.picks.as_ref().map_or(kk, |p| p[i][kk]);
                &self.b[r * n..(r + 1) * n]
            };
            for (j, x) in acc.iter_mut().enumerate() {
                *x = c.c_fmt.to_f64(c.c_at(i, j));
            }
            if let Some(w) = window {
                let at = |x: f64, f: Format| exponent(x).max(f.emin());
                for (t, &cv) in top.iter_mut().zip(acc.iter()) {
                    *t = match (live(cv), field) {
                        (false, _) => i32::MIN,
                        (true, true) => at(cv, c.c_fmt),
                        (true, false) => exponent(cv),
                    };
                }
                for (kk, &a) in a_row.iter().enumerate() {
                    if field && live(a) {
                        let ea = at(a, c.a_fmt);
                        for (t, &b) in top.iter_mut().zip(b_row(kk)) {
                            if live(b) {
                                *t = (*t).max(ea + at(b, c.b_fmt));
                            }
                        }
                    } else if !field {
                        for (t, &b) in top.iter_mut().zip(b_row(kk)) {
                            let p = product(a, b);
                            if live(p) {
                                *t = (*t).max(exponent(p));
                            }
                        }
                    }
                }
                for ((&e, q), per_q) in top.iter().zip(&mut q).zip(&mut per_q) {
                    // Quanta below f64's normal range would make the scaling inexact: no cut.
                    (*q, *per_q) = if e != i32::MIN && (-1022..=1023).contains(&(e - w)) { (crate::format::pow2(e - w), crate::format::pow2(w - e)) } else { (0.0, 0.0) };
                }
            }
            for ((x, &q), &per_q) in acc.iter_mut().zip(&q).zip(&per_q) {
                *x = cut(*x, q, per_q);
            }
            // The products, cut, added in k order; over the columns without a branch.
            let (q, per_q) = (&q[..n], &per_q[..n]);
            for (kk, &a) in a_row.iter().enumerate() {
                let b = &b_row(kk)[..n];
                for j in 0..n {
                    acc[j] += cut(product(a, b[j]), q[j], per_q[j]);
                }
            }
            if let Some(p) = sum {
                for x in acc.iter_mut() {
                    if x.is_finite() && *x != 0.0 {
                        let q = crate::format::pow2((exponent(*x) - p + 1).max(-1022));
                        *x = trunc(*x / q) * q;
                    }
                }
            }
        }
        out
    }
}

/// A term cut to a multiple of the quantum `q` toward zero (`per_q` = 1/q); `q` = 0: no cut,
/// nor for infinities and NaN.
#[inline(always)]
fn cut(t: f64, q: f64, per_q: f64) -> f64 {
    let cut = trunc(t * per_q) * q;
    if q != 0.0 && t.abs() < f64::INFINITY { cut } else { t }
}

/// `x.trunc()` without a library call (the portable build has no SSE4.1 rounding instruction)
/// and without a branch (a select, not a jump): below 2^52 in magnitude, |x| + 2^52 - 2^52
/// is |x| rounded to an integer, one less where that rounded up; at or above 2^52 (and NaN,
/// infinities) x is already whole.
#[inline(always)]
fn trunc(x: f64) -> f64 {
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let y = x.abs();
    let rounded = (y + TWO_52) - TWO_52;
    let floor = if rounded > y { rounded - 1.0 } else { rounded };
    (if y < TWO_52 { floor } else { y }).copysign(x)
}

/// The codec's predictor: the window that cuts the terms (bits kept below the largest term's
/// exponent, or below the largest exponent-field sum with `field`) and the significant bits the
/// sum is cut to, toward zero; `None` for no cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub terms: Option<i32>,
    pub sum: Option<i32>,
    pub field: bool,
}

/// floor(log2 |x|) of a finite nonzero f64, from its bits.
fn exponent(x: f64) -> i32 {
    let bits = x.to_bits() & !(1u64 << 63);
    let biased = (bits >> 52) as i32;
    if biased > 0 { biased - 1023 } else { -1011 - bits.leading_zeros() as i32 }
}

/// The term windows and sum precisions the encoder tries for a tile (None: no cut).
const TERM_WINDOWS: [Option<i32>; 8] = [None, Some(10), Some(12), Some(13), Some(14), Some(16), Some(20), Some(25)];
const SUM_BITS: [Option<i32>; 5] = [None, Some(11), Some(13), Some(14), Some(16)];
/// Field-aligned windows (f32-wide datapaths keep 24 bits plus a few below the largest field
/// sum and cut the sum to f32's 24 bits).
const FIELD_WINDOWS: [i32; 4] = [25, 26, 27, 28];
const FIELD_SUM_BITS: [Option<i32>; 3] = [None, Some(24), Some(25)];

fn windows() -> impl Iterator<Item = Window> {
    let plain = TERM_WINDOWS.into_iter().flat_map(|terms| SUM_BITS.into_iter().map(move |sum| Window { terms, sum, field: false }));
    let sums24 = [None, Some(25)].into_iter().map(|terms| Window { terms, sum: Some(24), field: false });
    let field = FIELD_WINDOWS.into_iter().flat_map(|w| FIELD_SUM_BITS.into_iter().map(move |sum| Window { terms: Some(w), sum, field: true }));
    plain.chain(sums24).chain(field)
}

/// Where the steps of one element count from: the reference's floor in `f`; for a NaN
/// reference, +0 in lines without a window (as first written) and the all-ones NaN (what the
/// hardware returns) in lines with one.
///
/// Integer formats count from the reference taken modulo 2^width in lines without a window (a
/// wrapped-around D is 0 steps from it) and from the reference clamped to the range in lines
/// with one (a saturated D is a few steps from it); the encoder picks per tile.
fn anchor(reference: f64, f: Format, windowed: bool) -> i64 {
    if let Some(range) = f.integer() {
        let floor = if reference.is_nan() { 0 } else { reference.floor() as i64 };
        return if windowed { floor.clamp(range.min(), range.max()) } else { order_key(from_order_key(floor, f), f) };
    }
    if reference.is_nan() && windowed { order_key(f.mask() >> 1, f) } else { floor_key(reference, f) }
}

/// One pattern of `f` as steps from an f64 reference (wrapping: exact for every pattern, NaNs
/// included).
pub fn step_from(bits: u64, reference: f64, f: Format, windowed: bool) -> i64 {
    let step = order_key(bits, f).wrapping_sub(anchor(reference, f, windowed));
    match f.integer() {
        // Integers count modulo 2^width: a wrapped-around sum is 0 steps from its reference.
        Some(i) => (step << (64 - i.bits)) >> (64 - i.bits),
        None => step,
    }
}

/// The inverse of [`step_from`].
pub fn bits_at_step(reference: f64, step: i64, f: Format, windowed: bool) -> u64 {
    let key = anchor(reference, f, windowed).wrapping_add(step);
    // Back into the format's key range (only matters for corrupted steps).
    let w = f.storage_bits();
    let key = if w < 64 { (key << (64 - w)) >> (64 - w) } else { key };
    from_order_key(key, f) & f.mask()
}

/// D as steps from the reference under `window` (None: plain, as lines without `"d_ref"`).
pub fn d_to_steps(c: &MmaCase, d: &[u64], window: Option<Window>) -> Vec<i64> {
    steps_under(&Terms::new(c), d, window)
}

fn steps_under(terms: &Terms, d: &[u64], window: Option<Window>) -> Vec<i64> {
    let (c, w) = (terms.c, window.unwrap_or_default());
    terms.references(w).into_iter().zip(d).map(|(r, &d)| step_from(d, r, c.d_fmt, window.is_some())).collect()
}

/// The inverse of [`d_to_steps`].
pub fn steps_to_d(c: &MmaCase, steps: &[i64], window: Option<Window>) -> Vec<u64> {
    let (w, terms) = (window.unwrap_or_default(), Terms::new(c));
    terms.references(w).into_iter().zip(steps).map(|(r, &s)| bits_at_step(r, s, c.d_fmt, window.is_some())).collect()
}

/// About how many bits the steps take written out: what the encoder minimises.
fn cost(steps: &[i64]) -> u64 {
    steps.iter().map(|&s| step_bits(s)).sum()
}

/// The bits one step takes written out.
fn step_bits(s: i64) -> u64 {
    64 - s.unsigned_abs().leading_zeros() as u64
}

/// The most elements the encoder tries every window on; a wider tile (wgmma N = 16 to 256)
/// ranks the windows on `SAMPLE` elements spread over it and steps the whole tile under the
/// best few.
const SAMPLE: usize = 512;
const FINALISTS: usize = 3;

/// D as steps under the window that makes them smallest, and that window (for tiles over
/// [`SAMPLE`] elements: the smallest of the [`FINALISTS`] cheapest on the sample, or none).
pub fn best_steps(c: &MmaCase, d: &[u64]) -> (Option<Window>, Vec<i64>) {
    let terms = Terms::new(c);
    let plain = steps_under(&terms, d, None);
    if cost(&plain) == 0 {
        return (None, plain);
    }
    let all = c.m * c.n;
    if all <= SAMPLE {
        // Every window on every element; the first cheapest wins (zero cannot be beaten).
        let mut best = (None, plain);
        for w in windows() {
            let steps = steps_under(&terms, d, Some(w));
            if cost(&steps) < cost(&best.1) {
                let done = cost(&steps) == 0;
                best = (Some(w), steps);
                if done {
                    break;
                }
            }
        }
        return best;
    }
    let picks: Vec<usize> = (0..SAMPLE).map(|s| s * all / SAMPLE).collect();
    let sample_cost = |w: Window| -> u64 { picks.iter().map(|&e| step_bits(step_from(d[e], terms.reference(e / c.n, e % c.n, w), c.d_fmt, true))).sum() };
    let mut ranked: Vec<(u64, usize, Window)> = windows().enumerate().map(|(i, w)| (sample_cost(w), i, w)).collect();
    ranked.sort_unstable_by_key(|&(k, i, _)| (k, i));
    ranked.into_iter().take(FINALISTS).map(|(_, _, w)| (Some(w), steps_under(&terms, d, Some(w)))).fold((None, plain), |best, next| if cost(&next.1) < cost(&best.1) { next } else { best })
}

/// Whether the case is exactly what [`gen::case_at`] makes for its recorded seed, or what the
/// first recordings' stream makes from its `"gen_state"` ([`first_gen`](super::first_gen)).
fn regenerable(c: &MmaCase, p: &PathSpec) -> Option<(u64, u64)> {
    let seed = c.extra.get("seed")?.as_array()?;
    if c.d_fmt != p.d_fmt() {
        return None;
    }
    if let Some(state) = c.extra.get("gen_state") {
        let again = super::first_gen::case_from_state(state.as_str()?, p.a_fmt, p.c_fmt, (p.m, p.n, p.k))?;
        let same = (p.a_fmt, p.a_fmt, p.c_fmt, p.m, p.n, p.k) == (c.a_fmt, c.b_fmt, c.c_fmt, c.m, c.n, c.k) && (again.a == c.a && again.b == c.b && again.c == c.c);
        return same.then_some((seed.first()?.as_u64()?, seed.get(1)?.as_u64()?));
    }
    let (s, i) = (seed.first()?.as_u64()?, seed.get(1)?.as_u64()?);
    if seed.len() != 2 || (p.a_fmt, p.c_fmt, p.m, p.n, p.k) != (c.a_fmt, c.c_fmt, c.m, c.n, c.k) {
        return None;
    }
    let again = crate::gen::case_at(p, s, i);
    (again.a == c.a && again.b == c.b && again.c == c.c && again.meta == c.meta && again.scales == c.scales).then_some((s, i))
}

/// One corpus line for a recorded tile. `path` (when known) lets a generated tile be stored by
/// reference; `compact_d` stores D as steps (the recorder's bulk) rather than as hex (kept for
/// promoted findings, which people read).
pub fn encode_line(c: &MmaCase, d: &[u64], path: Option<&PathSpec>, compact_d: bool) -> String {
    let mut obj = match path.and_then(|p| regenerable(c, p)) {
        Some(_) => {
            let mut obj = Map::new();
            for (k, v) in &c.extra {
                obj.insert(k.clone(), v.clone());
            }
            obj.insert("inputs".into(), inputs_hash(c).into());
            obj
        }
        None => c.to_json(),
    };
    obj.shift_remove("d");
    obj.shift_remove("d_steps");
    obj.shift_remove("d_ref");
    if compact_d {
        let (window, steps) = best_steps(c, d);
        if let Some(w) = window {
            obj.insert("d_ref".into(), if w.field { json!([w.terms, w.sum, "field"]) } else { json!([w.terms, w.sum]) });
        }
        obj.insert("d_steps".into(), json!(steps));
    } else {
        obj.insert("d".into(), Value::Array(d.iter().map(|&x| crate::case::hex(x, c.d_fmt).into()).collect()));
    }
    Value::Object(obj).to_string()
}

/// Read one corpus line of the file for `path` back into the tile and the GPU's D.
pub fn decode_line(line: &str, path: Option<&PathSpec>) -> Result<(MmaCase, Vec<u64>), FieldError> {
    let obj: Map<String, Value> = serde_json::from_str(line).map_err(|e| err("line", format!("not a JSON object: {e}")))?;
    let mut case = if obj.contains_key("a") {
        MmaCase::from_json(obj)?
    } else {
        let p = path.ok_or_else(|| err("a", "missing, and the file's name is no known path to regenerate the tile from"))?;
        let seed = obj.get("seed").and_then(|s| s.as_array()).filter(|s| s.len() == 2);
        let (s, i) = seed
            .and_then(|s| Some((s[0].as_u64()?, s[1].as_u64()?)))
            .ok_or_else(|| err("seed", "a tile without \"a\" needs \"seed\": [seed, index]"))?;
        let mut case = match obj.get("gen_state") {
            None => crate::gen::case_at(p, s, i),
            Some(state) => state
                .as_str()
                .and_then(|state| super::first_gen::case_from_state(state, p.a_fmt, p.c_fmt, (p.m, p.n, p.k)))
                .ok_or_else(|| err("gen_state", format!("{state} is no generator state (64 hex digits, not all zero)")))?,
        };
        let want = obj.get("inputs").and_then(|h| h.as_str()).ok_or_else(|| err("inputs", "missing (the hash of the regenerated inputs)"))?;
        let got = inputs_hash(&case);
        if got != want {
            return Err(err("inputs", format!("tile [{s}, {i}] regenerates to hash {got}, recorded {want}: the generator has changed since recording; record with the generator that made it")));
        }
        for (k, v) in obj {
            if k != "inputs" {
                case.extra.insert(k, v);
            }
        }
        case
    };
    let window = match case.extra.shift_remove("d_ref") {
        None => None,
        Some(w) => {
            let part = |x: &Value| if x.is_null() { Some(None) } else { x.as_i64().filter(|b| (1..=60).contains(b)).map(|b| Some(b as i32)) };
            let field = |a: &[Value]| match a.get(2) {
                None => Some(false),
                Some(v) => (v == "field").then_some(true),
            };
            let pair = w.as_array().filter(|a| (2..=3).contains(&a.len())).and_then(|a| Some(Window { terms: part(&a[0])?, sum: part(&a[1])?, field: field(a)? }));
            Some(pair.ok_or_else(|| err("d_ref", format!("{w} is no window ([term bits, sum bits], each null or 1 to 60, then \"field\" for field alignment)")))?)
        }
    };
    let d = match case.extra.shift_remove("d_steps") {
        Some(steps) => {
            let steps: Vec<i64> = steps
                .as_array()
                .and_then(|a| a.iter().map(|x| x.as_i64()).collect::<Option<Vec<i64>>>())
                .ok_or_else(|| err("d_steps", "expected an array of integers"))?;
            if steps.len() != case.m * case.n {
                return Err(err("d_steps", format!("has {} elements, shape needs {}", steps.len(), case.m * case.n)));
            }
            steps_to_d(&case, &steps, window)
        }
        None => case.recorded_d()?.ok_or_else(|| err("d", "missing: not a recorded case"))?,
    };
    case.extra.shift_remove("d");
    Ok((case, d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn path(id: &str) -> &'static PathSpec {
        crate::exec::path_by_id(id).unwrap()
    }

    /// Integer D round-trips through steps whether it wrapped or saturated: 0 steps from the
    /// reference modulo 2^32 when it wrapped around, a few from the clamped reference (a window
    /// line) when it saturated.
    #[test]
    fn integer_results_step_from_the_wrapped_reference() {
        use crate::format::Overflow;
        let p = path("mma.m16n8k32.s32.s8.s8.s32");
        let mut wrapped_steps = 0;
        for i in 0..40 {
            let case = crate::gen::case_at(p, 9, i);
            let exact: Vec<i128> = (0..case.m * case.n)
                .map(|e| (0..case.k).fold(Format::S32.int_value(case.c[e]) as i128, |s, kk| s + (Format::S8.int_value(case.a_at(e / case.n, kk)) * Format::S8.int_value(case.b_at(kk, e % case.n))) as i128))
                .collect();
            for ovf in [Overflow::Wrap, Overflow::Saturate] {
                let d: Vec<u64> = exact.iter().map(|&v| Format::S32.int_bits(v, ovf)).collect();
                // Any window clamps; this one cuts nothing (the encoder's first).
                let window = (ovf == Overflow::Saturate).then_some(Window::default());
                let steps = d_to_steps(&case, &d, window);
                assert_eq!(steps_to_d(&case, &steps, window), d);
                assert_eq!(steps_to_d(&case, &d_to_steps(&case, &d, None), None), d, "every anchor decodes");
                assert!(steps.iter().all(|s| s.abs() <= 3), "{ovf:?}: {steps:?}");
                if ovf == Overflow::Wrap {
                    wrapped_steps += steps.iter().filter(|&&s| s != 0).count();
                }
            }
        }
        assert_eq!(wrapped_steps, 0);
    }

    /// Every pattern of every output format survives the order key both ways, and the key
    /// orders values as the format does.
    #[test]
    fn order_keys_are_a_monotone_bijection() {
        for f in [Format::F16, Format::Bf16, Format::E4m3] {
            let mut by_key: Vec<(i64, u64)> = (0..=f.mask()).map(|b| (order_key(b, f), b)).collect();
            assert!(by_key.iter().all(|&(k, b)| from_order_key(k, f) == b));
            by_key.sort();
            let finite: Vec<f64> = by_key.iter().map(|&(_, b)| f.to_f64(b)).filter(|v| !v.is_nan()).collect();
            assert!(finite.windows(2).all(|w| w[0] <= w[1]), "{f:?}");
            assert_eq!(by_key.windows(2).filter(|w| w[1].0 != w[0].0 + 1).count(), 0, "{f:?}: keys are consecutive");
        }
        for x in [0u64, 1 << 63, u64::MAX, 0x7ff8_0000_0000_0000, 0x8000_0000_0000_0001] {
            assert_eq!(from_order_key(order_key(x, Format::F64), Format::F64), x);
        }
    }

    /// The codec's own truncation is the library's, sign of zero included, at and around 2^52
    /// and on random non-NaN doubles of every magnitude.
    #[test]
    fn trunc_is_the_library_trunc() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let edges = [0.0, -0.0, 0.5, -0.5, 1.0, -1.999, 4_503_599_627_370_495.5, 4_503_599_627_370_496.0, -4_503_599_627_370_497.0, 9.3e18, -9.3e18, 1e300, f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE];
        // (NaN never reaches it: the codec truncates finite values only.)
        let random = (0..100_000).map(|_| f64::from_bits(rng.gen::<u64>())).filter(|x| !x.is_nan());
        for x in edges.into_iter().chain(random) {
            assert_eq!(trunc(x).to_bits(), x.trunc().to_bits(), "{x:e}");
        }
        assert!(trunc(f64::NAN).is_nan());
    }

    /// The floor search agrees with f32's own ordering: the result is at most r and the next
    /// pattern above it exceeds r.
    #[test]
    fn floor_key_brackets_the_value() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        for _ in 0..20_000 {
            let r = f64::from_bits(rng.gen::<u64>() >> rng.gen_range(0..12)) * if rng.gen() { -1.0 } else { 1.0 };
            if r.is_nan() {
                continue;
            }
            for f in [Format::F32, Format::F16, Format::F64] {
                let k = floor_key(r, f);
                assert!(f.to_f64(from_order_key(k, f)) <= r, "{f:?} {r:e}");
                if k < order_key(f.inf_bits(false), f) {
                    assert!(f.to_f64(from_order_key(k + 1, f)) > r || f.to_f64(from_order_key(k + 1, f)) == r && k + 1 == 0, "{f:?} {r:e}");
                }
            }
        }
    }

    /// Random D bit patterns (NaN payloads, signed zeros, subnormals) come back exactly from the
    /// compact form, for generated tiles stored by reference and for explicit ones.
    #[test]
    fn lines_round_trip_exactly() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
        for id in ["mma.m16n8k16.f32.f16.f16.f32", "mma.m16n8k16.f16.f16.f16.f16", "mma.m8n8k4.f64.f64.f64.f64", "wgmma.m64n8k32.f32.e5m2.e5m2"] {
            let p = path(id);
            for index in 0..20 {
                let case = crate::gen::case_at(p, 77, index);
                let d: Vec<u64> = (0..case.m * case.n).map(|_| rng.gen::<u64>() & case.c_fmt.mask()).collect();
                for compact in [false, true] {
                    let line = encode_line(&case, &d, Some(p), compact);
                    assert!(!line.contains("\"a\""), "stored by reference: {line:.80}");
                    let (back, d_back) = decode_line(&line, Some(p)).unwrap();
                    assert_eq!((&back.a, &back.b, &back.c, &d_back), (&case.a, &case.b, &case.c, &d));
                    assert_eq!(back.extra.get("recipe"), case.extra.get("recipe"));
                }
                let mut explicit = case.clone();
                explicit.extra.remove("seed");
                let line = encode_line(&explicit, &d, Some(p), true);
                assert!(line.contains("\"a\""));
                assert_eq!(decode_line(&line, None).unwrap().1, d);
            }
        }
    }

    /// A whole tile's references, computed a row at a time, are bit for bit each element's own
    /// reference (NaN for NaN): every path (sparse picks, b1 XOR pairs, block scales, wgmma widths),
    /// each kind of window, generated tiles (boundary exponents, specials, subnormals) of several recipes.
    #[test]
    fn row_references_equal_element_references() {
        let paths = crate::exec::paths::PATHS.iter().chain(crate::exec::simulated::SIMULATED);
        // No cut; term windows with and without a sum cut; a sum cut alone; field alignment.
        let plain = |terms, sum| Window { terms, sum, field: false };
        let field = |terms, sum| Window { terms: Some(terms), sum, field: true };
        let some_windows = [Window::default(), plain(Some(10), None), plain(Some(13), Some(14)), plain(None, Some(24)), field(25, None), field(27, Some(24))];
        assert!(some_windows.iter().skip(1).all(|w| windows().any(|x| x == *w)));
        for p in paths {
            for index in 0..4 {
                let case = crate::gen::case_at(p, 17, index);
                let terms = Terms::new(&case);
                for w in some_windows {
                    let rows = terms.references(w);
                    assert_eq!(rows.len(), case.m * case.n);
                    // Wide wgmma tiles: about 1,000 elements spread over every row and column.
                    let every = (rows.len() / 1000).max(1) | 1;
                    for (e, r) in rows.iter().enumerate().step_by(every) {
                        let one = terms.reference(e / case.n, e % case.n, w);
                        // A NaN's payload is not part of the reference (anchor() reads only
                        // that it is NaN; Rust leaves NaN payloads of arithmetic unspecified).
                        let same = r.to_bits() == one.to_bits() || (r.is_nan() && one.is_nan());
                        assert!(same, "{} tile {index} element {e} window {w:?}: {r} against {one}", p.id);
                    }
                }
            }
        }
    }

    /// Every window decodes random bit patterns exactly, and FP8 wgmma results (which drop the
    /// low bits of small terms) are stored under a window, with steps far smaller than plain.
    #[test]
    fn windows_round_trip_and_shrink_truncating_results() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(4);
        for id in ["mma.m16n8k16.f32.f16.f16.f32", "mma.m8n8k4.f64.f64.f64.f64", "wgmma.m64n8k32.f32.e4m3.e4m3"] {
            let p = path(id);
            for index in 0..10 {
                let case = crate::gen::case_at(p, 31, index);
                let d: Vec<u64> = (0..case.m * case.n).map(|_| rng.gen::<u64>() & case.c_fmt.mask()).collect();
                for w in windows().map(Some).chain([None]) {
                    assert_eq!(steps_to_d(&case, &d_to_steps(&case, &d, w), w), d, "{id} window {w:?}");
                }
            }
        }
        let p = path("wgmma.m64n8k32.f32.e4m3.e4m3");
        let emu = crate::model::Emulator::new(crate::Model::load("sm90:wgmma.m64n8k32.f32.e4m3.e4m3").unwrap());
        let (mut plain, mut best, mut windowed) = (0, 0, 0);
        for index in 0..40 {
            let case = crate::gen::case_at(p, 8, index);
            let d = emu.run(&case).unwrap();
            let (w, steps) = best_steps(&case, &d);
            plain += cost(&d_to_steps(&case, &d, None));
            best += cost(&steps);
            windowed += w.is_some() as usize;
            let line = encode_line(&case, &d, Some(p), true);
            assert_eq!(line.contains("d_ref"), w.is_some());
            assert_eq!(decode_line(&line, Some(p)).unwrap().1, d);
        }
        assert!(windowed >= 20 && best * 3 < plain, "{windowed} of 40 windowed, {best} vs {plain} bits");
    }

    /// Wide wgmma tiles (64 x 256) pick their window on a sample: the line still reads back
    /// every element exactly, for random D as for the model's, and the model's D steps as cheaply
    /// as under the best window tried on every element.
    #[test]
    fn wide_tiles_choose_on_a_sample_and_round_trip() {
        let p = path("wgmma.m64n256k16.f32.f16.f16");
        let emu = crate::model::Emulator::new(crate::Model::load("sm90:wgmma.m64n256k16.f32.f16.f16").unwrap());
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
        for index in 0..4 {
            let case = crate::gen::case_at(p, 12, index);
            let random: Vec<u64> = (0..case.m * case.n).map(|_| rng.gen::<u64>() & case.c_fmt.mask()).collect();
            let d = emu.run(&case).unwrap();
            for d in [&random, &d] {
                let line = encode_line(&case, d, Some(p), true);
                assert_eq!(&decode_line(&line, Some(p)).unwrap().1, d);
            }
            let (_, steps) = best_steps(&case, &d);
            let exhaustive = windows().map(|w| cost(&d_to_steps(&case, &d, Some(w)))).min().unwrap();
            assert!(cost(&steps) <= exhaustive, "tile {index}: {} bits against {exhaustive} under the best window", cost(&steps));
        }
    }

    /// Steps from the reference are small for plausible hardware results (edge-heavy generated
/// tiles: truncating hardware sits many steps from the exact sum on cancellations).
    #[test]
    fn steps_are_small_for_nearby_results() {
        let p = path("mma.m16n8k16.f32.f16.f16.f32");
        let emu = crate::model::Emulator::new(crate::Model::load("sm90:mma.m16n8k16.f32.f16.f16.f32").unwrap());
        let (mut zero, mut total) = (0, 0);
        for index in 0..200 {
            let case = crate::gen::case_at(p, 5, index);
            let d = emu.run(&case).unwrap();
            for s in d_to_steps(&case, &d, None) {
                zero += (s.abs() <= 1) as usize;
                total += 1;
            }
        }
        assert!(zero * 3 >= total * 2, "{zero} of {total} within one step");
    }

    /// A generator change since recording, a wrong-length D and a missing seed are clear
    /// errors, never a different tile.
    #[test]
    fn stale_or_malformed_lines_are_errors() {
        let p = path("mma.m16n8k16.f32.f16.f16.f32");
        let case = crate::gen::case_at(p, 1, 2);
        let line = encode_line(&case, &vec![0; 128], Some(p), true);
        let stale = line.replace(&inputs_hash(&case), "0123456789abcdef");
        assert!(decode_line(&stale, Some(p)).unwrap_err().to_string().contains("generator has changed"));
        let mut obj: Map<String, Value> = serde_json::from_str(&line).unwrap();
        obj["d_steps"].as_array_mut().unwrap().pop();
        assert!(decode_line(&Value::Object(obj).to_string(), Some(p)).unwrap_err().to_string().contains("127 elements"));
        assert!(decode_line(&line, None).unwrap_err().to_string().contains("no known path"));
        let unseeded = line.replace("\"seed\"", "\"sown\"");
        assert!(decode_line(&unseeded, Some(p)).unwrap_err().to_string().contains("seed"));
        let bad_window = line.replace("\"d_steps\"", "\"d_ref\":[0,null],\"d_steps\"");
        assert!(decode_line(&bad_window, Some(p)).unwrap_err().to_string().contains("no window"));
    }

    /// A first-recording tile (explicit, with its seed) is found in its stream, stored by its
    /// generator state, and read back exactly; a tampered state is an error.
    #[test]
    fn first_recording_tiles_are_stored_by_stream_state() {
        let p = path("wgmma.m64n8k16.f32.f16.f16");
        let stream = super::super::first_gen::stream(2026, p.a_fmt, p.c_fmt, (p.m, p.n, p.k), 6);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let mut cases: Vec<(MmaCase, Vec<u64>)> = stream
            .iter()
            .enumerate()
            .map(|(i, (_, c))| {
                let mut c = c.clone();
                c.extra.insert("seed".into(), json!([2026, i]));
                (c, (0..p.m * p.n).map(|_| rng.gen::<u32>() as u64).collect())
            })
            .collect();
        cases[3].0.a[0] ^= 1; // no longer what the stream made: stays explicit
        assert_eq!(super::super::first_gen::attach_states(&mut cases, p), 5);
        for (i, (c, d)) in cases.iter().enumerate() {
            let line = encode_line(c, d, Some(p), true);
            assert_eq!(line.contains("\"a\":["), i == 3, "{line:.200}");
            let (back, d_back) = decode_line(&line, Some(p)).unwrap();
            assert_eq!((&back.a, &back.b, &back.c, &d_back), (&c.a, &c.b, &c.c, d));
            if i != 3 {
                let state = c.extra["gen_state"].as_str().unwrap();
                let other = stream[(i + 1) % 6].0.clone();
                assert!(decode_line(&line.replace(state, &other), Some(p)).unwrap_err().to_string().contains("generator has changed"));
                assert!(decode_line(&line.replace(state, "xyz"), Some(p)).unwrap_err().to_string().contains("no generator state"));
            }
        }
    }
}
