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
    /// How many of the survivors were never checked against the last tiles run (the budget
    /// ran out while checking them): they are the last survivors, after every checked one.
    pub unchecked: usize,
}

/// Elements of `tiles` on which the sampled models do not all agree, per tile; tiles not
/// reached by `deadline` score 0.
fn disputes(sample: &[Emulator], tiles: &[MmaCase], deadline: Instant) -> Vec<usize> {
    let mut scores = vec![0; tiles.len()];
    for (chunk, out) in tiles.chunks(256).zip(scores.chunks_mut(256)) {
        if Instant::now() >= deadline {
            break;
        }
        let got: Vec<usize> = chunk
            .par_iter()
            .map(|t| {
                let outs: Vec<Vec<u64>> = sample.iter().filter_map(|e| e.run(t).ok()).collect();
                let Some(first) = outs.first() else { return 0 };
                (0..first.len()).filter(|&i| outs.iter().any(|o| o[i] != first[i])).count()
            })
            .collect();
        out.copy_from_slice(&got);
    }
    scores
}

/// Whether `arith` reproduces every element of the recorded tiles (only the plain ones when
/// `plain_only`).
fn consistent(arith: &Arithmetic, recorded: &[(MmaCase, Vec<u64>)], plain: &[Vec<bool>], plain_only: bool) -> bool {
    let Some(e) = space::emulator(arith) else { return false };
    recorded.iter().zip(plain).all(|((t, d), mask)| e.agrees(t, d, |idx| !plain_only || mask[idx]).unwrap_or(false))
}

/// The items `keep` holds for, checked in parallel chunks until `deadline`; items not reached
/// by then are kept unchecked. Returns the kept items and how many of them went unchecked.
fn filter_until<T: Clone + Send + Sync>(items: &[T], deadline: Instant, keep: impl Fn(&T) -> bool + Sync) -> (Vec<T>, usize) {
    const CHUNK: usize = 2048;
    let mut out = Vec::new();
    for (n, chunk) in items.chunks(CHUNK).enumerate() {
        if Instant::now() >= deadline {
            let rest = &items[n * CHUNK..];
            out.extend_from_slice(rest);
            return (out, rest.len());
        }
        out.extend(chunk.par_iter().filter(|x| keep(x)).cloned().collect::<Vec<T>>());
    }
    (out, 0)
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
    let mut core_alive: Vec<Point> = space::points(&core_axes, path.terms());
    let mut full_alive: Option<Vec<(Point, Point)>> = None;
    // The tiles the oracle ran with its D, and which of their elements are plain.
    let mut recorded: Vec<(MmaCase, Vec<u64>)> = Vec::new();
    let mut plain: Vec<Vec<bool>> = Vec::new();
    let (mut rounds, mut next_index, mut quiet_rounds, mut converged) = (Vec::new(), 0u64, 0, false);
    // Rounds in a row whose tiles refuted no model: the sampled models disputed elements that
    // the core stage does not judge (NaN, infinities, subnormal results), so more of the same
    // cannot split the core survivors. The special stage can.
    let mut barren = 0;
    let mut ending = "budget spent";
    // Models kept without being checked against the last tiles, because time ran out.
    let mut unchecked = 0;
    let deadline = start + cfg.max_time;
    while recorded.len() < cfg.max_tiles && Instant::now() < deadline {
        let stage = if full_alive.is_some() { "special knobs" } else { "core knobs" };
        // A sample of the survivors, drawn afresh each round, scores the pool.
        let draw = cfg.seed ^ next_index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let sample: Vec<Emulator> = match &full_alive {
            None => sample_of(&core_alive, cfg.sample, draw).iter().filter_map(|c| at(c, None).and_then(|a| space::emulator(&a))).collect(),
            Some(full) => sample_of(full, cfg.sample, draw).iter().filter_map(|(c, s)| at(c, Some(s)).and_then(|a| space::emulator(&a))).collect(),
        };
        let pool: Vec<MmaCase> = (next_index..next_index + cfg.pool as u64).into_par_iter().map(|i| crate::gen::case_at(path, cfg.seed, i)).collect();
        next_index += cfg.pool as u64;
        let scores = disputes(&sample, &pool, deadline);
        if Instant::now() >= deadline {
            break;
        }
        let mut order: Vec<usize> = (0..pool.len()).filter(|&i| scores[i] > 0).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(scores[i]));
        order.truncate(cfg.batch.min(cfg.max_tiles - recorded.len()));
        if order.is_empty() || barren >= BARREN_ROUNDS {
            if barren < BARREN_ROUNDS {
                quiet_rounds += 1;
                if quiet_rounds < 2 {
                    continue;
                }
            }
            let stalled = barren >= BARREN_ROUNDS;
            quiet_rounds = 0;
            barren = 0;
            if full_alive.is_none() {
                // The core survivors look alike on these inputs: cross them with the special knobs.
                let pairs: Vec<(Point, Point)> = core_alive.iter().flat_map(|c| space::points(&special_axes, path.terms()).into_iter().map(move |s| (c.clone(), s))).collect();
                let (kept, left) = filter_until(&pairs, deadline, |(c, s)| at(c, Some(s)).is_some_and(|a| consistent(&a, &recorded, &plain, false)));
                let empty = kept.is_empty();
                full_alive = Some(kept);
                unchecked = left;
                if left > 0 {
                    ending = "budget spent while checking the special knobs against the tiles run";
                    break;
                }
                if empty {
                    ending = "the GPU's results so far refute every combination of the special knobs";
                    break;
                }
                continue;
            }
            converged = true;
            ending = if stalled { "the last rounds refuted no model" } else { "no generated tile splits the survivors any more" };
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
        let before = full_alive.as_ref().map_or(core_alive.len(), Vec::len);
        // Checked models come first in the survivors, so the best one is always checked.
        unchecked = match &mut full_alive {
            None => {
                let (kept, left) = filter_until(&core_alive, deadline, |c| at(c, None).is_some_and(|a| consistent(&a, &new, &new_plain, true)));
                core_alive = kept;
                left
            }
            Some(full) => {
                let (kept, left) = filter_until(full, deadline, |(c, s)| at(c, Some(s)).is_some_and(|a| consistent(&a, &new, &new_plain, false)));
                *full = kept;
                left
            }
        };
        recorded.extend(new);
        plain.extend(new_plain);
        let alive = full_alive.as_ref().map_or(core_alive.len(), Vec::len);
        barren = if alive == before { barren + 1 } else { 0 };
        let r = Round { round: rounds.len() + 1, stage, tiles_run: recorded.len(), alive };
        progress(&r);
        rounds.push(r);
        if unchecked > 0 {
            ending = "budget spent while checking the models against the last tiles";
            break;
        }
        if alive == 0 {
            ending = "the GPU's results refute every model";
            break;
        }
    }
    let survivors = full_alive.clone().unwrap_or_default();
    // The unchecked survivors are the last ones: the best is a checked one, or none.
    let (full_unchecked, core_unchecked) = if full_alive.is_some() { (unchecked, 0) } else { (0, unchecked) };
    // Of the checked survivors, the one nearest to the base: knobs no tile decided keep the
    // base's values (the measured model of the path, or of its nearest kin).
    let best = space::nearest_to(base, survivors[..survivors.len() - full_unchecked].iter().filter_map(|(c, s)| at(c, Some(s))))
        .or_else(|| space::nearest_to(base, core_alive[..core_alive.len() - core_unchecked].iter().filter_map(|c| at(c, None))));
    Ok(Discovery { rounds, decided_by: recorded, core_axes, special_axes, survivors, core_survivors: core_alive, best, seconds: start.elapsed().as_secs_f64(), converged, ending, unchecked })
}

