//! `mmafuzz engine-check`: the GPU engine against its Rust twins, on the GPU. The engine's own
//! tiles (tile i of the seed, made on the GPU) must equal `engine::gen::tile`, and the model the
//! engine computes on them must equal the emulator's D bit for bit; so must its model on tiles
//! from the ordinary generators (other shapes of input than its own). `--record` writes what
//! the GPU produced as digests, which `tests/suite/engine_replay.rs` replays without a GPU.

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use mmafuzz::engine::record::{self, EngineRecord};
use mmafuzz::engine::{gen, GpuEngine};
use mmafuzz::exec::Gpu;
use mmafuzz::{Emulator, Model};
use rayon::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct EngineCheckArgs {
    /// The path (the engine runs mma.m16n8k16.f32.f16.f16.f32, .f32.bf16.bf16.f32, .f16.f16.f16.f16).
    #[arg(long, default_value = "mma.m16n8k16.f32.f16.f16.f32")]
    path: String,
    /// The model the engine computes; default: the path's sm90 model.
    #[arg(long)]
    model: Option<String>,
    /// The GPUs to check: an ordinal, comma-separated ordinals, or `all` (each checked alone;
    /// GPUs of one name must also give the first one's digests).
    #[arg(long, visible_alias = "devices", default_value = "0")]
    device: String,
    /// Seed of the engine's generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Engine tiles to check (generator and model).
    #[arg(long, default_value_t = 1 << 20)]
    tiles: u64,
    /// Tiles of the ordinary generators to run through the engine's model as well.
    #[arg(long, default_value_t = 1 << 16)]
    other_tiles: u64,
    /// Write the GPU's tiles and D as digests to this file (for CI's replay).
    #[arg(long)]
    record: Option<PathBuf>,
}

const CHUNK: u64 = 1 << 16;

pub fn check(args: EngineCheckArgs) -> anyhow::Result<ExitCode> {
    let path = super::gpu::path(&args.path)?;
    let model_name = args.model.clone().unwrap_or_else(|| mmafuzz::model::default_name(&path.id));
    let model = Model::load(&model_name)?;
    let mut ok = true;
    let mut first: Option<(usize, EngineRecord)> = None;
    for ordinal in super::gpu::ordinals(&args.device)? {
        let gpu = Gpu::open(ordinal)?;
        let (passed, rec) = check_on(&gpu, ordinal, path, &model, &model_name, &args)?;
        ok &= passed;
        match &first {
            None => {
                if let Some(file) = &args.record {
                    record::save(&rec, file).with_context(|| format!("writing {}", file.display()))?;
                    println!("recorded GPU {ordinal}'s {} chunks of {CHUNK} tiles to {}", rec.chunks.len(), file.display());
                }
                first = Some((ordinal, rec));
            }
            Some((o, theirs)) if theirs.gpu == rec.gpu => {
                let same = theirs.chunks == rec.chunks;
                ok &= same;
                println!("GPU {ordinal}'s tiles and D {} GPU {o}'s, chunk for chunk", if same { "are" } else { "are NOT" });
            }
            Some(_) => {}
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The check on one GPU: whether it passed, and what it ran as digests.
fn check_on(gpu: &Gpu, ordinal: usize, path: &'static mmafuzz::exec::PathSpec, model: &Model, model_name: &str, args: &EngineCheckArgs) -> anyhow::Result<(bool, EngineRecord)> {
    let engine = GpuEngine::new(gpu, path, model).map_err(anyhow::Error::msg)?;
    let emulator = Emulator::new(model.clone());
    eprintln!("engine check on GPU {ordinal}, {} (driver {}): {} under {model_name}, seed {}", gpu.info.name, gpu.info.driver, path.id, args.seed);
    let bar = ProgressBar::new(args.tiles + args.other_tiles);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} tiles {msg}").expect("valid template"));
    let mut rec = EngineRecord::new(path.id, model_name, &gpu.info, args.seed, CHUNK);
    let (mut bad_tiles, mut bad_elements, mut shown) = (0u64, 0u64, 0);
    let mut first = 0;
    while first < args.tiles {
        let n = CHUNK.min(args.tiles - first);
        let (tiles, d) = engine.dump(args.seed, first, n)?;
        let checked: Vec<(bool, Vec<u64>)> = tiles
            .par_iter()
            .enumerate()
            .map(|(i, t)| {
                let mine = gen::tile(path, args.seed, first + i as u64);
                let same_tile = mine.a == t.a && mine.b == t.b && mine.c == t.c;
                (same_tile, emulator.run(t).unwrap_or_default())
            })
            .collect();
        for (i, (same_tile, want)) in checked.iter().enumerate() {
            let wrong: Vec<usize> = (0..128).filter(|&e| want.get(e) != Some(&d[i][e])).collect();
            if !same_tile || !wrong.is_empty() {
                bad_tiles += 1;
                bad_elements += wrong.len() as u64;
                if shown < 5 {
                    shown += 1;
                    let t = first + i as u64;
                    match wrong.first() {
                        Some(&e) => bar.println(format!("tile {t}: element ({}, {}) engine {:#x}, emulator {:#x}{}", e / 8, e % 8, d[i][e], want.get(e).copied().unwrap_or(0), if *same_tile { "" } else { "; the tile differs from gen::tile" })),
                        None => bar.println(format!("tile {t}: the GPU generated another tile than gen::tile")),
                    }
                }
            }
        }
        rec.push_chunk(&tiles, &d);
        first += n;
        bar.set_position(first);
    }
    // Tiles from the ordinary generators: other value mixes than the engine's own.
    let mut other_bad = 0u64;
    let mut done = 0;
    while done < args.other_tiles {
        let n = CHUNK.min(args.other_tiles - done);
        let tiles: Vec<_> = (done..done + n).into_par_iter().map(|i| mmafuzz::gen::case_at(path, args.seed, i)).collect();
        let d = engine.model_tiles(&tiles)?;
        let want: Vec<Vec<u64>> = tiles.par_iter().map(|t| emulator.run(t).unwrap_or_default()).collect();
        for (i, (g, w)) in d.iter().zip(&want).enumerate() {
            if g != w {
                other_bad += 1;
                if shown < 10 {
                    shown += 1;
                    let e = (0..128).find(|&e| w.get(e) != Some(&g[e])).unwrap_or(0);
                    bar.println(format!("generator tile {}: element ({}, {}) engine {:#x}, emulator {:#x}", done + i as u64, e / 8, e % 8, g[e], w.get(e).copied().unwrap_or(0)));
                }
            }
        }
        done += n;
        bar.set_position(args.tiles + done);
    }
    bar.finish_and_clear();
    println!("engine tiles: {} checked, {bad_tiles} differ ({bad_elements} elements of D)", args.tiles);
    println!("generator tiles through the engine's model: {} checked, {other_bad} differ", args.other_tiles);
    Ok((bad_tiles == 0 && other_bad == 0, rec))
}
