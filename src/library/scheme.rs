//! Precision refinement over library GEMMs, the seed scenario of Markidis et al. (2018): an f32
//! matrix is split into a half-precision part and its half-precision residual,
//! `A = A16 + R_A` (`A16 = fp16(A)`, `R_A = fp16(A - A16)`, the subtraction in f32), and the
//! product is summed from three or four FP16-in/FP32-out tensor-core GEMMs, each added onto the
//! previous result as `torch.addmm(D, X, Y, out_dtype=torch.float32)` does (β = 1).
//!
//! The plain schemes around it: `f16` (one FP16→FP32 GEMM of the rounded inputs), `f32`
//! (SGEMM, no TF32) and `tf32` (FP32 arrays, TF32 tensor cores). Every step is a library GEMM
//! of its path's model, so a scheme is emulated bit for bit where each step's kernel is known.

use super::config::KernelConfig;
use super::gemm::{Gemm, GemmError, LibraryEmulator};
use super::{LibraryError, LibraryModel};
use crate::exact::{exact_element, Exact};
use crate::format::Format;
use crate::case::MmaCase;
use rug::Float;

/// One operand of a step: the f32 input itself, its FP16 rounding, or the FP16 residual.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Full,
    Half,
    Residual,
}

/// A refinement or plain scheme: which GEMMs it runs, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scheme {
    /// A16·B16 in one FP16→FP32 GEMM.
    F16,
    /// A16·B16 + R_A·B16 + A16·R_B (Markidis et al.'s refinement with three products).
    Markidis3,
    /// Markidis3 + R_A·R_B.
    Markidis4,
    /// SGEMM on the f32 arrays (TF32 off).
    F32,
    /// The f32 arrays through TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32).
    Tf32,
}

/// One GEMM of a scheme: the library path, A's part, B's part; every step after the first
/// adds onto the previous result (β = 1).
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub path: &'static str,
    pub a: Part,
    pub b: Part,
}

const HALF_PATH: &str = "h100:cublas.gemm.f32.f16.f16.f32";

impl Scheme {
    pub const ALL: [Scheme; 5] = [Scheme::F16, Scheme::Markidis3, Scheme::Markidis4, Scheme::F32, Scheme::Tf32];

    pub fn name(self) -> &'static str {
        match self {
            Scheme::F16 => "f16",
            Scheme::Markidis3 => "markidis3",
            Scheme::Markidis4 => "markidis4",
            Scheme::F32 => "f32",
            Scheme::Tf32 => "tf32",
        }
    }

    pub fn from_name(name: &str) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn steps(self) -> Vec<Step> {
        let half = |a, b| Step { path: HALF_PATH, a, b };
        match self {
            Scheme::F16 => vec![half(Part::Half, Part::Half)],
            Scheme::Markidis3 => vec![half(Part::Half, Part::Half), half(Part::Residual, Part::Half), half(Part::Half, Part::Residual)],
            Scheme::Markidis4 => {
                let mut s = Scheme::Markidis3.steps();
                s.push(half(Part::Residual, Part::Residual));
                s
            }
            Scheme::F32 => vec![Step { path: "h100:cublas.gemm.f32.f32.f32.f32", a: Part::Full, b: Part::Full }],
            Scheme::Tf32 => vec![Step { path: "h100:cublas.gemm.f32.tf32.tf32.f32", a: Part::Full, b: Part::Full }],
        }
    }
}

/// The parts of f32 values (raw bits): FP16 rounding to nearest even and the FP16 residual of
/// the f32 difference, as `x.half()` and `(x - x.half().float()).half()` compute them.
pub fn split(x: u32) -> (u16, u16) {
    let v = f32::from_bits(x);
    let hi = half::f16::from_f32(v);
    let lo = half::f16::from_f32(v - hi.to_f32());
    (hi.to_bits(), lo.to_bits())
}

