//! A probe: the inputs of one element of D (`c + Σ a_k·b_k`) placed in an otherwise zero tile.
//! What the minimiser shrinks, and what findings print in words ("c = 1, 2^-24·1 at k = 0, 1, 2").

use crate::blockscale::{BlockScales, ScaleFormat};
use crate::case::MmaCase;
use crate::format::{Class, Format};

/// One element's inputs at position (i, j) of a tile of the given shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Probe {
    pub a_fmt: Format,
    /// B's format (A's except on the mixed FP8 paths).
    pub b_fmt: Format,
    pub c_fmt: Format,
    /// D's format (C's, except on a path whose D is wider: [`MmaCase::d_fmt`]).
    pub d_fmt: Format,
    pub shape: (usize, usize, usize),
    pub i: usize,
    pub j: usize,
    /// Row i of A.
    pub a: Vec<u64>,
    /// Column j of B.
    pub b: Vec<u64>,
    pub c: u64,
    /// On a sparse tile, the dense positions along K that row i keeps: `a` holds the row's k/2
    /// kept values and `b` the elements of column j they select, term t at position `picks[t]`.
    pub picks: Option<Vec<usize>>,
    /// On a block-scaled tile, the scales of row i of A and column j of B, as a 1×1×k tile's
    /// ([`BlockScales::of_element`]); the rest of the tile's scales are 1.
    pub scales: Option<BlockScales>,
}

/// Σ |exponent| of the scales that are not 1 (NaN and zero count as 1 each).
fn scale_spread(s: &BlockScales) -> i64 {
    let one = s.fmt.one();
    s.a.iter().chain(&s.b).filter(|&&x| x != one).map(|&x| {
        let d = s.fmt.decode(x);
        if d.class == Class::Finite { (lead_exp(d.sig, d.exp) as i64).abs().max(1) } else { 1 }
    }).sum()
}

/// How simple a probe is; lower is simpler, compared field by field in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Simplicity {
    /// Nonzero terms, C counted as one.
    pub terms: usize,
    /// Set significand bits below the leading one, over every value.
    pub set_bits: u32,
    /// Distinct nonzero values.
    pub distinct: usize,
    /// Σ |exponent| of each product (leading bits of a and b added) and of C.
    pub exponents: i64,
    /// Σ |exponent| of the block scales that are not 1.
    pub scales: i64,
    /// Σ |exponent| of every value: with equal products, 1·2^-24 is simpler than 2^12·2^-36.
    pub spread: i64,
    /// Negative values.
    pub negatives: usize,
    /// Not at element (0, 0).
    pub off_origin: bool,
}

impl Probe {
    pub fn from_tile(case: &MmaCase, i: usize, j: usize) -> Probe {
        Probe {
            a_fmt: case.a_fmt,
            b_fmt: case.b_fmt,
            c_fmt: case.c_fmt,
            d_fmt: case.d_fmt,
            shape: (case.m, case.n, case.k),
            i,
            j,
            a: match case.meta {
                None => (0..case.k).map(|kk| case.a_at(i, kk)).collect(),
                Some(_) => case.a[i * case.k / 2..(i + 1) * case.k / 2].to_vec(),
            },
            b: match case.picks(i) {
                None => (0..case.k).map(|kk| case.b_at(kk, j)).collect(),
                Some(picks) => picks.iter().map(|&kk| case.b_at(kk, j)).collect(),
            },
            c: case.c_at(i, j),
            picks: case.picks(i),
            scales: case.scales.as_ref().map(|s| s.of_element(i, j, case.k, case.n)),
        }
    }

