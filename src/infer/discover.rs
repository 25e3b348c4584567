//! Discovery: active learning of a path's arithmetic. Starting from the whole knob space,
//! each round generates a pool of edge-biased tiles, keeps those on which a sample of the
//! surviving models disagree, runs them on the oracle (the GPU), and drops every model that
//! gets one of their elements wrong. Core knobs first (judged on plain elements), then the
//! special knobs, until no pool tile splits the survivors or the budget ends.

use super::observe::plain_element;
use super::space::{self, Axis, Point};
use crate::case::MmaCase;
use crate::exec::PathSpec;
use crate::hunt::{Side, SideError};
use crate::model::{Arithmetic, Emulator};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// Budget and sizes of a discovery run.
#[derive(Clone, Debug)]
pub struct DiscoverConfig {
    pub seed: u64,
    /// Candidate tiles generated per round.
    pub pool: usize,
    /// Tiles sent to the oracle per round (the most disputed of the pool).
    pub batch: usize,
    /// Models sampled to score the pool.
    pub sample: usize,
    pub max_tiles: usize,
    pub max_time: Duration,
}

/// One round, for progress output.
#[derive(Clone, Debug)]
pub struct Round {
    pub round: usize,
    pub stage: &'static str,
    pub tiles_run: usize,
    pub alive: usize,
}

/// The outcome.
pub struct Discovery {
    pub rounds: Vec<Round>,
    /// Every tile the oracle ran, with its D: the deciding cases.
    pub decided_by: Vec<(MmaCase, Vec<u64>)>,
    pub core_axes: Vec<Axis>,
    pub special_axes: Vec<Axis>,
    /// Surviving (core, special) points; empty when the data contradicts the whole space.
    pub survivors: Vec<(Point, Point)>,
    /// Surviving core points when the special stage was not reached or killed them all.
    pub core_survivors: Vec<Point>,
    pub best: Option<Arithmetic>,
    pub seconds: f64,
    /// Whether the run ended because no pool tile could split the survivors.
    pub converged: bool,
    /// Why it ended, in words.
    pub ending: &'static str,
}

/// Elements of `tiles` on which the sampled models do not all agree, per tile.
fn disputes(sample: &[Emulator], tiles: &[MmaCase]) -> Vec<usize> {
    tiles
        .par_iter()
        .map(|t| {
            let outs: Vec<Vec<u64>> = sample.iter().filter_map(|e| e.run(t).ok()).collect();
            let Some(first) = outs.first() else { return 0 };
            (0..first.len()).filter(|&i| outs.iter().any(|o| o[i] != first[i])).count()
        })
        .collect()
}

/// Whether `arith` reproduces every element of the recorded tiles (only the plain ones when
/// `plain_only`).
fn consistent(arith: &Arithmetic, recorded: &[(MmaCase, Vec<u64>)], plain: &[Vec<bool>], plain_only: bool) -> bool {
    let Some(e) = space::emulator(arith) else { return false };
    recorded.iter().zip(plain).all(|((t, d), mask)| match e.run(t) {
        Ok(got) => got.iter().zip(d).zip(mask).all(|((g, w), &p)| (plain_only && !p) || g == w),
        Err(_) => false,
    })
}

