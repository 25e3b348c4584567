//! The emulator's fast path: eight elements of one row of D at once, one per lane, in 64-bit
//! integer lanes that the compiler vectorises (AVX2 / AVX-512 chosen at run time).
//!
//! It covers the arithmetic of every published tensor-core hypothesis and of the measured sm90
//! models — exact narrow products (< 2^48), C fused into each block or added after the chain,
//! a truncating/flooring/sticky window that fits 62 bits, block sums narrowed to fewer bits.
//! Its float form also carries NaN, infinities and sums past the range as IEEE says (the f64
//! sum of a block's exact terms is NaN or infinite exactly where theirs is). Whatever a kernel
//! cannot settle (a NaN whose payload the model passes on, a zero of zero terms whose sign
//! needs the zero rules, anything non-finite in the integer form) it marks, and the general
//! path in `emulator.rs`, which is the specification, recomputes that element.

use crate::format::{Format, Overflow, Rounding};

pub(super) const LANES: usize = 8;

/// One operand prepared for lanes: normalised so a product's leading bit is known without a
/// leading-zero count.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LaneOperand {
    /// Significand with its leading one at bit `p - 1` (0 for zero).
    pub sig: u64,
    /// Exponent of the last bit of `sig`.
    pub lsb: i64,
    /// The exponent-field value (subnormals: emin), for field-sum alignment.
    pub field: i64,
    /// 1 if negative.
    pub neg: u64,
}

/// `±sig · 2^lsb` as an f64, exact for the significands (below 2^52) and exponents of narrow
/// formats. Branch-free (the sign is OR-ed in), so that lanes of it vectorise.
#[inline(always)]
pub(super) fn exact_f64(neg: bool, sig: u64, lsb: i64) -> f64 {
    let v = small_to_f64(sig) * pow2(lsb);
    f64::from_bits(v.to_bits() | ((neg as u64) << 63))
}

/// 2^e as an f64 built from its exponent field, for e in the normal range (outside it, the
/// nearest normal power: only lanes whose results are thrown away get there). Branch-free, so
/// that lanes of it vectorise.
#[inline(always)]
fn pow2(e: i64) -> f64 {
    f64::from_bits(((e + 1023).clamp(1, 2046) as u64) << 52)
}

/// The unbiased exponent of `x`'s field (a normal f64's binade; -1023 for zeros and
/// subnormals, 1024 for infinities and NaN), by bit operations that vectorise.
#[inline(always)]
fn exponent(x: f64) -> i64 {
    ((x.to_bits() >> 52) & 0x7ff) as i64 - 1023
}

/// 2^52 as f64 bits: an f64 whose last place is 1.
const TWO52: u64 = 0x4330_0000_0000_0000;

/// `x` (below 2^52) as an f64: `2^52 + x` has `x` as its fraction bits, so the conversion is an
/// OR and a subtraction, which vectorise where an integer conversion does not (AVX2).
#[inline(always)]
fn small_to_f64(x: u64) -> f64 {
    f64::from_bits(x | TWO52) - f64::from_bits(TWO52)
}

/// `|v|` of an f64 holding an integer below 2^52, as an integer: the inverse of [`small_to_f64`].
/// (NaN and infinities give meaningless values, which the callers never use.)
#[inline(always)]
fn small_from_f64(v: f64) -> u64 {
    (v.abs() + f64::from_bits(TWO52)).to_bits().wrapping_sub(TWO52)
}

impl LaneOperand {
    /// From a finite or zero value `(-1)^neg · sig · 2^lsb` of a format with precision `p`.
    pub fn new(neg: bool, sig: u64, lsb: i32, field: i32, p: u32) -> Self {
        if sig == 0 {
            return LaneOperand { neg: neg as u64, ..Default::default() };
        }
        let shift = (p - 1) as i32 - (63 - sig.leading_zeros() as i32);
        let (sig, lsb) = (sig << shift, (lsb - shift) as i64);
        LaneOperand { sig, lsb, field: field as i64, neg: neg as u64 }
    }
}

/// Eight operands of B (one k, eight columns), field by field so that lanes load as vectors.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BLanes {
    pub sig: [u64; LANES],
    pub lsb: [i64; LANES],
    pub field: [i64; LANES],
    pub neg: [u64; LANES],
}

impl BLanes {
    pub fn set(&mut self, l: usize, o: LaneOperand) {
        self.sig[l] = o.sig;
        self.lsb[l] = o.lsb;
        self.field[l] = o.field;
        self.neg[l] = o.neg;
    }
}

/// The window rule of one arithmetic.
#[derive(Clone, Copy, Debug)]
pub(super) struct Window {
    /// Accumulator precision.
    pub p: i64,
    pub extra_bits: i64,
    pub field_sum: bool,
    /// Left shift that brings every product to or above its window's last place.
    pub product_shift: u32,
    /// Mask applied to each block sum's magnitude (carry bits), or all ones.
    pub carry_mask: u64,
    /// `pa + pb - 2`: a product of normalised significands leads at bit `prod_top` or `prod_top + 1`.
    pub prod_top: u32,
    /// Lowest exponent a window may be anchored at (`align.emin_floor`), or far below any.
    pub min_key: i64,
    /// The accumulator's range is unbounded: lanes whose sum lands at or below the smallest
    /// normal binade go to the general path (above it both ranges round alike).
    pub unbounded: bool,
    /// The accumulator format each block rounds into.
    pub acc: AccFormat,
    pub rounding: Rounding,
    /// Sign of a zero sum of nonzero terms (IEEE: -0 only when rounding down).
    pub cancel_to_minus_zero: bool,
    /// What a sum past the accumulator's range becomes (`accumulator.overflow`).
    pub overflow: Overflow,
    /// The accumulator bits a NaN is written as (the model's NaN pattern), or `None` when the
    /// model passes payloads on: NaN lanes then leave the kernel.
    pub nan_bits: Option<u64>,
    /// A lane whose sum is a zero of zero terms needs the general path's sign rule; not where
    /// D's zeros are all +0 (`zero_sign = "unsigned"`), nor in a chain from +0 with C added
    /// after it (the +0 is a term of every block: the zero is +0 unless rounding down).
    pub zero_needs_rule: bool,
    /// `accumulator.precision`: each block sum is first cut to this many bits (by the
    /// accumulator's rounding, with no bound on the exponent), or 64 for none.
    pub narrow_to: i64,
}

/// What lane rounding needs of the accumulator format (f32, f16 or bf16: no ignored bits).
#[derive(Clone, Copy, Debug)]
pub(super) struct AccFormat {
    pub p: i64,
    pub min_lsb: i64,
    pub emin: i64,
    pub emax: i64,
    pub bias: i64,
    pub max_sig_at_emax: u64,
    pub sign_bit: u64,
    /// Subnormal results leave the lane (the general path flushes them).
    pub flush_subnormals: bool,
}