    /// The tile: zeros everywhere but row i of A, column j of B and C[i][j] (on a sparse tile,
    /// row i keeps the probe's positions and every other row the first pair of each group).
    pub fn tile(&self) -> MmaCase {
        let (m, n, k) = self.shape;
        let mut t = MmaCase::zeros(self.a_fmt, self.c_fmt, m, n, k);
        t.b_fmt = self.b_fmt;
        t.d_fmt = self.d_fmt;
        match &self.picks {
            None => {
                for kk in 0..k {
                    t.a[self.i * k + kk] = self.a[kk];
                    t.b[kk * n + self.j] = self.b[kk];
                }
            }
            Some(picks) => {
                t = crate::sparse::zeros_like(&t);
                let half = k / 2;
                let meta = t.meta.as_mut().expect("sparse");
                for (x, &kk) in picks.iter().enumerate() {
                    meta[self.i * half + x] = (kk % 4) as u8;
                    t.a[self.i * half + x] = self.a[x];
                    t.b[kk * n + self.j] = self.b[x];
                }
            }
        }
        t.c[self.i * n + self.j] = self.c;
        if let Some(ps) = &self.scales {
            let mut s = BlockScales::ones(ps.fmt, ps.block, m, n, k);
            for (t, (&sa, &sb)) in ps.a.iter().zip(&ps.b).enumerate() {
                s.a[self.i * (k / ps.block) + t] = sa;
                s.b[t * n + self.j] = sb;
            }
            t.scales = Some(s);
        }
        t
    }

    /// The dense position along K of term `t`.
    fn position(&self, t: usize) -> usize {
        self.picks.as_ref().map_or(t, |p| p[t])
    }

    /// Terms whose a or b is not +0.
    pub fn live_terms(&self) -> Vec<usize> {
        (0..self.a.len()).filter(|&kk| self.a[kk] != 0 || self.b[kk] != 0).collect()
    }

    pub fn simplicity(&self) -> Simplicity {
        let scales = self.scales.as_ref().map_or(0, scale_spread);
        let mut s = Simplicity { terms: self.live_terms().len() + (self.c != 0) as usize, set_bits: 0, distinct: 0, exponents: 0, scales, spread: 0, negatives: 0, off_origin: (self.i, self.j) != (0, 0) };
        let lead = |f: Format, x: u64| {
            let d = f.decode(x);
            if d.class == Class::Finite { lead_exp(d.sig, d.exp) as i64 } else { 0 }
        };
        s.exponents = lead(self.c_fmt, self.c).abs() + (0..self.a.len()).map(|kk| (lead(self.a_fmt, self.a[kk]) + lead(self.b_fmt, self.b[kk])).abs()).sum::<i64>();
        let mut seen = std::collections::HashSet::new();
        let values = self.a.iter().map(|&x| (self.a_fmt, x)).chain(self.b.iter().map(|&x| (self.b_fmt, x))).chain(std::iter::once((self.c_fmt, self.c)));
        for (f, x) in values {
            if x == 0 {
                continue;
            }
            let d = f.decode(x);
            seen.insert((f, x));
            s.negatives += d.neg as usize;
            if d.class == Class::Finite {
                s.set_bits += d.sig.count_ones() - 1;
                s.spread += lead_exp(d.sig, d.exp).abs() as i64;
            }
        }
        s.distinct = seen.len();
        s
    }

    /// The probe in words, like the seed papers' hand-made tests.
    pub fn describe(&self) -> String {
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for kk in self.live_terms() {
            let t = format!("{}·{}", value_text(self.a_fmt, self.a[kk]), value_text(self.b_fmt, self.b[kk]));
            match groups.iter_mut().find(|(g, _)| *g == t) {
                Some((_, ks)) => ks.push(kk),
                None => groups.push((t, vec![kk])),
            }
        }
        let mut parts = vec![format!("c = {}", value_text(self.c_fmt, self.c))];
        for (t, ks) in &groups {
            let ks: Vec<String> = ks.iter().map(|&k| self.position(k).to_string()).collect();
            let at = if ks.len() == 1 { format!("k = {}", ks[0]) } else { format!("k = {}", ks.join(", ")) };
            parts.push(format!("{t} at {at}"));
        }
        if groups.is_empty() {
            parts.push("no products".into());
        } else {
            parts.push("other products 0".into());
        }
        if let Some(ps) = &self.scales {
            let one = ps.fmt.one();
            let text = |x: u8| ps.fmt.text(x);
            let mut scaled: Vec<String> = Vec::new();
            for (t, (&sa, &sb)) in ps.a.iter().zip(&ps.b).enumerate() {
                let at = format!("k = {}..{}", t * ps.block, (t + 1) * ps.block - 1);
                if sa != one {
                    scaled.push(format!("a × {} at {at}", text(sa)));
                }
                if sb != one {
                    scaled.push(format!("b × {} at {at}", text(sb)));
                }
            }
            parts.push(if scaled.is_empty() { format!("{} scales 1", ps.fmt) } else { format!("{} scales: {}", ps.fmt, scaled.join(", ")) });
        }
        // Sparse tiles: k counts dense positions, of which the row keeps half.
        let sparse = if self.picks.is_some() { " sparse (k = kept positions)" } else { "" };
        format!("D[{},{}] of {}x{}x{}{sparse} {}->{}: {}", self.i, self.j, self.shape.0, self.shape.1, self.shape.2, self.a_fmt, self.d_fmt, parts.join("; "))
    }
}

