//! Library GEMMs as PyTorch runs them (cuBLAS/cuBLASLt on whole matrices): a library model is
//! the instruction arithmetic (a [`Model`]) plus the schedule around it ([`schedule`]): which
//! kernel the library picks for a shape ([`table`], recorded from cuBLASLt's own log), where
//! that kernel cuts K, how it reduces the partial sums, where C enters and how D is rounded.
//!
//! A library model is named like its path, `sm90:cublas.gemm.f32.f16.f16.f32`; its TOML file
//! holds the arithmetic knobs and a `[schedule]` table, and `models/<arch>/cublas/<path>.configs.tsv.gz`
//! the recorded configuration of every shape learned.

pub mod capture;
pub mod config;
pub mod coverage;
pub mod fprev;
pub mod gemm;
pub mod libgen;
pub mod npy;
pub mod record;
pub mod schedule;
pub mod tree;
pub mod scheme;
pub mod table;

pub use config::{KernelConfig, Reduction};
pub use gemm::{Gemm, GemmError};
pub use schedule::{Plan, PlanError, ScheduleRules};
pub use table::ConfigTable;

use crate::model::{Model, ModelError};

/// Recorded configuration tables shipped in the binary, by model name.
const TABLES: &[(&str, &[u8])] = &[
    ("sm90:cublas.gemm.f32.f16.f16.f32", include_bytes!("../../models/sm90/cublas/cublas.gemm.f32.f16.f16.f32.configs.tsv.gz")),
    ("sm90:cublas.gemm.f16.f16.f16.f16", include_bytes!("../../models/sm90/cublas/cublas.gemm.f16.f16.f16.f16.configs.tsv.gz")),
    ("sm90:cublas.gemm.f32.bf16.bf16.f32", include_bytes!("../../models/sm90/cublas/cublas.gemm.f32.bf16.bf16.f32.configs.tsv.gz")),
    ("sm90:cublas.gemm.bf16.bf16.bf16.bf16", include_bytes!("../../models/sm90/cublas/cublas.gemm.bf16.bf16.bf16.bf16.configs.tsv.gz")),
    ("sm90:cublas.gemm.f32.tf32.tf32.f32", include_bytes!("../../models/sm90/cublas/cublas.gemm.f32.tf32.tf32.f32.configs.tsv.gz")),
    ("sm90:cublas.gemm.f32.f32.f32.f32", include_bytes!("../../models/sm90/cublas/cublas.gemm.f32.f32.f32.f32.configs.tsv.gz")),
    ("sm90:cublas.gemm.f64.f64.f64.f64", include_bytes!("../../models/sm90/cublas/cublas.gemm.f64.f64.f64.f64.configs.tsv.gz")),
];

/// A library model: arithmetic, schedule rules and the learned configuration table.
pub struct LibraryModel {
    pub chain: Model,
    /// The chain under each `[[schedule.chains]]` rule, in order.
    pub variants: Vec<Model>,
    pub rules: ScheduleRules,
    pub table: ConfigTable,
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

    /// Load by name (`sm90:cublas.gemm.f32.f16.f16.f32`: embedded model and table) or from a
    /// TOML file, with the table from `table` (a `.configs.tsv[.gz]` file) where given.
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
        let table = match table {
            Some(p) => {
                let bytes = std::fs::read(p).map_err(|e| LibraryError::Table { path: p.display().to_string(), message: e.to_string() })?;
                parse_table(&bytes, &p.display().to_string())?
            }
            None => match TABLES.iter().find(|(n, _)| *n == name_or_path || *n == chain.name) {
                Some((n, bytes)) => parse_table(bytes, n)?,
                None => ConfigTable::default(),
            },
        };
        Ok(LibraryModel { chain, variants, rules, table })
    }

    /// Names of the embedded library models.
    pub fn embedded_names() -> Vec<&'static str> {
        TABLES.iter().map(|(n, _)| *n).collect()
    }
}

fn parse_table(bytes: &[u8], what: &str) -> Result<ConfigTable, LibraryError> {
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(bytes), &mut s)
            .map_err(|e| LibraryError::Table { path: what.to_string(), message: format!("not gzip text: {e}") })?;
        s
    } else {
        String::from_utf8(bytes.to_vec()).map_err(|_| LibraryError::Table { path: what.to_string(), message: "not UTF-8 text".into() })?
    };
    ConfigTable::parse(&text).map_err(|e| LibraryError::Table { path: what.to_string(), message: e.to_string() })
}
