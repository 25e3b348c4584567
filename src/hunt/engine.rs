//! Hunting with the GPU engine (`hunt --engine gpu`): each launch generates, runs, models and
//! compares millions of tiles on the GPU ([`crate::engine`]); the CPU regenerates the tiles it
//! flagged and a small sample of the others, runs them on both sides again, and does what every
//! hunt does with them: counts and classifies the divergences, minimises the first of each
//! class into findings, checks the sample against the exact value and for monotonicity, and
//! records the sample's arithmetic features.

use super::launches::{in_order, Windows};
use super::{Hunt, HuntError, HuntState};
use crate::case::MmaCase;
use crate::engine::{gen, GpuEngine, LaunchResult};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Divergent tiles whose numbers one launch sends back (the rest are only counted).
pub const LISTED_PER_LAUNCH: u32 = 4096;
/// Tiles per launch compared with the exact value (and whose features are recorded).
pub const SAMPLED_PER_LAUNCH: u64 = 256;

impl Hunt<'_> {
    /// Run the hunt on the GPU engine until its tile or time budget is spent or `stop` is set
    /// (or, with `stop_at_first`, a launch diverges). Side A must be the GPUs the engines run on
    /// (one engine each), side B the model they compute. The launches are spread over the
    /// engines and settled in order ([`Hunt::run_launches`]).
    pub fn run_engine(&mut self, engines: &[GpuEngine], stop: &AtomicBool, progress: impl FnMut(&HuntState)) -> Result<(), HuntError> {
        let (seed, shard) = (self.state.seed, self.cfg.shard);
        self.state.engine = Some("gpu".into());
        let launch = |engine: &GpuEngine, first: u64, n: u64| engine.hunt(seed, first, n, (shard.index, shard.count), LISTED_PER_LAUNCH).map_err(|e| HuntError::Side(e.into()));
        self.run_launches(engines, stop, progress, launch, |_, _, found| Ok(found))
    }

    /// The loop both GPU engines share: the launches (`launch(gpu, first, n)`) spread over `gpus`
    /// and settled in order ([`super::launches::in_order`]), so that on G GPUs the hunt settles
    /// what it settles on one, G launches at a time; `found(phases, first, launch)` turns a
    /// launch into the divergent tiles it holds. Each launch is settled ([`Hunt::settle_launch`]),
    /// the state saved and progress reported, until the tile or time budget is spent, `stop` is
    /// set or (with `stop_at_first`) a launch diverged. A launch made but not settled when the
    /// hunt stops is dropped (a resumed hunt makes it again). In the phases, side A is the GPUs'
    /// own launch time summed over them, "sides" the time this thread waited for a launch and
    /// turned it into divergent tiles; `per_gpu` each GPU's share.
    pub(super) fn run_launches<G: Sync, R: Send>(
        &mut self,
        gpus: &[G],
        stop: &AtomicBool,
        mut progress: impl FnMut(&HuntState),
        launch: impl Fn(&G, u64, u64) -> Result<R, HuntError> + Sync,
        mut found: impl FnMut(&mut super::Phases, u64, R) -> Result<LaunchResult, HuntError>,
    ) -> Result<(), HuntError> {
        let started = Instant::now();
        let base_elapsed = self.state.elapsed_s;
        let arithmetic = self.b.arithmetic(self.cfg.path.a_fmt).cloned();
        let max_time = self.cfg.max_time;
        let over = |stop: &AtomicBool| stop.load(Ordering::Relaxed) || max_time.is_some_and(|t| started.elapsed() >= t);
        if over(stop) {
            return self.save();
        }
        let windows = Windows { first: self.state.next_tile, done: self.state.tiles, batch: self.cfg.batch as u64, max_tiles: self.cfg.max_tiles };
        let timed = |gpu: &G, first: u64, n: u64| {
            let t = Instant::now();
            launch(gpu, first, n).map(|r| (r, t.elapsed().as_secs_f64()))
        };
        let mut waited = Instant::now();
        self.phases.per_gpu = vec![(0, 0.0); gpus.len()];
        in_order(gpus, windows, timed, |g, first, n, (run, launch_s)| {
            let found = found(&mut self.phases, first, run)?;
            let p = &mut self.phases;
            (p.sides, p.side_a) = (p.sides + waited.elapsed().as_secs_f64(), p.side_a + launch_s);
            (p.per_gpu[g].0, p.per_gpu[g].1) = (p.per_gpu[g].0 + n, p.per_gpu[g].1 + launch_s);
            let diverged = found.divergent_tiles > 0;
            self.settle_launch(first, n, found, arithmetic.as_ref(), stop, &mut progress)?;
            self.state.elapsed_s = base_elapsed + started.elapsed().as_secs_f64();
            let t = Instant::now();
            self.save()?;
            self.phases.state += t.elapsed().as_secs_f64();
            progress(&self.state);
            waited = Instant::now();
            Ok(!(diverged && self.cfg.stop_at_first) && !over(stop))
        })?;
        self.state.elapsed_s = base_elapsed + started.elapsed().as_secs_f64();
        self.save()
    }

    /// What every engine does after a launch of `n` tiles from `first` whose divergent tiles
    /// `found` lists: the flagged tiles and an even sample of the launch are regenerated on the
    /// CPU and run on both sides again; the flagged ones are counted, classified and minimised as
    /// every hunt does, the sample is checked against the exact value and for monotonicity and
    /// gives the arithmetic features; a listed tile the re-run finds equal (or a sampled one it
    /// finds divergent that the launch did not flag) counts as a disagreement.
    pub(super) fn settle_launch(&mut self, first: u64, n: u64, found: LaunchResult, arithmetic: Option<&crate::model::Arithmetic>, stop: &AtomicBool, progress: &mut impl FnMut(&HuntState)) -> Result<(), HuntError> {
        let (path, seed, shard) = (self.cfg.path, self.state.seed, self.cfg.shard);
        self.state.next_tile += n;
        let every = (n / SAMPLED_PER_LAUNCH.min(n.div_ceil(self.cfg.exact_every.max(1)))).max(1);
        let sampled: Vec<u64> = (0..n).step_by(every as usize).map(|i| shard.global(first + i)).collect();
        let make = |ids: &[u64]| -> Vec<MmaCase> { ids.par_iter().map(|&g| gen::tile(path, seed, g)).collect() };
        let t = Instant::now();
        let (flagged, sample) = (make(&found.tiles), make(&sampled));
        let both: Vec<MmaCase> = flagged.iter().chain(&sample).cloned().collect();
        let (da, db) = rayon::join(|| self.a.execute(&both), || self.b.execute(&both));
        let (mut da, mut db) = (da?, db?);
        let (sa, sb) = (da.split_off(flagged.len()), db.split_off(flagged.len()));
        // Divergences among the flagged tiles, as every hunt counts and minimises them.
        let (tiles0, elements0) = (self.state.divergent_tiles, self.state.divergent_elements);
        self.compare_batch(&flagged, &da, &db, stop, progress)?;
        self.phases.compare += t.elapsed().as_secs_f64();
        let (cpu_tiles, cpu_elements) = (self.state.divergent_tiles - tiles0, self.state.divergent_elements - elements0);
        // Tiles flagged but not listed are counted from the launch's counters.
        let listed = found.tiles.len() as u64;
        self.state.divergent_tiles += found.divergent_tiles - listed;
        self.state.divergent_elements += found.divergent_elements.saturating_sub(cpu_elements);
        self.state.engine_disagreements += listed - cpu_tiles;
        let flagged_set: std::collections::HashSet<u64> = found.tiles.iter().copied().collect();
        self.state.engine_disagreements += sampled.iter().zip(sa.iter().zip(&sb)).filter(|(g, (x, y))| x != y && !flagged_set.contains(g) && listed == found.divergent_tiles).count() as u64;
        if let (Some(g), None) = (found.first, self.state.first_divergence) {
            self.state.first_divergence = Some(g);
        }
        let t = Instant::now();
        self.observe_features(arithmetic, &sample, &sb, 0, 1)?;
        self.phases.features += t.elapsed().as_secs_f64();
        let t = Instant::now();
        self.check_exact_tiles(&sample, &sa, &sb, &sampled)?;
        self.phases.exact += t.elapsed().as_secs_f64();
        self.state.tiles += n;
        self.state.dot_products += n * (path.m * path.n) as u64;
        self.state.note_features();
        self.state.never_reached = self.state.features.never_reached();
        Ok(())
    }
}
