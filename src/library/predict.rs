//! The kernel configuration cuBLASLt runs at any shape, predicted: a few decision trees per
//! PyTorch call, each learned from another part of the trace, over features of the shape (m, n, k, their products and ratios, and how far each is
//! aligned, which decides the leading dimensions' alignment), learned from a GPU's trace by
//! [`super::fit`]. A leaf answers with a configuration, or declines where the learning set's own
//! held-out shapes found it unsure; the call's answer is the trees' where they all give the same
//! configuration, and declined where any declines or two disagree.
//!
//! File format (`models/<gpu>/cublas/<path>.predict.tsv.xz`): `#` lines are provenance (the
//! learning set's seed and hash, the held-out results); `cfg<TAB>ID<TAB>ALGO` name the
//! configurations; `why<TAB>ID<TAB>REASON` name the reasons trees decline with;
//! `op<TAB>OP` starts a tree of a call kind (again for its next tree), whose nodes follow in
//! pre-order, the root first and each split's left branch before its right:
//! `s<TAB>FEATURE<TAB>THRESHOLD` (feature ≤ threshold goes left),
//! `l<TAB>ID<TAB>SUPPORT<TAB>HELD_OK<TAB>HELD_ALL` (answer configuration ID; how many learned
//! shapes reached it, how many held-out shapes it got right and reached), or
//! `d<TAB>SUPPORT<TAB>WHY` (decline with reason WHY). `unpredicted<TAB>OP<TAB>CLASS<TAB>REASON`
//! lines decline a call kind's shapes whose 1s fall as CLASS says (`m--`: m = 1 alone) whatever
//! the tree says. Files of earlier versions, whose nodes name their branches
//! (`split<TAB>FEATURE<TAB>THRESHOLD<TAB>LEFT<TAB>RIGHT`, `leaf<TAB>...`,
//! `decline<TAB>SUPPORT<TAB>REASON`), are read as well.

use super::config::KernelConfig;
use super::gemm::linear_takes_epilogue;
use super::op::TorchOp;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// What the tree looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    M,
    N,
    K,
    /// m·n: D's size, what the output tiles cover.
    Mn,
    /// m·n·k: the work.
    Mnk,
    /// k / (m·n): how deep K is against the output (split-K's trigger).
    KPerMn,
    MinMn,
    MaxMn,
    /// Trailing zero bits of m, n, k (up to 8): the alignment of rows and leading dimensions.
    AlignM,
    AlignN,
    AlignK,
    /// Output tiles of 64×64, 128×128 and 128×256 (torch's m by n, both ways): the waves of
    /// CTAs over the SMs that the kernel choice and split-K weigh.
    Tiles64,
    Tiles128,
    Tiles128x256,
    Tiles256x128,
    /// k per 128×128 output tile: how much K each tile's chain holds.
    KPerTile128,
    /// Output tiles of 32×32, 128×64 and 64×128: the smaller kernels' waves.
    Tiles32,
    Tiles128x64,
    Tiles64x128,
    /// k per 64×64 and per 256×128 output tile.
    KPerTile64,
    KPerTile256,
    /// m·k and n·k: the operands' sizes (what a GEMV streams).
    Mk,
    Nk,
    /// How full the waves of output tiles are, tiles / (SMs · waves), for tiles of 64×64,
    /// 128×128, 128×256, 256×128, 128×64 and 64×128 over [`SMS`] SMs: what a kernel's cost
    /// weighs against another's, and what a split of K fills.
    Fill64,
    Fill128,
    Fill128x256,
    Fill256x128,
    Fill128x64,
    Fill64x128,
}

/// SMs of the GPUs the predictors describe (H100 SXM and H200: 132 each).
pub const SMS: usize = 132;