/// Run discovery for `path` against `oracle`, knobs outside the space from `base`.
pub fn discover(path: &PathSpec, oracle: &Side, base: &Arithmetic, cfg: &DiscoverConfig, mut progress: impl FnMut(&Round)) -> Result<Discovery, SideError> {
    let start = Instant::now();
    let core_axes = space::core_axes(path);
    let special_axes = space::special_axes(path);
    let at = |c: &Point, s: Option<&Point>| {
        let a = space::arithmetic_at(base, &core_axes, c)?;
        match s {
            Some(s) => space::arithmetic_at(&a, &special_axes, s),
            None => Some(a),
        }
    };
    let mut core_alive: Vec<Point> = space::points(&core_axes, path.k);
    let mut full_alive: Option<Vec<(Point, Point)>> = None;
    // The tiles the oracle ran with its D, and which of their elements are plain.
    let mut recorded: Vec<(MmaCase, Vec<u64>)> = Vec::new();
    let mut plain: Vec<Vec<bool>> = Vec::new();
    let (mut rounds, mut next_index, mut quiet_rounds, mut converged) = (Vec::new(), 0u64, 0, false);
    let mut ending = "budget spent";
    while recorded.len() < cfg.max_tiles && start.elapsed() < cfg.max_time {
        let stage = if full_alive.is_some() { "special knobs" } else { "core knobs" };
        // A spread sample of the survivors scores the pool.
        let sample: Vec<Emulator> = match &full_alive {
            None => spread(&core_alive, cfg.sample).iter().filter_map(|c| at(c, None).and_then(|a| space::emulator(&a))).collect(),
            Some(full) => spread(full, cfg.sample).iter().filter_map(|(c, s)| at(c, Some(s)).and_then(|a| space::emulator(&a))).collect(),
        };
        let pool: Vec<MmaCase> = (next_index..next_index + cfg.pool as u64).into_par_iter().map(|i| crate::gen::case_at(path, cfg.seed, i)).collect();
        next_index += cfg.pool as u64;
        let scores = disputes(&sample, &pool);
        let mut order: Vec<usize> = (0..pool.len()).filter(|&i| scores[i] > 0).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(scores[i]));
        order.truncate(cfg.batch.min(cfg.max_tiles - recorded.len()));
        if order.is_empty() {
            quiet_rounds += 1;
            if quiet_rounds < 2 {
                continue;
            }
            quiet_rounds = 0;
            if full_alive.is_none() {
                // The core survivors look alike on these inputs: cross them with the special knobs.
                let pairs: Vec<(Point, Point)> = core_alive.iter().flat_map(|c| space::points(&special_axes, path.k).into_iter().map(move |s| (c.clone(), s))).collect();
                let kept: Vec<(Point, Point)> = pairs.into_par_iter().filter(|(c, s)| at(c, Some(s)).is_some_and(|a| consistent(&a, &recorded, &plain, false))).collect();
                let empty = kept.is_empty();
                full_alive = Some(kept);
                if empty {
                    ending = "the GPU's results so far refute every combination of the special knobs";
                    break;
                }
                continue;
            }
            converged = true;
            ending = "no generated tile splits the survivors any more";
            break;
        }
        quiet_rounds = 0;
        let chosen: Vec<MmaCase> = order.iter().map(|&i| pool[i].clone()).collect();
        let d = oracle.execute(&chosen)?;
        let new: Vec<(MmaCase, Vec<u64>)> = chosen.into_iter().zip(d).collect();
        let new_plain: Vec<Vec<bool>> = new
            .iter()
            .map(|(t, d)| (0..t.m).flat_map(|i| (0..t.n).map(move |j| (i, j))).map(|(i, j)| plain_element(t, i, j, d[i * t.n + j])).collect())
            .collect();
        match &mut full_alive {
            None => core_alive = core_alive.into_par_iter().filter(|c| at(c, None).is_some_and(|a| consistent(&a, &new, &new_plain, true))).collect(),
            Some(full) => {
                let kept: Vec<(Point, Point)> = full.par_iter().filter(|(c, s)| at(c, Some(s)).is_some_and(|a| consistent(&a, &new, &new_plain, false))).cloned().collect();
                *full = kept;
            }
        }
        recorded.extend(new);
        plain.extend(new_plain);
        let alive = full_alive.as_ref().map_or(core_alive.len(), Vec::len);
        let r = Round { round: rounds.len() + 1, stage, tiles_run: recorded.len(), alive };
        progress(&r);
        rounds.push(r);
        if alive == 0 {
            ending = "the GPU's results refute every model";
            break;
        }
    }
    let survivors = full_alive.clone().unwrap_or_default();
    let best = survivors.first().and_then(|(c, s)| at(c, Some(s))).or_else(|| core_alive.first().and_then(|c| at(c, None)));
    Ok(Discovery { rounds, decided_by: recorded, core_axes, special_axes, survivors, core_survivors: core_alive, best, seconds: start.elapsed().as_secs_f64(), converged, ending })
}

/// Up to `n` items spread evenly over `items`.
fn spread<T: Clone>(items: &[T], n: usize) -> Vec<T> {
    if items.len() <= n {
        return items.to_vec();
    }
    (0..n).map(|i| items[i * items.len() / n].clone()).collect()
}

impl Discovery {
    /// Per knob, the values the survivors take.
    pub fn agreed(&self) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for (idx, axis) in self.core_axes.iter().enumerate() {
            let mut v: Vec<usize> = if self.survivors.is_empty() { self.core_survivors.iter().map(|c| c[idx]).collect() } else { self.survivors.iter().map(|(c, _)| c[idx]).collect() };
            v.sort();
            v.dedup();
            out.push((axis.path.to_string(), v.iter().map(|&i| axis.values[i].to_string()).collect()));
        }
        for (idx, axis) in self.special_axes.iter().enumerate() {
            let mut v: Vec<usize> = self.survivors.iter().map(|(_, s)| s[idx]).collect();
            v.sort();
            v.dedup();
            out.push((axis.path.to_string(), v.iter().map(|&i| axis.values[i].to_string()).collect()));
        }
        out
    }
}
