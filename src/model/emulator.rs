//! The emulator: computes `D = A·B + C` bit for bit as an [`Arithmetic`] says.
//!
//! Each element of D is a chain of fused blocks. A block gathers its terms (exact or rounded
//! products, and the running sum when C is fused), aligns them to the block's largest exponent
//! keeping `p + extra_bits` bits, adds them exactly as integers, and rounds once into the
//! accumulator format. Everything is integer arithmetic on (sign, significand, exponent) triples.

use super::{AccRange, AlignExponent, AlignMode, Arithmetic, BlockOrder, CPlacement, Model, NanOutput, Normalise, Subnormals, ZeroSign};
use crate::case::{FieldError, MmaCase};
use crate::format::{Class, Format, Overflow, Rounding};
use super::lanes::{block_kernel, exact_f64, AccFormat, Accs, BLanes, FloatTile, Kernel, LaneOperand, Window, FLOOR, GENERAL, LANES, STICKY, TRUNCATE, acc_kernel};
use rug::Integer;

mod diagonal;
mod many;

/// Why a case cannot be emulated.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    #[error("invalid case: {0}")]
    InvalidCase(#[from] FieldError),
    #[error("model '{model}' cannot take B in {b_fmt} with A in {a_fmt}: the emulator needs one input format per case")]
    MixedInputs { model: String, a_fmt: Format, b_fmt: Format },
    #[error("model '{model}' cannot run {a_fmt}/{b_fmt} into {c_fmt}: {message}")]
    Unsupported { model: String, a_fmt: Format, b_fmt: Format, c_fmt: Format, message: String },
}

/// The CPU's own IEEE arithmetic that computes a case: FMA chains (`fma_chain`) or chains of
/// separately added exact pairs (`pair_sums`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum CpuPath {
    FmaChain,
    PairSums,
}

/// A CPU path's results with its NaN elements (`None`, at the (i, j) that `at` gives for each
/// position) settled by the general path.
fn general_where_none(ar: &Arithmetic, case: &MmaCase, fast: Vec<Option<u64>>, at: impl Fn(usize) -> (usize, usize)) -> Result<Vec<u64>, EmulatorError> {
    let mut general: Option<TileRun> = None;
    let mut d = Vec::with_capacity(fast.len());
    for (pos, x) in fast.into_iter().enumerate() {
        d.push(match x {
            Some(bits) => bits,
            None => {
                let (i, j) = at(pos);
                if general.is_none() {
                    general = Some(TileRun::new(ar, case)?);
                }
                general.as_mut().expect("just made").element(i, j)
            }
        });
    }
    Ok(d)
}

/// A bit-accurate emulator for one model.
#[derive(Clone, Debug)]
pub struct Emulator {
    model: Model,
    /// Skip the lane kernel (to check it against the general path).
    general_only: bool,
}

/// A decoded operand, ready for the hot loop. Finite values are `sig · 2^lsb`; `field` is the
/// exponent of the hidden-bit position (what an exponent-field adder sees).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operand {
    pub(crate) class: Class,
    pub(crate) neg: bool,
    pub(crate) sig: u64,
    pub(crate) lsb: i32,
    pub(crate) field: i32,
}

impl Operand {
    /// An A or B element as the model's inputs read it (subnormal handling, exponent fields).
    #[inline]
    pub(crate) fn input(fmt: Format, bits: u64, inputs: &super::Inputs) -> Operand {
        let mut o = Operand::decode(fmt, bits, inputs.subnormals);
        if inputs.field_format.is_some() && o.class == Class::Finite {
            let leading = o.lsb + 63 - o.sig.leading_zeros() as i32;
            // Normal operands keep their field (the leading bit); subnormals reach down to the
            // wider format's emin.
            o.field = leading.max(inputs.field_emin(fmt));
        }
        o
    }

    /// The operand times a block scale (see [`crate::blockscale::scaled`]): the value exactly,
    /// and the exponent field raised by the scale's.
    pub(crate) fn scaled(self, fmt: crate::blockscale::ScaleFormat, bits: u8) -> Operand {
        let s = fmt.decode(bits);
        let x = crate::format::Decoded { class: self.class, neg: self.neg, sig: self.sig, exp: self.lsb };
        let y = crate::blockscale::scaled(x, s);
        let field = if y.class == Class::Finite { self.field + fmt.field(&s) } else { 0 };
        Operand { class: y.class, neg: y.neg, sig: y.sig, lsb: y.exp, field }
    }

    #[inline]
    pub(crate) fn decode(fmt: Format, bits: u64, subnormals: Subnormals) -> Operand {
        let d = fmt.decode(bits);
        let p = fmt.spec().precision;
        let tiny = d.class == Class::Finite && d.sig >> (p - 1) == 0;
        match subnormals {
            Subnormals::Flush if tiny => return Operand { class: Class::Zero, neg: d.neg, sig: 0, lsb: 0, field: 0 },
            Subnormals::FlushPositive if tiny || d.class == Class::Zero => return Operand { class: Class::Zero, neg: false, sig: 0, lsb: 0, field: 0 },
            _ => {}
        }
        let field = if d.class == Class::Finite { d.exp + p as i32 - 1 } else { 0 };
        // Subnormals: the field reads emin, which is exactly the hidden-bit position.
        Operand { class: d.class, neg: d.neg, sig: d.sig, lsb: d.exp, field }
    }
}

/// One finite nonzero term of a block sum: `(-1)^neg · sig · 2^lsb`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Term {
    pub(crate) neg: bool,
    pub(crate) sig: u128,
    pub(crate) lsb: i32,
    /// The exponent this term is aligned by (leading bit, or field sum).
    pub(crate) key: i32,
}

impl Term {
    pub(crate) fn lead(&self) -> i32 {
        self.lsb + 127 - self.sig.leading_zeros() as i32
    }
}

/// Terms of one block plus what the special values among them imply.
#[derive(Default)]
struct Block {
    terms: Vec<Term>,
    nan: bool,
    pos_inf: bool,
    neg_inf: bool,
    pos_zeros: usize,
    neg_zeros: usize,
}

impl Block {
    fn clear(&mut self) {
        self.terms.clear();
        self.nan = false;
        self.pos_inf = false;
        self.neg_inf = false;
        self.pos_zeros = 0;
        self.neg_zeros = 0;
    }
    fn push_special(&mut self, class: Class, neg: bool) {
        match class {
            Class::Nan => self.nan = true,
            Class::Inf if neg => self.neg_inf = true,
            Class::Inf => self.pos_inf = true,
            Class::Zero if neg => self.neg_zeros += 1,
            Class::Zero => self.pos_zeros += 1,
            Class::Finite => unreachable!("finite values are terms"),
        }
    }
}

/// The running value of one element of D, always representable in the accumulator format.
type Running = Operand;

/// Sum of finite terms after alignment: `(-1)^neg · (mag + sticky·δ) · 2^exp`.
struct Aligned {
    neg: bool,
    mag: u128,
    exp: i32,
    sticky: bool,
}

impl Emulator {
    pub fn new(model: Model) -> Self {
        Emulator { model, general_only: false }
    }