impl Feature {
    pub const ALL: [Feature; 29] = [
        Feature::M,
        Feature::N,
        Feature::K,
        Feature::Mn,
        Feature::Mnk,
        Feature::KPerMn,
        Feature::MinMn,
        Feature::MaxMn,
        Feature::AlignM,
        Feature::AlignN,
        Feature::AlignK,
        Feature::Tiles64,
        Feature::Tiles128,
        Feature::Tiles128x256,
        Feature::Tiles256x128,
        Feature::KPerTile128,
        Feature::Tiles32,
        Feature::Tiles128x64,
        Feature::Tiles64x128,
        Feature::KPerTile64,
        Feature::KPerTile256,
        Feature::Mk,
        Feature::Nk,
        Feature::Fill64,
        Feature::Fill128,
        Feature::Fill128x256,
        Feature::Fill256x128,
        Feature::Fill128x64,
        Feature::Fill64x128,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Feature::M => "m",
            Feature::N => "n",
            Feature::K => "k",
            Feature::Mn => "mn",
            Feature::Mnk => "mnk",
            Feature::KPerMn => "k_per_mn",
            Feature::MinMn => "min_mn",
            Feature::MaxMn => "max_mn",
            Feature::AlignM => "align_m",
            Feature::AlignN => "align_n",
            Feature::AlignK => "align_k",
            Feature::Tiles64 => "tiles64",
            Feature::Tiles128 => "tiles128",
            Feature::Tiles128x256 => "tiles128x256",
            Feature::Tiles256x128 => "tiles256x128",
            Feature::KPerTile128 => "k_per_tile128",
            Feature::Tiles32 => "tiles32",
            Feature::Tiles128x64 => "tiles128x64",
            Feature::Tiles64x128 => "tiles64x128",
            Feature::KPerTile64 => "k_per_tile64",
            Feature::KPerTile256 => "k_per_tile256",
            Feature::Mk => "mk",
            Feature::Nk => "nk",
            Feature::Fill64 => "fill64",
            Feature::Fill128 => "fill128",
            Feature::Fill128x256 => "fill128x256",
            Feature::Fill256x128 => "fill256x128",
            Feature::Fill128x64 => "fill128x64",
            Feature::Fill64x128 => "fill64x128",
        }
    }

    fn parse(s: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.name() == s)
    }

    /// The feature's value at an m×n×k shape.
    pub fn of(self, (m, n, k): (usize, usize, usize)) -> f64 {
        let align = |x: usize| x.trailing_zeros().min(8) as f64;
        let tiles = |tm: usize, tn: usize| (m.div_ceil(tm) * n.div_ceil(tn)) as f64;
        let fill = |tm: usize, tn: usize| {
            let t = m.div_ceil(tm) * n.div_ceil(tn);
            t as f64 / (t.div_ceil(SMS).max(1) * SMS) as f64
        };
        let (mf, nf, kf) = (m as f64, n as f64, k as f64);
        match self {
            Feature::M => mf,
            Feature::N => nf,
            Feature::K => kf,
            Feature::Mn => mf * nf,
            Feature::Mnk => mf * nf * kf,
            Feature::KPerMn => kf / (mf * nf),
            Feature::MinMn => mf.min(nf),
            Feature::MaxMn => mf.max(nf),
            Feature::AlignM => align(m),
            Feature::AlignN => align(n),
            Feature::AlignK => align(k),
            Feature::Tiles64 => tiles(64, 64),
            Feature::Tiles128 => tiles(128, 128),
            Feature::Tiles128x256 => tiles(128, 256),
            Feature::Tiles256x128 => tiles(256, 128),
            Feature::KPerTile128 => kf / tiles(128, 128),
            Feature::Tiles32 => tiles(32, 32),
            Feature::Tiles128x64 => tiles(128, 64),
            Feature::Tiles64x128 => tiles(64, 128),
            Feature::KPerTile64 => kf / tiles(64, 64),
            Feature::KPerTile256 => kf / tiles(256, 128),
            Feature::Mk => mf * kf,
            Feature::Nk => nf * kf,
            Feature::Fill64 => fill(64, 64),
            Feature::Fill128 => fill(128, 128),
            Feature::Fill128x256 => fill(128, 256),
            Feature::Fill256x128 => fill(256, 128),
            Feature::Fill128x64 => fill(128, 64),
            Feature::Fill64x128 => fill(64, 128),
        }
    }
}

