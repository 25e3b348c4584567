//! FPRev measurements against a library model's schedule. `scripts/torch-fprev.py` measures, on
//! the GPU, how many terms lie under the lowest common ancestor of two k positions in the
//! summation tree of a GEMM (count(q, p): one large term at q, its negation at p, tiny terms
//! elsewhere). A model's [`Plan`] implies the same numbers: chains are added term after term
//! (two terms of one chain meet after the later one), and chains meet where the plan's sum tree
//! joins them. Comparing the two tells whether a schedule rule is the tree the kernel runs,
//! pair by pair, before any rounding hides it.
//!
//! Chains are taken as sequential (FMA) chains: right for the SIMT kernels (GEMV-like, SGEMM,
//! DGEMM), whose tree these probes measure; a tensor-core chain adds fused blocks, whose terms
//! meet at their block's node, which this comparison does not model.

use super::schedule::{Plan, PlanError, ScheduleRules};
use super::KernelConfig;
use serde::Deserialize;
use std::collections::HashMap;

/// One probe of an FPRev file (the fields this comparison reads).
#[derive(Debug, Deserialize)]
pub struct Probe {
    /// The script's path name: f64, f32, tf32, f16.f32, bf16.f32, f16 or bf16; `.linear` after
    /// f64, f32, tf32 or bf16: measured through F.linear with a zero bias (the bias epilogue's
    /// kernels), `.linear_nobias`: through F.linear without a bias.
    pub path: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// The configuration cuBLASLt logged for this shape (log form).
    pub config: Option<String>,
    pub anchors: Vec<usize>,
    /// Probed positions where not every k was probed.
    #[serde(default)]
    pub probes: Option<Vec<usize>>,
    /// count(q, p) per anchor q and probed p; negative: no measurement (q = p, not an integer,
    /// not finite). A count below 2 or above K is no tree's (two leaves' smallest subtree holds
    /// 2 to K of them): a failed measurement, skipped like a negative one (f16 inputs at K =
    /// 32768 leave such rows where M no longer absorbs the count).
    #[serde(default)]
    pub counts: Option<Vec<Vec<i64>>>,
    #[serde(default)]
    pub skipped: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    info: Info,
    probes: Vec<Probe>,
}

/// Where a file's probes ran (the fields this comparison reads).
#[derive(Debug, Default, Deserialize)]
struct Info {
    #[serde(default)]
    gpu: String,
}

/// The probes of an FPRev output file's text, with the name of the GPU they ran on (empty
/// where the file does not say).
pub fn parse_with_gpu(text: &[u8]) -> Result<(String, Vec<Probe>), serde_json::Error> {
    let f = serde_json::from_slice::<File>(text)?;
    Ok((f.info.gpu, f.probes))
}

/// The library path a probe's script path name stands for (`PATH.linear`: through F.linear;
/// `PATH.addmm`: through torch.addmm with β = 1, the same schedule rules as torch.mm's).
pub fn library_path(script_path: &str) -> Option<&'static str> {
    Some(match script_path.trim_end_matches(".linear_nobias").trim_end_matches(".linear").trim_end_matches(".addmm") {
        "f64" => "cublas.gemm.f64.f64.f64.f64",
        "f32" => "cublas.gemm.f32.f32.f32.f32",
        "tf32" => "cublas.gemm.f32.tf32.tf32.f32",
        "f16.f32" => "cublas.gemm.f32.f16.f16.f32",
        "bf16.f32" => "cublas.gemm.f32.bf16.bf16.f32",
        "f16" => "cublas.gemm.f16.f16.f16.f16",
        "bf16" => "cublas.gemm.bf16.bf16.bf16.bf16",
        _ => return None,
    })
}

/// Whether a probe went through F.linear (`.linear`: with a zero bias; `.linear_nobias`:
/// without one) rather than torch.mm.
pub fn through_linear(script_path: &str) -> bool {
    script_path.ends_with(".linear") || script_path.ends_with(".linear_nobias")
}

/// Whether a probe went through F.linear's bias epilogue (a zero bias).
pub fn through_bias(script_path: &str) -> bool {
    script_path.ends_with(".linear")
}

/// The plan `rules` give the probe's GEMM under `config`, laid out as the probe called it
/// (F.linear's bias epilogue and transposed weight as its path says).
pub fn plan(rules: &ScheduleRules, probe: &Probe, config: &KernelConfig) -> Result<Plan, PlanError> {
    rules.plan_layout(probe.m, probe.n, probe.k, config, through_bias(&probe.path), through_linear(&probe.path))
}

/// A pair whose measured count the plan does not give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Miss {
    pub q: usize,
    pub p: usize,
    pub measured: i64,
    pub model: usize,
}

/// How far a plan's tree agrees with a probe.
#[derive(Clone, Debug, Default)]
pub struct Agreement {
    /// Measured pairs (q ≠ p, a clean count).
    pub pairs: usize,
    pub agree: usize,
    /// The first few misses, in anchor order.
    pub misses: Vec<Miss>,
}

