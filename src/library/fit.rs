//! Learning a GPU's kernel choices from its trace: for one path and one PyTorch call, shapes with
//! the configuration cuBLASLt logged, made into a [`Predictor`] (a decision tree over the shape)
//! and a table of the traced shapes the tree does not get right.
//!
//! What the tree must get right is the arithmetic, not the kernel's name: a configuration is
//! reduced to the fields the model's schedule rules read for it ([`numeric_config`]: algorithm,
//! split-K, reduction scheme, customOption, and the tile or stages only where a rule looks at
//! them), and a prediction is right at a shape when its [`Plan`] there is the traced kernel's.
//!
//! The traced shapes are dealt by a hash of the shape: 15% test, untouched by learning; their
//! results are what [`FitStats`] reports as held out. The rest is dealt anew for each of a few
//! trees: 70% of all grow it, 15% calibrate it (a leaf whose own learned shapes disagree
//! declines, as does one that gets a calibration shape wrong unless at least
//! [`RIGHT_PER_WRONG`](super::calibrate::RIGHT_PER_WRONG) confirmed it per wrong one). The call
//! kind's answer is the trees' where they agree.

use super::calibrate::too_often_contradicted;
use super::config::{KernelConfig, Reduction};
use super::gemm::{linear_takes_epilogue, takes_weight_transposed};
use super::op::TorchOp;
use super::predict::{leaf_of, prune, walk, Feature, Node, Walk};
use super::schedule::{CAdd, Plan, PlanError, ScheduleRules};
use super::table::ConfigTable;
use rayon::prelude::*;
use std::collections::HashMap;

/// One traced GEMM.
#[derive(Clone, Debug)]
pub struct Traced {
    pub shape: (usize, usize, usize),
    pub config: KernelConfig,
}

/// The schedule a call of kind `op` at `shape` runs under `config`: F.linear's bias reaches
/// the bias epilogue only where PyTorch uses it ([`linear_takes_epilogue`]). With α = β = 1,
/// as the traced calls are, and without what cannot change D for this call ([`numeric_plan`]),
/// so that two kernels computing the same bits have equal plans.
pub fn plan_of(rules: &ScheduleRules, op: TorchOp, (m, n, k): (usize, usize, usize), config: &KernelConfig) -> Result<Plan, PlanError> {
    let bias = op == TorchOp::LinearBias && linear_takes_epilogue(n, k);
    let plan = rules.plan_layout(m, n, k, config, bias, takes_weight_transposed(op, n, k))?;
    let c = op == TorchOp::Addmm || (op == TorchOp::LinearBias && !bias);
    Ok(numeric_plan(Plan { scalars: None, ..plan }, c, bias))
}

/// `plan` with the fields the emulator does not read for a GEMM with C (`c`), with the bias
/// epilogue (`bias`), or with neither, set to their defaults:
/// - without C, the epilogue's C rule and NaN order matter only where the chain starts from -0
///   (`CAdd::Chain`, K not split); without a bias, nothing of the bias rules does;
/// - with C, the C rule matters only where K is not split (a split-K reduction adds C in f32);
/// - with the bias epilogue, `c_add` is never read, and `bias_last` only by the in-place reduction;
/// - a partial first k-tile changes nothing where every chain's length is a whole number of
///   k-tiles or at most one.
pub fn numeric_plan(mut plan: Plan, c: bool, bias: bool) -> Plan {
    let unsplit = plan.slices.len() == 1;
    if !c {
        plan.c_add = if bias || !unsplit || plan.c_add != CAdd::Chain { CAdd::default() } else { CAdd::Chain };
    } else if !unsplit {
        plan.c_add = CAdd::default();
    }
    if !c && !bias {
        plan.c_nan_first = false;
    }
    if !bias {
        plan.bias_add = None;
        plan.bias_last = false;
    } else if plan.reduction != Reduction::Inplace {
        plan.bias_last = false;
    }
    if let Some(kt) = plan.residue_first {
        let len = |chain: &Vec<std::ops::Range<usize>>| chain.iter().map(|r| r.len()).sum::<usize>();
        if plan.slices.iter().all(|s| len(s) % kt == 0 || len(s) <= kt) {
            plan.residue_first = None;
        }
    }
    plan
}