fn lead_exp(sig: u64, exp: i32) -> i32 {
    exp + 63 - sig.leading_zeros() as i32
}

/// A value as text, exactly: `1`, `-0`, `2^-24`, `3·2^-24`, `+inf`, `NaN(7fff)`; subnormals
/// marked; integers in decimal.
pub fn value_text(f: Format, bits: u64) -> String {
    if f.is_integer() {
        // Integers in decimal: `-128`, `2147483647`.
        return f.int_value(bits).to_string();
    }
    let d = f.decode(bits);
    let sign = if d.neg { "-" } else { "" };
    match d.class {
        Class::Nan => format!("NaN({})", crate::case::hex(bits, f)),
        Class::Inf => format!("{}inf", if d.neg { "-" } else { "+" }),
        Class::Zero => format!("{sign}0"),
        Class::Finite => {
            let tz = d.sig.trailing_zeros();
            let (m, e) = (d.sig >> tz, d.exp + tz as i32);
            let decimal = format!("{}", d.sig as f64 * crate::format::pow2(d.exp));
            let top = 63 - m.leading_zeros() as i32;
            let body = if decimal.len() <= 6 && !(m == 1 && e < -3) {
                decimal.trim_start_matches('-').to_string()
            } else if m == 1 {
                format!("2^{e}")
            } else if m.count_ones() <= 3 {
                // (2^a + 2^b + 2^c): the set bits, largest first.
                let bits: Vec<String> = (0..=top).rev().filter(|b| m >> b & 1 == 1).map(|b| format!("2^{}", e + b)).collect();
                format!("({})", bits.join(" + "))
            } else {
                format!("{m}·2^{e}")
            };
            let sub = if d.sig >> (f.precision() - 1) == 0 { " (subnormal)" } else { "" };
            format!("{sign}{body}{sub}")
        }
    }
}

/// Simpler variants of one value: a power of two, each set fraction bit cleared, the sign
/// dropped, the exponent moved toward 0.
fn simpler_values(f: Format, x: u64) -> Vec<u64> {
    let d = f.decode(x);
    let mut out = Vec::new();
    match d.class {
        Class::Nan => out.push(f.nan_bits(false, 0)),
        Class::Finite => {
            let lead = lead_exp(d.sig, d.exp);
            let top = 63 - d.sig.leading_zeros();
            let mut push = |neg: bool, sig: u64, exp: i32| {
                if let Some(v) = f.encode_exact(neg, sig, exp) {
                    out.push(v);
                }
            };
            push(d.neg, 1, lead);
            for bit in 0..top {
                if d.sig >> bit & 1 == 1 {
                    push(d.neg, d.sig & !(1 << bit), d.exp);
                }
            }
            if lead != 0 {
                let step = -lead.signum();
                push(d.neg, d.sig, d.exp + step);
                // Halfway toward 0 in one go, keeping the significand.
                push(d.neg, d.sig, d.exp - lead / 2);
            }
        }
        Class::Inf | Class::Zero => {}
    }
    if d.neg && f.is_integer() {
        // |x| where the format holds it (not -2^(w-1)).
        out.extend(f.encode_exact(false, d.sig, d.exp));
    } else if d.neg {
        out.push(x & !(1u64 << (f.storage_bits() - 1)));
    }
    out.retain(|&v| v != x);
    out
}

/// `x·2^t` exactly, if representable.
fn scaled(f: Format, x: u64, t: i32) -> Option<u64> {
    let d = f.decode(x);
    match d.class {
        Class::Finite => f.encode_exact(d.neg, d.sig, d.exp + t),
        _ => Some(x),
    }
}