#[derive(Debug, thiserror::Error)]
pub enum SchemeError {
    #[error(transparent)]
    Library(#[from] LibraryError),
    #[error("step {step} ({path}): {error}")]
    Step { step: usize, path: &'static str, error: GemmError },
    #[error("{0}")]
    Shape(String),
}

/// An f32 GEMM A (m×k) · B (k×n) of which a block of D is wanted: the block's rows of A
/// (`rows` × k, row-major f32 bits) and its columns of B (k × `cols`, row-major). For all of D,
/// A and B themselves.
#[derive(Clone, Debug)]
pub struct SchemeProblem {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub rows: usize,
    pub cols: usize,
    pub a: Vec<u32>,
    pub b: Vec<u32>,
}

impl SchemeProblem {
    /// The block of D at `rows` × `cols` of A·B, with element `(i, kk)` of A and `(kk, j)` of
    /// B given by the functions (row-major indices of the full matrices).
    pub fn block(m: usize, n: usize, k: usize, rows: &[usize], cols: &[usize], a: impl Fn(usize) -> u32, b: impl Fn(usize) -> u32) -> Self {
        let a = rows.iter().flat_map(|&i| (0..k).map(move |kk| i * k + kk)).map(&a).collect();
        let b = (0..k).flat_map(|kk| cols.iter().map(move |&j| kk * n + j)).map(&b).collect();
        SchemeProblem { m, n, k, rows: rows.len(), cols: cols.len(), a, b }
    }

    fn check(&self) -> Result<(), SchemeError> {
        let (m, n, k) = (self.m, self.n, self.k);
        if m == 0 || n == 0 || k == 0 || self.rows > m || self.cols > n || self.a.len() != self.rows * k || self.b.len() != k * self.cols {
            return Err(SchemeError::Shape(format!("operands do not fit {m}x{n}x{k} (block {}x{})", self.rows, self.cols)));
        }
        Ok(())
    }

    fn part(v: &[u32], part: Part) -> Vec<u64> {
        v.iter().map(|&x| pick(x, part)).collect()
    }
}

fn pick(x: u32, part: Part) -> u64 {
    match part {
        Part::Full => x as u64,
        Part::Half => split(x).0 as u64,
        Part::Residual => split(x).1 as u64,
    }
}

/// D of a scheme on the wanted block (f32 bits, rows × cols row-major): every step a library
/// GEMM under its path's model, the kernel of the full shape from `configs[step]` where given,
/// else from the model's learned table.
pub fn run(scheme: Scheme, p: &SchemeProblem, configs: &[Option<KernelConfig>], progress: &(dyn Fn(usize) + Sync)) -> Result<Vec<u64>, SchemeError> {
    p.check()?;
    let steps = scheme.steps();
    // Each path's model once (the refinement runs three or four GEMMs on one path).
    let mut models: Vec<(&str, LibraryModel)> = Vec::new();
    for step in &steps {
        if !models.iter().any(|(path, _)| *path == step.path) {
            models.push((step.path, LibraryModel::load(step.path, None)?));
        }
    }
    let mut d: Option<Vec<u64>> = None;
    for (s, step) in steps.into_iter().enumerate() {
        let lm = &models.iter().find(|(path, _)| *path == step.path).expect("loaded above").1;
        let emu = LibraryEmulator::new(lm);
        let err = |error| SchemeError::Step { step: s + 1, path: step.path, error };
        // The kernel is the one the library runs for the whole problem.
        let whole = Gemm { m: p.m, n: p.n, k: p.k, a: Vec::new(), b: Vec::new(), c: d.as_ref().map(|_| Vec::new()), bias: None };
        let config = match configs.get(s).cloned().flatten() {
            Some(c) => c,
            None => emu.config(&whole).map_err(err)?.clone(),
        };
        let plan = emu.plan(&whole, &config).map_err(err)?;
        let g = Gemm { m: p.rows, n: p.cols, k: p.k, a: SchemeProblem::part(&p.a, step.a), b: SchemeProblem::part(&p.b, step.b), c: d.take(), bias: None };
        emu.check(&g).map_err(err)?;
        d = Some(emu.run(&g, &plan, progress).map_err(err)?);
    }
    Ok(d.expect("every scheme has a step"))
}

/// Errors of computed f32 elements against the exact product of the f32 inputs (MPFR).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ErrorStats {
    /// Largest |d - exact| / |exact|.
    pub max_rel: f64,
    /// Mean of |d - exact| / |exact|.
    pub mean_rel: f64,
    /// ‖D - exact‖_F / ‖exact‖_F over the elements.
    pub norm_rel: f64,
    pub elements: usize,
}

/// The error of `d` (f32 bits of the block, row-major) against the exact products.
pub fn errors(p: &SchemeProblem, d: &[u64]) -> ErrorStats {
    use rayon::prelude::*;
    let per: Vec<(f64, f64, f64)> = (0..p.rows * p.cols)
        .into_par_iter()
        .map(|e| {
            let (i, j) = (e / p.cols, e % p.cols);
            let mut case = MmaCase::zeros(Format::F32, Format::F32, 1, 1, p.k);
            case.a.iter_mut().zip(&p.a[i * p.k..(i + 1) * p.k]).for_each(|(x, &y)| *x = y as u64);
            case.b.iter_mut().enumerate().for_each(|(kk, x)| *x = p.b[kk * p.cols + j] as u64);
            let exact = match exact_element(&case, 0, 0) {
                Exact::Finite(x) => x,
                _ => Float::with_val(64, 0),
            };
            let got = Float::with_val(exact.prec().max(64) + 64, f32::from_bits(d[e] as u32));
            let diff = (got - &exact).abs().to_f64();
            let x = exact.to_f64();
            (if x == 0.0 { 0.0 } else { diff / x.abs() }, diff * diff, x * x)
        })
        .collect();
    let n = per.len().max(1);
    let (sq_diff, sq_x): (f64, f64) = (per.iter().map(|e| e.1).sum(), per.iter().map(|e| e.2).sum());
    ErrorStats {
        max_rel: per.iter().map(|e| e.0).fold(0.0, f64::max),
        mean_rel: per.iter().map(|e| e.0).sum::<f64>() / n as f64,
        norm_rel: if sq_x > 0.0 { (sq_diff / sq_x).sqrt() } else { 0.0 },
        elements: per.len(),
    }
}

/// One GPU run of a scheme as `scripts/torch-scheme.py` records it: an N×N×N problem of
/// generated f32 matrices, a 32×32 block of D and the kernel of each step.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
pub struct SchemeRecord {
    pub gpu: String,
    pub driver: String,
    pub torch: String,
    #[serde(default)]
    pub cublas: String,
    pub scheme: String,
    pub n: usize,
    pub seed: u64,
    pub rows: Vec<usize>,
    pub cols: Vec<usize>,
    /// The text of `algo=[...]` of each step's call, in order.
    pub configs: Vec<String>,
    /// D at rows × cols, f32 bits in hex, row-major.
    pub d: Vec<String>,
}

/// A scheme record emulated: how many elements match the GPU bit for bit.
#[derive(Clone, Debug)]
pub struct SchemeReplay {
    pub scheme: Scheme,
    pub elements: usize,
    pub equal: usize,
    /// The first differing element: (row, column, GPU bits, model bits).
    pub first_miss: Option<(usize, usize, u32, u32)>,
    /// The GPU's D, the problem, for error statistics.
    pub gpu: Vec<u64>,
    pub problem: SchemeProblem,
}

impl SchemeRecord {
    pub fn parse(line: &str) -> Result<SchemeRecord, String> {
        let r: SchemeRecord = serde_json::from_str(line).map_err(|e| e.to_string())?;
        if r.n == 0 || r.rows.iter().chain(&r.cols).any(|&x| x >= r.n) {
            return Err(format!("rows and columns must lie inside {0}x{0}", r.n));
        }
        if r.d.len() != r.rows.len() * r.cols.len() {
            return Err(format!("'d' has {} elements for a {}x{} block", r.d.len(), r.rows.len(), r.cols.len()));
        }
        Ok(r)
    }

