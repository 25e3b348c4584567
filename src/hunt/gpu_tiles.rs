//! Hunting on tiles the GPU makes, with the model on the CPU (`hunt --engine gpu-tiles`): each
//! launch generates and runs a batch of tiles on the GPU ([`GpuTiles`], the GPU engine's
//! generator) and brings them back with D, while every core runs the model on the previous
//! batch, 32 tiles at a time read from the launch's words as they came, and compares bit for
//! bit. The CPU neither generates nor packs tiles; the model is any model the emulator runs.
//! What a launch flags is then settled as on the GPU engine ([`Hunt::settle_launch`]):
//! regenerated, re-run on both sides, classified and minimised, with an exact sample.

use super::engine::LISTED_PER_LAUNCH;
use super::side::{Side, SideError};
use super::{Hunt, HuntError, HuntState};
use crate::engine::tiles::{GpuTiles, RunTiles};
use crate::case::MmaCase;
use crate::engine::LaunchResult;
use crate::model::Emulator;
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Instant;

impl Hunt<'_> {
    /// Run the hunt on GPU-made tiles until its tile or time budget is spent or `stop` is set (or,
    /// with `stop_at_first`, a launch diverges). Side A must be the GPUs `tiles` run on (one
    /// each), side B a model. The launches are spread over the GPUs and settled in order
    /// ([`super::launches::in_order`]): a GPU makes its next launch while every core models the
    /// current one; then this thread settles it ([`Hunt::settle_launch`]: the flagged tiles
    /// re-run, classified and minimised, the exact sample) and saves the state. A launch made but
    /// not settled when the hunt stops is dropped (the state counts settled launches; a resumed
    /// hunt makes it again). In the phases, side A is the GPUs making and running launches
    /// (summed over them), side B the model. The model needs every core, so more GPUs than one
    /// rarely make this engine faster; they split its tiles all the same.
    /// (Settling one launch while the next is modelled was no faster on an H100: both need
    /// every core.)
    pub fn run_gpu_tiles(&mut self, tiles: &[GpuTiles], stop: &AtomicBool, progress: impl FnMut(&HuntState)) -> Result<(), HuntError> {
        let Side::Model(emu) = self.b else {
            return Err(HuntError::NotAModel(self.b.name()));
        };
        let Some(blank) = tiles.first().map(GpuTiles::blank) else {
            return self.save();
        };
        let (seed, shard) = (self.state.seed, self.cfg.shard);
        self.state.engine = Some("gpu-tiles".into());
        // A launch's words are a few hundred MB: the buffers go round instead of being made anew.
        let buffers = Mutex::new(Vec::<RunTiles>::new());
        let launch = |gpu: &GpuTiles, first: u64, n: u64| {
            let mut run = buffers.lock().expect("buffer pool").pop().unwrap_or_default();
            gpu.run(seed, first, n, (shard.index, shard.count), &mut run).map_err(|e| HuntError::Side(e.into()))?;
            Ok(run)
        };
        let modelled = |phases: &mut super::Phases, first: u64, run: RunTiles| {
            let t = Instant::now();
            let found = divergences(emu, &blank, &run, first, shard)?;
            phases.side_b += t.elapsed().as_secs_f64();
            buffers.lock().expect("buffer pool").push(run);
            Ok(found)
        };
        self.run_launches(tiles, stop, progress, launch, modelled)
    }
}

/// Every tile of a launch under the model against the GPU's D, bit for bit: the divergent
/// tiles (hunt-wide numbers, the first [`LISTED_PER_LAUNCH`] listed) and elements. The tiles run
/// [`PER_RUN`] at a time through [`Emulator::run_many_le`], read from the launch's words as they
/// came (a tile the kernel hands back, and a run whose C does not fit its format, through
/// `emu.run` on `blank`: a case of the path's formats and shape, one copy per thread refilled
/// for every such tile).
fn divergences(emu: &Emulator, blank: &MmaCase, run: &RunTiles, first: u64, shard: super::Shard) -> Result<LaunchResult, SideError> {
    let size = blank.m * blank.n;
    let runs = run.len().div_ceil(PER_RUN);
    let per_run: Vec<Vec<(usize, u64)>> = (0..runs)
        .into_par_iter()
        .map_init(
            || (blank.clone(), Vec::new(), vec![0u64; PER_RUN * size]),
            |(case, bytes, d), r| {
                let tiles = r * PER_RUN..((r + 1) * PER_RUN).min(run.len());
                let d = &mut d[..tiles.len() * size];
                let mut alone = |t: usize, d: &mut [u64]| -> Result<(), SideError> {
                    run.tile_into(tiles.start + t, case);
                    d.copy_from_slice(&emu.run(case)?);
                    Ok(())
                };
                if run.c_fits(tiles.clone(), blank.c_fmt) {
                    run.le_bytes_into(tiles.clone(), bytes);
                    emu.run_many_le(blank, (0..tiles.len()).map(|t| RunTiles::le_tile(bytes, t)), d, alone)?;
                } else {
                    d.chunks_exact_mut(size).enumerate().try_for_each(|(t, d)| alone(t, d))?;
                }
                let wrong = |(i, m): (usize, &[u64])| m.iter().zip(run.d(i)).filter(|(m, g)| **m != **g as u64).count() as u64;
                Ok(tiles.zip(d.chunks_exact(size)).map(|x| (x.0, wrong(x))).filter(|w| w.1 > 0).collect())
            },
        )
        .collect::<Result<_, SideError>>()?;
    let wrong: Vec<(usize, u64)> = per_run.into_iter().flatten().collect();
    let global = |i: usize| shard.global(first + i as u64);
    Ok(LaunchResult {
        divergent_tiles: wrong.len() as u64,
        divergent_elements: wrong.iter().map(|w| w.1).sum(),
        tiles: wrong.iter().take(LISTED_PER_LAUNCH as usize).map(|w| global(w.0)).collect(),
        first: wrong.first().map(|w| global(w.0)),
    })
}