impl AccFormat {
    pub fn of(f: Format, flush_subnormals: bool) -> Self {
        AccFormat {
            p: f.precision() as i64,
            min_lsb: f.min_lsb_exp() as i64,
            emin: f.emin() as i64,
            emax: f.emax() as i64,
            bias: f.spec().bias as i64,
            max_sig_at_emax: f.spec().max_sig_at_emax,
            sign_bit: f.zero_bits(true),
            flush_subnormals,
        }
    }
}

/// The running value of each lane: `(-1)^neg · sig · 2^lsb`, its alignment key, and whether the
/// lane is still handled here.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Accs {
    pub sig: [u64; LANES],
    pub lsb: [i64; LANES],
    pub key: [i64; LANES],
    pub neg: [u64; LANES],
    /// The same value as an exact f64 (float kernel).
    pub val: [f64; LANES],
}

/// Block sums per lane: `sum · 2^grid`.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    sum: [i64; LANES],
    grid: [i64; LANES],
    /// Whether the lane had any nonzero term.
    any: [u64; LANES],
    /// Whether every term was finite (the float kernel sees NaN and infinities as values).
    finite: [u64; LANES],
    /// Float kernel: the block's sum in f64 (`sum` is not set): where every term is finite,
    /// the exact integer `sum`; where one is not, the block's IEEE result (NaN or an infinity:
    /// the exact products and the running value summed in f64, where finite terms cannot
    /// overflow: narrow products, f32 or narrower running values).
    total: [f64; LANES],
}

const NO_KEY: i64 = i64::MIN / 4;

/// How bits below a lane's window leave each term (the knob `align.mode`), as a constant so that
/// each kernel is compiled for one mode.
pub(super) const TRUNCATE: u8 = 0;
pub(super) const FLOOR: u8 = 1;
pub(super) const STICKY: u8 = 2;

/// The accumulator format and rounding of a float kernel, as a constant: for the common ones
/// (f32 or f16, RZ or RNE, overflow as IEEE says or to infinity, subnormals kept, neither carry
/// mask nor narrowing: every sm90 model) the block sum is rounded by a conversion compiled for
/// that one case ([`round_lanes_conv`]); `ACC_ANY` reads the rules from the window.
pub(super) const ACC_ANY: u8 = 0;
pub(super) const ACC_F32_RZ: u8 = 1;
pub(super) const ACC_F32_RNE: u8 = 2;
pub(super) const ACC_F16_RZ: u8 = 3;
pub(super) const ACC_F16_RNE: u8 = 4;

/// The `ACC_*` constant of an accumulator format and its rules (`ACC_ANY` where no conversion
/// kernel serves them).
pub(super) fn acc_kernel(w: &Window, format: Format) -> u8 {
    let plain = w.narrow_to >= 63 && w.carry_mask == u64::MAX && w.overflow != Overflow::Saturate && !w.acc.flush_subnormals && !w.unbounded;
    match (plain, format, w.rounding) {
        (true, Format::F32, Rounding::Rz) => ACC_F32_RZ,
        (true, Format::F32, Rounding::Rne) => ACC_F32_RNE,
        (true, Format::F16, Rounding::Rz) => ACC_F16_RZ,
        (true, Format::F16, Rounding::Rne) => ACC_F16_RNE,
        _ => ACC_ANY,
    }
}

/// One fused block for eight lanes: the products `a[kk] · b[kk][lane]` for `kk` in the block,
/// and each lane's running value, aligned to the lane's largest exponent, summed exactly and
/// rounded into the accumulator, which becomes the new running value. `bits` receives each
/// lane's accumulator bit pattern; a lane whose result the general path must settle (an
/// overflow, a subnormal to flush) has `live` cleared. `zero` marks lanes whose sum was exactly
/// zero: harmless mid-chain, but a final zero takes its sign from the general path's rules.
#[inline(always)]
fn block_int<const MODE: u8, const FIELD_SUM: bool>(
    a: &[LaneOperand],
    b: &[BLanes],
    acc: &mut Accs,
    w: &Window,
    live: &mut [u64; LANES],
    zero: &mut [u64; LANES],
    bits: &mut [u64; LANES],
) {
    let sums = sum_block::<MODE, FIELD_SUM>(a, b, acc, w);
    round_lanes::<false>(&sums, acc, w, live, zero, bits);
}

/// The same block through [`sum_block_float`]: A and B as exact f64 values.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_float<const MODE: u8, const FIELD_SUM: bool, const ACC: u8>(
    a: &[f64],
    b: &[[f64; LANES]],
    fa: &[f64],
    fb: &[[f64; LANES]],
    acc: &mut Accs,
    floor: f64,
    w: &Window,
    live: &mut [u64; LANES],
    zero: &mut [u64; LANES],
    bits: &mut [u64; LANES],
) {
    let sums = sum_block_float::<MODE, FIELD_SUM>(a, b, fa, fb, acc, floor, w);
    if ACC != ACC_ANY {
        round_lanes_conv::<ACC>(&sums, acc, w, live, zero, bits);
    } else if w.narrow_to >= 63 && w.carry_mask == u64::MAX {
        round_lanes_f64(&sums, acc, w, live, zero, bits);
    } else {
        round_lanes::<true>(&sums, acc, w, live, zero, bits);
    }
}

