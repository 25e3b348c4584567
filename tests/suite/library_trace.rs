//! `mmafuzz library trace -- CMD`: a program's cuBLASLt log made into tables that the other
//! commands take with `--table`. The program here writes lines an H200 logged (torch 2.11,
//! cuBLAS 13.1.0) where cuBLASLt would, so the test needs no GPU.

use std::process::Command;

const LINES: &str = "\
[2026-12-01 19:50:12][cublasLt][1090][Trace][cublasLtHSHMatmul] A=0X1 Adesc=[type=R_16F rows=448 cols=5440 ld=448] B=0X2 Bdesc=[type=R_16F rows=448 cols=1 ld=448] C=0X3 Cdesc=[type=R_16F rows=5440 cols=1 ld=5440] D=0X3 Ddesc=[type=R_16F rows=5440 cols=1 ld=5440] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T smCountTarget=132] algo=[algoId=66 tile=MATMUL_TILE_64x8 stages=MATMUL_STAGES_64xAUTO customOption=1 clusterShape=CLUSTER_SHAPE_4x1x1] workSpace=0X0 workSpaceSizeInBytes=0 beta=0 outOfPlace=0 stream=0X0
[2026-12-01 19:50:48][cublasLt][1107][Trace][cublasLtMatmul] A=0X1 Adesc=[type=R_16F rows=30739 cols=19 ld=30739] B=0X2 Bdesc=[type=R_16F rows=30739 cols=7 ld=30739] C=0X3 Cdesc=[type=R_16F rows=19 cols=7 ld=19] D=0X3 Ddesc=[type=R_16F rows=19 cols=7 ld=19] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T epilogue=EPILOGUE_BIAS biasPointer=0x4] algo=[algoId=24 tile=MATMUL_TILE_64x64 reductionScheme=REDUCTION_SCHEME_OUTPUT_TYPE numSplitsK=75] workSpace=0X5 workSpaceSizeInBytes=1048576 beta=0 outOfPlace=0 stream=0X0
";

fn mmafuzz(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(args).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_traced_program_gives_tables_the_models_take() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines.log");
    std::fs::write(&lines, LINES).unwrap();
    let out = dir.path().join("tables");
    let program = format!("cat '{}' >> \"$CUBLASLT_LOG_FILE\"", lines.display());
    let (ok, stdout, stderr) = mmafuzz(&["library", "trace", "--out", out.to_str().unwrap(), "--gpu-name", "NVIDIA H200", "--cublas", "13.1.0", "--", "sh", "-c", &program]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("2 traced GEMMs"), "{stdout}");
    let table = out.join("cublas.gemm.f16.f16.f16.f16.configs.tsv.xz");
    let t = table.to_str().unwrap();
    // The decode F.linear the program ran: its logged kernel, from the table alone.
    let (ok, stdout, stderr) = mmafuzz(&["library", "config", "--model", "h200:cublas.gemm.f16.f16.f16.f16", "--table", t, "--op", "linear", "--m", "1", "--n", "5440", "--k", "448"]);
    assert!(ok && stdout.contains("algo 66") && stdout.contains("[traced]") && stderr.is_empty(), "{stdout}{stderr}");
    // F.linear with a bias ran split-K 75 with an OUTPUT_TYPE reduction.
    let (ok, stdout, _) = mmafuzz(&["library", "config", "--model", "h200:cublas.gemm.f16.f16.f16.f16", "--table", t, "--op", "linear_bias", "--m", "7", "--n", "19", "--k", "30739"]);
    assert!(ok && stdout.contains("split-K 75"), "{stdout}");
    // A shape the program never ran is declined, naming the table.
    let (ok, stdout, _) = mmafuzz(&["library", "config", "--model", "h200:cublas.gemm.f16.f16.f16.f16", "--table", t, "--op", "mm", "--m", "8", "--n", "8", "--k", "8"]);
    assert!(!ok && stdout.contains("not in the table"), "{stdout}");
    // Under the H100's model the H200's table is named as another GPU's.
    let (_, _, stderr) = mmafuzz(&["library", "config", "--model", "h100:cublas.gemm.f16.f16.f16.f16", "--table", t, "--op", "linear", "--m", "1", "--n", "5440", "--k", "448"]);
    assert!(stderr.contains("warning") && stderr.contains("NVIDIA H200"), "{stderr}");
}

#[test]
fn a_program_that_fails_or_logs_nothing_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    let (ok, stdout, stderr) = mmafuzz(&["library", "trace", "--out", out.to_str().unwrap(), "--gpu-name", "x", "--", "sh", "-c", "exit 3"]);
    assert!(!ok && stdout.contains("no cuBLASLt matmul was logged") && stderr.contains("exited"), "{stdout}{stderr}");
    let (ok, _, stderr) = mmafuzz(&["library", "trace", "--out", out.to_str().unwrap(), "--", "no-such-program-here"]);
    assert!(!ok && stderr.contains("cannot run no-such-program-here"), "{stderr}");
}

/// `--devices 0,1`: the program runs once per GPU, alone (CUDA_VISIBLE_DEVICES names it); the
/// first GPU's tables go to --out, the second's to --out/gpu-1, with the device in their
/// provenance. Two GPUs of one name that choose the same kernels pass; where the second logs
/// another kernel at a shape both ran, the trace says which and fails.
#[test]
fn a_program_traced_on_two_gpus_of_one_name_must_choose_the_same_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines.log");
    std::fs::write(&lines, LINES).unwrap();
    let other = dir.path().join("other.log");
    std::fs::write(&other, LINES.replace("numSplitsK=75", "numSplitsK=64")).unwrap();
    for (second, same) in [(&lines, true), (&other, false)] {
        let out = dir.path().join(if same { "same" } else { "differ" });
        let program = format!(
            "if [ \"$CUDA_VISIBLE_DEVICES\" = 1 ]; then cat '{}'; else cat '{}'; fi >> \"$CUBLASLT_LOG_FILE\"",
            second.display(),
            lines.display()
        );
        let (ok, stdout, stderr) = mmafuzz(&["library", "trace", "--out", out.to_str().unwrap(), "--gpu-name", "NVIDIA H200", "--devices", "0,1", "--", "sh", "-c", &program]);
        assert!(stdout.contains("== GPU 0: NVIDIA H200") && stdout.contains("== GPU 1: NVIDIA H200"), "{stdout}{stderr}");
        let first = std::fs::read(out.join("cublas.gemm.f16.f16.f16.f16.configs.tsv.xz")).unwrap();
        assert!(!first.is_empty() && out.join("gpu-1").join("cublas.gemm.f16.f16.f16.f16.configs.tsv.xz").exists(), "{stdout}");
        if same {
            assert!(ok && stdout.contains("GPU 1 chose GPU 0's kernel at all 2 GEMM shapes both traced"), "{stdout}{stderr}");
        } else {
            assert!(!ok && stdout.contains("at 1 of 2 GEMM shapes both traced") && stdout.contains("linear_bias 7x19x30739"), "{stdout}{stderr}");
        }
    }
    let (ok, _, stderr) = mmafuzz(&["library", "trace", "--out", dir.path().join("x").to_str().unwrap(), "--devices", "0,z", "--", "true"]);
    assert!(!ok && stderr.contains("'z' is not a GPU ordinal"), "{stderr}");
}
