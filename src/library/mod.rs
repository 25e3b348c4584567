//! Library GEMMs as PyTorch runs them (cuBLAS/cuBLASLt on whole matrices): a library model is
//! the instruction arithmetic (a [`Model`]) plus the schedule around it ([`schedule`]): which
//! kernel the library picks for a shape ([`table`], recorded from cuBLASLt's own log), where
//! that kernel cuts K, how it reduces the partial sums, where C enters and how D is rounded.
//!
//! A library model is named by the GPU whose kernel choices it holds and its path,
//! `h200:cublas.gemm.f32.f16.f16.f32`; its TOML file holds the arithmetic knobs and a
//! `[schedule]` table (with `[schedule.gpu]`: the GPU, SM count and cuBLAS version), and
//! `models/<gpu>/cublas/<path>.configs.tsv.xz` the traced configurations of shapes,
//! `<path>.predict.tsv.xz` the predictor of the configuration at any other shape ([`predict`]).

pub mod calibrate;
pub mod capture;
pub mod config;
pub mod coverage;
pub mod fit;
pub mod fprev;
pub mod gemm;
pub mod infer_lanes;
pub mod libgen;
pub mod npy;
pub mod op;
pub mod predict;
pub mod record;
pub mod scalars;
pub mod segment_k;
pub mod schedule;
pub mod trace;
pub mod tree;
pub mod scheme;
pub mod table;

pub use config::{KernelConfig, Reduction};
pub use gemm::{Gemm, GemmError};
pub use op::TorchOp;
pub use scalars::Scalars;
pub use predict::Predictor;
pub use schedule::{Plan, PlanError, ScheduleRules};
pub use table::ConfigTable;

use crate::model::{Model, ModelError};

/// Kernel tables and predictors shipped in the binary, by model name.
macro_rules! gpu_data {
    ($($gpu:literal: [$($path:literal),*]),*) => {
        &[$($(
            (concat!($gpu, ":", $path),
             include_bytes!(concat!("../../models/", $gpu, "/cublas/", $path, ".configs.tsv.xz")).as_slice(),
             include_bytes!(concat!("../../models/", $gpu, "/cublas/", $path, ".predict.tsv.xz")).as_slice()),
        )*)*]
    };
}
const TABLES: &[(&str, &[u8], &[u8])] = gpu_data!(
    "h100": [
        "cublas.gemm.f32.f16.f16.f32", "cublas.gemm.f16.f16.f16.f16", "cublas.gemm.f32.bf16.bf16.f32", "cublas.gemm.bf16.bf16.bf16.bf16",
        "cublas.gemm.f32.tf32.tf32.f32", "cublas.gemm.f32.f32.f32.f32", "cublas.gemm.f64.f64.f64.f64",
        "cublaslt.matmul.f32.e4m3.e4m3.f32", "cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum", "cublaslt.matmul.f32.e4m3.e5m2.f32",
        "cublaslt.matmul.f32.e5m2.e4m3.f32"
    ],
    "h200": [
        "cublas.gemm.f32.f16.f16.f32", "cublas.gemm.f16.f16.f16.f16", "cublas.gemm.f32.bf16.bf16.f32", "cublas.gemm.bf16.bf16.bf16.bf16",
        "cublas.gemm.f32.tf32.tf32.f32", "cublas.gemm.f32.f32.f32.f32", "cublas.gemm.f64.f64.f64.f64",
        "cublaslt.matmul.f32.e4m3.e4m3.f32", "cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum", "cublaslt.matmul.f32.e4m3.e5m2.f32",
        "cublaslt.matmul.f32.e5m2.e4m3.f32"
    ]
);

/// A library model: arithmetic, schedule rules and the learned configuration table.
pub struct LibraryModel {
    pub chain: Model,
    /// The chain under each `[[schedule.chains]]` rule, in order.
    pub variants: Vec<Model>,
    pub rules: ScheduleRules,
    /// Traced shapes with the kernel cuBLASLt ran.
    pub table: ConfigTable,
    /// The kernel at shapes the table does not hold (empty: none predicted).
    pub predictor: Predictor,
    /// Where the table came from when it is not the model's own (`--table FILE`).
    pub table_source: Option<String>,
    /// Answer with the predictor at shapes the table does not hold. Off unless asked for: on
    /// held-out H200 shapes the predictors are still wrong for about 1.1% of GEMMs
    /// (report/predict-h200.txt), so by default such a shape is declined, naming the prediction.
    pub use_predictor: bool,
}

/// Why a library model cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("model '{0}' has no [schedule] table: it is an instruction model, not a library model")]
    NotLibrary(String),
    #[error("model '{name}': {message}")]
    Invalid { name: String, message: String },
    #[error("configuration table {path}: {message}")]
    Table { path: String, message: String },
}

impl LibraryModel {
    /// How many products `plan`'s chain adds in one fused step: its instruction's block width
    /// (8 for sm90's TF32 mma, 1 for the SIMT kernels' FMA chains). FPRev sees the k of one
    /// block under one node. Blocks dealt in runs (`blocks.interleave`) count as 1 here.
    pub fn fused_width(&self, plan: &Plan) -> usize {
        let (model, format) = match plan.chain.checked_sub(1) {
            None => (&self.chain, self.rules.chain_format()),
            Some(c) => (&self.variants[c], self.rules.chains[c].chain_inputs.unwrap_or_else(|| self.rules.chain_format())),
        };
        let blocks = &model.arithmetic(format).blocks;
        if blocks.interleave == 0 {
            blocks.width.max(1)
        } else {
            1
        }
    }

