//! The command line as a user drives it: interchange files in and out, bad lines reported by
//! number and field while the rest is processed, results written atomically.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn mmafuzz(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmafuzz"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    // A command that fails before reading its input closes the pipe; that is not a test failure.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

const GOOD: &str = r#"{"a_fmt":"f16","c_fmt":"f32","m":1,"n":1,"k":4,"a":["3c00","3c00","3c00","3c00"],"b":["0001","0001","0001","0001"],"c":["3f800000"],"id":"fasi-four-roundings"}"#;

#[test]
fn emulate_reads_and_writes_the_interchange_format() {
    // Fasi et al.: 1 + four times 2^-24 is 1 on V100 and 1 + 2^-22 exactly.
    let out = mmafuzz(&["emulate", "--model", "v100"], GOOD);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(line.trim_end().ends_with(r#""id":"fasi-four-roundings","d":["3f800000"]}"#), "{line}");
    let out = mmafuzz(&["emulate", "--model", "exact-rne"], GOOD);
    assert!(String::from_utf8(out.stdout).unwrap().contains(r#""d":["3f800002"]"#));
}

#[test]
fn malformed_lines_are_reported_and_the_rest_processed() {
    let bad_field = GOOD.replace(r#""k":4"#, r#""k":"four""#);
    let input = format!("{GOOD}\nnot json\n\n{bad_field}\n{GOOD}\n");
    let out = mmafuzz(&["emulate", "--model", "h100"], &input);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2:") && stderr.contains("not JSON"), "{stderr}");
    assert!(stderr.contains("line 4: field 'k'"), "{stderr}");
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2);
}

#[test]
fn reference_gives_the_correct_rounding_and_the_exact_value() {
    let out = mmafuzz(&["reference", "--rounding", "ru"], GOOD);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains(r#""d":["3f800002"]"#) && s.contains("4194305·2^-22"), "{s}");
}

#[test]
fn output_files_appear_only_complete() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("cases.jsonl");
    let output = dir.path().join("results.jsonl");
    std::fs::write(&input, format!("{GOOD}\n{GOOD}\n")).unwrap();
    std::fs::write(&output, "old results\n").unwrap();
    let args = ["emulate", "--model", "a100", "--in", input.to_str().unwrap(), "--out", output.to_str().unwrap()];
    let out = mmafuzz(&args, "");
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&output).unwrap().lines().count(), 2);
    // A missing input is one clear error, and the previous results stay as they were.
    std::fs::write(&output, "old results\n").unwrap();
    let missing = dir.path().join("nope.jsonl");
    let out = mmafuzz(&["emulate", "--model", "a100", "--in", missing.to_str().unwrap(), "--out", output.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: cannot open"));
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "old results\n");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".tmp")).collect();
    assert!(leftovers.is_empty());
}

#[test]
fn unknown_models_and_bad_model_files_are_clear_errors() {
    let out = mmafuzz(&["emulate", "--model", "b200"], GOOD);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("unknown model 'b200'") && e.contains("h100"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[blocks]\nwidth = 4\nc = \"fused\"\n[align]\nmode = \"sideways\"\n[accumulator]\nrounding = \"rz\"\n").unwrap();
    let out = mmafuzz(&["emulate", "--model", bad.to_str().unwrap()], GOOD);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sideways"));
}

#[test]
fn every_model_file_in_models_dir_is_the_embedded_one() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            files.push(path);
        }
    }
    // Model files only (models/h100/cublas/ holds the library models' learned kernel tables).
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    assert!(files.len() >= 30, "{}", files.len());
    for path in files {
        let from_file = mmafuzz::Model::load(path.to_str().unwrap()).unwrap();
        let embedded = mmafuzz::Model::load(&from_file.name).expect("every file is embedded");
        for f in mmafuzz::Format::ALL {
            assert_eq!(from_file.arithmetic(f), embedded.arithmetic(f), "{}", path.display());
        }
        assert_eq!(from_file.schedule, embedded.schedule, "{}", path.display());
    }
}

#[test]
fn probes_command_reports_every_published_outcome_reproduced() {
    let out = mmafuzz(&["probes"], "");
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("v100           reproduces 68 of 68"), "{s}");
    assert!(!s.contains("MISMATCH"));
}

#[test]
fn help_explains_the_commands() {
    let out = mmafuzz(&["--help"], "");
    let s = String::from_utf8(out.stdout).unwrap();
    for cmd in ["emulate", "reference", "probes", "gemm", "bench", "models"] {
        assert!(s.contains(cmd), "{s}");
    }
    let out = mmafuzz(&["emulate", "--help"], "");
    assert!(String::from_utf8(out.stdout).unwrap().contains("row-major"));
}

