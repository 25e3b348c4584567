//! From a kernel configuration to the arithmetic around the instruction chain: where K is cut
//! into slices, how the slices' partial sums are combined, where C enters and how D is rounded.
//! The rules are data (a library model's `[schedule]` table), fitted to GPU recordings.

use super::config::{KernelConfig, Reduction};
use super::tree::{Combine, SumTree};
use super::scalars::{KernelKind, ScalarRule, ScalarRules};
use super::segment_k::SplitChoice;
use crate::format::Format;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// A library model's `[schedule]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRules {
    /// How the kernels apply α and β other than 1 (`[schedule.scalars]`; absent: declined).
    #[serde(default)]
    pub scalars: Option<ScalarRules>,
    /// A and B as the caller stores them (f32 for a TF32 GEMM).
    pub inputs: Format,
    /// B's format where it differs from A's (mixed FP8).
    #[serde(default)]
    pub b_inputs: Option<Format>,
    /// What the tensor cores read: `inputs` converted by `input_conversion` (tf32 for TF32).
    #[serde(default)]
    pub chain_inputs: Option<Format>,
    #[serde(default)]
    pub input_conversion: InputConversion,
    /// Format of the partial sums, the reduction and the epilogue (f32, or f64 for DGEMM).
    pub compute: Format,
    /// Format of C and D.
    pub output: Format,
    /// In which format a kernel without split-K adds C (β = 1): `compute` (the f32 sum plus C,
    /// rounded once into D) or `output` (the sum rounded into D's format first, then added to C
    /// in that format). A split-K reduction adds C in the compute format, and the bias
    /// epilogue adds the bias in the compute format (recorded f16/bf16 GEMMs).
    #[serde(default)]
    pub c_add: CAdd,
    /// The algorithms whose own epilogue follows `c_add`; every other kernel adds C in the
    /// compute format (empty: all of them follow it).
    #[serde(default)]
    pub c_add_algos: Vec<u32>,
    /// How an OUTPUT_TYPE reduction adds the partial sums, each rounded to D's format first:
    /// `compute` (in the compute format, rounded once at the end) or `output` (every addition
    /// rounded to D's format).
    #[serde(default)]
    pub output_type_sum: CAdd,
    /// In which format an OUTPUT_TYPE reduction adds the bias (F.linear): `output` rounds the
    /// sum into D's format first (recorded 16-bit GEMMs: 93-99% of elements with `compute`, all
    /// with `output`).
    #[serde(default)]
    pub output_type_bias: CAdd,
    /// The NaN D holds where its element is NaN: `all_ones` (what cuBLAS writes for f32, f16 and
    /// bf16 D, 7fffffff / 7fff, whatever NaN went in: scripts/torch-specials.py on the H100),
    /// `propagate` (the NaN the f64 arithmetic carries: an input's, quieted, or the invalid
    /// operation's fff8000000000000, as DGEMM writes it), `canonical` (7fc00000; the default,
    /// unmeasured).
    #[serde(default)]
    pub output_nan: crate::model::NanOutput,
    /// The algorithms whose epilogue keeps C's NaN where the sum is a NaN too; every other
    /// kernel keeps the sum's (only visible where D carries NaN payloads, DGEMM).
    #[serde(default)]
    pub c_nan_first: Vec<u32>,
    /// The algorithms whose unsplit chain starts from C (or the bias; -0 without either), so C
    /// and the first product share one rounding (`CAdd::Chain`).
    #[serde(default)]
    pub chain_addend: Vec<u32>,
    /// The algorithms whose epilogue keeps F.linear's bias's NaN where the sum is a NaN too
    /// (C's NaN follows `c_nan_first`).
    #[serde(default)]
    pub bias_nan_first: Vec<u32>,
    /// Promote the tensor cores' partial sum into a separate f32 accumulator every this many
    /// k (FP8 GEMMs without fast accumulation): each stretch is chained from +0 and added to
    /// the accumulator by one rounded f32 addition. None: one chain per slice.
    #[serde(default)]
    pub promote_every: Option<usize>,
    /// How each algorithm family cuts K into split-K slices.
    #[serde(default)]
    pub slices: Vec<SliceRule>,
    /// GEMV-like kernels (algorithms 10, 11, 13, 14 for a dimension of 1 or 2): per algorithm
    /// and customOption, how the lanes chain K and how their sums are added; found before
    /// `slices`, and kept apart so a model with a `base` can replace them alone.
    #[serde(default)]
    pub gemv: Vec<SliceRule>,
    /// Algorithms whose arithmetic is not modelled yet: emulating them is refused, not guessed.
    #[serde(default)]
    pub unmodelled: Vec<u32>,
    /// Algorithms recorded running unsplit (numSplitsK absent or 1) as one chain of the model's
    /// arithmetic over K with C added in the epilogue, their recorded GEMMs reproduced bit for
    /// bit. An unsplit kernel of any other family without a rule naming it is declined with its
    /// name: a family never recorded may compute anything.
    #[serde(default)]
    pub unsplit: Vec<u32>,
    /// Kernels whose instruction differs from the model's own (the first rule that matches).
    #[serde(default)]
    pub chains: Vec<ChainRule>,
    /// Kernels that choose their split-K at run time (`numSplitsK = -1`) and were seen to run
    /// unsplit on enough output tiles.
    #[serde(default)]
    pub runtime_split: Vec<RuntimeSplitRule>,
    /// The GPU and library version the model's kernel tables were learned on.
    #[serde(default)]
    pub gpu: Option<GpuInfo>,
}

/// Which GPU, library and framework a library model's kernel choices belong to: cuBLASLt's
/// heuristics pick other kernels on another GPU (its SM count, memory) or library version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuInfo {
    /// The short name models are named by (`h100`, `h200`: `h200:cublas.gemm...`).
    pub key: String,
    /// The name the driver reports (`torch.cuda.get_device_name()`, `nvidia-smi`).
    pub name: String,
    pub sm_count: u32,
    /// cuBLAS / cuBLASLt version (cublasLtGetVersion).
    pub cublas: String,
    #[serde(default)]
    pub driver: Option<String>,
    #[serde(default)]
    pub torch: Option<String>,
}

impl std::fmt::Display for GpuInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} SMs), cuBLAS {}", self.name, self.sm_count, self.cublas)?;
        if let Some(d) = &self.driver {
            write!(f, ", driver {d}")?;
        }
        if let Some(t) = &self.torch {
            write!(f, ", torch {t}")?;
        }
        Ok(())
    }
}