/// The same block sum computed in f64, for truncating or flooring windows aligned by leading
/// bits: every product of narrow significands is exact in f64, scaling by `2^-grid` is exact,
/// `trunc`/`floor` drop exactly the bits below the window, and the sum of at most 2^8 terms of
/// at most 2^44 stays an exact integer. Fewer operations per term than the integer form.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn sum_block_float<const MODE: u8, const FIELD_SUM: bool>(a: &[f64], b: &[[f64; LANES]], fa: &[f64], fb: &[[f64; LANES]], acc: &Accs, floor: f64, w: &Window) -> Sums {
    let cut = |x: f64| if MODE == FLOOR { x.floor() } else { x.trunc() };
    // One `maxpd`: a NaN product never wins, and a NaN already in `m` stays. Neither matters:
    // a NaN term makes the block's f64 sum NaN in pass 2, which is what sends the lane away.
    let max = |m: f64, t: f64| if t > m { t } else { m };
    // Pass 1: the largest magnitude of each lane; its exponent is the largest leading bit.
    // Two interleaved chains (even and odd k) halve the dependency on max's latency.
    // Field-sum keys: `fa`/`fb` hold 2^field of each operand (0 for zeros, the magnitude for
    // NaN and infinities: never negative), so a product of them has the product's key as its
    // exponent; the running value's key is its exponent field in its format (subnormals: emin),
    // `floor` being 2^emin of that format (C's before the first block, the accumulator's after).
    let key = |x: f64| if FIELD_SUM { x } else { x.abs() };
    let (mut m0, mut m1) = ([0f64; LANES], [0f64; LANES]);
    for l in 0..LANES {
        let v = acc.val[l].abs();
        m0[l] = if FIELD_SUM && v != 0.0 && v < floor { floor } else { v };
    }
    let (ka, kb) = if FIELD_SUM { (fa, fb) } else { (a, b) };
    let pairs = a.len() / 2;
    // (Pairs as chunks, not indices: no bounds check per pair.)
    for (x, r) in ka[..2 * pairs].chunks_exact(2).zip(kb[..2 * pairs].chunks_exact(2)) {
        let (x0, x1, r0, r1) = (x[0], x[1], &r[0], &r[1]);
        for l in 0..LANES {
            m0[l] = max(m0[l], key(x0 * r0[l]));
            m1[l] = max(m1[l], key(x1 * r1[l]));
        }
    }
    if a.len() % 2 == 1 {
        let (x, r) = (ka[a.len() - 1], &kb[a.len() - 1]);
        for l in 0..LANES {
            m0[l] = max(m0[l], key(x * r[l]));
        }
    }
    let drop_below = w.p - 1 + w.extra_bits;
    let mut out = Sums::default();
    let mut scale = [0f64; LANES];
    let (mut s0, mut s1) = ([0f64; LANES], [0f64; LANES]);
    for l in 0..LANES {
        // An infinite term makes `top` infinite (and the window so high that every finite
        // term scales to zero below); a NaN one may be missing from it (see `max`).
        let top = max(m0[l], m1[l]);
        let e = (top.to_bits() >> 52) as i64 - 1023;
        out.any[l] = (top != 0.0) as u64;
        out.grid[l] = e.max(w.min_key) - drop_below;
        scale[l] = pow2(-out.grid[l]);
        s0[l] = cut(acc.val[l] * scale[l]);
    }
    // Pass 2: scale every product onto its lane's window, drop the bits below, add (exact
    // integers, so the two chains may be added in any order).
    for (x, r) in a[..2 * pairs].chunks_exact(2).zip(b[..2 * pairs].chunks_exact(2)) {
        let (x0, x1, r0, r1) = (x[0], x[1], &r[0], &r[1]);
        for l in 0..LANES {
            s0[l] += cut(x0 * r0[l] * scale[l]);
            s1[l] += cut(x1 * r1[l] * scale[l]);
        }
    }
    if a.len() % 2 == 1 {
        let (x, r) = (a[a.len() - 1], &b[a.len() - 1]);
        for l in 0..LANES {
            s0[l] += cut(x * r[l] * scale[l]);
        }
    }
    for l in 0..LANES {
        // Scaled finite terms stay finite integers below 2^52, so the f64 sum is the block's
        // exact sum, and NaN or an infinity exactly where IEEE addition of the block's terms
        // is (NaN operands, inf·0, inf - inf, an infinite running value). The integer form of
        // the sum is made where it is needed ([`round_lanes`]).
        out.total[l] = s0[l] + s1[l];
        out.finite[l] = out.total[l].is_finite() as u64;
    }
    out
}

/// Round each lane's block sum into the accumulator format (IEEE rounding, subnormals kept).
/// Written as selects over all lanes (no branch per lane) so that it vectorises. `FLOAT`: the
/// float kernel, whose running values are f64 and may be NaN or infinite; its lanes keep
/// special results and sums past the range, which the integer kernel gives to the general path.
#[inline(always)]
fn round_lanes<const FLOAT: bool>(s: &Sums, acc: &mut Accs, w: &Window, live: &mut [u64; LANES], zero: &mut [u64; LANES], bits: &mut [u64; LANES]) {
    let f = &w.acc;
    let is = |r: Rounding| (w.rounding == r) as u64;
    let (rne, rna, ru, rd, ra) = (is(Rounding::Rne), is(Rounding::Rna), is(Rounding::Ru), is(Rounding::Rd), is(Rounding::Ra));
    let always_inf = (w.overflow == Overflow::Infinity) as u64;
    let never_inf = (w.overflow == Overflow::Saturate) as u64;
    let inf_bits = ((2 * f.bias + 1) as u64) << (f.p - 1);
    let max_sig = f.max_sig_at_emax;
    let max_lsb = f.emax - f.p + 1;
    let (nan_ok, nan_bits) = (w.nan_bits.is_some() as u64, w.nan_bits.unwrap_or(0));
    // |sum| < 2^62: the window check keeps every sum well inside i64 (the float kernel's
    // finite sums are below 2^52). Narrowed first where the model says so (a loop of its own,
    // so that the common case pays nothing for it).
    // The float kernel's sums come as f64 integers below 2^52 (see `sum_block_float`), whose
    // magnitude needs no conversion instruction.
    let sums: [i64; LANES] = if FLOAT {
        std::array::from_fn(|l| {
            let mag = (small_from_f64(s.total[l]) & w.carry_mask) as i64;
            if s.total[l] < 0.0 { mag.wrapping_neg() } else { mag }
        })
    } else {
        s.sum
    };
    let (mut mags, mut grids) = (sums.map(|v| v.unsigned_abs()), s.grid);
    if w.narrow_to < 63 {
        for l in 0..LANES {
            (mags[l], grids[l]) = narrow(mags[l], grids[l], w.narrow_to, (sums[l] < 0) as u64, (rne, rna, ru, rd, ra));
        }
    }
    for l in 0..LANES {
        let neg = (sums[l] < 0) as u64;
        let (mag, grid) = (mags[l], grids[l]);
        let len = bit_len::<FLOAT>(mag);
        let q = (grid + len - f.p).max(f.min_lsb);
        let shift = q - grid;
        let rs = shift.clamp(0, 63) as u64;
        let kept = if shift < 0 { mag << ((-shift).clamp(0, 63) as u64) } else { mag >> rs };
        // The discarded part against half a unit of the kept last place (none when shift <= 0).
        let rem = mag & ((1u64 << rs) - 1);
        let half = (1u64 << rs) >> 1;
        let rounds = (shift > 0) as u64;
        let inexact = (rem != 0) as u64;
        let (gt, eq) = ((rem > half) as u64, (rem == half) as u64);
        let up = rounds
            & ((rne & (gt | (eq & kept & 1)))
                | (rna & (gt | eq))
                | (ru & inexact & (neg ^ 1))
                | (rd & inexact & neg)
                | (ra & inexact));
        let kept = kept + up;
        let carry = kept >> f.p;
        let kept = kept >> carry;
        let q = q + carry as i64;
        let top = q - 1 + bit_len::<FLOAT>(kept);
        let subnormal = (kept >> (f.p - 1) == 0) as u64;
        let nonzero = (mag != 0) as u64;
        let overflow = (top > f.emax || (top == f.emax && kept > f.max_sig_at_emax)) as u64 & nonzero;
        let low = (top <= f.emin) as u64;
        // Past the range: infinity or the largest finite value, as `Format::overflow_bits`.
        let to_inf = always_inf | ((never_inf ^ 1) & (rne | rna | ra | (ru & (neg ^ 1)) | (rd & neg)));
        let saturates = overflow & (to_inf ^ 1) == 1;
        let (kept, q) = if saturates { (max_sig, max_lsb) } else { (kept, q) };
        let top = if saturates { f.emax } else { top };
        let inf = overflow & to_inf;
        let special = (s.finite[l] ^ 1) * FLOAT as u64;
        let nan = special & s.total[l].is_nan() as u64;
        let keeps_inf = FLOAT as u64;
        live[l] &= ((inf & (keeps_inf ^ 1)) ^ 1)
            & ((nan & (nan_ok ^ 1)) ^ 1)
            & ((f.flush_subnormals as u64 & subnormal & nonzero & (special ^ 1)) ^ 1)
            & ((w.unbounded as u64 & (low | overflow) & nonzero & (special ^ 1)) ^ 1)
            & (s.finite[l] | special);
        // A zero sum of nonzero terms has a fixed sign; a block of zeros only needs their signs
        // if it is the last one (the general path has them), and then only where
        // `zero_needs_rule` says so.
        zero[l] = (nonzero ^ 1) & (s.any[l] ^ 1) & w.zero_needs_rule as u64;
        let neg = if nonzero == 1 { neg } else { w.cancel_to_minus_zero as u64 };
        let biased = if subnormal == 1 { 0 } else { (q + f.p - 1 + f.bias) as u64 };
        let frac = kept & ((1u64 << (f.p - 1)) - 1);
        let finite_bits = (neg * f.sign_bit) | (biased << (f.p - 1)) | frac;
        let special_neg = (s.total[l].is_sign_negative() as u64) & (nan ^ 1);
        bits[l] = if nan == 1 {
            nan_bits
        } else if special == 1 {
            (special_neg * f.sign_bit) | inf_bits
        } else if inf == 1 {
            (neg * f.sign_bit) | inf_bits
        } else {
            finite_bits
        };
        // The float kernel's next block reads the running value as an f64 alone; the integer
        // kernel's, as its fields.
        if FLOAT {
            let inf_val = if neg == 1 { f64::NEG_INFINITY } else { f64::INFINITY };
            acc.val[l] = if special == 1 { s.total[l] } else if inf == 1 { inf_val } else { exact_f64(neg == 1, kept, q) };
        } else {
            acc.sig[l] = kept;
            acc.lsb[l] = q;
            acc.neg[l] = neg;
            acc.key[l] = if w.field_sum { if subnormal == 1 { f.emin } else { q + f.p - 1 } } else { top };
        }
    }
}

