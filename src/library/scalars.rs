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
//!   Algorithms listed in `beta_one_fused` (the SGEMM algorithm 55) take β = 1 as any other β.
//! - Any other β, by algorithm and kind of kernel (`[schedule.scalars]`): D = round(fma(α, acc,
//!   f32(β·C))) (the sm90 algorithm 66 unsplit, SGEMM algorithm 55, the GEMV lanes of algorithm
//!   13 into f32) or D = round(fma(β, C, f32(α·acc))) (the sm80-style algorithms 20, 23, 24).
//!   Split-K kernels whose slices are reduced in a workspace (compute- or output-type
//!   reduction) apply them to the reduced sum, mostly in the second order; GEMV lanes to the
//!   lanes' sum. cuBLAS's small-N kernels on f32 (gemmSN, algorithm 11: `lanes_scale_a`) scale
//!   A's elements by α (rounded to f32) before their products and compute fma(β, C, acc)
//!   (scripts/probes/gemmsn-alpha.py).
//!
//! An algorithm not listed for its kind of kernel, serial in-place split-K, the bias epilogue,
//! FP64 GEMMs and models without `[schedule.scalars]` (their GPU was not measured) are declined
//! with α and β other than 1 ([`Scalars::check`]).

use super::config::Reduction;
use super::schedule::{CAdd, Plan};
use crate::format::Format;
use serde::{Deserialize, Serialize};

/// A library model's `[schedule.scalars]`: how its kernels apply α and β other than 1, by
/// algorithm and kind of kernel. An algorithm listed for neither order of its kind was not
/// measured there and is declined.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalarRules {
    /// Unsplit kernels computing fma(α, acc, f32(β·C)).
    #[serde(default)]
    pub alpha_fma: Vec<u32>,
    /// Unsplit kernels computing fma(β, C, f32(α·acc)).
    #[serde(default)]
    pub beta_fma: Vec<u32>,
    /// Split-K kernels whose slices are reduced in a workspace, α and β applied to the reduced
    /// sum: fma(α, acc, f32(β·C)).
    #[serde(default)]
    pub split_alpha_fma: Vec<u32>,
    /// The same, fma(β, C, f32(α·acc)).
    #[serde(default)]
    pub split_beta_fma: Vec<u32>,
    /// GEMV-like kernels that sum lanes, α and β applied to the lanes' sum: fma(α, acc, f32(β·C)).
    #[serde(default)]
    pub lanes_alpha_fma: Vec<u32>,
    /// The same, fma(β, C, f32(α·acc)).
    #[serde(default)]
    pub lanes_beta_fma: Vec<u32>,
    /// GEMV-like kernels that scale A's elements by α (rounded to f32) before their products,
    /// then compute fma(β, C, acc) (cuBLAS's small-N kernels on f32).
    #[serde(default)]
    pub lanes_scale_a: Vec<u32>,
    /// Algorithms that take β = 1 as any other β (one fma); the others add C to f32(α·acc).
    #[serde(default)]
    pub beta_one_fused: Vec<u32>,
}

/// The kind of kernel a plan is, for [`ScalarRules`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    Unsplit,
    Split,
    Lanes,
}

impl KernelKind {
    fn name(self) -> &'static str {
        match self {
            KernelKind::Unsplit => "an unsplit",
            KernelKind::Split => "a split-K",
            KernelKind::Lanes => "a lane-summing",
        }
    }
}

impl ScalarRules {
    /// How a kernel of algorithm `algo` and this kind applies α and β.
    pub fn rule(&self, algo: u32, kind: KernelKind) -> ScalarRule {
        let (alpha, beta) = match kind {
            KernelKind::Unsplit => (&self.alpha_fma, &self.beta_fma),
            KernelKind::Split => (&self.split_alpha_fma, &self.split_beta_fma),
            KernelKind::Lanes => (&self.lanes_alpha_fma, &self.lanes_beta_fma),
        };
        let order = if kind == KernelKind::Lanes && self.lanes_scale_a.contains(&algo) {
            Some(ScalarOrder::ScaledA)
        } else if alpha.contains(&algo) {
            Some(ScalarOrder::AlphaFma)
        } else if beta.contains(&algo) {
            Some(ScalarOrder::BetaFma)
        } else {
            None
        };
        ScalarRule { algo, kind, order, beta_one_fused: self.beta_one_fused.contains(&algo) }
    }

