//! One whole library GEMM, element by element: each K slice of the plan is one chain of the
//! instruction arithmetic from +0 (the emulator with `blocks.c = "after"` and C = +0), the
//! partial sums are reduced in order in the compute format, C is added once, D is rounded.

use super::config::{KernelConfig, Reduction};
use super::op::TorchOp;
use super::predict::Prediction;
use super::scalars::Scalars;
use super::schedule::{CAdd, InputConversion, Plan, PlanError};
use super::LibraryModel;
use crate::case::MmaCase;
use crate::format::{Class, Format, Overflow, Rounding};
use crate::model::{Emulator, EmulatorError, NanOutput};
use std::ops::Range;

/// Rows and columns of D emulated together: B's operands are prepared once per block of
/// columns and reused by every row (the lane kernel reads eight columns at a time).
const BLOCK_ROWS: usize = 128;
const BLOCK_COLS: usize = 128;
/// Elements computed together by [`LibraryEmulator::elements`] (a multiple of the lane
/// kernel's eight), and the bound on their operands (count × k) that makes deep K take fewer.
const ELEMENTS_AT_ONCE: usize = 64;
const ELEMENT_OPERANDS: usize = 1 << 20;

/// A GEMM's operands: A m×k, B k×n, C m×n (None: β = 0), row-major raw bits in the model's
/// input and output formats.
#[derive(Clone, Debug)]
pub struct Gemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Vec<u64>,
    pub b: Vec<u64>,
    pub c: Option<Vec<u64>>,
    /// A row of n elements added to every row of D by the epilogue (cuBLASLt's
    /// EPILOGUE_BIAS, what F.linear uses); exclusive with `c`.
    pub bias: Option<Vec<u64>>,
}

impl Gemm {
    /// `F.linear` as PyTorch 2.11 runs it: cuBLASLt's bias epilogue only when the weight (n×k,
    /// `mat2` of `addmm`) has more than one row and column (`isInputCompliesAddmmCudaLt`);
    /// otherwise `addmm` broadcasts the bias into the result and runs the GEMM with β = 1, so
    /// D = A·B + C with every row of C the bias (torch.addmm's kernel and arithmetic). The
    /// corpus agrees: its 22 bias GEMMs with n = 1 logged the β = 1 GEMM's kernel, and 56 of its
    /// 74 with m = 1 another one (the epilogue's).
    pub fn as_torch_linear(self) -> Gemm {
        let (n, k) = (self.n, self.k);
        self.as_torch_linear_in(n, k)
    }

    /// [`Gemm::as_torch_linear`] for some rows and columns of a GEMM with n columns and depth k
    /// (the bias holds this part's columns).
    pub fn as_torch_linear_in(self, n: usize, k: usize) -> Gemm {
        match self.bias {
            Some(bias) if !linear_takes_epilogue(n, k) => Gemm { c: Some(bias_as_c(self.m, &bias)), bias: None, ..self },
            _ => self,
        }
    }
}

/// Whether PyTorch 2.11's `F.linear` with a bias reaches cuBLASLt's bias epilogue at n output
/// features and depth k (`isInputCompliesAddmmCudaLt` looks at the weight, n×k, only); else
/// `addmm` runs with the bias broadcast into C (`Gemm::as_torch_linear`, the GPU executor).
pub fn linear_takes_epilogue(n: usize, k: usize) -> bool {
    n > 1 && k > 1
}

/// Whether PyTorch's call `op` hands cuBLAS the weight transposed at n×k (F.linear, unless the
/// weight is a row or a column, whose transpose is contiguous as it is).
pub fn takes_weight_transposed(op: TorchOp, n: usize, k: usize) -> bool {
    matches!(op, TorchOp::Linear | TorchOp::LinearBias) && linear_takes_epilogue(n, k)
}

/// `x` (rows × cols, row-major) transposed, in square blocks that stay in cache: a deep
/// matrix column by column would touch a cache line per element.
pub fn transpose<T: Copy + Default>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    const BLOCK: usize = 32;
    let mut out = vec![T::default(); x.len()];
    for r0 in (0..rows).step_by(BLOCK) {
        for c0 in (0..cols).step_by(BLOCK) {
            for r in r0..(r0 + BLOCK).min(rows) {
                for c in c0..(c0 + BLOCK).min(cols) {
                    out[c * rows + r] = x[r * cols + c];
                }
            }
        }
    }
    out
}

/// The bias (n elements) repeated over m rows: C as `addmm` broadcasts it.
pub fn bias_as_c(m: usize, bias: &[u64]) -> Vec<u64> {
    (0..m).flat_map(|_| bias.iter().copied()).collect()
}