/// [`round_lanes`] for the float kernel where the block sum needs neither a carry mask nor
/// narrowing (every sm90 model): the rounding done in f64 itself. The exact sum `v · 2^grid`
/// is an f64; scaled so that the accumulator's last place is 1, it is rounded to an integer by
/// one rounding instruction (`trunc`, `round_ties_even`, `floor`, `ceil`), scaled back (exact),
/// and encoded from the f64's fields. Same results as [`round_lanes`], lane for lane (a unit
/// test compares them on every rounding, overflow rule and accumulator format).
#[inline(always)]
fn round_lanes_f64(s: &Sums, acc: &mut Accs, w: &Window, live: &mut [u64; LANES], zero: &mut [u64; LANES], bits: &mut [u64; LANES]) {
    let f = &w.acc;
    let r = w.rounding;
    let (rne, rna, ru, rd, ra) = (r == Rounding::Rne, r == Rounding::Rna, r == Rounding::Ru, r == Rounding::Rd, r == Rounding::Ra);
    let max_finite = small_to_f64(f.max_sig_at_emax) * pow2(f.emax - f.p + 1);
    let min_normal = pow2(f.emin);
    let inf_bits = ((2 * f.bias + 1) as u64) << (f.p - 1);
    let frac_mask = (1u64 << (f.p - 1)) - 1;
    let to_inf_up = w.overflow == Overflow::Infinity || (w.overflow != Overflow::Saturate && (rne || rna || ra || ru));
    let to_inf_down = w.overflow == Overflow::Infinity || (w.overflow != Overflow::Saturate && (rne || rna || ra || rd));
    for l in 0..LANES {
        let v = s.total[l];
        let special = s.finite[l] ^ 1;
        let nonzero = (v != 0.0) as u64;
        let neg = if nonzero == 1 { v < 0.0 } else { w.cancel_to_minus_zero };
        // The exact value (a normal f64: the window's last place is far above f64's smallest),
        // then on the grid of the accumulator's last place at its binade (or the subnormals').
        let x = v * pow2(s.grid[l]);
        let q = (exponent(x) - f.p + 1).max(f.min_lsb);
        let y = x * pow2(-q);
        let t = y.trunc();
        let away = t + if y < 0.0 { -1.0 } else { 1.0 };
        let rounded = if rne {
            y.round_ties_even()
        } else if rna {
            // Half away from zero: up where the discarded part is at least half.
            if (y - t).abs() >= 0.5 { away } else { t }
        } else if ru {
            y.ceil()
        } else if rd {
            y.floor()
        } else if ra {
            if y != t { away } else { t }
        } else {
            t
        };
        let z = rounded * pow2(q);
        let az = z.abs();
        let overflow = (az > max_finite) as u64 & nonzero;
        let to_inf = if neg { to_inf_down } else { to_inf_up } as u64;
        let inf = overflow & to_inf;
        let z = if overflow & (to_inf ^ 1) == 1 { max_finite } else { az };
        let subnormal = (z < min_normal) as u64;
        let low = (exponent(z) <= f.emin) as u64;
        let nan = special & v.is_nan() as u64;
        live[l] &= ((f.flush_subnormals as u64 & subnormal & nonzero & (special ^ 1)) ^ 1)
            & ((w.unbounded as u64 & (low | overflow) & nonzero & (special ^ 1)) ^ 1)
            & ((nan & w.nan_bits.is_none() as u64) ^ 1);
        zero[l] = (nonzero ^ 1) & (s.any[l] ^ 1) & w.zero_needs_rule as u64;
        // Encoded from the f64's fields: exponent and leading fraction bits where normal, the
        // value in units of the smallest subnormal where not (zero included).
        let normal_bits = (((exponent(z) + f.bias) as u64) << (f.p - 1)) | ((z.to_bits() >> (53 - f.p)) & frac_mask);
        let sub_bits = small_from_f64(z * pow2(-f.min_lsb));
        let sign = neg as u64 * f.sign_bit;
        bits[l] = if nan == 1 {
            w.nan_bits.unwrap_or(0)
        } else if special == 1 {
            (v.is_sign_negative() as u64 * f.sign_bit) | inf_bits
        } else if inf == 1 {
            sign | inf_bits
        } else if subnormal == 1 {
            sign | sub_bits
        } else {
            sign | normal_bits
        };
        let signed = if neg { -z } else { z };
        acc.val[l] = if special == 1 {
            v
        } else if inf == 1 {
            signed * f64::INFINITY
        } else {
            signed
        };
    }
}

