//! Numeric models: every knob of a matrix unit's arithmetic, as data (TOML under `models/`).
//!
//! A model file holds the knobs for all input formats at its top level and, under
//! `[variants.<format>]`, partial overrides for cases whose A operand has that format (published
//! hypotheses differ per format: FTTN's H100 fuses 16 f16 products but only 4 tf32 ones).
//! [`Model::arithmetic`] merges the two and yields the [`Arithmetic`] the emulator obeys.

mod emulator;
mod fma_chain;
mod pair_sums;
mod integer;
pub mod knobs;
mod lanes;
mod library;
mod scratch;

pub use emulator::{Emulator, EmulatorError};
pub(crate) use emulator::{block_members, scale_operands, wide_sum, Operand, Term};
pub use library::{embedded_arch_model_names, embedded_model_names, embedded_model_source};

use crate::format::{Format, Overflow, Rounding};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Everything that decides one arithmetic: resolved for one input format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arithmetic {
    #[serde(default)]
    pub products: Products,
    pub blocks: Blocks,
    pub align: Align,
    pub accumulator: Accumulator,
    #[serde(default)]
    pub output: Output,
    #[serde(default)]
    pub inputs: Inputs,
    #[serde(default)]
    pub specials: Specials,
}

/// How each product `a·b` enters the sum.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Products {
    /// `None`: the product is exact. Otherwise it is rounded to this format (its range included).
    #[serde(default)]
    pub round_to: Option<Format>,
    #[serde(default = "rne")]
    pub rounding: Rounding,
    /// Exact products (`round_to` unset) that reach beyond this format's range become
    /// infinities before any addition (MMA-Sim's CDNA3: a product of 2^128 or more is ±inf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inf_above: Option<Format>,
}

/// How K is split into fused blocks and how the blocks and C are chained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blocks {
    /// Products that share one alignment and one rounding; 0 means all of K in one block.
    pub width: usize,
    /// Which end of K the chain starts from.
    #[serde(default)]
    pub order: BlockOrder,
    /// 0: block b holds k = b·width .. (b+1)·width. Otherwise K is dealt to the blocks in runs
    /// of this many: with 2 and two blocks, k mod 4 in {0, 1} is block 0 and {2, 3} block 1
    /// (H100 mma.sync fp8, whose fp8 registers are unpacked into two f16 tensor-core steps).
    #[serde(default)]
    pub interleave: usize,
    /// Where C (and after the first block, the running sum) enters.
    pub c: CPlacement,
    /// Rounding of the separate addition of each block result to the running sum (`c = "separate"`).
    #[serde(default = "rne")]
    pub separate_rounding: Rounding,
    /// Where partial sums are normalised and rounded inside a block.
    #[serde(default)]
    pub normalise: Normalise,
    /// The second adder of `c = "staged"`.
    #[serde(default, skip_serializing_if = "Staged::is_default")]
    pub staged: Staged,
    /// 0, or: a block's products are first summed exactly in runs of this many consecutive
    /// ones (by position in the block), and each run's sum is one term of the block's adder,
    /// keyed by its leading bit (`align.exponent = "leading_bit"`), its largest product's key
    /// otherwise; a run that cancels to zero still anchors the window under `field_sum` and
    /// `scale` (MMA-Sim's GST_FDPA, G = 16).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub group: usize,
}

fn is_zero(x: &usize) -> bool {
    *x == 0
}

/// The adder that joins a block's sum and the running sum under `c = "staged"` (MMA-Sim's
/// CDNA3 `mfma`, F = 24 and F2 = 31): the block's sum is kept exactly as its window left it;
/// with E the larger of its exponent and the running sum's (never below the accumulator's
/// smallest normal), the block's sum is floored to `dot_bits` bits below E and the running sum
/// to `c_bits`, their sum is floored to `keep` significant bits (the accumulator's subnormal
/// grid the lowest), then rounded into the accumulator by `accumulator.rounding`.
///
/// CDNA3's FP8 `mfma` (MMA-Sim's GTR_FDPA) adds two things: `even_odd` (the block's products at
/// even and at odd k are summed apart, each in its own window; both sums are floored onto the
/// grid of the larger one's window and added: that is the block's sum) and `drop_c` (a running
/// sum whose exponent lies more than `c_bits + 1` below E is dropped, not floored: a tiny
/// negative C gives 0, not -2^(E - c_bits)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Staged {
    pub dot_bits: u32,
    pub c_bits: u32,
    pub keep: u32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub even_odd: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_c: bool,
}

