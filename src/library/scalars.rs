//! α and β of D = α·A·B + β·C (`torch.addmm(c, a, b, beta=, alpha=)`): where a kernel's epilogue
//! applies them and in what precision, as measured on an H200 (driver 580.159.04, torch 2.11;
//! scripts/torch-scaled-probe.py and scripts/torch-addmm-validate.py, checked by
//! python/tests/test_epilogues.py and test_addmm_scalars.py). acc is the kernel's f32
//! accumulation of one unsplit chain; α and β are f32 (torch hands cuBLAS its `opmath` type,
//! float for f16, bf16 and f32 GEMMs); round(x) rounds to D's format.
//!
//! - Without C (β = 0): D = round(f32(α·acc)).
//! - β = 1: D = round(f32(f32(α·acc) + C)): the scaled sum is rounded to f32 before C is added;
//!   a 16-bit kernel whose own epilogue adds C in D's format (`c_add = "output"`) rounds it to
//!   D's format first, D = round(round(f32(α·acc)) + C).
//! - Any other β, by kernel (`[schedule.scalars]`): the unsplit sm90 kernels (algorithm 66)
//!   compute D = round(fma(α, acc, f32(β·C))), the other unsplit ones D = round(fma(β, C,
//!   f32(α·acc))). Split-K kernels whose slices are reduced in a workspace (compute- or
//!   output-type reduction) apply them to the reduced sum: fma(β, C, f32(α·acc)), except the
//!   SGEMM algorithm 55, fma(α, acc, f32(β·C)).
//!
//! Serial in-place split-K, the lanes of GEMV-like kernels, the bias epilogue, FP64 GEMMs and
//! models without `[schedule.scalars]` (their GPU was not measured) are declined with α and β
//! other than 1 ([`Scalars::check`]).

use super::config::Reduction;
use super::schedule::{CAdd, Plan};
use crate::format::Format;
use serde::{Deserialize, Serialize};

/// A library model's `[schedule.scalars]`: how its kernels apply α and β other than 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalarRules {
    /// Algorithms whose unsplit kernels compute fma(α, acc, f32(β·C)) for β ≠ 0, 1; every
    /// other unsplit kernel computes fma(β, C, f32(α·acc)).
    #[serde(default)]
    pub alpha_fma_algos: Vec<u32>,
    /// The same for split-K kernels, where α and β enter in the reduction of the slices' sums
    /// (acc is then the reduced sum).
    #[serde(default)]
    pub split_alpha_fma_algos: Vec<u32>,
}

impl ScalarRules {
    /// The order a kernel of algorithm `algo`, split or not, applies α and β in.
    pub fn order(&self, algo: u32, split: bool) -> ScalarOrder {
        let algos = if split { &self.split_alpha_fma_algos } else { &self.alpha_fma_algos };
        if algos.contains(&algo) { ScalarOrder::AlphaFma } else { ScalarOrder::BetaFma }
    }
}

/// How a kernel's epilogue combines α·acc and β·C for β other than 0 and 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarOrder {
    /// fma(α, acc, f32(β·C)).
    AlphaFma,
    /// fma(β, C, f32(α·acc)).
    BetaFma,
}

/// α and β as the GPU applies them (f32). `Scalars::ONE` is D = A·B + C, what every path does
/// without them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scalars {
    pub alpha: f32,
    pub beta: f32,
}

impl Scalars {
    pub const ONE: Scalars = Scalars { alpha: 1.0, beta: 1.0 };

    /// α and β as torch passes them: rounded to f32 (to nearest), finite.
    pub fn new(alpha: f64, beta: f64) -> Result<Scalars, String> {
        let s = Scalars { alpha: alpha as f32, beta: beta as f32 };
        if !s.alpha.is_finite() || !s.beta.is_finite() {
            return Err(format!("alpha = {alpha} and beta = {beta}: both must be finite in float32"));
        }
        Ok(s)
    }

    /// Whether these are α = β = 1 (the epilogue every path has without them).
    pub fn is_one(&self) -> bool {
        *self == Scalars::ONE
    }

    /// These scalars for a GEMM with or without C: without C, β does not matter.
    pub fn for_c(&self, has_c: bool) -> Scalars {
        if has_c { *self } else { Scalars { beta: 1.0, ..*self } }
    }