/// [`round_lanes_f64`] for one accumulator format and rounding known when compiled (`ACC`, not
/// `ACC_ANY`; the window's other rules as [`acc_kernel`] requires them). The exact sum is
/// rounded by a conversion: into f32 to nearest by the f64 -> f32 conversion itself (one
/// instruction, subnormals and overflow included), toward zero by clearing the f64's bits below
/// f32's last place (the subnormals on their own grid); into f16 on its grid in f64. The bits
/// come from the f32 value. Same results as [`round_lanes`] (unit test).
#[inline(always)]
fn round_lanes_conv<const ACC: u8>(s: &Sums, acc: &mut Accs, w: &Window, live: &mut [u64; LANES], zero: &mut [u64; LANES], bits: &mut [u64; LANES]) {
    let f16 = ACC == ACC_F16_RZ || ACC == ACC_F16_RNE;
    let rz = ACC == ACC_F32_RZ || ACC == ACC_F16_RZ;
    let (nan_bits, nan_leaves) = (w.nan_bits.unwrap_or(0), w.nan_bits.is_none() as u64);
    // Where a finite sum past the largest finite value goes rounding toward zero: to it (IEEE)
    // or to infinity (`overflow = "infinity"`). (To nearest, both rules give infinity.)
    let past = |largest: f64| if w.overflow == Overflow::Infinity { f64::INFINITY } else { largest };
    for l in 0..LANES {
        let v = s.total[l];
        // All ones where NaN: the selects below are masks, which keep the loop free of
        // branches (as a bool, the compiler branched around the work for NaN lanes, and the
        // loop was not vectorised).
        let nan = 0u64.wrapping_sub(((v.to_bits() & !(1 << 63)) > f64::INFINITY.to_bits()) as u64);
        // The exact value (see `round_lanes_f64`); adding +0 makes a zero sum +0, the sign of
        // an exact zero sum of nonzero terms when not rounding down. Infinities stay.
        let x = v * pow2(s.grid[l]) + 0.0;
        let finite = x.abs() < f64::INFINITY;
        let r = if f16 {
            // On f16's grid at x's binade (or the subnormals'), as round_lanes_f64 does.
            let q = (exponent(x) - 10).max(-24);
            let y = x * pow2(-q);
            let z = if rz { y.trunc() } else { y.round_ties_even() } * pow2(q);
            // Past f16's largest finite: to nearest an infinity, toward zero `past`.
            let big = (z.abs() > 65504.0) & finite;
            let top = if rz { past(65504.0) } else { f64::INFINITY };
            if big { top.copysign(z) } else { z }
        } else if rz {
            // Bits below f32's last place cleared (a normal f32's place; the subnormals' grid
            // below 2^-126); past the range, `past`.
            let cut = f64::from_bits(x.to_bits() & !((1u64 << 29) - 1));
            let sub = (x * pow2(149)).trunc() * pow2(-149);
            let t = if x.abs() < pow2(-126) { sub } else { cut };
            let big = (t.abs() > f32::MAX as f64) & finite;
            if big { past(f32::MAX as f64).copysign(t) } else { t }
        } else {
            x as f32 as f64
        };
        // r is exact in f32 (an f16 value too), or an infinity.
        let b32 = (r as f32).to_bits() as u64;
        let enc = if f16 {
            let a = r.abs();
            let normal = ((b32 & 0x7fff_ffff) >> 13).wrapping_sub((127 - 15) << 10);
            let sub = small_from_f64(a * pow2(24));
            let mag = if a == f64::INFINITY {
                0x7c00
            } else if a < pow2(-14) {
                sub
            } else {
                normal
            };
            ((b32 >> 31) << 15) | mag
        } else {
            b32
        };
        bits[l] = (enc & !nan) | (nan_bits & nan);
        acc.val[l] = f64::from_bits((r.to_bits() & !nan) | (v.to_bits() & nan));
        live[l] &= (nan & nan_leaves) ^ 1;
        zero[l] = ((x == 0.0) as u64) & (s.any[l] ^ 1) & w.zero_needs_rule as u64;
    }
}

/// The number of significant bits of `x` (0 for 0). The float kernel's values are below 2^52,
/// where an f64 gives it without a leading-zero count (which AVX2 has no vector form of).
#[inline(always)]
fn bit_len<const FLOAT: bool>(x: u64) -> i64 {
    if FLOAT {
        // x as an f64, whose exponent is its leading bit.
        ((small_to_f64(x).to_bits() >> 52) as i64 - 1022).max(0)
    } else {
        64 - x.leading_zeros() as i64
    }
}

/// `mag · 2^grid` rounded to `bits` significant bits (no bound on the exponent) by the rounding
/// the flags select: the magnitude and its new grid. Nothing changes for `bits` >= 63.
#[inline(always)]
fn narrow(mag: u64, grid: i64, bits: i64, neg: u64, (rne, rna, ru, rd, ra): (u64, u64, u64, u64, u64)) -> (u64, i64) {
    let len = 64 - mag.leading_zeros() as i64;
    let shift = (len - bits).max(0);
    let rs = shift.clamp(0, 63) as u64;
    let kept = mag >> rs;
    let rem = mag & ((1u64 << rs) - 1);
    let half = (1u64 << rs) >> 1;
    let inexact = (rem != 0) as u64;
    let (gt, eq) = ((rem > half) as u64, (rem == half) as u64);
    let up = (shift > 0) as u64
        & ((rne & (gt | (eq & kept & 1))) | (rna & (gt | eq)) | (ru & inexact & (neg ^ 1)) | (rd & inexact & neg) | (ra & inexact));
    let kept = kept + up;
    // A carry out of the top makes the value a power of two: one bit fewer, same value.
    let carry = (kept >> bits.clamp(0, 63) as u64) & (shift > 0) as u64;
    (kept >> carry, grid + shift + carry as i64)
}

/// A term's magnitude on the window whose last place is `grid`, by the mode's rule, signed.
/// `s` is how many low bits of `sig` fall below the window (any sign).
#[inline(always)]
fn aligned<const MODE: u8>(sig: u64, s: i64, neg: u64) -> i64 {
    let rs = s.clamp(0, 63) as u64;
    let kept = if s <= 0 { sig << ((-s).clamp(0, 63) as u64) } else if s >= 64 { 0 } else { sig >> rs };
    let mag = if MODE == TRUNCATE {
        kept
    } else {
        let low = if s >= 64 { u64::MAX } else { (1u64 << rs) - 1 };
        let lost = ((sig & low) != 0) as u64;
        if MODE == STICKY { kept | lost } else { kept + (neg & lost) }
    };
    let negmask = neg.wrapping_neg();
    ((mag ^ negmask).wrapping_sub(negmask)) as i64
}