/// The largest m, n or k a library GEMM (a `.npy` operand, a record line) may have: 2^20, past
/// every shape cuBLAS is traced at, and small enough that m·n·k never overflows.
pub const MAX_DIM: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum GemmError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Emulator(#[from] EmulatorError),
    #[error("{op} at {m}x{n}x{k}: declined, {reason}")]
    Unlearned { m: usize, n: usize, k: usize, op: &'static str, reason: String },
    #[error("shape: {0}")]
    Shape(String),
    /// α and β other than 1 where they were not measured.
    #[error("{0}")]
    Scalars(String),
}

/// Where a GEMM's kernel configuration came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// The shape was traced: the kernel cuBLASLt logged for it.
    Traced,
    /// The predictor's answer; `support` learned shapes reached its leaf, `held` = (right,
    /// reached) of the held-out ones.
    Predicted { support: usize, held: (usize, usize) },
}

impl std::fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::Traced => write!(f, "traced"),
            ConfigSource::Predicted { support, held } => write!(f, "predicted (from {support} learned shapes; {} of {} held-out shapes there right)", held.0, held.1),
        }
    }
}

/// A library model ready to emulate GEMMs.
pub struct LibraryEmulator<'a> {
    model: &'a LibraryModel,
    /// The model's own chain, then one per `[[schedule.chains]]` rule.
    emulators: Vec<Emulator>,
    /// The call's α and β (D = α·A·B + β·C).
    scalars: Scalars,
}

impl<'a> LibraryEmulator<'a> {
    pub fn new(model: &'a LibraryModel) -> Self {
        let emulators = std::iter::once(model.chain.clone()).chain(model.variants.iter().cloned()).map(Emulator::new).collect();
        LibraryEmulator { model, emulators, scalars: Scalars::ONE }
    }

    /// The same emulator for calls with these α and β (`torch.addmm(..., beta=, alpha=)`).
    pub fn with_scalars(self, scalars: Scalars) -> Self {
        LibraryEmulator { scalars, ..self }
    }

