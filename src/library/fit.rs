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
//! trees: 70% of all grow it, 15% calibrate it (a leaf that gets any of them wrong, or whose own
//! learned shapes disagree, declines). The call kind's answer is the trees' where they agree.

use super::config::KernelConfig;
use super::gemm::{linear_takes_epilogue, takes_weight_transposed};
use super::op::TorchOp;
use super::predict::{leaf_of, prune, walk, Feature, Node, Walk};
use super::schedule::{Plan, PlanError, ScheduleRules};
use super::table::ConfigTable;
use std::collections::HashMap;

/// One traced GEMM.
#[derive(Clone, Debug)]
pub struct Traced {
    pub shape: (usize, usize, usize),
    pub config: KernelConfig,
}

/// The schedule a call of kind `op` at `shape` runs under `config`: F.linear's bias reaches
/// the bias epilogue only where PyTorch uses it ([`linear_takes_epilogue`]). With α = β = 1,
/// as the traced calls are: how a kernel would apply other α and β is left out, so that two
/// kernels computing the same bits have equal plans.
pub fn plan_of(rules: &ScheduleRules, op: TorchOp, (m, n, k): (usize, usize, usize), config: &KernelConfig) -> Result<Plan, PlanError> {
    let bias = op == TorchOp::LinearBias && linear_takes_epilogue(n, k);
    let plan = rules.plan_layout(m, n, k, config, bias, takes_weight_transposed(op, n, k))?;
    Ok(Plan { scalars: None, ..plan })
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
    let plans: Vec<Result<Plan, PlanError>> = traced.iter().map(|t| plan_of(rules, op, t.shape, &t.config)).collect();
    let mut numeric_ok: HashMap<&KernelConfig, bool> = HashMap::new();
    for (t, p) in traced.iter().zip(&plans) {
        let n = numeric_config(rules, &t.config);
        let same = match (plan_of(rules, op, t.shape, &n), p) {
            (Ok(a), Ok(b)) => a == *b,
            (Err(_), Err(_)) => true,
            _ => false,
        };
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
    let right_at = |i: usize, label: usize| match (&plans[i], plan_of(rules, op, traced[i].shape, &configs[label])) {
        (Ok(a), Ok(b)) => *a == b,
        _ => false,
    };
    let test: Vec<bool> = traced.iter().map(|t| tested(seed, t.shape)).collect();
    let grower = Grower { traced, labels: &labels, n_labels: configs.len() };
    let mut forest: Vec<Vec<Node>> = (0..trees.max(1))
        .map(|j| {
            let calib: Vec<bool> = traced.iter().map(|t| calibrates(seed, j, t.shape)).collect();
            let grow: Vec<usize> = (0..traced.len()).filter(|&i| !test[i] && !calib[i]).collect();
            let mut nodes = vec![];
            let mut leaf_members: Vec<(usize, Vec<usize>)> = vec![];
            grower.grow(grow, 0, &mut nodes, &mut leaf_members);
            calibrate(&mut nodes, &leaf_members, (0..traced.len()).filter(|&i| !test[i] && calib[i]), traced, &plans, &labels, &right_at);
            nodes
        })
        .collect();
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
        match (answer(&forest, traced[i].shape), plans[i].is_ok()) {
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
        .filter(|&i| plans[i].is_err() || answer(&forest, traced[i].shape).is_none_or(|c| !right_at(i, c)))
        .map(|i| (traced[i].shape, traced[i].config.clone()))
        .collect();
    // Subtrees that only decline become one decline (the held-out counts above are the grown trees').
    let nodes = forest.iter().map(|t| prune(t)).collect();
    Fitted { nodes, configs, exceptions, stats }
}

/// A leaf declines where its own learned shapes disagree numerically with its answer, a
/// calibration shape reaching it gets a wrong answer, or none confirms it.
fn calibrate(
    nodes: &mut [Node],
    leaf_members: &[(usize, Vec<usize>)],
    calibration: impl Iterator<Item = usize>,
    traced: &[Traced],
    plans: &[Result<Plan, PlanError>],
    labels: &[usize],
    right_at: &dyn Fn(usize, usize) -> bool,
) {
    let mut calib_wrong: HashMap<usize, usize> = HashMap::new();
    let mut calib_right: HashMap<usize, usize> = HashMap::new();
    for i in calibration {
        let leaf = leaf_of(nodes, traced[i].shape);
        if let Node::Leaf { config, .. } = nodes[leaf] {
            if plans[i].is_ok() {
                *(if right_at(i, config) { &mut calib_right } else { &mut calib_wrong }).entry(leaf).or_default() += 1;
            }
        }
    }
    for (leaf, members) in leaf_members {
        let Node::Leaf { config, support, .. } = nodes[*leaf] else { continue };
        let impure = members.iter().filter(|&&i| plans[i].is_ok() && !right_at(i, config)).count();
        let wrong = calib_wrong.get(leaf).copied().unwrap_or(0);
        let confirmed = calib_right.get(leaf).copied().unwrap_or(0);
        if impure > 0 || wrong > 0 || support < MIN_SUPPORT || confirmed < MIN_CONFIRMED {
            let reason = if impure > 0 {
                format!("the learned shapes nearest this one ran {} numerically different kernels", distinct(members.iter().map(|&i| labels[i])))
            } else if wrong > 0 {
                format!("{wrong} held-out shape(s) near this one ran another kernel than the learned ones")
            } else if support < MIN_SUPPORT {
                format!("only {support} learned shape(s) ran this kernel here: too few to trust")
            } else {
                "no held-out shape near this one confirmed the learned kernel".to_string()
            };
            nodes[*leaf] = Node::Decline { support, reason };
        }
    }
}

fn distinct(labels: impl Iterator<Item = usize>) -> usize {
    let mut v: Vec<usize> = labels.collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

struct Grower<'a> {
    traced: &'a [Traced],
    labels: &'a [usize],
    n_labels: usize,
}

impl Grower<'_> {
    /// Grow the subtree of `members` at the end of `nodes` (pre-order: children after their
    /// parent); every leaf's members go to `leaves`.
    fn grow(&self, members: Vec<usize>, depth: usize, nodes: &mut Vec<Node>, leaves: &mut Vec<(usize, Vec<usize>)>) {
        let at = nodes.len();
        let majority = self.majority(&members);
        let pure = members.iter().all(|&i| self.labels[i] == majority);
        let split = if pure || depth >= MAX_DEPTH || members.len() < 2 { None } else { self.best_split(&members) };
        let Some((feature, threshold)) = split else {
            nodes.push(Node::Leaf { config: majority, support: members.len(), held: (0, 0) });
            leaves.push((at, members));
            return;
        };
        nodes.push(Node::Split { feature, threshold, left: 0, right: 0 });
        let (l, r): (Vec<usize>, Vec<usize>) = members.into_iter().partition(|&i| feature.of(self.traced[i].shape) <= threshold);
        let left = nodes.len();
        self.grow(l, depth + 1, nodes, leaves);
        let right = nodes.len();
        self.grow(r, depth + 1, nodes, leaves);
        nodes[at] = Node::Split { feature, threshold, left, right };
    }

    fn majority(&self, members: &[usize]) -> usize {
        let mut counts: HashMap<usize, usize> = HashMap::new();
        for &i in members {
            *counts.entry(self.labels[i]).or_default() += 1;
        }
        counts.into_iter().max_by_key(|&(label, c)| (c, std::cmp::Reverse(label))).map_or(0, |(l, _)| l)
    }

    /// The split of least weighted Gini impurity, None where no split separates anything.
    fn best_split(&self, members: &[usize]) -> Option<(Feature, f64)> {
        let total = members.len() as f64;
        let mut all = vec![0usize; self.n_labels];
        for &i in members {
            all[self.labels[i]] += 1;
        }
        let sq = |c: &[usize]| c.iter().map(|&x| (x * x) as f64).sum::<f64>();
        let parent = total - sq(&all) / total;
        let mut best: Option<(f64, Feature, f64)> = None;
        let mut order: Vec<(f64, usize)> = Vec::with_capacity(members.len());
        for feature in Feature::ALL {
            order.clear();
            order.extend(members.iter().map(|&i| (feature.of(self.traced[i].shape), self.labels[i])));
            order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
            if order[0].0 == order[order.len() - 1].0 {
                continue;
            }
            let mut left = vec![0usize; self.n_labels];
            let (mut left_sq, mut right_sq) = (0.0f64, sq(&all));
            for j in 0..order.len() - 1 {
                let label = order[j].1;
                let (lc, rc) = (left[label] as f64, (all[label] - left[label]) as f64);
                left_sq += 2.0 * lc + 1.0;
                right_sq -= 2.0 * rc - 1.0;
                left[label] += 1;
                if order[j].0 == order[j + 1].0 {
                    continue;
                }
                let (nl, nr) = ((j + 1) as f64, total - (j + 1) as f64);
                let impurity = (nl - left_sq / nl) + (nr - right_sq / nr);
                if impurity < parent - 1e-9 && best.is_none_or(|b| impurity < b.0) {
                    best = Some((impurity, feature, midpoint(order[j].0, order[j + 1].0)));
                }
            }
        }
        best.map(|(_, f, t)| (f, t))
    }
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
