//! Recorded library GEMMs (the corpus of `corpus/library/`): each line names a GEMM by
//! reference (path, generator seed, shape, β), the kernel configuration cuBLASLt logged for it,
//! and D's bits for all elements (`"idx"` absent) or for the listed ones.
//!
//! `{"path":"cublas.gemm.f32.f16.f16.f32","gpu":"NVIDIA H100 80GB HBM3","driver":"580.159.04",
//!   "torch":"2.11.0+cu130","cublas":"13.1.0","seed":1000,"m":128,"n":128,"k":4096,"beta":0,
//!   "config":"algoId=66 ...","idx":[0,5,...],"d":["3f800000",...]}`

use super::gemm::{Gemm, GemmError, LibraryEmulator};
use super::libgen::{self, KLine, Operand, Order, Style};
use super::{KernelConfig, LibraryModel, TorchOp};
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
    /// How the operands' values are drawn ([`libgen::Style`]): "uniform" (or absent) as
    /// generated; "special" with planted special values (`libgen::line_plant`: ±inf, NaN,
    /// ±max, ±0, ± subnormals in some rows of A and columns of B, rows and columns of signed
    /// zeros; `libgen::c_element_special` for C and the bias); "normal" Irwin–Hall values;
    /// "wide" a wide exponent range; "cancel" the halves of K nearly cancelling.
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
        for (name, d) in [("m", r.m), ("n", r.n), ("k", r.k)] {
            if d == 0 || d > crate::library::gemm::MAX_DIM {
                return Err(RecordError::Field(name, format!("{d} is outside 1..={}", crate::library::gemm::MAX_DIM)));
            }
        }
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
        r.style()?;
        Ok(r)
    }

    /// The style the operands are generated in (`values`; absent = uniform).
    pub fn style(&self) -> Result<Style, RecordError> {
        self.values.as_deref().map_or(Ok(Style::Uniform), |v| v.parse().map_err(|e: libgen::UnknownStyle| RecordError::Field("values", e.to_string())))
    }

    /// The PyTorch call that made the GEMM: `_scaled_mm` on the FP8 paths; else F.linear with
    /// (`bias`) or without a bias (B stored as the weight, `layout` "bt"), `addmm` (β 1) or
    /// `torch.mm`.
    pub fn op(&self) -> TorchOp {
        match () {
            _ if self.path.starts_with("cublaslt.") => TorchOp::ScaledMm,
            _ if self.bias == 1 => TorchOp::LinearBias,
            _ if self.layout.is_some() => TorchOp::Linear,
            _ if self.beta == 1 => TorchOp::Addmm,
            _ => TorchOp::Mm,
        }
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
        self.operands_in([r.inputs, r.b_inputs(), r.output], idx)
    }

    /// [`GemmRecord::operands_for`] in the formats of A, B and C (D's, the bias's).
    fn operands_in(&self, [fa, fb, fc]: [crate::Format; 3], idx: &[usize]) -> Sampled {
        let (n, k) = (self.n, self.k);
        let mut rows: Vec<usize> = idx.iter().map(|&e| e / n).collect();
        let mut cols: Vec<usize> = idx.iter().map(|&e| e % n).collect();
        rows.sort_unstable();
        rows.dedup();
        cols.sort_unstable();
        cols.dedup();
        let (sm, sn) = (rows.len(), cols.len());
        let style = self.style().expect("a record's values are checked when it is read");
        let seed = self.seed;
        let c_element = |e: usize| libgen::styled(fc, style, seed, Operand::C, e as u64, self.m, n);
        // A by rows and B by columns, lines along K (`libgen::KLine`: the same elements as
        // `libgen::styled`, with what a style decides per line decided once).
        let mut a = vec![0; sm * k];
        for (&i, row) in rows.iter().zip(a.chunks_mut(k.max(1))) {
            KLine::new(fa, style, seed, Operand::A, Order::RowMajor, i as u64, self.m, k).fill(row);
        }
        // "bt": B generated as Bᵀ (n×k row-major), element (kk, j) at j·k + kk.
        let order = if self.layout.as_deref() == Some("bt") { Order::Transposed } else { Order::RowMajor };
        let mut b = vec![0; k * sn];
        // Eight columns at a time, then written row by row: column by column, each write of a
        // deep B would land on a cache line of its own.
        let mut block = vec![0; 8 * k];
        for (first, group) in cols.chunks(8).enumerate() {
            for (&j, line) in group.iter().zip(block.chunks_mut(k.max(1))) {
                KLine::new(fb, style, seed, Operand::B, order, j as u64, k, n).fill(line);
            }
            for (kk, row) in b.chunks_mut(sn.max(1)).enumerate() {
                for (c, x) in row[8 * first..8 * first + group.len()].iter_mut().enumerate() {
                    *x = block[c * k + kk];
                }
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
    let plan = match emu.plan_shape(shape, &config, g.bias.is_some(), record.op()) {
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

/// The shape class of a GEMM, as the validation tables (report/predict-h200.txt) group them (first that fits).
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

/// The library model a record replays under by default: the one of the GPU it was recorded on
/// where the GPU has its own (`h200:<path>` for an H200's cuBLAS GEMMs), else the default.
pub fn model_of_record(rec: &GemmRecord) -> String {
    model_of_gpu(&rec.gpu, &rec.path)
}

/// The library model of `path` for what ran on the GPU named `gpu` (as the driver names it):
/// `h200:<path>` for an H200's cuBLAS GEMMs, else the default.
pub fn model_of_gpu(gpu: &str, path: &str) -> String {
    const GPU_MODELS: [(&str, &str); 1] = [("NVIDIA H200", "h200")];
    match GPU_MODELS.iter().find(|(name, _)| gpu == *name) {
        Some((_, key)) if path.starts_with("cublas") => format!("{key}:{path}"),
        _ => crate::model::default_name(path),
    }
}

/// Replay every record line of `text` (JSONL) under the library model of the GPU each was
/// recorded on (`model_of_record`, or `models`' override), adding to `summary`; `on_record` sees each result. Unreadable lines
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
            None => (model_of_record(&rec), None),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;

    const FORMATS: [Format; 3] = [Format::F16, Format::F16, Format::F32];
    const SEED: u64 = 21;
    const M: usize = 3;
    const N: usize = 4;
    const K: usize = 7;

    /// A record line of a 3×4×7 GEMM of seed 21 (`addend`: `"beta":1` or `"bias":1`).
    fn line(values: Option<&str>, layout: Option<&str>, addend: &str) -> String {
        let values = values.map_or(String::new(), |v| format!(r#","values":"{v}""#));
        let layout = layout.map_or(String::new(), |l| format!(r#","layout":"{l}""#));
        let beta = if addend == "beta" { 1 } else { 0 };
        let bias = if addend == "bias" { r#","bias":1"# } else { "" };
        let d = [r#""00000000""#; M * N].join(",");
        format!(r#"{{"path":"cublas.gemm.f32.f16.f16.f32","seed":{SEED},"m":{M},"n":{N},"k":{K},"beta":{beta}{bias}{values}{layout},"d":[{d}]}}"#)
    }

    fn operands(values: Option<&str>, layout: Option<&str>, addend: &str, idx: &[usize]) -> Sampled {
        GemmRecord::parse(&line(values, layout, addend)).unwrap().operands_in(FORMATS, idx)
    }

    /// Dimensions from a hostile line: zero, past the bound, or whose product overflows, are
    /// refused by name before anything multiplies them.
    #[test]
    fn hostile_dimensions_are_refused() {
        let ok = line(None, None, "beta");
        assert!(GemmRecord::parse(&ok).is_ok());
        for (field, value) in [("m", "0"), ("n", "4294967296"), ("k", "18446744073709551615"), ("m", "1048577")] {
            let bad = ok.replacen(&format!(r#""{field}":{}"#, match field { "m" => M, "n" => N, _ => K }), &format!(r#""{field}":{value}"#), 1);
            let e = GemmRecord::parse(&bad).unwrap_err().to_string();
            assert!(e.contains(&format!("field '{field}'")) && e.contains(value), "{bad}: {e}");
        }
        let sampled = ok.replacen(&format!(r#""m":{M}"#), r#""m":1048576"#, 1).replacen(&format!(r#""n":{N}"#), r#""n":1048576"#, 1);
        let e = GemmRecord::parse(&sampled).unwrap_err().to_string();
        assert!(e.contains("12 values for 1099511627776 elements"), "{e}");
    }

    #[test]
    fn values_name_a_style() {
        assert_eq!(GemmRecord::parse(&line(None, None, "beta")).unwrap().style().unwrap(), Style::Uniform);
        for s in Style::ALL {
            assert_eq!(GemmRecord::parse(&line(Some(s.name()), None, "beta")).unwrap().style().unwrap(), s);
        }
        let e = GemmRecord::parse(&line(Some("gaussian"), None, "beta")).unwrap_err().to_string();
        assert!(e.starts_with("field 'values'") && e.contains("'gaussian'") && e.contains("special"), "{e}");
    }

    /// Records without values and with "special" regenerate as they always have (the plain
    /// generator; its plants by rows of A and columns of B, element by element for C and the
    /// bias); the new styles follow `libgen::styled`, B made as Bᵀ included; and a sampled
    /// record's rows and columns are those of the whole GEMM.
    #[test]
    fn operands_follow_the_style() {
        let all: Vec<usize> = (0..M * N).collect();
        let (fa, fc) = (Format::F16, Format::F32);
        for layout in [None, Some("bt")] {
            let at_b = |kk: usize, j: usize| (if layout.is_some() { j * K + kk } else { kk * N + j }) as u64;
            let b_of = |g: &Gemm, kk: usize, j: usize| g.b[kk * N + j];
            for values in [None, Some("uniform")] {
                let g = operands(values, layout, "beta", &all).g;
                assert_eq!(g.a, libgen::elements(fa, SEED, Operand::A, M * K));
                assert!((0..K).all(|kk| (0..N).all(|j| b_of(&g, kk, j) == libgen::element(fa, SEED, Operand::B, at_b(kk, j)))));
                assert_eq!(g.c, Some(libgen::elements(fc, SEED, Operand::C, M * N)));
            }
            let g = operands(Some("special"), layout, "beta", &all).g;
            for i in 0..M {
                let p = libgen::line_plant(SEED, Operand::A, i as u64, K);
                assert!((0..K).all(|kk| g.a[i * K + kk] == libgen::planted(fa, p, kk, libgen::element(fa, SEED, Operand::A, (i * K + kk) as u64))));
            }
            for j in 0..N {
                let p = libgen::line_plant(SEED, Operand::B, j as u64, K);
                assert!((0..K).all(|kk| b_of(&g, kk, j) == libgen::planted(fa, p, kk, libgen::element(fa, SEED, Operand::B, at_b(kk, j)))));
            }
            assert_eq!(g.c, Some((0..(M * N) as u64).map(|e| libgen::c_element_special(fc, SEED, e)).collect()));
            let g = operands(Some("special"), layout, "bias", &all).g;
            assert_eq!(g.bias, Some((0..N as u64).map(|j| libgen::c_element_special(fc, SEED, j)).collect()));
            for (style, f) in [("normal", libgen::normal_element as fn(Format, u64, Operand, u64) -> u64), ("wide", libgen::wide_element)] {
                let g = operands(Some(style), layout, "beta", &all).g;
                assert!((0..M * K).all(|e| g.a[e] == f(fa, SEED, Operand::A, e as u64)), "{style}");
                assert!((0..K).all(|kk| (0..N).all(|j| b_of(&g, kk, j) == f(fa, SEED, Operand::B, at_b(kk, j)))), "{style}");
                assert!((0..M * N).all(|e| g.c.as_ref().unwrap()[e] == f(fc, SEED, Operand::C, e as u64)), "{style}");
            }
            // Cancel: K = 7, half 3: positions 3..6 repeat 0..3, position 6 as generated.
            let g = operands(Some("cancel"), layout, "beta", &all).g;
            for i in 0..M {
                for kk in 0..3 {
                    assert_eq!(g.a[i * K + kk], libgen::element(fa, SEED, Operand::A, (i * K + kk) as u64));
                    assert_eq!(g.a[i * K + kk + 3], g.a[i * K + kk] ^ 0x8000);
                }
                assert_eq!(g.a[i * K + 6], libgen::element(fa, SEED, Operand::A, (i * K + 6) as u64));
            }
            for j in 0..N {
                for kk in 0..3 {
                    assert_eq!(b_of(&g, kk, j), libgen::element(fa, SEED, Operand::B, at_b(kk, j)));
                    assert_eq!(b_of(&g, kk + 3, j), b_of(&g, kk, j) ^ 1);
                }
                assert_eq!(b_of(&g, 6, j), libgen::element(fa, SEED, Operand::B, at_b(6, j)));
            }
            assert_eq!(g.c, Some(libgen::elements(fc, SEED, Operand::C, M * N)));
            // Elements 5 and 11 sample rows 1 and 2, columns 1 and 3.
            for style in Style::ALL {
                let whole = operands(Some(style.name()), layout, "beta", &all).g;
                let s = operands(Some(style.name()), layout, "beta", &[5, 11]);
                assert_eq!((s.rows.as_slice(), s.cols.as_slice()), ([1, 2].as_slice(), [1, 3].as_slice()));
                assert_eq!(s.g.a, whole.a[K..3 * K], "{style}");
                assert!((0..K).all(|kk| (0..2).all(|c| s.g.b[kk * 2 + c] == whole.b[kk * N + s.cols[c]])), "{style}");
                let c = s.g.c.unwrap();
                assert_eq!((c[0], c[3]), (whole.c.as_ref().unwrap()[5], whole.c.as_ref().unwrap()[11]), "{style}");
            }
        }
    }
}
