//! Recorded library GEMMs (the corpus of `corpus/library/`): each line names a GEMM by
//! reference (path, generator seed, shape, β), the kernel configuration cuBLASLt logged for it,
//! and D's bits for all elements (`"idx"` absent) or for the listed ones.
//!
//! `{"path":"cublas.gemm.f32.f16.f16.f32","gpu":"NVIDIA H100 80GB HBM3","driver":"580.159.04",
//!   "torch":"2.11.0+cu130","cublas":"13.1.0","seed":1000,"m":128,"n":128,"k":4096,"beta":0,
//!   "config":"algoId=66 ...","idx":[0,5,...],"d":["3f800000",...]}`

use super::gemm::{Gemm, GemmError, LibraryEmulator};
use super::libgen::{self, Operand};
use super::{KernelConfig, LibraryModel};
use crate::case::hex;
use crate::format::Format;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GemmRecord {
    pub path: String,
    #[serde(default)]
    pub gpu: String,
    #[serde(default)]
    pub driver: String,
    #[serde(default)]
    pub torch: String,
    #[serde(default)]
    pub cublas: String,
    pub seed: u64,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub beta: u8,
    /// 1: D = A·B + bias, the bias a row of n elements in D's format (F.linear; generated as
    /// operand C's first n elements).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bias: u8,
    /// How B was stored: "bt" = as Bᵀ, n×k row-major (an nn.Linear weight, `_scaled_mm`'s
    /// column-major B), so element (k, j) is generated at index j·k + k; absent = k×n row-major.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// cuBLASLt's `algo=[...]` text for this call (absent where the log had none).
    #[serde(default)]
    pub config: Option<String>,
    /// Row-major indices of the recorded elements; absent = every element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idx: Option<Vec<u64>>,
    /// D's bits (hex) at those indices.
    pub d: Vec<String>,
}

fn is_zero(x: &u8) -> bool {
    *x == 0
}

/// What went wrong with one record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("not a GEMM record: {0}")]
    Json(#[from] serde_json::Error),
    #[error("field '{0}': {1}")]
    Field(&'static str, String),
    #[error(transparent)]
    Gemm(#[from] GemmError),
}

impl GemmRecord {
    pub fn parse(line: &str) -> Result<GemmRecord, RecordError> {
        let r: GemmRecord = serde_json::from_str(line)?;
        let count = r.idx.as_ref().map_or(r.m * r.n, |i| i.len());
        if r.d.len() != count {
            return Err(RecordError::Field("d", format!("{} values for {count} elements", r.d.len())));
        }
        if let Some(i) = r.idx.as_ref().and_then(|idx| idx.iter().find(|&&i| i as usize >= r.m * r.n)) {
            return Err(RecordError::Field("idx", format!("index {i} is outside {}x{}", r.m, r.n)));
        }
        if r.beta > 1 || r.bias > 1 || (r.beta == 1 && r.bias == 1) {
            return Err(RecordError::Field("beta", format!("beta {} with bias {}: one of them, 0 or 1", r.beta, r.bias)));
        }
        if !matches!(r.layout.as_deref(), None | Some("bt")) {
            return Err(RecordError::Field("layout", format!("'{}' is not \"bt\"", r.layout.as_deref().unwrap_or(""))));
        }
        Ok(r)
    }

    /// The recorded kernel configuration, if the record has one.
    pub fn kernel_config(&self) -> Result<Option<KernelConfig>, RecordError> {
        self.config
            .as_deref()
            .map(|c| KernelConfig::from_log(c).map_err(|e| RecordError::Field("config", e.to_string())))
            .transpose()
    }

    /// The GEMM's operands, regenerated from the seed in the model's formats.
    pub fn operands(&self, model: &LibraryModel) -> Gemm {
        let r = &model.rules;
        let (m, n, k) = (self.m, self.n, self.k);
        let b = if self.layout.as_deref() == Some("bt") {
            let bt = libgen::elements(r.b_inputs(), self.seed, Operand::B, k * n);
            (0..k * n).map(|i| bt[(i % n) * k + i / n]).collect()
        } else {
            libgen::elements(r.b_inputs(), self.seed, Operand::B, k * n)
        };
        Gemm {
            m,
            n,
            k,
            a: libgen::elements(r.inputs, self.seed, Operand::A, m * k),
            b,
            c: (self.beta == 1).then(|| libgen::elements(r.output, self.seed, Operand::C, m * n)),
            bias: (self.bias == 1).then(|| libgen::elements(r.output, self.seed, Operand::C, n)),
        }
    }

    /// Elements (row-major index, recorded bits).
    pub fn elements(&self, f: Format) -> Result<Vec<(usize, u64)>, RecordError> {
        let idx: Vec<usize> = match &self.idx {
            Some(v) => v.iter().map(|&i| i as usize).collect(),
            None => (0..self.m * self.n).collect(),
        };
        idx.into_iter()
            .zip(&self.d)
            .map(|(i, h)| {
                u64::from_str_radix(h, 16)
                    .ok()
                    .filter(|b| b & !f.mask() == 0)
                    .map(|b| (i, b))
                    .ok_or_else(|| RecordError::Field("d", format!("'{h}' is not a {f} bit pattern")))
            })
            .collect()
    }
}

/// How one record replays under a model.
#[derive(Clone, Debug)]
pub struct Replayed {
    pub elements: usize,
    pub matched: usize,
    /// The configuration that decided the schedule (the record's own, else the table's).
    pub config: Option<KernelConfig>,
    /// Why the record could not be emulated, if it could not.
    pub skipped: Option<String>,
    /// The first mismatch: (row, column, recorded, emulated).
    pub first_miss: Option<(usize, usize, String, String)>,
    /// Where the mismatches are (row, column), the first 256.
    pub misses: Vec<(usize, usize)>,
}

/// Emulate a record's elements under `model`, with the record's logged configuration when it
/// has one (the table's otherwise), and compare bit for bit.
pub fn replay(record: &GemmRecord, model: &LibraryModel) -> Result<Replayed, RecordError> {
    let out = model.rules.output;
    let want = record.elements(out)?;
    let emu = LibraryEmulator::new(model);
    let g = record.operands(model);
    let config = match record.kernel_config()? {
        Some(c) => c,
        None => match emu.config(&g) {
            Ok(c) => c.clone(),
            Err(e) => return Ok(Replayed { elements: want.len(), matched: 0, config: None, skipped: Some(e.to_string()), first_miss: None, misses: vec![] }),
        },
    };
    let plan = match emu.plan(&g, &config) {
        Ok(p) => p,
        Err(e) => return Ok(Replayed { elements: want.len(), matched: 0, config: Some(config), skipped: Some(e.to_string()), first_miss: None, misses: vec![] }),
    };
    use rayon::prelude::*;
    let got: Vec<u64> = want
        .par_iter()
        .map(|&(i, _)| emu.element(&g, &plan, i / g.n, i % g.n))
        .collect::<Result<_, _>>()?;
    let mut matched = 0;
    let mut first_miss = None;
    let mut misses = Vec::new();
    for (&(i, w), &e) in want.iter().zip(&got) {
        if w == e {
            matched += 1;
            continue;
        }
        if first_miss.is_none() {
            first_miss = Some((i / g.n, i % g.n, hex(w, out), hex(e, out)));
        }
        if misses.len() < 256 {
            misses.push((i / g.n, i % g.n));
        }
    }
    Ok(Replayed { elements: want.len(), matched, config: Some(config), skipped: None, first_miss, misses })
}