/// Kernels with a run-time split-K (segment-K): how many segments a shape runs is learned per
/// shape where measured; otherwise shapes with enough output tiles run unsplit.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSplitRule {
    pub algos: Vec<u32>,
    /// With at least this many output tiles (cuBLASLt's tile over its n×m problem) the kernel
    /// runs one chain over K; with fewer, and the shape not in `segments`, it is declined.
    /// Absent: no tile count makes it unsplit.
    #[serde(default = "no_tile_count")]
    pub unsplit_min_tiles: usize,
    /// With K at most this the kernel runs one chain over K, whatever its tiles (DGEMM
    /// algorithm 12 with customOption 1, which cuBLASLt picks only at K = 1).
    #[serde(default)]
    pub unsplit_max_k: Option<usize>,
    /// How C or the bias enters where the kernel runs unsplit (None: the model's `c_add`).
    #[serde(default)]
    pub addend: Option<CAdd>,
    /// K is cut into `k_tile`-deep tiles, T of them; S segments hold T div S tiles each, the
    /// last T mod S one more; each segment is one chain from +0.
    #[serde(default)]
    pub k_tile: Option<usize>,
    /// How the segments' partial sums are added (in the compute format).
    #[serde(default)]
    pub combine: Combine,
    /// Segment counts measured per shape (FPRev), "MxNxK:S" in PyTorch's m, n, k; S = 1: unsplit.
    #[serde(default)]
    pub segments: Vec<String>,
    /// The same, measured through F.linear (the weight handed over transposed); F.linear at a
    /// shape not listed here falls back to `segments`.
    #[serde(default)]
    pub linear_segments: Vec<String>,
    /// The kernel's own choice at a shape neither list holds (see [`SplitChoice`]); absent:
    /// such a shape is unsplit with `unsplit_min_tiles` tiles, else declined.
    #[serde(default)]
    pub choice: Option<SplitChoice>,
    /// More segments than this are declined: `combine` was measured up to this count only (the
    /// tree of more may be another; TF32 segment-K at 11 segments adds them in a chain from the
    /// last). Absent: any count.
    #[serde(default)]
    pub max_segments: Option<usize>,
}

fn no_tile_count() -> usize {
    usize::MAX
}

impl RuntimeSplitRule {
    /// The measured segment count of an m×n×k GEMM, if this rule learned it.
    pub fn segments_of(&self, m: usize, n: usize, k: usize, linear: bool) -> Option<usize> {
        let key = format!("{m}x{n}x{k}:");
        let find = |list: &[String]| list.iter().find_map(|s| s.strip_prefix(&key)).and_then(|s| s.parse().ok());
        linear.then(|| find(&self.linear_segments)).flatten().or_else(|| find(&self.segments))
    }

    /// The K ranges of `segments` segments over K (`k_tile` deep tiles, the later segments
    /// taking the remainder's extra tiles).
    pub fn segment_ranges(&self, k: usize, segments: usize) -> Vec<Range<usize>> {
        let kt = self.k_tile.unwrap_or(1).max(1);
        let tiles = k.div_ceil(kt);
        let (q, r) = (tiles / segments, tiles % segments);
        let mut start = 0;
        (0..segments)
            .map(|s| {
                let len = q + usize::from(s >= segments - r);
                let range = (start * kt).min(k)..((start + len) * kt).min(k);
                start += len;
                range
            })
            .collect()
    }
}

/// For the listed algorithms (and, where given, only configurations with or without a stage
/// depth): the instruction chain is the model's arithmetic with these knobs replaced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainRule {
    pub algos: Vec<u32>,
    /// true: only configurations that name stages; false: only those that name none.
    #[serde(default)]
    pub with_stages: Option<bool>,
    /// What the rule says, for reports.
    #[serde(default)]
    pub why: String,
    /// Another built-in model's arithmetic instead of this one's (e.g. the FMA chain of SIMT
    /// kernels that the library also runs on the TF32 path).
    #[serde(default)]
    pub model: Option<String>,
    /// Knobs replaced, as in a model file (`blocks = { width = 8 }`).
    #[serde(default)]
    pub knobs: toml::Table,
    /// The format this chain reads A and B in (no conversion from the stored inputs).
    #[serde(default)]
    pub chain_inputs: Option<Format>,
    /// Only with (true) or without (false) F.linear's bias; None: both.
    #[serde(default)]
    pub bias: Option<bool>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CAdd {
    #[default]
    Compute,
    Output,
    /// C (or the bias) seeds the chain: the first product is added to it by one FMA, so the
    /// two share one rounding (DGEMM algorithm 12 at K = 1). Only where K is not split.
    Chain,
}

/// How f32 inputs become the tensor cores' narrower format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputConversion {
    /// The low bits are ignored (the tensor cores read the container as it is).
    #[default]
    Truncate,
    /// Round to nearest, ties away from zero (`cvt.rna.tf32.f32`).
    Rna,
    /// Round to nearest, ties to even.
    Rne,
}

