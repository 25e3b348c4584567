//! Arithmetic features: which situations of a model's arithmetic each element of D goes
//! through. Not code branches: the alignment window, the bits it drops, the carries and
//! cancellations of each fused block, where C stands against the products, what the inputs'
//! special values make of the result, and how close the exact value lies to D's rounding
//! boundaries. Guided hunts and the GPU fuzz targets keep tiles that reach new ones.
//!
//! A *situation* is one cell of a small table (a group, and one value per axis: "term product
//! edge one-bit" is a product whose leading bit lies just below the window and that loses a
//! single set bit). A tile counts, per situation, how many times its elements went through it;
//! a *feature* is a situation with the level of that count, bucketed as libFuzzer buckets its
//! counters (1, 2, 3, 4–7, 8–15, 16–31, 32–127, 128+). Many elements of one tile in one rare
//! situation is itself a situation worth keeping (every lane of a tile hitting the window floor
//! at once), which is what the levels say.

use crate::case::MmaCase;
use crate::format::{Class, Format, Overflow, Rounding};
use crate::model::{block_members, AlignExponent, AlignMode, Arithmetic, CPlacement, Operand, Subnormals, Term};
use crate::model::wide_sum;
use serde::{Deserialize, Serialize};

/// Count levels per situation (libFuzzer's counter buckets).
pub const LEVELS: usize = 8;

/// One table of situations: a name and its axes (name, values).
struct Group {
    name: &'static str,
    axes: &'static [(&'static str, &'static [&'static str])],
}

const PLACES: &[&str] = &["above", "top", "high", "low", "extra", "edge", "below", "gone"];
/// What the window drops of a term: nothing (its last set bit above the window's last place),
/// nothing but just (its last set bit in that place), a single set bit, more, or everything.
const LOSSES: &[&str] = &["none", "tight", "one-bit", "some", "all"];
const POSITIONS: &[&str] = &["only", "first", "middle", "last"];
/// Cancellation depth in places below the anchor; the deep buckets matter where the window is
/// wide (an exact adder's two precisions, f64's 106 places).
const SUMS: &[&str] = &["zero", "carry", "depth0", "depth1", "depth2-3", "depth4-7", "depth8-15", "depth16-31", "depth32-63", "depth64+"];

/// The block's anchor against the window floor of models that have one: its largest exponent
/// well above the floor, within 3 places above it, raised to the floor from up to 4 places
/// below, or from further below.
const ANCHORS: &[&str] = &["largest", "near-floor", "floor", "floor-deep"];
const COUNTS: &[&str] = &["0", "1", "2", "3-4", "5-8", "9+"];
const SPREADS: &[&str] = &["0", "1-3", "4-7", "8-15", "16-31", "32-63", "64+"];
const C_PLACES: &[&str] = &["zero", "special", "alone", "dominant", "above", "level", "below", "negligible"];
const INPUTS: &[&str] = &["finite", "inf", "inf-inf", "inf*0", "nan"];
const RESULTS: &[&str] = &["+0", "-0", "subnormal", "normal", "top-binade", "+inf", "-inf", "nan"];
const EXACTS: &[&str] = &["representable", "tie", "near-tie", "near-representable", "ordinary", "not-finite"];
/// A chained block's sum against the accumulator's grid, where it is rounded before the next
/// block takes it: a zero, then as EXACTS (bits the window dropped count as below the last
/// kept place).
const STEPS: &[&str] = &["zero", "representable", "tie", "near-tie", "near-representable", "ordinary"];
const VERDICTS: &[&str] = &["nearest", "faithful", "unfaithful", "special"];

const GROUPS: &[Group] = &[
    // Every term of a fused block: a product or the running sum (C at first), where its leading
    // bit lies against the block's anchor, and what the window drops of it.
    Group { name: "term", axes: &[("kind", &["product", "running"]), ("place", PLACES), ("lost", LOSSES), ("anchor", &["free", "floored"])] },
    // Every fused block: where it stands in the chain, what the aligned sum did (exactly zero,
    // a carry above the anchor, or cancellation this many places deep), whether the anchor was
    // raised to the window floor, and whether any term lost bits.
    Group { name: "block", axes: &[("position", POSITIONS), ("sum", SUMS), ("anchor", ANCHORS), ("bits", &["kept", "lost"])] },
    // Every block that another follows in the chain (first or middle): how its sum stands against
    // the accumulator's grid where it is rounded between blocks, and in which range.
    Group { name: "step", axes: &[("position", &["first", "middle"]), ("sum", STEPS), ("range", &["normal", "subnormal"])] },
    // Every block: its nonzero finite products and the spread of their leading exponents.
    Group { name: "spread", axes: &[("products", COUNTS), ("exponents", SPREADS)] },
    // Every element: C against its largest product (places, against the window width), and
    // whether C's sign is that of the largest product.
    Group { name: "c", axes: &[("c", C_PLACES), ("sign", &["same", "opposite"])] },
    // Every element: special values among its inputs, and the class of D.
    Group { name: "result", axes: &[("inputs", INPUTS), ("d", RESULTS)] },
    // Every element: the exact value against D's grid (ties and near ties within 1/64 ulp), D
    // against the exact value, and whether D is subnormal.
    Group { name: "rounding", axes: &[("exact", EXACTS), ("d", VERDICTS), ("range", &["normal", "subnormal"])] },
    // Every element without special inputs, end to end: the most the window dropped of any of
    // its terms, what its last block's sum did, where the exact value lies, D's verdict, and
    // where C stood against the products (as in `c`).
    Group { name: "element", axes: &[("lost", LOSSES), ("sum", SUMS), ("exact", EXACTS), ("d", VERDICTS), ("c", C_PLACES)] },
];

