//! A predictor checked against GEMMs that PyTorch ran on the GPU: where cuBLASLt's heuristic
//! (what most predictors are learned from) and the calls that run differ, the real calls win.
//!
//! Every traced call is walked through its call kind's trees. A leaf that answers a traced call
//! with another schedule than the logged kernel's declines from then on (the shapes near it are
//! not what the learning data said), unless distinct traced calls confirmed it more than
//! [`RIGHT_PER_WRONG`] times per contradicting one; every traced shape the predictor does not then get
//! right joins the kernel table with its logged kernel, so that a traced shape keeps its traced
//! answer. A shape traced twice with kernels of different schedules is left out of the table.

use super::config::KernelConfig;
use super::fit::{plan_of, Traced};
use super::gemm::linear_takes_epilogue;
use super::op::TorchOp;
use super::predict::{leaf_of, prune, walk, Degenerate, Node, Predictor, Walk};
use super::schedule::ScheduleRules;
use super::table::ConfigTable;
use std::collections::{BTreeMap, BTreeSet};

/// A leaf that traced calls contradict keeps answering only where more than this many distinct
/// traced calls confirmed it per contradicting one (a large leaf of an old predictor, right on
/// hundreds of real calls, stays).
pub const RIGHT_PER_WRONG: usize = 300;

/// Whether a leaf that `right` shapes confirmed and `wrong` contradicted is contradicted too
/// often to keep answering (fewer than [`RIGHT_PER_WRONG`] confirmations per contradiction).
pub fn too_often_contradicted(right: usize, wrong: usize) -> bool {
    wrong > 0 && right < RIGHT_PER_WRONG * wrong
}

/// What calibration did to one path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Calibrated {
    /// Traced calls read, and those whose logged kernel the model runs.
    pub calls: usize,
    pub modelled: usize,
    /// Before calibration: traced calls the predictor answered rightly and wrongly.
    pub right_before: usize,
    pub wrong_before: usize,
    /// Leaves that now decline.
    pub leaves_declined: usize,
    /// Shapes added to the table, and shapes traced with kernels of different schedules.
    pub table_added: usize,
    pub conflicting: usize,
}

/// The call kind whose trees answer `op` at `shape` (F.linear with a row or column weight runs
/// addmm), as [`Predictor::predict`] asks them.
fn answering(op: TorchOp, (_, n, k): (usize, usize, usize)) -> TorchOp {
    if op == TorchOp::LinearBias && !linear_takes_epilogue(n, k) {
        TorchOp::Addmm
    } else {
        op
    }
}

