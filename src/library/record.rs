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
use crate::corpus::codec;
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
    /// What ran the GEMM when it was not PyTorch: `mmafuzz library record`'s own executor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<String>,
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
    /// "special": the generated operands carry planted special values (`libgen::line_plant`:
    /// ±inf, NaN, ±max, ±0, ± subnormals in some rows of A and columns of B, rows and columns
    /// of signed zeros; `libgen::c_element_special` for C and the bias); absent: as generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<String>,
    /// Row-major indices of the recorded elements; absent = every element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idx: Option<Vec<u64>>,
    /// D's bits (hex) at those indices; or, in the compact corpus form, `d_steps`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub d: Vec<String>,
    /// D as signed steps through the format's ordered bit patterns from a plain f64 sum of the
    /// regenerated operands (the corpus codec's reference): small integers, lossless.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d_steps: Option<Vec<i64>>,
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
        let given = r.d_steps.as_ref().map_or(r.d.len(), |s| s.len());
        if given != count || (r.d_steps.is_some() && !r.d.is_empty()) {
            return Err(RecordError::Field("d", format!("{given} values for {count} elements (give d or d_steps)")));
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
        if !matches!(r.values.as_deref(), None | Some("special")) {
            return Err(RecordError::Field("values", format!("'{}' is not \"special\"", r.values.as_deref().unwrap_or(""))));
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
        self.operands_for(model, &(0..self.m * self.n).collect::<Vec<_>>()).g
    }

    /// The operands as far as the elements at `idx` (row-major) need them: their rows of A,
    /// their columns of B, their elements of C (the bias's columns), as a GEMM of those rows
    /// and columns only (a record samples few elements of a large GEMM); the whole GEMM where
    /// `idx` is every element.
    fn operands_for(&self, model: &LibraryModel, idx: &[usize]) -> Sampled {
        let r = &model.rules;
        let (n, k) = (self.n, self.k);
        let mut rows: Vec<usize> = idx.iter().map(|&e| e / n).collect();
        let mut cols: Vec<usize> = idx.iter().map(|&e| e % n).collect();
        rows.sort_unstable();
        rows.dedup();
        cols.sort_unstable();
        cols.dedup();
        let (sm, sn) = (rows.len(), cols.len());
        let (fa, fb, fc) = (r.inputs, r.b_inputs(), r.output);
        let special = self.values.as_deref() == Some("special");
        let plant = |operand, line, len| if special { libgen::line_plant(self.seed, operand, line as u64, len) } else { libgen::LinePlant::None };
        let c_element = |e: usize| if special { libgen::c_element_special(fc, self.seed, e as u64) } else { libgen::element(fc, self.seed, Operand::C, e as u64) };
        let mut a = vec![0; sm * k];
        for (ri, &i) in rows.iter().enumerate() {
            let p = plant(Operand::A, i, k);
            for kk in 0..k {
                a[ri * k + kk] = libgen::planted(fa, p, kk, libgen::element(fa, self.seed, Operand::A, (i * k + kk) as u64));
            }
        }
        let bt = self.layout.as_deref() == Some("bt");
        let mut b = vec![0; k * sn];
        // Row by row of the sampled B (its columns' plants first): written in order, where
        // column by column each write of a deep B would land on a cache line of its own.
        let plants: Vec<libgen::LinePlant> = cols.iter().map(|&j| plant(Operand::B, j, k)).collect();
        for (kk, row) in b.chunks_mut(sn.max(1)).enumerate() {
            for ((x, &j), &p) in row.iter_mut().zip(&cols).zip(&plants) {
                let at = if bt { j * k + kk } else { kk * n + j };
                *x = libgen::planted(fb, p, kk, libgen::element(fb, self.seed, Operand::B, at as u64));
            }
        }
        let mut sampled = Sampled { g: Gemm { m: sm, n: sn, k, a, b, c: None, bias: None }, rows, cols };
        sampled.g.c = (self.beta == 1).then(|| {
            let mut c = vec![0; sm * sn];
            for &e in idx {
                let (ri, cj) = sampled.at(e, n);
                c[ri * sn + cj] = c_element(e);
            }
            c
        });
        sampled.g.bias = (self.bias == 1).then(|| sampled.cols.iter().map(|&j| c_element(j)).collect());
        sampled
    }

    fn indices(&self) -> Vec<usize> {
        match &self.idx {
            Some(v) => v.iter().map(|&i| i as usize).collect(),
            None => (0..self.m * self.n).collect(),
        }
    }

    /// Elements (row-major index, recorded bits), regenerating the operands for `d_steps`.
    pub fn elements(&self, model: &LibraryModel) -> Result<Vec<(usize, u64)>, RecordError> {
        let s = self.operands_for(model, &self.indices());
        self.elements_at(model, &s.g, |e| s.at(e, self.n))
    }

    /// [`GemmRecord::elements`] with the whole GEMM's operands already regenerated
    /// ([`GemmRecord::operands`]).
    pub fn elements_with(&self, model: &LibraryModel, g: &Gemm) -> Result<Vec<(usize, u64)>, RecordError> {
        self.elements_at(model, g, |e| (e / g.n, e % g.n))
    }

    /// [`GemmRecord::elements`] from operands `g` in which element e sits at `at(e)`.
    fn elements_at(&self, model: &LibraryModel, g: &Gemm, at: impl Fn(usize) -> (usize, usize)) -> Result<Vec<(usize, u64)>, RecordError> {
        let f = model.rules.output;
        let idx = self.indices();
        if let Some(steps) = &self.d_steps {
            let refs = references(g, model, idx.iter().map(|&e| at(e)));
            return Ok(idx.into_iter().zip(steps).zip(refs).map(|((e, &s), x)| (e, codec::bits_at_step(x, s, f, false))).collect());
        }
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

/// The codec's reference for elements (i, j) of `g`: C (or the bias) plus every product, in
/// f64, left to right, from the stored inputs. A and B are converted once for all of them.
fn references(g: &Gemm, model: &LibraryModel, cells: impl Iterator<Item = (usize, usize)>) -> Vec<f64> {
    let r = &model.rules;
    let k = g.k;
    let mut a = vec![0f64; g.a.len()];
    r.inputs.to_f64_slice(&g.a, &mut a);
    // B by columns, so that each dot product reads both operands in order.
    let mut b = vec![0f64; g.b.len()];
    r.b_inputs().to_f64_slice(&g.b, &mut b);
    let bt = super::gemm::transpose(&b, k, g.n);
    cells
        .map(|(i, j)| {
            let mut acc = match (&g.c, &g.bias) {
                (Some(c), _) => r.output.to_f64(c[i * g.n + j]),
                (None, Some(b)) => r.output.to_f64(b[j]),
                (None, None) => 0.0,
            };
            for (&x, &y) in a[i * k..(i + 1) * k].iter().zip(&bt[j * k..(j + 1) * k]) {
                acc += x * y;
            }
            acc
        })
        .collect()
}

impl GemmRecord {
    /// The compact corpus form: at most `max_elements` of the recorded elements (evenly
    /// spread), D as steps from the reference. Exact: `elements` gives the same bits back.
    pub fn compact(&self, model: &LibraryModel, max_elements: usize) -> Result<GemmRecord, RecordError> {
        let s = self.operands_for(model, &self.indices());
        let all = self.elements_at(model, &s.g, |e| s.at(e, self.n))?;
        let stride = all.len().div_ceil(max_elements.max(1)).max(1);
        let kept: Vec<(usize, u64)> = all.into_iter().step_by(stride).collect();
        let f = model.rules.output;
        let refs = references(&s.g, model, kept.iter().map(|&(e, _)| s.at(e, self.n)));
        let steps = kept.iter().zip(refs).map(|(&(_, bits), x)| codec::step_from(bits, x, f, false)).collect();
        let mut out = self.clone();
        out.idx = if kept.len() == self.m * self.n { None } else { Some(kept.iter().map(|&(e, _)| e as u64).collect()) };
        out.d = vec![];
        out.d_steps = Some(steps);
        Ok(out)
    }

    /// The plain form: D's bits as hex at the recorded indices (`d`), no `d_steps`; what a GPU
    /// script writes, readable without the codec.
    pub fn plain(&self, model: &LibraryModel) -> Result<GemmRecord, RecordError> {
        let f = model.rules.output;
        let mut out = self.clone();
        out.d = self.elements(model)?.into_iter().map(|(_, bits)| hex(bits, f)).collect();
        out.d_steps = None;
        Ok(out)
    }

    /// The kernel family this record's configuration belongs to, as reports group them:
    /// `algo 66`, `algo 24 split-K (OutputType)`, or `no config`.
    pub fn family(config: Option<&KernelConfig>) -> String {
        match config {
            Some(c) if c.split_k == 1 => format!("algo {}", c.algo),
            Some(c) => format!("algo {} split-K ({:?})", c.algo, c.reduction),
            None => "no config".into(),
        }
    }
}

/// A record's operands as far as its elements need them ([`GemmRecord::operands_for`]): `g`
/// holds the listed rows of A and C and columns of B (and the bias) only.
struct Sampled {
    g: Gemm,
    rows: Vec<usize>,
    cols: Vec<usize>,
}

impl Sampled {
    /// Where element e (row-major in the recorded GEMM of n columns) sits in `g`.
    fn at(&self, e: usize, n: usize) -> (usize, usize) {
        let find = |v: &[usize], x: usize| v.binary_search(&x).expect("an element the operands were made for");
        (find(&self.rows, e / n), find(&self.cols, e % n))
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
    let shape = (record.m, record.n, record.k);
    // The sampled elements' rows and columns only; the schedule is the whole GEMM's.
    let mut s = record.operands_for(model, &record.indices());
    s.g = s.g.as_torch_linear_in(record.n, record.k);
    let g = &s.g;
    let want = record.elements_at(model, g, |e| s.at(e, record.n))?;
    let emu = LibraryEmulator::new(model);
    let config = match record.kernel_config()? {
        Some(c) => c,
        None => match emu.config_for(shape, g.c.is_some(), g.bias.is_some()) {
            Ok(c) => c.clone(),
            Err(e) => return Ok(Replayed { elements: want.len(), matched: 0, config: None, skipped: Some(e.to_string()), first_miss: None, misses: vec![] }),
        },
    };
    let plan = match emu.plan_for(shape, &config, g.bias.is_some()) {
        Ok(p) => p,
        Err(e) => return Ok(Replayed { elements: want.len(), matched: 0, config: Some(config), skipped: Some(e.to_string()), first_miss: None, misses: vec![] }),
    };
    // Whole D recorded: emulate it as tiles (the lane kernel's eight columns at a time);
    // sampled elements: each its own dot product, a lane of the kernel each.
    let got: Vec<u64> = if record.idx.is_none() {
        emu.run(g, &plan, &|_| ())?
    } else {
        emu.elements(g, &plan, &want.iter().map(|&(e, _)| s.at(e, record.n)).collect::<Vec<_>>())?
    };
    let mut matched = 0;
    let mut first_miss = None;
    let mut misses = Vec::new();
    for (&(i, w), &e) in want.iter().zip(&got) {
        if w == e {
            matched += 1;
            continue;
        }
        if first_miss.is_none() {
            first_miss = Some((i / record.n, i % record.n, hex(w, out), hex(e, out)));
        }
        if misses.len() < 256 {
            misses.push((i / record.n, i % record.n));
        }
    }
    Ok(Replayed { elements: want.len(), matched, config: Some(config), skipped: None, first_miss, misses })
}

/// The shape class of a GEMM, as the README's validation table groups them (first that fits).
pub fn shape_class(m: usize, n: usize, k: usize) -> &'static str {
    if m <= 2 || n <= 2 {
        "m or n <= 2 (GEMV-like)"
    } else if m * n <= 16384 && k >= 4096 {
        "small m*n, K >= 4096"
    } else if k >= 4096 {
        "K >= 4096"
    } else if m % 16 != 0 || n % 16 != 0 || k % 16 != 0 {
        "not multiples of 16"
    } else {
        "multiples of 16"
    }
}

/// Replay results of many records, per (path, kernel family).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub gemms: usize,
    /// GEMMs whose every recorded element was reproduced.
    pub exact: usize,
    /// GEMMs the model declines (a schedule it does not model, or a shape it never learned).
    pub skipped: usize,
    pub elements: usize,
    pub matched: usize,
}

impl Tally {
    pub fn add(&mut self, r: &Replayed) {
        self.gemms += 1;
        self.skipped += r.skipped.is_some() as usize;
        self.exact += (r.skipped.is_none() && r.matched == r.elements) as usize;
        if r.skipped.is_none() {
            self.elements += r.elements;
            self.matched += r.matched;
        }
    }

    /// Fraction of the emulated elements reproduced (1 when nothing was emulated).
    pub fn fraction(&self) -> f64 {
        if self.elements == 0 {
            1.0
        } else {
            self.matched as f64 / self.elements as f64
        }
    }
}

/// Tallies keyed by (path, family).
pub type Summary = std::collections::BTreeMap<(String, String), Tally>;

/// Replay every record line of `text` (JSONL) under the `sm90:<path>` library model of each
/// (or `models`' override), adding to `summary`; `on_record` sees each result. Unreadable lines
/// are errors naming their number.
pub fn replay_text(
    text: &str,
    models: &mut std::collections::BTreeMap<String, LibraryModel>,
    model_override: Option<(&str, Option<&std::path::Path>)>,
    summary: &mut Summary,
    mut on_record: impl FnMut(&GemmRecord, &Replayed),
) -> Result<(), (usize, String)> {
    use rayon::prelude::*;
    // Records replay in parallel a chunk at a time (most sample 256 elements of a large GEMM,
    // each emulated alone: one record does not fill the cores); summaries and `on_record` see
    // them in file order.
    let chunk = 4 * rayon::current_num_threads();
    let mut pending: Vec<(usize, GemmRecord, String)> = Vec::with_capacity(chunk);
    let mut flush = |pending: &mut Vec<(usize, GemmRecord, String)>, models: &std::collections::BTreeMap<String, LibraryModel>| -> Result<(), (usize, String)> {
        let done: Vec<Result<Replayed, (usize, String)>> = pending.par_iter().map(|(no, rec, name)| replay(rec, &models[name]).map_err(|e| (no + 1, e.to_string()))).collect();
        for ((_, rec, _), r) in pending.iter().zip(done) {
            let r = r?;
            summary.entry((rec.path.clone(), GemmRecord::family(r.config.as_ref()))).or_default().add(&r);
            on_record(rec, &r);
        }
        pending.clear();
        Ok(())
    };
    for (no, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let rec = GemmRecord::parse(line).map_err(|e| (no + 1, e.to_string()))?;
        let (name, table) = match model_override {
            Some((m, t)) => (m.to_string(), t),
            None => (crate::model::default_name(&rec.path), None),
        };
        if !models.contains_key(&name) {
            let m = LibraryModel::load(&name, table).map_err(|e| (no + 1, e.to_string()))?;
            models.insert(name.clone(), m);
        }
        pending.push((no, rec, name));
        if pending.len() == chunk {
            flush(&mut pending, models)?;
        }
    }
    flush(&mut pending, models)
}

/// What the corpus must keep reproducing, per (path, family): at least `min_gemms` GEMMs
/// replayed, at least `min_exact` of them reproduced in every element, at most `max_skipped`
/// declined as not modelled, and at least `min_fraction` of the emulated elements reproduced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatchetEntry {
    pub path: String,
    pub family: String,
    pub min_gemms: usize,
    pub min_exact: usize,
    pub max_skipped: usize,
    pub min_fraction: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ratchet {
    #[serde(default)]
    pub family: Vec<RatchetEntry>,
}

impl Ratchet {
    /// The ratchet that the summary meets exactly now (fractions rounded down to 1e-4).
    pub fn from_summary(summary: &Summary) -> Ratchet {
        let family = summary
            .iter()
            .map(|((path, family), t)| RatchetEntry {
                path: path.clone(),
                family: family.clone(),
                min_gemms: t.gemms,
                min_exact: t.exact,
                max_skipped: t.skipped,
                min_fraction: (t.fraction() * 1e4).floor() / 1e4,
            })
            .collect();
        Ratchet { family }
    }

    /// Every way `summary` falls short of the ratchet, or has a family the ratchet lacks.
    pub fn check(&self, summary: &Summary) -> Vec<String> {
        let mut problems = Vec::new();
        for e in &self.family {
            let Some(t) = summary.get(&(e.path.clone(), e.family.clone())) else {
                problems.push(format!("{} {}: no GEMMs replayed (ratchet wants {})", e.path, e.family, e.min_gemms));
                continue;
            };
            let what = format!("{} {}", e.path, e.family);
            if t.gemms < e.min_gemms {
                problems.push(format!("{what}: {} GEMMs, ratchet wants at least {}", t.gemms, e.min_gemms));
            }
            if t.exact < e.min_exact {
                problems.push(format!("{what}: {} GEMMs exact, ratchet wants at least {}", t.exact, e.min_exact));
            }
            if t.skipped > e.max_skipped {
                problems.push(format!("{what}: {} GEMMs declined, ratchet allows {}", t.skipped, e.max_skipped));
            }
            if t.fraction() < e.min_fraction {
                problems.push(format!("{what}: {:.4} of elements reproduced, ratchet wants {:.4}", t.fraction(), e.min_fraction));
            }
        }
        for (path, family) in summary.keys() {
            if !self.family.iter().any(|e| &e.path == path && &e.family == family) {
                problems.push(format!("{path} {family}: not in the ratchet"));
            }
        }
        problems
    }
}