    /// The operands as the plan's kernel reads them under these α and β: A scaled by α where
    /// the kernel does that ([`Scalars::scaled_a`]).
    fn scaled<'g>(&self, g: &'g Gemm, plan: &Plan) -> std::borrow::Cow<'g, Gemm> {
        match self.scalars.scaled_a(plan, &g.a) {
            Some(a) => std::borrow::Cow::Owned(Gemm { a, b: g.b.clone(), c: g.c.clone(), bias: g.bias.clone(), ..*g }),
            None => std::borrow::Cow::Borrowed(g),
        }
    }

    /// Whether `plan` takes this emulator's α and β (they were measured on some kernels only).
    fn check_scalars(&self, g: &Gemm, plan: &Plan) -> Result<(), GemmError> {
        let r = &self.model.rules;
        match self.scalars.for_c(g.c.is_some()).check(plan, [r.inputs, r.compute, r.output], g.bias.is_some(), g.c.is_some()) {
            Some(why) => Err(GemmError::Scalars(why)),
            None => Ok(()),
        }
    }

    /// The configuration the library runs for this GEMM (torch.mm, torch.addmm with its C, or
    /// F.linear with its bias), traced or predicted.
    pub fn config(&self, g: &Gemm) -> Result<&'a KernelConfig, GemmError> {
        self.config_for((g.m, g.n, g.k), g.c.is_some(), g.bias.is_some())
    }

    /// [`LibraryEmulator::choose`] for a GEMM with or without C and bias in torch.mm's layout.
    pub fn config_for(&self, shape: (usize, usize, usize), beta: bool, bias: bool) -> Result<&'a KernelConfig, GemmError> {
        Ok(self.choose(shape, TorchOp::of(beta, bias))?.0)
    }

    /// The kernel an m×n×k call of kind `op` runs: the traced one where the table holds the
    /// shape, else the predictor's, else declined with the reason.
    pub fn choose(&self, (m, n, k): (usize, usize, usize), op: TorchOp) -> Result<(&'a KernelConfig, ConfigSource), GemmError> {
        let model = self.model;
        if let Some(c) = model.table.get(m, n, k, op) {
            return Ok((c, ConfigSource::Traced));
        }
        // F.linear whose weight is a row or a column runs torch.addmm (the log says addmm).
        if op == TorchOp::LinearBias && !linear_takes_epilogue(n, k) {
            if let Some(c) = model.table.get(m, n, k, TorchOp::Addmm) {
                return Ok((c, ConfigSource::Traced));
            }
        }
        let reason = match model.predictor.predict(op, (m, n, k)) {
            Prediction::Config { config, support, held } if model.use_predictor => return Ok((config, ConfigSource::Predicted { support, held })),
            Prediction::Config { config, support, .. } => format!(
                "not traced; the predictor says {config} (from {support} learned shapes), which is still wrong for some shapes: pass --predicted to use it ({})",
                model.chain.name
            ),
            _ if model.predictor.is_empty() && model.table_source.is_some() => format!("not in the table {}", model.table_source.as_deref().unwrap_or("")),
            _ if model.predictor.is_empty() => format!("outside the {} traced shapes of {} (it has no predictor)", model.table.len(), model.chain.name),
            Prediction::Declined(why) => format!("{why} ({})", model.chain.name),
        };
        Err(GemmError::Unlearned { m, n, k, op: op.call(), reason })
    }

    pub fn plan(&self, g: &Gemm, config: &KernelConfig) -> Result<Plan, GemmError> {
        self.plan_for((g.m, g.n, g.k), config, g.bias.is_some())
    }

    /// The plan of `g` made by the PyTorch call `op` (F.linear passes its weight transposed,
    /// which some kernels read another way).
    pub fn plan_op(&self, g: &Gemm, config: &KernelConfig, op: TorchOp) -> Result<Plan, GemmError> {
        self.plan_shape((g.m, g.n, g.k), config, g.bias.is_some(), op)
    }

    /// [`LibraryEmulator::plan_for`] for the PyTorch call `op` (F.linear hands the weight over
    /// transposed, which some kernels read another way).
    pub fn plan_shape(&self, (m, n, k): (usize, usize, usize), config: &KernelConfig, bias: bool, op: TorchOp) -> Result<Plan, GemmError> {
        Ok(self.model.rules.plan_layout(m, n, k, config, bias, takes_weight_transposed(op, n, k))?)
    }

    /// The schedule of an m×n×k GEMM under `config` (its elements' plan whatever part of the
    /// operands a [`Gemm`] holds).
    pub fn plan_for(&self, (m, n, k): (usize, usize, usize), config: &KernelConfig, bias: bool) -> Result<Plan, GemmError> {
        Ok(self.model.rules.plan_with(m, n, k, config, bias)?)
    }

    /// Check the operands' sizes against the shape.
    pub fn check(&self, g: &Gemm) -> Result<(), GemmError> {
        let (m, n, k) = (g.m, g.n, g.k);
        if m == 0 || n == 0 || k == 0 {
            return Err(GemmError::Shape(format!("{m}x{n}x{k} has a zero dimension")));
        }
        if m.max(n).max(k) > MAX_DIM {
            return Err(GemmError::Shape(format!("{m}x{n}x{k}: a dimension is over {MAX_DIM}")));
        }
        if g.a.len() != m * k || g.b.len() != k * n || g.c.as_ref().is_some_and(|c| c.len() != m * n) || g.bias.as_ref().is_some_and(|b| b.len() != n) {
            return Err(GemmError::Shape(format!("operands do not fit {m}x{n}x{k}")));
        }
        Ok(())
    }

    /// Every element of D under `plan`, row-major, blocks of it in parallel (rayon);
    /// `progress` hears how many elements each finished block held.
    pub fn run(&self, g: &Gemm, plan: &Plan, progress: &(dyn Fn(usize) + Sync)) -> Result<Vec<u64>, GemmError> {
        use rayon::prelude::*;
        self.check_scalars(g, plan)?;
        let g = &*self.scaled(g, plan);
        let blocks: Vec<(Range<usize>, Range<usize>)> = (0..g.m)
            .step_by(BLOCK_ROWS)
            .flat_map(|i| (0..g.n).step_by(BLOCK_COLS).map(move |j| (i..(i + BLOCK_ROWS).min(g.m), j..(j + BLOCK_COLS).min(g.n))))
            .collect();
        let ops = self.chain_operands(g, plan);
        let done: Vec<Vec<u64>> = blocks
            .par_iter()
            .map(|(rows, cols)| {
                let d = self.block_of(&ops, g, plan, rows.clone(), cols.clone());
                progress(rows.len() * cols.len());
                d
            })
            .collect::<Result<_, _>>()?;
        let mut d = vec![0u64; g.m * g.n];
        for ((rows, cols), block) in blocks.iter().zip(done) {
            for (ti, i) in rows.clone().enumerate() {
                d[i * g.n + cols.start..i * g.n + cols.end].copy_from_slice(&block[ti * cols.len()..(ti + 1) * cols.len()]);
            }
        }
        Ok(d)
    }

    /// Element (i, j) of D under `plan` (a 1×1 block).
    pub fn element(&self, g: &Gemm, plan: &Plan, i: usize, j: usize) -> Result<u64, GemmError> {
        Ok(self.block(g, plan, i..i + 1, j..j + 1)?[0])
    }

    /// The elements of D in `rows` × `cols`, row-major: each slice's chains run as one tile of
    /// the instruction arithmetic (the emulator's lane kernel takes eight columns at a time).
    pub fn block(&self, g: &Gemm, plan: &Plan, rows: Range<usize>, cols: Range<usize>) -> Result<Vec<u64>, GemmError> {
        self.check_scalars(g, plan)?;
        let g = &*self.scaled(g, plan);
        self.block_of(&self.chain_operands(g, plan), g, plan, rows, cols)
    }

    fn block_of(&self, ops: &ChainOperands, g: &Gemm, plan: &Plan, rows: Range<usize>, cols: Range<usize>) -> Result<Vec<u64>, GemmError> {
        let (row_list, col_list): (Vec<usize>, Vec<usize>) = (rows.clone().collect(), cols.clone().collect());
        let partials = self.partials(ops, g, plan, &row_list, &col_list, false)?;
        Ok(self.finish_each(g, plan, &partials, rows.flat_map(|i| cols.clone().map(move |j| (i, j)))))
    }

    /// D at the elements `at` (row, column), in that order, each its own dot product wherever
    /// it lies: up to [`ELEMENTS_AT_ONCE`] at a time run as the diagonal of one tile of the
    /// instruction arithmetic (`Emulator::run_diagonal`: a lane of the kernel each), batches in
    /// parallel (rayon).
    pub fn elements(&self, g: &Gemm, plan: &Plan, at: &[(usize, usize)]) -> Result<Vec<u64>, GemmError> {
        use rayon::prelude::*;
        self.check_scalars(g, plan)?;
        let g = &*self.scaled(g, plan);
        // Fewer at once for deep K: a batch's operands are its count times k of each.
        let batch = (ELEMENT_OPERANDS / g.k.max(1)).clamp(8, ELEMENTS_AT_ONCE) / 8 * 8;
        let ops = self.chain_operands(g, plan);
        let done: Vec<Vec<u64>> = at
            .par_chunks(batch)
            .map(|cells| {
                let (rows, cols): (Vec<usize>, Vec<usize>) = cells.iter().copied().unzip();
                let partials = self.partials(&ops, g, plan, &rows, &cols, true)?;
                Ok(self.finish_each(g, plan, &partials, cells.iter().copied()))
            })
            .collect::<Result<_, GemmError>>()?;
        Ok(done.concat())
    }

    /// Each slice's partial sum (`partials[s][e]`) for the elements of `rows` × `cols`
    /// (row-major), or with `diagonal` for the elements (rows[e], cols[e]).
    fn partials(&self, ops: &ChainOperands, g: &Gemm, plan: &Plan, rows: &[usize], cols: &[usize], diagonal: bool) -> Result<Vec<Vec<f64>>, GemmError> {
        let r = &self.model.rules;
        let count = if diagonal { rows.len() } else { rows.len() * cols.len() };
        let mut partials: Vec<Vec<f64>> = Vec::with_capacity(plan.slices.len());
        for (s, ks) in ops.ks.iter().enumerate() {
            // One chain per slice, or per promotion stretch of it, added in the compute format.
            let stretch = plan.promote_every.or(r.promote_every).unwrap_or(ks.len()).max(1);
            let mut sum: Option<Vec<f64>> = None;
            for (t, part_ks) in ks.chunks(stretch).enumerate() {
                let seed = (s == 0 && t == 0).then(|| self.seeds_chain(g, plan)).flatten();
                let part = self.chain_tile(ops, g, plan, rows, cols, diagonal, part_ks, seed)?;
                sum = Some(match sum {
                    None => part,
                    Some(s) => s.iter().zip(&part).map(|(&x, &y)| add(r.compute, x, y)).collect(),
                });
            }
            partials.push(sum.unwrap_or_else(|| vec![0.0; count]));
        }
        Ok(partials)
    }

    /// Where the plan adds C (or the bias) in the chain (`CAdd::Chain`, K not split): which
    /// addend the first chain starts from (-0 where the GEMM has neither).
    fn seeds_chain<'g>(&self, g: &'g Gemm, plan: &Plan) -> Option<Addend<'g>> {
        if plan.slices.len() != 1 {
            return None;
        }
        match (&g.c, &g.bias) {
            (Some(c), _) if plan.c_add == CAdd::Chain => Some(Addend::C(c)),
            (None, Some(b)) if plan.bias_add == Some(CAdd::Chain) => Some(Addend::Bias(b)),
            // Without C the FMA's addend is -0, so D is the product itself, -0 included.
            (None, None) if plan.c_add == CAdd::Chain => Some(Addend::NegZero),
            _ => None,
        }
    }

    /// D at each of `cells`, element e of them from `partials[s][e]` of every slice s.
    fn finish_each(&self, g: &Gemm, plan: &Plan, partials: &[Vec<f64>], cells: impl Iterator<Item = (usize, usize)>) -> Vec<u64> {
        let mut ps = Vec::with_capacity(partials.len());
        cells
            .enumerate()
            .map(|(e, (i, j))| {
                ps.clear();
                ps.extend(partials.iter().map(|p| p[e]));
                self.finish(g, plan, i, j, &ps)
            })
            .collect()
    }

    /// D(i, j) from its slices' partial sums: the reduction, C or the bias, the rounding.
    fn finish(&self, g: &Gemm, plan: &Plan, i: usize, j: usize, partials: &[f64]) -> u64 {
        let r = &self.model.rules;
        let (compute, output) = (r.compute, r.output);
        let c = g.c.as_ref().map(|c| output.to_f64(c[i * g.n + j]));
        let bias = g.bias.as_ref().map(|b| output.to_f64(b[j]));
        let round_out = |x: f64| output.to_f64(self.to_output(x));
        match plan.reduction {
            // Serial split-K in the output buffer: the first slice writes its epilogue result,
            // each later one adds its partial sum to what D holds and writes it back rounded.
            Reduction::Inplace => {
                let first = if plan.bias_last { c } else { c.or(bias) };
                let mut d = self.to_output(self.epilogue(partials[0], first, CAdd::Compute, plan.c_nan_first));
                for &p in &partials[1..] {
                    d = self.to_output(add(compute, output.to_f64(d), p));
                }
                match bias {
                    Some(b) if plan.bias_last => self.to_output(add(compute, output.to_f64(d), b)),
                    _ => d,
                }
            }
            reduction => {
                let sum = match &plan.sum {
                    // The kernel's own order (split-K reductions in the compute format, lanes of
                    // GEMV-like kernels).
                    Some(tree) if reduction != Reduction::OutputType => tree.eval(partials, |x, y| add(compute, x, y)),
                    _ => {
                        let mut sum: Option<f64> = None;
                        let in_output = reduction == Reduction::OutputType && r.output_type_sum == CAdd::Output;
                        for &p in partials {
                            let p = if reduction == Reduction::OutputType { round_out(p) } else { p };
                            sum = Some(sum.map_or(p, |s| if in_output { round_out(s + p) } else { add(compute, s, p) }));
                        }
                        sum.unwrap_or(0.0)
                    }
                };
                // A kernel without split-K adds C in its own epilogue (in D's format where the
                // model says so); a split-K reduction and the bias epilogue add in f32.
                let c_add = match (c.is_some(), bias.is_some()) {
                    (true, _) if plan.slices.len() == 1 => plan.c_add,
                    (false, true) if plan.bias_add.is_some() => plan.bias_add.unwrap_or_default(),
                    (false, true) if reduction == Reduction::OutputType => r.output_type_bias,
                    _ => CAdd::Compute,
                };
                let scalars = self.scalars.for_c(c.is_some());
                if !scalars.is_one() {
                    // No bias, no in-place reduction (`check_scalars`): α and β where the
                    // kernel's epilogue (or its split-K reduction) adds C.
                    return self.to_output(scalars.epilogue(sum, c, c_add, plan.scalars.expect("check_scalars"), output));
                }
                self.to_output(self.epilogue(sum, c.or(bias), c_add, plan.c_nan_first))
            }
        }
    }

    /// A value (exact in the compute format) rounded into D's format; a NaN as the model's
    /// `output_nan` says.
    fn to_output(&self, x: f64) -> u64 {
        let out = self.model.rules.output;
        if !x.is_nan() {
            return round_to(out, x);
        }
        match self.model.rules.output_nan {
            NanOutput::AllOnes => out.nan_bits(false, u64::MAX),
            NanOutput::Propagate if out == Format::F64 => x.to_bits(),
            NanOutput::Propagate | NanOutput::Canonical => out.nan_bits(false, 0),
        }
    }

    /// The sum plus C (or the bias), before the final rounding into D: exact in the compute
    /// format where `c_add` is `Compute`, the two D-format values' exact sum otherwise.
    /// Where both are NaN, D carries C's with `c_nan_first`, else the sum's (DGEMM on the H100,
    /// scripts/torch-nan-duel.py: the tiled algorithms 35 and 36 and the split GEMV algorithm 14
    /// keep C's, algorithm 22 and the GEMV algorithm 13 the sum's).
    fn epilogue(&self, sum: f64, addend: Option<f64>, c_add: CAdd, c_nan_first: bool) -> f64 {
        let r = &self.model.rules;
        match (addend, c_add) {
            (None, _) => sum,
            (Some(c), CAdd::Compute) if c.is_nan() && (c_nan_first || !sum.is_nan()) => c,
            (Some(_), CAdd::Compute) if sum.is_nan() => sum,
            (Some(c), CAdd::Compute) => add(r.compute, sum, c),
            (Some(c), CAdd::Output) => r.output.to_f64(round_to(r.output, sum)) + c,
            // Already in the chain (`seeds_chain`).
            (Some(_), CAdd::Chain) => sum,
        }
    }

    /// The operands as `plan`'s chains read them, converted once per GEMM rather than once per
    /// tile or batch of elements (a record's sampled rows and columns serve many of each).
    fn chain_operands<'g>(&self, g: &'g Gemm, plan: &Plan) -> ChainOperands<'g> {
        use std::borrow::Cow;
        let r = &self.model.rules;
        // A chain rule may read the stored inputs as they are (SIMT kernels on the TF32 path).
        let direct = plan.chain.checked_sub(1).and_then(|c| r.chains[c].chain_inputs);
        // A direct chain reads the stored values, widened exactly where its format is wider
        // (SIMT GEMV kernels convert f16/bf16 to f32 and chain FMAs).
        let widen = |f: Format, from: Format, bits: &'g [u64]| -> Cow<'g, [u64]> {
            if f == from {
                Cow::Borrowed(bits)
            } else {
                Cow::Owned(bits.iter().map(|&x| round_to(f, from.to_f64(x))).collect())
            }
        };
        let convert = |bits: &'g [u64]| -> Cow<'g, [u64]> {
            if self.converts() {
                Cow::Owned(bits.iter().map(|&x| self.convert(x)).collect())
            } else {
                Cow::Borrowed(bits)
            }
        };
        let (a_fmt, b_fmt, a, b) = match direct {
            Some(f) => (f, f, widen(f, r.inputs, &g.a), widen(f, r.b_inputs(), &g.b)),
            None => (r.chain_format(), r.chain_b_format(), convert(&g.a), convert(&g.b)),
        };
        let ks = plan.slices.iter().map(|slice| slice.iter().flat_map(|r| r.clone()).collect()).collect();
        ChainOperands { a_fmt, b_fmt, a, b, ks }
    }

    /// One chain of the instruction from +0 over these k, in order, in the compute format, for
    /// every element of `rows` × `cols` (row-major), or with `diagonal` for each (rows[e],
    /// cols[e]).
    #[allow(clippy::too_many_arguments)]
    fn chain_tile(&self, ops: &ChainOperands, g: &Gemm, plan: &Plan, rows: &[usize], cols: &[usize], diagonal: bool, ks: &[usize], seed: Option<Addend>) -> Result<Vec<f64>, GemmError> {
        let r = &self.model.rules;
        let len = ks.len();
        // A partial first k-tile is padded with zero products to a whole tile, so the
        // instruction's blocks start after it, as in the kernel's k-loop.
        let (head, pad) = match plan.residue_first {
            Some(kt) if len % kt != 0 && len > kt => (len % kt, kt - len % kt),
            _ => (len, 0),
        };
        let (bm, bn, kp) = (rows.len(), cols.len(), len + pad);
        let mut case = MmaCase::zeros(ops.a_fmt, r.compute, bm, bn, kp);
        case.b_fmt = ops.b_fmt;
        let at = |t: usize| if t < head { t } else { t + pad };
        // Consecutive k without padding (most slices): a row of A is one copy.
        let run = (pad == 0 && ks.windows(2).all(|w| w[1] == w[0] + 1)).then(|| ks.first().map_or(0, |&k0| k0));
        for (ti, &i) in rows.iter().enumerate() {
            let (src, dst) = (&ops.a[i * g.k..(i + 1) * g.k], &mut case.a[ti * kp..(ti + 1) * kp]);
            match run {
                Some(k0) => dst.copy_from_slice(&src[k0..k0 + len]),
                None => ks.iter().enumerate().for_each(|(t, &kk)| dst[at(t)] = src[kk]),
            }
        }
        for (t, &kk) in ks.iter().enumerate() {
            let (src, dst) = (&ops.b[kk * g.n..(kk + 1) * g.n], &mut case.b[at(t) * bn..(at(t) + 1) * bn]);
            for (d, &j) in dst.iter_mut().zip(cols) {
                *d = src[j];
            }
        }
        if let Some(addend) = seed {
            // The chain starts from C (or the bias), in the compute format (exact: it holds D's).
            let (compute, output) = (r.compute, r.output);
            let value = |i: usize, j: usize| round_to(compute, addend.at(output, g.n, i, j));
            if diagonal {
                for (e, (&i, &j)) in rows.iter().zip(cols).enumerate() {
                    case.c[e * bn + e] = value(i, j);
                }
            } else {
                for (ti, &i) in rows.iter().enumerate() {
                    for (tj, &j) in cols.iter().enumerate() {
                        case.c[ti * bn + tj] = value(i, j);
                    }
                }
            }
        }
        let emulator = &self.emulators[plan.chain];
        let d = if diagonal { emulator.run_diagonal(&case)? } else { emulator.run(&case)? };
        Ok(d.into_iter().map(|bits| r.compute.to_f64(bits)).collect())
    }

    /// Whether [`LibraryEmulator::convert`] changes any bits.
    fn converts(&self) -> bool {
        let r = &self.model.rules;
        r.chain_format() != r.inputs && r.input_conversion != InputConversion::Truncate
    }

    fn convert(&self, bits: u64) -> u64 {
        let r = &self.model.rules;
        if r.chain_format() == r.inputs {
            return bits;
        }
        match (r.input_conversion, r.inputs) {
            (InputConversion::Truncate, _) => bits,
            (InputConversion::Rna, f) => round_with(r.chain_format(), f.to_f64(bits), Rounding::Rna),
            (InputConversion::Rne, f) => round_with(r.chain_format(), f.to_f64(bits), Rounding::Rne),
        }
    }
}

