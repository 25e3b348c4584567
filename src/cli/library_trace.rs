//! `mmafuzz library trace -- CMD...`: a program run under cuBLASLt's trace log, its GEMMs
//! written as kernel tables that `gemm --table`, `library config --table` and replay read; with
//! `--devices`, run on each GPU named, and GPUs of one name checked to choose the same kernels.

use anyhow::Context;
use mmafuzz::library::table::ConfigTable;
use mmafuzz::library::trace::{tables_of, TraceTables};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The GPUs nvidia-smi lists, as (index, name), in PCI bus order (the order
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID` gives CUDA's ordinals); empty where nvidia-smi does not answer.
fn listed_gpus() -> Vec<(usize, String)> {
    let Ok(out) = std::process::Command::new("nvidia-smi").args(["--query-gpu=index,name", "--format=csv,noheader"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (i, name) = l.split_once(',')?;
            Some((i.trim().parse().ok()?, name.trim().to_string()))
        })
        .collect()
}

/// The GPU a program run without `--devices` uses first: the first of CUDA_VISIBLE_DEVICES
/// where that is an ordinal, else 0.
fn default_device() -> usize {
    std::env::var("CUDA_VISIBLE_DEVICES").ok().and_then(|v| v.split(',').next().and_then(|d| d.trim().parse().ok())).unwrap_or(0)
}

/// One run of the program under the log, on `device` alone where given; its exit status and log.
fn run_logged(program: &str, args: &[String], device: Option<usize>) -> anyhow::Result<(std::process::ExitStatus, String)> {
    let dir = tempfile_dir()?;
    let log = dir.join("cublaslt.log");
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).env("CUBLASLT_LOG_LEVEL", "5").env("CUBLASLT_LOG_FILE", &log);
    if let Some(d) = device {
        cmd.env("CUDA_DEVICE_ORDER", "PCI_BUS_ID").env("CUDA_VISIBLE_DEVICES", d.to_string());
    }
    let status = cmd.status().with_context(|| format!("cannot run {program}"));
    let text = match std::fs::read(&log) {
        Ok(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", log.display())),
    };
    let _ = std::fs::remove_dir_all(&dir);
    Ok((status?, text?))
}

/// `mmafuzz library trace`: `devices` (`None`: the program as it is, on whatever GPU it picks)
/// names the GPUs to run it on one after another, each alone; the first one's tables go to
/// `out`, each other's to `out/gpu-N`, and GPUs of the first one's name must choose its kernels
/// at every shape both traced.
pub fn trace(out: &Path, gpu: Option<&str>, cublas: Option<&str>, keep_log: Option<&Path>, devices: Option<&str>, command: &[String]) -> anyhow::Result<ExitCode> {
    let (program, args) = command.split_first().context("give the program to run after --: mmafuzz library trace --out DIR -- python3 model.py")?;
    let listed = listed_gpus();
    let name_of = |d: usize| gpu.map(str::to_string).or_else(|| listed.iter().find(|g| g.0 == d).map(|g| g.1.clone()));
    let runs: Vec<(Option<usize>, PathBuf)> = match devices {
        None => vec![(None, out.to_path_buf())],
        Some(spec) => {
            let ordinals = match super::gpu::parse_ordinals(spec)? {
                Some(named) => named,
                None => {
                    anyhow::ensure!(!listed.is_empty(), "--devices all: nvidia-smi lists no GPU here");
                    listed.iter().map(|g| g.0).collect()
                }
            };
            ordinals.iter().enumerate().map(|(i, &d)| (Some(d), if i == 0 { out.to_path_buf() } else { out.join(format!("gpu-{d}")) })).collect()
        }
    };
    let mut failed = false;
    let mut first: Option<(usize, Option<String>, TraceTables)> = None;
    for (device, dir) in runs {
        let d = device.unwrap_or_else(default_device);
        if devices.is_some() {
            println!("== GPU {d}{}", name_of(d).map(|n| format!(": {n}")).unwrap_or_default());
        }
        let (status, text) = run_logged(program, args, device)?;
        if let Some(keep) = keep_log {
            let keep = match device {
                Some(d) if first.is_some() => keep.with_extension(format!("gpu-{d}.log")),
                _ => keep.to_path_buf(),
            };
            mmafuzz::store::write_atomically(&keep, text.as_bytes()).with_context(|| format!("cannot write {}", keep.display()))?;
        }
        let name = name_of(d);
        let traced = write_tables(&dir, tables_of(&text, &[]), name.as_deref(), d, cublas, command)?;
        if !status.success() {
            eprintln!("{program} exited with {status}; the tables hold what it logged before");
            failed = true;
        }
        match &first {
            None => first = Some((d, name, traced)),
            Some((d0, name0, theirs)) if name.is_some() && *name0 == name => {
                let (both, differ) = compare_tables(&theirs.tables, &traced.tables);
                if differ.is_empty() {
                    println!("GPU {d} chose GPU {d0}'s kernel at all {both} GEMM shapes both traced");
                } else {
                    failed = true;
                    println!("GPU {d} chose another kernel than GPU {d0} at {} of {both} GEMM shapes both traced:", differ.len());
                    for line in differ.iter().take(10) {
                        println!("  {line}");
                    }
                }
            }
            Some((d0, ..)) => println!("GPU {d} is another GPU than GPU {d0}: its tables are its own (not compared)"),
        }
    }
    Ok(if failed { ExitCode::from(2) } else { ExitCode::SUCCESS })
}

/// Write a run's tables into `out` with their provenance (the GPU's name, device index, SM
/// count, cuBLAS version, the command and date) and report them.
fn write_tables(out: &Path, mut traced: TraceTables, name: Option<&str>, device: usize, cublas: Option<&str>, command: &[String]) -> anyhow::Result<TraceTables> {
    let mut head = match name {
        Some(n) => format!("gpu: {n}"),
        None => "gpu: unknown (no nvidia-smi; give --gpu-name)".to_string(),
    };
    if let Some(sm) = traced.sm_count {
        head.push_str(&format!(" ({sm} SMs)"));
    }
    if let Some(v) = cublas {
        head.push_str(&format!(", cuBLAS {v}"));
    }
    let provenance = vec![head, format!("traced by `mmafuzz library trace -- {}` on GPU {device}, {}", command.join(" "), mmafuzz::store::today_utc())];
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
    Ok(traced)
}

/// Shapes (with call kind) two runs' tables both hold, and those where the kernels differ, one
/// line each.
pub(crate) fn compare_tables(a: &BTreeMap<String, ConfigTable>, b: &BTreeMap<String, ConfigTable>) -> (usize, Vec<String>) {
    let (mut both, mut differ) = (0, Vec::new());
    for (path, ta) in a {
        let Some(tb) = b.get(path) else { continue };
        for ((m, n, k, op), ca) in ta.iter() {
            let Some(cb) = tb.get(m, n, k, op) else { continue };
            both += 1;
            if ca != cb {
                differ.push(format!("{path} {op} {m}x{n}x{k}: {ca} | {cb}"));
            }
        }
    }
    (both, differ)
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("mmafuzz-trace-{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    Ok(dir)
}