const fn group_size(g: &Group) -> usize {
    let mut size = 1;
    let mut a = 0;
    while a < g.axes.len() {
        size *= g.axes[a].1.len();
        a += 1;
    }
    size
}

const fn group_offset(index: usize) -> usize {
    let mut total = 0;
    let mut g = 0;
    while g < index {
        total += group_size(&GROUPS[g]);
        g += 1;
    }
    total
}

/// Each group's first situation id.
const OFFSETS: [usize; 8] = [group_offset(0), group_offset(1), group_offset(2), group_offset(3), group_offset(4), group_offset(5), group_offset(6), group_offset(7)];

/// Number of situations there are.
pub const SITUATIONS: usize = {
    let mut total = 0;
    let mut g = 0;
    while g < GROUPS.len() {
        total += group_size(&GROUPS[g]);
        g += 1;
    }
    total
};

// Situations are numbered in a u16 ([`TileCounts`], a guided population's tiles).
const _: () = assert!(SITUATIONS <= 1 << 16);

/// Number of situations there are.
pub fn situations() -> usize {
    SITUATIONS
}

/// Number of features there are (situations × count levels).
pub fn known_features() -> usize {
    situations() * LEVELS
}

/// A situation's name: group, then one value per axis ("block last depth0 floor lost").
pub fn situation_name(id: usize) -> String {
    let mut rest = id;
    for g in GROUPS {
        let size = group_size(g);
        if rest < size {
            let mut parts = vec![g.name.to_string()];
            let mut stride = size;
            for (_, values) in g.axes {
                stride /= values.len();
                parts.push(values[rest / stride].to_string());
                rest %= stride;
            }
            return parts.join(" ");
        }
        rest -= size;
    }
    format!("situation {id} (unknown)")
}

/// The id of a situation from its group index and one value index per axis.
#[inline(always)]
fn situation(group: usize, values: &[usize]) -> usize {
    let g = &GROUPS[group];
    let mut id = 0;
    for ((_, axis), &v) in g.axes.iter().zip(values) {
        debug_assert!(v < axis.len());
        id = id * axis.len() + v;
    }
    OFFSETS[group] + id
}

const TERM: usize = 0;
const BLOCK: usize = 1;
const STEP: usize = 2;
const SPREAD: usize = 3;
const C: usize = 4;
const RESULT: usize = 5;
const ROUNDING: usize = 6;
const ELEMENT: usize = 7;

/// The count level of a situation reached `count` times in one tile (libFuzzer's buckets).
pub fn level(count: u32) -> usize {
    match count {
        0 => unreachable!("level of a situation not reached"),
        1 => 0,
        2 => 1,
        3 => 2,
        4..=7 => 3,
        8..=15 => 4,
        16..=31 => 5,
        32..=127 => 6,
        _ => 7,
    }
}

/// How many times each situation was reached by the elements of one tile (or one input's
/// tiles): (situation, count) for the situations reached, by situation.
#[derive(Clone, Debug, PartialEq)]
pub struct TileCounts(pub Vec<(u16, u32)>);

impl TileCounts {
    /// Every (situation, level) feature of the tile.
    pub fn features(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.0.iter().map(|&(s, c)| (s as usize, level(c)))
    }

    /// The situations reached.
    pub fn situations(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().map(|&(s, _)| s as usize)
    }

    /// How many times situation `s` was reached.
    pub fn count(&self, s: usize) -> u32 {
        self.0.binary_search_by_key(&s, |&(x, _)| x as usize).map_or(0, |i| self.0[i].1)
    }
}

/// Counts situations as elements go through them: a count per situation (a tile reaches a few
/// dozen of the thousands there are), and which were touched, so [`Counter::take`] reads and
/// clears only those.
#[derive(Clone, Debug)]
pub struct Counter {
    counts: Vec<u32>,
    touched: Vec<u16>,
}

impl Default for Counter {
    fn default() -> Self {
        Counter { counts: vec![0; SITUATIONS], touched: Vec::new() }
    }
}

impl Counter {
    #[inline(always)]
    fn add(&mut self, s: usize) {
        if self.counts[s] == 0 {
            self.touched.push(s as u16);
        }
        self.counts[s] += 1;
    }

    /// The counts so far; the counter starts again from zero.
    pub fn take(&mut self) -> TileCounts {
        self.touched.sort_unstable();
        let out = self.touched.iter().map(|&s| (s, std::mem::take(&mut self.counts[s as usize]))).collect();
        self.touched.clear();
        TileCounts(out)
    }
}

/// A term's value as an f64 (the running sum between blocks is tracked in f64).
fn value(t: &Term) -> f64 {
    let v = t.sig as f64 * crate::format::pow2(t.lsb.clamp(-1100, 1100));
    if t.neg {
        -v
    } else {
        v
    }
}

/// An input decoded as the emulator decodes it (subnormals kept).
fn operand(f: Format, bits: u64) -> Operand {
    Operand::decode(f, bits, Subnormals::Keep)
}

/// A finite nonzero f64 as a term (the running sum between blocks, tracked in f64: situations
/// need its place, not its last bit).
fn f64_term(v: f64) -> Option<Term> {
    if v == 0.0 || !v.is_finite() {
        return None;
    }
    let d = Format::F64.decode(v.to_bits());
    let t = Term { neg: d.neg, sig: d.sig as u128, lsb: d.exp, key: 0 };
    Some(Term { key: t.lead(), ..t })
}