    /// An emulator that never takes the vectorised lane kernel: every element goes through the
    /// general block code, which the lane kernel must match bit for bit.
    pub fn general_only(model: Model) -> Self {
        Emulator { model, general_only: true }
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Compute D for one case: `m·n` bit patterns in C's format, row-major.
    pub fn run(&self, case: &MmaCase) -> Result<Vec<u64>, EmulatorError> {
        case.validate()?;
        self.run_validated(case)
    }

    /// [`Emulator::run`] on a case already checked by [`MmaCase::validate`], as every case
    /// made by [`MmaCase::from_json`] or [`crate::npz::Batch::case`] is: the same result,
    /// without checking the case again. (An unchecked case of the wrong sizes may panic.)
    pub fn run_validated(&self, case: &MmaCase) -> Result<Vec<u64>, EmulatorError> {
        let ar = self.model.arithmetic(case.a_fmt);
        if case.meta.is_some() && !self.general_only {
            if let Some(d) = sparse_float_tile(ar, case)? {
                return Ok(d);
            }
        }
        if let Some(rows) = case.dense_rows() {
            // 2:4 sparsity: each row is the dense dot product over the k/2 values it keeps.
            return rows.iter().map(|r| self.run(r)).collect::<Result<Vec<_>, _>>().map(|d| d.concat());
        }
        if let Some(blocks) = self.integer_blocks(ar, case)? {
            return Ok(super::integer::tile(ar, &blocks, case));
        }
        let mut d = match self.cpu_ieee_tile(ar, case)? {
            Some(d) => d,
            None => {
                let mut tile = TileRun::new(ar, case)?;
                if self.general_only {
                    (0..case.m).flat_map(|i| (0..case.n).map(move |j| (i, j))).map(|(i, j)| tile.element(i, j)).collect()
                } else {
                    tile.tile()
                }
            }
        };
        if ar.specials.zero_sign == ZeroSign::Unsigned {
            unsigned_zeros(case.d_fmt, &mut d);
        }
        Ok(d)
    }

    /// Whether D equals `want` (row-major, as `run` returns it) at every element `care` marks,
    /// stopping at the first element that differs: refuting a model usually costs a few
    /// elements, not the tile.
    pub fn agrees(&self, case: &MmaCase, want: &[u64], care: impl Fn(usize) -> bool) -> Result<bool, EmulatorError> {
        case.validate()?;
        if case.meta.is_some() {
            let d = self.run(case)?;
            return Ok(d.into_iter().enumerate().all(|(idx, got)| !care(idx) || want.get(idx) == Some(&got)));
        }
        let ar = self.model.arithmetic(case.a_fmt);
        if let Some(blocks) = self.integer_blocks(ar, case)? {
            let d = super::integer::tile(ar, &blocks, case);
            return Ok(d.into_iter().enumerate().all(|(idx, got)| !care(idx) || want.get(idx) == Some(&got)));
        }
        if let Some(d) = self.cpu_ieee_tile(ar, case)?.map(|d| if ar.specials.zero_sign == ZeroSign::Unsigned { d.into_iter().map(|x| unsigned_zero(case.d_fmt, x)).collect() } else { d }) {
            return Ok(d.into_iter().enumerate().all(|(idx, got)| !care(idx) || want.get(idx) == Some(&got)));
        }
        let unsigned = ar.specials.zero_sign == ZeroSign::Unsigned;
        let same = |idx: usize, got: u64| !care(idx) || want.get(idx) == Some(&if unsigned { unsigned_zero(case.d_fmt, got) } else { got });
        let mut tile = TileRun::new(ar, case)?;
        if self.general_only || tile.whole_tile_kernel() {
            let d = if self.general_only { (0..case.m * case.n).map(|idx| tile.element(idx / case.n, idx % case.n)).collect() } else { tile.tile() };
            return Ok(d.into_iter().enumerate().all(|(idx, got)| same(idx, got)));
        }
        for i in 0..case.m {
            for j0 in (0..case.n).step_by(LANES) {
                let width = LANES.min(case.n - j0);
                if !(j0..j0 + width).any(|j| care(i * case.n + j)) {
                    continue;
                }
                let got = tile.one_chunk(i, j0);
                if !(0..width).all(|l| same(i * case.n + j0 + l, got[l])) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// D through the CPU's own IEEE arithmetic where the model is an FMA chain in f32 or f64
    /// (see `fma_chain`) or a chain of separately added exact pairs in f32 (see `pair_sums`),
    /// NaN results through the general path; `None` where it is neither (or when this emulator
    /// is the general path only).
    fn cpu_ieee_tile(&self, ar: &Arithmetic, case: &MmaCase) -> Result<Option<Vec<u64>>, EmulatorError> {
        // The blocks are laid out only for a tile one of the CPU paths takes.
        let fast = match self.cpu_path(ar, case) {
            Some(CpuPath::FmaChain) => super::fma_chain::tile(ar, case, &chain_order(&ar.blocks, case.k)),
            Some(CpuPath::PairSums) => super::pair_sums::tile(case, &block_members(&ar.blocks, case.k)),
            None => return Ok(None),
        };
        // These paths leave NaN results alone; where every NaN is written as one pattern, that
        // pattern is D (the general path would decode the tile again to write it).
        if let Some(nan) = fixed_nan(ar.specials.nan, case.d_fmt) {
            return Ok(Some(fast.into_iter().map(|x| x.unwrap_or(nan)).collect()));
        }
        general_where_none(ar, case, fast, |idx| (idx / case.n, idx % case.n)).map(Some)
    }

    /// Which of the CPU's own IEEE paths [`Emulator::cpu_ieee_tile`] takes this case by.
    fn cpu_path(&self, ar: &Arithmetic, case: &MmaCase) -> Option<CpuPath> {
        let acc_fmt = ar.accumulator.format.unwrap_or(case.d_fmt);
        if self.general_only || case.scales.is_some() || case.d_fmt != case.c_fmt {
            None
        } else if super::fma_chain::applies(ar, case, acc_fmt) {
            Some(CpuPath::FmaChain)
        } else if super::pair_sums::applies(ar, case, acc_fmt) {
            Some(CpuPath::PairSums)
        } else {
            None
        }
    }

    /// For an integer case, the blocks of K the integer datapath sums (or why this model cannot
    /// run it); `None` for a floating-point case.
    fn integer_blocks(&self, ar: &Arithmetic, case: &MmaCase) -> Result<Option<Vec<Vec<usize>>>, EmulatorError> {
        if !case.c_fmt.is_integer() {
            return Ok(None);
        }
        if let Some(message) = super::integer::unsupported(ar, case) {
            let (a_fmt, b_fmt, c_fmt) = (case.a_fmt, case.b_fmt, case.c_fmt);
            return Err(EmulatorError::Unsupported { model: self.model.name.clone(), a_fmt, b_fmt, c_fmt, message });
        }
        Ok(Some(block_members(&ar.blocks, case.k)))
    }

    /// Compute one element of D (row `i`, column `j`).
    pub fn run_element(&self, case: &MmaCase, i: usize, j: usize) -> Result<u64, EmulatorError> {
        case.validate()?;
        if let Some(row) = case.dense_row(i) {
            return self.run_element(&row, 0, j);
        }
        let ar = self.model.arithmetic(case.a_fmt);
        if let Some(blocks) = self.integer_blocks(ar, case)? {
            return Ok(super::integer::element(ar, &blocks, case, i, j));
        }
        let mut tile = TileRun::new(ar, case)?;
        let d = if self.general_only { tile.element(i, j) } else { tile.one(i, j) };
        Ok(if ar.specials.zero_sign == ZeroSign::Unsigned { unsigned_zero(case.d_fmt, d) } else { d })
    }
}

/// `(-1)^neg · (mag + sticky·δ) · 2^exp` rounded to `p` significant bits with no bound on the
/// exponent: the significand and the exponent of its last bit. `mag` is nonzero.
fn round_unbounded(neg: bool, mag: u128, exp: i32, sticky: bool, p: u32, rnd: Rounding) -> (u64, i32) {
    let len = 128 - mag.leading_zeros();
    if len <= p {
        // Fits (normalised to p bits, as the field-sum alignment reads it); a sticky remainder
        // this far down (below p + 2 bits) cannot move a rounding.
        let up = p - len;
        return ((mag as u64) << up, exp - up as i32);
    }
    let s = len - p;
    let (kept, rem, half) = (mag >> s, mag & ((1u128 << s) - 1), 1u128 << (s - 1));
    let vs = match rem.cmp(&half) {
        std::cmp::Ordering::Equal if sticky => std::cmp::Ordering::Greater,
        o => o,
    };
    let (mut kept, mut q) = (kept, exp + s as i32);
    if rnd.rounds_away(neg, kept & 1 == 1, vs, rem != 0 || sticky) {
        kept += 1;
        if kept >> p == 1 {
            kept >>= 1;
            q += 1;
        }
    }
    (kept as u64, q)
}

/// The exact sum of terms (none below `lo`) too wide for an i128: a big-integer sum, then its
/// top 120 bits and whether nonzero bits lie below them: (sign, magnitude, exponent of its last
/// bit, sticky).
pub(crate) fn wide_sum<'t>(terms: impl IntoIterator<Item = &'t Term>, lo: i32) -> (bool, u128, i32, bool) {
    let mut sum = Integer::new();
    for t in terms {
        let v = Integer::from(t.sig) << (t.lsb - lo) as u32;
        if t.neg {
            sum -= v;
        } else {
            sum += v;
        }
    }
    let neg = sum < 0;
    sum.abs_mut();
    let bits = sum.significant_bits();
    if bits <= 120 {
        return (neg, sum.to_u128().expect("fits"), lo, false);
    }
    let drop = bits - 120;
    let sticky = sum.find_one(0).is_some_and(|first| first < drop);
    let top: Integer = sum >> drop;
    (neg, top.to_u128().expect("fits"), lo + drop as i32, sticky)
}

/// Block scales folded into decoded operands: A row-major (m×k), B transposed (n×k). Each
/// element as the product sees it, its scale folded into its value and its exponent field (an
/// exponent adder adds the scale's exponent). Nothing on a case without scales.
pub(crate) fn scale_operands(case: &MmaCase, a: &mut [Operand], bt: &mut [Operand]) {
    let Some(s) = &case.scales else { return };
    let (k, n) = (case.k, case.n);
    for (idx, o) in a.iter_mut().enumerate() {
        *o = o.scaled(s.fmt, s.a_at(idx / k, idx % k, k));
    }
    for (idx, o) in bt.iter_mut().enumerate() {
        *o = o.scaled(s.fmt, s.b_at(idx % k, idx / k, n));
    }
}

/// `blocks.group`: the products of each run (`runs[t]` is term t's, nondecreasing) summed
/// exactly into one term, keyed by its leading bit under `leading_bit` (a run that cancels is
/// dropped) and by its members' largest key otherwise (a run that cancels stays, anchoring).
fn group_sums(products: &[Term], runs: &[usize], exponent: AlignExponent) -> Vec<Term> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < products.len() {
        let end = start + runs[start..].iter().take_while(|&&r| r == runs[start]).count();
        let run = &products[start..end];
        let lo = run.iter().map(|t| t.lsb).min().expect("nonempty run");
        let (neg, sig, lsb) = match wide_sum(run, lo) {
            (neg, mag, exp, false) => (neg, mag, exp),
            // A run too wide for 120 bits: keep its top bits and a sticky last bit.
            (neg, mag, exp, true) => (neg, (mag << 1) | 1, exp - 1),
        };
        let t = Term { neg, sig, lsb, key: 0 };
        match exponent {
            AlignExponent::LeadingBit if sig != 0 => out.push(Term { key: t.lead(), ..t }),
            AlignExponent::LeadingBit => {}
            _ => out.push(Term { key: run.iter().map(|t| t.key).max().expect("nonempty run"), ..t }),
        }
        start = end;
    }
    out
}

/// A value v·2^lsb floored (toward -infinity) onto the grid 2^g, as a multiple of 2^g.
fn floor_onto(v: i128, lsb: i32, g: i32) -> i128 {
    if g <= lsb {
        v << (lsb - g).min(100) as u32
    } else if g - lsb >= 127 {
        if v < 0 { -1 } else { 0 }
    } else {
        v >> (g - lsb) as u32
    }
}

/// -0 becomes +0; everything else stays.
fn unsigned_zero(f: Format, bits: u64) -> u64 {
    if bits == f.zero_bits(true) {
        f.zero_bits(false)
    } else {
        bits
    }
}

simd_where_available! {
    /// [`unsigned_zero`] over a tile's D, the format's zeros looked up once (a loop that
    /// vectorises with AVX2: SSE2 has no 64-bit compare).
    fn unsigned_zeros(f: Format, d: &mut [u64]) {
        let (minus, plus) = (f.zero_bits(true), f.zero_bits(false));
        d.iter_mut().for_each(|x| *x = if *x == minus { plus } else { *x });
    }
}

/// Decoded operands of one tile and scratch space, reused across its elements.
pub(crate) struct TileRun<'a> {
    ar: &'a Arithmetic,
    case: &'a MmaCase,
    acc_fmt: Format,
    a: Vec<Operand>,
    /// B transposed: column j is `bt[j*k .. (j+1)*k]`.
    bt: Vec<Operand>,
    block: Block,
    /// The k indices of each block, in the order the chain visits the blocks.
    blocks: Vec<Vec<usize>>,
    /// Operands laid out for the lane kernel, when its arithmetic applies.
    lanes: Option<LanePrep>,
    /// Each block's range of K in the lane kernel's layout, in chain order.
    lane_ranges: Vec<std::ops::Range<usize>>,
    /// With C added after an f32 or f16 chain by one IEEE addition into D of the same format:
    /// the CPU adds (see [`c_after_on_cpu`]), and this is the NaN pattern D gets.
    cpu_c_after: Option<u64>,
}

/// Whether a lane's accumulator bits are D as they are: the accumulator is D's format, its
/// subnormals kept, C not added after the chain.
fn direct(ar: &Arithmetic, case: &MmaCase, acc_fmt: Format) -> bool {
    acc_fmt == case.c_fmt && ar.output.subnormals == Subnormals::Keep && ar.blocks.c != CPlacement::After
}

/// A dense tile's operands in the float kernel's form, as the kernel takes them.
type FloatArrays<'a> = (&'a [f64], &'a [[f64; LANES]], &'a [f64], &'a [[f64; LANES]], &'a [f64]);

