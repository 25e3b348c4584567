//! `mmafuzz emulate` and `mmafuzz reference`: stream cases through an executor in parallel,
//! from and to JSONL or `.npz` (either way round).

use super::io::{open_input, AtomicOutput};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use mmafuzz::case::{hex, MmaCase};
use mmafuzz::npz::{is_npz, Batch};
use mmafuzz::{exact, Emulator, Model, Rounding};
use rayon::prelude::*;
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;

const CHUNK: usize = 4096;

/// Tiles per chunk of an npz batch: about 1 MiB of the chunk's cases (a u64 per element), so
/// that a tile's operands are still in cache when it runs (at 4,096 m16n8k16 tiles a chunk's
/// cases were 16 MiB, read back from memory), and at least 32 tiles for the threads to share.
fn npz_chunk(batch: &Batch) -> usize {
    let elements = batch.m * batch.k + batch.k * batch.n + 2 * batch.m * batch.n;
    ((1 << 20) / (8 * elements.max(1))).clamp(32, CHUNK)
}

fn spinner() -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {pos} cases {per_sec} {msg}").expect("valid template"));
    bar
}

/// Run `work` on every non-empty line, in parallel chunks, and hand each success to `take`
/// with its line number, in input order. A failed line is reported and counted; returns
/// (lines read, lines rejected).
fn for_each_line<R: Send>(
    input: &Path,
    work: impl Fn(&str) -> Result<R, String> + Sync,
    mut take: impl FnMut(usize, R) -> anyhow::Result<()>,
) -> anyhow::Result<(usize, usize)> {
    let reader = open_input(input)?;
    let bar = spinner();
    let (mut errors, mut done) = (0usize, 0usize);
    let mut lines = reader.lines().enumerate();
    loop {
        let mut chunk = Vec::with_capacity(CHUNK);
        for (no, line) in lines.by_ref() {
            let line = line.with_context(|| format!("cannot read line {}", no + 1))?;
            if line.trim().is_empty() {
                continue;
            }
            chunk.push((no + 1, line));
            if chunk.len() == CHUNK {
                break;
            }
        }
        if chunk.is_empty() {
            break;
        }
        let results: Vec<(usize, Result<R, String>)> = chunk.par_iter().map(|(no, line)| (*no, work(line))).collect();
        for (no, r) in results {
            match r {
                Ok(r) => take(no, r)?,
                Err(e) => {
                    errors += 1;
                    bar.suspend(|| eprintln!("error: line {no}: {e}"));
                }
            }
            done += 1;
        }
        bar.set_position(done as u64);
    }
    bar.finish_and_clear();
    Ok((done, errors))
}