/// Computes the situations of tiles under one arithmetic.
pub struct FeatureProbe<'a> {
    ar: &'a Arithmetic,
}

impl<'a> FeatureProbe<'a> {
    pub fn new(ar: &'a Arithmetic) -> Self {
        FeatureProbe { ar }
    }

    /// The situations every element of `case` goes through, D being `d` (the model's output).
    pub fn tile(&self, case: &MmaCase, d: &[u64]) -> TileCounts {
        thread_local! {
            static COUNTER: std::cell::RefCell<Counter> = std::cell::RefCell::new(Counter::default());
        }
        COUNTER.with(|c| {
            let mut c = c.borrow_mut();
            self.add_tile(case, d, &mut c);
            c.take()
        })
    }

    /// Add one tile's situations (D = `d`) to `counts`.
    pub fn add_tile(&self, case: &MmaCase, d: &[u64], counts: &mut Counter) {
        if let Some(rows) = case.dense_rows() {
            // A sparse tile: each row is the dense dot product over the values it keeps.
            for (i, row) in rows.iter().enumerate() {
                self.add_tile(row, &d[i * case.n..(i + 1) * case.n], counts);
            }
            return;
        }
        let (m, n, k) = (case.m, case.n, case.k);
        let mut a: Vec<Operand> = case.a.iter().map(|&x| operand(case.a_fmt, x)).collect();
        let mut bt: Vec<Operand> = (0..n).flat_map(|j| (0..k).map(move |kk| (kk, j))).map(|(kk, j)| operand(case.b_fmt, case.b_at(kk, j))).collect();
        // Block-scaled tiles: the operands as the products see them.
        crate::model::scale_operands(case, &mut a, &mut bt);
        let blocks = block_members(&self.ar.blocks, k);
        let mut scratch = Scratch::default();
        for i in 0..m {
            for j in 0..n {
                let c = operand(case.c_fmt, case.c_at(i, j));
                self.element(case, &a[i * k..(i + 1) * k], &bt[j * k..(j + 1) * k], c, &blocks, d[i * n + j], &mut scratch, counts);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn element(&self, case: &MmaCase, arow: &[Operand], bcol: &[Operand], c: Operand, blocks: &[Vec<usize>], d: u64, s: &mut Scratch, counts: &mut Counter) {
        let ar = self.ar;
        let acc_fmt = ar.accumulator.format.unwrap_or(case.d_fmt);
        let field_sum = ar.align.exponent == AlignExponent::FieldSum;
        // Products, specials among the inputs.
        s.products.clear();
        // The largest finite product, and the places the finite terms span (C included below).
        let mut top: Option<Term> = None;
        let mut span: Option<(i32, i32)> = None;
        let widen = |span: Option<(i32, i32)>, t: &Term| Some(span.map_or((t.lsb, t.lead()), |(lo, hi)| (lo.min(t.lsb), hi.max(t.lead()))));
        let (mut nan, mut inf_zero, mut pos_inf, mut neg_inf) = (c.class == Class::Nan, false, false, false);
        if c.class == Class::Inf {
            pos_inf |= !c.neg;
            neg_inf |= c.neg;
        }
        for (x, y) in arow.iter().zip(bcol) {
            let neg = x.neg ^ y.neg;
            let p = match (x.class, y.class) {
                (Class::Nan, _) | (_, Class::Nan) => {
                    nan = true;
                    None
                }
                (Class::Inf, Class::Zero) | (Class::Zero, Class::Inf) => {
                    inf_zero = true;
                    None
                }
                (Class::Inf, _) | (_, Class::Inf) => {
                    pos_inf |= !neg;
                    neg_inf |= neg;
                    None
                }
                (Class::Zero, _) | (_, Class::Zero) => None,
                (Class::Finite, Class::Finite) => {
                    let t = Term { neg, sig: x.sig as u128 * y.sig as u128, lsb: x.lsb + y.lsb, key: 0 };
                    let t = Term { key: if field_sum { x.field + y.field } else { t.lead() }, ..t };
                    if top.is_none_or(|u| t.lead() >= u.lead()) {
                        top = Some(t);
                    }
                    span = widen(span, &t);
                    Some(t)
                }
            };
            s.products.push(p);
        }
        let c_term = (c.class == Class::Finite).then(|| {
            let t = Term { neg: c.neg, sig: c.sig as u128, lsb: c.lsb, key: 0 };
            Term { key: if field_sum { c.field } else { t.lead() }, ..t }
        });
        if let Some(t) = &c_term {
            span = widen(span, t);
        }
        let specials = nan || inf_zero || pos_inf || neg_inf;

        // The chain of fused blocks: the most any term lost, the last block's sum.
        let (mut worst_loss, mut last_sum) = (0, 0);
        if !specials {
            let fused = ar.blocks.c == CPlacement::Fused;
            let mut running = if ar.blocks.c == CPlacement::After { 0.0 } else { c_term.map_or(0.0, |t| value(&t)) };
            let mut running_term = if ar.blocks.c == CPlacement::After { None } else { c_term };
            let last = blocks.len().saturating_sub(1);
            for (b, members) in blocks.iter().enumerate() {
                s.terms.clear();
                s.terms.extend(members.iter().filter_map(|&kk| s.products[kk]).map(|t| (t, false)));
                self.spread(&s.terms, counts);
                if fused {
                    if let Some(t) = running_term {
                        s.terms.push((t, true));
                    }
                }
                let position = match (b, blocks.len()) {
                    (_, 1) => 0,
                    (0, _) => 1,
                    (b, _) if b == last => 3,
                    _ => 2,
                };
                if !s.terms.is_empty() {
                    let (loss, sum) = self.block(&s.terms, acc_fmt, position, counts);
                    worst_loss = worst_loss.max(loss);
                    last_sum = sum;
                }
                if fused && b < last {
                    // The running sum as the next block sees it (f64: a situation, not the model's
                    // value); only a fused chain takes it in as a term.
                    running += s.terms.iter().filter(|(_, r)| !r).map(|(t, _)| value(t)).sum::<f64>();
                    running_term = f64_term(running);
                }
            }
        }

        // C against the products.
        let window = self.window(acc_fmt) as i32;
        let c_place = match (c.class, c_term, top) {
            (Class::Zero, _, _) => 0,
            (Class::Inf | Class::Nan, _, _) => 1,
            (_, _, None) => 2,
            (_, Some(ct), Some(t)) => match ct.lead() - t.lead() {
                x if x > window => 3,
                x if x > 0 => 4,
                0 => 5,
                x if x >= -window => 6,
                _ => 7,
            },
            (_, None, Some(_)) => 1,
        };
        let opposite = match (c_term, top) {
            (Some(ct), Some(t)) => (ct.neg != t.neg) as usize,
            _ => 0,
        };
        counts.add(situation(C, &[c_place, opposite]));

        // Special inputs and D's class.
        let inputs = if nan {
            4
        } else if inf_zero {
            3
        } else if pos_inf && neg_inf {
            2
        } else if pos_inf || neg_inf {
            1
        } else {
            0
        };
        let out = case.d_fmt;
        let dd = out.decode(d);
        let subnormal = dd.class == Class::Finite && dd.sig >> (out.precision() - 1) == 0;
        let result = match dd.class {
            Class::Zero if dd.neg => 1,
            Class::Zero => 0,
            Class::Finite if subnormal => 2,
            Class::Finite if dd.exp + out.precision() as i32 - 1 == out.emax() => 4,
            Class::Finite => 3,
            Class::Inf if dd.neg => 6,
            Class::Inf => 5,
            Class::Nan => 7,
        };
        counts.add(situation(RESULT, &[inputs, result]));

        // The exact value against D's grid.
        let (exact, verdict) = if specials { (5, 3) } else { rounding(out, s.products.iter().flatten().chain(c_term.iter()), span, d) };
        counts.add(situation(ROUNDING, &[exact, verdict, subnormal as usize]));
        if !specials {
            counts.add(situation(ELEMENT, &[worst_loss, last_sum, exact, verdict, c_place]));
        }
    }

    /// Bits of the alignment window (significant bits, extra bits, the sticky place); for an
    /// exact adder, the accumulator's precision twice over (nothing is dropped).
    fn window(&self, acc_fmt: Format) -> u32 {
        let al = &self.ar.align;
        let p = self.ar.window_precision(acc_fmt);
        match al.mode {
            AlignMode::Exact => 2 * p,
            AlignMode::Sticky => (p as i32 + al.extra_bits + 1).max(1) as u32,
            _ => (p as i32 + al.extra_bits).max(1) as u32,
        }
    }

    fn spread(&self, terms: &[(Term, bool)], counts: &mut Counter) {
        let n = terms.len();
        let count = match n {
            0 => 0,
            1 => 1,
            2 => 2,
            3..=4 => 3,
            5..=8 => 4,
            _ => 5,
        };
        let spread = match (terms.iter().map(|(t, _)| t.lead()).max(), terms.iter().map(|(t, _)| t.lead()).min()) {
            (Some(hi), Some(lo)) => match hi - lo {
                0 => 0,
                1..=3 => 1,
                4..=7 => 2,
                8..=15 => 3,
                16..=31 => 4,
                32..=63 => 5,
                _ => 6,
            },
            _ => 0,
        };
        counts.add(situation(SPREAD, &[count, spread]));
    }

    /// One fused block's terms (the flag marks the running sum): alignment, loss, carry and
    /// cancellation as the model's window sees them.
    /// Returns the most any term lost (LOSSES index) and the sum's outcome (SUMS index).
    fn block(&self, terms: &[(Term, bool)], acc_fmt: Format, position: usize, counts: &mut Counter) -> (usize, usize) {
        let ar = self.ar;
        let al = &ar.align;
        let largest = terms.iter().map(|(t, _)| t.key).max().expect("nonempty block");
        let model_floor = ar.anchor_floor(acc_fmt);
        let floor = model_floor.filter(|&f| f > largest);
        let anchor = floor.unwrap_or(largest);
        let anchor_place = match model_floor {
            Some(f) if largest >= f + 4 => 0,
            Some(f) if largest >= f => 1,
            Some(f) if largest >= f - 4 => 2,
            Some(_) => 3,
            None => 0,
        };
        let p = ar.window_precision(acc_fmt) as i32;
        let window = self.window(acc_fmt) as i32;
        let exact = al.mode == AlignMode::Exact;
        // Last kept place of the window.
        // (An exact adder's: the lowest set bit of any term, so that the sum stays narrow.)
        let grid = if exact { terms.iter().map(|(t, _)| t.lsb + t.sig.trailing_zeros().min(127) as i32).min().expect("nonempty") } else { anchor - window + 1 };
        let mut sum: i128 = 0;
        let mut any_lost = false;
        let mut worst = 0;
        let mut wide = false;
        for (t, running) in terms {
            let d = anchor - t.lead();
            let place = match d {
                x if x < 0 => 0,
                0 => 1,
                x if x <= p / 2 => 2,
                x if x < p => 3,
                x if x < window => 4,
                x if x <= window + 2 => 5,
                x if x <= 2 * window => 6,
                _ => 7,
            };
            let shift = grid as i64 - t.lsb as i64;
            let (kept, lost) = if shift <= 0 {
                let up = (-shift) as u32;
                if up + (128 - t.sig.leading_zeros()) > 120 {
                    wide = true;
                    (0, 0)
                } else {
                    (t.sig << up, 0)
                }
            } else if shift >= 128 {
                (0, t.sig)
            } else {
                (t.sig >> shift as u32, t.sig & ((1u128 << shift as u32) - 1))
            };
            let loss = match (lost, kept) {
                (0, k) if k & 1 == 1 && !exact => 1,
                (0, _) => 0,
                (_, 0) => 4,
                (l, _) if l.is_power_of_two() => 2,
                _ => 3,
            };
            any_lost |= lost != 0;
            worst = worst.max(loss);
            counts.add(situation(TERM, &[*running as usize, place, loss, floor.is_some() as usize]));
            if !wide {
                let v = kept as i128;
                sum = sum.saturating_add(if t.neg { -v } else { v });
            }
        }
        let outcome = if wide {
            // An exact adder over a spread too wide for 120 bits: say where the f64 sum lands.
            let v: f64 = terms.iter().map(|(t, _)| value(t)).sum();
            f64_term(v).map_or(0, |s| depth_bucket(anchor - s.lead()))
        } else if sum == 0 {
            0
        } else {
            let lead = grid + 127 - sum.unsigned_abs().leading_zeros() as i32;
            depth_bucket(anchor - lead)
        };
        counts.add(situation(BLOCK, &[position, outcome, anchor_place, any_lost as usize]));
        if matches!(position, 1 | 2) && !wide {
            let (step, subnormal) = step_rounding(sum, grid, any_lost, acc_fmt);
            counts.add(situation(STEP, &[position - 1, step, subnormal as usize]));
        }
        (worst, outcome)
    }
}

/// Sum outcome bucket from the places between the anchor and the sum's leading bit.
fn depth_bucket(depth: i32) -> usize {
    match depth {
        x if x < 0 => 1,
        0 => 2,
        1 => 3,
        2..=3 => 4,
        4..=7 => 5,
        8..=15 => 6,
        16..=31 => 7,
        32..=63 => 8,
        _ => 9,
    }
}

/// A chained block's sum (`sum` units of 2^grid, `lost`: the window dropped bits below) against
/// the grid of `acc` where it is rounded before the next block: (STEPS index, subnormal).
fn step_rounding(sum: i128, grid: i32, lost: bool, acc: Format) -> (usize, bool) {
    let mag = sum.unsigned_abs();
    if mag == 0 {
        return (0, false);
    }
    let lead = grid + 127 - mag.leading_zeros() as i32;
    (1 + grid_place(mag, grid, lost, acc), lead < acc.emin())
}

/// Where `mag` units of 2^lo (with nonzero bits below them if `sticky`) lie against the grid of
/// `fmt` at their magnitude (EXACTS index: on the grid, a tie, within 1/64 ulp of a tie, within
/// 1/64 ulp of the grid, elsewhere).
fn grid_place(mag: u128, lo: i32, sticky: bool, fmt: Format) -> usize {
    let lead = lo + 127 - mag.leading_zeros() as i32;
    let q = (lead - fmt.precision() as i32 + 1).max(fmt.min_lsb_exp());
    if q <= lo {
        return if sticky { 3 } else { 0 };
    }
    let ulp_bits = (q - lo) as u32;
    if ulp_bits >= 127 {
        return 4;
    }
    let ulp = 1u128 << ulp_bits;
    let r = mag & (ulp - 1);
    let half = ulp >> 1;
    let near = |dist: u128| dist.saturating_mul(64) < ulp;
    if r == 0 && !sticky {
        0
    } else if r == half && !sticky {
        1
    } else if near(r.abs_diff(half)) {
        2
    } else if near(r.min(ulp - r)) {
        3
    } else {
        4
    }
}

#[derive(Default)]
struct Scratch {
    products: Vec<Option<Term>>,
    terms: Vec<(Term, bool)>,
}

/// The exact value of an element (its finite terms) against D's grid, and D against it:
/// (EXACTS index, VERDICTS index).
/// `span`: the last place of the lowest term and the leading place of the highest.
fn rounding<'t>(out: Format, terms: impl Iterator<Item = &'t Term>, span: Option<(i32, i32)>, d: u64) -> (usize, usize) {
    let Some((lo, hi)) = span else {
        // No finite nonzero term: the exact value is a zero.
        let dd = out.decode(d);
        return (0, if dd.class == Class::Zero { 0 } else { 2 });
    };
    let (neg, mag, lo, sticky) = exact_sum(terms, lo, hi);
    let nearest = out.round(neg, mag, lo, sticky, Rounding::Rne, Overflow::Ieee);
    let same = |x: u64| x == d || (out.decode(x).class == Class::Zero && out.decode(d).class == Class::Zero);
    let faithful = || same(out.round(neg, mag, lo, sticky, Rounding::Rd, Overflow::Ieee)) || same(out.round(neg, mag, lo, sticky, Rounding::Ru, Overflow::Ieee));
    let verdict = if same(nearest) {
        0
    } else if faithful() {
        1
    } else if matches!(out.decode(d).class, Class::Nan | Class::Inf) {
        3
    } else {
        2
    };
    if mag == 0 && !sticky {
        return (0, verdict);
    }
    (grid_place(mag, lo, sticky, out), verdict)
}

/// The exact sum of finite nonzero terms: sign, magnitude, the exponent of its last bit, and
/// whether nonzero bits lie below (a sum wider than 120 bits keeps its top 120 and a sticky bit).
fn exact_sum<'t>(mut terms: impl Iterator<Item = &'t Term>, lo: i32, hi: i32) -> (bool, u128, i32, bool) {
    if hi - lo <= 118 {
        let mut sum: i128 = 0;
        for t in terms.by_ref() {
            let v = (t.sig << (t.lsb - lo) as u32) as i128;
            sum += if t.neg { -v } else { v };
        }
        return (sum < 0, sum.unsigned_abs(), lo, false);
    }
    // Wide: every term cut at 118 places below the top (what is cut sets the sticky bit),
    // unless the cut sum cancelled so far that the cut bits could matter (then exactly).
    let base = hi - 118;
    let (mut sum, mut sticky) = (0i128, false);
    let terms: Vec<&Term> = terms.collect();
    for t in &terms {
        let v = if t.lsb >= base {
            (t.sig << (t.lsb - base) as u32) as i128
        } else {
            let s = (base - t.lsb) as u32;
            sticky |= s >= 128 || t.sig & ((1u128 << s) - 1) != 0;
            if s >= 128 { 0 } else { (t.sig >> s) as i128 }
        };
        sum += if t.neg { -v } else { v };
    }
    if sum.unsigned_abs() >> 90 != 0 {
        return (sum < 0, sum.unsigned_abs(), base, sticky);
    }
    wide_sum(terms, lo)
}

/// Which features have been reached: one bit per count level, per situation. Saved as a hex
/// string (two digits per situation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct FeatureMap {
    /// `levels[s]` has bit `l` set once situation `s` was reached at count level `l`.
    levels: Vec<u8>,
}