/// The float kernel's view of a dense tile: its operands (`a, b, fa, fb, c`), the blocks of
/// the chain and C's smallest field-sum key.
fn dense_float_tile<'a>(ar: &Arithmetic, case: &MmaCase, (a, b, fa, fb, c): FloatArrays<'a>, window: &'a Window) -> FloatTile<'a> {
    let (m, n, k) = (case.m, case.n, case.k);
    let block_width = if ar.blocks.width == 0 { k } else { ar.blocks.width };
    let reverse = ar.blocks.order == BlockOrder::Reverse;
    let c_floor = crate::format::pow2(case.c_fmt.emin());
    FloatTile { a, b, fa, fb, c_floor, c, m, n, k, block_width, reverse, w: window, b_picks: &[] }
}

/// A and B for the lane kernel: A row-major; B per chunk of eight columns, k rows of lanes.
struct LanePrep {
    operands: LaneOperands,
    window: Window,
}

/// The operands in the form the chosen kernel reads.
enum LaneOperands {
    /// `a_row_special`/`b_col_special`: rows of A and columns of B holding a NaN or infinity,
    /// which the integer kernel cannot carry (left to the general path).
    Int { a: Vec<LaneOperand>, b: Vec<BLanes>, a_row_special: Vec<bool>, b_col_special: Vec<bool>, kernel: super::lanes::IntBlockFn },
    /// `c`: C's exact values, NaN/Inf as NaN (those lanes go to the general path).
    /// `fa`/`fb`: with field-sum alignment, each operand's 2^field (see `lanes::FloatTile`).
    Float { a: Vec<f64>, b: Vec<[f64; LANES]>, fa: Vec<f64>, fb: Vec<[f64; LANES]>, c: Vec<f64>, kernel: super::lanes::FloatTileFn },
}

/// The float form's arrays go back to this thread's scratch buffers for the next tile.
impl Drop for LaneOperands {
    fn drop(&mut self) {
        if let LaneOperands::Float { a, b, fa, fb, c, .. } = self {
            use super::scratch::{give_lane_rows, give_values};
            [a, fa, c].into_iter().for_each(|v| give_values(std::mem::take(v)));
            [b, fb].into_iter().for_each(|v| give_lane_rows(std::mem::take(v)));
        }
    }
}

impl<'a> TileRun<'a> {
    pub(crate) fn new(ar: &'a Arithmetic, case: &'a MmaCase) -> Result<Self, EmulatorError> {
        let acc_fmt = ar.accumulator.format.unwrap_or(case.d_fmt);
        let plan = LanePlan::of(&ar.blocks, case.k);
        let (lanes, lane_ranges) = if case.scales.is_none() && lanes_apply(ar, case, acc_fmt, plan.full_blocks) {
            (Some(prepare_lanes(ar, case, acc_fmt, plan.order.as_deref())), plan.ranges)
        } else {
            (None, Vec::new())
        };
        let cpu_c_after = cpu_c_after(ar, case, acc_fmt);
        // The general path's blocks are made when it first runs (`ensure_operands`).
        Ok(TileRun { ar, case, acc_fmt, a: Vec::new(), bt: Vec::new(), block: Block::default(), blocks: Vec::new(), lanes, lane_ranges, cpu_c_after })
    }

    /// Decode A and (transposed) B for the general path, once, on first use.
    fn ensure_operands(&mut self) {
        if self.blocks.is_empty() {
            self.blocks = block_members(&self.ar.blocks, self.case.k);
        }
        if !self.a.is_empty() {
            return;
        }
        let (case, inputs) = (self.case, &self.ar.inputs);
        self.a = case.a.iter().map(|&x| Operand::input(case.a_fmt, x, inputs)).collect();
        self.bt = (0..case.n)
            .flat_map(|j| (0..case.k).map(move |kk| (kk, j)))
            .map(|(kk, j)| Operand::input(case.b_fmt, case.b_at(kk, j), inputs))
            .collect();
        scale_operands(case, &mut self.a, &mut self.bt);
    }

    /// Every element of D, row-major: eight at a time through the lane kernel where it applies.
    pub(crate) fn tile(&mut self) -> Vec<u64> {
        let (m, n) = (self.case.m, self.case.n);
        if let Some(d) = self.float_tile() {
            return d;
        }
        let mut d = vec![0u64; m * n];
        for i in 0..m {
            for j0 in (0..n).step_by(LANES) {
                let width = LANES.min(n - j0);
                let got = self.one_chunk(i, j0);
                d[i * n + j0..i * n + j0 + width].copy_from_slice(&got[..width]);
            }
        }
        d
    }

