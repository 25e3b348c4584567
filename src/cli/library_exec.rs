//! `mmafuzz library record` and `mmafuzz run --path <library path>`: whole GEMMs through our
//! own cuBLAS/cuBLASLt executor (`mmafuzz::exec::library`), called as PyTorch calls them.

use anyhow::Context;
use super::gemm_line::GemmLine;
use mmafuzz::exec::library::{library_path, LibraryExecutor, LibraryGemm, LIBRARY_PATHS};
use mmafuzz::exec::Gpu;
use mmafuzz::library::capture::{self, Addend, GemmJob, Provenance};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;

fn known_paths() -> String {
    LIBRARY_PATHS.iter().map(|p| p.id).collect::<Vec<_>>().join(", ")
}

/// The NVIDIA kernel module's version ("580.159.04", as nvidia-smi names the driver), else the
/// CUDA driver API version the GPU reports.
fn driver_version(gpu: &Gpu) -> String {
    std::fs::read_to_string("/proc/driver/nvidia/version")
        .ok()
        .and_then(|t| {
            // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
            // the first dotted number after "Module".
            let words: Vec<&str> = t.split_whitespace().collect();
            let from = words.iter().position(|w| *w == "Module")?;
            words[from..].iter().find(|w| w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.')).map(|s| s.to_string())
        })
        .unwrap_or_else(|| gpu.info.driver.clone())
}

/// The jobs of `library record`: `--shapes` is a list `MxNxK,...` (with `--path` and `--beta`)
/// or a JSON file in torch-lib.py's `--shapes` form (`--path` then keeps only that path).
pub fn jobs(path: Option<&str>, seed: u64, shapes: &str, beta: &str) -> anyhow::Result<Vec<GemmJob>> {
    let addend: Addend = beta.parse().map_err(|e: String| anyhow::anyhow!("--beta: {e}"))?;
    let jobs = if shapes.ends_with(".json") {
        let text = std::fs::read_to_string(shapes).with_context(|| format!("cannot read {shapes}"))?;
        let all = capture::jobs_from_json(&text, seed).map_err(|e| anyhow::anyhow!("{shapes}: {e}"))?;
        all.into_iter().filter(|j| path.is_none_or(|p| p == j.path)).collect()
    } else {
        let path = path.ok_or_else(|| anyhow::anyhow!("--path is needed with --shapes MxNxK,... (one of: {})", known_paths()))?;
        let dims = capture::parse_shapes(shapes).map_err(|e| anyhow::anyhow!("--shapes: {e}"))?;
        capture::jobs_for_shapes(path, seed, &dims, addend)
    };
    anyhow::ensure!(!jobs.is_empty(), "no GEMMs to record");
    for j in &jobs {
        let p = library_path(&j.path).ok_or_else(|| anyhow::anyhow!("'{}' is not a library path (one of: {})", j.path, known_paths()))?;
        capture::check_job(j, p).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(jobs)
}

/// Run the jobs on GPU `device` and write one record line each to `out` (atomically); with
/// `trace`, every line cuBLASLt logged, call by call; with `jobs_out`, the same GEMMs in
/// torch-lib.py's `--shapes` form.
pub fn record(jobs: &[GemmJob], device: usize, out: &Path, trace: Option<&Path>, jobs_out: Option<&Path>) -> anyhow::Result<ExitCode> {
    if let Some(file) = jobs_out {
        mmafuzz::store::write_atomically(file, capture::jobs_to_json(jobs).as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
    }
    let gpu = Gpu::open(device)?;
    let exec = LibraryExecutor::new(&gpu)?;
    let provenance = Provenance { gpu: gpu.info.name.clone(), driver: driver_version(&gpu), cublas: exec.cublas_version.clone(), executor: format!("mmafuzz {}", env!("CARGO_PKG_VERSION")) };
    let mut lines = Vec::with_capacity(jobs.len());
    let mut log_text = String::new();
    let mut per_path: Vec<(String, usize, usize, f64)> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let p = library_path(&job.path).expect("checked in jobs()");
        let start = std::time::Instant::now();
        let run = exec.run(p, &capture::operands(job, p)).with_context(|| format!("GEMM {} ({} {}x{}x{} seed {})", i + 1, job.path, job.m, job.n, job.k, job.seed))?;
        let rec = capture::record(job, p, &run, &provenance);
        if per_path.last().is_none_or(|l| l.0 != job.path) {
            per_path.push((job.path.clone(), 0, 0, 0.0));
        }
        let last = per_path.last_mut().expect("pushed");
        last.1 += 1;
        last.2 += rec.config.is_some() as usize;
        last.3 += start.elapsed().as_secs_f64();
        if trace.is_some() {
            log_text.push_str(&format!("# GEMM {} {} {}x{}x{} seed {}\n", i + 1, job.path, job.m, job.n, job.k, job.seed));
            for (f, m) in &run.log {
                log_text.push_str(&format!("[{f}] {m}\n"));
            }
        }
        lines.push(serde_json::to_string(&rec)?);
    }
    mmafuzz::store::write_lines_atomically(out, &lines).with_context(|| format!("cannot write {}", out.display()))?;
    if let Some(file) = trace {
        mmafuzz::store::write_atomically(file, log_text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
    }
    for (path, n, configs, secs) in &per_path {
        println!("{path}: {n} GEMMs ({configs} with a logged configuration) in {secs:.1}s");
    }
    println!("{} records in {} ({}, driver {}, cuBLAS {})", lines.len(), out.display(), provenance.gpu, provenance.driver, provenance.cublas);
    Ok(ExitCode::SUCCESS)
}

/// `mmafuzz run --path <library path>`: each JSONL line is a whole GEMM of any shape, as
/// `emulate` reads it under a library model: without `"c"` β = 0 (torch.mm), with `"c"` β = 1
/// (torch.addmm), `"bias"` (n elements in D's format) instead of `"c"` F.linear's bias
/// epilogue. The result line adds `"d"` and the `"config"` cuBLASLt logged for the call.
pub fn run(path_id: &str, device: usize, input: &Path, output: &Path) -> anyhow::Result<ExitCode> {
    let lib = library_path(path_id).ok_or_else(|| anyhow::anyhow!("'{path_id}' is not a library path (one of: {})", known_paths()))?;
    anyhow::ensure!(!mmafuzz::npz::is_npz(input) && !mmafuzz::npz::is_npz(output), "{path_id} runs whole GEMMs of any shape, one JSONL line each (no .npz)");
    let gpu = Gpu::open(device)?;
    let exec = Mutex::new(LibraryExecutor::new(&gpu)?);
    let work = |line: &str| -> Result<String, String> {
        let l = GemmLine::parse(line, (lib.a_fmt, lib.b_fmt, lib.d_fmt), lib.id)?;
        let g = LibraryGemm { m: l.m, n: l.n, k: l.case.k, a: l.case.a.clone(), b: l.case.b.clone(), b_transposed: false, c: l.c(), bias: l.bias.clone() };
        let run = exec.lock().map_err(|_| "the GPU executor failed earlier".to_string())?.run(lib, &g).map_err(|e| e.to_string())?;
        Ok(l.answer(run.config(), &run.d))
    };
    super::emulate::stream_lines(input, output, work)
}