impl Default for FeatureMap {
    fn default() -> Self {
        FeatureMap { levels: vec![0; situations()] }
    }
}

impl From<FeatureMap> for String {
    fn from(m: FeatureMap) -> String {
        m.levels.iter().map(|l| format!("{l:02x}")).collect()
    }
}

impl TryFrom<String> for FeatureMap {
    type Error = String;
    fn try_from(s: String) -> Result<FeatureMap, String> {
        if s.len() != 2 * situations() || !s.is_ascii() {
            return Err(format!("a feature map of {} situations is {} hex digits, not {}", situations(), 2 * situations(), s.len()));
        }
        let levels = (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("feature map: {e}"))).collect::<Result<_, _>>()?;
        Ok(FeatureMap { levels })
    }
}

impl FeatureMap {
    /// Add a tile's features; the number that are new.
    pub fn observe(&mut self, counts: &TileCounts) -> usize {
        let mut new = 0;
        for (s, l) in counts.features() {
            if self.levels[s] >> l & 1 == 0 {
                self.levels[s] |= 1 << l;
                new += 1;
            }
        }
        new
    }

    /// Whether a tile would add a feature, without adding it.
    pub fn is_new(&self, counts: &TileCounts) -> bool {
        counts.features().any(|(s, l)| self.levels[s] >> l & 1 == 0)
    }

