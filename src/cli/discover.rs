//! `mmafuzz discover`: bring up a path's model on a GPU in one command.

use anyhow::Context;
use mmafuzz::exec::Gpu;
use mmafuzz::hunt::Side;
use mmafuzz::infer::discover::{discover as run, DiscoverConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct DiscoverArgs {
    /// Instruction path.
    #[arg(long)]
    path: String,
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Stand-in for the GPU: a model name or file (to try discovery without a GPU), or another
    /// simulator as a process, `external:CMD` / `external-npz:CMD` (see `mmafuzz hunt --help`).
    #[arg(long)]
    oracle: Option<String>,
    /// At most this many tiles run on the GPU.
    #[arg(long, default_value_t = 20_000)]
    max_tiles: usize,
    /// At most this long, in seconds.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Candidate tiles generated per round (for tiles of up to 512 elements of depth 16; wider
    /// or deeper tiles get proportionally fewer, at least 64).
    #[arg(long, default_value_t = 4096)]
    pool: usize,
    /// Tiles run per round (the most disputed of the pool; scaled as --pool, at least 8).
    #[arg(long, default_value_t = 512)]
    batch: usize,
    /// With more core models alive than this, a round screens them on disputed elements alone
    /// (32 per tile, not whole tiles) and checks the screened ones against every whole tile once
    /// no more than this are left: FP6 x FP6 pairs keep over a million after the first tiles.
    /// Scaled as --pool for wider or deeper tiles.
    #[arg(long, default_value_t = 50_000)]
    screen_above: usize,
    /// Write the discovered model here (e.g. models/sm90/PATH.toml).
    #[arg(long)]
    write: Option<PathBuf>,
    /// Append the deciding GPU tiles, with provenance, to CORPUS/<path>.jsonl.xz.
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// The architecture the written model is named for (`ARCH:PATH`, the directory under
    /// models/): `sm90` for the H100, or the simulated architecture an --oracle stands for
    /// (`ampere` against MMA-Sim's Ampere).
    #[arg(long, default_value = "sm90")]
    arch: String,
    /// Knobs outside the searched space, and the values undecided knobs keep, come from this
    /// model (default: the path's sm90 model, or that of its nearest measured kin).
    #[arg(long)]
    base: Option<String>,
    /// What the oracle is, for the written model's provenance ("MMA-Sim 2.1.1 model, not
    /// hardware"); with --oracle, the corpus lines carry it too.
    #[arg(long)]
    label: Option<String>,
}

/// Products per tile (elements times K) that --pool and --batch are counted for.
const WIDE: usize = 512 * 16;

pub fn discover(args: DiscoverArgs) -> anyhow::Result<ExitCode> {
    let p = super::gpu::path(&args.path)?;
    let (oracle, provenance) = match &args.oracle {
        Some(spec) => (Side::from_spec(spec, p).map_err(anyhow::Error::msg)?, None),
        None => {
            let gpu = Gpu::open(args.device)?;
            let prov = super::gpu::provenance(&gpu, p);
            (Side::Gpu { gpus: vec![gpu], path: p }, Some(prov))
        }
    };
    let base = match &args.base {
        Some(b) => mmafuzz::Model::load(b)?,
        None => mmafuzz::infer::base_model(p)?,
    };
    // The pool and the batch are sized for tiles of up to 512 elements of depth 16 (m16n8k16,
    // m64n8k16); wider tiles (wgmma N = 16 to 256) and deeper ones (FP8 K = 32, chains of four
    // instructions) get proportionally fewer, so a round costs about the same.
    let per_tile = p.m * p.n * p.k;
    let scale = |tiles: usize, least: usize| if per_tile <= WIDE { tiles } else { (tiles * WIDE / per_tile).max(least) };
    // Checking every alive model on whole tiles costs models x products per tile: on wide tiles
    // (tcgen05's 128x8x64, 65,536 products) screening starts at proportionally fewer models.
    let (pool, batch, screen_above) = (scale(args.pool, 64), scale(args.batch, 8), scale(args.screen_above, 1_000));
    if (pool, batch) != (args.pool, args.batch) {
        eprintln!("{} has {per_tile} products per tile: pool {pool}, batch {batch} tiles per round, screening above {screen_above} models", p.id);
    }
    let cfg = DiscoverConfig { seed: args.seed, pool, batch, sample: 24, max_tiles: args.max_tiles, max_time: Duration::from_secs(args.seconds), screen_above };
    eprintln!("discovering {} against {}", p.id, oracle.describe());
    let d = run(p, &oracle, base.arithmetic(p.a_fmt), &cfg, |r| {
        eprintln!("round {:>3} ({}): {} tiles run, {} models alive", r.round, r.stage, r.tiles_run, r.alive);
    })?;
    println!(
        "discover {}: {} rounds, {} tiles run, {:.1} s; {}",
        p.id,
        d.rounds.len(),
        d.decided_by.len(),
        d.seconds,
        d.ending
    );
    let special_reached = d.rounds.last().is_some_and(|r| r.stage == "special knobs") || !d.survivors.is_empty();
    if special_reached {
        println!("survivors: {} (core knobs alone: {})", d.survivors.len(), d.core_survivors.len());
    } else {
        println!("core knobs: {} survivors; the special knobs were not reached within the budget", d.core_survivors.len());
    }
    if d.unchecked > 0 {
        println!("{} of the survivors were not yet checked against the last tiles when the budget ran out (give more --seconds); the written model is a checked one", d.unchecked);
    }
    for (knob, values) in d.agreed() {
        let mark = if values.len() == 1 { "agreed" } else { "" };
        println!("{knob:<26} {:<40} {mark}", values.join(", "));
    }
    if d.survivors.is_empty() && special_reached {
        println!("no model of the space explains every GPU result: the data contradicts at least one knob's whole range (run `mmafuzz infer` on the recorded tiles for the nearest models)");
    }
    if let (Some(file), Some(best)) = (&args.write, &d.best) {
        let (against, description, source) = match (&args.oracle, &args.label) {
            (None, _) => ("GPU".to_string(), "discovered on the GPU".to_string(), format!("mmafuzz discover, {} tiles", d.decided_by.len())),
            (Some(o), label) => {
                let what = label.clone().unwrap_or_else(|| o.clone());
                (format!("oracle ({what})"), format!("discovered against {what}"), format!("mmafuzz discover against {what}, {} tiles", d.decided_by.len()))
            }
        };
        let left = if special_reached {
            format!("{} survivors", d.survivors.len())
        } else {
            format!("{} core-knob survivors (special knobs not reached; the nearest one that passes every tile written)", d.core_survivors.len())
        };
        let origin = format!("Discovered by `mmafuzz discover --path {}`: {} rounds, {} {against} tiles, {left}", p.id, d.rounds.len(), d.decided_by.len());
        let text = mmafuzz::infer::model_text(&args.arch, p.id, best, &origin, &description, &source);
        mmafuzz::store::write_atomically(file, text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
        println!("wrote {}", file.display());
    }
    if let Some(dir) = &args.corpus {
        let lines: Vec<String> = d
            .decided_by
            .iter()
            .map(|(c, out)| {
                let mut c = c.clone();
                if let Some(prov) = &provenance {
                    c.extra.insert("provenance".into(), prov.clone());
                } else if let Some(label) = &args.label {
                    c.extra.insert("provenance".into(), serde_json::json!({"oracle": label, "path": p.id}));
                }
                c.extra.insert("discover".into(), serde_json::json!({"seed": args.seed}));
                mmafuzz::corpus::codec::encode_line(&c, out, Some(p), true)
            })
            .collect();
        let file = mmafuzz::store::jsonl_file(&dir, &p.id);
        mmafuzz::store::append_lines_atomically(&file, &lines).with_context(|| format!("cannot write {}", file.display()))?;
        println!("recorded {} deciding tiles into {}", lines.len(), file.display());
    }
    Ok(if d.survivors.is_empty() && (special_reached || d.core_survivors.is_empty()) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