/// Align and add one block for eight lanes.
#[inline(always)]
fn sum_block<const MODE: u8, const FIELD_SUM: bool>(a: &[LaneOperand], b: &[BLanes], acc: &Accs, w: &Window) -> Sums {
    let mut e_max = [NO_KEY; LANES];
    for l in 0..LANES {
        e_max[l] = if acc.sig[l] != 0 { acc.key[l] } else { NO_KEY };
    }
    // Pass 1: the largest exponent of each lane.
    for (x, row) in a.iter().zip(b) {
        for l in 0..LANES {
            let sig = (x.sig & 0xffff_ffff) * (row.sig[l] & 0xffff_ffff);
            let key = if FIELD_SUM {
                x.field + row.field[l]
            } else {
                x.lsb + row.lsb[l] + w.prod_top as i64 + (sig >> (w.prod_top + 1)) as i64
            };
            let key = if sig != 0 { key } else { NO_KEY };
            e_max[l] = e_max[l].max(key);
        }
    }
    let mut out = Sums::default();
    let drop_below = w.p - 1 + w.extra_bits + (MODE == STICKY) as i64;
    for l in 0..LANES {
        out.grid[l] = e_max[l].max(w.min_key) - drop_below;
        out.any[l] = (e_max[l] != NO_KEY) as u64;
        out.finite[l] = 1;
        out.sum[l] = aligned::<MODE>(acc.sig[l], out.grid[l] - acc.lsb[l], acc.neg[l]);
    }
    // Pass 2: every product, pre-shifted left by `product_shift` so that it only ever moves
    // right to reach its lane's window (one variable shift per term).
    let pre = w.product_shift;
    for (x, row) in a.iter().zip(b) {
        for l in 0..LANES {
            let sig = ((x.sig & 0xffff_ffff) * (row.sig[l] & 0xffff_ffff)) << pre;
            let s = out.grid[l] + pre as i64 - (x.lsb + row.lsb[l]);
            out.sum[l] = out.sum[l].wrapping_add(aligned::<MODE>(sig, s, x.neg ^ row.neg[l]));
        }
    }
    for l in 0..LANES {
        let neg = out.sum[l] < 0;
        let mag = out.sum[l].unsigned_abs() & w.carry_mask;
        out.sum[l] = if neg { (mag as i64).wrapping_neg() } else { mag as i64 };
    }
    out
}

pub(super) type IntBlockFn = fn(&[LaneOperand], &[BLanes], &mut Accs, &Window, &mut [u64; LANES], &mut [u64; LANES], &mut [u64; LANES]);
/// A whole tile in the float kernel's form: A row-major, B in chunks of eight columns, C, each
/// an exact f64 (NaN and infinities stay as they are: a lane that meets one leaves the kernel).
pub(super) struct FloatTile<'a> {
    pub a: &'a [f64],
    pub b: &'a [[f64; LANES]],
    /// With field-sum alignment: 2^field of each operand of A and B, laid out as `a` and `b`
    /// (see [`sum_block_float`]); empty otherwise.
    pub fa: &'a [f64],
    pub fb: &'a [[f64; LANES]],
    /// 2^emin of C's format: the smallest key C can have under field-sum alignment.
    pub c_floor: f64,
    pub c: &'a [f64],
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Products per block (k for one block) and whether the chain starts from the end of K.
    pub block_width: usize,
    pub reverse: bool,
    pub w: &'a Window,
    /// Empty when every row of A meets the same B. For 2:4 sparse tiles, the row of `b`/`fb`
    /// (a dense B of its own height) each kept value of A meets: row i's at `i·k..(i+1)·k`.
    /// The kernel gathers them per row of A and chunk of lanes, into a buffer that stays in cache.
    pub b_picks: &'a [usize],
}

/// Marks, in a tile's output, an element the general path must settle (no accumulator format
/// the float kernel serves uses bit 63).
pub(super) const GENERAL: u64 = u64::MAX;

/// Runs a whole tile, writing each element's accumulator bit pattern or [`GENERAL`].
pub(super) type FloatTileFn = fn(&FloatTile, &mut [u64]);

/// The tile driver around [`block_float`], compiled together with it so that the glue is
/// vectorised and inlined too.
#[inline(always)]
fn float_tile<const MODE: u8, const FIELD_SUM: bool, const ACC: u8>(t: &FloatTile, out: &mut [u64]) {
    let (n, k, w) = (t.n, t.k, *t.w);
    let (a_all, b_all, c_all) = (t.a, t.b, t.c);
    let nblocks = k.div_ceil(t.block_width);
    if nblocks == 1 && n % LANES == 0 && t.b_picks.is_empty() {
        return one_block_tile::<MODE, FIELD_SUM, ACC>(t, out);
    }
    // 2^emin of the accumulator: the running value's smallest field-sum key after a block.
    let acc_floor = crate::format::pow2(w.acc.emin as i32);
    let sparse = !t.b_picks.is_empty();
    let b_rows = if sparse { b_all.len() / n.div_ceil(LANES) } else { k };
    let (mut picked, mut picked_f) = (vec![[0f64; LANES]; if sparse { k } else { 0 }], vec![[0f64; LANES]; if sparse && FIELD_SUM { k } else { 0 }]);
    for i in 0..t.m {
        for j0 in (0..n).step_by(LANES) {
            let width = LANES.min(n - j0);
            let chunk = j0 / LANES;
            // This chunk's B (and its field powers) as row i meets it.
            let (b_row, fb_row): (&[[f64; LANES]], &[[f64; LANES]]) = if sparse {
                let (picks, rows) = (&t.b_picks[i * k..(i + 1) * k], chunk * b_rows);
                picked.iter_mut().zip(picks).for_each(|(x, &p)| *x = b_all[rows + p]);
                if FIELD_SUM {
                    picked_f.iter_mut().zip(picks).for_each(|(x, &p)| *x = t.fb[rows + p]);
                }
                (&picked, &picked_f)
            } else {
                (&b_all[chunk * k..(chunk + 1) * k], if FIELD_SUM { &t.fb[chunk * k..(chunk + 1) * k] } else { &[] })
            };
            let mut accs = Accs::default();
            let (mut live, mut zero, mut bits) = ([1u64; LANES], [0u64; LANES], [0u64; LANES]);
            // (Element loops of constant length where the chunk is whole: a copy of run-time
            // length is a call to memcpy, and the compiler merges two copies into one.)
            if width == LANES {
                let c = &c_all[i * n + j0..i * n + j0 + LANES];
                (0..LANES).for_each(|l| accs.val[l] = c[l]);
            } else {
                accs.val[..width].copy_from_slice(&c_all[i * n + j0..i * n + j0 + width]);
            }
            for blk in 0..nblocks {
                let floor = if blk == 0 { t.c_floor } else { acc_floor };
                let blk = if t.reverse { nblocks - 1 - blk } else { blk };
                let (k0, k1) = (blk * t.block_width, ((blk + 1) * t.block_width).min(k));
                let (a, b) = (&a_all[i * k + k0..i * k + k1], &b_row[k0..k1]);
                let (fa, fb) = if FIELD_SUM { (&t.fa[i * k + k0..i * k + k1], &fb_row[k0..k1]) } else { (a, b) };
                block_float::<MODE, FIELD_SUM, ACC>(a, b, fa, fb, &mut accs, floor, &w, &mut live, &mut zero, &mut bits);
            }
            // All eight lanes as selects, then the row's share copied (a loop over `width`
            // lanes would be scalar, with a bounds check per element).
            let got: [u64; LANES] = std::array::from_fn(|l| if live[l] == 0 || zero[l] != 0 { GENERAL } else { bits[l] });
            if width == LANES {
                let d = &mut out[i * n + j0..i * n + j0 + LANES];
                (0..LANES).for_each(|l| d[l] = got[l]);
            } else {
                out[i * n + j0..i * n + j0 + width].copy_from_slice(&got[..width]);
            }
        }
    }
}