impl Probe {
    /// Every one-step simplification; the minimiser keeps the simplest that still diverges.
    pub fn candidates(&self) -> Vec<Probe> {
        let mut out = Vec::new();
        if (self.i, self.j) != (0, 0) {
            out.push(Probe { i: 0, j: 0, ..self.clone() });
        }
        let live = self.live_terms();
        for &kk in &live {
            let mut p = self.clone();
            p.a[kk] = 0;
            p.b[kk] = 0;
            out.push(p);
        }
        // Pairs of terms at once (a divergence may need one of two equal terms, not both).
        if live.len() <= 10 {
            for (x, &k1) in live.iter().enumerate() {
                for &k2 in &live[x + 1..] {
                    let mut p = self.clone();
                    p.a[k1] = 0;
                    p.b[k1] = 0;
                    p.a[k2] = 0;
                    p.b[k2] = 0;
                    out.push(p);
                }
            }
        }
        if self.c != 0 {
            out.push(Probe { c: 0, ..self.clone() });
            for v in simpler_values(self.c_fmt, self.c) {
                out.push(Probe { c: v, ..self.clone() });
            }
        }
        let one = self.b_fmt.encode_exact(false, 1, 0).expect("1 is representable");
        for &kk in &live {
            for v in simpler_values(self.a_fmt, self.a[kk]) {
                let mut p = self.clone();
                p.a[kk] = v;
                out.push(p);
            }
            for v in simpler_values(self.b_fmt, self.b[kk]) {
                let mut p = self.clone();
                p.b[kk] = v;
                out.push(p);
            }
            // The same product with its scale moved between a and b, or all of it in a.
            for t in [-1, 1] {
                if let (Some(a), Some(b)) = (scaled(self.a_fmt, self.a[kk], t), scaled(self.b_fmt, self.b[kk], -t)) {
                    let mut p = self.clone();
                    p.a[kk] = a;
                    p.b[kk] = b;
                    out.push(p);
                }
            }
            if let Some(prod) = exact_product(self.a_fmt, self.b_fmt, self.a[kk], self.b[kk]) {
                let mut p = self.clone();
                p.a[kk] = prod;
                p.b[kk] = one;
                out.push(p);
            }
            // Merged into an earlier term: their two products' sum (exact where one value holds
            // it, else the nearest value) as one term. Fewer terms, (nearly) the same sum.
            for &k2 in live.iter().filter(|&&x| x < kk) {
                let pair = [(self.a[k2], self.b[k2]), (self.a[kk], self.b[kk])];
                // (Only where A and B share a format: the merged term's values are of that format.)
                if let Some((a, b)) = merged_product(self.a_fmt, pair).filter(|_| self.a_fmt == self.b_fmt) {
                    let mut p = self.clone();
                    p.a[k2] = a;
                    p.b[k2] = b;
                    p.a[kk] = 0;
                    p.b[kk] = 0;
                    out.push(p);
                }
            }
            // Equal to the previous live term: fewer distinct values.
            if let Some(&prev) = live.iter().rev().find(|&&x| x < kk) {
                let mut p = self.clone();
                p.a[kk] = self.a[prev];
                p.b[kk] = self.b[prev];
                out.push(p);
            }
        }
        // A block scale set to 1, or an A scale and a B scale of one block moved toward 1 together
        // (the product unchanged).
        if let Some(ps) = &self.scales {
            let one = ps.fmt.one();
            for t in 0..ps.a.len() {
                for side in 0..2 {
                    let mut p = self.clone();
                    let q = p.scales.as_mut().expect("scaled");
                    let x = if side == 0 { &mut q.a[t] } else { &mut q.b[t] };
                    if *x != one {
                        *x = one;
                        out.push(p);
                    }
                }
                if ps.fmt == ScaleFormat::Ue8m0 && ps.a[t] != 0xff && ps.b[t] != 0xff {
                    let (ea, eb) = (ps.a[t] as i32 - 127, ps.b[t] as i32 - 127);
                    let mut p = self.clone();
                    let q = p.scales.as_mut().expect("scaled");
                    q.a[t] = (127 + ea + eb).clamp(0, 254) as u8;
                    q.b[t] = 127;
                    if (ea + eb).abs() <= 127 && (q.a[t], q.b[t]) != (ps.a[t], ps.b[t]) {
                        out.push(p);
                    }
                }
            }
        }
        // The whole element scaled by 2^t (C and every a_k), toward a largest exponent of 0.
        let lead = self.largest_exponent();
        for t in [-lead, -lead.signum(), -lead / 2] {
            if t == 0 {
                continue;
            }
            let c = scaled(self.c_fmt, self.c, t);
            let a: Option<Vec<u64>> = self.a.iter().map(|&x| scaled(self.a_fmt, x, t)).collect();
            if let (Some(c), Some(a)) = (c, a) {
                out.push(Probe { c, a, ..self.clone() });
            }
        }
        let mine = self.simplicity();
        out.retain(|p| p.simplicity() < mine);
        out.sort_by_key(|p| p.simplicity());
        out.dedup();
        out
    }

