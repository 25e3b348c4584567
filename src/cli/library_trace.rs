//! `mmafuzz library trace -- CMD...`: a program run under cuBLASLt's trace log, its GEMMs
//! written as kernel tables that `gemm --table`, `library config --table` and replay read.

use anyhow::Context;
use mmafuzz::library::trace::tables_of;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The GPU's name as the driver reports it, where nvidia-smi answers.
fn gpu_name() -> Option<String> {
    let out = std::process::Command::new("nvidia-smi").args(["--query-gpu=name", "--format=csv,noheader"]).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    text.lines().next().map(|l| l.trim().to_string()).filter(|l| !l.is_empty())
}

pub fn trace(out: &Path, gpu: Option<&str>, cublas: Option<&str>, keep_log: Option<&Path>, command: &[String]) -> anyhow::Result<ExitCode> {
    let (program, args) = command.split_first().context("give the program to run after --: mmafuzz library trace --out DIR -- python3 model.py")?;
    let dir = tempfile_dir()?;
    let log = dir.join("cublaslt.log");
    let status = std::process::Command::new(program)
        .args(args)
        .env("CUBLASLT_LOG_LEVEL", "5")
        .env("CUBLASLT_LOG_FILE", &log)
        .status()
        .with_context(|| format!("cannot run {program}"))?;
    let text = match std::fs::read(&log) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", log.display())),
    };
    if let Some(keep) = keep_log {
        mmafuzz::store::write_atomically(keep, text.as_bytes()).with_context(|| format!("cannot write {}", keep.display()))?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let name = gpu.map(str::to_string).or_else(gpu_name);
    let mut traced = tables_of(&text, &[]);
    let mut head = match &name {
        Some(n) => format!("gpu: {n}"),
        None => "gpu: unknown (no nvidia-smi; give --gpu-name)".to_string(),
    };
    if let Some(sm) = traced.sm_count {
        head.push_str(&format!(" ({sm} SMs)"));
    }
    if let Some(v) = cublas {
        head.push_str(&format!(", cuBLAS {v}"));
    }
    let provenance = vec![head, format!("traced by `mmafuzz library trace -- {}` on {}", command.join(" "), mmafuzz::store::today_utc())];
    for table in traced.tables.values_mut() {
        table.provenance = provenance.clone();
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot make {}", out.display()))?;
    for (path, table) in &traced.tables {
        let file = mmafuzz::library::learned_file(out, path, "configs");
        mmafuzz::store::write_atomically(&file, table.to_text().as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
        println!("{}: {} GEMM shapes, {} kernels", file.display(), table.len(), table.distinct());
    }
    println!("{} traced GEMMs{}", traced.calls, if traced.conflicts > 0 { format!(", {} seen again with another kernel (the first kept)", traced.conflicts) } else { String::new() });
    for (why, n) in &traced.skipped {
        println!("{n} GEMM(s) not tabled: {why}");
    }
    if traced.calls == 0 {
        println!("no cuBLASLt matmul was logged: did the program run its GEMMs on the GPU through PyTorch/cuBLAS?");
    }
    if !status.success() {
        eprintln!("{program} exited with {status}; the tables hold what it logged before");
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("mmafuzz-trace-{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    Ok(dir)
}