    /// The whole tile through the float kernel, when that is the kernel chosen; elements it
    /// hands back go through the general path.
    fn float_tile(&mut self) -> Option<Vec<u64>> {
        let Some(LanePrep { operands: LaneOperands::Float { a, b, fa, fb, c, kernel }, window }) = &self.lanes else {
            return None;
        };
        let n = self.case.n;
        let mut d = vec![0u64; self.case.m * n];
        kernel(&dense_float_tile(self.ar, self.case, (a, b, fa, fb, c), window), &mut d);
        if let Some(nan) = self.cpu_c_after {
            // C after the chain, added on the CPU: the whole tile at once, then the general path
            // for the elements the kernel left to it.
            c_after_on_cpu_slice(self.acc_fmt, &self.case.c, &mut d, nan);
            for (i, row) in d.chunks_exact_mut(n).enumerate() {
                for (j, x) in row.iter_mut().enumerate().filter(|(_, x)| **x == GENERAL) {
                    *x = self.element(i, j);
                }
            }
            return Some(d);
        }
        let direct = self.direct();
        for (i, row) in d.chunks_exact_mut(n).enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                // (Most elements are done: checked before any index is worked out.)
                if *x == GENERAL || !direct {
                    *x = self.settle_float(i, j, *x, direct);
                }
            }
        }
        Some(d)
    }

    /// See [`direct`].
    fn direct(&self) -> bool {
        direct(self.ar, self.case, self.acc_fmt)
    }

    /// D(i, j) from what the float kernel wrote for it: the general path where it handed the
    /// element back, else its accumulator bits, finished where they are not `direct`.
    fn settle_float(&mut self, i: usize, j: usize, bits: u64, direct: bool) -> u64 {
        match bits {
            GENERAL => self.element(i, j),
            _ if direct => bits,
            _ => self.finish_lane(i, j, bits),
        }
    }

    /// Whether the float kernel computes this tile, which it does whole.
    fn whole_tile_kernel(&self) -> bool {
        matches!(&self.lanes, Some(LanePrep { operands: LaneOperands::Float { .. }, .. }))
    }

    /// Elements `(i, j0..j0+8)` (those past N are unspecified), through the integer lane kernel
    /// where it applies; not for tiles of the float kernel.
    fn one_chunk(&mut self, i: usize, j0: usize) -> [u64; LANES] {
        if self.lanes.is_some() {
            return self.lane_chunk(i, j0);
        }
        let mut out = [0u64; LANES];
        for (l, o) in out.iter_mut().enumerate().take(LANES.min(self.case.n - j0)) {
            *o = self.element(i, j0 + l);
        }
        out
    }

    /// One element through the lane kernel where it applies.
    pub(crate) fn one(&mut self, i: usize, j: usize) -> u64 {
        if let Some(d) = self.float_tile() {
            return d[i * self.case.n + j];
        }
        if self.lanes.is_some() {
            let j0 = j - j % LANES;
            return self.lane_chunk(i, j0)[j - j0];
        }
        self.element(i, j)
    }

    /// Elements `(i, j0..j0+8)`: the lane kernel, then the general path for lanes it gave back.
    fn lane_chunk(&mut self, i: usize, j0: usize) -> [u64; LANES] {
        let Some(LanePrep { operands: LaneOperands::Int { a, b, a_row_special, b_col_special, kernel }, window }) = &self.lanes else {
            unreachable!("float tiles run whole, in float_tile");
        };
        let (n, k) = (self.case.n, self.case.k);
        let width = LANES.min(n - j0);
        let w = *window;
        let mut accs = Accs::default();
        let mut live = [0u64; LANES];
        let mut zero = [0u64; LANES];
        let mut bits = [0u64; LANES];
        let c_row = &self.case.c[i * n + j0..i * n + j0 + width];
        let row_ok = !a_row_special[i];
        let after = self.ar.blocks.c == CPlacement::After;
        for (l, &bits) in c_row.iter().enumerate() {
            let c = Operand::decode(self.case.c_fmt, bits, self.ar.inputs.c_subnormals);
            live[l] = (row_ok && !b_col_special[j0 + l] && matches!(c.class, Class::Finite | Class::Zero)) as u64;
            // With C added after the chain, the chain starts from +0.
            let start = if after { Operand::decode(self.acc_fmt, 0, Subnormals::Keep) } else { c };
            set_lane(&mut accs, l, start, w.field_sum);
        }
        let chunk = j0 / LANES;
        for range in &self.lane_ranges {
            if live.iter().all(|&x| x == 0) {
                break;
            }
            let (ra, rb) = (i * k + range.start..i * k + range.end, chunk * k + range.start..chunk * k + range.end);
            kernel(&a[ra], &b[rb], &mut accs, &w, &mut live, &mut zero, &mut bits);
        }
        let direct = self.direct();
        let mut out = bits;
        for l in 0..width {
            if live[l] == 0 || zero[l] != 0 {
                out[l] = self.element(i, j0 + l);
            } else if !direct {
                out[l] = self.finish_lane(i, j0 + l, bits[l]);
            }
        }
        out
    }

    /// D from a lane's accumulator bits: C added now where it comes after the chain, then the
    /// conversion into D's format.
    fn finish_lane(&mut self, i: usize, j: usize, acc_bits: u64) -> u64 {
        if let Some(nan) = self.cpu_c_after {
            return c_after_on_cpu(self.acc_fmt, self.case.c_at(i, j), acc_bits, nan);
        }
        let mut run = Operand::decode(self.acc_fmt, acc_bits, Subnormals::Keep);
        if self.ar.blocks.c == CPlacement::After {
            let c = Operand::decode(self.case.c_fmt, self.case.c_at(i, j), self.ar.inputs.c_subnormals);
            run = self.add_c_after(c, run);
        }
        self.output(run)
    }

    pub(crate) fn element(&mut self, i: usize, j: usize) -> u64 {
        self.ensure_operands();
        let c = Operand::decode(self.case.c_fmt, self.case.c_at(i, j), self.ar.inputs.c_subnormals);
        let after = self.ar.blocks.c == CPlacement::After;
        let mut run = if after { Operand::decode(self.acc_fmt, 0, Subnormals::Keep) } else { c };
        for b in 0..self.blocks.len() {
            run = self.block_step(run, i, j, b);
        }
        if after {
            run = self.add_c_after(c, run);
        }
        self.output(run)
    }

    /// C added to the chain's result (`c = "after"`), NaN payloads passed on under `propagate`.
    fn add_c_after(&mut self, c: Running, chain: Running) -> Running {
        let nan = (self.ar.specials.nan == NanOutput::Propagate).then(|| propagated_add_nan(c, chain)).flatten();
        nan.unwrap_or_else(|| self.add_rounded(c, chain, self.ar.blocks.separate_rounding))
    }

    /// `x + y` by one exact-then-rounded addition into the accumulator.
    fn add_rounded(&mut self, x: Running, y: Running, rnd: Rounding) -> Running {
        let mut pair = std::mem::take(&mut self.block);
        pair.clear();
        push_operand(&mut pair, x, AlignExponent::LeadingBit);
        push_operand(&mut pair, y, AlignExponent::LeadingBit);
        let r = self.finish(&pair, rnd, |s, b| s.exact_sum(b));
        self.block = pair;
        r
    }

    /// One fused block (number `b` of the chain): returns the new running value in the
    /// accumulator format.
    fn block_step(&mut self, run: Running, i: usize, j: usize, b: usize) -> Running {
        let ar = self.ar;
        let k = self.case.k;
        let mut block = std::mem::take(&mut self.block);
        block.clear();
        let fused = !matches!(ar.blocks.c, CPlacement::Separate | CPlacement::Staged);
        if fused {
            push_operand(&mut block, run, ar.align.exponent);
        }
        let arow = &self.a[i * k..(i + 1) * k];
        let bcol = &self.bt[j * k..(j + 1) * k];
        // Whether each term's k is odd, where the staged adder sums even and odd k apart.
        let split = ar.blocks.c == CPlacement::Staged && ar.blocks.staged.even_odd;
        let mut odd = Vec::new();
        let (group, by_scale) = (ar.blocks.group, ar.align.exponent == AlignExponent::Scale);
        // With grouped products: the run (position in the block / group) each term came from.
        let mut runs = Vec::new();
        let from = block.terms.len();
        for (pos, &kk) in self.blocks[b].iter().enumerate() {
            let before = block.terms.len();
            self.push_product(&mut block, arow[kk], bcol[kk]);
            if block.terms.len() > before {
                if split {
                    odd.push(kk % 2 == 1);
                }
                if by_scale {
                    block.terms.last_mut().expect("just pushed").key = self.scale_key(i, kk, j);
                }
                if group > 0 {
                    runs.push(pos / group);
                }
            }
        }
        if group > 0 {
            let products = block.terms.split_off(from);
            block.terms.extend(group_sums(&products, &runs, ar.align.exponent));
        }
        if ar.specials.nan == NanOutput::Propagate && (block.nan || (block.pos_inf && block.neg_inf) || run.class == Class::Nan) {
            self.block = block;
            let (a, bs): (Vec<Operand>, Vec<Operand>) = self.blocks[b].iter().map(|&kk| (arow[kk], bcol[kk])).unzip();
            return self.propagated_nan(run, &a, &bs);
        }
        if ar.blocks.c == CPlacement::Staged {
            let r = self.staged(run, &block, split.then_some(odd.as_slice()));
            self.block = block;
            return r;
        }
        let rnd = ar.accumulator.rounding;
        let sum = match ar.blocks.normalise {
            Normalise::End => self.round_block(&block, rnd),
            Normalise::EveryAdd => self.add_sequentially(&mut block, rnd),
            Normalise::Pairwise => {
                self.block = block;
                let leaves: Vec<(Operand, Operand)> = self.blocks[b].iter().map(|&kk| (arow[kk], bcol[kk])).collect();
                let first = fused.then_some(run);
                let sum = self.add_pairwise(first, &leaves, rnd);
                block = std::mem::take(&mut self.block);
                sum
            }
        };
        self.block = block;
        if fused {
            sum
        } else {
            // Separate: the block result joins the running sum by one exact-then-rounded addition.
            self.add_rounded(run, sum, ar.blocks.separate_rounding)
        }
    }

    /// The alignment key `align.exponent = "scale"` gives the product at (i, kk) × (kk, j):
    /// the exponent fields of its two block scales, added (0 without scales).
    fn scale_key(&self, i: usize, kk: usize, j: usize) -> i32 {
        let Some(s) = &self.case.scales else { return 0 };
        let (a, b) = (s.fmt.decode(s.a_at(i, kk, self.case.k)), s.fmt.decode(s.b_at(kk, j, self.case.n)));
        s.fmt.field(&a) + s.fmt.field(&b)
    }

    /// The NaN a block passes on under `nan = "propagate"`: B's first NaN, else the running
    /// sum's, else A's first, payload moved into the accumulator's fraction; otherwise (an
    /// invalid operation) the default NaN with the sign set.
    fn propagated_nan(&self, run: Running, a: &[Operand], b: &[Operand]) -> Running {
        let in_frac = self.case.a_fmt.precision() as i32 - 1;
        let acc_frac = self.acc_fmt.precision() as i32 - 1;
        let moved = |sig: u64, from: i32| if acc_frac >= from { sig << (acc_frac - from) } else { sig >> (from - acc_frac) };
        let nan = |neg: bool, sig: u64| Operand { class: Class::Nan, neg, sig, lsb: 0, field: 0 };
        if let Some(x) = b.iter().find(|x| x.class == Class::Nan) {
            return nan(x.neg, moved(x.sig, in_frac));
        }
        if run.class == Class::Nan {
            return run;
        }
        if let Some(x) = a.iter().find(|x| x.class == Class::Nan) {
            return nan(x.neg, moved(x.sig, in_frac));
        }
        nan(true, 0)
    }

    /// `normalise = "pairwise"`: each product rounded into the accumulator, then a balanced
    /// tree of rounded two-term additions in K order (`first`, the running sum of a fused
    /// block, is the leftmost leaf).
    fn add_pairwise(&mut self, first: Option<Running>, leaves: &[(Operand, Operand)], rnd: Rounding) -> Running {
        let mut level: Vec<Running> = first.into_iter().collect();
        for &(a, b) in leaves {
            let mut one = Block::default();
            self.push_product(&mut one, a, b);
            level.push(self.round_block(&one, rnd));
        }
        while level.len() > 1 {
            level = level.chunks(2).map(|p| if let [x, y] = p { self.add_rounded(*x, *y, rnd) } else { p[0] }).collect();
        }
        level.pop().unwrap_or_else(|| Operand::decode(self.acc_fmt, 0, Subnormals::Keep))
    }

    /// `c = "staged"`: the block's unrounded sum and the running sum through the second adder
    /// (see [`super::Staged`]).
    fn staged(&self, run: Running, block: &Block, odd: Option<&[bool]>) -> Running {
        let f = self.acc_fmt;
        let st = &self.ar.blocks.staged;
        let special = |class, neg| Operand { class, neg, sig: 0, lsb: 0, field: 0 };
        let nan = block.nan || run.class == Class::Nan;
        let pos_inf = block.pos_inf || (run.class == Class::Inf && !run.neg);
        let neg_inf = block.neg_inf || (run.class == Class::Inf && run.neg);
        if nan || (pos_inf && neg_inf) {
            return special(Class::Nan, false);
        }
        if pos_inf || neg_inf {
            return special(Class::Inf, neg_inf);
        }
        let emin = f.emin();
        // The block's sum as its window left it, and its exponent (the largest term's).
        let window_sum = |b: &Block| {
            let e = b.terms.iter().map(|t| t.key).max().expect("nonempty block");
            let e = self.ar.anchor_floor(f).map_or(e, |fl| e.max(fl));
            let s = self.align_and_sum(b);
            (if s.neg { -(s.mag as i128) } else { s.mag as i128 }, s.exp, e)
        };
        let dot = match odd {
            None => (!block.terms.is_empty()).then(|| window_sum(block)),
            Some(odd) => {
                // Even and odd k in windows of their own, both floored onto the larger's grid.
                let halves: Vec<(i128, i32, i32)> = [false, true]
                    .into_iter()
                    .filter_map(|want| {
                        let terms: Vec<Term> = block.terms.iter().zip(odd).filter(|(_, &o)| o == want).map(|(t, _)| *t).collect();
                        (!terms.is_empty()).then(|| window_sum(&Block { terms, ..Block::default() }))
                    })
                    .collect();
                halves.iter().map(|h| h.2).max().map(|e| {
                    let p = self.ar.window_precision(f) as i32;
                    let g = e - (p - 1) - self.ar.align.extra_bits;
                    let v = halves.iter().map(|&(v, lsb, _)| floor_onto(v, lsb, g)).sum();
                    (v, g, e)
                })
            }
        };
        let (mut c_val, c_lsb, c_exp) = match run.class {
            Class::Finite => {
                let lead = run.lsb + (128 - (run.sig as u128).leading_zeros() as i32) - 1;
                (if run.neg { -(run.sig as i128) } else { run.sig as i128 }, run.lsb, lead.max(emin))
            }
            _ => (0, emin, emin),
        };
        let e = dot.map_or(c_exp, |(_, _, d)| d.max(c_exp));
        if st.drop_c && c_exp < e - st.c_bits as i32 - 1 {
            c_val = 0;
        }
        let (g_dot, g_c) = (e - st.dot_bits as i32, e - st.c_bits as i32);
        let g = g_dot.min(g_c);
        let dot_part = dot.map_or(0, |(v, lsb, _)| floor_onto(v, lsb, g_dot) << (g_dot - g) as u32);
        let c_part = floor_onto(c_val, c_lsb, g_c) << (g_c - g) as u32;
        let v = dot_part + c_part;
        if v == 0 {
            let all_zero = block.terms.is_empty() && run.class == Class::Zero;
            let neg = self.ar.specials.zero_sign == ZeroSign::Ieee && all_zero && block.pos_zeros == 0 && run.neg;
            return special(Class::Zero, neg);
        }
        let lead = g + (128 - v.unsigned_abs().leading_zeros() as i32) - 1;
        let keep_lsb = (lead - (st.keep as i32 - 1)).max(emin - (st.keep as i32 - 1));
        let (v, lsb) = if keep_lsb > g { (floor_onto(v, g, keep_lsb), keep_lsb) } else { (v, g) };
        let bits = f.round(v < 0, v.unsigned_abs(), lsb, false, self.ar.accumulator.rounding, self.ar.accumulator.overflow);
        Operand::decode(f, bits, self.ar.accumulator.subnormals)
    }

    fn push_product(&self, block: &mut Block, a: Operand, b: Operand) {
        let neg = a.neg ^ b.neg;
        match (a.class, b.class) {
            (Class::Nan, _) | (_, Class::Nan) => block.nan = true,
            (Class::Inf, Class::Zero) | (Class::Zero, Class::Inf) => block.nan = true,
            (Class::Inf, _) | (_, Class::Inf) => block.push_special(Class::Inf, neg),
            (Class::Zero, _) | (_, Class::Zero) => block.push_special(Class::Zero, neg),
            (Class::Finite, Class::Finite) => {
                let sig = a.sig as u128 * b.sig as u128;
                let lsb = a.lsb + b.lsb;
                match self.ar.products.round_to {
                    None => {
                        let t = Term { neg, sig, lsb, key: 0 };
                        if self.ar.products.inf_above.is_some_and(|f| t.lead() > f.emax()) {
                            block.push_special(Class::Inf, neg);
                            return;
                        }
                        let key = match self.ar.align.exponent {
                            AlignExponent::LeadingBit => t.lead(),
                            AlignExponent::FieldSum => a.field + b.field,
                            // Set by the caller, who knows the product's scales.
                            AlignExponent::Scale => 0,
                        };
                        block.terms.push(Term { key, ..t });
                    }
                    Some(pf) => {
                        let bits = pf.round(neg, sig, lsb, false, self.ar.products.rounding, Overflow::Ieee);
                        let op = Operand::decode(pf, bits, Subnormals::Keep);
                        push_operand(block, op, self.ar.align.exponent);
                    }
                }
            }
        }
    }

    /// Round a block of terms into the accumulator, special values and zero signs included.
    fn round_block(&self, block: &Block, rnd: Rounding) -> Running {
        self.finish(block, rnd, |s, b| s.align_and_sum(b))
    }

    fn finish(&self, block: &Block, rnd: Rounding, sum: impl Fn(&Self, &Block) -> Aligned) -> Running {
        let f = self.acc_fmt;
        let special = |class, neg| Operand { class, neg, sig: 0, lsb: 0, field: 0 };
        if block.nan || (block.pos_inf && block.neg_inf) {
            return special(Class::Nan, false);
        }
        if block.pos_inf || block.neg_inf {
            return special(Class::Inf, block.neg_inf);
        }
        let zero_neg = |all_zero: bool| match self.ar.specials.zero_sign {
            ZeroSign::Positive | ZeroSign::Unsigned => false,
            ZeroSign::Ieee if all_zero => {
                block.pos_zeros == 0 || (rnd == Rounding::Rd && block.neg_zeros > 0)
            }
            ZeroSign::Ieee => rnd == Rounding::Rd,
        };
        if block.terms.is_empty() {
            return special(Class::Zero, zero_neg(true));
        }
        let s = sum(self, block);
        if s.mag == 0 && !s.sticky {
            return special(Class::Zero, zero_neg(false));
        }
        if let Some(q) = self.ar.accumulator.precision.filter(|&q| q < f.precision()) {
            // Narrow the sum to q bits first; the accumulator format then holds it exactly.
            let (sig, lsb) = round_unbounded(s.neg, s.mag, s.exp, s.sticky, q, rnd);
            let bits = f.round(s.neg, sig as u128, lsb, false, rnd, self.ar.accumulator.overflow);
            return Operand::decode(f, bits, self.ar.accumulator.subnormals);
        }
        if self.ar.accumulator.range == AccRange::Unbounded {
            let p = f.precision();
            let (sig, lsb) = round_unbounded(s.neg, s.mag, s.exp, s.sticky, p, rnd);
            return Operand { class: Class::Finite, neg: s.neg, sig, lsb, field: lsb + p as i32 - 1 };
        }
        let bits = f.round(s.neg, s.mag, s.exp, s.sticky, rnd, self.ar.accumulator.overflow);
        Operand::decode(f, bits, self.ar.accumulator.subnormals)
    }

    /// Align every term to the block's window and add them as integers (the fused adder).
    fn align_and_sum(&self, block: &Block) -> Aligned {
        let al = &self.ar.align;
        if al.mode == AlignMode::Exact {
            return self.exact_sum(block);
        }
        let e_max = block.terms.iter().map(|t| t.key).max().expect("nonempty block");
        let e_max = self.ar.anchor_floor(self.acc_fmt).map_or(e_max, |f| e_max.max(f));
        let p = self.ar.window_precision(self.acc_fmt) as i32;
        // Last kept place: p-1 bits below the largest exponent, then extra_bits more.
        let mut grid = e_max - (p - 1) - al.extra_bits;
        let mut window = p + al.extra_bits;
        let sticky_mode = al.mode == AlignMode::Sticky;
        if sticky_mode {
            grid -= 1;
            window += 1;
        }
        // Keys by block scales (`exponent = "scale"`) say nothing of a term's magnitude: on
        // operands far wider than FP4, or tiles without scales, a term could sit past the
        // 128-bit adder, so the grid rises until the largest term fits, as a finite-width adder
        // would cut it (FP4 runs never come near). Every other key bounds its term's exponent.
        if al.exponent == AlignExponent::Scale {
            let count_bits = 64 - (block.terms.len() as u64).leading_zeros() as i32;
            let top = block.terms.iter().map(|t| t.lead() + 1).max().expect("nonempty block");
            grid = grid.max(top + count_bits - 126);
        }
        let mut sum: i128 = 0;
        for t in &block.terms {
            let shift = grid as i64 - t.lsb as i64;
            let (kept, lost) = if shift <= 0 {
                (t.sig << (-shift) as u32, false)
            } else if shift >= 128 {
                (0, t.sig != 0)
            } else {
                let s = shift as u32;
                (t.sig >> s, t.sig & ((1u128 << s) - 1) != 0)
            };
            let mag = match al.mode {
                AlignMode::Truncate => kept,
                AlignMode::Sticky => kept | lost as u128,
                AlignMode::Floor if t.neg => kept + lost as u128,
                AlignMode::Floor => kept,
                AlignMode::Exact => unreachable!(),
            } as i128;
            sum += if t.neg { -mag } else { mag };
        }
        let neg = sum < 0;
        let mut mag = sum.unsigned_abs();
        if let Some(carry) = al.carry_bits {
            let width = (window + carry as i32).clamp(1, 127) as u32;
            mag &= (1u128 << width) - 1;
        }
        Aligned { neg, mag, exp: grid, sticky: false }
    }

    /// The exact sum of the block's terms (no bit dropped).
    fn exact_sum(&self, block: &Block) -> Aligned {
        let lo = block.terms.iter().map(|t| t.lsb).min().expect("nonempty block");
        let hi = block.terms.iter().map(|t| t.lead()).max().expect("nonempty block");
        let count_bits = 64 - (block.terms.len() as u64).leading_zeros() as i64;
        if (hi as i64 - lo as i64 + 1) + count_bits <= 126 {
            let mut sum: i128 = 0;
            for t in &block.terms {
                let v = (t.sig << (t.lsb - lo) as u32) as i128;
                sum += if t.neg { -v } else { v };
            }
            return Aligned { neg: sum < 0, mag: sum.unsigned_abs(), exp: lo, sticky: false };
        }
        // Wide exponent spread: an exact big-integer sum, then the top 120 bits and a sticky bit.
        let (neg, mag, exp, sticky) = wide_sum(&block.terms, lo);
        Aligned { neg, mag, exp, sticky }
    }

    /// A chain of two-term adders, largest term first, each partial sum rounded.
    fn add_sequentially(&self, block: &mut Block, rnd: Rounding) -> Running {
        if block.nan || block.pos_inf || block.neg_inf || block.terms.len() <= 1 {
            return self.round_block(block, rnd);
        }
        let mut terms = std::mem::take(&mut block.terms);
        terms.sort_by(|x, y| cmp_magnitude(y, x));
        let mut pair = Block::default();
        let mut acc: Option<Running> = None;
        for t in terms.iter() {
            pair.clear();
            if let Some(a) = acc {
                push_operand(&mut pair, a, self.ar.align.exponent);
            }
            pair.terms.push(*t);
            let r = self.round_block(&pair, rnd);
            acc = Some(r);
        }
        block.terms = terms;
        let mut r = acc.expect("at least two terms");
        // The zeros of the block only matter for the sign of a zero result.
        if r.class == Class::Zero && block.pos_zeros + block.neg_zeros > 0 {
            r.neg = r.neg && block.pos_zeros == 0;
        }
        r
    }

    /// Convert the final running value into D's format.
    fn output(&self, run: Running) -> u64 {
        let out = self.case.d_fmt;
        let o = &self.ar.output;
        let bits = match run.class {
            Class::Nan => {
                return fixed_nan(self.ar.specials.nan, out).unwrap_or_else(|| {
                    let (from, to) = (self.acc_fmt.precision() as i32 - 1, out.precision() as i32 - 1);
                    let payload = if to >= from { run.sig << (to - from) } else { run.sig >> (from - to) };
                    out.nan_bits(run.neg, payload)
                })
            }
            Class::Inf => out.inf_bits(run.neg),
            Class::Zero => out.zero_bits(run.neg),
            // Same format: the running value is already on D's grid.
            Class::Finite if out == self.acc_fmt && self.ar.accumulator.range == AccRange::Format => out.pack(run.neg, run.sig, run.lsb),
            Class::Finite => out.round(run.neg, run.sig as u128, run.lsb, false, o.rounding, o.overflow),
        };
        if o.subnormals == Subnormals::Flush {
            let d = out.decode(bits);
            if d.class == Class::Finite && d.sig >> (out.precision() - 1) == 0 {
                return out.zero_bits(d.neg);
            }
        }
        bits
    }
}