/// The counts a plan implies: count(q, p) for k positions q ≠ p.
pub struct Counts<'a> {
    /// Chain and position within it, per k.
    at: Vec<(usize, usize)>,
    weights: Vec<usize>,
    /// A chain restarts from +0 every this many terms (its stretches added in order).
    promote: Option<usize>,
    /// A chain adds this many products in one fused step (its instruction's block width).
    width: usize,
    /// A slice's partial first k-tile: where the chain's blocks start after it.
    residue_first: Option<usize>,
    sum: Option<&'a super::tree::SumTree>,
    /// The weights of chains 0 ..= c, for each c.
    through: Vec<usize>,
    /// The summation tree's `lca_weights_from` a chain, for each chain asked about.
    meet: HashMap<usize, Vec<usize>>,
}

impl<'a> Counts<'a> {
    /// `width`: products per fused step of the plan's chain (`LibraryModel::fused_width`).
    pub fn new(plan: &'a Plan, k: usize, width: usize) -> Counts<'a> {
        let mut at = vec![(usize::MAX, 0); k];
        let mut weights = Vec::with_capacity(plan.slices.len());
        for (c, chain) in plan.slices.iter().enumerate() {
            let mut pos = 0;
            for r in chain {
                for kk in r.clone() {
                    at[kk] = (c, pos);
                    pos += 1;
                }
            }
            weights.push(pos);
        }
        let through = weights.iter().scan(0, |s, &w| {
            *s += w;
            Some(*s)
        }).collect();
        Counts { at, weights, promote: plan.promote_every, width: width.max(1), residue_first: plan.residue_first, sum: plan.sum.as_ref(), through, meet: HashMap::new() }
    }

    /// How many terms of a chain of `len` the fused step that adds its term `t` holds: every
    /// term up to the end of t's block. The blocks are `width` wide; a partial first k-tile
    /// (`residue_first`) is padded with zeros to a whole tile, so the blocks after it start
    /// on the tile's boundaries, as the emulator runs it.
    fn through_block_of(&self, t: usize, len: usize) -> usize {
        let w = self.width;
        let (head, pad) = match self.residue_first {
            Some(kt) if len % kt != 0 && len > kt => (len % kt, kt - len % kt),
            _ => (len, 0),
        };
        let padded = if t < head { t } else { t + pad };
        let end = (padded / w + 1) * w;
        // Terms whose padded position lies before the block's end.
        end.min(head) + end.saturating_sub(pad).min(len).saturating_sub(head)
    }

    /// count(q, p) under the plan.
    pub fn count(&mut self, q: usize, p: usize) -> usize {
        let ((cq, iq), (cp, ip)) = (self.at[q], self.at[p]);
        if cq == cp {
            let (lo, hi) = (iq.min(ip), iq.max(ip));
            return match self.promote {
                // One stretch: its own chain from +0; two: every term up to the later one's
                // stretch end (the stretches are added to the running sum in order).
                Some(s) if lo / s == hi / s => hi - hi / s * s + 1,
                Some(s) => ((hi / s + 1) * s).min(self.weights[cq]),
                None => self.through_block_of(hi, self.weights[cq]),
            };
        }
        match self.sum {
            Some(tree) => {
                let weights = &self.weights;
                self.meet.entry(cq).or_insert_with(|| tree.lca_weights_from(cq, weights))[cp]
            }
            // In order: chains 0 ..= max(cq, cp) are under the node that adds the later one.
            None => self.through[cq.max(cp)],
        }
    }
}

/// Compares a probe's counts with `plan` (for the probe's m, n, k); keeps up to `keep` misses.
/// `width`: products per fused step of the plan's chain (`LibraryModel::fused_width`).
pub fn compare(plan: &Plan, probe: &Probe, keep: usize, width: usize) -> Agreement {
    let mut model = Counts::new(plan, probe.k, width);
    let mut out = Agreement::default();
    for (q, p, measured) in clean_pairs(probe) {
        out.pairs += 1;
        let c = model.count(q, p);
        if c as i64 == measured {
            out.agree += 1;
        } else if out.misses.len() < keep {
            out.misses.push(Miss { q, p, measured, model: c });
        }
    }
    out
}

/// Whether `plan` gives every clean measured pair of the probe (stops at the first miss).
pub fn agrees_everywhere(plan: &Plan, probe: &Probe, width: usize) -> bool {
    if probe.counts.is_none() {
        return false;
    }
    let mut model = Counts::new(plan, probe.k, width);
    clean_pairs(probe).all(|(q, p, measured)| model.count(q, p) as i64 == measured)
}

/// The probe's measured pairs a tree can be checked on, as (anchor, probed k, count): both k
/// inside K and distinct, the count a size the tree can have (2 to K; smaller or larger values
/// mark a measurement that failed).
fn clean_pairs(probe: &Probe) -> impl Iterator<Item = (usize, usize, i64)> + '_ {
    let k = probe.k;
    let probed = move |i: usize| probe.probes.as_ref().map_or(Some(i), |p| p.get(i).copied());
    probe.anchors.iter().zip(probe.counts.iter().flatten()).flat_map(move |(&q, row)| {
        row.iter().enumerate().filter_map(move |(i, &measured)| {
            let p = probed(i)?;
            (measured >= 2 && measured <= k as i64 && q != p && q < k && p < k).then_some((q, p, measured))
        })
    })
}