/// `config` without what no schedule rule of `rules` reads for it: two kernels with the same
/// numeric configuration compute the same bits.
pub fn numeric_config(rules: &ScheduleRules, config: &KernelConfig) -> KernelConfig {
    let algo = config.algo;
    let slice_rules = rules.slices.iter().chain(&rules.gemv).filter(|r| r.algos.contains(&algo));
    let (mut keep_tile, mut keep_stages, mut keep_option) = (config.split_k == -1, false, false);
    for r in slice_rules {
        keep_tile |= r.tiles.is_some();
        keep_stages |= r.residue_first || r.dealt_by_stage;
        keep_option |= r.custom_options.is_some();
    }
    keep_stages |= rules.chains.iter().any(|c| c.algos.contains(&algo) && c.with_stages.is_some());
    let mut other = std::collections::BTreeMap::new();
    if let Some(c) = config.other.get("customOption").filter(|_| keep_option) {
        other.insert("customOption".to_string(), c.clone());
    }
    // A run-time split's segment count depends on the cluster shape (how many blocks fit).
    if let Some(c) = config.other.get("clusterShape").filter(|_| config.split_k == -1) {
        other.insert("clusterShape".to_string(), c.clone());
    }
    KernelConfig {
        algo,
        tile: if keep_tile { config.tile.clone() } else { None },
        stages: if keep_stages { config.stages.clone() } else { None },
        split_k: config.split_k,
        reduction: config.reduction,
        other,
    }
}

/// Held-out results of one call kind's tree (the test part of the trace).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FitStats {
    pub learned: usize,
    pub held_out: usize,
    pub right: usize,
    pub declined: usize,
    pub wrong: usize,
    /// Held-out shapes whose traced kernel the model does not run (declined whatever is predicted).
    pub unmodelled: usize,
    pub leaves: usize,
    pub declining_leaves: usize,
}

/// A fitted call kind: its tree's nodes (configuration ids into `configs`), the traced shapes it
/// does not get right (for the table), and its held-out results.
pub struct Fitted {
    /// The trees, each a list of nodes.
    pub nodes: Vec<Vec<Node>>,
    pub configs: Vec<KernelConfig>,
    pub exceptions: Vec<((usize, usize, usize), KernelConfig)>,
    pub stats: FitStats,
}

/// A hash of a shape under a seed.
fn shape_hash(seed: u64, (m, n, k): (usize, usize, usize)) -> u64 {
    super::libgen::splitmix64(seed ^ super::libgen::splitmix64(((m as u64) << 42) ^ ((n as u64) << 21) ^ k as u64))
}

/// Whether a shape is in the test part (15%), which no tree learns from.
fn tested(seed: u64, shape: (usize, usize, usize)) -> bool {
    shape_hash(seed, shape) % 100 >= 85
}

/// A plan's fingerprint. A fit only asks whether two plans are equal, and the plan of a GEMV
/// lane kernel at a long K holds thousands of K ranges: each learning shape keeps 128 bits of
/// hash instead (two SipHash digests; for the few thousand distinct plans of a fit a collision
/// is out of reach), so a fit holds many times the shapes in the same memory.
type PlanKey = u128;

fn plan_key(plan: Result<Plan, PlanError>) -> Option<PlanKey> {
    use std::hash::{Hash, Hasher};
    let plan = plan.ok()?;
    let digest = |salt: u8| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        salt.hash(&mut h);
        plan.hash(&mut h);
        h.finish() as u128
    };
    Some(digest(0) << 64 | digest(1))
}

/// Whether a shape outside the test part calibrates tree `tree` (a sixth of them, dealt anew per
/// tree) rather than growing it.
fn calibrates(seed: u64, tree: usize, shape: (usize, usize, usize)) -> bool {
    shape_hash(super::libgen::splitmix64(seed.wrapping_add(1 + tree as u64)), shape) % 100 >= 82
}

const MAX_DEPTH: usize = 60;
/// A leaf answers only where at least this many learned shapes reached it.
const MIN_SUPPORT: usize = 4;
/// A leaf answers only where at least this many calibration shapes confirmed it.
const MIN_CONFIRMED: usize = 6;

