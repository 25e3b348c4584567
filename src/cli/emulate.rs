//! `mmafuzz emulate` and `mmafuzz reference`: stream cases through an executor in parallel.

use super::io::{open_input, AtomicOutput};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use mmafuzz::case::{hex, MmaCase};
use mmafuzz::{exact, Emulator, Model, Rounding};
use rayon::prelude::*;
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;

const CHUNK: usize = 4096;

/// Run `exec` on every case line, in parallel chunks, writing results in input order.
fn stream(input: &Path, output: &Path, exec: impl Fn(&MmaCase) -> Result<String, String> + Sync) -> anyhow::Result<ExitCode> {
    stream_lines(input, output, |line| MmaCase::from_json_line(line).map_err(|e| e.to_string()).and_then(|c| exec(&c)))
}

/// Run `exec` on every non-empty line, in parallel chunks, writing results in input order.
fn stream_lines(input: &Path, output: &Path, exec: impl Fn(&str) -> Result<String, String> + Sync) -> anyhow::Result<ExitCode> {
    let reader = open_input(input)?;
    let mut out = AtomicOutput::create(output)?;
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {pos} cases {per_sec} {msg}").expect("valid template"));
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
        let results: Vec<(usize, Result<String, String>)> = chunk
            .par_iter()
            .map(|(no, line)| {
                let r = exec(line);
                (*no, r)
            })
            .collect();
        for (no, r) in results {
            match r {
                Ok(s) => out.line(&s)?,
                Err(e) => {
                    errors += 1;
                    bar.suspend(|| eprintln!("error: line {no}: {e}"));
                }
            }
            done += 1;
        }
        bar.set_position(done as u64);
    }
    out.commit()?;
    bar.finish_and_clear();
    if errors > 0 {
        eprintln!("{done} lines read, {errors} rejected");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn emulate(model: &str, input: &Path, output: &Path) -> anyhow::Result<ExitCode> {
    let m = Model::load(model)?;
    if m.schedule.is_some() {
        return emulate_library(model, input, output);
    }
    let emu = Emulator::new(m);
    stream(input, output, |case| emu.run(case).map(|d| case.result_json(&d)).map_err(|e| e.to_string()))
}

/// A library model (`sm90:cublas.gemm...`): each line is a whole GEMM of any shape. Without
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
        let Value::Object(mut obj) = serde_json::from_str::<Value>(line).map_err(|e| format!("field '<line>': not JSON: {e}"))? else {
            return Err("field '<line>': expected a JSON object".into());
        };
        let dim = |key: &str| obj.get(key).and_then(Value::as_u64).map(|v| v as usize);
        let (m, n) = (dim("m").ok_or("field 'm': missing")?, dim("n").ok_or("field 'n': missing")?);
        let had_c = obj.contains_key("c");
        if !had_c {
            obj.insert("c".into(), Value::Array(vec![Value::String("0".into()); m * n]));
        }
        let bias = obj.shift_remove("bias");
        let config = match obj.shift_remove("config") {
            None => None,
            Some(Value::String(s)) => Some(KernelConfig::from_log(&s).map_err(|e| format!("field 'config': {e}"))?),
            Some(_) => return Err("field 'config': expected cuBLASLt's algo=[...] text".into()),
        };
        let case = MmaCase::from_json(obj).map_err(|e| e.to_string())?;
        if case.a_fmt != rules.inputs || case.b_fmt != rules.b_inputs() || case.c_fmt != rules.output {
            return Err(format!(
                "field 'a_fmt': {} takes A {}, B {}, C/D {} (got {}, {}, {})",
                lm.chain.name, rules.inputs, rules.b_inputs(), rules.output, case.a_fmt, case.b_fmt, case.c_fmt
            ));
        }
        let bias = match bias {
            None => None,
            Some(Value::Array(items)) if items.len() == n && !had_c => Some(
                items
                    .iter()
                    .map(|v| v.as_str().and_then(|s| u64::from_str_radix(s, 16).ok()).filter(|b| b & !rules.output.mask() == 0))
                    .collect::<Option<Vec<u64>>>()
                    .ok_or(format!("field 'bias': not {n} {} bit patterns", rules.output))?,
            ),
            Some(_) => return Err(format!("field 'bias': expected {n} hex elements and no 'c'")),
        };
        let g = Gemm { m, n, k: case.k, a: case.a.clone(), b: case.b.clone(), c: had_c.then(|| case.c.clone()), bias };
        emu.check(&g).map_err(|e| e.to_string())?;
        let config = match config {
            Some(c) => c,
            None => emu.config(&g).map_err(|e| e.to_string())?.clone(),
        };
        let plan = emu.plan(&g, &config).map_err(|e| e.to_string())?;
        let d = emu.run(&g, &plan, &|_| ()).map_err(|e| e.to_string())?;
        let mut out = case.to_json();
        if !had_c {
            out.shift_remove("c");
        }
        out.insert("config".into(), config.to_log().into());
        out.insert("d".into(), Value::Array(d.iter().map(|&b| hex(b, rules.output).into()).collect()));
        Ok(Value::Object(out).to_string())
    };
    stream_lines(input, output, run)
}

pub fn reference(input: &Path, output: &Path, rounding: Rounding) -> anyhow::Result<ExitCode> {
    stream(input, output, |case| {
        let xs = exact::exact_tile(case);
        let d: Vec<u64> = xs.iter().map(|x| x.round(case.c_fmt, rounding)).collect();
        let mut obj = case.to_json();
        obj.insert("d".into(), Value::Array(d.iter().map(|&b| hex(b, case.c_fmt).into()).collect()));
        obj.insert("exact".into(), Value::Array(xs.iter().map(|x| x.describe().into()).collect()));
        Ok(Value::Object(obj).to_string())
    })
}