/// A node of a call kind's tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Split { feature: Feature, threshold: f64, left: usize, right: usize },
    /// Answer `config`; `support` learned shapes reached the leaf, `held` = (right, reached) of
    /// the held-out shapes.
    Leaf { config: usize, support: usize, held: (usize, usize) },
    Decline { support: usize, reason: String },
}

/// Which of m, n, k are 1 (`m--`: m alone; `mn-`: m and n; `---`: none): the GEMV-like cases
/// where cuBLAS's dispatch follows rules of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Degenerate(pub [bool; 3]);

impl Degenerate {
    pub fn of((m, n, k): (usize, usize, usize)) -> Degenerate {
        Degenerate([m == 1, n == 1, k == 1])
    }

    pub fn name(self) -> String {
        self.0.iter().zip("mnk".chars()).map(|(&one, c)| if one { c } else { '-' }).collect()
    }

    pub fn parse(s: &str) -> Option<Degenerate> {
        let b = s.as_bytes();
        (b.len() == 3 && b.iter().zip(b"mnk").all(|(&x, &c)| x == c || x == b'-')).then(|| Degenerate([b[0] != b'-', b[1] != b'-', b[2] != b'-']))
    }
}

/// Per call kind, trees over the shape (they must agree), and the degenerate classes it does not answer for
/// (where the data it was learned from is known not to be what runs).
#[derive(Clone, Debug, Default)]
pub struct Predictor {
    pub provenance: Vec<String>,
    pub configs: Vec<KernelConfig>,
    pub trees: BTreeMap<TorchOp, Vec<Vec<Node>>>,
    pub unpredicted: BTreeMap<(TorchOp, Degenerate), String>,
}

/// The index of the leaf (answer or decline) a shape reaches in a tree whose splits point
/// forward ([`Predictor::parse`] checks it).
pub fn leaf_of(tree: &[Node], shape: (usize, usize, usize)) -> usize {
    let mut at = 0;
    while let Node::Split { feature, threshold, left, right } = &tree[at] {
        at = if feature.of(shape) <= *threshold { *left } else { *right };
    }
    at
}

/// Where a shape ends in a call kind's trees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Walk<'t> {
    /// Every tree answers `config`: the least support of their leaves, their held-out counts summed.
    Agree { config: usize, support: usize, held: (usize, usize) },
    /// The first tree that declines, with its reason.
    Decline(&'t str),
    /// Two trees answer these two configurations.
    Disagree(usize, usize),
}

/// The walk of `shape` through `trees` (None where there are none).
pub fn walk(trees: &[Vec<Node>], shape: (usize, usize, usize)) -> Option<Walk<'_>> {
    let mut answer: Option<Walk> = None;
    for tree in trees {
        match &tree[leaf_of(tree, shape)] {
            Node::Leaf { config, support, held } => {
                answer = Some(match answer {
                    Some(Walk::Agree { config: c, .. }) if c != *config => return Some(Walk::Disagree(c, *config)),
                    Some(Walk::Agree { config: c, support: s, held: h }) => Walk::Agree { config: c, support: s.min(*support), held: (h.0 + held.0, h.1 + held.1) },
                    _ => Walk::Agree { config: *config, support: *support, held: *held },
                })
            }
            Node::Decline { reason, .. } => return Some(Walk::Decline(reason)),
            Node::Split { .. } => unreachable!("leaf_of ends at a leaf"),
        }
    }
    answer
}