/// [`float_tile`] where one block covers K, B is dense and its columns fill whole chunks of
/// lanes (most mma.sync shapes): each row of A, C and D and each chunk of B taken whole, with
/// no block loop and no partial chunks. Half of a small tile's per-row work was that glue
/// (bounds, widths, the block loop's slices); the arithmetic is [`block_float`]'s, the same.
#[inline(always)]
fn one_block_tile<const MODE: u8, const FIELD_SUM: bool, const ACC: u8>(t: &FloatTile, out: &mut [u64]) {
    let (n, k, w) = (t.n, t.k, *t.w);
    let rows = t.a.chunks_exact(k).zip(t.c.chunks_exact(n)).zip(out.chunks_exact_mut(n));
    for (i, ((a, c_row), d_row)) in rows.enumerate() {
        let fa = if FIELD_SUM { &t.fa[i * k..(i + 1) * k] } else { a };
        let lanes = c_row.chunks_exact(LANES).zip(d_row.chunks_exact_mut(LANES));
        for (chunk, ((c, d), b)) in lanes.zip(t.b.chunks_exact(k)).enumerate() {
            let fb = if FIELD_SUM { &t.fb[chunk * k..(chunk + 1) * k] } else { b };
            let mut accs = Accs::default();
            (0..LANES).for_each(|l| accs.val[l] = c[l]);
            let (mut live, mut zero, mut bits) = ([1u64; LANES], [0u64; LANES], [0u64; LANES]);
            block_float::<MODE, FIELD_SUM, ACC>(a, b, fa, fb, &mut accs, t.c_floor, &w, &mut live, &mut zero, &mut bits);
            (0..LANES).for_each(|l| d[l] = if live[l] == 0 || zero[l] != 0 { GENERAL } else { bits[l] });
        }
    }
}

/// A block kernel compiled for one window rule and the best instruction set of this CPU.
#[derive(Clone, Copy)]
pub(super) enum Kernel {
    Int(IntBlockFn),
    Float(FloatTileFn),
}

/// Instruction sets a kernel can be compiled for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Isa {
    Avx512,
    Avx2,
    Baseline,
}

fn int_kernel<const MODE: u8, const FIELD_SUM: bool>(isa: Isa) -> Kernel {
    Kernel::Int(match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY (both arms): `isa` was detected on this CPU, see `detect_isa`.
        Isa::Avx512 => |a, b, acc, w, live, zero, bits| unsafe { x86::int_avx512::<MODE, FIELD_SUM>(a, b, acc, w, live, zero, bits) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => |a, b, acc, w, live, zero, bits| unsafe { x86::int_avx2::<MODE, FIELD_SUM>(a, b, acc, w, live, zero, bits) },
        _ => block_int::<MODE, FIELD_SUM>,
    })
}

fn float_kernel<const MODE: u8, const FIELD_SUM: bool, const ACC: u8>(isa: Isa) -> Kernel {
    Kernel::Float(match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY (both arms): as above.
        Isa::Avx512 => |t, out| unsafe { x86::float_avx512::<MODE, FIELD_SUM, ACC>(t, out) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => |t, out| unsafe { x86::float_avx2::<MODE, FIELD_SUM, ACC>(t, out) },
        _ => float_tile::<MODE, FIELD_SUM, ACC>,
    })
}

/// The float kernel of a truncating window for each `ACC_*` constant.
fn truncating_kernel<const FIELD_SUM: bool>(isa: Isa, acc: u8) -> Kernel {
    match acc {
        ACC_F32_RZ => float_kernel::<TRUNCATE, FIELD_SUM, ACC_F32_RZ>(isa),
        ACC_F32_RNE => float_kernel::<TRUNCATE, FIELD_SUM, ACC_F32_RNE>(isa),
        ACC_F16_RZ => float_kernel::<TRUNCATE, FIELD_SUM, ACC_F16_RZ>(isa),
        ACC_F16_RNE => float_kernel::<TRUNCATE, FIELD_SUM, ACC_F16_RNE>(isa),
        _ => float_kernel::<TRUNCATE, FIELD_SUM, ACC_ANY>(isa),
    }
}

/// The block kernel for this window rule on this CPU. `float_ok`: the window is narrow enough
/// for the f64 form (see [`sum_block_float`]); `acc`: the accumulator's `ACC_*` constant
/// ([`acc_kernel`]), which truncating windows (every sm90 model) have kernels of their own for.
pub(super) fn block_kernel(mode: u8, field_sum: bool, float_ok: bool, acc: u8) -> Kernel {
    static ISA: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
    let isa = *ISA.get_or_init(detect_isa);
    match (mode, field_sum, float_ok) {
        (TRUNCATE, false, true) => truncating_kernel::<false>(isa, acc),
        (TRUNCATE, true, true) => truncating_kernel::<true>(isa, acc),
        (FLOOR, false, true) => float_kernel::<FLOOR, false, ACC_ANY>(isa),
        (FLOOR, true, true) => float_kernel::<FLOOR, true, ACC_ANY>(isa),
        (TRUNCATE, false, false) => int_kernel::<TRUNCATE, false>(isa),
        (TRUNCATE, true, false) => int_kernel::<TRUNCATE, true>(isa),
        (FLOOR, false, false) => int_kernel::<FLOOR, false>(isa),
        (FLOOR, true, false) => int_kernel::<FLOOR, true>(isa),
        (_, false, _) => int_kernel::<STICKY, false>(isa),
        (_, true, _) => int_kernel::<STICKY, true>(isa),
    }
}