/// Under `nan = "propagate"`, the NaN an addition `c + sum` gives, if any: C's payload, else
/// the sum's (already quieted), or the default NaN with the sign set for `inf - inf` (what the
/// H100's FP64 add in a GEMM epilogue writes).
fn propagated_add_nan(c: Operand, sum: Operand) -> Option<Operand> {
    match (c.class, sum.class) {
        (Class::Nan, _) => Some(c),
        (_, Class::Nan) => Some(sum),
        (Class::Inf, Class::Inf) if c.neg != sum.neg => Some(Operand { class: Class::Nan, neg: true, sig: 0, lsb: 0, field: 0 }),
        _ => None,
    }
}

/// Where the lane kernel finds each block of the chain: K's order in its layout (`None`: 0..k
/// as it is) and each block's range of it in chain order; `full_blocks`: every block holds
/// `width` products, or there is one (what interleaved blocks need, see [`lanes_apply`]).
struct LanePlan {
    order: Option<Vec<usize>>,
    ranges: Vec<std::ops::Range<usize>>,
    full_blocks: bool,
}

impl LanePlan {
    fn of(blocks: &super::Blocks, k: usize) -> Self {
        if blocks.interleave == 0 {
            // Runs of K: the layout is K itself, the blocks its runs of `width`, visited
            // forward or backward, without making each block's members.
            let width = if blocks.width == 0 { k } else { blocks.width }.max(1);
            let mut ranges: Vec<_> = (0..k.div_ceil(width).max(1)).map(|b| b * width..((b + 1) * width).min(k)).collect();
            if blocks.order == BlockOrder::Reverse {
                ranges.reverse();
            }
            return LanePlan { order: None, ranges, full_blocks: true };
        }
        let members = block_members(blocks, k);
        let full_blocks = members.len() == 1 || members.iter().all(|b| b.len() == blocks.width);
        let (order, ranges) = lane_layout(&members, blocks.order);
        let in_order = order.iter().enumerate().all(|(p, &kk)| p == kk);
        LanePlan { order: (!in_order).then_some(order), ranges, full_blocks }
    }
}

