//! A GEMV-like kernel's lane rule inferred from FPRev measurements: every rule of the form a
//! `[[schedule.gemv]]` entry can take (lanes, how K is dealt to them, how their sums are added,
//! a chain restarting every so many k or alternating two accumulators by blocks; for split-K
//! kernels also how K is cut into slices and how the slices are added) is tried against the summation tree the GPU showed, pair by pair, and
//! the rules that give that tree at every measured pair are kept. Probes of one kernel at
//! several shapes narrow the set down; what is left is the rule to write into the model, or an
//! ambiguity the next probe (another K) resolves.
//!
//! The tree fixes the order of the additions, not how each is rounded: an inferred rule is a
//! hypothesis until GEMMs recorded with that kernel replay bit for bit under it.

use super::fprev::{self, Probe};
use super::schedule::{Plan, PlanError, ScheduleRules, SliceRule};
use super::KernelConfig;

/// One candidate rule: what a model file would say, and the rule itself.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub toml: String,
    pub rule: SliceRule,
}

/// Lane counts tried (one thread to a full block of 256; gemvNSP runs 12 to 32 by n).
const LANES: [usize; 18] = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 128, 256];
/// Blocks of k dealt round robin to the lanes (0: contiguous chunks, one per lane).
const DEALS: [usize; 10] = [1, 0, 2, 4, 8, 16, 32, 64, 128, 256];
/// With contiguous chunks: the largest chunk before the chunks are dealt round robin.
const CHUNK_MAX: [Option<usize>; 6] = [None, Some(16), Some(32), Some(64), Some(128), Some(256)];
/// How the lanes' sums are added.
const LANE_COMBINES: [&str; 4] = ["in_order", "butterfly", "pairs_butterfly", "groups4"];
/// A lane's chain restarting from +0 every this many of its k.
const PROMOTE: [Option<usize>; 8] = [None, Some(8), Some(16), Some(32), Some(64), Some(128), Some(256), Some(512)];
/// A lane's two accumulators for alternate blocks of this many k of the slice (gemv2T).
const LANE_BLOCKS: [usize; 3] = [128, 256, 512];
/// Split-K: slice lengths rounded up to this multiple, and how the slices are added.
const MULTIPLES: [usize; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
const SLICE_COMBINES: [&str; 5] = ["in_order", "butterfly", "paired_halves", "groups4", "pairs_from_end"];

/// Every candidate rule for `algo` with `customOption` `option`, for split-K configurations
/// (`split`) or unsplit ones, simplest first: no restarts before restarts, lanes added in order
/// before other trees, fewer lanes before more, k dealt one at a time before other deals.
/// Split-K kernels are tried with fewer lane variants (no restarts, lanes added in order or by
/// the butterfly, chunks of at most 64), as each is tried with every slicing.
pub fn candidates(algo: u32, option: u32, split: bool) -> Vec<Candidate> {
    let mut lane_parts: Vec<String> = vec![];
    let promotes: &[Option<usize>] = if split { &PROMOTE[..1] } else { &PROMOTE };
    let lane_combines: &[&str] = if split { &LANE_COMBINES[..2] } else { &LANE_COMBINES };
    let chunk_max: &[Option<usize>] = if split { &[None, Some(64)] } else { &CHUNK_MAX };
    for &promote in promotes {
        let promote = promote.map_or(String::new(), |p| format!("promote_every = {p}\n"));
        for &combine in lane_combines {
            for lanes in LANES {
                if lanes == 1 && combine != "in_order" {
                    continue;
                }
                for deal in DEALS {
                    if lanes == 1 && deal != 1 {
                        continue;
                    }
                    for &chunk in chunk_max {
                        if chunk.is_some() && deal != 0 {
                            continue;
                        }
                        let chunk = chunk.map_or(String::new(), |c| format!("lane_chunk_max = {c}\n"));
                        lane_parts.push(format!("lanes = {lanes}\nlane_deal = {deal}\n{chunk}lanes_combine = \"{combine}\"\n{promote}"));
                    }
                }
            }
        }
    }
    if !split {
        for blocks in LANE_BLOCKS {
            for lanes in LANES.iter().filter(|&&l| l > 1) {
                lane_parts.push(format!("lanes = {lanes}\nlane_deal = 1\nlane_blocks = {blocks}\n"));
            }
        }
    }
    let head = format!("algos = [{algo}]\ncustom_options = [{option}]\nsplit = {split}\n");
    let mut out = vec![];
    let mut push = |text: String| {
        let rule: SliceRule = toml::from_str(&text).expect("a candidate is a valid rule");
        out.push(Candidate { toml: text, rule });
    };
    if !split {
        for lanes in &lane_parts {
            push(format!("{head}{lanes}multiple = 1\n"));
        }
        return out;
    }
    for multiple in MULTIPLES {
        for combine in SLICE_COMBINES {
            for across in [false, true] {
                let across = if across { "lanes_across_slices = true\n" } else { "" };
                for lanes in &lane_parts {
                    push(format!("{head}{lanes}{across}multiple = {multiple}\ncombine = \"{combine}\"\n"));
                }
            }
            // Each k a lane of its own, added by the butterfly (gemvx with many slices).
            push(format!("{head}lane_per_k = true\nlanes_combine = \"butterfly\"\nmultiple = {multiple}\ncombine = \"{combine}\"\n"));
        }
    }
    out
}

/// The plan of the probe's GEMM under `rules` with `candidate` as its only lane rule.
fn plan_under(rules: &mut ScheduleRules, candidate: &SliceRule, probe: &Probe, config: &KernelConfig) -> Result<Plan, PlanError> {
    only_rule(rules, candidate);
    fprev::plan(rules, probe, config)
}

/// `rules` with `candidate` as their only GEMV rule.
fn only_rule(rules: &mut ScheduleRules, candidate: &SliceRule) {
    rules.gemv.clear();
    rules.gemv.push(candidate.clone());
}

/// The candidates (their indices) under which the probe's measured tree is the plan's at every
/// clean pair. `width`: products per fused step of a plan's chain (1 for the SIMT chains of
/// GEMV-like kernels; `LibraryModel::fused_width`).
pub fn consistent(rules: &ScheduleRules, probe: &Probe, config: &KernelConfig, candidates: &[Candidate], only: Option<&[usize]>, width: &dyn Fn(&Plan) -> usize) -> Vec<usize> {
    let mut rules = rules.clone();
    let all: Vec<usize> = (0..candidates.len()).collect();
    only.unwrap_or(&all)
        .iter()
        .copied()
        .filter(|&i| match plan_under(&mut rules, &candidates[i].rule, probe, config) {
            Ok(plan) => fprev::agrees_everywhere(&plan, probe, width(&plan)),
            Err(_) => false,
        })
        .collect()
}

/// `plan` without a restart interval no chain reaches (it changes nothing there).
fn without_idle_restarts(mut plan: Plan) -> Plan {
    let longest = plan.slices.iter().map(|c| c.iter().map(|r| r.len()).sum::<usize>()).max().unwrap_or(0);
    if plan.promote_every.is_some_and(|every| every >= longest) {
        plan.promote_every = None;
    }
    plan
}

/// Whether the candidates give one plan at every K of `ks` for an m×n GEMM of `config` (F.linear's
/// bias and transposed weight as given): where they do, the probes' ambiguity does not matter
/// for those K.
pub fn same_plans(rules: &ScheduleRules, candidates: &[&SliceRule], (m, n): (usize, usize), ks: impl Iterator<Item = usize>, config: &KernelConfig, bias: bool, linear: bool) -> bool {
    let mut rules = rules.clone();
    let mut plan = |c: &SliceRule, k: usize| {
        only_rule(&mut rules, c);
        rules.plan_layout(m, n, k, config, bias, linear).ok().map(without_idle_restarts)
    };
    ks.into_iter().all(|k| {
        let first = plan(candidates[0], k);
        candidates[1..].iter().all(|c| plan(c, k) == first)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_parse_and_start_simple() {
        let unsplit = candidates(13, 92, false);
        assert!(unsplit[0].toml.contains("lanes = 1\n") && !unsplit[0].toml.contains("promote_every"));
        assert!(unsplit.iter().any(|c| c.rule.lanes == Some(32) && c.rule.lane_deal == 0));
        let split = candidates(13, 56, true);
        assert!(split.len() > unsplit.len() && split.iter().any(|c| c.rule.lane_per_k));
    }
}