    /// Why this plan cannot take these scalars (None: it can). α = β = 1 go everywhere.
    pub fn check(&self, plan: &Plan, compute: Format, output: Format, bias: bool) -> Option<String> {
        if self.is_one() {
            return None;
        }
        let (a, b) = (self.alpha, self.beta);
        let Some(_) = plan.scalars else {
            return Some(format!("alpha = {a}, beta = {b}: this model's GPU was not measured with alpha and beta other than 1 (no [schedule.scalars])"));
        };
        if compute != Format::F32 || output == Format::F64 {
            return Some(format!("alpha = {a}, beta = {b} on a {output} GEMM: alpha and beta other than 1 were measured on f32-compute GEMMs only"));
        }
        if bias {
            return Some(format!("alpha = {a}, beta = {b} with the bias epilogue: not measured"));
        }
        // One chain, or split-K slices reduced in the compute or output format; not the serial
        // in-place split-K, nor the lanes of GEMV-like kernels.
        let reduced = matches!(plan.reduction, Reduction::ComputeType | Reduction::OutputType);
        if plan.reduction == Reduction::Inplace || (plan.slices.len() > 1 && !reduced) {
            return Some(format!(
                "alpha = {a}, beta = {b} on a kernel that {} ({} partial sums): where alpha and beta enter there was not measured",
                if plan.reduction == Reduction::Inplace { "splits K in place" } else { "sums lanes" },
                plan.slices.len()
            ));
        }
        None
    }

    /// The value D is rounded from (in `output`'s rounding, by the caller): `sum` is the
    /// kernel's f32 accumulation, `c` C's element (None: no C, or β = 0, which torch reads as
    /// "ignore C"), `c_add` how this kernel's epilogue adds C, `order` how it combines the two
    /// products.
    pub fn epilogue(&self, sum: f64, c: Option<f64>, c_add: CAdd, order: ScalarOrder, output: Format) -> f64 {
        let (alpha, beta, sum) = (self.alpha, self.beta, sum as f32);
        let scaled = alpha * sum;
        match c {
            None => scaled as f64,
            Some(_) if beta == 0.0 => scaled as f64,
            Some(c) if beta == 1.0 && c_add == CAdd::Output && output != Format::F32 => output.to_f64(super::gemm::round_to(output, scaled as f64)) + c,
            Some(c) if beta == 1.0 => (scaled + c as f32) as f64,
            Some(c) => match order {
                ScalarOrder::AlphaFma => alpha.mul_add(sum, beta * c as f32) as f64,
                ScalarOrder::BetaFma => beta.mul_add(c as f32, scaled) as f64,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_and_beta_enter_as_measured() {
        let s = Scalars::new(0.3, 0.7).unwrap();
        // f32: one rounding of alpha * acc + f32(beta * C).
        let (acc, c) = (1.0f32 + f32::EPSILON, 3.0f32);
        let want = 0.3f32.mul_add(acc, 0.7f32 * c) as f64;
        assert_eq!(s.epilogue(acc as f64, Some(c as f64), CAdd::Compute, ScalarOrder::AlphaFma, Format::F32), want);
        let other = 0.7f32.mul_add(c, 0.3f32 * acc) as f64;
        assert_eq!(s.epilogue(acc as f64, Some(c as f64), CAdd::Compute, ScalarOrder::BetaFma, Format::F32), other);
        // Without C (beta 0), alpha * acc rounded to f32.
        let b0 = Scalars::new(0.3, 0.0).unwrap();
        assert_eq!(b0.epilogue(acc as f64, Some(f64::NAN), CAdd::Compute, ScalarOrder::AlphaFma, Format::F32), (0.3f32 * acc) as f64);
        // 16-bit D, beta 1, C added in D's format: the scaled sum rounded to f16 first.
        let a = Scalars::new(0.3, 1.0).unwrap();
        let v = a.epilogue(1001.0, Some(0.25), CAdd::Output, ScalarOrder::AlphaFma, Format::F16);
        let first = Format::F16.to_f64(crate::library::gemm::round_to(Format::F16, (0.3f32 * 1001.0) as f64));
        assert_eq!(v, first + 0.25);
        assert!(Scalars::ONE.is_one() && !a.is_one());
        assert!(Scalars::new(f64::INFINITY, 1.0).is_err() && Scalars::new(1.0, 1e300).is_err());
    }
}
