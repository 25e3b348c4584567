//! `mmafuzz infer`: the models that reproduce a path's GPU corpus and findings.

use anyhow::Context;
use mmafuzz::infer::{infer as run_infer, model_file, observe::observe};
use mmafuzz::Model;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct InferArgs {
    /// Instruction path (its corpus file and findings directory are read).
    #[arg(long)]
    path: String,
    #[arg(long, default_value = "corpus")]
    corpus: PathBuf,
    /// Findings directory: each finding under FINDINGS/PATH/ adds the element its GPU side, or
    /// its external oracle's side (`hunt --against external:...`), computed.
    #[arg(long, default_value = "findings")]
    findings: PathBuf,
    /// Use at most this many corpus tiles.
    #[arg(long)]
    tiles: Option<usize>,
    /// Knobs outside the searched space come from this model, and the model written is the
    /// survivor nearest to it (default: sm90:PATH).
    #[arg(long)]
    base: Option<String>,
    /// Write the first surviving (or nearest) model to this TOML file.
    #[arg(long)]
    write: Option<PathBuf>,
    /// The architecture the written model is named for (`ARCH:PATH`): `sm90` for the H100's
    /// corpus, or the simulated architecture whose oracle recorded the corpus (`ampere`).
    #[arg(long, default_value = "sm90")]
    arch: String,
    /// What recorded the corpus when it is not the GPU ("MMA-Sim 2.1.1 Ampere model, not
    /// hardware"), for the written model's provenance.
    #[arg(long)]
    label: Option<String>,
}

pub fn infer(args: InferArgs) -> anyhow::Result<ExitCode> {
    let p = super::gpu::path(&args.path)?;
    let base = match &args.base {
        Some(b) => Model::load(b)?,
        // A path with no measured model (a simulated one) starts from the H100 hypothesis.
        None => mmafuzz::infer::base_model(p)?,
    };
    let obs = observe(p.id, &args.corpus, &args.findings, args.tiles).with_context(|| format!("cannot read the corpus of {}", p.id))?;
    for problem in obs.problems.iter().take(5) {
        eprintln!("skipped {problem}");
    }
    anyhow::ensure!(!obs.all.is_empty(), "no GPU observations for {} in {} or {}", p.id, args.corpus.display(), args.findings.display());
    let inf = run_infer(p, &obs, base.arithmetic(p.a_fmt));
    println!(
        "infer {}: {} distinct elements ({} plain) from {} corpus tiles and {} GPU findings, {:.1} s",
        inf.path, inf.observations, inf.plain, obs.tiles, obs.findings, inf.seconds
    );
    println!("core: {} combinations, {} reproduce every plain element; full survivors: {}", inf.core_candidates, inf.core_survivors.len(), inf.survivors.len());
    if !inf.survivors.is_empty() {
        println!("{:<26} values the survivors take", "knob");
        for (knob, values) in &inf.agreed {
            let mark = if values.len() == 1 { "agreed" } else { "" };
            println!("{knob:<26} {:<40} {mark}", values.join(", "));
        }
    }
    for n in &inf.nearest {
        println!("nearest: misses {} of {} elements with {}", n.mismatches, n.of, n.knobs.join(", "));
        if let Some(r) = &n.first_mismatch {
            println!("  simplest miss: {} -> GPU {}, model {} ({})", r.case, r.gpu, r.model, r.origin);
        }
    }
    if !inf.refutations.is_empty() {
        let reference = if inf.survivors.is_empty() { "the nearest candidate" } else { "the first survivor" };
        println!("ruled out, each one knob away from {reference}, by its simplest refuting element:");
        for r in &inf.refutations {
            println!("  {} = {}: {} -> GPU {}, model {} ({})", r.knob, r.value, r.case, r.gpu, r.model, r.origin);
        }
    }
    if let (Some(file), Some(best)) = (&args.write, &inf.best) {
        let sources = format!("{} corpus tiles and {} findings", obs.tiles, obs.findings);
        write(file, &model_file(&args.arch, p.id, best, &inf, &sources, args.label.as_deref()))?;
        println!("wrote {}", file.display());
    }
    Ok(if inf.survivors.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn write(file: &Path, text: &str) -> anyhow::Result<()> {
    mmafuzz::store::write_atomically(file, text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))
}