/// Fit one call kind of one path: `trees` trees, each grown and calibrated on its own deal of
/// the shapes outside the test part; a shape is answered where all trees give one configuration.
pub fn fit(rules: &ScheduleRules, op: TorchOp, traced: &[Traced], seed: u64, trees: usize) -> Fitted {
    // Each sample's true plan, and its label: the numeric configuration where that gives the
    // same plan at every traced shape of the configuration, else the configuration as logged.
    let plans: Vec<Option<PlanKey>> = {
        traced.par_iter().map(|t| plan_key(plan_of(rules, op, t.shape, &t.config))).collect()
    };
    let mut numeric_ok: HashMap<&KernelConfig, bool> = HashMap::new();
    for (t, p) in traced.iter().zip(&plans) {
        let n = numeric_config(rules, &t.config);
        let same = plan_key(plan_of(rules, op, t.shape, &n)) == *p;
        *numeric_ok.entry(&t.config).or_insert(true) &= same;
    }
    let mut configs: Vec<KernelConfig> = vec![];
    let mut label_of: HashMap<KernelConfig, usize> = HashMap::new();
    let labels: Vec<usize> = traced
        .iter()
        .map(|t| {
            let c = if numeric_ok[&t.config] { numeric_config(rules, &t.config) } else { t.config.clone() };
            *label_of.entry(c.clone()).or_insert_with(|| {
                configs.push(c);
                configs.len() - 1
            })
        })
        .collect();
    let labels = canonical_labels(rules, op, traced, &plans, &labels, &configs);
    let right_at = |i: usize, label: usize| plans[i].is_some() && plans[i] == plan_key(plan_of(rules, op, traced[i].shape, &configs[label]));
    let test: Vec<bool> = traced.iter().map(|t| tested(seed, t.shape)).collect();
    let grower = Grower::new(traced, &labels, configs.len());
    let grown: Vec<(Vec<Node>, Vec<LeafEvidence>)> = (0..trees.max(1))
        .into_par_iter()
        .map(|j| {
            let calib: Vec<bool> = traced.iter().map(|t| calibrates(seed, j, t.shape)).collect();
            let grow: Vec<usize> = (0..traced.len()).filter(|&i| !test[i] && !calib[i]).collect();
            let mut nodes = vec![];
            let mut leaf_members: Vec<(usize, Vec<usize>)> = vec![];
            grower.grow_tree(grow, &mut nodes, &mut leaf_members);
            let evidence = leaf_evidence(&nodes, leaf_members, (0..traced.len()).filter(|&i| !test[i] && calib[i]), traced, &plans, &right_at);
            (nodes, evidence)
        })
        .collect();
    let mut forest: Vec<Vec<Node>> = grown.iter().map(|(n, e)| decide(n, e, &labels)).collect();
    // Test, and the held-out counts each leaf keeps.
    let mut stats = FitStats { learned: traced.len(), ..FitStats::default() };
    let mut held: Vec<HashMap<usize, (usize, usize)>> = vec![HashMap::new(); forest.len()];
    let answer = |forest: &[Vec<Node>], shape| match walk(forest, shape) {
        Some(Walk::Agree { config, .. }) => Some(config),
        _ => None,
    };
    for i in (0..traced.len()).filter(|&i| test[i]) {
        stats.held_out += 1;
        for (tree, h) in forest.iter().zip(&mut held) {
            let leaf = leaf_of(tree, traced[i].shape);
            let h = h.entry(leaf).or_default();
            h.1 += 1;
            if matches!(tree[leaf], Node::Leaf { config, .. } if right_at(i, config)) {
                h.0 += 1;
            }
        }
        match (answer(&forest, traced[i].shape), plans[i].is_some()) {
            (_, false) => stats.unmodelled += 1,
            (Some(config), true) if right_at(i, config) => stats.right += 1,
            (Some(_), true) => stats.wrong += 1,
            (None, true) => stats.declined += 1,
        }
    }
    for (tree, h) in forest.iter_mut().zip(held) {
        for (leaf, (ok, all)) in h {
            if let Node::Leaf { held, .. } = &mut tree[leaf] {
                *held = (ok, all);
            }
        }
        for n in tree.iter() {
            match n {
                Node::Leaf { .. } => stats.leaves += 1,
                Node::Decline { .. } => {
                    stats.leaves += 1;
                    stats.declining_leaves += 1;
                }
                Node::Split { .. } => {}
            }
        }
    }
    // The traced shapes the forest does not get right keep their traced kernel in the table.
    let exceptions = (0..traced.len())
        .filter(|&i| plans[i].is_none() || answer(&forest, traced[i].shape).is_none_or(|c| !right_at(i, c)))
        .map(|i| (traced[i].shape, traced[i].config.clone()))
        .collect();
    // Subtrees that only decline become one decline (the held-out counts above are the grown
    // trees'), and only the configurations a leaf answers with are kept.
    let mut nodes: Vec<Vec<Node>> = forest.iter().map(|t| prune(t)).collect();
    let mut kept: Vec<KernelConfig> = vec![];
    let mut new_id: HashMap<usize, usize> = HashMap::new();
    for n in nodes.iter_mut().flatten() {
        if let Node::Leaf { config, .. } = n {
            *config = *new_id.entry(*config).or_insert_with(|| {
                kept.push(configs[*config].clone());
                kept.len() - 1
            });
        }
    }
    Fitted { nodes, configs: kept, exceptions, stats }
}