/// CI has no GPU: GPU commands say so in one line and exit 2, never panic.
#[test]
fn gpu_commands_without_a_gpu_fail_with_one_clear_line() {
    // SAFETY: only probes whether libcuda can be loaded.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        return; // a machine with a driver: this test is for the others
    }
    let record = vec!["record", "--path", "wgmma.m64n256k16.f32.f16.f16", "--count", "2", "--seed", "3", "--corpus", "target/no-gpu-corpus"];
    let engine = vec!["hunt", "--engine", "gpu", "--tiles", "10", "--findings", "target/no-gpu-findings"];
    let gpu_tiles = vec!["hunt", "--engine", "gpu-tiles", "--path", "mma.m16n8k16.f32.bf16.bf16.f32", "--tiles", "10", "--findings", "target/no-gpu-findings"];
    for args in [vec!["devices"], vec!["gpu-check"], vec!["run", "--path", "mma.m16n8k16.f32.f16.f16.f32"], record, engine, gpu_tiles, vec!["engine-check", "--tiles", "10"]] {
        let out = mmafuzz(&args, GOOD);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("no CUDA driver"), "{e}");
    }
    let out = mmafuzz(&["run", "--path", "mma.m1n1k1.f32"], "");
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown path"));
    // Generated tiles or a case file, not both.
    let out = mmafuzz(&["record", "--path", "wgmma.m64n16k16.f32.f16.f16", "--count", "2", "--in", "cases.jsonl"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

/// The library executor without a GPU: `library record` and `run` on a library path say so in
/// one line (exit 2); arguments are checked first, and the same GEMMs are still written in
/// torch-lib.py's --shapes form when asked.
#[test]
fn library_executor_without_a_gpu_fails_with_one_clear_line() {
    // SAFETY: only probes whether libcuda can be loaded.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rec.jsonl.gz");
    let jobs = dir.path().join("jobs.json");
    let (out_s, jobs_s) = (out.to_str().unwrap(), jobs.to_str().unwrap());
    let linear = r#"{"a_fmt":"f16","c_fmt":"f16","m":1,"n":2,"k":1,"a":["3c00"],"b":["3c00","3c00"],"bias":["0","0"]}"#;
    for (args, stdin) in [
        (vec!["library", "record", "--path", "cublas.gemm.f16.f16.f16.f16", "--shapes", "64x64x4096,1x300x257", "--beta", "bias", "--out", out_s, "--jobs-out", jobs_s], ""),
        (vec!["run", "--path", "cublas.gemm.f16.f16.f16.f16"], linear),
        (vec!["run", "--path", "cublaslt.matmul.f32.e4m3.e5m2.f32"], ""),
    ] {
        let o = mmafuzz(&args, stdin);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("no CUDA driver"), "{e}");
    }
    assert!(!out.exists(), "no record file without a GPU");
    let text = std::fs::read_to_string(&jobs).unwrap();
    assert!(text.contains(r#""bias":1"#) && text.contains(r#""seed":100001"#), "{text}");
    // Bad arguments are named before any GPU is looked for.
    for (args, want) in [
        (vec!["library", "record", "--shapes", "8x8x8", "--out", out_s], "--path is needed"),
        (vec!["library", "record", "--path", "cublas.gemm.f32.f16.f16.f32", "--shapes", "8x8x8", "--beta", "bias", "--out", out_s], "no bias on this path"),
        (vec!["library", "record", "--path", "cublaslt.matmul.f32.e4m3.e4m3.f32", "--shapes", "16x16x24", "--out", out_s], "multiples of 16"),
        (vec!["library", "record", "--path", "cublas.gemm.f16.f16.f16.f16", "--shapes", "8x8", "--out", out_s], "MxNxK"),
        (vec!["library", "record", "--path", "cublas.gemm.f17", "--shapes", "8x8x8", "--out", out_s], "not a library path"),
    ] {
        let o = mmafuzz(&args, "");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.lines().count() == 1 && e.contains(want), "{args:?}: {e}");
    }
}

#[test]
fn a_closed_output_pipe_ends_quietly() {
    // The reading end is closed before mmafuzz prints (like `mmafuzz probes | head -0`).
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmafuzz"))
        .arg("probes")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

/// `library compare-gpus` plans both GPUs' kernels on the H100 table's shapes: the bf16 torch.mm
/// at 192x1536x4096, traced on both, runs one chain on the H100 and splits K in two on the H200.
#[test]
fn compare_gpus_names_a_traced_difference() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(["library", "compare-gpus", "--path", "cublas.gemm.bf16.bf16.bf16.bf16", "--list", "400"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains(" mm 192x1536x4096:")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("(1 chain(s))") && line.contains("(2 chain(s), traced)"), "{line}");
    let row = text.lines().find(|l| l.starts_with("cublas.gemm.bf16.bf16.bf16.bf16") && l.contains(" mm ")).unwrap();
    let n: Vec<usize> = row.split_whitespace().skip(2).map(|x| x.parse().unwrap()).collect();
    assert_eq!(n[0], n[1] + n[2] + n[5], "shapes = same + differ + declined: {row}");
    let out = Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(["library", "compare-gpus", "--from", "h300"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no library model named h300:"));
}