fn detect_isa() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        let has = |f: &str| match f {
            "avx512" => {
                std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512vl")
                    && std::is_x86_feature_detected!("avx512dq")
                    && std::is_x86_feature_detected!("avx512cd")
                    && std::is_x86_feature_detected!("avx512bw")
            }
            _ => {
                std::is_x86_feature_detected!("avx2")
                    && std::is_x86_feature_detected!("bmi2")
                    && std::is_x86_feature_detected!("lzcnt")
            }
        };
        if has("avx512") && has("avx2") {
            return Isa::Avx512;
        }
        if has("avx2") {
            return Isa::Avx2;
        }
    }
    Isa::Baseline
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;

    type Out<'a> = &'a mut [u64; LANES];

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512cd,avx512bw,avx2,bmi1,bmi2,lzcnt,popcnt")]
    pub(super) unsafe fn int_avx512<const MODE: u8, const FIELD_SUM: bool>(a: &[LaneOperand], b: &[BLanes], acc: &mut Accs, w: &Window, live: Out, zero: Out, bits: Out) {
        block_int::<MODE, FIELD_SUM>(a, b, acc, w, live, zero, bits)
    }

    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    pub(super) unsafe fn int_avx2<const MODE: u8, const FIELD_SUM: bool>(a: &[LaneOperand], b: &[BLanes], acc: &mut Accs, w: &Window, live: Out, zero: Out, bits: Out) {
        block_int::<MODE, FIELD_SUM>(a, b, acc, w, live, zero, bits)
    }

    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512cd,avx512bw,avx2,bmi1,bmi2,lzcnt,popcnt")]
    pub(super) unsafe fn float_avx512<const MODE: u8, const FIELD_SUM: bool, const ACC: u8>(t: &FloatTile, out: &mut [u64]) {
        float_tile::<MODE, FIELD_SUM, ACC>(t, out)
    }

    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    pub(super) unsafe fn float_avx2<const MODE: u8, const FIELD_SUM: bool, const ACC: u8>(t: &FloatTile, out: &mut [u64]) {
        float_tile::<MODE, FIELD_SUM, ACC>(t, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A window over accumulator `acc` with the given rules (the fields rounding reads).
    fn window(acc: Format, rounding: Rounding, overflow: Overflow, flush: bool, unbounded: bool, zero_rule: bool) -> Window {
        Window {
            p: acc.precision() as i64,
            extra_bits: 2,
            field_sum: false,
            product_shift: 0,
            carry_mask: u64::MAX,
            prod_top: 20,
            min_key: NO_KEY,
            unbounded,
            acc: AccFormat::of(acc, flush),
            rounding,
            cancel_to_minus_zero: rounding == Rounding::Rd,
            overflow,
            nan_bits: if zero_rule { None } else { Some(0x7fff_ffff) },
            zero_needs_rule: zero_rule,
            narrow_to: 64,
        }
    }

    /// Block sums near every edge of `acc`: exact integers below 2^52 on grids around the
    /// subnormals, the binade boundaries, ties and the top of the range; zeros; NaN; infinities.
    fn sums(rng: &mut impl Rng, acc: Format) -> Sums {
        let mut s = Sums::default();
        let p = acc.precision() as i64;
        for l in 0..LANES {
            let bits = rng.gen_range(0..52);
            let mut mag: u64 = if bits == 0 { 0 } else { rng.gen_range(1u64 << (bits - 1)..1u64 << bits) };
            if rng.gen_bool(0.3) && bits > p as u32 + 1 {
                // A tie or a near-tie below the accumulator's last place.
                let low = bits as i64 - p;
                mag = (mag >> low << low) | (1 << (low - 1)) ^ rng.gen_range(0..2);
            }
            let at = match rng.gen_range(0..4) {
                0 => acc.min_lsb_exp() as i64,
                1 => acc.emax() as i64,
                // The boundary between subnormals and normals.
                2 => acc.emin() as i64,
                _ => 0,
            };
            s.grid[l] = at - bits as i64 + rng.gen_range(-4..5);
            let v = mag as f64 * if rng.gen_bool(0.5) { -1.0 } else { 1.0 };
            s.total[l] = match rng.gen_range(0..40) {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 => f64::NEG_INFINITY,
                3 => 0.0,
                _ => v,
            };
            s.finite[l] = s.total[l].is_finite() as u64;
            s.any[l] = (s.total[l] != 0.0 || rng.gen_bool(0.5)) as u64;
        }
        s
    }

    #[test]
    fn f64_rounding_is_the_integer_rounding() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let (mut compared, mut converted) = (0, 0);
        for acc in [Format::F32, Format::F16, Format::Bf16] {
            for rounding in Rounding::ALL {
                for overflow in [Overflow::Ieee, Overflow::Saturate, Overflow::Infinity] {
                    for (flush, unbounded, zero_rule) in [(false, false, false), (false, false, true), (true, false, true), (false, true, false)] {
                        let w = window(acc, rounding, overflow, flush, unbounded, zero_rule);
                        for _ in 0..400 {
                            let s = sums(&mut rng, acc);
                            let run = |f: fn(&Sums, &mut Accs, &Window, &mut [u64; LANES], &mut [u64; LANES], &mut [u64; LANES])| {
                                let (mut acc, mut live, mut zero, mut bits) = (Accs::default(), [1u64; LANES], [0u64; LANES], [0u64; LANES]);
                                f(&s, &mut acc, &w, &mut live, &mut zero, &mut bits);
                                // What the kernel keeps of a lane: nothing where it leaves.
                                let val = acc.val.map(f64::to_bits);
                                (0..LANES).map(|l| if live[l] == 0 { None } else { Some((zero[l], bits[l], val[l])) }).collect::<Vec<_>>()
                            };
                            let (want, got) = (run(round_lanes::<true>), run(round_lanes_f64));
                            assert_eq!(got, want, "{acc} {rounding:?} {overflow:?} flush {flush} unbounded {unbounded}: sums {:?} on grids {:?}", s.total, s.grid);
                            // The conversion kernels, where they serve the window.
                            let conv = match acc_kernel(&w, acc) {
                                ACC_F32_RZ => Some(run(round_lanes_conv::<ACC_F32_RZ>)),
                                ACC_F32_RNE => Some(run(round_lanes_conv::<ACC_F32_RNE>)),
                                ACC_F16_RZ => Some(run(round_lanes_conv::<ACC_F16_RZ>)),
                                ACC_F16_RNE => Some(run(round_lanes_conv::<ACC_F16_RNE>)),
                                _ => None,
                            };
                            if let Some(conv) = conv {
                                assert_eq!(conv, want, "{acc} {rounding:?} by conversion, zero rule {zero_rule}: sums {:?} on grids {:?}", s.total, s.grid);
                                converted += want.iter().filter(|x| x.is_some()).count();
                            }
                            compared += want.iter().filter(|x| x.is_some()).count();
                        }
                    }
                }
            }
        }
        assert!(compared > 100_000, "{compared} lanes kept by both");
        assert!(converted > 20_000, "{converted} lanes compared with a conversion kernel");
    }
}