    /// Regenerate the operands, emulate the steps with the logged kernels, compare with D.
    pub fn replay(&self) -> Result<SchemeReplay, SchemeError> {
        use super::libgen::{element, Operand};
        let scheme = Scheme::from_name(&self.scheme).ok_or_else(|| SchemeError::Shape(format!("unknown scheme '{}'", self.scheme)))?;
        if self.configs.len() != scheme.steps().len() {
            return Err(SchemeError::Shape(format!("{} has {} steps, the record {} configurations", self.scheme, scheme.steps().len(), self.configs.len())));
        }
        let configs = self
            .configs
            .iter()
            .map(|c| KernelConfig::from_log(c).map(Some))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SchemeError::Shape(format!("configuration: {e}")))?;
        let gpu = self
            .d
            .iter()
            .map(|h| u32::from_str_radix(h, 16).map(|x| x as u64))
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| SchemeError::Shape("'d' holds a value that is not hex f32 bits".into()))?;
        let (n, seed) = (self.n, self.seed);
        let gen = |op| move |x: usize| element(Format::F32, seed, op, x as u64) as u32;
        let problem = SchemeProblem::block(n, n, n, &self.rows, &self.cols, gen(Operand::A), gen(Operand::B));
        let model = run(scheme, &problem, &configs, &|_| ())?;
        let equal = model.iter().zip(&gpu).filter(|(x, y)| x == y).count();
        let first_miss = (0..gpu.len()).find(|&e| model[e] != gpu[e]).map(|e| (self.rows[e / self.cols.len()], self.cols[e % self.cols.len()], gpu[e] as u32, model[e] as u32));
        Ok(SchemeReplay { scheme, elements: gpu.len(), equal, first_miss, gpu, problem })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_half_plus_residual() {
        for x in [1.0f32, 0.1, -3.14159, 1.0e-3, 6.0e4, 1.0 + f32::EPSILON] {
            let (hi, lo) = split(x.to_bits());
            let (hi, lo) = (half::f16::from_bits(hi).to_f32(), half::f16::from_bits(lo).to_f32());
            assert_eq!(hi, half::f16::from_f32(x).to_f32());
            // The residual is the f32 difference rounded to f16: 22 bits together, less where
            // the residual falls among f16's subnormals (spacing 2^-24).
            assert!((hi + lo - x).abs() <= (hi - x).abs(), "{x}");
            assert!((hi + lo - x).abs() <= (x.abs() * 2f32.powi(-22)).max(2f32.powi(-25)), "{x}: {hi} + {lo}");
        }
    }