/// The order the lane kernel lays K out in (block after block, so that every block is a
/// contiguous range, whatever the interleaving: a block's sum does not depend on the order of
/// its terms), and each block's range in that layout, in chain order. `chain` is
/// [`block_members`]' answer for a chain visited in `order`.
fn lane_layout(chain: &[Vec<usize>], order: BlockOrder) -> (Vec<usize>, Vec<std::ops::Range<usize>>) {
    let forward: Vec<&Vec<usize>> = match order {
        BlockOrder::Forward => chain.iter().collect(),
        BlockOrder::Reverse => chain.iter().rev().collect(),
    };
    let mut ranges = Vec::with_capacity(forward.len());
    let mut start = 0;
    for ks in &forward {
        ranges.push(start..start + ks.len());
        start += ks.len();
    }
    if order == BlockOrder::Reverse {
        ranges.reverse();
    }
    (forward.into_iter().flatten().copied().collect(), ranges)
}

/// The k indices in the order the chain takes them: [`block_members`] one after another,
/// without a vector per block where the blocks are runs of K (an FMA chain's blocks hold one
/// product each).
pub(crate) fn chain_order(blocks: &super::Blocks, k: usize) -> Vec<usize> {
    if blocks.interleave != 0 {
        return block_members(blocks, k).concat();
    }
    let width = if blocks.width == 0 { k } else { blocks.width }.max(1);
    match blocks.order {
        BlockOrder::Forward => (0..k).collect(),
        BlockOrder::Reverse => (0..k.div_ceil(width)).rev().flat_map(|b| b * width..((b + 1) * width).min(k)).collect(),
    }
}

/// The k indices of each block, in the order the chain visits them.
pub(crate) fn block_members(blocks: &super::Blocks, k: usize) -> Vec<Vec<usize>> {
    let width = if blocks.width == 0 { k } else { blocks.width }.max(1);
    let nblocks = k.div_ceil(width).max(1);
    let mut members: Vec<Vec<usize>> = vec![Vec::with_capacity(width); nblocks];
    for kk in 0..k {
        let b = if blocks.interleave == 0 { kk / width } else { kk / blocks.interleave % nblocks };
        members[b].push(kk);
    }
    if blocks.order == BlockOrder::Reverse {
        members.reverse();
    }
    members
}

/// A 2:4 sparse tile through the float kernel in one pass: A's kept values row by row and, per
/// row, the rows of B its metadata selects (the kernel reads B per row). What each row's
/// dense case (`MmaCase::dense_row`) computes, without making it, except for the elements the
/// kernel hands back and D's conversion where it is not direct, which go through that row's
/// case as before. `None` where the float kernel does not take the model.
fn sparse_float_tile(ar: &Arithmetic, case: &MmaCase) -> Result<Option<Vec<u64>>, EmulatorError> {
    let acc_fmt = ar.accumulator.format.unwrap_or(case.d_fmt);
    let (m, n, half) = (case.m, case.n, case.k / 2);
    let meta = case.meta.as_deref().expect("a sparse case");
    // A row's dense dot product, as far as `lanes_apply` reads it (shape and formats).
    let row_shape = MmaCase { m: 1, k: half, a: Vec::new(), b: Vec::new(), c: Vec::new(), meta: None, scales: None, extra: Default::default(), ..*case };
    let plan = LanePlan::of(&ar.blocks, half);
    if !lanes_apply(ar, &row_shape, acc_fmt, plan.full_blocks) {
        return Ok(None);
    }
    // Kept values in the kernel's order (block after block), A's and B's rows alike: what
    // `MmaCase::picks` gives, without a vector per row.
    let at = |p: usize| plan.order.as_ref().map_or(p, |o| o[p]);
    let mut picks = Vec::with_capacity(m * half);
    let mut kept_a = Vec::with_capacity(m * half);
    for (row_meta, row_a) in meta.chunks_exact(half).zip(case.a.chunks_exact(half)) {
        picks.extend((0..half).map(at).map(|t| MmaCase::kept_position(t, row_meta[t])));
        kept_a.extend((0..half).map(at).map(|t| row_a[t]));
    }
    let kept = MmaCase { a: kept_a, b: Vec::new(), c: case.c.clone(), meta: None, scales: None, extra: Default::default(), k: half, ..*case };
    let Some(prep) = prepare_lanes_for(ar, &kept, acc_fmt, None, Some(&case.b)) else {
        return Ok(None);
    };
    let LanePrep { operands: LaneOperands::Float { a, b, fa, fb, c, kernel }, window } = &prep else {
        return Ok(None);
    };
    let block_width = if ar.blocks.width == 0 { half } else { ar.blocks.width };
    let reverse = ar.blocks.order == BlockOrder::Reverse;
    let c_floor = crate::format::pow2(case.c_fmt.emin());
    let mut d = vec![0u64; m * n];
    kernel(&FloatTile { a, b, fa, fb, c_floor, c, m, n, k: half, block_width, reverse, w: window, b_picks: &picks }, &mut d);
    let direct = acc_fmt == case.c_fmt && ar.output.subnormals == Subnormals::Keep && ar.blocks.c != CPlacement::After;
    let cpu_after = cpu_c_after(ar, case, acc_fmt);
    for i in 0..m {
        let row = &mut d[i * n..(i + 1) * n];
        if !row.contains(&GENERAL) {
            if direct {
                continue;
            }
            if let Some(nan) = cpu_after {
                c_after_on_cpu_slice(acc_fmt, &case.c[i * n..(i + 1) * n], row, nan);
                continue;
            }
        }
        let dense = case.dense_row(i).expect("sparse");
        let mut run = TileRun::new(ar, &dense)?;
        for (j, x) in row.iter_mut().enumerate() {
            *x = if *x == GENERAL { run.element(0, j) } else if direct { *x } else { run.finish_lane(0, j, *x) };
        }
    }
    if ar.specials.zero_sign == ZeroSign::Unsigned {
        unsigned_zeros(case.d_fmt, &mut d);
    }
    Ok(Some(d))
}

/// Whether C is added after the chain by one IEEE addition rounded to nearest into D's own
/// format, f32 or f16, that gives D as it is (nothing flushed or narrowed, NaN not passed on):
/// then `finish_lane` adds on the CPU, and this is the pattern of a NaN result.
fn cpu_c_after(ar: &Arithmetic, case: &MmaCase, acc_fmt: Format) -> Option<u64> {
    let nan = fixed_nan(ar.specials.nan, case.c_fmt)?;
    let applies = ar.blocks.c == CPlacement::After
        && ar.blocks.separate_rounding == Rounding::Rne
        && matches!(acc_fmt, Format::F32 | Format::F16)
        && case.c_fmt == acc_fmt
        && ar.accumulator.range == AccRange::Format
        // (A narrower accumulator precision cuts this addition too.)
        && ar.accumulator.precision.is_none_or(|q| q >= acc_fmt.precision())
        && ar.accumulator.overflow == Overflow::Ieee
        && ar.inputs.c_subnormals == Subnormals::Keep
        && ar.output.subnormals == Subnormals::Keep
        && matches!(ar.specials.zero_sign, ZeroSign::Ieee | ZeroSign::Unsigned);
    applies.then_some(nan)
}