/// How many more frequent labels a shape's label is checked against by [`canonical_labels`].
const CANONICAL_CANDIDATES: usize = 64;

/// Each shape's label made canonical: the most frequent label (of those with its split-K and
/// reduction, among the [`CANONICAL_CANDIDATES`] most frequent) whose plan at that shape is the
/// shape's own. Kernels that differ in tile or stages often compute the same bits at a shape;
/// labelled alike, the trees split where the arithmetic changes rather than where cuBLASLt's
/// choice of an equivalent kernel does.
fn canonical_labels(rules: &ScheduleRules, op: TorchOp, traced: &[Traced], plans: &[Option<PlanKey>], labels: &[usize], configs: &[KernelConfig]) -> Vec<usize> {
    let mut freq = vec![0usize; configs.len()];
    for &l in labels {
        freq[l] += 1;
    }
    let mut by_freq: Vec<usize> = (0..configs.len()).collect();
    by_freq.sort_unstable_by_key(|&l| (std::cmp::Reverse(freq[l]), l));
    let rank: Vec<usize> = {
        let mut r = vec![0; configs.len()];
        for (i, &l) in by_freq.iter().enumerate() {
            r[l] = i;
        }
        r
    };
    (0..traced.len())
        .into_par_iter()
        .map(|i| {
            let own = labels[i];
            let Some(truth) = plans[i] else { return own };
            let alike = |c: &KernelConfig| c.split_k == configs[own].split_k && c.reduction == configs[own].reduction;
            by_freq[..rank[own].min(CANONICAL_CANDIDATES)]
                .iter()
                .copied()
                .find(|&c| alike(&configs[c]) && plan_key(plan_of(rules, op, traced[i].shape, &configs[c])) == Some(truth))
                .unwrap_or(own)
        })
        .collect()
}

/// What the learning and calibration shapes say of one leaf of a grown tree.
struct LeafEvidence {
    leaf: usize,
    members: Vec<usize>,
    /// Learned shapes reaching it whose plan its answer does not give.
    impure: usize,
    /// Calibration shapes reaching it that its answer gets wrong, and right.
    wrong: usize,
    confirmed: usize,
}

/// Each leaf's evidence: its learned shapes and the calibration shapes that reach it.
fn leaf_evidence(
    nodes: &[Node],
    leaf_members: Vec<(usize, Vec<usize>)>,
    calibration: impl Iterator<Item = usize>,
    traced: &[Traced],
    plans: &[Option<PlanKey>],
    right_at: &dyn Fn(usize, usize) -> bool,
) -> Vec<LeafEvidence> {
    let mut calib_wrong: HashMap<usize, usize> = HashMap::new();
    let mut calib_right: HashMap<usize, usize> = HashMap::new();
    for i in calibration {
        let leaf = leaf_of(nodes, traced[i].shape);
        if let Node::Leaf { config, .. } = nodes[leaf] {
            if plans[i].is_some() {
                *(if right_at(i, config) { &mut calib_right } else { &mut calib_wrong }).entry(leaf).or_default() += 1;
            }
        }
    }
    leaf_members
        .into_iter()
        .filter_map(|(leaf, members)| {
            let Node::Leaf { config, .. } = nodes[leaf] else { return None };
            let impure = members.iter().filter(|&&i| plans[i].is_some() && !right_at(i, config)).count();
            Some(LeafEvidence {
                leaf,
                members,
                impure,
                wrong: calib_wrong.get(&leaf).copied().unwrap_or(0),
                confirmed: calib_right.get(&leaf).copied().unwrap_or(0),
            })
        })
        .collect()
}