/// `tree` with every subtree that only declines made one `decline` node (its support the sum,
/// its reason the first in pre-order): the same answers in fewer nodes.
pub fn prune(tree: &[Node]) -> Vec<Node> {
    fn all_decline(tree: &[Node], at: usize, memo: &mut [Option<bool>]) -> bool {
        if let Some(v) = memo[at] {
            return v;
        }
        let v = match &tree[at] {
            Node::Decline { .. } => true,
            Node::Split { left, right, .. } => all_decline(tree, *left, memo) && all_decline(tree, *right, memo),
            Node::Leaf { .. } => false,
        };
        memo[at] = Some(v);
        v
    }
    fn declines(tree: &[Node], at: usize, out: &mut Vec<(usize, String)>) {
        match &tree[at] {
            Node::Decline { support, reason } => out.push((*support, reason.clone())),
            Node::Split { left, right, .. } => {
                declines(tree, *left, out);
                declines(tree, *right, out);
            }
            Node::Leaf { .. } => {}
        }
    }
    fn rebuild(tree: &[Node], at: usize, memo: &mut [Option<bool>], out: &mut Vec<Node>) -> usize {
        let here = out.len();
        match &tree[at] {
            Node::Split { .. } if all_decline(tree, at, memo) => {
                let mut all = vec![];
                declines(tree, at, &mut all);
                out.push(Node::Decline { support: all.iter().map(|d| d.0).sum(), reason: all.swap_remove(0).1 });
            }
            Node::Split { feature, threshold, left, right } => {
                out.push(Node::Split { feature: *feature, threshold: *threshold, left: 0, right: 0 });
                let l = rebuild(tree, *left, memo, out);
                let r = rebuild(tree, *right, memo, out);
                out[here] = Node::Split { feature: *feature, threshold: *threshold, left: l, right: r };
            }
            other => out.push(other.clone()),
        }
        here
    }
    let mut out = Vec::with_capacity(tree.len());
    if !tree.is_empty() {
        rebuild(tree, 0, &mut vec![None; tree.len()], &mut out);
    }
    out
}

/// A split's branch not yet linked (an `s` line names none).
const UNLINKED: usize = usize::MAX;

/// Links the branches of a tree written in pre-order (`s` lines): each split's left branch is
/// the node after it, its right branch the node after its left subtree. A tree whose splits
/// name their branches is left as it is; one that mixes the two, or whose nodes do not make
/// exactly one tree, is an error.
fn link_preorder(tree: &mut [Node]) -> Result<(), String> {
    let unlinked = |n: &Node| matches!(n, Node::Split { left: UNLINKED, .. });
    let splits = tree.iter().filter(|n| matches!(n, Node::Split { .. })).count();
    match tree.iter().filter(|n| unlinked(n)).count() {
        0 => return Ok(()),
        u if u != splits => return Err("mixes splits that name their branches with splits that do not".into()),
        _ => {}
    }
    // Splits still waiting for a branch, innermost last.
    let mut open: Vec<usize> = vec![];
    for i in 0..tree.len() {
        match open.last() {
            Some(&at) => {
                let Node::Split { left, right, .. } = &mut tree[at] else { unreachable!("only splits are open") };
                if *left == UNLINKED {
                    *left = i;
                } else {
                    *right = i;
                    open.pop();
                }
            }
            None if i > 0 => return Err(format!("has {} node(s) after its last branch", tree.len() - i)),
            None => {}
        }
        if matches!(tree[i], Node::Split { .. }) {
            open.push(i);
        }
    }
    if open.is_empty() { Ok(()) } else { Err(format!("ends before {} split(s) have both branches", open.len())) }
}

/// What the predictor says for one shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Prediction<'a> {
    Config { config: &'a KernelConfig, support: usize, held: (usize, usize) },
    Declined(String),
}

#[derive(Debug, thiserror::Error)]
#[error("predictor line {line}: {message}")]
pub struct PredictorError {
    pub line: usize,
    pub message: String,
}