/// For the algorithms listed: slice length = ceil(K / splits) rounded up to `multiple`, or to
/// `unaligned_multiple` when K itself is not a multiple of `multiple`. Slice s covers
/// `s·len .. min((s+1)·len, K)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceRule {
    pub algos: Vec<u32>,
    pub multiple: usize,
    #[serde(default)]
    pub unaligned_multiple: Option<usize>,
    /// The kernel's k-loop takes the partial k-tile first (CUTLASS 2.x style): within a slice
    /// of length L the first tile holds L mod kt elements, so the instruction's blocks start
    /// after it. kt is the configuration's stage depth, or `k_tile` where it names none.
    #[serde(default)]
    pub residue_first: bool,
    #[serde(default)]
    pub k_tile: Option<usize>,
    /// K is dealt to the slices in tiles of this many, round robin (slice s chains tiles s,
    /// s + splits, s + 2·splits, ...) instead of cut into contiguous slices.
    #[serde(default)]
    pub dealt: Option<usize>,
    /// Deal K round robin in tiles of the configuration's stage depth (`stages=MATMUL_STAGES_32x3`:
    /// 32) instead of a fixed `dealt`.
    #[serde(default)]
    pub dealt_by_stage: bool,
    /// The rule holds only for these values of the configuration's `customOption` (absent in
    /// the log = 0); other options of the algorithm have no rule (declined).
    #[serde(default)]
    pub custom_options: Option<Vec<u32>>,
    /// How the slices' partial sums are added (in the compute format); FPRev probes measured
    /// the orders (`scripts/torch-fprev.py`).
    #[serde(default)]
    pub combine: Combine,
    /// GEMV-like kernels: each slice's K is spread over this many lanes (threads), each lane
    /// one chain, the lanes added by `lanes_combine`. With this set the rule also holds
    /// without split-K (one slice). None: one chain per slice.
    #[serde(default)]
    pub lanes: Option<usize>,
    /// k dealt to the lanes in blocks of this many, round robin (1: lane k mod lanes); 0:
    /// contiguous chunks of ceil(L / lanes).
    #[serde(default = "one")]
    pub lane_deal: usize,
    /// With `lane_deal` 0: chunks of at most this many k, dealt round robin once the slice holds
    /// more than lanes × this (gemvx with customOption 100: 16 lanes, chunks up to 64).
    #[serde(default)]
    pub lane_chunk_max: Option<usize>,
    /// Each lane keeps two accumulators for alternate full blocks of this many k of its slice
    /// (block 0, 2, … in one, 1, 3, … in the other) and a third for the remainder past the last
    /// full block; a lane's sum is (even + odd) + remainder (gemv2T, customOption 11: 512).
    #[serde(default)]
    pub lane_blocks: Option<usize>,
    /// Deal over the lanes of all slices at once (the dot kernel: lane (k / lane_deal) mod
    /// (splits · lanes), its slice = lane / lanes) instead of each contiguous slice dealing its
    /// own part of K.
    #[serde(default)]
    pub lanes_across_slices: bool,
    /// Each k of a slice is a lane of its own (one rounded product), so a slice has as many
    /// lanes as it holds k, added by `lanes_combine` (gemvx with 528 slices, customOption 73:
    /// slices of ceil(K / 528) k, a butterfly over them). Overrides `lanes` and `lane_deal`.
    #[serde(default)]
    pub lane_per_k: bool,
    #[serde(default)]
    pub lanes_combine: Combine,
    /// Only with (true) or without (false) split-K; None: both.
    #[serde(default)]
    pub split: Option<bool>,
    /// Only where D is a column (n = 1: true) or is not (false); None: both. The dot kernel
    /// reads the two orientations in different vector widths.
    #[serde(default)]
    pub column: Option<bool>,
    /// Only where D has at least this many columns (PyTorch's n); narrower GEMMs are declined
    /// (gemvNSP with customOption 10 runs another tree at n <= 16).
    #[serde(default)]
    pub n_min: Option<usize>,
    /// With `lanes_across_slices`: run only as many slices as K fills, min(splits,
    /// ceil(K / (lanes · lane_deal))) (the dot kernel's CTAs).
    #[serde(default)]
    pub slices_fill_k: bool,
    /// Serial (INPLACE) split-K: the bias (F.linear) is added after the last slice, not in
    /// the first slice's epilogue (SGEMM's `sgemm_largek`, algorithm 10).
    #[serde(default)]
    pub bias_last: bool,
    /// In which format this kernel's reduction adds the bias (F.linear), where it differs from
    /// the model's default for the reduction scheme: `output` rounds the sum into D's format
    /// first (split-K GEMV kernels with 16-bit D).
    #[serde(default)]
    pub bias_add: Option<CAdd>,
    /// Each chain of this rule (each lane of a GEMV-like kernel) restarts from +0 every this
    /// many of its k and adds the stretch to its running sum (gemmSN with customOption 1: 128).
    #[serde(default)]
    pub promote_every: Option<usize>,
    /// The rule holds as it is where the kernel decides a split at run time (`numSplitsK = -1`):
    /// FPRev measured the same tree with and without it (gemmSN, customOption 1).
    #[serde(default)]
    pub runtime_split_same: bool,
    /// Where K is not a multiple of `multiple`, the slices cover the largest multiple below K
    /// and the last K mod `multiple` k are a chain of their own, added after the slices
    /// (sgemm_largek, algorithm 10: recorded GEMMs at K = 127, 2047, 4097).
    #[serde(default)]
    pub remainder_last: bool,
    /// The rule holds only for these tiles (the log's `MATMUL_TILE_64x8` as "64x8"); None: any.
    #[serde(default)]
    pub tiles: Option<Vec<String>>,
    /// Only with (true) or without (false) F.linear's bias; None: both.
    #[serde(default)]
    pub bias: Option<bool>,
    /// Only with (true) or without (false) F.linear's transposed weight, with a bias or not:
    /// that layout runs another kernel under the same logged configuration (gemmSN, algorithm
    /// 11: FPRev through torch.mm and F.linear; a traced F.linear without a bias on an H200);
    /// None: both.
    #[serde(default)]
    pub linear: Option<bool>,
    /// Recordings show this kernel computes something the rules do not say yet: emulating it is
    /// refused with this reason instead of guessed.
    #[serde(default)]
    pub declined: Option<String>,
    /// The rule holds only up to this K (measured there; fresh GEMMs past it were not exact):
    /// a longer K falls to the next rule, or is declined.
    #[serde(default)]
    pub k_max: Option<usize>,
    /// The rule holds only from this K (measured from there; a rule inferred from probes is held
    /// to the K they covered): a shorter K falls to the next rule, or is declined.
    #[serde(default)]
    pub k_min: Option<usize>,
    /// The rule holds only where each split-K slice, ceil(K / splits), is at most this long
    /// (K itself without split-K): a longer slice falls to the next rule, or is declined.
    #[serde(default)]
    pub slice_k_max: Option<usize>,
}

fn one() -> usize {
    1
}

impl SliceRule {
    /// A GEMV-like kernel's rule: K spread over lanes (`lanes` or `lane_per_k`).
    fn is_lane_rule(&self) -> bool {
        self.lanes.is_some() || self.lane_per_k
    }

    /// How many of `splits` slices run at this K (fewer with `slices_fill_k` when K is short).
    fn slices_run(&self, k: usize, splits: usize) -> usize {
        let per = self.lanes.unwrap_or(1) * self.lane_deal.max(1);
        if self.slices_fill_k && self.lanes_across_slices {
            splits.min(k.div_ceil(per)).max(1)
        } else {
            splits
        }
    }
}

/// The chains of `lanes` lanes over `ks`: blocks of `deal` consecutive k dealt round robin, or
/// with `deal` 0 contiguous chunks of ceil(len / lanes), len the slice's nominal length
/// (ceil(K / splits): split-K's short last slice is chunked like the others, so its last lanes
/// hold less or nothing; FPRev, bf16 gemvx customOption 92 split 16 at K = 16385).
/// With `deal` 0 and `chunk_max`, chunks of min(chunk_max, ceil(len / lanes)) dealt round robin.
fn lane_chains(ks: Range<usize>, len: usize, lanes: usize, deal: usize, chunk_max: Option<usize>) -> Vec<Vec<Range<usize>>> {
    let mut chains = vec![vec![]; lanes];
    let step = match deal {
        0 => len.div_ceil(lanes).min(chunk_max.unwrap_or(usize::MAX)).max(1),
        d => d,
    };
    for (b, start) in ks.clone().step_by(step).enumerate() {
        chains[b % lanes].push(start..(start + step).min(ks.end));
    }
    chains
}

impl SliceRule {
    fn applies(&self, config: &KernelConfig, bias: bool, linear: bool, k: usize) -> bool {
        self.bias.is_none_or(|b| b == bias)
            && self.linear.is_none_or(|l| l == linear)
            && self.k_max.is_none_or(|x| k <= x)
            && self.k_min.is_none_or(|x| k >= x)
            && self.slice_k_max.is_none_or(|x| k.div_ceil(config.split_k.max(1) as usize) <= x)
            && self.algos.contains(&config.algo)
            && self.custom_options.as_ref().is_none_or(|o| o.contains(&config.custom_option()))
            && self.tiles.as_ref().is_none_or(|t| config.tile.as_deref().is_some_and(|c| t.iter().any(|x| c.trim_start_matches("MATMUL_TILE_") == x)))
    }
}

/// The schedule of one GEMM.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Plan {
    /// Each chain: the K ranges one chain of the instruction accumulates from zero, in order
    /// (one per split-K slice, or per lane of a GEMV-like kernel).
    pub slices: Vec<Vec<Range<usize>>>,
    /// The order the chains' sums are added in; None: in order.
    pub sum: Option<SumTree>,
    pub reduction: Reduction,
    /// Some(kt): each slice's k-loop takes its partial tile (length mod kt) first.
    pub residue_first: Option<usize>,
    /// Which chain arithmetic: 0 = the model's own, i = `chains[i - 1]`.
    pub chain: usize,
    /// How this kernel's own epilogue adds C when K is not split.
    pub c_add: CAdd,
    /// Serial split-K adds the bias after the last slice.
    pub bias_last: bool,
    /// How the bias is added where the rule says (None: the model's default).
    pub bias_add: Option<CAdd>,
    /// Each chain restarts from +0 every this many of its k (None: the model's `promote_every`).
    pub promote_every: Option<usize>,
    /// Where the sum and C are both NaN, D carries C's (else the sum's): `c_nan_first`.
    pub c_nan_first: bool,
    /// How the kernel applies α and β other than 1 (None: not measured for this model).
    pub scalars: Option<ScalarRule>,
}