/// The grown tree with a decline in place of every leaf that is unsure: its own learned shapes
/// disagree numerically with its answer, calibration shapes reaching it get a wrong answer too
/// often ([`too_often_contradicted`], as in [`super::calibrate`]: one odd shape does not silence
/// a leaf right thousands of times), or fewer than [`MIN_CONFIRMED`] confirm it.
fn decide(nodes: &[Node], evidence: &[LeafEvidence], labels: &[usize]) -> Vec<Node> {
    let mut nodes = nodes.to_vec();
    for e in evidence {
        let Node::Leaf { support, .. } = nodes[e.leaf] else { continue };
        let contradicted = too_often_contradicted(e.confirmed, e.wrong);
        if e.impure > 0 || contradicted || support < MIN_SUPPORT || e.confirmed < MIN_CONFIRMED {
            let reason = if e.impure > 0 {
                format!("the learned shapes nearest this one ran {} numerically different kernels", distinct(e.members.iter().map(|&i| labels[i])))
            } else if contradicted {
                format!("{} held-out shape(s) near this one ran another kernel than the learned ones", e.wrong)
            } else if support < MIN_SUPPORT {
                format!("only {support} learned shape(s) ran this kernel here: too few to trust")
            } else {
                "no held-out shape near this one confirmed the learned kernel".to_string()
            };
            nodes[e.leaf] = Node::Decline { support, reason };
        }
    }
    nodes
}

fn distinct(labels: impl Iterator<Item = usize>) -> usize {
    let mut v: Vec<usize> = labels.collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

struct Grower<'a> {
    labels: &'a [usize],
    n_labels: usize,
    /// Every shape's features, `values[i * F + f]` for feature `Feature::ALL[f]`.
    values: Vec<f64>,
}

const F: usize = Feature::ALL.len();