/// The bits every NaN is written as in `f` under the model's NaN rule, or `None` where the rule
/// passes payloads on (what `Emulator::output` writes for a NaN).
fn fixed_nan(rule: NanOutput, f: Format) -> Option<u64> {
    match rule {
        NanOutput::Canonical => Some(f.nan_bits(false, 0)),
        NanOutput::AllOnes => Some(f.nan_bits(false, u64::MAX)),
        NanOutput::Propagate => None,
    }
}

/// `c + chain` in `f` (f32 or f16) by one IEEE addition rounded to nearest, what the general
/// path's exact sum and rounding give (zero signs, subnormals, overflow alike); `nan` for NaN.
/// f32 adds on the CPU's adder; two f16 values add exactly in f64, then round once.
fn c_after_on_cpu(f: Format, c: u64, chain: u64, nan: u64) -> u64 {
    match f {
        Format::F32 => c_after_f32(c, chain, nan),
        Format::F16 => c_after_f16(c, chain, nan),
        _ => unreachable!("cpu_c_after admits f32 and f16 accumulators only"),
    }
}

/// [`c_after_on_cpu`] for f32: one f32 addition. Selects, not branches.
#[inline(always)]
fn c_after_f32(c: u64, chain: u64, nan: u64) -> u64 {
    let d = f32::from_bits(c as u32) + f32::from_bits(chain as u32);
    if d.is_nan() {
        nan
    } else {
        d.to_bits() as u64
    }
}

/// [`c_after_on_cpu`] for f16: two f16 values sum exactly in f64 (f16's 40-bit span of places
/// fits in 53), so D rounds once, from the exact sum. Selects, not branches.
#[inline(always)]
fn c_after_f16(c: u64, chain: u64, nan: u64) -> u64 {
    let d = Format::F16.to_f64(c) + Format::F16.to_f64(chain);
    let bits = crate::format::f64_to_f16_rne(d);
    if d.is_nan() {
        nan
    } else {
        bits
    }
}

simd_where_available! {
    /// [`c_after_on_cpu`] over lane results laid out as `c` is (a row or a tile), leaving the
    /// elements the kernel left ([`GENERAL`]) to the general path. One loop per format,
    /// its addition inlined, so that each vectorises (with AVX2's shifts by lane, the f16
    /// rounding too).
    fn c_after_on_cpu_slice(f: Format, c: &[u64], d: &mut [u64], nan: u64) {
        let (c, len) = (&c[..d.len()], d.len());
        // Plain indexed loops: iterator adaptors would leave the loop body outside the AVX2 caller.
        match f {
            Format::F32 => {
                for i in 0..len {
                    d[i] = if d[i] == GENERAL { GENERAL } else { c_after_f32(c[i], d[i], nan) };
                }
            }
            Format::F16 => {
                for i in 0..len {
                    d[i] = if d[i] == GENERAL { GENERAL } else { c_after_f16(c[i], d[i], nan) };
                }
            }
            _ => unreachable!("cpu_c_after admits f32 and f16 accumulators only"),
        }
    }
}

/// Whether the lane kernel covers this arithmetic and these formats: exact narrow products,
/// C fused into each block (or added after a chain from +0), a truncating window whose sums
/// provably fit in 62 bits.
fn lanes_apply(ar: &Arithmetic, case: &MmaCase, acc_fmt: Format, full_blocks: bool) -> bool {
    let narrow = |f: Format| f.precision() <= 24;
    // Window: p + extra (+1 sticky), 2 bits for a product's carry, 7 for the count of terms.
    let width = if ar.blocks.width == 0 { case.k } else { ar.blocks.width };
    let window = ar.window_precision(acc_fmt) as i32 + ar.align.extra_bits + 1 + 2 + 7;
    ar.products.round_to.is_none()
        && ar.products.inf_above.is_none()
        && ar.accumulator.precision.is_none_or(|q| q >= 1)
        && ar.blocks.normalise == Normalise::End
        && (ar.blocks.c == CPlacement::Fused || (ar.blocks.c == CPlacement::After && ar.specials.nan != NanOutput::Propagate && ar.accumulator.range == AccRange::Format))
        // Interleaved blocks are laid out one after another; the float kernel needs them full.
        && (ar.blocks.interleave == 0 || full_blocks)
        && matches!(ar.align.mode, AlignMode::Truncate | AlignMode::Floor | AlignMode::Sticky)
        && ar.align.exponent != AlignExponent::Scale
        && ar.blocks.group == 0
        && width < 128
        && narrow(case.a_fmt)
        && narrow(case.b_fmt)
        && narrow(case.c_fmt)
        && narrow(acc_fmt)
        // D wider than C (m8n8k4 f16 C into f32 D): the general path.
        && case.d_fmt == case.c_fmt
        && window <= 62
}

/// A and B laid out for the lane kernel, with K in `order` where the chain takes it in another
/// order than 0..k (interleaved blocks): A's columns and B's rows are read in that order as
/// they are decoded (a sparse A through its metadata), not copied into a reordered case first.
fn prepare_lanes(ar: &Arithmetic, case: &MmaCase, acc_fmt: Format, order: Option<&[usize]>) -> LanePrep {
    prepare_lanes_for(ar, case, acc_fmt, order, None).expect("dense tiles take either kernel")
}

/// The window and the lane kernel of a tile's arithmetic, shape and formats (its values aside).
fn lane_setup(ar: &Arithmetic, case: &MmaCase, acc_fmt: Format) -> (Window, Kernel) {
    let (pa, pb) = (case.a_fmt.precision(), case.b_fmt.precision());
    let mode = match ar.align.mode {
        AlignMode::Floor => FLOOR,
        AlignMode::Sticky => STICKY,
        _ => TRUNCATE,
    };
    let field_sum = ar.align.exponent == AlignExponent::FieldSum;
    // Bits a product may need above its window's last place (one more with field-sum keys).
    let drop_below = ar.window_precision(acc_fmt) as i32 - 1 + ar.align.extra_bits + (mode == STICKY) as i32;
    let product_shift = (drop_below + 1 - (pa + pb) as i32 + 2).max(0) as u32;
    // f64 form: |terms| < 2^(drop_below + 2), at most 2^7 of them, exact below 2^53.
    let window = Window {
        p: ar.window_precision(acc_fmt) as i64,
        extra_bits: ar.align.extra_bits as i64,
        field_sum,
        product_shift,
        carry_mask: match ar.align.carry_bits {
            Some(c) => (1u64 << (drop_below + 1 + c as i32).clamp(1, 63)) - 1,
            None => u64::MAX,
        },
        prod_top: pa + pb - 2,
        unbounded: ar.accumulator.range == AccRange::Unbounded,
        min_key: ar.anchor_floor(acc_fmt).map_or(i64::MIN / 4, |f| f as i64),
        acc: AccFormat::of(acc_fmt, ar.accumulator.subnormals == Subnormals::Flush),
        rounding: ar.accumulator.rounding,
        cancel_to_minus_zero: ar.accumulator.rounding == Rounding::Rd && ar.specials.zero_sign == ZeroSign::Ieee,
        overflow: ar.accumulator.overflow,
        nan_bits: fixed_nan(ar.specials.nan, acc_fmt),
        zero_needs_rule: ar.specials.zero_sign == ZeroSign::Ieee && !(ar.blocks.c == CPlacement::After && ar.accumulator.rounding != Rounding::Rd),
        narrow_to: ar.accumulator.precision.filter(|&q| q < acc_fmt.precision()).map_or(64, |q| q as i64),
    };
    let kernel = block_kernel(mode, field_sum, drop_below + 2 + 8 <= 52, acc_kernel(&window, acc_fmt));
    (window, kernel)
}

/// [`prepare_lanes`], or the same for a 2:4 sparse case: `sparse` is then the dense B whose
/// rows the kernel picks for each row of A (`FloatTile::b_picks`), laid out per chunk of eight
/// columns like a dense B; `case.a` holds the kept values (m×k with k the kept count, in the
/// kernel's order; `case.b` is not read), and only the float kernel's form is made (`None`
/// when the int kernel is chosen).
fn prepare_lanes_for(ar: &Arithmetic, case: &MmaCase, acc_fmt: Format, order: Option<&[usize]>, sparse: Option<&[u64]>) -> Option<LanePrep> {
    let (m, n, k) = (case.m, case.n, case.k);
    // Position p of the chain's K is the case's k `at(p)`; A's element (i, at(p)).
    let at = |p: usize| order.map_or(p, |o| o[p]);
    let a_bits = |i: usize, p: usize| match order {
        None => case.a[i * k + p],
        Some(o) => case.a_at(i, o[p]),
    };
    let (pa, pb) = (case.a_fmt.precision(), case.b_fmt.precision());
    let chunks = n.div_ceil(LANES);
    let (window, kernel) = lane_setup(ar, case, acc_fmt);
    let operands = match kernel {
        Kernel::Float(kernel) => float_operands(ar, case, order, sparse, kernel),
        Kernel::Int(_) if sparse.is_some() => return None,
        Kernel::Int(kernel) => {
            let mut a_row_special = vec![false; m];
            let mut b_col_special = vec![false; n];
            let special = |o: &Operand| matches!(o.class, Class::Nan | Class::Inf);
            let lane = |o: &Operand, p: u32| {
                if o.class == Class::Finite {
                    LaneOperand::new(o.neg, o.sig, o.lsb, o.field, p)
                } else {
                    LaneOperand::default()
                }
            };
            let mut a = Vec::with_capacity(m * k);
            for (i, special_row) in a_row_special.iter_mut().enumerate() {
                for p in 0..k {
                    let o = Operand::input(case.a_fmt, a_bits(i, p), &ar.inputs);
                    *special_row |= special(&o);
                    a.push(lane(&o, pa));
                }
            }
            let mut b = vec![BLanes::default(); chunks * k];
            for p in 0..k {
                for (j, &x) in case.b[at(p) * n..(at(p) + 1) * n].iter().enumerate() {
                    let o = Operand::input(case.b_fmt, x, &ar.inputs);
                    b_col_special[j] |= special(&o);
                    b[(j / LANES) * k + p].set(j % LANES, lane(&o, pb));
                }
            }
            LaneOperands::Int { a, b, a_row_special, b_col_special, kernel }
        }
    };
    Some(LanePrep { operands, window })
}

