//! What cuBLASLt says it ran: the kernel configuration of one GEMM, as its trace log
//! (`CUBLASLT_LOG_LEVEL=5`) prints it in `algo=[algoId=66 tile=MATMUL_TILE_64x32
//! stages=MATMUL_STAGES_64xAUTO reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=3 ...]`.
//! `cublasGemmEx` runs through cuBLASLt, so the same line describes what `torch.mm` ran.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// How the partial sums of a split-K GEMM are combined (cublasLtReductionScheme_t).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reduction {
    /// No split: one chain over all of K.
    #[default]
    None,
    /// Partial sums kept in the compute type (f32 or f64) and added in it.
    ComputeType,
    /// Each partial sum rounded to D's type first, then added in the compute type.
    OutputType,
    /// Partial sums accumulated in place in the output buffer.
    Inplace,
}

impl Reduction {
    /// Each scheme and its name in the log (`REDUCTION_SCHEME_<name>`).
    const LOG_NAMES: [(Reduction, &'static str); 4] = [
        (Reduction::None, "NONE"),
        (Reduction::ComputeType, "COMPUTE_TYPE"),
        (Reduction::OutputType, "OUTPUT_TYPE"),
        (Reduction::Inplace, "INPLACE"),
    ];

    fn from_log(s: &str) -> Option<Reduction> {
        let name = s.strip_prefix("REDUCTION_SCHEME_")?;
        Self::LOG_NAMES.iter().find(|(_, n)| *n == name).map(|(r, _)| *r)
    }

    fn log_name(self) -> &'static str {
        Self::LOG_NAMES.iter().find(|(r, _)| *r == self).map(|(_, n)| *n).expect("every scheme is named")
    }
}

/// One kernel configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KernelConfig {
    /// cuBLASLt's algorithm id: one kernel family (66: the sm90 wgmma/TMA kernels; 20-24: the
    /// sm80-style ones; 13/14: GEMV-like kernels for a dimension of 1 or 2).
    pub algo: u32,
    /// CTA tile, `MxN` as cuBLASLt names it (`None`: the family has no tile choice).
    pub tile: Option<String>,
    /// Pipeline stages, `KxSTAGES` (the first number is the K depth of one stage).
    pub stages: Option<String>,
    /// K slices computed apart and then reduced; 1 = no split, -1 = decided by the kernel.
    pub split_k: i32,
    pub reduction: Reduction,
    /// Every other attribute as logged (customOption, clusterShape, innerShape, ctaSwizzling).
    pub other: BTreeMap<String, String>,
}

/// What is wrong with a logged algorithm description.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("kernel configuration: {0}")]
pub struct ConfigError(String);