    /// Exponent of the largest finite term (products by their exponent sum) or of C.
    fn largest_exponent(&self) -> i32 {
        let lead = |f: Format, x: u64| {
            let d = f.decode(x);
            (d.class == Class::Finite).then(|| lead_exp(d.sig, d.exp))
        };
        let mut best = lead(self.c_fmt, self.c);
        for kk in 0..self.a.len() {
            if let (Some(x), Some(y)) = (lead(self.a_fmt, self.a[kk]), lead(self.b_fmt, self.b[kk])) {
                best = Some(best.map_or(x + y, |b: i32| b.max(x + y)));
            }
        }
        best.unwrap_or(0)
    }
}

/// `a1·b1 + a2·b2` as one product `a·b` of values of `f`: exact where `p` bits hold the sum,
/// else its significand rounded to nearest; the scale is split between a and b so that both
/// fit (b = 1 where it can be).
fn merged_product(f: Format, terms: [(u64, u64); 2]) -> Option<(u64, u64)> {
    let mut parts = Vec::new();
    for (a, b) in terms {
        let (da, db) = (f.decode(a), f.decode(b));
        if da.class != Class::Finite || db.class != Class::Finite {
            return None;
        }
        let sig = (da.sig as i128) * (db.sig as i128);
        parts.push((if da.neg ^ db.neg { -sig } else { sig }, da.exp + db.exp));
    }
    let lo = parts[0].1.min(parts[1].1);
    let shift = |(s, e): (i128, i32)| ((e - lo) < 60).then(|| s.checked_shl((e - lo) as u32)).flatten().filter(|v| v.unsigned_abs() < 1 << 125);
    let sum = shift(parts[0])? + shift(parts[1])?;
    if sum == 0 {
        return None;
    }
    let (neg, mut mag, mut exp) = (sum < 0, sum.unsigned_abs(), lo);
    let p = f.precision();
    let width = 128 - mag.leading_zeros();
    if width > p {
        let drop = width - p;
        let round_up = mag >> (drop - 1) & 1 == 1;
        mag = (mag >> drop) + round_up as u128;
        exp += drop as i32;
    }
    let tz = mag.trailing_zeros();
    mag >>= tz;
    exp += tz as i32;
    if mag >> p != 0 {
        return None;
    }
    let lead = exp + 127 - mag.leading_zeros() as i32;
    [0, lead / 2, lead - f.emin(), lead - f.emax()]
        .into_iter()
        .find_map(|t| Some((f.encode_exact(neg, mag as u64, exp - t)?, f.encode_exact(false, 1, t)?)))
}

