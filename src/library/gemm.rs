//! One whole library GEMM, element by element: each K slice of the plan is one chain of the
//! instruction arithmetic from +0 (the emulator with `blocks.c = "after"` and C = +0), the
//! partial sums are reduced in order in the compute format, C is added once, D is rounded.

use super::config::{KernelConfig, Reduction};
use super::schedule::{InputConversion, Plan, PlanError};
use super::LibraryModel;
use crate::case::MmaCase;
use crate::format::{Format, Rounding};
use crate::model::{Emulator, EmulatorError};

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
}

#[derive(Debug, thiserror::Error)]
pub enum GemmError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Emulator(#[from] EmulatorError),
    #[error("no recorded kernel configuration for {m}x{n}x{k} (beta {beta}) in this model's table: outside what was learned")]
    Unlearned { m: usize, n: usize, k: usize, beta: u8 },
    #[error("shape: {0}")]
    Shape(String),
}

/// A library model ready to emulate GEMMs.
pub struct LibraryEmulator<'a> {
    model: &'a LibraryModel,
    emulator: Emulator,
}

impl<'a> LibraryEmulator<'a> {
    pub fn new(model: &'a LibraryModel) -> Self {
        LibraryEmulator { model, emulator: Emulator::new(model.chain.clone()) }
    }

    /// The configuration the library runs for this GEMM's shape, from the learned table.
    pub fn config(&self, g: &Gemm) -> Result<&'a KernelConfig, GemmError> {
        let beta = g.c.is_some();
        self.model
            .table
            .get(g.m, g.n, g.k, beta)
            .ok_or(GemmError::Unlearned { m: g.m, n: g.n, k: g.k, beta: beta as u8 })
    }

    pub fn plan(&self, g: &Gemm, config: &KernelConfig) -> Result<Plan, GemmError> {
        Ok(self.model.rules.plan(g.k, config)?)
    }

    /// Check the operands' sizes against the shape.
    pub fn check(&self, g: &Gemm) -> Result<(), GemmError> {
        let (m, n, k) = (g.m, g.n, g.k);
        if m == 0 || n == 0 || k == 0 {
            return Err(GemmError::Shape(format!("{m}x{n}x{k} has a zero dimension")));
        }
        if g.a.len() != m * k || g.b.len() != k * n || g.c.as_ref().is_some_and(|c| c.len() != m * n) {
            return Err(GemmError::Shape(format!("operands do not fit {m}x{n}x{k}")));
        }
        Ok(())
    }

    /// Element (i, j) of D under `plan`.
    pub fn element(&self, g: &Gemm, plan: &Plan, i: usize, j: usize) -> Result<u64, GemmError> {
        let r = &self.model.rules;
        let (chain_fmt, compute, output) = (r.chain_format(), r.compute, r.output);
        let mut acc: Option<f64> = None;
        for slice in &plan.slices {
            let len = slice.len();
            let mut case = MmaCase::zeros(chain_fmt, compute, 1, 1, len);
            for (t, kk) in slice.clone().enumerate() {
                case.a[t] = self.convert(g.a[i * g.k + kk]);
                case.b[t] = self.convert(g.b[kk * g.n + j]);
            }
            let partial = compute.to_f64(self.emulator.run_element(&case, 0, 0)?);
            let partial = match plan.reduction {
                Reduction::OutputType => output.to_f64(round_to(output, partial)),
                _ => partial,
            };
            acc = Some(match acc {
                None => partial,
                Some(sum) => add(compute, sum, partial),
            });
        }
        let mut d = acc.unwrap_or(0.0);
        if let Some(c) = &g.c {
            d = add(compute, d, output.to_f64(c[i * g.n + j]));
        }
        Ok(round_to(output, d))
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
    if x.is_nan() {
        return f.nan_bits(false, 0);
    }
    if x.is_infinite() {
        return f.inf_bits(x < 0.0);
    }
    let bits = x.to_bits();
    let neg = bits >> 63 == 1;
    let field = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mag, exp) = if field == 0 { (frac, -1074) } else { (frac | (1u64 << 52), field - 1075) };
    f.round(neg, mag as u128, exp, false, rnd, crate::format::Overflow::Ieee)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_helper_agrees_with_native_conversions() {
        for x in [1.0f64, -2.5, 65504.0, 65520.0, 1e-8, 3.0e38, 1.0 + f64::EPSILON, 0.1] {
            assert_eq!(round_to(Format::F32, x), (x as f32).to_bits() as u64, "{x}");
            assert_eq!(round_to(Format::F16, x), half::f16::from_f64(x).to_bits() as u64, "{x}");
            assert_eq!(round_to(Format::Bf16, x), half::bf16::from_f64(x).to_bits() as u64, "{x}");
        }
    }
}