/// Why a configuration has no schedule in the model.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error("the kernel decides its split at run time (numSplitsK = -1): not modelled yet ({0})")]
    RuntimeSplit(String),
    #[error("no slice rule for algorithm {algo} (with this customOption) in this model: its split-K is not modelled yet ({config})")]
    NoSliceRule { algo: u32, config: String },
    #[error("reduction scheme {0:?} is not modelled yet")]
    Reduction(Reduction),
    #[error("kernel family algo {algo} is not modelled yet ({config})")]
    Unmodelled { algo: u32, config: String },
    #[error("kernel family algo {algo} was never recorded in this model: its arithmetic is unknown ({config})")]
    UnknownFamily { algo: u32, config: String },
}

impl ScheduleRules {
    pub fn from_table(t: &toml::Table) -> Result<ScheduleRules, String> {
        let rules: ScheduleRules = toml::Value::Table(t.clone()).try_into().map_err(|e| format!("[schedule]: {e}"))?;
        rules.validate().map_err(|e| format!("[schedule]: {e}"))?;
        Ok(rules)
    }

    /// Refuse values no kernel has (a zero length, count or width, a rule naming no
    /// algorithm, an unreadable segment count) before they can reach a division.
    fn validate(&self) -> Result<(), String> {
        let positive = |what: String, v: Option<usize>| match v {
            Some(0) => Err(format!("{what} = 0: it must be at least 1")),
            _ => Ok(()),
        };
        positive("promote_every".into(), self.promote_every)?;
        if let Some(why) = self.scalars.as_ref().and_then(ScalarRules::validate) {
            return Err(why);
        }
        for (table, rules) in [("slices", &self.slices), ("gemv", &self.gemv)] {
            for (i, r) in rules.iter().enumerate() {
                let at = |key: &str| format!("[[schedule.{table}]] {} (algos {:?}): {key}", i + 1, r.algos);
                if r.algos.is_empty() {
                    return Err(format!("[[schedule.{table}]] {}: algos is empty", i + 1));
                }
                positive(at("multiple"), Some(r.multiple))?;
                positive(at("unaligned_multiple"), r.unaligned_multiple)?;
                positive(at("k_tile"), r.k_tile)?;
                positive(at("dealt"), r.dealt)?;
                positive(at("lanes"), r.lanes)?;
                positive(at("lane_chunk_max"), r.lane_chunk_max)?;
                positive(at("lane_blocks"), r.lane_blocks)?;
                positive(at("promote_every"), r.promote_every)?;
                positive(at("k_max"), r.k_max)?;
                positive(at("k_min"), r.k_min)?;
                positive(at("slice_k_max"), r.slice_k_max)?;
                positive(at("n_min"), r.n_min)?;
            }
        }
        for (i, r) in self.runtime_split.iter().enumerate() {
            let at = format!("[[schedule.runtime_split]] {} (algos {:?})", i + 1, r.algos);
            if r.algos.is_empty() {
                return Err(format!("{at}: algos is empty"));
            }
            positive(format!("{at}: k_tile"), r.k_tile)?;
            positive(format!("{at}: max_segments"), r.max_segments)?;
            if let Some(c) = &r.choice {
                c.check().map_err(|e| format!("{at}: {e}"))?;
            }
            for seg in r.segments.iter().chain(&r.linear_segments) {
                let ok = seg.split_once(':').and_then(|(shape, s)| {
                    let dims: Vec<usize> = shape.split('x').map(str::parse).collect::<Result<_, _>>().ok()?;
                    (dims.len() == 3 && dims.iter().all(|&d| d > 0) && s.parse::<usize>().ok()? > 0).then_some(())
                });
                if ok.is_none() {
                    return Err(format!("{at}: segments entry '{seg}' is not MxNxK:S with every number at least 1"));
                }
            }
        }
        for (i, c) in self.chains.iter().enumerate() {
            if c.algos.is_empty() {
                return Err(format!("[[schedule.chains]] {}: algos is empty", i + 1));
            }
        }
        Ok(())
    }

    /// B's stored format.
    pub fn b_inputs(&self) -> Format {
        self.b_inputs.unwrap_or(self.inputs)
    }

    /// The format the instruction chain reads for B.
    pub fn chain_b_format(&self) -> Format {
        match self.b_inputs {
            Some(b) => b,
            None => self.chain_format(),
        }
    }

    /// The format the instruction chain reads.
    pub fn chain_format(&self) -> Format {
        self.chain_inputs.unwrap_or(self.inputs)
    }

    /// The plan for an m×n×k GEMM (PyTorch's shape) run with `config`, without a bias.
    pub fn plan(&self, m: usize, n: usize, k: usize, config: &KernelConfig) -> Result<Plan, PlanError> {
        self.plan_with(m, n, k, config, false)
    }

    /// The plan for an m×n×k GEMM run with `config`, with F.linear's bias (`bias`) or without
    /// (a bias implies F.linear's transposed weight).
    pub fn plan_with(&self, m: usize, n: usize, k: usize, config: &KernelConfig, bias: bool) -> Result<Plan, PlanError> {
        self.plan_layout(m, n, k, config, bias, bias)
    }

    /// [`ScheduleRules::plan_with`] where the layout is known: `linear`, B is F.linear's
    /// transposed weight (with or without the bias).
    pub fn plan_layout(&self, m: usize, n: usize, k: usize, config: &KernelConfig, bias: bool, linear: bool) -> Result<Plan, PlanError> {
        let mut plan = self.kernel_plan(m, n, k, config, bias, linear)?;
        plan.c_nan_first = self.c_nan_first.contains(&config.algo) || (bias && self.bias_nan_first.contains(&config.algo));
        let kind = match (config.split_k > 1, plan.slices.len() > 1 && plan.reduction == Reduction::None) {
            (true, _) => KernelKind::Split,
            (false, true) => KernelKind::Lanes,
            (false, false) => KernelKind::Unsplit,
        };
        plan.scalars = self.scalars.as_ref().map(|r| r.rule(config.algo, kind));
        Ok(plan)
    }