/// A tile's operands in the float kernel's form (see [`prepare_lanes_for`] for `order` and
/// `sparse`), in buffers from this thread's scratch (given back when the operands are dropped).
fn float_operands(ar: &Arithmetic, case: &MmaCase, order: Option<&[usize]>, sparse: Option<&[u64]>, kernel: super::lanes::FloatTileFn) -> LaneOperands {
    use super::scratch::{take_lane_rows, take_values};
    let mut bufs = FloatBuffers { a: take_values(), b: take_lane_rows(), fa: take_values(), fb: take_lane_rows(), c: take_values() };
    bufs.fill(ar, case, order, sparse);
    let FloatBuffers { a, b, fa, fb, c } = bufs;
    LaneOperands::Float { a, b, fa, fb, c, kernel }
}

/// An operand's bit patterns: a case's, or little-endian elements of one width (an npz
/// member's bytes as they lie in the file).
#[derive(Clone, Copy)]
pub(super) enum Patterns<'a> {
    Bits(&'a [u64]),
    Le(&'a [u8], usize),
}

impl Patterns<'_> {
    fn len(self) -> usize {
        match self {
            Patterns::Bits(v) => v.len(),
            Patterns::Le(bytes, width) => bytes.len() / width,
        }
    }

    /// Each pattern's exact value in `f` (see [`Format::to_f64`]).
    fn to_f64(self, f: Format, dst: &mut [f64]) {
        match self {
            Patterns::Bits(v) => f.to_f64_slice(v, dst),
            Patterns::Le(bytes, width) => f.le_to_f64_slice(bytes, width, dst),
        }
    }
}

/// The float kernel's operand arrays of a tile: A row-major; B per chunk of eight columns, a
/// row of lanes per row of B; with field-sum alignment each operand's 2^field laid out alike
/// (`fa`, `fb`; empty otherwise); C. Reused from tile to tile ([`FloatBuffers::fill`] sizes
/// them), so a run of tiles allocates and zeroes nothing per tile.
#[derive(Default)]
struct FloatBuffers {
    a: Vec<f64>,
    b: Vec<[f64; LANES]>,
    fa: Vec<f64>,
    fb: Vec<[f64; LANES]>,
    c: Vec<f64>,
}

impl FloatBuffers {
    /// `case`'s exact values (NaN and infinities stay, and send their lanes to the general
    /// path), with K in `order` and B a sparse case's dense B where given (see
    /// [`prepare_lanes_for`]). Every element of every array is written.
    fn fill(&mut self, ar: &Arithmetic, case: &MmaCase, order: Option<&[usize]>, sparse: Option<&[u64]>) {
        let b = sparse.unwrap_or(&case.b);
        self.fill_from(ar, case, [Patterns::Bits(&case.a), Patterns::Bits(b), Patterns::Bits(&case.c)], order, sparse.is_some());
    }

    /// [`FloatBuffers::fill`] from A, B and C's patterns as given: `case` gives the shape and
    /// formats, and its elements are read only where K is reordered (A through
    /// [`MmaCase::a_at`]; a tile of the same shape with no elements of its own does otherwise).
    /// `sparse`: B is a sparse case's dense B, of its own height.
    fn fill_from(&mut self, ar: &Arithmetic, case: &MmaCase, [a_src, b_src, c_src]: [Patterns; 3], order: Option<&[usize]>, sparse: bool) {
        let (m, n, k) = (case.m, case.n, case.k);
        // Position p of the chain's K is the case's k `at(p)`; A's element (i, at(p)).
        let at = |p: usize| order.map_or(p, |o| o[p]);
        let in_sub = ar.inputs.subnormals;
        let chunks = n.div_ceil(LANES);
        let FloatBuffers { a, b, fa, fb, c } = self;
        // (Arrays written whole below are sized, not cleared: no zeroing of what is written.)
        a.resize(m * k, 0.0);
        match order {
            None => a_src.to_f64(case.a_fmt, a),
            Some(o) => {
                let mut row = vec![0u64; k];
                for (i, dst) in a.chunks_exact_mut(k).enumerate() {
                    row.iter_mut().zip(o).for_each(|(x, &at)| *x = case.a_at(i, at));
                    case.a_fmt.to_f64_slice(&row, dst);
                }
            }
        }
        // B per chunk of eight columns, one row of lanes per row of B (a sparse case's dense
        // B, whose rows the kernel picks for each row of A).
        let b_rows = if sparse { b_src.len() / n } else { k };
        // (All of B converted at once, then its rows placed: a conversion per row of eight
        // cost more in calls than in work.) Columns that fill whole chunks leave no padding
        // to zero; one chunk of eight, in order, is B's own layout, converted in place.
        if n % LANES != 0 {
            b.clear();
        }
        b.resize(chunks * b_rows, [0.0; LANES]);
        if n == LANES && order.is_none() {
            b_src.to_f64(case.b_fmt, b.as_flattened_mut());
        } else {
            let mut values = super::scratch::values_to_fill(b_src.len());
            b_src.to_f64(case.b_fmt, &mut values);
            for p in 0..b_rows {
                let row = &values[at(p) * n..(at(p) + 1) * n];
                for (chunk, cols) in row.chunks(LANES).enumerate() {
                    b[chunk * b_rows + p][..cols.len()].copy_from_slice(cols);
                }
            }
            super::scratch::give_values(values);
        }
        // With C added after the chain, the chain starts from +0.
        if ar.blocks.c != CPlacement::After {
            c.resize(m * n, 0.0);
            c_src.to_f64(case.c_fmt, c);
        } else {
            c.clear();
            c.resize(m * n, 0.0);
        }
        if in_sub != Subnormals::Keep {
            flush_subnormals(case.a_fmt, a, in_sub);
            b.iter_mut().for_each(|lanes| flush_subnormals(case.b_fmt, lanes, in_sub));
        }
        if ar.inputs.c_subnormals != Subnormals::Keep {
            flush_subnormals(case.c_fmt, c, ar.inputs.c_subnormals);
        }
        if ar.align.exponent == AlignExponent::FieldSum {
            let (floor_a, floor_b) = (crate::format::pow2(ar.inputs.field_emin(case.a_fmt)), crate::format::pow2(ar.inputs.field_emin(case.b_fmt)));
            fa.resize(a.len(), 0.0);
            field_pows(a, fa, floor_a);
            fb.resize(b.len(), [0.0; LANES]);
            field_pows(b.as_flattened(), fb.as_flattened_mut(), floor_b);
        } else {
            fa.clear();
            fb.clear();
        }
    }

    /// The arrays as the kernel takes them.
    fn arrays(&self) -> FloatArrays<'_> {
        (&self.a, &self.b, &self.fa, &self.fb, &self.c)
    }
}

/// What the float kernel aligns a field-sum operand by, from its exact (already flushed)
/// value: 2^field for a finite nonzero value (its leading power of two, `floor` = 2^emin of its
/// format for subnormals), 0 for a zero (its products join no maximum), the magnitude for NaN
/// and infinities: never negative, so that the kernel takes a product of keys as it is (an
/// infinite key puts the window so high that every finite term scales to zero; the block's f64
/// sum is then the IEEE result).
#[inline(always)]
fn field_pow(v: f64, floor: f64) -> f64 {
    // Selects, not branches, so that slices of operands vectorise.
    let pow = f64::from_bits(v.abs().to_bits() & 0x7ff0_0000_0000_0000).max(floor);
    let pow = if v.is_finite() { pow } else { v.abs() };
    if v == 0.0 {
        0.0
    } else {
        pow
    }
}

simd_where_available! {
    /// [`field_pow`] of every value of `src` into `dst` (SSE2 has half the width and no blend).
    fn field_pows(src: &[f64], dst: &mut [f64], floor: f64) {
        dst.iter_mut().zip(src).for_each(|(f, &v)| *f = field_pow(v, floor));
    }
}

/// Replace subnormal values by zeros: of the same sign (`Flush`), or +0 for them and for zeros of
/// either sign (`FlushPositive`).
fn flush_subnormals(f: Format, vals: &mut [f64], how: Subnormals) {
    let min_normal = crate::format::pow2(f.emin());
    for v in vals.iter_mut() {
        if v.abs() < min_normal {
            // Flush keeps the sign (of zeros too); FlushPositive makes every one +0.
            *v = if how == Subnormals::FlushPositive { 0.0 } else { *v * 0.0 };
        }
    }
}

/// Load a running value into lane `l`.
fn set_lane(accs: &mut Accs, l: usize, op: Operand, field_sum: bool) {
    if op.class != Class::Finite {
        accs.sig[l] = 0;
        accs.neg[l] = op.neg as u64;
        accs.val[l] = 0.0;
        return;
    }
    accs.sig[l] = op.sig;
    accs.lsb[l] = op.lsb as i64;
    accs.neg[l] = op.neg as u64;
    accs.val[l] = exact_f64(op.neg, op.sig, op.lsb as i64);
    accs.key[l] = if field_sum { op.field as i64 } else { (op.lsb + 63 - op.sig.leading_zeros() as i32) as i64 };
}

fn push_operand(block: &mut Block, op: Operand, exponent: AlignExponent) {
    if op.class != Class::Finite {
        block.push_special(op.class, op.neg);
        return;
    }
    let t = Term { neg: op.neg, sig: op.sig as u128, lsb: op.lsb, key: 0 };
    let key = match exponent {
        AlignExponent::LeadingBit => t.lead(),
        AlignExponent::FieldSum | AlignExponent::Scale => op.field,
    };
    block.terms.push(Term { key, ..t });
}

fn cmp_magnitude(x: &Term, y: &Term) -> std::cmp::Ordering {
    x.lead().cmp(&y.lead()).then_with(|| {
        // Same leading bit: compare significands brought to a common last place.
        let lo = x.lsb.min(y.lsb);
        let xs = x.sig << (x.lsb - lo).min(127) as u32;
        let ys = y.sig << (y.lsb - lo).min(127) as u32;
        xs.cmp(&ys)
    })
}