impl KernelConfig {
    /// From the `key=value` pairs of the log's `algo=[...]`.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<KernelConfig, ConfigError> {
        let (mut algo, mut tile, mut stages, mut split_k, mut reduction) = (None, None, None, 1, Reduction::None);
        let mut other = BTreeMap::new();
        for (key, value) in pairs {
            match key {
                "algoId" => algo = Some(value.parse().map_err(|_| ConfigError(format!("algoId '{value}' is not a number")))?),
                "tile" => tile = Some(value.strip_prefix("MATMUL_TILE_").unwrap_or(value).to_string()),
                "stages" => stages = Some(value.strip_prefix("MATMUL_STAGES_").unwrap_or(value).to_string()),
                "numSplitsK" => split_k = value.parse().map_err(|_| ConfigError(format!("numSplitsK '{value}' is not a number")))?,
                "reductionScheme" => {
                    reduction = Reduction::from_log(value).ok_or_else(|| ConfigError(format!("unknown reductionScheme '{value}'")))?
                }
                _ => {
                    other.insert(key.to_string(), value.to_string());
                }
            }
        }
        let algo = algo.ok_or_else(|| ConfigError("no algoId".into()))?;
        if split_k == 0 || split_k < -1 {
            return Err(ConfigError(format!("numSplitsK {split_k} is not a split count")));
        }
        if split_k == 1 {
            reduction = Reduction::None;
        }
        Ok(KernelConfig { algo, tile, stages, split_k, reduction, other })
    }

    /// From the text inside `algo=[...]`.
    pub fn from_log(text: &str) -> Result<KernelConfig, ConfigError> {
        let pairs: Vec<(&str, &str)> = text
            .split_whitespace()
            .map(|kv| kv.split_once('=').ok_or_else(|| ConfigError(format!("'{kv}' is not key=value"))))
            .collect::<Result<_, _>>()?;
        KernelConfig::from_pairs(pairs)
    }

    /// Back to the log's `key=value` text (what [`KernelConfig::from_log`] reads).
    pub fn to_log(&self) -> String {
        let mut parts = vec![format!("algoId={}", self.algo)];
        if let Some(t) = &self.tile {
            parts.push(format!("tile=MATMUL_TILE_{t}"));
        }
        if let Some(s) = &self.stages {
            parts.push(format!("stages=MATMUL_STAGES_{s}"));
        }
        if self.split_k != 1 {
            parts.push(format!("reductionScheme=REDUCTION_SCHEME_{}", self.reduction.log_name()));
            parts.push(format!("numSplitsK={}", self.split_k));
        }
        for (k, v) in &self.other {
            parts.push(format!("{k}={v}"));
        }
        parts.join(" ")
    }

    /// How many CTA tiles cover D of PyTorch's m×n GEMM: cuBLASLt's tile `MxN` runs over its
    /// own n×m problem (the transposed one). `None` without a tile.
    pub fn output_tiles(&self, m: usize, n: usize) -> Option<usize> {
        let (tm, tn) = self.tile.as_deref()?.split_once('x')?;
        let (tm, tn): (usize, usize) = (tm.parse().ok()?, tn.parse().ok()?);
        (tm > 0 && tn > 0).then(|| n.div_ceil(tm) * m.div_ceil(tn))
    }

    /// The logged `customOption` (0 where the log names none): a variant of the algorithm
    /// that may order its arithmetic differently.
    pub fn custom_option(&self) -> u32 {
        self.other.get("customOption").and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    /// The K depth of one pipeline stage, if the configuration names one.
    pub fn stage_k(&self) -> Option<usize> {
        self.stages.as_deref()?.split('x').next()?.parse().ok()
    }
}

impl fmt::Display for KernelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "algo {}", self.algo)?;
        if let Some(t) = &self.tile {
            write!(f, " tile {t}")?;
        }
        if let Some(s) = &self.stages {
            write!(f, " stages {s}")?;
        }
        match self.split_k {
            1 => {}
            -1 => write!(f, " split-K chosen by the kernel")?,
            s => write!(f, " split-K {s} ({:?} reduction)", self.reduction)?,
        }
        for (k, v) in &self.other {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_logged_split_k_kernel() {
        let c = KernelConfig::from_log("algoId=66 tile=MATMUL_TILE_64x32 stages=MATMUL_STAGES_64xAUTO reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=3 customOption=3 clusterShape=CLUSTER_SHAPE_2x4x1").unwrap();
        assert_eq!((c.algo, c.split_k, c.reduction, c.stage_k()), (66, 3, Reduction::ComputeType, Some(64)));
        assert_eq!(c.tile.as_deref(), Some("64x32"));
        assert_eq!(c.other["clusterShape"], "CLUSTER_SHAPE_2x4x1");
        assert!(c.to_string().contains("split-K 3"), "{c}");
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        assert!(KernelConfig::from_log("tile=MATMUL_TILE_64x32").is_err());
        assert!(KernelConfig::from_log("algoId=x").is_err());
        assert!(KernelConfig::from_log("algoId=66 numSplitsK=0").is_err());
        assert!(KernelConfig::from_log("algoId=66 reductionScheme=REDUCTION_SCHEME_SIDEWAYS numSplitsK=2").is_err());
        assert!(KernelConfig::from_log("algoId=66 junk").is_err());
    }
}