    fn kernel_plan(&self, m: usize, n: usize, k: usize, config: &KernelConfig, bias: bool, linear: bool) -> Result<Plan, PlanError> {
        let split = config.split_k > 1;
        let rule = (self.gemv.iter().find(|r| r.applies(config, bias, linear, k) && r.split.is_none_or(|s| s == split) && r.column.is_none_or(|c| c == (n == 1)) && r.n_min.is_none_or(|x| n >= x)).map(|r| (r, true)))
            .or_else(|| self.slices.iter().find(|r| r.applies(config, bias, linear, k)).map(|r| (r, false)));
        let (rule, gemv) = (rule.map(|r| r.0), rule.is_some_and(|r| r.1));
        if let Some(why) = rule.and_then(|r| r.declined.as_ref()) {
            return Err(PlanError::Unmodelled { algo: config.algo, config: format!("{config}: {why}") });
        }
        if gemv && rule.is_some_and(|r| !r.is_lane_rule()) {
            return Err(PlanError::Unmodelled { algo: config.algo, config: format!("{config}: a [[schedule.gemv]] rule without lanes") });
        }
        // An algorithm listed as unmodelled is modelled where a rule names it (a lane rule, or a
        // slice rule measured for it).
        if self.unmodelled.contains(&config.algo) && rule.is_none() {
            return Err(PlanError::Unmodelled { algo: config.algo, config: config.to_string() });
        }
        let chain = self
            .chains
            .iter()
            .position(|c| c.algos.contains(&config.algo) && c.with_stages.is_none_or(|w| w == config.stages.is_some()) && c.bias.is_none_or(|b| b == bias))
            .map_or(0, |i| i + 1);
        let seeded = config.split_k == 1 && self.chain_addend.contains(&config.algo);
        let c_add = match () {
            _ if seeded => CAdd::Chain,
            _ if self.c_add_algos.is_empty() || self.c_add_algos.contains(&config.algo) => self.c_add,
            _ => CAdd::Compute,
        };
        let residue_first = rule.filter(|r| r.residue_first).and_then(|r| config.stage_k().or(r.k_tile));
        let bias_last = rule.is_some_and(|r| r.bias_last);
        let bias_add = if seeded { Some(CAdd::Chain) } else { rule.and_then(|r| r.bias_add) };
        let promote_every = rule.and_then(|r| r.promote_every);
        let whole = |reduction| Plan { slices: vec![vec![0..k]], sum: None, reduction, residue_first, chain, c_add, bias_last, bias_add, promote_every, c_nan_first: false, scalars: None };
        match config.split_k {
            1 => {
                return match rule.filter(|r| r.is_lane_rule()) {
                    Some(r) => Ok(Self::lanes_plan(r, vec![0..k], k, Reduction::None, residue_first, chain, c_add)),
                    None if rule.is_none() && !self.unsplit.contains(&config.algo) => Err(PlanError::UnknownFamily { algo: config.algo, config: config.to_string() }),
                    None => Ok(whole(Reduction::None)),
                }
            }
            -1 => {
                if let Some(r) = rule.filter(|r| r.is_lane_rule() && r.runtime_split_same) {
                    return Ok(Self::lanes_plan(r, vec![0..k], k, Reduction::None, residue_first, chain, c_add));
                }
                let Some(r) = self.runtime_split.iter().find(|r| r.algos.contains(&config.algo)) else {
                    return Err(PlanError::RuntimeSplit(config.to_string()));
                };
                let chosen = || r.choice.as_ref().and_then(|c| c.segments(config, m, n, k, r.k_tile.unwrap_or(1), linear));
                let segments = match r.segments_of(m, n, k, linear).or_else(chosen) {
                    Some(s) => s,
                    None if config.output_tiles(m, n).is_some_and(|t| t >= r.unsplit_min_tiles) => 1,
                    None if r.unsplit_max_k.is_some_and(|max| k <= max) => 1,
                    None => return Err(PlanError::RuntimeSplit(format!("{config}; segment count not learned for {m}x{n}x{k}"))),
                };
                if let Some(max) = r.max_segments.filter(|&max| segments > max) {
                    return Err(PlanError::RuntimeSplit(format!(
                        "{config}: {segments} segments at {m}x{n}x{k}; how more than {max} are added was not measured (the model's `max_segments`)"
                    )));
                }
                if segments <= 1 {
                    let plan = whole(Reduction::None);
                    return Ok(match r.addend {
                        Some(a) => Plan { c_add: a, bias_add: Some(a), ..plan },
                        None => plan,
                    });
                }
                let slices: Vec<Vec<Range<usize>>> = r.segment_ranges(k, segments).into_iter().map(|s| vec![s]).collect();
                let sum = Some(SumTree::over(0, slices.len(), r.combine));
                return Ok(Plan { slices, sum, reduction: Reduction::ComputeType, residue_first, chain, c_add, bias_last, bias_add, promote_every, c_nan_first: false, scalars: None });
            }
            _ => {}
        }
        if !matches!(config.reduction, Reduction::ComputeType | Reduction::OutputType | Reduction::Inplace) {
            return Err(PlanError::Reduction(config.reduction));
        }
        let rule = rule.ok_or_else(|| PlanError::NoSliceRule { algo: config.algo, config: config.to_string() })?;
        let multiple = match rule.unaligned_multiple {
            Some(u) if k % rule.multiple != 0 => u,
            _ => rule.multiple,
        };
        let splits = config.split_k as usize;
        let body = if rule.remainder_last { k - k % multiple } else { k };
        let len = body.div_ceil(splits).div_ceil(multiple) * multiple;
        let mut contiguous: Vec<Range<usize>> = (0..body).step_by(len.max(1)).map(|s| s..(s + len).min(body)).collect();
        if body < k {
            contiguous.push(body..k);
        }
        if rule.is_lane_rule() {
            if rule.lanes_across_slices {
                let used = rule.slices_run(k, splits);
                return Ok(Self::lanes_plan(rule, vec![0..k; used], k, config.reduction, residue_first, chain, c_add));
            }
            return Ok(Self::lanes_plan(rule, contiguous, k, config.reduction, residue_first, chain, c_add));
        }
        let dealt = if rule.dealt_by_stage { config.stage_k() } else { rule.dealt };
        // A combine other than in order names every slice, empty ones too (they add zeros).
        let present = if rule.combine == Combine::InOrder { |splits: usize, tiles: usize| splits.min(tiles) } else { |splits: usize, _| splits };
        let slices: Vec<Vec<Range<usize>>> = match dealt {
            Some(tile) => (0..present(splits, k.div_ceil(tile)))
                .map(|s| (s * tile..k).step_by(tile * splits).map(|t| t..(t + tile).min(k)).collect())
                .collect(),
            None => contiguous.into_iter().map(|r| vec![r]).collect(),
        };
        let sum = (rule.combine != Combine::InOrder).then(|| SumTree::over(0, slices.len(), rule.combine));
        Ok(Plan { slices, sum, reduction: config.reduction, residue_first, chain, c_add, bias_last, bias_add, promote_every, c_nan_first: false, scalars: None })
    }

    /// A GEMV-like kernel's plan: each slice's lanes (or, across slices, every lane of `k`)
    /// are chains; lanes add by `lanes_combine`, slices by `combine`.
    fn lanes_plan(rule: &SliceRule, slices: Vec<Range<usize>>, k: usize, reduction: Reduction, residue_first: Option<usize>, chain: usize, c_add: CAdd) -> Plan {
        let lanes = rule.lanes.unwrap_or(1);
        if let (Some(block), false) = (rule.lane_blocks, rule.lanes_across_slices) {
            return Self::blocked_lanes_plan(rule, lanes, block, &slices, reduction, residue_first, chain, c_add);
        }
        // Each slice's lanes, one chain each.
        let by_slice: Vec<Vec<Vec<Range<usize>>>> = if rule.lanes_across_slices {
            lane_chains(0..k, k, lanes * slices.len(), rule.lane_deal, None).chunks(lanes).map(<[_]>::to_vec).collect()
        } else if rule.lane_per_k {
            slices.iter().map(|s| s.clone().map(|k| vec![k..k + 1]).collect()).collect()
        } else {
            let nominal = slices.iter().map(ExactSizeIterator::len).max().unwrap_or(0);
            slices.iter().map(|s| lane_chains(s.clone(), nominal, lanes, rule.lane_deal, rule.lane_chunk_max)).collect()
        };
        let mut per_slice = Vec::with_capacity(by_slice.len());
        let mut chains = vec![];
        for lanes_of in by_slice {
            per_slice.push(SumTree::over(chains.len(), lanes_of.len(), rule.lanes_combine));
            chains.extend(lanes_of);
        }
        let sum = SumTree::combine(per_slice, rule.combine);
        Plan { slices: chains, sum: Some(sum), reduction, residue_first, chain, c_add, bias_last: rule.bias_last, bias_add: rule.bias_add, promote_every: rule.promote_every, c_nan_first: false, scalars: None }
    }