/// A GEMM's operands as a plan's chains read them: A (m×k) and B (k×n) in the chains' input
/// formats, and each slice's k in order.
/// What a chain seeded with the addend starts from: C (m×n), the bias (one per column), or -0
/// where there is neither.
#[derive(Clone, Copy)]
enum Addend<'g> {
    C(&'g [u64]),
    Bias(&'g [u64]),
    NegZero,
}

impl Addend<'_> {
    /// The addend of element (i, j), as a value.
    fn at(self, output: Format, n: usize, i: usize, j: usize) -> f64 {
        match self {
            Addend::C(c) => output.to_f64(c[i * n + j]),
            Addend::Bias(b) => output.to_f64(b[j]),
            Addend::NegZero => -0.0,
        }
    }
}

struct ChainOperands<'g> {
    a_fmt: Format,
    b_fmt: Format,
    a: std::borrow::Cow<'g, [u64]>,
    b: std::borrow::Cow<'g, [u64]>,
    ks: Vec<Vec<usize>>,
}

/// `x + y` rounded to nearest in `f` (f32 or f64).
fn add(f: Format, x: f64, y: f64) -> f64 {
    match f {
        Format::F64 => x + y,
        _ => (x as f32 + y as f32) as f64,
    }
}

/// An f64 value (exact in the compute format) rounded to nearest-even into `f`.
pub fn round_to(f: Format, x: f64) -> u64 {
    round_with(f, x, Rounding::Rne)
}