    /// Why these rules cannot be used (None: they can): an algorithm listed with both orders.
    pub fn validate(&self) -> Option<String> {
        for (kind, alpha, beta) in [("", &self.alpha_fma, &self.beta_fma), ("split_", &self.split_alpha_fma, &self.split_beta_fma), ("lanes_", &self.lanes_alpha_fma, &self.lanes_beta_fma)] {
            if let Some(a) = alpha.iter().find(|a| beta.contains(a)) {
                return Some(format!("[schedule.scalars]: algorithm {a} is in both {kind}alpha_fma and {kind}beta_fma"));
            }
        }
        if let Some(a) = self.lanes_scale_a.iter().find(|a| self.lanes_alpha_fma.contains(a) || self.lanes_beta_fma.contains(a)) {
            return Some(format!("[schedule.scalars]: algorithm {a} is in lanes_scale_a and in another lanes_ list"));
        }
        None
    }
}

/// How one kernel applies α and β: its order (None: not measured), and whether β = 1 takes the
/// same fma.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScalarRule {
    pub algo: u32,
    pub kind: KernelKind,
    pub order: Option<ScalarOrder>,
    pub beta_one_fused: bool,
}

/// How a kernel's epilogue combines α·acc and β·C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarOrder {
    /// fma(α, acc, f32(β·C)).
    AlphaFma,
    /// fma(β, C, f32(α·acc)).
    BetaFma,
    /// α scales A's elements (rounded to f32) before the products; then fma(β, C, acc).
    ScaledA,
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

    /// Why this plan cannot take these scalars (None: it can). α = β = 1 go everywhere; `has_c`:
    /// the GEMM adds C (β ≠ 0).
    pub fn check(&self, plan: &Plan, [inputs, compute, output]: [Format; 3], bias: bool, has_c: bool) -> Option<String> {
        if self.is_one() {
            return None;
        }
        let (a, b) = (self.alpha, self.beta);
        let Some(rule) = plan.scalars else {
            return Some(format!("alpha = {a}, beta = {b}: this model's GPU was not measured with alpha and beta other than 1 (no [schedule.scalars])"));
        };
        if compute != Format::F32 || output == Format::F64 {
            return Some(format!("alpha = {a}, beta = {b} on a {output} GEMM: alpha and beta other than 1 were measured on f32-compute GEMMs only"));
        }
        if bias {
            return Some(format!("alpha = {a}, beta = {b} with the bias epilogue: not measured"));
        }
        if rule.order == Some(ScalarOrder::ScaledA) && inputs != Format::F32 {
            return Some(format!("alpha = {a}: algorithm {} scales A by alpha, measured on f32 operands only", rule.algo));
        }
        if plan.reduction == Reduction::Inplace {
            return Some(format!("alpha = {a}, beta = {b} on a kernel that splits K in place ({} partial sums): where alpha and beta enter there was not measured", plan.slices.len()));
        }
        // Without C, D = round(f32(α·acc)) on every kernel measured; lanes only where listed.
        if rule.order.is_none() && (has_c || rule.kind == KernelKind::Lanes) {
            let what = if has_c { format!("alpha = {a}, beta = {b}") } else { format!("alpha = {a}") };
            return Some(format!("{what} on {} kernel of algorithm {}: how it applies alpha and beta was not measured", rule.kind.name(), rule.algo));
        }
        None
    }

    /// The value D is rounded from (in `output`'s rounding, by the caller): `sum` is the
    /// kernel's f32 accumulation, `c` C's element (None: no C, or β = 0, which torch reads as
    /// "ignore C"), `c_add` how this kernel's epilogue adds C, `rule` how it combines the two
    /// products ([`Scalars::check`] has passed).
    pub fn epilogue(&self, sum: f64, c: Option<f64>, c_add: CAdd, rule: ScalarRule, output: Format) -> f64 {
        // A kernel that scaled A by α ([`Scalars::scaled_a`]) has α in its sum already.
        let alpha = if rule.order == Some(ScalarOrder::ScaledA) { 1.0 } else { self.alpha };
        let (beta, sum) = (self.beta, sum as f32);
        let scaled = alpha * sum;
        match c {
            None => scaled as f64,
            Some(_) if beta == 0.0 => scaled as f64,
            Some(c) if beta == 1.0 && !rule.beta_one_fused && c_add == CAdd::Output && output != Format::F32 => output.to_f64(super::gemm::round_to(output, scaled as f64)) + c,
            Some(c) if beta == 1.0 && !rule.beta_one_fused => (scaled + c as f32) as f64,
            Some(c) => match rule.order.expect("Scalars::check declines kernels without an order") {
                ScalarOrder::AlphaFma => alpha.mul_add(sum, beta * c as f32) as f64,
                ScalarOrder::BetaFma | ScalarOrder::ScaledA => beta.mul_add(c as f32, scaled) as f64,
            },
        }
    }

    /// A's elements (f32 bits) as a kernel that scales A by α before its products reads them;
    /// None where the plan's kernel does not (or α is 1).
    pub fn scaled_a(&self, plan: &Plan, a: &[u64]) -> Option<Vec<u64>> {
        let scales = plan.scalars.is_some_and(|r| r.order == Some(ScalarOrder::ScaledA)) && self.alpha != 1.0;
        scales.then(|| a.iter().map(|&x| (self.alpha * f32::from_bits(x as u32)).to_bits() as u64).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(order: Option<ScalarOrder>, beta_one_fused: bool) -> ScalarRule {
        ScalarRule { algo: 66, kind: KernelKind::Unsplit, order, beta_one_fused }
    }

    #[test]
    fn alpha_and_beta_enter_as_measured() {
        let (alpha, beta) = (rule(Some(ScalarOrder::AlphaFma), false), rule(Some(ScalarOrder::BetaFma), false));
        let s = Scalars::new(0.3, 0.7).unwrap();
        // f32: one rounding of alpha * acc + f32(beta * C).
        let (acc, c) = (1.0f32 + f32::EPSILON, 3.0f32);
        let want = 0.3f32.mul_add(acc, 0.7f32 * c) as f64;
        assert_eq!(s.epilogue(acc as f64, Some(c as f64), CAdd::Compute, alpha, Format::F32), want);
        let other = 0.7f32.mul_add(c, 0.3f32 * acc) as f64;
        assert_eq!(s.epilogue(acc as f64, Some(c as f64), CAdd::Compute, beta, Format::F32), other);
        // Without C (beta 0), alpha * acc rounded to f32.
        let b0 = Scalars::new(0.3, 0.0).unwrap();
        assert_eq!(b0.epilogue(acc as f64, Some(f64::NAN), CAdd::Compute, alpha, Format::F32), (0.3f32 * acc) as f64);
        // beta 1: C added to f32(alpha * acc), unless the kernel takes beta 1 in its fma.
        let one = Scalars::new(0.3, 1.0).unwrap();
        assert_eq!(one.epilogue(acc as f64, Some(c as f64), CAdd::Compute, alpha, Format::F32), (0.3f32 * acc + c) as f64);
        assert_eq!(one.epilogue(acc as f64, Some(c as f64), CAdd::Compute, rule(Some(ScalarOrder::AlphaFma), true), Format::F32), 0.3f32.mul_add(acc, c) as f64);
        // 16-bit D, beta 1, C added in D's format: the scaled sum rounded to f16 first.
        let v = one.epilogue(1001.0, Some(0.25), CAdd::Output, alpha, Format::F16);
        let first = Format::F16.to_f64(crate::library::gemm::round_to(Format::F16, (0.3f32 * 1001.0) as f64));
        assert_eq!(v, first + 0.25);
        // A kernel that scaled A by alpha: no alpha in the epilogue, beta by fma.
        let scaled = ScalarRule { kind: KernelKind::Lanes, ..rule(Some(ScalarOrder::ScaledA), false) };
        assert_eq!(s.epilogue(acc as f64, Some(c as f64), CAdd::Compute, scaled, Format::F32), 0.7f32.mul_add(c, acc) as f64);
        assert_eq!(one.epilogue(acc as f64, Some(c as f64), CAdd::Compute, scaled, Format::F32), (acc + c) as f64);
        assert!(Scalars::ONE.is_one() && !one.is_one());
        assert!(Scalars::new(f64::INFINITY, 1.0).is_err() && Scalars::new(1.0, 1e300).is_err());
    }

    #[test]
    fn an_algorithm_is_measured_per_kind_or_declined() {
        let rules: ScalarRules = toml::from_str("alpha_fma = [66]\nsplit_beta_fma = [66]\nlanes_alpha_fma = [13]\nbeta_one_fused = [55]").unwrap();
        assert_eq!(rules.rule(66, KernelKind::Unsplit).order, Some(ScalarOrder::AlphaFma));
        assert_eq!(rules.rule(66, KernelKind::Split).order, Some(ScalarOrder::BetaFma));
        assert_eq!(rules.rule(66, KernelKind::Lanes).order, None);
        assert_eq!(rules.rule(13, KernelKind::Lanes).order, Some(ScalarOrder::AlphaFma));
        assert!(rules.rule(55, KernelKind::Unsplit).beta_one_fused && rules.validate().is_none());
        let sn: ScalarRules = toml::from_str("lanes_scale_a = [11]").unwrap();
        assert_eq!((sn.rule(11, KernelKind::Lanes).order, sn.rule(11, KernelKind::Unsplit).order), (Some(ScalarOrder::ScaledA), None));
        let both: ScalarRules = toml::from_str("split_alpha_fma = [20]\nsplit_beta_fma = [20]").unwrap();
        assert!(both.validate().unwrap().contains("algorithm 20 is in both split_alpha_fma and split_beta_fma"));
    }
}