    /// Lanes with `lane_blocks` accumulators: per slice and lane the chains over its even full
    /// blocks, its odd full blocks and the remainder, added (even + odd) + remainder.
    #[allow(clippy::too_many_arguments)]
    fn blocked_lanes_plan(rule: &SliceRule, lanes: usize, block: usize, slices: &[Range<usize>], reduction: Reduction, residue_first: Option<usize>, chain: usize, c_add: CAdd) -> Plan {
        let mut chains: Vec<Vec<Range<usize>>> = vec![];
        let mut per_slice = vec![];
        for s in slices {
            let full = s.len() / block;
            let part = |blocks: &mut dyn Iterator<Item = Range<usize>>| {
                let mut by_lane: Vec<Vec<Range<usize>>> = vec![vec![]; lanes];
                for r in blocks {
                    for (l, c) in lane_chains(r.clone(), r.len(), lanes, rule.lane_deal, None).into_iter().enumerate() {
                        by_lane[l].extend(c);
                    }
                }
                by_lane
            };
            let at = |b: usize| s.start + b * block..s.start + (b + 1) * block;
            let even = part(&mut (0..full).step_by(2).map(at));
            let odd = part(&mut (1..full).step_by(2).map(at));
            let rest = part(&mut std::iter::once(s.start + full * block..s.end).filter(|r| !r.is_empty()));
            let mut lane_sums = vec![];
            for l in 0..lanes {
                let mut parts = vec![];
                for c in [&even[l], &odd[l], &rest[l]] {
                    if !c.is_empty() {
                        parts.push(SumTree::leaf(chains.len()));
                        chains.push(c.clone());
                    }
                }
                if !parts.is_empty() {
                    lane_sums.push(SumTree::combine(parts, Combine::InOrder));
                }
            }
            if !lane_sums.is_empty() {
                per_slice.push(SumTree::combine(lane_sums, rule.lanes_combine));
            }
        }
        Plan { slices: chains, sum: Some(SumTree::combine(per_slice, rule.combine)), reduction, residue_first, chain, c_add, bias_last: rule.bias_last, bias_add: rule.bias_add, promote_every: rule.promote_every, c_nan_first: false, scalars: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> ScheduleRules {
        let t: toml::Table = r#"
            inputs = "f16"
            compute = "f32"
            output = "f32"
            [[slices]]
            algos = [66]
            multiple = 64
            [[slices]]
            algos = [21, 23]
            multiple = 32
            unaligned_multiple = 8
        "#
        .parse()
        .unwrap();
        ScheduleRules::from_table(&t).unwrap()
    }

    fn config(algo: u32, split: i32) -> KernelConfig {
        KernelConfig::from_log(&format!("algoId={algo} reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK={split}")).unwrap()
    }

    /// gemv2T's lanes (customOption 11) at K = 1025: lane 0 chains k = 0, 16, …, 496, then
    /// 512, …, 1008, then 1024 alone; the three meet as (even + odd) + remainder.
    #[test]
    fn blocked_lanes_keep_two_accumulators_and_the_remainder() {
        let t: toml::Table = r#"
            inputs = "f16"
            compute = "f32"
            output = "f32"
            [[gemv]]
            algos = [13]
            lanes = 16
            lane_deal = 1
            lane_blocks = 512
            multiple = 1
        "#
        .parse()
        .unwrap();
        let p = ScheduleRules::from_table(&t).unwrap().plan(4096, 1, 1025, &config(13, 1)).unwrap();
        assert_eq!(p.slices.len(), 16 * 2 + 1);
        let ks = |c: &Vec<Range<usize>>| c.iter().flat_map(|r| r.clone()).collect::<Vec<_>>();
        assert_eq!(ks(&p.slices[0]), (0..512).step_by(16).collect::<Vec<_>>());
        assert_eq!(ks(&p.slices[1]), (512..1024).step_by(16).collect::<Vec<_>>());
        assert_eq!(ks(&p.slices[2]), vec![1024]);
        let tree = p.sum.unwrap().show();
        assert!(tree.starts_with(&format!("{}0+1)+2)+(3+4))+(5+6))", "(".repeat(17))), "{tree:.80}");
    }

    /// Slice starts measured on the H100 with chain profiles (scripts/torch-probe.py).
    #[test]
    fn slices_match_the_measured_profiles() {
        let r = rules();
        let starts = |k, c: &KernelConfig| r.plan(64, 64, k, c).unwrap().slices.iter().map(|s| s[0].start).collect::<Vec<_>>();
        assert_eq!(starts(4096, &config(66, 3)), vec![0, 1408, 2816]);
        assert_eq!(starts(16384, &config(66, 12))[1], 1408);
        assert_eq!(starts(16384, &config(66, 12)).len(), 12);
        assert_eq!(starts(3000, &config(66, 2)), vec![0, 1536]);
        assert_eq!(starts(5000, &config(23, 33))[1], 152);
        assert_eq!(starts(5000, &config(23, 33)).len(), 33);
        assert_eq!(starts(2048, &config(21, 24))[1], 96);
        assert_eq!(r.plan(64, 64, 1024, &config(66, 1)).unwrap().slices, vec![vec![0..1024]]);
    }

    /// Algorithm 43's run-time split on the H100: unsplit with 64 or more output tiles.
    #[test]
    fn runtime_split_runs_unsplit_only_on_enough_tiles() {
        let mut r = rules();
        r.runtime_split.push(RuntimeSplitRule { algos: vec![43], unsplit_min_tiles: 64, unsplit_max_k: None, addend: None, k_tile: None, combine: Combine::InOrder, segments: vec![], linear_segments: vec![], choice: None, max_segments: None });
        let c = KernelConfig::from_log("algoId=43 tile=MATMUL_TILE_128x64 numSplitsK=-1 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE").unwrap();
        // 512x1000x1024: ceil(1000/128) * ceil(512/64) = 64 tiles; 3072x128: 1 * 48.
        assert_eq!(r.plan(512, 1000, 1024, &c).unwrap().slices, vec![vec![0..1024]]);
        assert!(matches!(r.plan(3072, 128, 1536, &c), Err(PlanError::RuntimeSplit(_))));
        assert!(matches!(r.plan(512, 1000, 1024, &config(43, -1)), Err(PlanError::RuntimeSplit(_))), "no tile, no tiles to count");
    }

    /// Segment-K as FPRev measured it: 384x1000x12288 in 5 segments of 76, 77, 77, 77, 77 k-tiles
    /// added p0 + ((p1 + p2) + (p3 + p4)); K = 3000 ends in a partial tile; a learned S = 1 runs
    /// unsplit even with few tiles.
    #[test]
    fn segment_k_cuts_and_adds_as_measured() {
        let mut r = rules();
        let segments = vec!["384x1000x12288:5".into(), "1536x192x3000:2".into(), "1000x384x1024:1".into()];
        r.runtime_split.push(RuntimeSplitRule { algos: vec![43], unsplit_min_tiles: 65, unsplit_max_k: None, addend: None, k_tile: Some(32), combine: Combine::PairsFromEnd, segments, linear_segments: vec![], choice: None, max_segments: None });
        let c = KernelConfig::from_log("algoId=43 tile=MATMUL_TILE_128x128 numSplitsK=-1 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE").unwrap();
        let p = r.plan(384, 1000, 12288, &c).unwrap();
        let starts: Vec<usize> = p.slices.iter().map(|s| s[0].start / 32).collect();
        assert_eq!(starts, [0, 76, 153, 230, 307]);
        assert_eq!(p.slices[4][0].end, 12288);
        assert_eq!(p.sum.unwrap().show(), "(0+((1+2)+(3+4)))");
        assert_eq!(r.plan(1536, 192, 3000, &c).unwrap().slices, vec![vec![0..1504], vec![1504..3000]]);
        assert_eq!(r.plan(1000, 384, 1024, &c).unwrap().slices, vec![vec![0..1024]]);
        let not_learned = r.plan(1000, 384, 1000, &c).unwrap_err().to_string();
        assert!(not_learned.contains("segment count not learned for 1000x384x1000"), "{not_learned}");
        r.runtime_split[0].max_segments = Some(4);
        let too_many = r.plan(384, 1000, 12288, &c).unwrap_err().to_string();
        assert!(too_many.contains("5 segments at 384x1000x12288"), "{too_many}");
        assert_eq!(r.plan(1536, 192, 3000, &c).unwrap().slices.len(), 2);
    }

    /// DGEMM algorithms 35/36 (recorded split-K GEMMs): K dealt in tiles of the stage depth,
    /// only for the customOptions the recordings fit.
    #[test]
    fn deals_by_stage_depth_for_listed_custom_options() {
        let mut r = rules();
        r.slices.push(toml::from_str("algos = [35]\nmultiple = 1\ndealt_by_stage = true\ncustom_options = [0, 2]").unwrap());
        let cfg = |stages: &str, option: &str| KernelConfig::from_log(&format!("algoId=35 tile=MATMUL_TILE_64x32 stages=MATMUL_STAGES_{stages} reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=3{option}")).unwrap();
        let p = r.plan(384, 384, 1000, &cfg("32x3", "")).unwrap();
        assert_eq!(p.slices.len(), 3);
        assert_eq!(p.slices[0][..2], [0..32, 96..128]);
        assert_eq!(p.slices[1][0], 32..64);
        assert_eq!(*p.slices[0].last().unwrap(), 960..992);
        assert_eq!(*p.slices[1].last().unwrap(), 992..1000, "the partial last tile goes to the slice whose turn it is");
        assert_eq!(r.plan(384, 384, 1000, &cfg("16x3", " customOption=2")).unwrap().slices[0][..2], [0..16, 48..64]);
        assert!(matches!(r.plan(384, 384, 1000, &cfg("32x3", " customOption=1")), Err(PlanError::NoSliceRule { algo: 35, .. })));
    }

    /// GEMV-like kernels (FPRev on the H100): 32 lanes, k to lane k mod 32, an xor butterfly;
    /// with split-K the same inside each contiguous slice; the dot kernel deals over every
    /// slice's lanes at once.
    #[test]
    fn gemv_lanes_chain_k_and_add_by_their_tree() {
        let mut r = rules();
        r.unmodelled = vec![13, 14];
        r.gemv.push(toml::from_str("algos = [13]\ncustom_options = [75]\nlanes = 32\nlane_deal = 1\nlanes_combine = \"butterfly\"\nmultiple = 1").unwrap());
        r.gemv.push(toml::from_str("algos = [14]\nlanes = 4\nlane_deal = 1\nlanes_across_slices = true\nlanes_combine = \"butterfly\"\ncombine = \"groups4\"\nmultiple = 1").unwrap());
        let gemv = KernelConfig::from_log("algoId=13 customOption=75").unwrap();
        let p = r.plan(1, 128, 100, &gemv).unwrap();
        assert_eq!(p.slices.len(), 32);
        assert_eq!(p.slices[1], vec![1..2, 33..34, 65..66, 97..98]);
        assert_eq!(p.slices[31], vec![31..32, 63..64, 95..96]);
        let tree = p.sum.as_ref().unwrap().show();
        assert_eq!(tree, "(((((0+16)+(8+24))+((4+20)+(12+28)))+(((2+18)+(10+26))+((6+22)+(14+30))))+((((1+17)+(9+25))+((5+21)+(13+29)))+(((3+19)+(11+27))+((7+23)+(15+31)))))");
        let split = KernelConfig::from_log("algoId=13 customOption=75 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=2").unwrap();
        let p = r.plan(1, 128, 100, &split).unwrap();
        assert_eq!((p.slices.len(), p.slices[32][0].clone()), (64, 50..51), "each slice of 50 deals its own k");
        let dot = KernelConfig::from_log("algoId=14 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=8").unwrap();
        let p = r.plan(1, 17, 64, &dot).unwrap();
        assert_eq!((p.slices.len(), p.slices[5].clone()), (32, vec![5..6, 37..38]), "lane k mod 32 over all 8 slices");
        assert!(p.sum.as_ref().unwrap().show().starts_with("((((((0+2)+(1+3))+((16+18)+(17+19)))+"));
        assert!(matches!(r.plan(1, 128, 100, &KernelConfig::from_log("algoId=13 customOption=7").unwrap()), Err(PlanError::Unmodelled { algo: 13, .. })));
    }

    /// gemvx with 528 slices (customOption 73, FPRev 1x1x600 ... 1x1x4096 on the H100): slices of
    /// ceil(K / 528) k, each k a lane of its own, a butterfly over the slice, the slices in order.
    #[test]
    fn a_lane_per_k_makes_each_slice_a_butterfly_over_its_k() {
        let mut r = rules();
        r.unmodelled = vec![13];
        r.gemv.push(toml::from_str("algos = [13]\ncustom_options = [73]\nsplit = true\nlane_per_k = true\nlanes_combine = \"butterfly\"\nmultiple = 1").unwrap());
        let cfg = KernelConfig::from_log("algoId=13 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=528 customOption=73").unwrap();
        let p = r.plan(1, 1, 4096, &cfg).unwrap();
        assert_eq!(p.slices.len(), 4096, "one chain per k");
        assert!(p.slices.iter().enumerate().all(|(k, c)| *c == vec![k..k + 1]));
        let tree = p.sum.as_ref().unwrap().show();
        let first = "0+4)+(2+6))+((1+5)+(3+7)))+(((8+12)+(10+14))+((9+13)+(11+15))))+(((16+20)";
        assert!(tree.trim_start_matches('(').starts_with(first), "{}", &tree[..600]);
        // K = 1200: slices of 3 (400 of the 528), a butterfly over 3 lanes: (0+2)+1.
        let tree = r.plan(1, 1, 1200, &cfg).unwrap().sum.unwrap().show();
        assert!(tree.trim_start_matches('(').starts_with("0+2)+1)+((3+5)+4))+((6+8)+7))"), "{}", &tree[..440]);
        // Up to K = 528 every slice is one k: the products in k order.
        assert!(r.plan(1, 1, 100, &cfg).unwrap().sum.unwrap().show().trim_start_matches('(').starts_with("0+1)+2)+3)+4)"));
    }

    /// Split-K GEMV lanes of contiguous chunks: every slice is chunked by the nominal slice
    /// length ceil(K / splits), the short last one too (bf16 gemvx customOption 92, split 16 at
    /// K = 16385: 33-k chunks, the last slice's 1,010 k leave lane 30 with 20 and lane 31 none).
    #[test]
    fn split_lanes_chunk_the_short_last_slice_like_the_others() {
        let mut r = rules();
        r.unmodelled = vec![13];
        r.gemv.push(toml::from_str("algos = [13]\ncustom_options = [92]\nlanes = 32\nlane_deal = 0\nlanes_combine = \"butterfly\"\nmultiple = 1").unwrap());
        let cfg = KernelConfig::from_log("algoId=13 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=16 customOption=92").unwrap();
        let p = r.plan(1, 63, 16385, &cfg).unwrap();
        assert_eq!(p.slices.len(), 16 * 32);
        assert_eq!((p.slices[0].clone(), p.slices[31].clone()), (vec![0..33], vec![1023..1025]));
        let last = 15 * 32;
        assert_eq!((p.slices[last].clone(), p.slices[last + 29].clone()), (vec![15375..15408], vec![16332..16365]));
        assert_eq!((p.slices[last + 30].clone(), p.slices[last + 31].clone()), (vec![16365..16385], vec![]));
    }

    /// sgemm_largek (algorithm 10) on the H100: tile 64x8 chains the last K mod 8 k on their own
    /// after the slices, tile 32x32 rounds its slices up over them; the bias comes last.
    #[test]
    fn serial_split_k_remainder_and_bias_last() {
        let mut r = rules();
        r.slices.push(toml::from_str("algos = [10]\ntiles = [\"64x8\"]\nmultiple = 8\nbias_last = true\nremainder_last = true").unwrap());
        r.slices.push(toml::from_str("algos = [10]\nmultiple = 8\nbias_last = true").unwrap());
        let cfg = |tile: &str| KernelConfig::from_log(&format!("algoId=10 tile=MATMUL_TILE_{tile} reductionScheme=REDUCTION_SCHEME_INPLACE numSplitsK=8")).unwrap();
        let p = r.plan(8, 4096, 4097, &cfg("64x8")).unwrap();
        assert_eq!(p.slices.len(), 9);
        assert_eq!((p.slices[1][0].clone(), p.slices[8][0].clone()), (512..1024, 4096..4097));
        assert!(p.bias_last);
        let p = r.plan(63, 65, 127, &KernelConfig::from_log("algoId=10 tile=MATMUL_TILE_32x32 reductionScheme=REDUCTION_SCHEME_INPLACE numSplitsK=5").unwrap()).unwrap();
        assert_eq!(p.slices.iter().map(|s| s[0].clone()).collect::<Vec<_>>(), vec![0..32, 32..64, 64..96, 96..127]);
    }

    /// gemmSN (algorithm 11): customOption 1 keeps its tree under a run-time split; F.linear's
    /// bias selects another rule than torch.mm's under the same configuration; a declined rule
    /// refuses with its reason.
    #[test]
    fn gemm_sn_rules_by_runtime_split_bias_and_declines() {
        let mut r = rules();
        r.unmodelled = vec![11];
        r.gemv.push(toml::from_str("algos = [11]\ncustom_options = [1]\nlanes = 4\nlane_deal = 0\npromote_every = 128\nruntime_split_same = true\nmultiple = 1").unwrap());
        r.gemv.push(toml::from_str("algos = [11]\ncustom_options = [0]\nbias = true\nlanes = 16\nlane_deal = 1\nmultiple = 1").unwrap());
        r.gemv.push(toml::from_str("algos = [11]\ncustom_options = [0]\nlanes = 2\nlane_deal = 0\nmultiple = 1").unwrap());
        r.gemv.push(toml::from_str("algos = [14]\nbias = true\nmultiple = 1\ndeclined = \"not measured\"").unwrap());
        let co1 = KernelConfig::from_log("algoId=11 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=-1 customOption=1").unwrap();
        let p = r.plan(16, 4096, 1025, &co1).unwrap();
        assert_eq!((p.slices.len(), p.slices[1].clone(), p.promote_every), (4, vec![257..514], Some(128)));
        let co0 = KernelConfig::from_log("algoId=11").unwrap();
        assert_eq!(r.plan_with(8, 4096, 6144, &co0, true).unwrap().slices.len(), 16);
        assert_eq!(r.plan_with(8, 4096, 6144, &co0, false).unwrap().slices.len(), 2);
        let dot = KernelConfig::from_log("algoId=14 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=8").unwrap();
        assert!(matches!(r.plan_with(1, 64, 8192, &dot, true), Err(PlanError::Unmodelled { algo: 14, config }) if config.contains("not measured")));
    }

    #[test]
    fn says_what_it_does_not_model() {
        let r = rules();
        assert!(matches!(r.plan(64, 64, 4096, &config(43, -1)), Err(PlanError::RuntimeSplit(_))));
        assert!(matches!(r.plan(64, 64, 4096, &config(20, 4)), Err(PlanError::NoSliceRule { algo: 20, .. })));
    }

    /// Zero lengths, counts and widths from a user's model file are refused on load, with the
    /// rule and the key named, instead of reaching a division or `step_by(0)`.
    #[test]
    fn zero_values_are_refused_on_load() {
        let load = |extra: &str| {
            let t: toml::Table = format!("inputs = \"f16\"\ncompute = \"f32\"\noutput = \"f32\"\n{extra}").parse().unwrap();
            ScheduleRules::from_table(&t)
        };
        assert!(load("[[slices]]\nalgos = [66]\nmultiple = 64").is_ok());
        for (extra, key) in [
            ("[[slices]]\nalgos = [66]\nmultiple = 0", "multiple = 0"),
            ("[[slices]]\nalgos = [66]\nmultiple = 8\ndealt = 0", "dealt = 0"),
            ("[[gemv]]\nalgos = [13]\nmultiple = 1\nlanes = 0", "lanes = 0"),
            ("[[gemv]]\nalgos = [13]\nmultiple = 1\nlanes = 16\nlane_blocks = 0", "lane_blocks = 0"),
            ("[[slices]]\nalgos = []\nmultiple = 8", "algos is empty"),
            ("promote_every = 0", "promote_every = 0"),
            ("[[runtime_split]]\nalgos = [43]\nunsplit_min_tiles = 1\nk_tile = 0", "k_tile = 0"),
            ("[[runtime_split]]\nalgos = [43]\nunsplit_min_tiles = 1\nsegments = [\"1x2x3:0\"]", "1x2x3:0"),
            ("[[runtime_split]]\nalgos = [43]\nunsplit_min_tiles = 1\nsegments = [\"12:3\"]", "12:3"),
        ] {
            let e = load(extra).unwrap_err();
            assert!(e.contains(key), "{extra}: {e}");
        }
    }

    /// An unsplit kernel of a family no rule names and `unsplit` does not list is declined with
    /// its algorithm, not run as a default chain.
    #[test]
    fn unknown_families_are_declined_by_name() {
        let r = rules();
        let e = r.plan(64, 64, 256, &config(99, 1)).unwrap_err();
        assert!(matches!(e, PlanError::UnknownFamily { algo: 99, .. }), "{e}");
        assert!(e.to_string().contains("algo 99"), "{e}");
        let mut listed = rules();
        listed.unsplit.push(99);
        assert_eq!(listed.plan(64, 64, 256, &config(99, 1)).unwrap().slices, vec![vec![0..256]]);
    }
}