fn round_with(f: Format, x: f64, rnd: Rounding) -> u64 {
    if let Some(bits) = round_f32_value(f, x, rnd) {
        return bits;
    }
    let d = Format::F64.decode(x.to_bits());
    match d.class {
        Class::Nan => f.nan_bits(false, 0),
        Class::Inf => f.inf_bits(d.neg),
        Class::Zero | Class::Finite => f.round(d.neg, d.sig as u128, d.exp, false, rnd, Overflow::Ieee),
    }
}

/// [`round_with`] where it is a bit operation: `x` a finite f32 value and `f` a format of
/// f32's exponent range (f32, tf32, bf16), rounded to nearest (even or away) or toward zero.
/// The f32 pattern's low bits go, with the carry into the exponent that rounding up at the top
/// of a binade (or of the range: infinity) takes. `None` where the general rounding is needed.
/// Library replays convert every operand element they read (f32 to tf32 on the TF32 paths).
fn round_f32_value(f: Format, x: f64, rnd: Rounding) -> Option<u64> {
    let y = x as f32;
    if !y.is_finite() || y as f64 != x {
        return None;
    }
    let bits = y.to_bits();
    let drop = match f {
        Format::F32 => return Some(bits as u64),
        Format::Tf32 => 13,
        Format::Bf16 => 16,
        _ => return None,
    };
    let half = 1u32 << (drop - 1);
    let up = match rnd {
        Rounding::Rne => half - 1 + ((bits >> drop) & 1),
        Rounding::Rna => half,
        Rounding::Rz => 0,
        _ => return None,
    };
    let kept = (bits + up) >> drop << drop;
    Some(if f == Format::Bf16 { (kept >> 16) as u64 } else { kept as u64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked transpose is the transpose, at sizes that cut its blocks anywhere.
    #[test]
    fn transpose_in_blocks() {
        for (rows, cols) in [(1, 1), (1, 70), (33, 1), (33, 70), (64, 32), (100, 3)] {
            let x: Vec<f64> = (0..rows * cols).map(|v| v as f64).collect();
            let t = super::transpose(&x, rows, cols);
            for (r, c) in (0..rows).flat_map(|r| (0..cols).map(move |c| (r, c))) {
                assert_eq!(t[c * rows + r], x[r * cols + c], "{rows}x{cols} at {r}, {c}");
            }
        }
    }

    #[test]
    fn bit_rounding_of_f32_values_equals_the_general_rounding() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let general = |f: Format, x: f64, rnd: Rounding| {
            let d = Format::F64.decode(x.to_bits());
            f.round(d.neg, d.sig as u128, d.exp, false, rnd, Overflow::Ieee)
        };
        // Random patterns, and the edges: ties, the top of a binade and of the range, subnormals.
        let mut xs: Vec<u32> = (0..200_000).map(|_| rng.gen()).collect();
        xs.extend([0x0000_0000, 0x8000_0000, 0x0000_1000, 0x0000_0fff, 0x0000_8000, 0x007f_ffff, 0x0080_0000, 0x3f80_1000, 0x3f80_3000, 0x3f80_8000, 0x3f81_8000, 0x3fff_ffff, 0x7f7f_ffff, 0xff7f_f000, 0x7f7f_8000, 0x0000_0001]);
        let mut fast = 0;
        for &b in &xs {
            let x = f32::from_bits(b) as f64;
            for f in [Format::F32, Format::Tf32, Format::Bf16] {
                for rnd in [Rounding::Rne, Rounding::Rna, Rounding::Rz] {
                    if let Some(got) = round_f32_value(f, x, rnd) {
                        fast += 1;
                        assert_eq!(got, general(f, x, rnd), "{b:08x} into {f} {rnd:?}");
                    }
                }
            }
        }
        // Every finite pattern takes the bit path; NaN and infinities do not.
        assert!(fast > 9 * 190_000, "{fast}");
        assert_eq!(round_f32_value(Format::Tf32, f64::NAN, Rounding::Rne), None);
        assert_eq!(round_f32_value(Format::F16, 1.0, Rounding::Rne), None);
        assert_eq!(round_f32_value(Format::Tf32, 1.0 + f64::EPSILON, Rounding::Rne), None);
    }

    #[test]
    fn f_linear_with_a_single_weight_row_or_column_is_addmm() {
        let g = |m: usize, n: usize, k: usize| Gemm { m, n, k, a: vec![1; m * k], b: vec![2; k * n], c: None, bias: Some((0..n as u64).map(|j| 10 + j).collect()) };
        // One output feature: addmm's GEMM with β = 1 and every row of C the bias.
        let one = g(3, 1, 4).as_torch_linear();
        assert_eq!((one.c, one.bias), (Some(vec![10; 3]), None));
        let k1 = g(2, 3, 1).as_torch_linear();
        assert_eq!((k1.c, k1.bias), (Some(vec![10, 11, 12, 10, 11, 12]), None));
        // One input row keeps the bias epilogue; so does every larger shape.
        for (m, n, k) in [(1, 3, 4), (2, 3, 4)] {
            let same = g(m, n, k).as_torch_linear();
            assert_eq!((same.c, same.bias), (None, Some(vec![10, 11, 12])));
        }
        // Without a bias nothing changes.
        let plain = Gemm { bias: None, ..g(3, 1, 4) }.as_torch_linear();
        assert_eq!((plain.c, plain.bias), (None, None));
    }

    /// NaN in D as cuBLAS writes it on the H100 (scripts/torch-specials.py): every fraction
    /// bit set for f32 D whatever NaN went in; DGEMM carries the f64 NaN (inf − inf gives
    /// fff8000000000000) unless C is NaN, whose NaN D then holds.
    #[test]
    fn nan_in_d_is_what_the_library_writes() {
        use crate::library::{KernelConfig, LibraryModel};
        let run_with = |name: &str, config: &str, a: Vec<u64>, b: Vec<u64>, c: Option<Vec<u64>>| {
            let model = LibraryModel::load(name, None).unwrap();
            let emu = LibraryEmulator::new(&model);
            let g = Gemm { m: 1, n: 1, k: a.len(), a, b, c, bias: None };
            let plan = emu.plan(&g, &KernelConfig::from_log(config).unwrap()).unwrap();
            emu.element(&g, &plan, 0, 0).unwrap()
        };
        let run = |name: &str, a, b, c| run_with(name, "algoId=13 customOption=83", a, b, c);
        let f32b = |x: f32| x.to_bits() as u64;
        let quiet_nan = f32b(f32::NAN);
        assert_eq!(run("h100:cublas.gemm.f32.f32.f32.f32", vec![quiet_nan, f32b(1.0)], vec![f32b(1.0); 2], None), 0x7fff_ffff);
        let f64b = |x: f64| x.to_bits();
        let (inf, one) = (f64b(f64::INFINITY), f64b(1.0));
        let dgemm = "h100:cublas.gemm.f64.f64.f64.f64";
        let invalid = run(dgemm, vec![inf, f64b(-f64::INFINITY)], vec![one, one], None);
        assert_eq!(invalid, 0xfff8_0000_0000_0000);
        // Sum and C both NaN: the GEMV kernel keeps the sum's, the tiled kernel C's.
        let c_nan = Some(vec![0x7ff8_0000_0000_00c3]);
        assert_eq!(run(dgemm, vec![inf, f64b(-f64::INFINITY)], vec![one, one], c_nan.clone()), 0xfff8_0000_0000_0000);
        let tiled = "algoId=35 tile=MATMUL_TILE_32x32 stages=MATMUL_STAGES_32x5";
        assert_eq!(run_with(dgemm, tiled, vec![inf, f64b(-f64::INFINITY)], vec![one, one], c_nan.clone()), 0x7ff8_0000_0000_00c3);
        // A finite sum under a NaN C is C's NaN everywhere.
        assert_eq!(run(dgemm, vec![one, one], vec![one, one], c_nan), 0x7ff8_0000_0000_00c3);
    }

    #[test]
    fn rounding_helper_agrees_with_native_conversions() {
        for x in [1.0f64, -2.5, 65504.0, 65520.0, 1e-8, 3.0e38, 1.0 + f64::EPSILON, 0.1] {
            assert_eq!(round_to(Format::F32, x), (x as f32).to_bits() as u64, "{x}");
            assert_eq!(round_to(Format::F16, x), half::f16::from_f64(x).to_bits() as u64, "{x}");
            assert_eq!(round_to(Format::Bf16, x), half::bf16::from_f64(x).to_bits() as u64, "{x}");
        }
    }
}
