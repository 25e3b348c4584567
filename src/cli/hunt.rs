//! `mmafuzz hunt`: the main job. Progress (tiles/s, divergences, findings, time left), Ctrl-C
//! that stops cleanly, `--resume`, and a summary table at the end.

use indicatif::{ProgressBar, ProgressStyle};
use mmafuzz::exec::gpu::device_count;
use mmafuzz::exec::Gpu;
use mmafuzz::hunt::{Engine, Hunt, HuntConfig, HuntState, Side};
use mmafuzz::{Model, Rounding};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct HuntArgs {
    /// Instruction path whose shape and formats to hunt (mmafuzz devices lists them).
    #[arg(long, default_value = "mma.m16n8k16.f32.f16.f16.f32")]
    path: String,
    /// The model under test (side B); default: the path's current sm90 model, sm90:PATH.
    #[arg(long)]
    model: Option<String>,
    /// Side A: `gpu`, `exact` (MPFR, rounded to nearest), `exact-rz`/`-ru`/`-rd`/`-rna`, a
    /// model name or file, or another simulator as a process: `external:CMD` (each batch goes
    /// to CMD's stdin as JSONL case lines and an empty line; CMD answers one line per case with
    /// "d", then an empty line) or `external-npz:CMD` (an 8-byte little-endian length and an npz
    /// of the tiles each way, the answer holding d). CMD runs under `sh -c`, once for the hunt;
    /// scripts/mmasim-oracle.py speaks both for MMA-Sim. Default: `gpu` when a GPU is present,
    /// otherwise `exact`.
    #[arg(long)]
    against: Option<String>,
    /// Stop after this long (e.g. 90s, 10m, 1h).
    #[arg(long, value_parser = parse_duration)]
    time: Option<Duration>,
    /// Stop after this many tiles in total (a resumed hunt counts what it did before).
    #[arg(long)]
    tiles: Option<u64>,
    /// Seed of the generators: the same seed makes the same tiles.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Tiles per batch (default: 16384 with a GPU side, 1024 otherwise).
    #[arg(long)]
    batch: Option<usize>,
    /// Divergences minimised per class; the others are counted.
    #[arg(long, default_value_t = 2)]
    per_class: u64,
    /// Minimiser rounds per divergence.
    #[arg(long, default_value_t = 200)]
    max_rounds: usize,
    /// Also compare one tile in N with the exact value and check monotonicity on it.
    #[arg(long, default_value_t = 64)]
    exact_every: u64,
    /// Map the arithmetic features (the coverage report) of one tile in N of an unguided hunt
    /// (by hunt-wide tile number). Features cost more than the model itself, so sampling keeps
    /// the hunt at the speed of its sides; 1 maps every tile (to compare coverage with a guided
    /// hunt, which always maps every tile: they are its guidance).
    #[arg(long, default_value_t = 16)]
    features_every: u64,
    /// Findings directory (one subdirectory per path; the hunt's state is kept there too).
    #[arg(long, default_value = "findings")]
    findings: PathBuf,
    /// Continue the saved hunt of the same path and sides (its seed and position).
    #[arg(long)]
    resume: bool,
    /// GPUs to spread the GPU side over: comma-separated ordinals, or `all` (all of one name).
    /// Every engine splits the tiles: launch i runs on the i-th GPU in turn (disjoint tiles,
    /// each run once), and the launches are settled in order, so the hunt keeps the state and
    /// finds what the same seed and tile count find on one GPU, in about 1/N of the time with
    /// `--engine gpu`. The summary gives each GPU's tiles and rate.
    #[arg(long, default_value = "0")]
    devices: String,
    /// Guided by arithmetic features: keep a population of tiles that reached new situations of
    /// the model (alignment, lost bits, carries, cancellation, window floor, C against the
    /// products, specials, near ties), mutate them, and run the mutants in batches.
    #[arg(long)]
    guided: bool,
    /// The guided hunt's population directory (libFuzzer's corpus layout, shared with the
    /// path's GPU fuzz target). Default: fuzz/corpus/gpu_<path with _ for .>.
    #[arg(long, requires = "guided")]
    population: Option<PathBuf>,
    /// End at the first batch with a divergence and print `first divergence: tile N`.
    #[arg(long)]
    stop_at_first: bool,
    /// Run part I of N of the hunt (e.g. 3/16, a Slurm array task): tile i of the shard is
    /// tile i·N + I of the whole hunt, so N shards with the same seed and --tiles run exactly
    /// its tiles (--tiles is the whole hunt's count); join their findings with `mmafuzz
    /// findings merge`. Unguided hunts only.
    #[arg(long, default_value = "0/1")]
    shard: mmafuzz::hunt::Shard,
    /// Where tiles are made and compared. `cpu`: generated on the CPU, the GPU runs them, the
    /// model is emulated on every core. `gpu`: one kernel generates each tile on the GPU (its own
    /// reproducible generator), runs the instruction, computes the model and compares, millions
    /// of tiles per launch; only divergent tiles come back, to be re-run, classified and
    /// minimised on the CPU. The GPU engine runs the m16n8k16 f16/bf16 paths under models of
    /// fused blocks with truncating, flooring or sticky windows (the sm90 models and their
    /// one-knob variants) against the first GPU; it tells you when a model is outside that.
    /// `gpu-tiles`: the GPU engine's generator and the instruction on the GPU, every tile and its
    /// D brought back, and the model (any model) emulated on every core against them while the
    /// GPU makes the next launch; the CPU neither generates nor packs tiles. Same paths and same
    /// tiles as `gpu`.
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "gpu", "gpu-tiles"])]
    engine: String,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s.trim().split_at(s.trim().find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.trim().len()));
    let v: f64 = num.parse().map_err(|_| format!("'{s}' is not a duration like 90s, 10m or 1h"))?;
    let secs = match unit {
        "" | "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("unknown unit '{unit}' in '{s}' (use s, m or h)")),
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("'{s}' must be a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn open_gpus(devices: &str, path: &'static mmafuzz::exec::PathSpec) -> anyhow::Result<Side> {
    let ordinals = super::gpu::ordinals(devices)?;
    let gpus = ordinals.iter().map(|&o| Gpu::open(o)).collect::<Result<Vec<_>, _>>()?;
    let first = &gpus[0].info;
    for g in &gpus {
        anyhow::ensure!(g.supports(path), "{} cannot run {}", g.info.name, path.id);
        anyhow::ensure!(
            g.info.name == first.name,
            "--devices mixes GPUs: {} is a {}, {} a {}; one hunt's side A is one kind of GPU (hunt each kind on its own)",
            first.ordinal,
            first.name,
            g.info.ordinal,
            g.info.name
        );
    }
    Ok(Side::Gpu { gpus, path })
}

fn side_a(against: Option<&str>, devices: &str, path: &'static mmafuzz::exec::PathSpec) -> anyhow::Result<Side> {
    match against {
        Some("gpu") => open_gpus(devices, path),
        None => match device_count() {
            Ok(n) if n > 0 => open_gpus(devices, path),
            _ => {
                eprintln!("no GPU here: hunting against the exact value (MPFR) instead (--against exact)");
                Ok(Side::Exact(Rounding::Rne))
            }
        },
        Some(spec) => Side::from_spec(spec, path).map_err(anyhow::Error::msg),
    }
}

pub fn hunt(args: HuntArgs) -> anyhow::Result<ExitCode> {
    let path = super::gpu::path(&args.path)?;
    anyhow::ensure!(args.time.is_some() || args.tiles.is_some(), "say how long to hunt: --time (e.g. 10m) or --tiles N");
    let model = args.model.clone().unwrap_or_else(|| mmafuzz::model::default_name(&path.id));
    let b = Side::model(Model::load(&model)?);
    let engine_kind = match args.engine.as_str() {
        "gpu" => Engine::Gpu,
        "gpu-tiles" => Engine::GpuTiles,
        _ => Engine::Cpu,
    };
    let gpu_engine = engine_kind != Engine::Cpu;
    let name = &args.engine;
    anyhow::ensure!(!gpu_engine || matches!(args.against.as_deref(), None | Some("gpu")), "--engine {name} hunts against the GPU: leave --against out or say --against gpu");
    let a = if gpu_engine { open_gpus(&args.devices, path)? } else { side_a(args.against.as_deref(), &args.devices, path)? };
    let gpu = matches!(a, Side::Gpu { .. });
    anyhow::ensure!(!(gpu_engine && args.guided), "--engine {name} makes its own tiles; a guided hunt's come from its population (use --engine cpu)");
    anyhow::ensure!(args.shard.is_whole() || !args.guided, "--shard splits the tile indices of an unguided hunt; a guided hunt's tiles come from its population");
    let population = args.guided.then(|| args.population.clone().unwrap_or_else(|| PathBuf::from("fuzz/corpus").join(mmafuzz::fuzzing::codec::target_name(path))));
    let cfg = HuntConfig {
        path,
        seed: args.seed,
        // Guided batches are smaller: the population learns between batches.
        batch: args.batch.unwrap_or(match (gpu, args.guided) {
            _ if engine_kind == Engine::Gpu => 1 << 22,
            // Every tile comes back (1.75 KB each): 128 Ki tiles a launch, two in flight.
            _ if engine_kind == Engine::GpuTiles => 1 << 17,
            (true, false) => 1 << 14,
            (true, true) => 1 << 12,
            (false, false) => 1 << 10,
            (false, true) => 1 << 8,
        }).max(1),
        max_tiles: args.tiles.map(|t| args.shard.share(t)),
        max_time: args.time,
        per_class: args.per_class,
        max_rounds: args.max_rounds,
        exact_every: args.exact_every,
        features_every: args.features_every,
        findings: args.findings.clone(),
        stop_at_first: args.stop_at_first,
        guided: population,
        shard: args.shard,
        engine: engine_kind,
    };
    let mut hunt = Hunt::new(cfg, &a, &b, args.resume)?;
    for p in &hunt.problems {
        eprintln!("skipped unreadable file {p}");
    }
    if let Some(p) = &hunt.population {
        eprintln!("guided: population in {}", p.dir.display());
    }
    let part = if args.shard.is_whole() { String::new() } else { format!(" (shard {}: tiles {} + {}·i)", args.shard, args.shard.index, args.shard.count) };
    eprintln!("hunting {}{part}: A = {} | B = {}", path.id, a.describe(), b.describe());

    let stop = Arc::new(AtomicBool::new(false));
    let presses = Arc::new(AtomicUsize::new(0));
    {
        let (stop, presses) = (stop.clone(), presses.clone());
        let _ = ctrlc::set_handler(move || {
            if presses.fetch_add(1, Ordering::SeqCst) > 0 {
                eprintln!("\nstopped; every finding reported so far is on disk");
                std::process::exit(130);
            }
            stop.store(true, Ordering::SeqCst);
            eprintln!("\nstopping after this batch (Ctrl-C again to quit now; nothing is lost either way)");
        });
    }

    let bar = progress_bar(&args);
    let started = Instant::now();
    let (tiles0, interactive) = (hunt.state.tiles, std::io::stderr().is_terminal());
    let (divergent0, elements0, findings0) = (hunt.state.divergent_tiles, hunt.state.divergent_elements, hunt.state.findings_new);
    let mut last_line = Instant::now();
    let model = match &b {
        Side::Model(e) => e.model(),
        _ => unreachable!("side B is a model"),
    };
    // One engine per GPU of side A: the launches are spread over them (disjoint tiles).
    let engines = match (&a, engine_kind) {
        (Side::Gpu { gpus, .. }, Engine::Gpu) => gpus.iter().map(|g| mmafuzz::engine::GpuEngine::new(g, path, model)).collect::<Result<Vec<_>, _>>().map_err(anyhow::Error::msg)?,
        _ => Vec::new(),
    };
    let gpu_tiles = match (&a, engine_kind) {
        (Side::Gpu { gpus, .. }, Engine::GpuTiles) => gpus.iter().map(|g| mmafuzz::engine::tiles::GpuTiles::new(g, path)).collect::<Result<Vec<_>, _>>().map_err(anyhow::Error::msg)?,
        _ => Vec::new(),
    };
    let progress = |s: &HuntState| {
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let rate = (s.tiles - tiles0) as f64 / secs;
        let msg = format!(
            "{} tiles, {:.0} tiles/s, {:.2e} dot products/s, {} divergent elements, {} findings, {} features",
            s.tiles,
            rate,
            rate * (path.m * path.n) as f64,
            s.divergent_elements,
            s.findings(),
            s.features.features()
        );
        match (args.time, args.tiles) {
            (Some(t), _) => bar.set_position((started.elapsed().as_millis() as u64).min(t.as_millis() as u64)),
            (None, Some(_)) => bar.set_position(s.tiles),
            _ => {}
        }
        if !interactive && last_line.elapsed() > Duration::from_secs(30) {
            eprintln!("[{:>6.0} s] {msg}", secs);
            last_line = Instant::now();
        }
        bar.set_message(msg);
    };
    match engine_kind {
        Engine::Gpu => hunt.run_engine(&engines, &stop, progress)?,
        Engine::GpuTiles => hunt.run_gpu_tiles(&gpu_tiles, &stop, progress)?,
        Engine::Cpu => hunt.run(&stop, progress)?,
    }
    bar.finish_and_clear();
    print_summary(&hunt, path, started.elapsed().as_secs_f64(), hunt.state.tiles - tiles0, &args.findings);
    let s = &hunt.state;
    let run = mmafuzz::hunt::results::HuntRun {
        date: mmafuzz::store::today_utc(),
        path: path.id.into(),
        a: a.describe(),
        b: b.name(),
        model_hash: mmafuzz::hunt::results::model_hash(model.arithmetic(path.a_fmt)),
        engine: args.engine.clone(),
        seed: s.seed,
        shard: (!args.shard.is_whole()).then(|| args.shard.to_string()),
        tiles: s.tiles - tiles0,
        divergent_tiles: s.divergent_tiles - divergent0,
        divergent_elements: s.divergent_elements - elements0,
        findings_new: s.findings_new - findings0,
        seconds: started.elapsed().as_secs_f64(),
        version: env!("CARGO_PKG_VERSION").into(),
    };
    match mmafuzz::hunt::results::append(&args.findings, &run) {
        Ok(file) => println!("logged this run in {}", file.display()),
        Err(e) => eprintln!("warning: cannot log this run in {}: {e}", args.findings.join(mmafuzz::hunt::results::FILE).display()),
    }
    if let Some(t) = hunt.state.first_divergence.filter(|_| args.stop_at_first) {
        println!("first divergence: tile {t}");
    }
    Ok(if hunt.state.divergent_elements == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn progress_bar(args: &HuntArgs) -> ProgressBar {
    let (len, template) = match (args.time, args.tiles) {
        (Some(t), _) => (t.as_millis() as u64, "{bar:30} {elapsed} of {duration} {msg}"),
        (None, Some(n)) => (args.shard.share(n), "{bar:30} {pos}/{len} tiles, {eta} left, {msg}"),
        _ => (0, "{msg}"),
    };
    let bar = ProgressBar::new(len);
    bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
    bar
}

/// The feature map's summary; `every`: the unguided hunt's sampling (0: the GPU engine's own
/// exact sample).
fn print_features(s: &HuntState, every: u64, state_file: &std::path::Path) {
    let f = &s.features;
    if f.features() == 0 {
        return;
    }
    let mode = match (s.guided, every) {
        (true, _) => format!("guided, population {}", s.population),
        (false, 0) => "unguided, the exact sample's tiles".into(),
        (false, 1) => "unguided, every tile".into(),
        (false, n) => format!("unguided, one tile in {n}"),
    };
    println!(
        "arithmetic features ({mode}): {} of {} reached ({} of {} situations at any count)",
        f.features(),
        mmafuzz::features::known_features(),
        f.situations(),
        mmafuzz::features::situations()
    );
    let groups: Vec<String> = f.by_group().iter().map(|(g, r, n)| format!("{g} {r}/{n}")).collect();
    println!("  situations by group: {}", groups.join(", "));
    if !s.feature_curve.is_empty() {
        let curve: Vec<String> = s.feature_curve.iter().map(|p| format!("{} at {} tiles", p[1], p[0])).collect();
        println!("  features reached: {}", curve.join(", "));
    }
    let never = f.never_reached();
    if !never.is_empty() {
        // `*`: every value of that axis. The state file lists every pattern.
        const SHOWN: usize = 24;
        println!("  never reached: {} situations, as {} patterns (* for any value of an axis):", f.unreached(), never.len());
        for chunk in never[..never.len().min(SHOWN)].chunks(4) {
            println!("    {}", chunk.join(" | "));
        }
        if never.len() > SHOWN {
            println!("    … {} more in the state file ({})", never.len() - SHOWN, state_file.display());
        }
    }
}

fn print_summary(hunt: &Hunt, path: &mmafuzz::exec::PathSpec, secs: f64, tiles: u64, findings: &std::path::Path) {
    let s = &hunt.state;
    let rate = tiles as f64 / secs.max(1e-9);
    println!("hunt {}: A = {} vs B = {}, seed {}", s.path, s.side_a, s.side_b, s.seed);
    println!(
        "this run: {tiles} tiles in {secs:.1} s = {rate:.0} tiles/s = {:.3e} dot products/s (k = {}); whole hunt: {} tiles in {:.1} s",
        rate * (path.m * path.n) as f64,
        path.k,
        s.tiles,
        s.elapsed_s
    );
    let phases = hunt.phases.summary();
    if !phases.is_empty() {
        println!("where the time went: {phases}");
    }
    if let Some(per_gpu) = hunt.phases.per_gpu_summary() {
        println!("spread over the GPUs (in --devices order): {per_gpu}");
    }
    println!("divergent: {} tiles, {} elements", s.divergent_tiles, s.divergent_elements);
    match s.engine.as_deref() {
        Some("gpu-tiles") => println!("GPU-made tiles: made and run on the GPU, modelled on the CPU; {} disagreements with the CPU's re-run of both sides", s.engine_disagreements),
        Some(_) => println!("GPU engine: tiles made, run, modelled and compared on the GPU; {} disagreements with the CPU's re-run of both sides", s.engine_disagreements),
        None => {}
    }
    if !s.classes.is_empty() {
        println!("classes of {} divergent elements (at most 4096 per batch, spread evenly):", s.classified);
        println!("{:<60} {:>10} {:>10} {:>9}", "class", "elements", "minimised", "findings");
        for (class, c) in &s.classes {
            println!("{class:<60} {:>10} {:>10} {:>9}", c.elements, c.minimised, c.findings.len());
        }
    }
    if !s.minimised_terms.is_empty() {
        let sizes: Vec<String> = s.minimised_terms.iter().map(|(t, n)| format!("{n} with {t}")).collect();
        println!("minimised cases by nonzero terms (C counted): {}", sizes.join(", "));
    }
    println!("{:<24} {:>10} {:>9} {:>9} {:>13}", "vs exact (sampled)", "elements", "nearest", "faithful", "max |ulp err|");
    for (name, e) in [(&s.side_a, &s.exact[0]), (&s.side_b, &s.exact[1])] {
        let pct = |x: u64| 100.0 * x as f64 / e.elements.max(1) as f64;
        println!("{name:<24} {:>10} {:>8.2}% {:>8.2}% {:>13.3e}", e.elements, pct(e.nearest), pct(e.faithful), e.max_ulp_error);
    }
    println!(
        "monotonicity (C raised one ulp): {} / {} checks violated on A, {} / {} on B",
        s.monotonic_violations[0], s.monotonic_checked[0], s.monotonic_violations[1], s.monotonic_checked[1]
    );
    for ex in &s.monotonic_examples {
        println!("  {ex}");
    }
    print_features(s, if hunt.cfg.engine != Engine::Cpu { 0 } else { hunt.cfg.features_every }, &hunt.state_file());
    println!(
        "findings: {} new, {} merged into existing files, in {}",
        s.findings_new,
        s.findings_merged,
        findings.join(path.id).display()
    );
    for p in &hunt.problems {
        println!("skipped unreadable finding {p}");
    }
}
