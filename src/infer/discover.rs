//! Discovery: active learning of a path's arithmetic. Starting from the whole knob space,
//! each round generates a pool of edge-biased tiles, keeps those on which a sample of the
//! surviving models disagree, runs them on the oracle (the GPU), and drops every model that
//! gets one of their elements wrong. Core knobs first (judged on plain elements), then the
//! special knobs, until no pool tile splits the survivors or the budget ends.

use super::observe::{element_case, plain_element};
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
    /// Core models alive above which a round screens them on disputed elements alone.
    pub screen_above: usize,
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

/// Per tile of `tiles`, the elements on which the sampled models do not all agree; tiles not
/// reached by `deadline` have none.
fn disputes(sample: &[Emulator], tiles: &[MmaCase], deadline: Instant) -> Vec<Vec<usize>> {
    let mut disputed = vec![Vec::new(); tiles.len()];
    for (chunk, out) in tiles.chunks(256).zip(disputed.chunks_mut(256)) {
        if Instant::now() >= deadline {
            break;
        }
        let got: Vec<Vec<usize>> = chunk
            .par_iter()
            .map(|t| {
                let outs: Vec<Vec<u64>> = sample.iter().filter_map(|e| e.run(t).ok()).collect();
                let Some(first) = outs.first() else { return Vec::new() };
                (0..first.len()).filter(|&i| outs.iter().any(|o| o[i] != first[i])).collect()
            })
            .collect();
        out.clone_from_slice(&got);
    }
    disputed
}

/// What a model must reproduce to survive a round: the tiles run (only their plain elements in
/// the core stage) and the sentinels (single disputed elements, see `sentinels`), checked in
/// an order that refutes wrong models soonest. Which order that is depends on the path: on
/// 16x8 tiles nearly every wrong model fails the first tile within a few lanes; on 64x8 tiles
/// of FP4/FP6 into f16 most pass whole tiles, and a model that checks tile after tile costs
/// hundreds of dot products before it fails, where a sentinel costs one.
struct Checks<'a> {
    run: &'a [(MmaCase, Vec<u64>)],
    plain: &'a [Vec<bool>],
    plain_only: bool,
    sentinels: &'a [(MmaCase, Vec<u64>)],
    /// Check indices, tiles first (`0..run.len()`), then sentinels.
    order: Vec<usize>,
}