    #[test]
    fn refinement_beats_plain_half_and_steps_chain() {
        // A small problem with a recorded kernel: refinement must cut the error by orders of
        // magnitude, and each scheme's step list must add products onto the previous result.
        let (m, n, k) = (64, 64, 64);
        let gen = |op, count| crate::library::libgen::elements(Format::F32, 9, op, count).into_iter().map(|x| x as u32).collect::<Vec<u32>>();
        let (a, b) = (gen(crate::library::libgen::Operand::A, m * k), gen(crate::library::libgen::Operand::B, k * n));
        let (rows, cols): (Vec<usize>, Vec<usize>) = ((0..m).step_by(7).collect(), (0..n).step_by(5).collect());
        let p = SchemeProblem::block(m, n, k, &rows, &cols, |x| a[x], |x| b[x]);
        let err = |s: Scheme| errors(&p, &run(s, &p, &[], &|_| ()).unwrap());
        let (plain, three, four, single) = (err(Scheme::F16), err(Scheme::Markidis3), err(Scheme::Markidis4), err(Scheme::F32));
        assert!(plain.max_rel > 1e-4, "{plain:?}");
        assert!(three.max_rel < plain.max_rel / 100.0, "{three:?} vs {plain:?}");
        assert!(four.max_rel <= three.max_rel * 1.01 && single.max_rel < 1e-5, "{four:?} {single:?}");
        assert_eq!(Scheme::Markidis4.steps().len(), 4);
    }
}