    /// Features reached (situation and count level).
    pub fn features(&self) -> usize {
        self.levels.iter().map(|l| l.count_ones() as usize).sum()
    }

    /// Situations reached at any level.
    pub fn situations(&self) -> usize {
        self.levels.iter().filter(|&&l| l != 0).count()
    }

    /// The situations never reached, as few patterns as names allow: a situation's name with
    /// `*` for an axis none of whose values was reached with the others ("element all * * *
    /// special" stands for 60 situations). Every situation matched by a pattern was never
    /// reached, and every one never reached is matched by exactly one.
    pub fn never_reached(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (g, grp) in GROUPS.iter().enumerate() {
            let (off, size) = (group_offset(g), group_size(grp));
            // Cells of the group's table with one more value per axis, `*` (the last): a cell is
            // set while its pattern stands for unreached situations not yet in a wider one.
            let dims: Vec<usize> = grp.axes.iter().map(|(_, v)| v.len() + 1).collect();
            let mut strides = vec![1; dims.len()];
            for a in (0..dims.len() - 1).rev() {
                strides[a] = strides[a + 1] * dims[a + 1];
            }
            let cells = strides[0] * dims[0];
            let mut set = vec![false; cells];
            for i in (0..size).filter(|&i| self.levels[off + i] == 0) {
                let (mut rest, mut cell) = (i, 0);
                for a in (0..dims.len()).rev() {
                    cell += rest % (dims[a] - 1) * strides[a];
                    rest /= dims[a] - 1;
                }
                set[cell] = true;
            }
            // Axis by axis, from the last: a pattern set for every value of this axis becomes
            // one with `*` there.
            for a in (0..dims.len()).rev() {
                let (stride, all) = (strides[a], dims[a] - 1);
                for cell in (0..cells).filter(|c| c / stride % dims[a] == 0) {
                    if (0..all).all(|v| set[cell + v * stride]) {
                        (0..all).for_each(|v| set[cell + v * stride] = false);
                        set[cell + all * stride] = true;
                    }
                }
            }
            for cell in (0..cells).filter(|&c| set[c]) {
                let mut name = grp.name.to_string();
                for (a, (_, values)) in grp.axes.iter().enumerate() {
                    name.push(' ');
                    name.push_str(values.get(cell / strides[a] % dims[a]).copied().unwrap_or("*"));
                }
                out.push(name);
            }
        }
        out
    }