impl<'a> Grower<'a> {
    fn new(traced: &[Traced], labels: &'a [usize], n_labels: usize) -> Grower<'a> {
        let values = traced.iter().flat_map(|t| Feature::ALL.map(|f| f.of(t.shape))).collect();
        Grower { labels, n_labels, values }
    }

    fn value(&self, i: u32, f: usize) -> f64 {
        self.values[i as usize * F + f]
    }

    /// Grow a tree over `members` at the end of `nodes`; every leaf's members go to `leaves`.
    /// Each feature's members are sorted once here and kept sorted through the splits, so that a
    /// node's best split is one pass per feature.
    fn grow_tree(&self, members: Vec<usize>, nodes: &mut Vec<Node>, leaves: &mut Vec<(usize, Vec<usize>)>) {
        if members.is_empty() {
            nodes.push(Node::Decline { support: 0, reason: "no learned shapes".into() });
            return;
        }
        let sorted: Vec<Vec<u32>> = (0..F)
            .into_par_iter()
            .map(|f| {
                let mut v: Vec<u32> = members.iter().map(|&i| i as u32).collect();
                v.sort_by(|&a, &b| self.value(a, f).total_cmp(&self.value(b, f)).then(a.cmp(&b)));
                v
            })
            .collect();
        let mut left = vec![false; self.values.len() / F];
        self.grow(sorted, 0, nodes, leaves, &mut left);
    }

    /// Grow the subtree of the members (each feature's list of them sorted by that feature) at
    /// the end of `nodes` (pre-order: children after their parent); `goes_left` is scratch.
    fn grow(&self, sorted: Vec<Vec<u32>>, depth: usize, nodes: &mut Vec<Node>, leaves: &mut Vec<(usize, Vec<usize>)>, goes_left: &mut [bool]) {
        let at = nodes.len();
        let members = &sorted[0];
        let majority = self.majority(members);
        let pure = members.iter().all(|&i| self.labels[i as usize] == majority);
        let split = if pure || depth >= MAX_DEPTH || members.len() < 2 { None } else { self.best_split(&sorted) };
        let Some((f, threshold)) = split else {
            nodes.push(Node::Leaf { config: majority, support: members.len(), held: (0, 0) });
            leaves.push((at, members.iter().map(|&i| i as usize).collect()));
            return;
        };
        nodes.push(Node::Split { feature: Feature::ALL[f], threshold, left: 0, right: 0 });
        for &i in members {
            goes_left[i as usize] = self.value(i, f) <= threshold;
        }
        let (l, r): (Vec<Vec<u32>>, Vec<Vec<u32>>) = {
            let goes_left = &*goes_left;
            let part = |v: Vec<u32>| -> (Vec<u32>, Vec<u32>) { v.into_iter().partition(|&i| goes_left[i as usize]) };
            if members.len() >= PARALLEL_MEMBERS {
                sorted.into_par_iter().map(part).unzip()
            } else {
                sorted.into_iter().map(part).unzip()
            }
        };
        let left = nodes.len();
        self.grow(l, depth + 1, nodes, leaves, goes_left);
        let right = nodes.len();
        self.grow(r, depth + 1, nodes, leaves, goes_left);
        nodes[at] = Node::Split { feature: Feature::ALL[f], threshold, left, right };
    }

    fn majority(&self, members: &[u32]) -> usize {
        let mut counts: HashMap<usize, usize> = HashMap::new();
        for &i in members {
            *counts.entry(self.labels[i as usize]).or_default() += 1;
        }
        counts.into_iter().max_by_key(|&(label, c)| (c, std::cmp::Reverse(label))).map_or(0, |(l, _)| l)
    }

    /// The split (feature index, threshold) of least weighted Gini impurity, None where no
    /// split separates anything; ties go to the first feature, then the lowest threshold. The
    /// features of a large node are searched in parallel, with the same answer.
    fn best_split(&self, sorted: &[Vec<u32>]) -> Option<(usize, f64)> {
        let members = &sorted[0];
        let total = members.len() as f64;
        let mut all = vec![0usize; self.n_labels];
        for &i in members {
            all[self.labels[i as usize]] += 1;
        }
        let parent = total - sq(&all) / total;
        let per_feature: Vec<Option<(f64, f64)>> = if members.len() >= PARALLEL_MEMBERS {
            sorted.par_iter().enumerate().map(|(f, order)| self.best_threshold(f, order, &all, parent)).collect()
        } else {
            sorted.iter().enumerate().map(|(f, order)| self.best_threshold(f, order, &all, parent)).collect()
        };
        let mut best: Option<(f64, usize, f64)> = None;
        for (f, found) in per_feature.into_iter().enumerate() {
            if let Some((impurity, threshold)) = found {
                if best.is_none_or(|b| impurity < b.0) {
                    best = Some((impurity, f, threshold));
                }
            }
        }
        best.map(|(_, f, t)| (f, t))
    }

    /// Feature `f`'s split of least weighted Gini impurity below the parent's, as (impurity,
    /// threshold), the lowest threshold where two tie; `order` is the members sorted by `f` and
    /// `all` their label counts.
    fn best_threshold(&self, f: usize, order: &[u32], all: &[usize], parent: f64) -> Option<(f64, f64)> {
        let (first, last) = (self.value(order[0], f), self.value(order[order.len() - 1], f));
        if first == last {
            return None;
        }
        let total = order.len() as f64;
        let mut left = vec![0usize; self.n_labels];
        let (mut left_sq, mut right_sq) = (0.0f64, sq(all));
        let mut best: Option<(f64, f64)> = None;
        for j in 0..order.len() - 1 {
            let label = self.labels[order[j] as usize];
            let (lc, rc) = (left[label] as f64, (all[label] - left[label]) as f64);
            left_sq += 2.0 * lc + 1.0;
            right_sq -= 2.0 * rc - 1.0;
            left[label] += 1;
            let (here, next) = (self.value(order[j], f), self.value(order[j + 1], f));
            if here == next {
                continue;
            }
            let (nl, nr) = ((j + 1) as f64, total - (j + 1) as f64);
            let impurity = (nl - left_sq / nl) + (nr - right_sq / nr);
            if impurity < parent - 1e-9 && best.is_none_or(|b| impurity < b.0) {
                best = Some((impurity, midpoint(here, next)));
            }
        }
        best
    }
}

/// Nodes with at least this many members search and partition their features in parallel.
const PARALLEL_MEMBERS: usize = 16_384;

/// The sum of squared label counts.
fn sq(counts: &[usize]) -> f64 {
    counts.iter().map(|&x| (x * x) as f64).sum()
}

/// A threshold between two feature values that prints and parses back to a value between them.
fn midpoint(a: f64, b: f64) -> f64 {
    let m = a + (b - a) / 2.0;
    if m > a && m < b {
        m
    } else {
        a
    }
}

/// The table of a path's exceptions across call kinds.
pub fn exception_table(provenance: Vec<String>, per_op: &[(TorchOp, &Fitted)]) -> ConfigTable {
    let mut t = ConfigTable::default();
    t.provenance = provenance;
    for (op, f) in per_op {
        for ((m, n, k), c) in &f.exceptions {
            t.insert(*m, *n, *k, *op, c.clone());
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> ScheduleRules {
        let m = crate::model::Model::load("h100:cublas.gemm.f32.f16.f16.f32").unwrap();
        ScheduleRules::from_table(m.schedule.as_ref().unwrap()).unwrap()
    }

    /// A run-time split keeps its tile and cluster shape (the segment count depends on both);
    /// an unsplit sm90 kernel keeps neither.
    #[test]
    fn numeric_config_keeps_what_the_split_choice_reads() {
        let m = crate::model::Model::load("h100:cublas.gemm.f32.tf32.tf32.f32").unwrap();
        let r = ScheduleRules::from_table(m.schedule.as_ref().unwrap()).unwrap();
        let segk = KernelConfig::from_log("algoId=43 tile=MATMUL_TILE_64x64 stages=MATMUL_STAGES_32xAUTO reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=-1 clusterShape=CLUSTER_SHAPE_8x1x1").unwrap();
        let n = numeric_config(&r, &segk);
        assert_eq!((n.tile.as_deref(), n.other.get("clusterShape").map(String::as_str)), (Some("64x64"), Some("CLUSTER_SHAPE_8x1x1")));
        let whole = KernelConfig::from_log("algoId=66 tile=MATMUL_TILE_128x64 stages=MATMUL_STAGES_64xAUTO clusterShape=CLUSTER_SHAPE_2x1x1").unwrap();
        assert!(numeric_config(&rules(), &whole).other.is_empty());
    }

    /// A made-up GPU that splits K in two past k = 4096 when D is small and otherwise runs one
    /// wgmma chain: the tree finds the structure and holds out what it learned.
    #[test]
    fn learns_a_threshold_and_holds_out_the_rest() {
        let r = rules();
        let whole = KernelConfig::from_log("algoId=66 tile=MATMUL_TILE_128x64 stages=MATMUL_STAGES_64xAUTO customOption=3 clusterShape=CLUSTER_SHAPE_1x1x1").unwrap();
        let other_tile = KernelConfig::from_log("algoId=66 tile=MATMUL_TILE_64x64 stages=MATMUL_STAGES_64xAUTO customOption=3 clusterShape=CLUSTER_SHAPE_2x1x1").unwrap();
        let split = KernelConfig::from_log("algoId=66 tile=MATMUL_TILE_64x64 stages=MATMUL_STAGES_64xAUTO reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=2 customOption=3").unwrap();
        let mut traced = vec![];
        let mut rng = 1u64;
        for _ in 0..4000 {
            rng = crate::library::libgen::splitmix64(rng);
            let (m, n, k) = (1 + (rng % 512) as usize, 1 + ((rng >> 20) % 512) as usize, 64 * (1 + ((rng >> 40) % 128) as usize));
            let config = if k > 4096 && m * n < 4096 { split.clone() } else if m % 2 == 0 { whole.clone() } else { other_tile.clone() };
            traced.push(Traced { shape: (m, n, k), config });
        }
        let f = fit(&r, TorchOp::Mm, &traced, 7, 2);
        // The two unsplit tiles are one numeric configuration: one split decides it all.
        assert_eq!(f.configs.len(), 2, "{:?}", f.configs);
        assert!(f.stats.held_out > 400 && f.stats.wrong == 0, "{:?}", f.stats);
        assert!(f.stats.right as f64 >= 0.97 * f.stats.held_out as f64, "{:?}", f.stats);
        assert_eq!(f.nodes.len(), 2);
        assert!(f.nodes.iter().all(|t| t.len() < 40), "{:?} nodes", f.nodes.iter().map(Vec::len).collect::<Vec<_>>());
        // What the tree declines keeps its traced kernel.
        assert!(f.exceptions.len() < traced.len() / 20, "{} exceptions", f.exceptions.len());
    }

    /// A tree grown on one thread is the tree grown on several: large nodes search and
    /// partition their features in parallel, with the ties broken as one thread breaks them.
    #[test]
    fn the_trees_do_not_depend_on_the_thread_count() {
        let labels: Vec<usize> = (0..3 * PARALLEL_MEMBERS).map(|i| (crate::library::libgen::splitmix64(i as u64) % 5) as usize).collect();
        let traced: Vec<Traced> = (0..labels.len())
            .map(|i| {
                let r = crate::library::libgen::splitmix64(1000 + i as u64);
                // Coarse values: many ties between features and thresholds.
                Traced { shape: (1 + (r % 64) as usize * 8, 1 + ((r >> 20) % 64) as usize, 64 * (1 + ((r >> 40) % 16) as usize)), config: KernelConfig::from_log("algoId=66").unwrap() }
            })
            .collect();
        let grown = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let g = Grower::new(&traced, &labels, 5);
                let (mut nodes, mut leaves) = (vec![], vec![]);
                g.grow_tree((0..traced.len()).collect(), &mut nodes, &mut leaves);
                (nodes, leaves)
            })
        };
        let (one, four) = (grown(1), grown(4));
        assert!(one.0.len() > 100, "{} nodes", one.0.len());
        assert_eq!(one.0, four.0);
        assert_eq!(one.1, four.1);
    }