/// Rounds in a row that refute nothing before discovery moves on (see `barren`).
const BARREN_ROUNDS: usize = 3;

/// Up to `n` of `items`, drawn at random (reproducibly, from `seed`), in their order. Not an
/// even spread: survivors are the product of the open knobs, in order, and a fixed stride can
/// alias with it and leave a knob's other values out of every sample (it did: a stride of 108
/// over 576 special combinations only ever held `nan = "canonical"` and `zero_sign = "ieee"`,
/// so discovery stopped with both open, as if no tile could split them).
fn sample_of<T: Clone>(items: &[T], n: usize, seed: u64) -> Vec<T> {
    use rand::SeedableRng;
    if items.len() <= n {
        return items.to_vec();
    }
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut idx = rand::seq::index::sample(&mut rng, items.len(), n).into_vec();
    idx.sort_unstable();
    idx.into_iter().map(|i| items[i].clone()).collect()
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

#[cfg(test)]
mod tests {
    use super::sample_of;

    #[test]
    fn samples_are_reproducible_and_do_not_alias_a_period() {
        // 3,456 combinations whose value repeats every 9: an even stride of 6 (576 picks)
        // would meet only values 0, 6 and 3. A sample must meet every value, and the same
        // seed must give the same sample.
        let items: Vec<usize> = (0..3456).map(|i| i % 9).collect();
        let s = sample_of(&items, 576, 7);
        assert_eq!(s.len(), 576);
        let mut seen: Vec<usize> = s.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, (0..9).collect::<Vec<_>>());
        assert_eq!(s, sample_of(&items, 576, 7));
        assert_ne!(s, sample_of(&items, 576, 8));
        assert_eq!(sample_of(&items[..10], 576, 7), items[..10].to_vec());
    }
}