    /// Situations never reached.
    pub fn unreached(&self) -> usize {
        self.levels.iter().filter(|&&l| l == 0).count()
    }

    /// Per group: (name, situations reached, situations there are).
    pub fn by_group(&self) -> Vec<(&'static str, usize, usize)> {
        GROUPS
            .iter()
            .enumerate()
            .map(|(g, grp)| {
                let off = group_offset(g);
                let size = group_size(grp);
                (grp.name, self.levels[off..off + size].iter().filter(|&&l| l != 0).count(), size)
            })
            .collect()
    }

    /// Merge another map into this one.
    pub fn merge(&mut self, other: &FeatureMap) {
        for (x, y) in self.levels.iter_mut().zip(&other.levels) {
            *x |= *y;
        }
    }

    /// Whether the map was made for this catalogue (a saved map from another version is not).
    pub fn fits(&self) -> bool {
        self.levels.len() == situations()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Emulator, Model};

    fn probe_tile(model: &str, case: &MmaCase) -> TileCounts {
        let m = Model::load(model).unwrap();
        let d = Emulator::new(m.clone()).run(case).unwrap();
        FeatureProbe::new(m.arithmetic(case.a_fmt)).tile(case, &d)
    }

    fn reached(counts: &TileCounts) -> Vec<String> {
        counts.situations().map(situation_name).collect()
    }