/// The probe's logged configuration, parsed.
pub fn config(probe: &Probe) -> Option<Result<KernelConfig, super::config::ConfigError>> {
    probe.config.as_deref().map(KernelConfig::from_log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::tree::{Combine, SumTree};
    use crate::library::Reduction;

    fn plan(slices: Vec<Vec<std::ops::Range<usize>>>, sum: Option<SumTree>) -> Plan {
        Plan { slices, sum, reduction: Reduction::None, residue_first: None, chain: 0, c_add: Default::default(), bias_last: false, bias_add: None, promote_every: None, c_nan_first: false, scalars: None }
    }

    #[test]
    fn counts_follow_chains_and_the_tree() {
        // Two lanes dealing k alternately (k even in chain 0, odd in chain 1), then added.
        let p = plan(vec![vec![0..1, 2..3, 4..5], vec![1..2, 3..4, 5..6]], None);
        let mut c = Counts::new(&p, 6, 1);
        assert_eq!(c.count(0, 4), 3); // chain 0's third term
        assert_eq!(c.count(1, 3), 2);
        assert_eq!(c.count(0, 1), 6); // the final addition
        // Four single-term chains added by a butterfly: 0 and 2 meet first.
        let p = plan((0..4).map(|i| vec![i..i + 1]).collect(), Some(SumTree::over(0, 4, Combine::Butterfly)));
        let mut c = Counts::new(&p, 4, 1);
        assert_eq!((c.count(0, 2), c.count(0, 1), c.count(3, 1)), (2, 4, 2));
        // One chain of 10 restarting every 4 (gemmSN's 128-k stretches, FPRev on the H100).
        let mut p = plan(vec![vec![0..10]], None);
        p.promote_every = Some(4);
        let mut c = Counts::new(&p, 10, 1);
        assert_eq!((c.count(0, 3), c.count(5, 6), c.count(1, 5), c.count(0, 9), c.count(4, 8)), (4, 3, 8, 10, 10));
    }

    /// A tensor-core chain adds 8 products per fused step (TF32 algorithm 63 under F.linear,
    /// FPRev at 32x17x6144: k 0 with any of k 1..7 counts 8, with k 8 counts 16); a partial
    /// first k-tile shifts the blocks after it to the tile's boundaries.
    #[test]
    fn fused_blocks_count_through_the_end_of_their_block() {
        let p = plan(vec![vec![0..20]], None);
        let mut c = Counts::new(&p, 20, 8);
        assert_eq!((c.count(0, 1), c.count(0, 7), c.count(0, 8), c.count(9, 15), c.count(3, 19)), (8, 8, 16, 16, 20));
        // 20 k in tiles of 16: the first tile holds k 0..4 and 12 zeros (blocks: k 0..4 with
        // 4 zeros, then zeros only), the second tile k 4..20 in the blocks 4..12 and 12..20.
        let mut p = plan(vec![vec![0..20]], None);
        p.residue_first = Some(16);
        let mut c = Counts::new(&p, 20, 8);
        assert_eq!((c.count(0, 3), c.count(0, 4), c.count(4, 11), c.count(4, 12), c.count(13, 19)), (4, 12, 12, 20, 20));
        // Width 1 is the old one-k-at-a-time chain, with or without the residue.
        let mut c = Counts::new(&p, 20, 1);
        assert_eq!((c.count(0, 3), c.count(0, 4), c.count(2, 19)), (4, 5, 20));
    }

    #[test]
    fn script_paths_name_library_paths_and_calls() {
        assert_eq!(library_path("f16.addmm"), Some("cublas.gemm.f16.f16.f16.f16"));
        assert_eq!(library_path("tf32.linear"), Some("cublas.gemm.f32.tf32.tf32.f32"));
        assert_eq!(library_path("f8"), None);
        assert!(through_linear("f64.linear") && !through_linear("f16.addmm") && !through_linear("f16"));
        assert!(through_linear("tf32.linear_nobias") && !through_bias("tf32.linear_nobias") && through_bias("tf32.linear"));
        assert_eq!(library_path("f32.linear_nobias"), Some("cublas.gemm.f32.f32.f32.f32"));
    }

    #[test]
    fn compare_counts_agreement_and_misses() {
        let p = plan(vec![vec![0..4]], None);
        let probe = Probe {
            path: "f32".into(),
            m: 1,
            n: 1,
            k: 4,
            config: None,
            anchors: vec![0, 3, 1],
            probes: None,
            // count(0, p) = p + 1 in one chain; the second row has one wrong count and one -1
            // (q = p); the third only counts no tree has (0, 1, above K): failed measurements.
            counts: Some(vec![vec![-1, 2, 3, 4], vec![4, 4, 3, -1], vec![0, -1, 1, 5]]),
            skipped: None,
            error: None,
        };
        let a = compare(&p, &probe, 8, 1);
        assert_eq!((a.pairs, a.agree), (6, 5));
        assert_eq!(a.misses, vec![Miss { q: 3, p: 2, measured: 3, model: 4 }]);
    }
}