/// Tiles a thread models at a time in [`divergences`].
const PER_RUN: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{gen, tiles::RUN_WORDS};
    use crate::hunt::Shard;
    use crate::Model;

    /// A launch's words as the run kernel lays them out, with D from `model` standing in for the
    /// GPU's.
    fn launch(path: &'static crate::exec::PathSpec, model: &Emulator, seed: u64, ids: impl Iterator<Item = u64>) -> RunTiles {
        let mut words = Vec::new();
        for g in ids {
            let t = gen::tile(path, seed, g);
            words.extend(t.a.chunks(2).chain(t.b.chunks(2)).map(|x| (x[0] | x[1] << 16) as u32));
            words.extend(t.c.iter().map(|&x| x as u32));
            words.extend(model.run(&t).unwrap().into_iter().map(|x| x as u32));
        }
        assert_eq!(words.len() % RUN_WORDS, 0);
        RunTiles { words }
    }

    /// The CPU side of a GPU-tiles launch: nothing diverges under the model that made D; under a
    /// planted one-knob change (one extra alignment bit fewer) exactly the tiles and elements a
    /// tile-by-tile comparison finds, listed by hunt-wide number (shard 1 of 3: tile i is 3i + 1).
    #[test]
    fn divergences_are_the_tiles_a_direct_comparison_finds() {
        let path = crate::exec::path_by_id("mma.m16n8k16.f32.f16.f16.f32").unwrap();
        let truth = Emulator::new(Model::load("sm90:mma.m16n8k16.f32.f16.f16.f32").unwrap());
        let planted = Emulator::new(Model::from_toml("planted", "base = \"sm90:mma.m16n8k16.f32.f16.f16.f32\"\n[align]\nextra_bits = 1").unwrap());
        let shard = Shard { index: 1, count: 3 };
        let (first, n) = (40u64, 600u64);
        let run = launch(path, &truth, 11, (first..first + n).map(|i| shard.global(i)));
        let mut blank = MmaCase::zeros(path.a_fmt, path.c_fmt, gen::M, gen::N, gen::K);
        path.conform(&mut blank);
        let same = divergences(&truth, &blank, &run, first, shard).unwrap();
        assert_eq!((same.divergent_tiles, same.divergent_elements, same.tiles.len(), same.first), (0, 0, 0, None));
        let found = divergences(&planted, &blank, &run, first, shard).unwrap();
        let (mut tiles, mut elements) = (vec![], 0);
        for i in first..first + n {
            let t = gen::tile(path, 11, shard.global(i));
            let wrong = truth.run(&t).unwrap().iter().zip(planted.run(&t).unwrap()).filter(|(x, y)| **x != *y).count();
            if wrong > 0 {
                tiles.push(shard.global(i));
                elements += wrong as u64;
            }
        }
        assert!(!tiles.is_empty() && tiles.len() < n as usize, "{} of {n}", tiles.len());
        assert_eq!(found.tiles, tiles);
        assert_eq!((found.divergent_tiles, found.divergent_elements, found.first), (tiles.len() as u64, elements, tiles.first().copied()));
    }

    /// A launch whose words hold a C pattern wider than C's format (f16 C comes a word an
    /// element) is an error, as the tile's case says, not a tile read past its check.
    #[test]
    fn a_c_pattern_past_its_format_is_an_error() {
        let path = crate::exec::path_by_id("mma.m16n8k16.f16.f16.f16.f16").unwrap();
        let model = Emulator::new(Model::load("sm90:mma.m16n8k16.f16.f16.f16.f16").unwrap());
        let mut run = launch(path, &model, 3, 0..40);
        let mut blank = MmaCase::zeros(path.a_fmt, path.c_fmt, gen::M, gen::N, gen::K);
        path.conform(&mut blank);
        let shard = Shard { index: 0, count: 1 };
        assert_eq!(divergences(&model, &blank, &run, 0, shard).unwrap().divergent_tiles, 0);
        let c_at = gen::M * gen::K / 2 + gen::K * gen::N / 2;
        run.words[33 * RUN_WORDS + c_at + 5] |= 1 << 16;
        let err = divergences(&model, &blank, &run, 0, shard).unwrap_err().to_string();
        assert!(err.contains("does not fit"), "{err}");
    }
}
