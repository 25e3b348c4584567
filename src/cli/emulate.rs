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
                let r = MmaCase::from_json_line(line).map_err(|e| e.to_string()).and_then(|c| exec(&c));
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
    let emu = Emulator::new(Model::load(model)?);
    stream(input, output, |case| emu.run(case).map(|d| case.result_json(&d)).map_err(|e| e.to_string()))
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
