//! `mmafuzz fuzz decode|encode`: libFuzzer inputs of the GPU targets as readers and the
//! corpus see them.

use anyhow::Context;
use mmafuzz::exec::gpu::device_count;
use mmafuzz::exec::PathSpec;
use mmafuzz::fuzzing::{codec, describe, nonzero_terms, Differential};
use mmafuzz::hunt::Side;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum FuzzCommand {
    /// Print an input of a GPU fuzz target (a crash artifact, a corpus file): each tile's
    /// nonzero inputs, and for every element where the sides differ both outputs, the exact
    /// value (MPFR) and its nearest rounding, the mismatch marked.
    ///
    /// Exit status 1 when the sides differ on it.
    Decode {
        /// The input file (e.g. fuzz/artifacts/gpu_mma_m16n8k16_f32_f16_f16_f32/crash-...).
        artifact: PathBuf,
        /// The path; default: from the target directory the file is in (gpu_<path>).
        #[arg(long)]
        path: Option<String>,
        /// Side A: gpu (default when a GPU is present), exact, exact-rz..., or a model.
        #[arg(long)]
        against: Option<String>,
        /// Side B, the model under test (default sm90:PATH).
        #[arg(long)]
        model: Option<String>,
        /// Also write the tiles as JSONL interchange cases (with side A's D) to this file.
        #[arg(long)]
        jsonl: Option<PathBuf>,
    },
    /// Turn JSONL cases of a path into fuzz inputs (eight tiles per file, named by SHA-1 as
    /// libFuzzer names them): seeds for a GPU target's corpus or a guided hunt's population.
    Encode {
        #[arg(long)]
        path: String,
        #[arg(long = "in")]
        input: PathBuf,
        /// Directory of the corpus (default fuzz/corpus/gpu_<path>).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// The path an input belongs to: named, or the `gpu_<path>` directory it lies in.
pub(super) fn path_of(artifact: &Path, path: Option<&str>) -> anyhow::Result<&'static PathSpec> {
    if let Some(p) = path {
        return super::gpu::path(p);
    }
    artifact
        .parent()
        .and_then(|d| d.file_name())
        .and_then(|n| codec::path_of_target(&n.to_string_lossy()))
        .with_context(|| format!("{} is not in a gpu_<path> target directory: say which path with --path", artifact.display()))
}

/// Side A by name, or the GPU when one is present, otherwise the exact value (said once).
pub(super) fn side_a(against: Option<&str>, path: &'static PathSpec) -> anyhow::Result<Side> {
    let spec = match against {
        Some(s) => s.to_string(),
        None if device_count().is_ok_and(|n| n > 0) => "gpu".into(),
        None => {
            eprintln!("no GPU here: side A is the exact value (MPFR) instead (--against exact)");
            "exact".into()
        }
    };
    Side::from_spec(&spec, path).map_err(|e| anyhow::anyhow!(e))
}

pub fn fuzz(cmd: FuzzCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        FuzzCommand::Decode { artifact, path, against, model, jsonl } => {
            let path = path_of(&artifact, path.as_deref())?;
            let bytes = std::fs::read(&artifact).with_context(|| format!("cannot read {}", artifact.display()))?;
            let a = side_a(against.as_deref(), path)?;
            let b = Side::from_spec(model.as_deref().unwrap_or(&mmafuzz::model::default_name(&path.id)), path).map_err(|e| anyhow::anyhow!(e))?;
            let d = Differential { path, a, b };
            let outcome = d.run(&bytes)?;
            print!("{}", describe(&d, &outcome));
            println!("{} nonzero inputs (C counted) in {} bytes", nonzero_terms(&outcome.tiles), bytes.len());
            if let Some(out) = jsonl {
                let lines: Vec<String> = outcome.tiles.iter().zip(&outcome.da).map(|(t, da)| t.result_json(da)).collect();
                mmafuzz::store::write_lines_atomically(&out, &lines).with_context(|| format!("cannot write {}", out.display()))?;
                println!("wrote {} cases to {}", lines.len(), out.display());
            }
            Ok(if outcome.divergent.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        FuzzCommand::Encode { path, input, out } => {
            let path = super::gpu::path(&path)?;
            let dir = out.unwrap_or_else(|| PathBuf::from("fuzz/corpus").join(codec::target_name(path)));
            let text = std::fs::read_to_string(&input).with_context(|| format!("cannot read {}", input.display()))?;
            let mut tiles = Vec::new();
            for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                let c = mmafuzz::MmaCase::from_json_line(line).with_context(|| format!("{} line {}", input.display(), n + 1))?;
                tiles.push(c);
            }
            let mut files = 0;
            for chunk in tiles.chunks(codec::max_tiles(path)) {
                let bytes = codec::encode(path, chunk).map_err(|e| anyhow::anyhow!(e))?;
                mmafuzz::store::write_atomically(&dir.join(codec::corpus_name(&bytes)), &bytes).with_context(|| format!("cannot write into {}", dir.display()))?;
                files += 1;
            }
            println!("wrote {} tiles as {files} inputs into {}", tiles.len(), dir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