/// Exit status 1 when some lines were rejected.
fn line_status((done, errors): (usize, usize)) -> ExitCode {
    if errors > 0 {
        eprintln!("{done} lines read, {errors} rejected");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// Run `exec` on every non-empty line, in parallel chunks, writing results in input order.
pub(super) fn stream_lines(input: &Path, output: &Path, exec: impl Fn(&str) -> Result<String, String> + Sync) -> anyhow::Result<ExitCode> {
    let mut out = AtomicOutput::create(output)?;
    let counts = for_each_line(input, exec, |_, s| out.line(&s))?;
    out.commit()?;
    Ok(line_status(counts))
}

/// What an executor makes of one tile: its D, and the JSONL result line when one is wanted
/// (the reference's adds the exact values, which an npz has no place for).
struct Executor<'m, E, L> {
    exec: E,
    line: L,
    /// An npz out holds d and the header only (`--d-only`).
    d_only: bool,
    /// From npz to npz (`emulate`): D of runs of tiles of one shape into a slice at once, by
    /// this emulator ([`Emulator::run_many_le`] on the tiles as they lie in the file, or
    /// [`Emulator::run_many_validated`] on their cases); `exec` tile by tile without it.
    many: Option<&'m Emulator>,
}

/// At most this many tiles a thread takes at a time in [`Executor::run_chunks_many`] (fewer
/// where a chunk would otherwise not give every thread a few runs).
const MANY: usize = 32;

impl<T: Send, E: Fn(&MmaCase) -> Result<T, String> + Sync, L: Fn(&MmaCase, &T) -> String + Sync> Executor<'_, E, L> {
    /// Run on every tile of `input` (JSONL or npz) and write `output` (JSONL or npz), in
    /// parallel chunks, results in input order. An npz in is one batch: a bad tile is an error
    /// for the file. Lines of JSONL in are rejected one by one, as ever.
    fn stream(&self, input: &Path, output: &Path, d_of: impl Fn(&T) -> &[u64] + Sync) -> anyhow::Result<ExitCode> {
        // On a thread of the pool, so that each chunk's parallel steps start there: with one
        // thread they run in place, not handed to the pool and waited for (about 15 thread
        // switches a chunk).
        let d_of = &d_of;
        rayon::scope(|_| self.stream_in_pool(input, output, d_of))
    }

    fn stream_in_pool(&self, input: &Path, output: &Path, d_of: impl Fn(&T) -> &[u64] + Sync) -> anyhow::Result<ExitCode> {
        anyhow::ensure!(!self.d_only || is_npz(output), "--d-only is for an .npz out ({} is JSONL, whose lines carry their cases)", output.display());
        if is_npz(input) {
            return self.stream_npz(input, output, d_of);
        }
        let work = |line: &str| {
            let case = MmaCase::from_json_line(line).map_err(|e| e.to_string())?;
            let r = (self.exec)(&case)?;
            Ok((case, r))
        };
        if !is_npz(output) {
            return stream_lines(input, output, |line| work(line).map(|(case, r)| (self.line)(&case, &r)));
        }
        let (mut cases, mut ds, mut line_nos) = (Vec::new(), Vec::new(), Vec::new());
        let counts = for_each_line(input, work, |no, (case, r): (MmaCase, T)| {
            ds.push(d_of(&r).to_vec());
            cases.push(case);
            line_nos.push(no);
            Ok(())
        })?;
        let mut batch = Batch::from_cases(&cases).map_err(|e| match e.tile {
            Some(i) => anyhow::anyhow!("{}: line {}: the case {}", output.display(), line_nos[i], e.message),
            None => anyhow::anyhow!("{}: {}", output.display(), e.message),
        })?;
        batch.set_d(0, &ds);
        batch.write(output, self.d_only)?;
        Ok(line_status(counts))
    }

    /// An npz in: tiles converted and run in parallel chunks; D written into the npz out as
    /// each chunk is done (the input members kept as they came), or result lines (JSONL out).
    fn stream_npz(&self, input: &Path, output: &Path, d_of: impl Fn(&T) -> &[u64] + Sync) -> anyhow::Result<ExitCode> {
        let batch = Batch::read(input)?;
        if let (true, Some(many)) = (is_npz(output), self.many) {
            batch.write_with_d(output, self.d_only, |sink| self.run_chunks_many(&batch, input, many, |d| Ok(sink.put(&d.chunks(batch.m * batch.n).collect::<Vec<_>>())?)))?;
        } else if is_npz(output) {
            batch.write_with_d(output, self.d_only, |sink| self.run_chunks(&batch, input, |_, results| Ok(sink.put(&results.iter().map(&d_of).collect::<Vec<&[u64]>>())?)))?;
        } else {
            let mut out = AtomicOutput::create(output)?;
            self.run_chunks(&batch, input, |cases, results| cases.iter().zip(results).try_for_each(|(case, r)| out.line(&(self.line)(case, r))))?;
            out.commit()?;
        }
        Ok(ExitCode::SUCCESS)
    }

    /// Every tile of `batch` run, a chunk at a time in parallel, each chunk's cases and
    /// results handed to `take` in tile order.
    fn run_chunks(&self, batch: &Batch, input: &Path, mut take: impl FnMut(&[MmaCase], &[T]) -> anyhow::Result<()>) -> anyhow::Result<()> {
        for_each_chunk(batch, |first, cases| {
            let results = cases
                .par_iter()
                .enumerate()
                .map(|(i, case)| (self.exec)(case).map_err(|e| anyhow::anyhow!("{}: tile {}: {e}", input.display(), first + i)))
                .collect::<anyhow::Result<Vec<T>>>()?;
            take(cases, &results)
        })
    }

    /// [`Executor::run_chunks`] through `emu`'s runs of tiles: each chunk's D, tile after tile,
    /// handed to `take` as one slice (no vector per tile). Where the batch's tiles can be read
    /// in place ([`Batch::le_tiles`]) no case is made but for a tile the kernel cannot finish.
    fn run_chunks_many(&self, batch: &Batch, input: &Path, emu: &Emulator, mut take: impl FnMut(&[u64]) -> anyhow::Result<()>) -> anyhow::Result<()> {
        let size = batch.m * batch.n;
        let le = batch.le_tiles();
        let mut d = Vec::new();
        let mut cases = Vec::new();
        for_each_range(batch, |tiles| {
            let first = tiles.start;
            d.resize(tiles.len() * size, 0);
            // Runs of up to MANY tiles, at least four a thread (64x8 wgmma chunks hold 60 tiles).
            let per = (tiles.len() / (4 * rayon::current_num_threads())).clamp(1, MANY);
            if le.is_none() {
                batch.cases_into(tiles.clone(), &mut cases)?;
            }
            let cases = &cases;
            let run = |start: usize, d: &mut [u64]| -> Result<(), (usize, String)> {
                let Some(le) = &le else {
                    return emu.run_many_validated(&cases[start - first..][..d.len() / size], d).map_err(|(t, e)| (start + t, e.to_string()));
                };
                let alone = |t: usize, d: &mut [u64]| {
                    let case = batch.case(start + t).map_err(|e| (start + t, e.to_string()))?;
                    d.copy_from_slice(&emu.run_validated(&case).map_err(|e| (start + t, e.to_string()))?);
                    Ok(())
                };
                emu.run_many_le(&le.like, (start..start + d.len() / size).map(|t| le.tile(t)), d, alone)
            };
            let failed: Vec<(usize, String)> = d.par_chunks_mut(per * size).enumerate().filter_map(|(r, d)| run(first + r * per, d).err()).collect();
            // In tile order: the first bad tile's error.
            if let Some((t, e)) = failed.into_iter().min_by_key(|(t, _)| *t) {
                anyhow::bail!("{}: tile {t}: {e}", input.display());
            }
            take(&d)
        })
    }
}