    #[test]
    fn names_and_ids_agree() {
        assert_eq!(OFFSETS.len(), GROUPS.len());
        assert_eq!(situation_name(situation(TERM, &[1, 5, 2, 1])), "term running edge one-bit floored");
        assert_eq!(situation_name(situation(ROUNDING, &[1, 0, 1])), "rounding tie nearest subnormal");
        let last = situations() - 1;
        assert_eq!(situation_name(last), "element all depth64+ not-finite special negligible");
        assert_eq!(known_features(), situations() * 8);
    }

    #[test]
    fn c_plus_tiny_products_reach_the_lost_terms() {
        // Fasi et al.'s probe, moved for the H100's window: C = 1 and four products of 2^-27
        // each; the window keeps 24 + 2 bits, down to 2^-25, so each product lies just below
        // its edge and is lost whole.
        let mut case = MmaCase::zeros(Format::F16, Format::F32, 1, 1, 16);
        for kk in 0..4 {
            case.a[kk] = 0x3000; // 2^-3
            case.b[kk] = 0x0001; // 2^-24
        }
        case.c = vec![0x3f80_0000];
        let got = reached(&probe_tile("sm90:mma.m16n8k16.f32.f16.f16.f32", &case));
        assert!(got.contains(&"term product edge all free".to_string()), "{got:?}");
        assert!(got.contains(&"term running top none free".to_string()), "{got:?}");
        assert!(got.contains(&"c dominant same".to_string()), "{got:?}");
        // Exact 1 + 2^-25 is a quarter ulp above 1; D = 1 is its nearest.
        assert!(got.contains(&"rounding ordinary nearest normal".to_string()), "{got:?}");
    }

    #[test]
    fn exact_cancellation_and_ties_are_seen() {
        // 1·1 + (-1)·1 + C with C = 2^-149 (f32's smallest subnormal): the window, anchored
        // at 1, drops C whole; the products cancel; D = +0 where the exact value is 2^-149.
        let mut case = MmaCase::zeros(Format::F16, Format::F32, 1, 1, 16);
        case.a[0] = 0x3c00;
        case.a[1] = 0xbc00;
        case.b[0] = 0x3c00;
        case.b[1] = 0x3c00;
        case.c = vec![0x0000_0001];
        let got = reached(&probe_tile("sm90:mma.m16n8k16.f32.f16.f16.f32", &case));
        for s in ["term running gone all free", "block only zero largest lost", "c negligible opposite", "result finite +0", "rounding representable unfaithful normal"] {
            assert!(got.contains(&s.to_string()), "{s}: {got:?}");
        }
        // C alone: D = C, subnormal, exactly.
        case.a[0] = 0;
        case.a[1] = 0;
        let got = reached(&probe_tile("sm90:mma.m16n8k16.f32.f16.f16.f32", &case));
        for s in ["c alone same", "result finite subnormal", "rounding representable nearest subnormal"] {
            assert!(got.contains(&s.to_string()), "{s}: {got:?}");
        }
        // A tie: f16 output of 1 + 2^-11 (exactly half an ulp of f16 above 1).
        let mut tie = MmaCase::zeros(Format::F16, Format::F16, 1, 1, 16);
        tie.a[0] = 0x3c00;
        tie.b[0] = 0x3c00;
        tie.a[1] = 0x3c00;
        tie.b[1] = 0x1000; // 2^-11
        let got = reached(&probe_tile("sm90:mma.m16n8k16.f16.f16.f16.f16", &tie));
        assert!(got.contains(&"rounding tie nearest normal".to_string()), "{got:?}");
    }

    #[test]
    fn chained_blocks_step_through_the_accumulator_grid() {
        // The f64 FMA chain (four blocks of one product): C = 1 and 2^-53 at k = 0 is a tie
        // where the first block's sum is rounded into f64; 2^-60 at k = 1 lies near 1 + 2^-52
        // (the tie rounded to even: 1) — a sum just above the grid; the other two blocks are
        // zero products over the running sum.
        let mut case = MmaCase::zeros(Format::F64, Format::F64, 1, 1, 4);
        case.c = vec![1f64.to_bits()];
        case.a[0] = 2f64.powi(-53).to_bits();
        case.b[0] = 1f64.to_bits();
        case.a[1] = 2f64.powi(-60).to_bits();
        case.b[1] = 1f64.to_bits();
        let got = reached(&probe_tile("sm90:mma.m8n8k4.f64.f64.f64.f64", &case));
        for s in ["step first tie normal", "step middle near-representable normal"] {
            assert!(got.contains(&s.to_string()), "{s}: {got:?}");
        }
        assert!(!got.iter().any(|g| g.starts_with("step last") || g.starts_with("step only")), "{got:?}");
        // One fused block of 16 (sm90 f16 -> f32) has no step.
        let mut case = MmaCase::zeros(Format::F16, Format::F32, 1, 1, 16);
        case.a[0] = 0x3e00;
        case.b[0] = 0x3e00;
        let got = reached(&probe_tile("sm90:mma.m16n8k16.f32.f16.f16.f32", &case));
        assert!(!got.iter().any(|g| g.starts_with("step ")), "{got:?}");
    }