impl<'a> Checks<'a> {
    fn new(run: &'a [(MmaCase, Vec<u64>)], plain: &'a [Vec<bool>], plain_only: bool, sentinels: &'a [(MmaCase, Vec<u64>)]) -> Checks<'a> {
        Checks { run, plain, plain_only, sentinels, order: (0..run.len() + sentinels.len()).collect() }
    }

    fn passes_one(&self, e: &Emulator, check: usize) -> bool {
        match self.run.get(check) {
            Some((t, d)) => e.agrees(t, d, |idx| !self.plain_only || self.plain[check][idx]).unwrap_or(false),
            None => {
                let (t, d) = &self.sentinels[check - self.run.len()];
                e.agrees(t, d, |_| true).unwrap_or(false)
            }
        }
    }

    /// Whether `arith` passes every check.
    fn passes(&self, arith: &Arithmetic) -> bool {
        space::emulator(arith).is_some_and(|e| self.order.iter().all(|&c| self.passes_one(&e, c)))
    }

    /// These checks ordered for checking `items` (models, as `model_of` builds them): by a
    /// sample of them (`calibrate`) when there are many; with few, calibrating would check
    /// most of them twice, so the order stays.
    fn ordered_for<T: Clone>(mut self, items: &[T], seed: u64, model_of: impl Fn(&T) -> Option<Arithmetic>) -> Self {
        if items.len() > 4 * CALIBRATION {
            let sample: Vec<Emulator> = sample_of(items, CALIBRATION, seed).iter().filter_map(|x| model_of(x).and_then(|a| space::emulator(&a))).collect();
            self.calibrate(&sample);
        }
        self
    }

    /// Order the checks from a sample of the models to be checked: every sampled model runs
    /// every check (timed), then greedily the check that refutes the most still-standing
    /// sampled models per second goes next, until none stands; the other checks follow.
    fn calibrate(&mut self, sample: &[Emulator]) {
        let n = self.order.len();
        let runs: Vec<Vec<(bool, f64)>> = sample
            .par_iter()
            .map(|e| {
                (0..n)
                    .map(|c| {
                        let t = Instant::now();
                        let ok = self.passes_one(e, c);
                        (ok, t.elapsed().as_secs_f64())
                    })
                    .collect()
            })
            .collect();
        if runs.is_empty() {
            return;
        }
        let cost: Vec<f64> = (0..n).map(|c| runs.iter().map(|r| r[c].1).sum::<f64>() / runs.len() as f64 + 1e-9).collect();
        let mut standing: Vec<bool> = vec![true; runs.len()];
        let (mut order, mut used) = (Vec::new(), vec![false; n]);
        loop {
            let refutes = |c: usize| runs.iter().zip(&standing).filter(|(r, &s)| s && !r[c].0).count();
            let best = (0..n).filter(|&c| !used[c]).map(|c| (c, refutes(c))).filter(|&(_, k)| k > 0).max_by(|x, y| (x.1 as f64 / cost[x.0]).total_cmp(&(y.1 as f64 / cost[y.0])));
            let Some((c, _)) = best else { break };
            used[c] = true;
            order.push(c);
            standing.iter_mut().zip(&runs).for_each(|(s, r)| *s &= r[c].0);
        }
        // The rest, for models unlike every sampled one: those that refuted the most sampled
        // models per second first, then the cheapest (sentinels before whole tiles).
        let kills: Vec<usize> = (0..n).map(|c| runs.iter().filter(|r| !r[c].0).count()).collect();
        let mut rest: Vec<usize> = (0..n).filter(|&c| !used[c]).collect();
        rest.sort_by(|&x, &y| (kills[y] as f64 / cost[y]).total_cmp(&(kills[x] as f64 / cost[x])).then(cost[x].total_cmp(&cost[y])));
        order.extend(rest);
        self.order = order;
    }
}

/// Up to `per_tile` of the disputed elements of each tile run (the plain ones only when
/// `plain_only`, spread over the tile), each as a 1×1×k case with the oracle's D. Checking a
/// model against these first costs a few dot products; a whole 64×8 tile costs 512.
fn sentinels(run: &[(MmaCase, Vec<u64>)], plain: &[Vec<bool>], disputed: &[Vec<usize>], plain_only: bool, per_tile: usize) -> Vec<(MmaCase, Vec<u64>)> {
    let mut out = Vec::new();
    for (((t, d), mask), idx) in run.iter().zip(plain).zip(disputed) {
        let idx: Vec<usize> = idx.iter().copied().filter(|&i| !plain_only || mask[i]).collect();
        let step = idx.len().div_ceil(per_tile).max(1);
        out.extend(idx.into_iter().step_by(step).map(|i| (element_case(t, i / t.n, i % t.n), vec![d[i]])));
    }
    out
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
    // Every round's sentinels: the special stage's first check runs against all tiles so far.
    let mut all_sentinels: Vec<(MmaCase, Vec<u64>)> = Vec::new();
    let (mut rounds, mut next_index, mut quiet_rounds, mut converged) = (Vec::new(), 0u64, 0, false);
    // Rounds in a row whose tiles refuted no model: the sampled models disputed elements that
    // the core stage does not judge (NaN, infinities, subnormal results), so more of the same
    // cannot split the core survivors. The special stage can.
    let mut barren = 0;
    let mut ending = "budget spent";
    // Models kept without being checked against the last tiles, because time ran out.
    let mut unchecked = 0;
    // Core survivors screened on sentinels only, not yet checked against whole tiles.
    let mut screened = false;
    let deadline = start + cfg.max_time;
    while recorded.len() < cfg.max_tiles && Instant::now() < deadline {
        let stage = if full_alive.is_some() { "special knobs" } else { "core knobs" };
        // A sample of the survivors, drawn afresh each round, scores the pool.
        let draw = cfg.seed ^ next_index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let sample: Vec<Emulator> = match &full_alive {
            None => sample_of(&core_alive, cfg.sample, draw).iter().filter_map(|c| at(c, None).and_then(|a| space::emulator(&a))).collect(),
            Some(full) => sample_of(full, cfg.sample, draw).iter().filter_map(|(c, s)| at(c, Some(s)).and_then(|a| space::emulator(&a))).collect(),
        };
        let core_stage = full_alive.is_none();
        let pool: Vec<MmaCase> = (next_index..next_index + cfg.pool as u64)
            .into_par_iter()
            .map(|i| crate::gen::case_at(path, cfg.seed, i))
            .map(|t| if core_stage { normal_inputs(t) } else { t })
            .collect();
        next_index += cfg.pool as u64;
        let disputed = disputes(&sample, &pool, deadline);
        if Instant::now() >= deadline {
            break;
        }
        let mut order: Vec<usize> = (0..pool.len()).filter(|&i| !disputed[i].is_empty()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(disputed[i].len()));
        // Every surviving model is checked against every tile of the round, so with many alive
        // a round runs fewer tiles (the most disputed): they refute most models at a fraction
        // of the cost, and the next round, with fewer alive, runs more.
        let alive_now = full_alive.as_ref().map_or(core_alive.len(), Vec::len).max(1);
        let batch = (cfg.batch * SURVIVOR_WORK / alive_now).clamp(MIN_BATCH.min(cfg.batch), cfg.batch);
        order.truncate(batch.min(cfg.max_tiles - recorded.len()));
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
                let checks = Checks::new(&recorded, &plain, false, &all_sentinels).ordered_for(&pairs, draw, |(c, s)| at(c, Some(s)));
                let (kept, left) = filter_until(&pairs, deadline, |(c, s)| at(c, Some(s)).is_some_and(|a| checks.passes(&a)));
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
        let chosen_disputed: Vec<Vec<usize>> = order.iter().map(|&i| disputed[i].clone()).collect();
        // With very many alive (FP6 x FP6 into f16: over a million after the first tiles, most
        // of them off the lane kernel), checking each against whole tiles costs more than the
        // budget: screen them on more disputed elements alone, and check the survivors against
        // whole tiles once few are left (below) or before the special stage (which checks
        // every pair against every tile).
        let screen = full_alive.is_none() && core_alive.len() > cfg.screen_above;
        let per_tile = if screen { SCREEN_PER_TILE } else { SENTINELS_PER_TILE };
        let round_sentinels = sentinels(&new, &new_plain, &chosen_disputed, full_alive.is_none(), per_tile);
        let before = full_alive.as_ref().map_or(core_alive.len(), Vec::len);
        // Checked models come first in the survivors, so the best one is always checked.
        unchecked = match &mut full_alive {
            None => {
                // Screening leaves the whole tiles out.
                screened |= screen;
                let (tiles, tiles_plain) = if screen { (&new[..0], &new_plain[..0]) } else { (&new[..], &new_plain[..]) };
                let checks = Checks::new(tiles, tiles_plain, true, &round_sentinels).ordered_for(&core_alive, draw, |c| at(c, None));
                let (kept, left) = filter_until(&core_alive, deadline, |c| at(c, None).is_some_and(|a| checks.passes(&a)));
                core_alive = kept;
                left
            }
            Some(full) => {
                let checks = Checks::new(&new, &new_plain, false, &round_sentinels).ordered_for(full, draw, |(c, s)| at(c, Some(s)));
                let (kept, left) = filter_until(full, deadline, |(c, s)| at(c, Some(s)).is_some_and(|a| checks.passes(&a)));
                *full = kept;
                left
            }
        };
        recorded.extend(new);
        plain.extend(new_plain);
        all_sentinels.extend(round_sentinels);
        if screened && unchecked == 0 && full_alive.is_none() && core_alive.len() <= cfg.screen_above {
            // The screened survivors against every whole tile so far.
            let checks = Checks::new(&recorded, &plain, true, &all_sentinels).ordered_for(&core_alive, draw, |c| at(c, None));
            let (kept, left) = filter_until(&core_alive, deadline, |c| at(c, None).is_some_and(|a| checks.passes(&a)));
            core_alive = kept;
            unchecked = left;
            screened = left > 0;
        }
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
    if screened && full_alive.is_none() {
        // Screened only: check the survivors nearest to the base against every whole tile, in
        // that order, for a short while, so the written model is one that passes them all.
        let mut by_distance: Vec<(usize, Point)> = core_alive[..core_alive.len() - unchecked].iter().filter_map(|c| at(c, None).map(|a| (space::distance(&a, base), c.clone()))).collect();
        by_distance.sort_by_key(|(d, _)| *d);
        let checks = Checks::new(&recorded, &plain, true, &[]);
        let until = Instant::now() + SCREEN_FINAL_CHECK;
        let first = by_distance.iter().take_while(|_| Instant::now() < until).find(|(_, c)| at(c, None).is_some_and(|a| checks.passes(&a))).map(|(_, c)| c.clone());
        // Only that one is known to pass every tile: it goes first, the rest count as unchecked.
        if let Some(i) = first.as_ref().and_then(|c| core_alive.iter().position(|x| x == c)) {
            core_alive[..=i].rotate_right(1);
        }
        unchecked = core_alive.len() - first.is_some() as usize;
        if ending.starts_with("budget") {
            ending = "budget spent while screening the models (the written model passes every tile run)";
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

/// `tile` with every subnormal input (A, B and C) raised to the smallest normal of its sign.
/// The core stage judges only elements whose inputs are normal or zero (`plain_element`); the
/// generators' edge-biased tiles hold subnormals often enough that with FP4 or FP6 operands
/// (one pattern in eight or more is subnormal) hardly an element of a 32-deep dot product is
/// plain, and the core stage could refute nothing. Its pool is drawn through this instead.
fn normal_inputs(mut tile: MmaCase) -> MmaCase {
    fn raise(f: crate::Format, x: &mut u64) {
        let v = f.decode(*x);
        if v.class == crate::format::Class::Finite && !f.is_integer() && v.sig >> (f.precision() - 1) == 0 {
            if let Some(min_normal) = f.encode_exact(v.neg, 1, f.emin()) {
                *x = min_normal;
            }
        }
    }
    let (a_fmt, b_fmt, c_fmt) = (tile.a_fmt, tile.b_fmt, tile.c_fmt);
    tile.a.iter_mut().for_each(|x| raise(a_fmt, x));
    tile.b.iter_mut().for_each(|x| raise(b_fmt, x));
    tile.c.iter_mut().for_each(|x| raise(c_fmt, x));
    tile
}

/// A round runs `batch * SURVIVOR_WORK / alive` tiles (at least `MIN_BATCH`, at most `batch`).
const SURVIVOR_WORK: usize = 8192;
/// Disputed elements per tile a model is checked on: when checked whole tiles follow, and when
/// screening.
const SENTINELS_PER_TILE: usize = 4;
const SCREEN_PER_TILE: usize = 32;
/// At the end of a screened discovery, the most time spent finding the nearest survivor that
/// passes every whole tile.
const SCREEN_FINAL_CHECK: Duration = Duration::from_secs(20);
const MIN_BATCH: usize = 8;

/// Models sampled to order a round's checks (`Checks::calibrate`).
const CALIBRATION: usize = 48;

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
    use super::{normal_inputs, sample_of};
    use crate::{Format, MmaCase};

    #[test]
    fn checks_that_refute_go_first() {
        // Recorded: a tile on which a wrong model (h100 with its accumulator's rounding changed) agrees with the
        // truth (h100: A and B zero, D = C), then one on which it does not, and one sentinel of the latter. After
        // calibrating on the wrong model the refuting checks lead and the useless tile is last;
        // the truth passes, the wrong model does not.
        let path = crate::exec::paths::path_by_id("mma.m16n8k16.f32.f16.f16.f32").unwrap();
        let truth = crate::Model::load("h100").unwrap();
        let arith = truth.arithmetic(Format::F16).clone();
        let wrong_arith = {
            let mut w = arith.clone();
            w.accumulator.rounding = if w.accumulator.rounding == crate::Rounding::Rz { crate::Rounding::Rne } else { crate::Rounding::Rz };
            w
        };
        let (t, w) = (crate::Emulator::new(truth.clone()), super::space::emulator(&wrong_arith).unwrap());
        let tiles: Vec<MmaCase> = (0..4000).map(|i| crate::gen::case_at(path, 5, i)).collect();
        let mut same = tiles[0].clone();
        (same.a.fill(0), same.b.fill(0));
        assert_eq!(t.run(&same).unwrap(), w.run(&same).unwrap());
        let differ = tiles.iter().find(|c| t.run(c).unwrap() != w.run(c).unwrap()).unwrap().clone();
        let run: Vec<(MmaCase, Vec<u64>)> = [same, differ].into_iter().map(|c| { let d = t.run(&c).unwrap(); (c, d) }).collect();
        let plain: Vec<Vec<bool>> = run.iter().map(|(c, _)| vec![true; c.m * c.n]).collect();
        let bad: Vec<usize> = (0..run[1].1.len()).filter(|&i| w.run(&run[1].0).unwrap()[i] != run[1].1[i]).collect();
        let sentinels = super::sentinels(&run[1..], &plain[1..], &[bad], false, super::SENTINELS_PER_TILE);
        assert!(!sentinels.is_empty());
        let mut checks = super::Checks::new(&run, &plain, false, &sentinels);
        assert_eq!(checks.order[0], 0);
        checks.calibrate(&[w]);
        assert_ne!(checks.order[0], 0, "{:?}", checks.order);
        assert_eq!(*checks.order.last().unwrap(), 0, "{:?}", checks.order);
        assert!(checks.passes(&arith));
        assert!(!checks.passes(&wrong_arith));
    }

    #[test]
    fn the_core_pool_has_no_subnormal_input() {
        // FP4 0.5 (0x1) and -0.5 (0x9) are its subnormals: they become 1.0 (0x2) and -1.0 (0xa);
        // f16's 0x0001 and 0x8001 become its smallest normals. Zeros and normals stay.
        let mut t = MmaCase::zeros(Format::E2m1, Format::F16, 1, 1, 4);
        t.b_fmt = Format::E2m1;
        t.a = vec![0x1, 0x9, 0x0, 0x7];
        t.b = vec![0x8, 0x3, 0x1, 0xf];
        t.c = vec![0x8001];
        let u = normal_inputs(t.clone());
        assert_eq!(u.a, vec![0x2, 0xa, 0x0, 0x7]);
        assert_eq!(u.b, vec![0x8, 0x3, 0x2, 0xf]);
        assert_eq!(u.c, vec![0x8400]);
        t.c = vec![0x0001];
        assert_eq!(normal_inputs(t).c, vec![0x0400]);
    }

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