    /// Load by name (`h200:cublas.gemm.f32.f16.f16.f32`: embedded model, table and predictor) or
    /// from a TOML file, with the table from `table` (a `.configs.tsv[.gz]` file, e.g. what
    /// `mmafuzz library trace` wrote) where given: then that table alone decides kernels.
    pub fn load(name_or_path: &str, table: Option<&std::path::Path>) -> Result<LibraryModel, LibraryError> {
        let chain = Model::load(name_or_path)?;
        let schedule = chain.schedule.clone().ok_or_else(|| LibraryError::NotLibrary(chain.name.clone()))?;
        let rules = ScheduleRules::from_table(&schedule).map_err(|message| LibraryError::Invalid { name: chain.name.clone(), message })?;
        let variants = rules
            .chains
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let start = match &c.model {
                    Some(name) => Model::load(name)?,
                    None => chain.clone(),
                };
                start.with_overrides(&format!("{} chain {}", chain.name, i + 1), &c.knobs)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let embedded = TABLES.iter().find(|(n, _, _)| *n == name_or_path || *n == chain.name);
        let (table, predictor, table_source) = match table {
            Some(p) => {
                let bytes = std::fs::read(p).map_err(|e| LibraryError::Table { path: p.display().to_string(), message: e.to_string() })?;
                (parse_table(&bytes, &p.display().to_string())?, Predictor::default(), Some(p.display().to_string()))
            }
            None => match embedded {
                Some((n, table, predictor)) => (parse_table(table, n)?, parse_predictor(predictor, n)?, None),
                None => (ConfigTable::default(), Predictor::default(), None),
            },
        };
        Ok(LibraryModel { chain, variants, rules, table, predictor, table_source, use_predictor: false })
    }

    /// This model with the predictor (and the kernel table, where there is one) of a directory
    /// that `mmafuzz library fit` or `calibrate` wrote: `DIR/<path>.predict.tsv.xz` and
    /// `DIR/<path>.configs.tsv.xz` (or `.tsv.gz`, `.tsv`), so that a fit is checked before it is
    /// embedded. A missing predictor file is an error; a missing table keeps the model's own.
    pub fn with_learned_from(mut self, dir: &std::path::Path) -> Result<LibraryModel, LibraryError> {
        let path = self.chain.name.split_once(':').map_or(self.chain.name.as_str(), |(_, p)| p).to_string();
        let read = |file: std::path::PathBuf| std::fs::read(&file).map_err(|e| LibraryError::Table { path: file.display().to_string(), message: e.to_string() });
        let predictor = learned_file(dir, &path, "predict");
        self.predictor = parse_predictor(&read(predictor.clone())?, &predictor.display().to_string())?;
        let table = learned_file(dir, &path, "configs");
        if table.exists() {
            self.table = parse_table(&read(table.clone())?, &table.display().to_string())?;
        }
        Ok(self)
    }

    /// Names of the embedded library models.
    pub fn embedded_names() -> Vec<&'static str> {
        TABLES.iter().map(|(n, _, _)| *n).collect()
    }

    /// The GPU the model's kernel choices belong to.
    pub fn gpu(&self) -> Option<&schedule::GpuInfo> {
        self.rules.gpu.as_ref()
    }

    /// What a user asking for GPU `gpu` (`h100`, `h200`, or a name as the driver reports it)
    /// should be told about this model's kernel choices: None where they are that GPU's; a
    /// table given as a file is checked against the GPU its provenance names.
    pub fn gpu_mismatch(&self, gpu: Option<&str>) -> Option<String> {
        let own = self.gpu()?;
        if let (Some(src), Some(traced)) = (&self.table_source, self.table.gpu_name()) {
            if traced != own.name {
                return Some(format!("the table {src} was traced on {traced}, but {} describes {}: its kernels are {traced}'s", self.chain.name, own.name));
            }
        }
        let asked = gpu?;
        if asked.eq_ignore_ascii_case(&own.key) || asked == own.name {
            return None;
        }
        let what = if self.table_source.is_some() { "the given table's" } else { "its" };
        Some(format!("{} holds the kernel choices of {own}; asked about {asked}, {what} answers may be another GPU's", self.chain.name))
    }
}

/// A path's kernel table (`what` = "configs") or predictor ("predict") in `dir`: the file
/// that exists, or `<path>.<what>.tsv.xz` for a new one.
pub fn learned_file(dir: &std::path::Path, path: &str, what: &str) -> std::path::PathBuf {
    crate::store::tsv_file(dir, &format!("{path}.{what}"))
}

fn parse_predictor(bytes: &[u8], what: &str) -> Result<Predictor, LibraryError> {
    let text = text_of(bytes, what)?;
    Predictor::parse(&text).map_err(|e| LibraryError::Table { path: what.to_string(), message: e.to_string() })
}

/// A table's text: gzip or xz decompressed, or plain UTF-8.
fn text_of(bytes: &[u8], what: &str) -> Result<String, LibraryError> {
    let raw = crate::store::decompress(bytes.to_vec()).map_err(|e| LibraryError::Table { path: what.to_string(), message: format!("not gzip or xz text: {e}") })?;
    String::from_utf8(raw).map_err(|_| LibraryError::Table { path: what.to_string(), message: "not UTF-8 text".into() })
}

fn parse_table(bytes: &[u8], what: &str) -> Result<ConfigTable, LibraryError> {
    let text = text_of(bytes, what)?;
    ConfigTable::parse(&text).map_err(|e| LibraryError::Table { path: what.to_string(), message: e.to_string() })
}