    /// One odd calibration shape does not silence a leaf that thousands confirmed; a leaf
    /// contradicted more often than once per `RIGHT_PER_WRONG` confirmations declines.
    #[test]
    fn a_leaf_declines_by_its_calibration_shapes_per_miss() {
        use crate::library::calibrate::RIGHT_PER_WRONG;
        let leaf = Node::Leaf { config: 0, support: 5000, held: (0, 0) };
        let kept = |wrong: usize, confirmed: usize| {
            let e = LeafEvidence { leaf: 0, members: vec![], impure: 0, wrong, confirmed };
            matches!(decide(&[leaf.clone()], &[e], &[])[0], Node::Leaf { .. })
        };
        assert!(kept(0, 6) && kept(1, RIGHT_PER_WRONG) && kept(3, 3 * RIGHT_PER_WRONG));
        assert!(!kept(0, 5) && !kept(1, RIGHT_PER_WRONG - 1) && !kept(4, 3 * RIGHT_PER_WRONG));
    }

    #[test]
    fn a_leaf_that_cannot_tell_declines() {
        let r = rules();
        let a = KernelConfig::from_log("algoId=66 tile=MATMUL_TILE_128x64 stages=MATMUL_STAGES_64xAUTO customOption=3").unwrap();
        let b = KernelConfig::from_log("algoId=66 tile=MATMUL_TILE_64x64 stages=MATMUL_STAGES_64xAUTO reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=3 customOption=3").unwrap();
        // The same shape traced with two kernels (as two GPUs of one name might): no split can
        // separate them, so the leaf declines and both traces stay exceptions.
        let traced: Vec<Traced> = (0..200).map(|i| Traced { shape: (64, 64, 8192), config: if i % 2 == 0 { a.clone() } else { b.clone() } }).collect();
        let f = fit(&r, TorchOp::Mm, &traced, 1, 1);
        assert!(matches!(&f.nodes[0][0], Node::Decline { reason, .. } if reason.contains("2 numerically different")), "{:?}", f.nodes[0]);
        assert_eq!(f.stats.wrong, 0);
    }
}