impl Predictor {
    /// The prediction for an m×n×k call of kind `op`.
    pub fn predict(&self, op: TorchOp, shape: (usize, usize, usize)) -> Prediction<'_> {
        // F.linear whose weight is a row or a column runs torch.addmm (the bias broadcast into
        // C): it is predicted as addmm, unless its own class is declined outright.
        let runs = if op == TorchOp::LinearBias && !linear_takes_epilogue(shape.1, shape.2) { TorchOp::Addmm } else { op };
        for op in [op, runs] {
            if let Some(why) = self.unpredicted.get(&(op, Degenerate::of(shape))) {
                return Prediction::Declined(why.clone());
            }
        }
        match self.trees.get(&runs).and_then(|trees| walk(trees, shape)) {
            Some(Walk::Agree { config, support, held }) => Prediction::Config { config: &self.configs[config], support, held },
            Some(Walk::Decline(reason)) => Prediction::Declined(reason.to_string()),
            Some(Walk::Disagree(a, b)) => Prediction::Declined(format!("the trees learned from different parts of the trace disagree here ({} against {})", self.configs[a], self.configs[b])),
            None => Prediction::Declined(format!("no {} calls were learned", runs.call())),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }

    /// Nodes over all trees.
    pub fn nodes(&self) -> usize {
        self.trees.values().flatten().map(Vec::len).sum()
    }