    #[test]
    fn deep_cancellation_in_a_wide_window() {
        // f64's exact adder: 1 + 2^-40 - 1 cancels 40 places deep.
        let mut case = MmaCase::zeros(Format::F64, Format::F64, 1, 1, 4);
        case.c = vec![0];
        case.a[0] = 1f64.to_bits();
        case.b[0] = (1.0 + 2f64.powi(-40)).to_bits();
        case.a[1] = (-1f64).to_bits();
        case.b[1] = 1f64.to_bits();
        let got = reached(&probe_tile("sm90:mma.m8n8k4.f64.f64.f64.f64", &case));
        assert!(got.iter().any(|g| g.starts_with("block middle depth32-63")), "{got:?}");
    }

    #[test]
    fn the_window_floor_is_a_situation() {
        // Two tiny bf16 products far below f32's smallest normal: the sm90 bf16 model anchors its
        // window at the floor 2^(-126-7); the f16 model has no floor.
        let mut case = MmaCase::zeros(Format::Bf16, Format::F32, 1, 1, 16);
        case.a[0] = 0x0080; // 2^-126
        case.b[0] = 0x2f80; // 2^-32
        let floored = reached(&probe_tile("sm90:mma.m16n8k16.f32.bf16.bf16.f32", &case));
        assert!(floored.iter().any(|g| g.starts_with("block only") && g.contains(" floor-deep ")), "{floored:?}");
        let free = reached(&probe_tile("h100", &case));
        assert!(!free.iter().any(|g| g.contains("floor")), "{free:?}");
    }

    #[test]
    fn specials_and_levels() {
        let mut case = MmaCase::zeros(Format::F16, Format::F32, 2, 8, 16);
        case.a[0] = 0x7c00; // +inf in row 0
        case.b.iter_mut().for_each(|b| *b = 0x3c00);
        let counts = probe_tile("sm90:mma.m16n8k16.f32.f16.f16.f32", &case);
        let inf = situation(RESULT, &[1, 5]);
        assert_eq!(counts.count(inf), 8, "row 0: eight +inf results");
        assert_eq!(counts.count(situation(RESULT, &[0, 0])), 8, "row 1: eight +0");
        let mut map = FeatureMap::default();
        assert!(map.observe(&counts) > 0);
        assert_eq!(map.observe(&counts), 0, "nothing new the second time");
        assert!(!map.is_new(&counts));
        assert!(map.features() >= map.situations());
        assert_eq!(map.unreached(), situations() - map.situations());
        assert_eq!(level(8), 4);
        let text = serde_json::to_string(&map).unwrap();
        assert_eq!(serde_json::from_str::<FeatureMap>(&text).unwrap(), map);
        assert!(serde_json::from_str::<FeatureMap>("\"0f\"").is_err(), "a map of another catalogue is refused");
    }

    /// The never-reached patterns stand for exactly the situations never reached, each once:
    /// maps from a real tile, with whole groups and single axes reached or not, and random ones.
    #[test]
    fn never_reached_patterns_are_exactly_the_unreached() {
        use rand::{Rng, SeedableRng};
        let names: Vec<Vec<String>> = (0..situations()).map(|s| situation_name(s).split(' ').map(String::from).collect()).collect();
        let check = |map: &FeatureMap| {
            let patterns: Vec<Vec<String>> = map.never_reached().iter().map(|p| p.split(' ').map(String::from).collect()).collect();
            for (s, name) in names.iter().enumerate() {
                let matches = patterns.iter().filter(|p| p.len() == name.len() && p.iter().zip(name).all(|(x, y)| x == "*" || x == y)).count();
                assert_eq!(matches, (map.levels[s] == 0) as usize, "{}: {matches} patterns", name.join(" "));
            }
            patterns.len()
        };
        let mut case = MmaCase::zeros(Format::F16, Format::F32, 2, 8, 16);
        case.a[0] = 0x7c00;
        case.b.iter_mut().for_each(|b| *b = 0x3c00);
        let mut map = FeatureMap::default();
        assert_eq!(check(&map), GROUPS.len(), "nothing reached: one pattern a group");
        map.observe(&probe_tile("sm90:mma.m16n8k16.f32.f16.f16.f32", &case));
        assert!(check(&map) < map.unreached() / 20, "a few patterns for many situations");
        // Every value of element's last axis (C's place) reached with the first value of the others.
        let off = OFFSETS[ELEMENT];
        map.levels[off..off + C_PLACES.len()].iter_mut().for_each(|l| *l = 1);
        check(&map);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(2026_11_29);
        for density in [0.01, 0.3, 0.9, 0.999] {
            let mut map = FeatureMap::default();
            map.levels.iter_mut().for_each(|l| *l = rng.gen_bool(density) as u8);
            let n = check(&map);
            assert!(n <= map.unreached());
        }
        map.levels.iter_mut().for_each(|l| *l = 1);
        assert_eq!(check(&map), 0);
    }
}