impl Default for Staged {
    fn default() -> Self {
        Staged { dot_bits: 32, c_bits: 24, keep: 32, even_odd: false, drop_c: false }
    }
}

impl Staged {
    fn is_default(&self) -> bool {
        *self == Staged::default()
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockOrder {
    /// Block 0 holds k = 0..width, and is summed first.
    #[default]
    Forward,
    /// The last block of K is summed first.
    Reverse,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CPlacement {
    /// The running sum (C at first) is one more term of each block's fused sum (Fasi et al.).
    Fused,
    /// Each block is fused and rounded alone, then added to the running sum (C at first) by one
    /// rounded addition (Hickmann & Bradford: "C always added using RNE").
    Separate,
    /// The blocks chain fused from +0 and C is added to their result by one rounded addition
    /// at the end (H100 mma.sync fp8: the tensor-core steps start from zero, then an FADD).
    After,
    /// Each block's products are fused alone and kept unrounded; the running sum (C at first)
    /// joins them in a second, narrower adder (`blocks.staged`), then one rounding into the
    /// accumulator (MMA-Sim's CDNA3 `mfma`).
    Staged,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalise {
    /// One alignment, one exact integer sum, one normalisation at the end of the block.
    #[default]
    End,
    /// A chain of floating-point adders: terms are added largest first and every partial sum is
    /// aligned, normalised and rounded to the accumulator format (what Fasi et al. refute on V100).
    EveryAdd,
    /// A balanced tree of two-term adders over the block's products in K order, each product
    /// and each sum rounded to the accumulator: (p0 + p1) + (p2 + p3) (MMA-Sim's CDNA2 `mfma`).
    Pairwise,
}

/// Alignment of the terms of one block to a common exponent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Align {
    pub mode: AlignMode,
    /// Which exponent of each term is compared to find the block's largest.
    #[serde(default)]
    pub exponent: AlignExponent,
    /// Bits kept below the accumulator's last place, counted from the largest exponent
    /// (negative: fewer bits than the accumulator holds). Ignored by `mode = "exact"`.
    #[serde(default)]
    pub extra_bits: i32,
    /// Bits above the accumulator's leading bit for carries; `None` = never overflows. A sum that
    /// needs more loses its top bits (what an adder that narrow would do).
    #[serde(default)]
    pub carry_bits: Option<u32>,
    /// The window's anchor never goes below the accumulator's smallest normal exponent: sums
    /// of tiny terms are cut at the subnormal grid (minus the extra bits), not below their own
    /// largest exponent (H100 bf16 and tf32).
    #[serde(default)]
    pub emin_floor: bool,
    /// Like `emin_floor`, with the floor this many exponents below the accumulator's smallest
    /// normal exponent: the adder's lowest place is fixed once the terms are that small.
    #[serde(default)]
    pub floor_below_emin: Option<u32>,
    /// The format whose precision sizes the window (`p + extra_bits` bits), when it is not the
    /// accumulator's: a wide adder that rounds once into a narrow result (H100 f16 output).
    #[serde(default)]
    pub window: Option<Format>,
}

impl Arithmetic {
    /// The lowest exponent the window may be anchored at, if any.
    pub fn anchor_floor(&self, acc_fmt: Format) -> Option<i32> {
        match (self.align.emin_floor, self.align.floor_below_emin) {
            (_, Some(n)) => Some(acc_fmt.emin() - n as i32),
            (true, None) => Some(acc_fmt.emin()),
            (false, None) => None,
        }
    }

    /// Significant bits of the alignment window above the extra bits.
    pub fn window_precision(&self, acc_fmt: Format) -> u32 {
        self.align.window.map_or(acc_fmt.precision(), |f| f.precision())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlignMode {
    /// No bit is ever dropped: the block sum is exact before its one rounding.
    Exact,
    /// Bits below the window are dropped from each term's magnitude (toward zero).
    Truncate,
    /// Bits below the window are dropped from each term's two's-complement value (toward -inf).
    Floor,
    /// Like `truncate`, but each term that lost nonzero bits sets a sticky bit one place below
    /// the window, which then takes part in the block's rounding.
    Sticky,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlignExponent {
    /// The exponent of each term's exact leading bit.
    #[default]
    LeadingBit,
    /// The sum of the operands' exponent fields (a product 1.x·1.y may carry one bit above it).
    FieldSum,
    /// The sum of the product's two block scales' exponent fields, whatever the operands
    /// (MMA-Sim's GST_FDPA for `kind::mxf4nvf4`: each group of products is keyed by its scale;
    /// 0 on tiles without scales). C and the running sum are keyed by their exponent field.
    Scale,
}

/// The format and rounding of the running sum between blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accumulator {
    /// `None`: the format of C and D.
    #[serde(default)]
    pub format: Option<Format>,
    /// Rounding of each block's sum into the accumulator.
    pub rounding: Rounding,
    /// Whether the accumulator can hold subnormals.
    #[serde(default)]
    pub subnormals: Subnormals,
    /// What a block sum beyond the accumulator's range becomes.
    #[serde(default)]
    pub overflow: Overflow,
    /// The accumulator's exponent range: that of its format, or unbounded (sums keep `p` bits
    /// below their leading bit however small or large; only the conversion to D meets D's
    /// subnormals and overflow, with `output.rounding`).
    #[serde(default)]
    pub range: AccRange,
    /// Bits each block sum keeps (rounded with `rounding`) before it enters the accumulator
    /// format, when fewer than the format holds (H100 wgmma fp8: about 14).
    #[serde(default)]
    pub precision: Option<u32>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccRange {
    #[default]
    Format,
    Unbounded,
}

/// Conversion of the accumulator into D's format, and what D may hold.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    #[serde(default = "rne")]
    pub rounding: Rounding,
    #[serde(default)]
    pub subnormals: Subnormals,
    #[serde(default)]
    pub overflow: Overflow,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inputs {
    /// Subnormal A and B elements.
    #[serde(default)]
    pub subnormals: Subnormals,
    /// Subnormal C elements.
    #[serde(default)]
    pub c_subnormals: Subnormals,
    /// The format whose exponent range A's and B's exponent fields are read in (field-sum
    /// alignment), as if each operand were first widened to it exactly: a subnormal of its own
    /// format that this format holds as a normal number has its true exponent as field. None:
    /// each operand's own format (H100 mma.sync mixed FP8 reads e4m3 subnormals as f16 would).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_format: Option<Format>,
}

impl Inputs {
    /// The smallest exponent field an operand of `f` can have: its own emin, or lower where
    /// `field_format` reaches further.
    pub fn field_emin(&self, f: Format) -> i32 {
        self.field_format.map_or(f.emin(), |w| w.emin().min(f.emin()))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subnormals {
    #[default]
    Keep,
    /// Replaced by a zero of the same sign.
    Flush,
    /// Operands only: replaced by +0, and so is a zero of either sign (MMA-Sim's CDNA2 adder
    /// flushes A, B and C with `where(|x| < 2^emin, +0, x)`, so -0 enters as +0).
    FlushPositive,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Specials {
    #[serde(default)]
    pub nan: NanOutput,
    #[serde(default)]
    pub zero_sign: ZeroSign,
}

/// The NaN pattern the unit writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NanOutput {
    /// Positive, quiet bit only (IEEE default NaN: f32 7fc00000).
    #[default]
    Canonical,
    /// Positive, every fraction bit set (f32 7fffffff).
    AllOnes,
    /// The payload of the first NaN among each block's B operands, then the running sum (C at
    /// first), then its A operands, quieted; an invalid operation (inf·0, inf − inf) gives the
    /// default NaN with the sign set (H100 f64: fff8000000000000).
    Propagate,
}

/// Sign of a sum that is exactly zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZeroSign {
    /// IEEE 754: -0 only if every term is -0 (or, rounding down, if any term is negative);
    /// otherwise +0.
    #[default]
    Ieee,
    /// Always +0.
    Positive,
    /// Every zero D holds is +0, also a nonzero result that underflows to zero (a datapath
    /// with no negative zero: H100 bf16 and tf32).
    Unsigned,
}

fn rne() -> Rounding {
    Rounding::Rne
}

/// A model file: name, provenance, base knobs and per-format overrides.
#[derive(Clone, Debug)]
pub struct Model {
    pub name: String,
    pub description: String,
    pub sources: Vec<String>,
    /// A library model's `[schedule]` table (how a whole GEMM is cut and reduced around this
    /// arithmetic; read by [`crate::library`]), untouched here.
    pub schedule: Option<toml::Table>,
    base: toml::Table,
    variants: BTreeMap<Format, toml::Table>,
    resolved: BTreeMap<Format, Arithmetic>,
}

/// A model that cannot be loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read model file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("model '{name}': {message}")]
    Invalid { name: String, message: String },
    #[error("unknown model '{0}': not a file, and not one of the embedded models ({1})")]
    Unknown(String, String),
}

/// The built-in model of a path: `sm90:<path>` for an instruction, `h100:<path>` for a cuBLAS or
/// cuBLASLt GEMM (its arithmetic is every Hopper GPU's; `h200:<path>` holds the H200's kernel
/// choices over the same arithmetic).
pub fn default_name(path: &str) -> String {
    if path.starts_with("cublas") {
        format!("h100:{path}")
    } else {
        format!("sm90:{path}")
    }
}

impl Model {
    /// Load by embedded name (`h100`, `exact-rne`, ...) or from a TOML file path.
    pub fn load(name_or_path: &str) -> Result<Model, ModelError> {
        if let Some(src) = embedded_model_source(name_or_path) {
            return Model::from_toml(name_or_path, src);
        }
        let path = Path::new(name_or_path);
        if path.exists() {
            let src = std::fs::read_to_string(path)
                .map_err(|source| ModelError::Read { path: name_or_path.to_string(), source })?;
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or(name_or_path);
            return Model::from_toml(stem, &src);
        }
        if let Some(path) = name_or_path.strip_prefix("sm90:").filter(|p| p.starts_with("cublas")) {
            return Err(ModelError::Invalid {
                name: name_or_path.to_string(),
                message: format!("library models name the GPU whose kernel choices they hold: h100:{path} or h200:{path}"),
            });
        }
        Err(ModelError::Unknown(name_or_path.to_string(), embedded_model_names().join(", ")))
    }

    /// Parse a model; every variant is resolved and checked now, so a bad file fails at load.
    /// `base = "NAME"` starts from an embedded model's knobs and overrides them with this file's.
    pub fn from_toml(default_name: &str, src: &str) -> Result<Model, ModelError> {
        let invalid = |name: &str, message: String| ModelError::Invalid { name: name.to_string(), message };
        let table: toml::Table = src.parse().map_err(|e| invalid(default_name, format!("not TOML: {e}")))?;
        let mut table = with_base(table, 0).map_err(|m| invalid(default_name, m))?;
        let name = match table.remove("name") {
            Some(toml::Value::String(s)) => s,
            None => default_name.to_string(),
            Some(_) => return Err(invalid(default_name, "'name' must be a string".into())),
        };
        let description = match table.remove("description") {
            Some(toml::Value::String(s)) => s,
            None => String::new(),
            Some(_) => return Err(invalid(&name, "'description' must be a string".into())),
        };
        let sources = match table.remove("sources") {
            None => vec![],
            Some(v) => v
                .try_into::<Vec<String>>()
                .map_err(|e| invalid(&name, format!("'sources' must be a list of strings: {e}")))?,
        };
        let schedule = match table.remove("schedule") {
            None => None,
            Some(toml::Value::Table(t)) => Some(t),
            Some(_) => return Err(invalid(&name, "'schedule' must be a table".into())),
        };
        let mut variants = BTreeMap::new();
        if let Some(v) = table.remove("variants") {
            let toml::Value::Table(vt) = v else {
                return Err(invalid(&name, "'variants' must be a table of formats".into()));
            };
            for (fmt, over) in vt {
                let f: Format = fmt.parse().map_err(|e: String| invalid(&name, format!("variants.{fmt}: {e}")))?;
                let toml::Value::Table(over) = over else {
                    return Err(invalid(&name, format!("variants.{fmt} must be a table")));
                };
                variants.insert(f, over);
            }
        }
        let mut model = Model { name, description, sources, schedule, base: table, variants, resolved: BTreeMap::new() };
        for f in Format::ALL.into_iter().chain(Format::INTEGERS) {
            let arith = model.resolve(f).map_err(|m| invalid(&model.name, m))?;
            model.resolved.insert(f, arith);
        }
        Ok(model)
    }

    fn resolve(&self, a_fmt: Format) -> Result<Arithmetic, String> {
        let mut merged = self.base.clone();
        if let Some(over) = self.variants.get(&a_fmt) {
            merge(&mut merged, over);
        }
        let arith: Arithmetic = toml::Value::Table(merged)
            .try_into()
            .map_err(|e| format!("knobs for {a_fmt} inputs: {e}"))?;
        arith.check().map_err(|e| format!("knobs for {a_fmt} inputs: {e}"))?;
        Ok(arith)
    }

    /// A model of one arithmetic for every input format (no variants), as `from_toml` would
    /// read it from that arithmetic's TOML, without the text round trip and one resolution per
    /// format: discovery builds one for each of up to millions of candidates.
    pub fn from_arithmetic(name: &str, arith: &Arithmetic) -> Result<Model, ModelError> {
        let invalid = |message: String| ModelError::Invalid { name: name.to_string(), message };
        arith.check().map_err(|e| invalid(e.to_string()))?;
        let base = toml::Table::try_from(arith).map_err(|e| invalid(e.to_string()))?;
        let resolved = Format::ALL.into_iter().chain(Format::INTEGERS).map(|f| (f, arith.clone())).collect();
        Ok(Model { name: name.to_string(), description: String::new(), sources: vec![], schedule: None, base, variants: BTreeMap::new(), resolved })
    }

    /// This model with some knobs replaced (a TOML table merged into the top level, e.g.
    /// `blocks = { width = 8 }`), named `name`.
    pub fn with_overrides(&self, name: &str, over: &toml::Table) -> Result<Model, ModelError> {
        let mut model = Model { name: name.to_string(), resolved: BTreeMap::new(), ..self.clone() };
        merge(&mut model.base, over);
        for f in Format::ALL.into_iter().chain(Format::INTEGERS) {
            let arith = model.resolve(f).map_err(|message| ModelError::Invalid { name: name.to_string(), message })?;
            model.resolved.insert(f, arith);
        }
        Ok(model)
    }

    /// The arithmetic for cases whose A operand has format `a_fmt`.
    pub fn arithmetic(&self, a_fmt: Format) -> &Arithmetic {
        &self.resolved[&a_fmt]
    }

    /// Formats that have their own `[variants.*]` table.
    pub fn variant_formats(&self) -> Vec<Format> {
        self.variants.keys().copied().collect()
    }
}

impl Arithmetic {
    fn check(&self) -> Result<(), String> {
        if let Some(f) = self.accumulator.format {
            if !matches!(f, Format::F16 | Format::Bf16 | Format::F32 | Format::F64) && !f.is_integer() {
                return Err(format!("accumulator format {f} is not supported (use f16, bf16, f32 or f64)"));
            }
        }
        if self.blocks.interleave > 0 && self.blocks.width > 0 && self.blocks.interleave >= self.blocks.width {
            return Err(format!("blocks.interleave = {} must be smaller than blocks.width = {} (longer runs leave blocks empty)", self.blocks.interleave, self.blocks.width));
        }
        if !(-60..=60).contains(&self.align.extra_bits) {
            return Err(format!("align.extra_bits = {} is outside -60..=60", self.align.extra_bits));
        }
        if self.accumulator.subnormals == Subnormals::FlushPositive || self.output.subnormals == Subnormals::FlushPositive {
            return Err("subnormals = \"flush_positive\" is for operands (inputs.subnormals, inputs.c_subnormals); the accumulator and the output keep or flush with the sign".into());
        }
        if self.align.carry_bits.is_some_and(|c| c > 32) {
            return Err("align.carry_bits must be at most 32".into());
        }
        let st = &self.blocks.staged;
        if !(1..=60).contains(&st.dot_bits) || !(1..=60).contains(&st.c_bits) || !(2..=60).contains(&st.keep) {
            return Err(format!("blocks.staged = {st:?}: dot_bits and c_bits must be 1..=60 and keep 2..=60"));
        }
        if self.blocks.c == CPlacement::Staged && (self.blocks.normalise != Normalise::End || self.align.mode == AlignMode::Exact) {
            return Err("blocks.c = \"staged\" takes a truncating block (normalise = \"end\", align.mode not \"exact\")".into());
        }
        if self.align.mode != AlignMode::Exact && self.align.extra_bits + 53 + 40 > 120 {
            // Window: accumulator precision + extra bits + carries must fit the 128-bit adder.
            return Err("align.extra_bits too large for a 128-bit window with an f64 accumulator".into());
        }
        Ok(())
    }
}

/// Expand `base = "NAME"`: the named embedded model's table (its own base expanded, its name,
/// description and sources dropped) with `table` merged over it.
fn with_base(mut table: toml::Table, depth: usize) -> Result<toml::Table, String> {
    let Some(base) = table.remove("base") else {
        return Ok(table);
    };
    let toml::Value::String(base) = base else {
        return Err("'base' must be the name of a built-in model".into());
    };
    if depth > 8 {
        return Err(format!("'base' chain too deep at '{base}'"));
    }
    let src = embedded_model_source(&base).ok_or_else(|| format!("base '{base}' is not a built-in model"))?;
    let parsed: toml::Table = src.parse().map_err(|e| format!("base '{base}': {e}"))?;
    let mut merged = with_base(parsed, depth + 1)?;
    for key in ["name", "description", "sources"] {
        merged.remove(key);
    }
    merge(&mut merged, &table);
    Ok(merged)
}

/// Deep-merge `over` into `base` (tables merge, other values replace).
fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_from_an_arithmetic_reads_as_its_toml_would() {
        // Every embedded architecture model's arithmetic, built directly and through its TOML
        // text, gives the same arithmetic for every input format; an invalid one is refused.
        for name in embedded_arch_model_names() {
            let arith = Model::load(name).unwrap().arithmetic(Format::F16).clone();
            let direct = Model::from_arithmetic("x", &arith).unwrap();
            let text = Model::from_toml("x", &toml::Table::try_from(&arith).unwrap().to_string()).unwrap();
            for f in Format::ALL.into_iter().chain(Format::INTEGERS) {
                assert_eq!(direct.arithmetic(f), text.arithmetic(f), "{name}, {f}");
            }
        }
        let mut bad = Model::load("h100").unwrap().arithmetic(Format::F16).clone();
        (bad.blocks.width, bad.blocks.interleave) = (4, 4);
        assert!(Model::from_arithmetic("x", &bad).is_err());
        assert!(Model::from_toml("x", &toml::Table::try_from(&bad).unwrap().to_string()).is_err());
    }

    #[test]
    fn every_embedded_model_loads_and_variants_override() {
        for name in embedded_model_names() {
            let m = Model::load(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(m.name, *name);
            assert!(!m.sources.is_empty(), "{name} cites no source");
        }
        for name in embedded_arch_model_names() {
            let m = Model::load(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(m.name, *name);
        }
        let h100 = Model::load("h100").unwrap();
        let over = Model::from_toml("x", "base = \"h100\"\n[blocks]\nwidth = 8\n[variants.tf32.align]\nextra_bits = 5").unwrap();
        assert_eq!(over.arithmetic(Format::F16).blocks.width, 8);
        assert_eq!(over.arithmetic(Format::F16).align.extra_bits, 3);
        assert_eq!(over.arithmetic(Format::Tf32).blocks.width, 4, "the base's tf32 variant still applies");
        assert_eq!(over.arithmetic(Format::Tf32).align.extra_bits, 5);
        assert!(Model::from_toml("x", "base = \"b200\"").unwrap_err().to_string().contains("b200"));
        assert_eq!(h100.arithmetic(Format::F16).blocks.width, 16);
        assert_eq!(h100.arithmetic(Format::Tf32).blocks.width, 4);
        assert_eq!(h100.arithmetic(Format::F64).products.round_to, Some(Format::F64));
    }

    #[test]
    fn bad_models_are_rejected_with_the_reason() {
        let base = Model::load("exact-rne").unwrap();
        let _ = base;
        let bad = [
            ("blocks = 3", "blocks"),
            ("[blocks]\nwidth = 1\nc = \"fused\"\nfrobnicate = 1", "frobnicate"),
            ("[variants.f17]\n", "f17"),
        ];
        for (src, needle) in bad {
            let e = Model::from_toml("bad", src).unwrap_err().to_string();
            assert!(e.contains(needle) || e.contains("missing"), "{src}: {e}");
        }
        let e = Model::load("no-such-model").unwrap_err().to_string();
        assert!(e.contains("exact-rne"), "{e}");
    }
}