/// Every tile of `batch`, a chunk of tiles at a time handed to `each`; a spinner counts.
fn for_each_range(batch: &Batch, mut each: impl FnMut(std::ops::Range<usize>) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let bar = spinner();
    let chunk = npz_chunk(batch);
    for first in (0..batch.tiles).step_by(chunk) {
        let end = (first + chunk).min(batch.tiles);
        each(first..end)?;
        bar.set_position(end as u64);
    }
    bar.finish_and_clear();
    Ok(())
}

/// Every tile of `batch` as cases, a chunk at a time (converted in parallel, their buffers
/// reused from chunk to chunk), handed to `each` with the chunk's first tile; a spinner counts.
fn for_each_chunk(batch: &Batch, mut each: impl FnMut(usize, &[MmaCase]) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let mut cases = Vec::new();
    for_each_range(batch, |tiles| {
        let first = tiles.start;
        batch.cases_into(tiles, &mut cases)?;
        each(first, &cases)
    })
}

pub fn emulate(model: &str, input: &Path, output: &Path, d_only: bool) -> anyhow::Result<ExitCode> {
    let m = Model::load(model)?;
    if m.schedule.is_some() {
        anyhow::ensure!(!is_npz(input) && !is_npz(output) && !d_only, "{model} is a library model: its cases are whole GEMMs of any shape, one JSONL line each (no .npz)");
        return emulate_library(model, input, output);
    }
    let emu = Emulator::new(m);
    // Every case reaching `exec` was checked when it was read (a JSONL line or an npz tile).
    let exec = Executor {
        exec: |case: &MmaCase| emu.run_validated(case).map_err(|e| e.to_string()),
        line: |case: &MmaCase, d: &Vec<u64>| case.result_json(d),
        d_only,
        many: Some(&emu),
    };
    exec.stream(input, output, |d| d)
}

/// A library model (`h200:cublas.gemm...`): each line is a whole GEMM of any shape. Without
/// `"c"` it is β = 0 (torch.mm); with `"c"` β = 1 (torch.addmm); `"bias"` (n elements in D's
/// format) instead of `"c"` is F.linear's bias epilogue. The kernel configuration comes from
/// the line's `"config"` (cuBLASLt's `algo=[...]` text) or else the model's learned table;
/// a shape outside the table is an error for that line, not a guess.
fn emulate_library(model: &str, input: &Path, output: &Path) -> anyhow::Result<ExitCode> {
    use mmafuzz::library::gemm::{Gemm, LibraryEmulator};
    use mmafuzz::library::{KernelConfig, LibraryModel};
    let lm = LibraryModel::load(model, None)?;
    let emu = LibraryEmulator::new(&lm);
    let rules = &lm.rules;
    let run = |line: &str| -> Result<String, String> {
        let l = super::gemm_line::GemmLine::parse(line, (rules.inputs, rules.b_inputs(), rules.output), &lm.chain.name)?;
        let config = match &l.config {
            None => None,
            Some(Value::String(s)) => Some(KernelConfig::from_log(s).map_err(|e| format!("field 'config': {e}"))?),
            Some(_) => return Err("field 'config': expected cuBLASLt's algo=[...] text".into()),
        };
        let g = Gemm { m: l.m, n: l.n, k: l.case.k, a: l.case.a.clone(), b: l.case.b.clone(), c: l.c(), bias: l.bias.clone() }.as_torch_linear();
        emu.check(&g).map_err(|e| e.to_string())?;
        let config = match config {
            Some(c) => c,
            None => emu.config(&g).map_err(|e| e.to_string())?.clone(),
        };
        let plan = emu.plan(&g, &config).map_err(|e| e.to_string())?;
        let d = emu.run(&g, &plan, &|_| ()).map_err(|e| e.to_string())?;
        Ok(l.answer(Some(config.to_log()), &d))
    };
    stream_lines(input, output, run)
}

pub fn reference(input: &Path, output: &Path, d_only: bool, rounding: Rounding) -> anyhow::Result<ExitCode> {
    let exec = Executor {
        exec: |case: &MmaCase| {
            let xs = exact::exact_tile(case);
            let d: Vec<u64> = xs.iter().map(|x| x.round(case.d_fmt, rounding)).collect();
            Ok((d, xs))
        },
        line: |case: &MmaCase, (d, xs): &(Vec<u64>, Vec<exact::Exact>)| {
            let mut obj = case.to_json();
            obj.insert("d".into(), Value::Array(d.iter().map(|&b| hex(b, case.d_fmt).into()).collect()));
            obj.insert("exact".into(), Value::Array(xs.iter().map(|x| x.describe().into()).collect()));
            Value::Object(obj).to_string()
        },
        d_only,
        many: None,
    };
    exec.stream(input, output, |(d, _)| d)
}