    pub fn parse(text: &str) -> Result<Predictor, PredictorError> {
        let mut p = Predictor::default();
        let mut ids: HashMap<String, usize> = HashMap::new();
        let mut reasons: HashMap<String, String> = HashMap::new();
        let mut current: Option<TorchOp> = None;
        for (no, line) in text.lines().enumerate() {
            let bad = |message: String| PredictorError { line: no + 1, message };
            if let Some(c) = line.strip_prefix('#') {
                p.provenance.push(c.trim().to_string());
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split('\t').collect();
            let num = |s: &str| s.parse::<usize>().map_err(|_| bad(format!("'{s}' is not a count")));
            let node = match (f[0], f.len()) {
                ("cfg", 3) => {
                    let config = KernelConfig::from_log(f[2]).map_err(|e| bad(e.to_string()))?;
                    ids.insert(f[1].to_string(), p.configs.len());
                    p.configs.push(config);
                    continue;
                }
                ("op", 2) => {
                    let op: TorchOp = f[1].parse().map_err(bad)?;
                    p.trees.entry(op).or_default().push(vec![]);
                    current = Some(op);
                    continue;
                }
                ("why", 3) => {
                    reasons.insert(f[1].to_string(), f[2].to_string());
                    continue;
                }
                // A split in pre-order (`s`) or naming its branches (`split`, earlier versions).
                ("s", 3) | ("split", 5) => {
                    let feature = Feature::parse(f[1]).ok_or_else(|| bad(format!("unknown feature '{}'", f[1])))?;
                    let threshold: f64 = f[2].parse().map_err(|_| bad(format!("threshold '{}' is not a number", f[2])))?;
                    if !threshold.is_finite() {
                        return Err(bad(format!("threshold {threshold} is not finite")));
                    }
                    let (left, right) = if f.len() == 5 { (num(f[3])?, num(f[4])?) } else { (UNLINKED, UNLINKED) };
                    Node::Split { feature, threshold, left, right }
                }
                ("leaf" | "l", 5) => {
                    let config = *ids.get(f[1]).ok_or_else(|| bad(format!("configuration '{}' is not defined above", f[1])))?;
                    Node::Leaf { config, support: num(f[2])?, held: (num(f[3])?, num(f[4])?) }
                }
                ("decline", 3) => Node::Decline { support: num(f[1])?, reason: f[2].to_string() },
                ("d", 3) => {
                    let reason = reasons.get(f[2]).ok_or_else(|| bad(format!("reason '{}' is not defined above", f[2])))?;
                    Node::Decline { support: num(f[1])?, reason: reason.clone() }
                }
                ("unpredicted", 4) => {
                    let op: TorchOp = f[1].parse().map_err(bad)?;
                    let class = Degenerate::parse(f[2]).ok_or_else(|| bad(format!("'{}' is not a class like m-- or -n-", f[2])))?;
                    p.unpredicted.insert((op, class), f[3].to_string());
                    continue;
                }
                _ => return Err(bad(format!("cannot read '{}'", line.chars().take(60).collect::<String>()))),
            };
            let op = current.ok_or_else(|| bad("a node before any `op` line".into()))?;
            p.trees.get_mut(&op).and_then(|t| t.last_mut()).expect("inserted at its op line").push(node);
        }
        // Every split points forward, inside its tree: a walk always ends at a leaf.
        for (op, tree) in p.trees.iter_mut().flat_map(|(op, trees)| trees.iter_mut().map(move |t| (op, t))) {
            if tree.is_empty() {
                return Err(PredictorError { line: 0, message: format!("the {op} tree has no nodes") });
            }
            link_preorder(tree).map_err(|message| PredictorError { line: 0, message: format!("the {op} tree {message}") })?;
            for (i, node) in tree.iter().enumerate() {
                if let Node::Split { left, right, .. } = node {
                    if *left <= i || *right <= i || *left >= tree.len() || *right >= tree.len() {
                        return Err(PredictorError { line: 0, message: format!("the {op} tree's node {i} points outside the nodes after it") });
                    }
                }
            }
        }
        Ok(p)
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for p in &self.provenance {
            let _ = writeln!(s, "# {p}");
        }
        for (i, c) in self.configs.iter().enumerate() {
            let _ = writeln!(s, "cfg\t{i}\t{}", c.to_log());
        }
        for ((op, class), why) in &self.unpredicted {
            let _ = writeln!(s, "unpredicted\t{op}\t{}\t{why}", class.name());
        }
        // Each reason once, numbered in the order the trees first use it.
        let mut why: HashMap<&str, usize> = HashMap::new();
        for node in self.trees.values().flatten().flatten() {
            if let Node::Decline { reason, .. } = node {
                if !why.contains_key(reason.as_str()) {
                    let _ = writeln!(s, "why\t{}\t{reason}", why.len());
                    why.insert(reason, why.len());
                }
            }
        }
        for (op, tree) in self.trees.iter().flat_map(|(op, trees)| trees.iter().map(move |t| (op, t))) {
            let _ = writeln!(s, "op\t{op}");
            let mut stack = vec![0];
            while let Some(at) = stack.pop() {
                let _ = match &tree[at] {
                    Node::Split { feature, threshold, left, right } => {
                        stack.extend([*right, *left]);
                        writeln!(s, "s\t{}\t{threshold}", feature.name())
                    }
                    Node::Leaf { config, support, held } => writeln!(s, "l\t{config}\t{support}\t{}\t{}", held.0, held.1),
                    Node::Decline { support, reason } => writeln!(s, "d\t{support}\t{}", why[reason.as_str()]),
                };
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# learned on a test\ncfg\t0\talgoId=66 tile=MATMUL_TILE_128x64\ncfg\t1\talgoId=24 tile=MATMUL_TILE_64x64 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=4\nop\tmm\nsplit\tk_per_mn\t2.5\t1\t2\nleaf\t0\t10\t3\t3\nsplit\tm\t1\t3\t4\ndecline\t4\tthree kernels here\nleaf\t1\t7\t2\t2\n";

    #[test]
    fn walks_to_a_leaf_and_round_trips() {
        let p = Predictor::parse(TEXT).unwrap();
        let Prediction::Config { config, .. } = p.predict(TorchOp::Mm, (64, 64, 64)) else { panic!() };
        assert_eq!(config.algo, 66);
        assert_eq!(p.predict(TorchOp::Mm, (1, 8, 4096)), Prediction::Declined("three kernels here".into()));
        let Prediction::Config { config, support, held } = p.predict(TorchOp::Mm, (2, 8, 4096)) else { panic!() };
        assert_eq!((config.split_k, support, held), (4, 7, (2, 2)));
        assert!(matches!(p.predict(TorchOp::Addmm, (2, 8, 4096)), Prediction::Declined(r) if r.contains("torch.addmm")));
        let again = Predictor::parse(&p.to_text()).unwrap();
        assert_eq!(again.trees, p.trees);
        assert_eq!(again.provenance, p.provenance);
    }

    #[test]
    fn pruning_keeps_every_answer() {
        let text = "cfg\t0\talgoId=66\nop\tmm\nsplit\tm\t8\t1\t6\nsplit\tn\t8\t2\t3\ndecline\t3\tfirst\nsplit\tk\t8\t4\t5\ndecline\t2\tsecond\ndecline\t1\tthird\nleaf\t0\t9\t1\t1\n";
        let p = Predictor::parse(text).unwrap();
        let tree = &p.trees[&TorchOp::Mm][0];
        let pruned = prune(tree);
        assert_eq!(pruned.len(), 3, "{pruned:?}");
        assert_eq!(pruned[1], Node::Decline { support: 6, reason: "first".into() });
        for m in [1, 8, 9, 100] {
            for n in [1, 9] {
                for k in [1, 9] {
                    let (a, b) = (&tree[leaf_of(tree, (m, n, k))], &pruned[leaf_of(&pruned, (m, n, k))]);
                    assert_eq!(matches!(a, Node::Leaf { .. }), matches!(b, Node::Leaf { .. }), "{m}x{n}x{k}");
                }
            }
        }
    }

    /// In either form: a split pointing backwards or past the tree, an unknown feature, a
    /// threshold that is not finite, an undefined configuration or reason, a node before any
    /// tree, a tree without nodes; in pre-order, a tree missing a branch or with nodes past it,
    /// and splits of both forms in one tree.
    #[test]
    fn a_damaged_file_is_an_error_not_a_loop() {
        let good = Predictor::parse(TEXT).unwrap().to_text();
        assert!(Predictor::parse(&good).is_ok());
        for bad in [
            good.replace("l\t1\t7\t2\t2\n", ""),
            good.replace("l\t1\t7\t2\t2\n", "l\t1\t7\t2\t2\nl\t1\t7\t2\t2\n"),
            good.replace("d\t4\t0", "d\t4\t3"),
            good.replace("s\tm\t1\n", "split\tm\t1\t3\t4\n"),
            good.replace("s\tm\t1\n", "s\tm\tinf\n"),
            TEXT.replace("split\tm\t1\t3\t4", "split\tm\t1\t0\t4"),
            TEXT.replace("split\tm\t1\t3\t4", "split\tm\t1\t3\t9"),
            TEXT.replace("k_per_mn", "q"),
            TEXT.replace("2.5", "NaN"),
            TEXT.replace("leaf\t1\t", "leaf\t7\t"),
            TEXT.replace("op\tmm\n", ""),
            format!("{TEXT}op\tmm\n"),
        ] {
            assert!(Predictor::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn writes_preorder_with_numbered_reasons_and_reads_both_forms() {
        let p = Predictor::parse(TEXT).unwrap();
        let text = p.to_text();
        assert!(text.contains("why\t0\tthree kernels here\n"), "{text}");
        assert!(text.contains("op\tmm\ns\tk_per_mn\t2.5\nl\t0\t10\t3\t3\ns\tm\t1\nd\t4\t0\nl\t1\t7\t2\t2\n"), "{text}");
        let again = Predictor::parse(&text).unwrap();
        assert_eq!(again.trees, p.trees, "pre-order links the branches the old form named");
        // A tree laid out otherwise (right branch first) is written in pre-order: same answers.
        let shuffled = "cfg\t0\talgoId=66\ncfg\t1\talgoId=55\nop\tmm\nsplit\tm\t8\t2\t1\nleaf\t1\t3\t0\t0\nleaf\t0\t4\t0\t0\n";
        let p = Predictor::parse(shuffled).unwrap();
        let again = Predictor::parse(&p.to_text()).unwrap();
        for m in [1, 8, 9, 100] {
            assert_eq!(again.predict(TorchOp::Mm, (m, 4, 4)), p.predict(TorchOp::Mm, (m, 4, 4)));
        }
    }

    #[test]
    fn trees_that_disagree_decline() {
        // A second mm tree: the same answer for small k, another configuration past k = 100.
        let p = Predictor::parse(&format!("{TEXT}op\tmm\nsplit\tk\t100\t1\t2\nleaf\t0\t5\t1\t1\nleaf\t1\t5\t1\t1\n")).unwrap();
        assert_eq!(p.trees[&TorchOp::Mm].len(), 2);
        let Prediction::Config { config, support, held } = p.predict(TorchOp::Mm, (64, 64, 64)) else { panic!() };
        assert_eq!((config.algo, support, held), (66, 5, (4, 4)));
        assert!(matches!(p.predict(TorchOp::Mm, (64, 64, 4096)), Prediction::Declined(r) if r.contains("disagree")));
        assert!(matches!(p.predict(TorchOp::Mm, (1, 8, 4096)), Prediction::Declined(r) if r == "three kernels here"));
        let again = Predictor::parse(&p.to_text()).unwrap();
        assert_eq!(again.trees, p.trees);
    }

    #[test]
    fn features_read_the_shape() {
        assert_eq!(Feature::Tiles32.of((33, 64, 1)), 4.0);
        assert_eq!(Feature::Tiles128x64.of((129, 64, 1)), 2.0);
        assert_eq!(Feature::Tiles64x128.of((129, 64, 1)), 3.0);
        assert_eq!(Feature::KPerTile64.of((128, 64, 4096)), 2048.0);
        assert_eq!(Feature::KPerTile256.of((256, 256, 4096)), 2048.0);
        assert_eq!((Feature::Mk.of((3, 5, 7)), Feature::Nk.of((3, 5, 7))), (21.0, 35.0));
        assert_eq!(Feature::KPerMn.of((2, 4, 64)), 8.0);
        assert_eq!(Feature::AlignK.of((1, 1, 4096)), 8.0);
        assert_eq!(Feature::AlignN.of((1, 24, 1)), 3.0);
        assert_eq!(Feature::Mnk.of((3, 5, 7)), 105.0);
        assert_eq!(Feature::Tiles128.of((129, 128, 7)), 2.0);
        assert_eq!(Feature::Tiles128x256.of((129, 257, 1)), 4.0);
        assert_eq!(Feature::KPerTile128.of((256, 256, 4096)), 1024.0);
    }

    #[test]
    fn an_unpredicted_class_declines_and_round_trips() {
        let text = format!("{TEXT}unpredicted\tmm\tm--\tcuBLAS runs its own GEMV rules here\n");
        let p = Predictor::parse(&text).unwrap();
        assert_eq!(p.predict(TorchOp::Mm, (1, 64, 64)), Prediction::Declined("cuBLAS runs its own GEMV rules here".into()));
        assert!(matches!(p.predict(TorchOp::Mm, (2, 64, 64)), Prediction::Config { .. }));
        assert!(matches!(p.predict(TorchOp::Mm, (1, 1, 2)), Prediction::Config { .. }), "mn- is another class");
        let again = Predictor::parse(&p.to_text()).unwrap();
        assert_eq!(again.unpredicted, p.unpredicted);
        assert!(Predictor::parse(&TEXT.replace("op\tmm\n", "unpredicted\tmm\tmx-\twhy\nop\tmm\n")).is_err());
    }
}
