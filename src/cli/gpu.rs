//! GPU commands: `devices`, `gpu-check`, `run`, `record`, and `gen` (cases for a path), with
//! cases and results as JSONL or `.npz`.

use super::io::{open_input, AtomicOutput};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use mmafuzz::exec::gpu::device_count;
use mmafuzz::exec::{layout, path_by_id, Gpu, PathSpec, PATHS};
use mmafuzz::npz::{is_npz, Batch};
use mmafuzz::{gen, MmaCase};
use rayon::prelude::*;
use serde_json::json;
use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;

/// Cases per launch: on an H100, 16,384 m16n8k16 tiles per launch ran at 4.3e6 tiles/s
/// (upload + launch + download), 65,536 and more at about 1e6 (`mmafuzz gpu-bench`).
const BATCH: usize = 1 << 14;

/// The path with this identifier, or an error listing the known ones.
pub(super) fn path(id: &str) -> anyhow::Result<&'static PathSpec> {
    path_by_id(id).with_context(|| {
        let ids: Vec<_> = PATHS.iter().map(|p| p.id).collect();
        format!("unknown path '{id}' (known: {})", ids.join(", "))
    })
}

pub fn devices() -> anyhow::Result<ExitCode> {
    let n = device_count()?;
    for ordinal in 0..n {
        let gpu = Gpu::open(ordinal)?;
        let i = &gpu.info;
        println!("GPU {ordinal}: {} (compute capability {}.{}, driver {})", i.name, i.compute_capability.0, i.compute_capability.1, i.driver);
        for p in PATHS {
            let mark = if gpu.supports(p) { "yes" } else { "no" };
            println!("  {:<36} {mark}", p.id);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The GPU ordinals a `--devices` / `--device` argument names: `all`, or comma-separated
/// ordinals (each checked against the GPUs there are). An ordinal named twice is used twice,
/// as two GPUs that share one: how the spread over several GPUs is checked on one.
pub(super) fn ordinals(spec: &str) -> anyhow::Result<Vec<usize>> {
    let there = device_count()?;
    let Some(named) = parse_ordinals(spec)? else {
        return Ok((0..there).collect());
    };
    for &o in &named {
        anyhow::ensure!(o < there, "there is no GPU {o}: this machine has {there} (ordinals 0 to {})", there - 1);
    }
    Ok(named)
}

/// A `--devices` list as written: `None` for `all`, else the ordinals (at least one).
pub(super) fn parse_ordinals(spec: &str) -> anyhow::Result<Option<Vec<usize>>> {
    if spec.trim() == "all" {
        return Ok(None);
    }
    let named: Vec<usize> = spec.split(',').map(|d| d.trim().parse().with_context(|| format!("'{}' is not a GPU ordinal (give ordinals like 0,1 or all)", d.trim()))).collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(!named.is_empty(), "no GPU named");
    Ok(Some(named))
}

/// Tiles of the ordinary generator per path that GPUs of one name must agree on bit for bit.
const SAME_GPU_TILES: u64 = 4096;

/// Layout check and determinism for every path (or one) on each GPU `devices` names: integer
/// tiles against their exact results, each batch run twice with different poisons. With
/// several GPUs of one name, each also runs the ordinary generator's tiles of every path and
/// must return the first one's D bit for bit.
pub fn check(only: Option<&str>, devices: &str, tiles: usize) -> anyhow::Result<ExitCode> {
    let mut failed = 0;
    // Per GPU name: the first GPU's ordinal and its D per path on the generator's tiles.
    let mut first_of_name: std::collections::BTreeMap<String, (usize, Vec<Vec<Vec<u64>>>)> = Default::default();
    let gpus = ordinals(devices)?.into_iter().map(Gpu::open).collect::<Result<Vec<_>, _>>()?;
    // The generator's tiles run only where another GPU of the same name is checked too.
    let twinned = |gpu: &Gpu| gpus.iter().filter(|g| g.info.name == gpu.info.name).count() > 1;
    for gpu in &gpus {
        let ordinal = gpu.info.ordinal;
        println!("GPU {ordinal}: {} (cc {}.{}, driver {})", gpu.info.name, gpu.info.compute_capability.0, gpu.info.compute_capability.1, gpu.info.driver);
        let mut generated = Vec::new();
        for p in PATHS.iter().filter(|p| only.is_none_or(|o| o == p.id)) {
            if !gpu.supports(p) {
                println!("{:<36} skipped: needs cc {}.{}", p.id, p.min_cc.0, p.min_cc.1);
                continue;
            }
            let cases = layout::integer_cases(p, tiles, 7);
            let run = gpu.run_checked(p, &cases)?;
            let wrong = cases.iter().zip(&run.results).filter(|(c, d)| layout::expected(p, c) != **d).count();
            let ok = wrong == 0 && run.nondeterministic == 0;
            failed += !ok as usize;
            println!(
                "{:<36} layout {} ({wrong} of {tiles} tiles wrong), deterministic {} ({} differ)",
                p.id,
                if wrong == 0 { "ok" } else { "FAILED" },
                if run.nondeterministic == 0 { "ok" } else { "FAILED" },
                run.nondeterministic
            );
            if let Some((c, d)) = cases.iter().zip(&run.results).find(|(c, d)| layout::expected(p, c) != **d) {
                println!("  first wrong tile: {}", c.result_json(d));
            }
            if twinned(gpu) {
                let cases: Vec<MmaCase> = (0..SAME_GPU_TILES).into_par_iter().map(|i| gen::case_at(p, 7, i)).collect();
                generated.push((p.id, gpu.run_checked(p, &cases)?.results));
            }
        }
        match first_of_name.get(&gpu.info.name) {
            None => {
                first_of_name.insert(gpu.info.name.clone(), (ordinal, generated.into_iter().map(|g| g.1).collect()));
            }
            Some((first, theirs)) => {
                for ((id, mine), theirs) in generated.iter().zip(theirs) {
                    let differ = mine.iter().zip(theirs).filter(|(x, y)| x != y).count();
                    failed += (differ > 0) as usize;
                    println!("{id:<36} same D as GPU {first} {} ({differ} of {SAME_GPU_TILES} generator tiles differ)", if differ == 0 { "ok" } else { "FAILED" });
                }
            }
        }
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// All cases of a file, parsed in parallel; the first bad line is an error naming it.
fn read_cases(input: &Path) -> anyhow::Result<Vec<MmaCase>> {
    use rayon::prelude::*;
    let lines: Vec<String> = open_input(input)?.lines().collect::<Result<_, _>>().context("cannot read the input")?;
    lines
        .par_iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(no, l)| MmaCase::from_json_line(l).map_err(|e| anyhow::anyhow!("line {}: {e}", no + 1)))
        .collect()
}

/// The cases of a JSONL or npz file, and the npz batch they came from (its members are
/// written back as they came, with D).
fn read_tiles(input: &Path) -> anyhow::Result<(Vec<MmaCase>, Option<Batch>)> {
    if !is_npz(input) {
        return Ok((read_cases(input)?, None));
    }
    let batch = Batch::read(input)?;
    Ok((batch.cases()?, Some(batch)))
}

/// Write cases and their results as JSONL lines or, to a `.npz` name, as arrays: the batch
/// they were read from with D added, or a batch made of the cases.
fn write_results(output: &Path, cases: &[MmaCase], results: &[Vec<u64>], batch: Option<Batch>) -> anyhow::Result<()> {
    if is_npz(output) {
        let mut batch = match batch {
            Some(b) => b,
            None => Batch::from_cases(cases).map_err(|e| anyhow::anyhow!("{}: {e}", output.display()))?,
        };
        batch.set_d(0, results);
        batch.write(output, false)?;
        return Ok(());
    }
    let mut out = AtomicOutput::create(output)?;
    for line in result_lines(cases, results) {
        out.line(&line)?;
    }
    out.commit()
}

/// Result lines, formatted in parallel.
fn result_lines(cases: &[MmaCase], results: &[Vec<u64>]) -> Vec<String> {
    use rayon::prelude::*;
    cases.par_iter().zip(results.par_iter()).map(|(c, d)| c.result_json(d)).collect()
}

fn run_batches(gpu: &Gpu, p: &PathSpec, cases: &[MmaCase]) -> anyhow::Result<(Vec<Vec<u64>>, usize)> {
    let bar = ProgressBar::new(cases.len() as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} tiles {per_sec}").expect("valid template"));
    let (mut out, mut nondet) = (Vec::with_capacity(cases.len()), 0);
    for batch in cases.chunks(BATCH) {
        let run = gpu.run_checked(p, batch)?;
        nondet += run.nondeterministic;
        out.extend(run.results);
        bar.inc(batch.len() as u64);
    }
    bar.finish_and_clear();
    Ok((out, nondet))
}

pub fn run(path_id: &str, device: usize, input: &Path, output: &Path) -> anyhow::Result<ExitCode> {
    let p = path(path_id)?;
    if p.module == mmafuzz::exec::Module::Cublas {
        return super::library_exec::run(path_id, device, input, output);
    }
    let (cases, batch) = read_tiles(input)?;
    if batch.is_some() {
        // An npz is one batch of one shape: a tile the path cannot run is an error for the file.
        if let Some((i, e)) = cases.par_iter().enumerate().find_map_first(|(i, c)| p.check(c).err().map(|e| (i, e))) {
            anyhow::bail!("{}: tile {i}: {e}", input.display());
        }
    }
    let gpu = Gpu::open(device)?;
    let (results, nondet) = run_batches(&gpu, p, &cases)?;
    write_results(output, &cases, &results, batch)?;
    if nondet > 0 {
        eprintln!("warning: {nondet} tiles differed between two runs of the same batch");
    }
    Ok(ExitCode::SUCCESS)
}

/// Run cases on the GPU and append them, with outputs and provenance, to the path's corpus file.
/// `generated` = (seed, count): the path's generated tiles instead of `input`'s cases.
pub fn record(path_id: &str, device: usize, input: &Path, generated: Option<(u64, u64)>, corpus: &Path, oracle: Option<(&str, &str)>) -> anyhow::Result<ExitCode> {
    let p = path(path_id)?;
    let cases: Vec<MmaCase> = match generated {
        Some((seed, count)) => (0..count).into_par_iter().map(|i| gen::case_at(p, seed, i)).collect(),
        None => read_tiles(input)?.0,
    };
    let (results, provenance, source) = match oracle {
        Some((spec, label)) => {
            let side = match mmafuzz::hunt::external::External::from_spec(spec) {
                Some(x) => x?,
                None => anyhow::bail!("--oracle '{spec}': expected external:CMD or external-npz:CMD"),
            };
            let mut results = Vec::with_capacity(cases.len());
            let bar = indicatif::ProgressBar::new(cases.len() as u64);
            for chunk in cases.chunks(4096) {
                results.extend(side.execute(chunk)?);
                bar.inc(chunk.len() as u64);
            }
            bar.finish_and_clear();
            let prov = json!({
                "oracle": label,
                "command": spec,
                "path": p.id,
                "date": mmafuzz::store::today_utc(),
                "tool": format!("mmafuzz {}", env!("CARGO_PKG_VERSION")),
            });
            (results, prov, label.to_string())
        }
        None => {
            let gpu = Gpu::open(device)?;
            let (results, nondet) = run_batches(&gpu, p, &cases)?;
            anyhow::ensure!(nondet == 0, "{nondet} tiles differed between two runs: not recording a nondeterministic path");
            (results, provenance(&gpu, p), gpu.info.name.clone())
        }
    };
    let lines: Vec<String> = cases
        .par_iter()
        .zip(&results)
        .map(|(c, d)| {
            let mut c = c.clone();
            c.extra.insert("provenance".into(), provenance.clone());
            mmafuzz::corpus::codec::encode_line(&c, d, Some(p), true)
        })
        .collect();
    let file = mmafuzz::store::jsonl_file(corpus, &p.id);
    mmafuzz::store::append_lines_atomically(&file, &lines).with_context(|| format!("cannot write {}", file.display()))?;
    println!("recorded {} tiles of {} from {source} into {}", lines.len(), p.id, file.display());
    Ok(ExitCode::SUCCESS)
}

/// Where a recorded tile comes from: GPU, compute capability, driver, path, date, tool.
pub fn provenance(gpu: &Gpu, p: &PathSpec) -> serde_json::Value {
    json!({
        "gpu": gpu.info.name,
        "cc": format!("{}.{}", gpu.info.compute_capability.0, gpu.info.compute_capability.1),
        "driver": gpu.info.driver,
        "path": p.id,
        "date": mmafuzz::store::today_utc(),
        "tool": format!("mmafuzz {}", env!("CARGO_PKG_VERSION")),
    })
}

/// Edge-biased cases of a path's shape and formats: case i of seed s is `gen::case_at(s, i)`,
/// so the recorder can store it by reference. To a `.npz` name: the tiles as arrays of raw bit
/// patterns, the path and seed in the header.
pub fn generate(path_id: &str, count: usize, seed: u64, output: &Path) -> anyhow::Result<ExitCode> {
    let p = path(path_id)?;
    if is_npz(output) {
        let cases: Vec<MmaCase> = (0..count as u64).into_par_iter().map(|i| gen::case_at(p, seed, i)).collect();
        let mut batch = Batch::from_cases(&cases).map_err(|e| anyhow::anyhow!("{}: {e}", output.display()))?;
        batch.header.insert("path".into(), p.id.into());
        batch.header.insert("seed".into(), seed.into());
        batch.write(output, false)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = AtomicOutput::create(output)?;
    for i in 0..count as u64 {
        let c = gen::case_at(p, seed, i);
        out.line(&serde_json::Value::Object(c.to_json()).to_string())?;
    }
    out.commit()?;
    Ok(ExitCode::SUCCESS)
}

pub fn bench(device: usize, batches: &str) -> anyhow::Result<ExitCode> {
    let gpu = Gpu::open(device)?;
    println!("{} (cc {}.{}, driver {}): mma.m16n8k16.f32.f16.f16.f32, upload + launch + download", gpu.info.name, gpu.info.compute_capability.0, gpu.info.compute_capability.1, gpu.info.driver);
    println!("{:>10} {:>14}", "batch", "tiles/s");
    for b in batches.split(',') {
        let batch: usize = b.trim().parse().with_context(|| format!("'{b}' is not a batch size"))?;
        let repeats = (8 << 20) / batch.max(1) + 2;
        let rate = gpu.bench_f16(batch, repeats)?;
        println!("{batch:>10} {rate:>14.3e}");
    }
    Ok(ExitCode::SUCCESS)
}