/// `a·b` (a of `f`, b of `fb`) as one value of `f` when it is exactly representable (both finite).
fn exact_product(f: Format, fb: Format, a: u64, b: u64) -> Option<u64> {
    let (da, db) = (f.decode(a), fb.decode(b));
    if da.class != Class::Finite || db.class != Class::Finite {
        return None;
    }
    let sig = (da.sig as u128) * (db.sig as u128);
    let tz = sig.trailing_zeros();
    let sig = sig >> tz;
    if sig >> f.precision() != 0 {
        return None;
    }
    f.encode_exact(da.neg ^ db.neg, sig as u64, da.exp + db.exp + tz as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_and_simplifies() {
        let mut case = MmaCase::zeros(Format::F16, Format::F32, 2, 2, 4);
        case.c = vec![0, 0, 0, 0x3f80_0000];
        for kk in 0..3 {
            case.a[4 + kk] = 0x0001; // 2^-24 (subnormal f16)
            case.b[kk * 2 + 1] = 0x3c00;
        }
        let p = Probe::from_tile(&case, 1, 1);
        assert_eq!(p.describe(), "D[1,1] of 2x2x4 f16->f32: c = 1; 2^-24 (subnormal)·1 at k = 0, 1, 2; other products 0");
        assert_eq!(p.tile(), { let mut t = case.clone(); t.extra.clear(); t });
        let s = p.simplicity();
        assert_eq!((s.terms, s.set_bits, s.distinct), (4, 0, 3));
        let cands = p.candidates();
        assert!(cands.iter().all(|c| c.simplicity() < s));
        assert!(cands.iter().any(|c| (c.i, c.j) == (0, 0)));
        assert!(cands.iter().any(|c| c.live_terms().len() == 2));
        assert_eq!(value_text(Format::F32, 0xc040_0000), "-3");
        assert_eq!(value_text(Format::S32, 0x7fff_ffff), "2147483647");
        assert_eq!(value_text(Format::S8, 0x80), "-128");
        assert_eq!(value_text(Format::F16, 0x3e00), "1.5");
        assert_eq!(value_text(Format::F16, 0x3c01), "(2^0 + 2^-10)");
        assert_eq!(value_text(Format::F32, 0x3f80_0003), "(2^0 + 2^-22 + 2^-23)");
        assert_eq!(value_text(Format::F32, 0x3f80_0007), "8388615·2^-23");
        assert_eq!(exact_product(Format::F16, Format::F16, 0x3e00, 0x4000), Some(0x4200)); // 1.5·2 = 3
        // 2^-28 + 2^-28 = 2^-27: below f16's range as one value, so split as 2^-14·2^-13.
        let (a, b) = merged_product(Format::F16, [(0x0400, 0x0400); 2]).unwrap();
        assert_eq!(Format::F16.to_f64(a) * Format::F16.to_f64(b), 2f64.powi(-27));
        // 1 + 2^-11 needs 12 bits: rounded to nearest (ties up) in 11, with b = 1.
        assert_eq!(merged_product(Format::F16, [(0x3c00, 0x3c00), (0x1000, 0x3c00)]), Some((0x3c01, 0x3c00)));
    }

    /// A probe of a sparse tile holds the row's kept values and the B elements they select,
    /// names terms by their dense positions, and rebuilds a sparse tile with the same element.
    #[test]
    fn sparse_probes_keep_their_positions() {
        let path = crate::exec::path_by_id("mma.sp.m16n8k32.f32.f16.f16.f32").unwrap();
        let mut rng = <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(9);
        let case = crate::gen::path_case(&mut rng, path);
        let p = Probe::from_tile(&case, 5, 3);
        let picks = case.picks(5).unwrap();
        assert_eq!(p.picks.as_ref(), Some(&picks));
        assert_eq!(p.a.len(), 16);
        assert_eq!(p.b, picks.iter().map(|&kk| case.b_at(kk, 3)).collect::<Vec<_>>());
        let t = p.tile();
        path.check(&t).unwrap();
        assert_eq!(t.picks(5), Some(picks.clone()));
        assert_eq!(crate::exact::exact_element(&t, 5, 3), crate::exact::exact_element(&case, 5, 3));
        // One live term at dense position picks[3]: described there, not at 3.
        let mut one = p.clone();
        one.a.iter_mut().enumerate().filter(|(x, _)| *x != 3).for_each(|(_, v)| *v = 0);
        one.b.iter_mut().enumerate().filter(|(x, _)| *x != 3).for_each(|(_, v)| *v = 0);
        one.a[3] = 0x3c00;
        one.b[3] = 0x4000;
        assert!(one.describe().contains(&format!("1·2 at k = {}", picks[3])), "{}", one.describe());
        assert!(one.describe().contains("sparse"));
    }
}