/// Calibrate `predictor` and `table` against `calls` (call kind, shape and logged kernel of
/// GEMMs PyTorch ran on the GPU the predictor is for); `traced_on` names the traces in the
/// decline reasons.
pub fn calibrate(
    rules: &ScheduleRules,
    predictor: &mut Predictor,
    table: &mut ConfigTable,
    calls: &[(TorchOp, Traced)],
    traced_on: &str,
) -> Calibrated {
    let mut stats = Calibrated {
        calls: calls.len(),
        ..Calibrated::default()
    };
    // Per answering call kind, tree and leaf: the distinct traced calls it answered with the
    // logged kernel's schedule and with another.
    let mut contradicted: BTreeMap<(TorchOp, usize, usize), (usize, usize)> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    // Per (call, shape): the traced plans, to find shapes traced with different schedules.
    let mut kernels: BTreeMap<(TorchOp, (usize, usize, usize)), Vec<usize>> = BTreeMap::new();
    let mut truths = Vec::with_capacity(calls.len());
    for (i, (op, t)) in calls.iter().enumerate() {
        let Ok(truth) = plan_of(rules, *op, t.shape, &t.config) else {
            truths.push(None);
            continue;
        };
        stats.modelled += 1;
        kernels.entry((*op, t.shape)).or_default().push(i);
        let runs = answering(*op, t.shape);
        let declined_class = [*op, runs].iter().any(|o| {
            predictor
                .unpredicted
                .contains_key(&(*o, Degenerate::of(t.shape)))
        });
        if let (false, Some(trees)) = (declined_class, predictor.trees.get(&runs)) {
            let right_with = |config: usize| {
                plan_of(rules, *op, t.shape, &predictor.configs[config]).is_ok_and(|p| p == truth)
            };
            if let Some(Walk::Agree { config, .. }) = walk(trees, t.shape) {
                if right_with(config) {
                    stats.right_before += 1;
                } else {
                    stats.wrong_before += 1;
                }
            }
            for (j, tree) in trees.iter().enumerate() {
                let leaf = leaf_of(tree, t.shape);
                if let Node::Leaf { config, .. } = tree[leaf] {
                    if seen.insert((*op, t.shape, j)) {
                        let e = contradicted.entry((runs, j, leaf)).or_default();
                        if right_with(config) {
                            e.0 += 1
                        } else {
                            e.1 += 1
                        }
                    }
                }
            }
        }
        truths.push(Some(truth));
    }
    for ((op, j, leaf), (right, n)) in &contradicted {
        if !too_often_contradicted(*right, *n) {
            continue;
        }
        let tree = &mut predictor.trees.get_mut(op).expect("walked above")[*j];
        if let Node::Leaf { support, .. } = tree[*leaf] {
            let reason = format!("{n} GEMM(s) PyTorch ran near this shape ({traced_on}) ran another kernel than the one learned here");
            tree[*leaf] = Node::Decline { support, reason };
            stats.leaves_declined += 1;
        }
    }
    for trees in predictor.trees.values_mut() {
        for tree in trees.iter_mut() {
            *tree = prune(tree);
        }
    }
    // The traced shapes the calibrated model does not get right join the table (one schedule only).
    for ((op, shape), at) in &kernels {
        let first = truths[at[0]].as_ref().expect("modelled");
        if at.iter().any(|&i| truths[i].as_ref() != Some(first)) {
            stats.conflicting += 1;
            continue;
        }
        let config: &KernelConfig = &calls[at[0]].1.config;
        if table.get(shape.0, shape.1, shape.2, *op).is_some() {
            continue;
        }
        let runs = answering(*op, *shape);
        let right = predictor.trees.get(&runs).and_then(|trees| walk(trees, *shape)).is_some_and(|w| {
            matches!(w, Walk::Agree { config: c, .. } if plan_of(rules, *op, *shape, &predictor.configs[c]).is_ok_and(|p| p == *first))
        });
        if !right {
            table.insert(shape.0, shape.1, shape.2, *op, config.clone());
            stats.table_added += 1;
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> ScheduleRules {
        let m = crate::model::Model::load("h100:cublas.gemm.f32.f16.f16.f32").unwrap();
        ScheduleRules::from_table(m.schedule.as_ref().unwrap()).unwrap()
    }

    fn cfg(s: &str) -> KernelConfig {
        KernelConfig::from_log(s).unwrap()
    }

    /// One tree, split at k = 4096: unsplit below, split-K 2 above. A traced call above the
    /// split that ran unsplit makes that leaf decline and joins the table; one the tree gets
    /// right changes nothing.
    #[test]
    fn a_contradicted_leaf_declines_and_the_shape_joins_the_table() {
        let r = rules();
        let whole =
            cfg("algoId=66 tile=MATMUL_TILE_128x64 stages=MATMUL_STAGES_64xAUTO customOption=3");
        let split = cfg("algoId=66 tile=MATMUL_TILE_64x64 stages=MATMUL_STAGES_64xAUTO reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=2 customOption=3");
        let tree = vec![
            Node::Split {
                feature: super::super::predict::Feature::K,
                threshold: 4096.0,
                left: 1,
                right: 2,
            },
            Node::Leaf {
                config: 0,
                support: 50,
                held: (9, 9),
            },
            Node::Leaf {
                config: 1,
                support: 50,
                held: (9, 9),
            },
        ];
        let mut p = Predictor {
            configs: vec![whole.clone(), split.clone()],
            ..Predictor::default()
        };
        p.trees.insert(TorchOp::Mm, vec![tree]);
        let mut table = ConfigTable::default();
        let calls = vec![
            (
                TorchOp::Mm,
                Traced {
                    shape: (64, 64, 1024),
                    config: whole.clone(),
                },
            ),
            (
                TorchOp::Mm,
                Traced {
                    shape: (64, 64, 8192),
                    config: whole.clone(),
                },
            ),
        ];
        let s = calibrate(&r, &mut p, &mut table, &calls, "test trace");
        assert_eq!(
            (
                s.calls,
                s.modelled,
                s.right_before,
                s.wrong_before,
                s.leaves_declined,
                s.table_added
            ),
            (2, 2, 1, 1, 1, 1)
        );
        assert!(
            matches!(p.predict(TorchOp::Mm, (64, 64, 9000)), super::super::predict::Prediction::Declined(r) if r.contains("test trace"))
        );
        assert!(matches!(
            p.predict(TorchOp::Mm, (64, 64, 512)),
            super::super::predict::Prediction::Config { .. }
        ));
        assert_eq!(table.get(64, 64, 8192, TorchOp::Mm), Some(&whole));
        assert_eq!(
            table.get(64, 64, 1024, TorchOp::Mm),
            None,
            "a shape the predictor gets right stays out of the table"
        );
    }

    /// A shape traced twice with kernels of different schedules joins no table.
    #[test]
    fn a_shape_traced_with_two_schedules_is_left_out() {
        let r = rules();
        let whole =
            cfg("algoId=66 tile=MATMUL_TILE_128x64 stages=MATMUL_STAGES_64xAUTO customOption=3");
        let split = cfg("algoId=66 tile=MATMUL_TILE_64x64 stages=MATMUL_STAGES_64xAUTO reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=2 customOption=3");
        let mut p = Predictor::default();
        let mut table = ConfigTable::default();
        let calls = vec![
            (
                TorchOp::Mm,
                Traced {
                    shape: (64, 64, 8192),
                    config: whole,
                },
            ),
            (
                TorchOp::Mm,
                Traced {
                    shape: (64, 64, 8192),
                    config: split,
                },
            ),
        ];
        let s = calibrate(&r, &mut p, &mut table, &calls, "test trace");
        assert_eq!((s.conflicting, s.table_added), (1, 0));
        assert!(table.is_empty());
    }
}
