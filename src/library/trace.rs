//! A program's GEMMs as cuBLASLt logged them, made into kernel tables: each `cublasLt*Matmul`
//! trace line names the types, the layouts, the epilogue and the kernel, which is enough to
//! know the library path, the PyTorch call and PyTorch's m×n×k (`mmafuzz library trace`).

use super::config::KernelConfig;
use super::op::TorchOp;
use super::table::ConfigTable;
use crate::exec::lt_log::TraceLine;
use std::collections::BTreeMap;

/// One logged GEMM, read.
#[derive(Clone, Debug, PartialEq)]
pub struct TracedCall {
    pub path: String,
    pub op: TorchOp,
    /// PyTorch's m, n, k (cuBLAS sees the transposed problem).
    pub shape: (usize, usize, usize),
    pub config: KernelConfig,
    /// `smCountTarget` of the compute descriptor, where logged (cuBLAS's GEMMs carry it).
    pub sm_count: Option<u32>,
}

fn fp8(t: &str) -> Option<&'static str> {
    match t {
        "R_8F_E4M3" => Some("e4m3"),
        "R_8F_E5M2" => Some("e5m2"),
        _ => None,
    }
}

/// The library path of a logged call: cuBLAS's A is PyTorch's B, so an FP8 path names the log's
/// B type first. None for types no library model covers.
fn path_of(line: &TraceLine) -> Option<String> {
    let (a, b, d) = (line.a.dtype.as_str(), line.b.dtype.as_str(), line.d.dtype.as_str());
    if let (Some(ta), Some(tb)) = (fp8(b), fp8(a)) {
        let fast = if line.compute.contains("fastAccumulationFlag=1") { ".fast_accum" } else { "" };
        return (d == "R_32F").then(|| format!("cublaslt.matmul.f32.{ta}.{tb}.f32{fast}"));
    }
    if a != b {
        return None;
    }
    let tf32 = line.compute.contains("COMPUTE_32F_FAST_TF32");
    let path = match (a, d) {
        ("R_16F", "R_16F") => "cublas.gemm.f16.f16.f16.f16",
        ("R_16F", "R_32F") => "cublas.gemm.f32.f16.f16.f32",
        ("R_16BF", "R_16BF") => "cublas.gemm.bf16.bf16.bf16.bf16",
        ("R_16BF", "R_32F") => "cublas.gemm.f32.bf16.bf16.f32",
        ("R_32F", "R_32F") if tf32 => "cublas.gemm.f32.tf32.tf32.f32",
        ("R_32F", "R_32F") => "cublas.gemm.f32.f32.f32.f32",
        ("R_64F", "R_64F") => "cublas.gemm.f64.f64.f64.f64",
        _ => return None,
    };
    Some(path.to_string())
}

/// A trace line as a call, or why it is not one the models cover.
pub fn read_call(line: &TraceLine) -> Result<TracedCall, String> {
    let path = path_of(line).ok_or_else(|| format!("types A {} B {} D {} ({}): no library model", line.a.dtype, line.b.dtype, line.d.dtype, line.compute))?;
    let transposed = line.compute.split_whitespace().any(|w| w == "transa=OP_T");
    let op = if path.starts_with("cublaslt") {
        TorchOp::ScaledMm
    } else if line.compute.contains("epilogue=EPILOGUE_BIAS") {
        TorchOp::LinearBias
    } else if line.beta != "0" {
        TorchOp::Addmm
    } else if transposed {
        TorchOp::Linear
    } else {
        TorchOp::Mm
    };
    let dim = |x: u64| usize::try_from(x).ok().filter(|&x| (1..=super::table::MAX_DIM).contains(&x)).ok_or_else(|| format!("dimension {x} out of range"));
    let (n, m) = (dim(line.d.rows)?, dim(line.d.cols)?);
    let k = dim(if transposed { line.a.rows } else { line.a.cols })?;
    let config = KernelConfig::from_log(&line.config()).map_err(|e| e.to_string())?;
    let sm_count = line.compute.split_whitespace().find_map(|w| w.strip_prefix("smCountTarget=")).and_then(|s| s.parse().ok());
    Ok(TracedCall { path, op, shape: (m, n, k), config, sm_count })
}

/// What a whole log held.
#[derive(Debug, Default)]
pub struct TraceTables {
    /// Per path, its table.
    pub tables: BTreeMap<String, ConfigTable>,
    pub calls: usize,
    /// Calls of a shape and call kind already seen with another kernel (the first is kept).
    pub conflicts: usize,
    /// Lines that are matmul traces but no modelled call, with why (first of each reason).
    pub skipped: BTreeMap<String, usize>,
    pub sm_count: Option<u32>,
}

/// Read every trace line of a cuBLASLt log into per-path tables; `provenance` heads each table.
pub fn tables_of(log: &str, provenance: &[String]) -> TraceTables {
    let mut out = TraceTables::default();
    for line in log.lines() {
        let Some(t) = TraceLine::parse(None, line) else { continue };
        match read_call(&t) {
            Ok(c) => {
                out.calls += 1;
                out.sm_count = out.sm_count.or(c.sm_count);
                let table = out.tables.entry(c.path.clone()).or_insert_with(|| {
                    let mut t = ConfigTable::default();
                    t.provenance = provenance.to_vec();
                    t
                });
                let (m, n, k) = c.shape;
                match table.get(m, n, k, c.op) {
                    Some(old) if *old != c.config => out.conflicts += 1,
                    Some(_) => {}
                    None => table.insert(m, n, k, c.op, c.config),
                }
            }
            Err(why) => *out.skipped.entry(why).or_default() += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as an H200 logged them (torch 2.11, cuBLAS 13.1.0; addresses shortened).
    const LOG: &str = "\
[2026-12-01 19:49:04][cublasLt][1089][Trace][cublasLtHSSMatmul] A=0X1 Adesc=[type=R_16F rows=512 cols=960 ld=512] B=0X2 Bdesc=[type=R_16F rows=960 cols=507 ld=960] C=0X3 Cdesc=[type=R_32F rows=512 cols=507 ld=512] D=0X3 Ddesc=[type=R_32F rows=512 cols=507 ld=512] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F smCountTarget=132] algo=[algoId=66 tile=MATMUL_TILE_64x48 stages=MATMUL_STAGES_64xAUTO customOption=3 clusterShape=CLUSTER_SHAPE_2x4x1] workSpace=0X0 workSpaceSizeInBytes=0 beta=0 outOfPlace=0 stream=0X0
[2026-12-01 19:49:38][cublasLt][1089][Trace][cublasLtHSSMatmul] A=0X1 Adesc=[type=R_16F rows=512 cols=960 ld=512] B=0X2 Bdesc=[type=R_16F rows=960 cols=507 ld=960] C=0X3 Cdesc=[type=R_32F rows=512 cols=507 ld=512] D=0X3 Ddesc=[type=R_32F rows=512 cols=507 ld=512] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F smCountTarget=132] algo=[algoId=66 tile=MATMUL_TILE_64x48 stages=MATMUL_STAGES_64xAUTO customOption=3 clusterShape=CLUSTER_SHAPE_2x4x1] workSpace=0X0 workSpaceSizeInBytes=0 beta=? outOfPlace=0 stream=0X0
[2026-12-01 19:50:12][cublasLt][1090][Trace][cublasLtHSHMatmul] A=0X1 Adesc=[type=R_16F rows=448 cols=5440 ld=448] B=0X2 Bdesc=[type=R_16F rows=448 cols=1 ld=448] C=0X3 Cdesc=[type=R_16F rows=5440 cols=1 ld=5440] D=0X3 Ddesc=[type=R_16F rows=5440 cols=1 ld=5440] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T smCountTarget=132] algo=[algoId=66 tile=MATMUL_TILE_64x8 stages=MATMUL_STAGES_64xAUTO customOption=1 clusterShape=CLUSTER_SHAPE_4x1x1] workSpace=0X0 workSpaceSizeInBytes=0 beta=0 outOfPlace=0 stream=0X0
[2026-12-01 19:50:48][cublasLt][1107][Trace][cublasLtMatmul] A=0X1 Adesc=[type=R_16BF rows=30739 cols=19 ld=30739] B=0X2 Bdesc=[type=R_16BF rows=30739 cols=7 ld=30739] C=0X3 Cdesc=[type=R_16BF rows=19 cols=7 ld=19] D=0X3 Ddesc=[type=R_16BF rows=19 cols=7 ld=19] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T epilogue=EPILOGUE_BIAS biasPointer=0x4] algo=[algoId=24 tile=MATMUL_TILE_64x64 reductionScheme=REDUCTION_SCHEME_OUTPUT_TYPE numSplitsK=75] workSpace=0X5 workSpaceSizeInBytes=1048576 beta=0 outOfPlace=0 stream=0X0
[2026-12-01 20:49:04][cublasLt][830][Trace][cublasLtMatmul] A=0X1 Adesc=[type=R_8F_E5M2 rows=16 cols=2624 ld=16] B=0X2 Bdesc=[type=R_8F_E4M3 rows=16 cols=48 ld=16] C=0X1 Cdesc=[type=R_32F rows=2624 cols=48 ld=2624] D=0X6 Ddesc=[type=R_32F rows=2624 cols=48 ld=2624] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T aScalePointer=0x7 bScalePointer=0x7] algo=[algoId=66 tile=MATMUL_TILE_64x24 stages=MATMUL_STAGES_128xAUTO customOption=3 clusterShape=CLUSTER_SHAPE_4x2x1] workSpace=0X8 workSpaceSizeInBytes=1048576 beta=0 outOfPlace=1 stream=0X0
[2026-12-01 20:48:58][cublasLt][808][Trace][cublasLtMatmul] A=0X1 Adesc=[type=R_8F_E4M3 rows=336 cols=448 ld=336] B=0X2 Bdesc=[type=R_8F_E4M3 rows=336 cols=16 ld=336] C=0X1 Cdesc=[type=R_32F rows=448 cols=16 ld=448] D=0X6 Ddesc=[type=R_32F rows=448 cols=16 ld=448] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T aScalePointer=0x7 bScalePointer=0x7 fastAccumulationFlag=1] algo=[algoId=66 tile=MATMUL_TILE_64x8 stages=MATMUL_STAGES_128xAUTO customOption=3 clusterShape=CLUSTER_SHAPE_4x2x1] workSpace=0X8 workSpaceSizeInBytes=1048576 beta=0 outOfPlace=1 stream=0X0
[2026-12-01 20:48:58][cublasLt][808][Info][cublasLtMatmulAlgoGetHeuristic] not a trace line
";

    #[test]
    fn every_call_kind_reads_with_pytorchs_shape() {
        let calls: Vec<TracedCall> = LOG.lines().filter_map(|l| TraceLine::parse(None, l)).map(|t| read_call(&t).unwrap()).collect();
        let got: Vec<(&str, TorchOp, (usize, usize, usize))> = calls.iter().map(|c| (c.path.as_str(), c.op, c.shape)).collect();
        assert_eq!(
            got,
            vec![
                ("cublas.gemm.f32.f16.f16.f32", TorchOp::Mm, (507, 512, 960)),
                ("cublas.gemm.f32.f16.f16.f32", TorchOp::Addmm, (507, 512, 960)),
                ("cublas.gemm.f16.f16.f16.f16", TorchOp::Linear, (1, 5440, 448)),
                ("cublas.gemm.bf16.bf16.bf16.bf16", TorchOp::LinearBias, (7, 19, 30739)),
                ("cublaslt.matmul.f32.e4m3.e5m2.f32", TorchOp::ScaledMm, (48, 2624, 16)),
                ("cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum", TorchOp::ScaledMm, (16, 448, 336)),
            ]
        );
        assert_eq!(calls[0].sm_count, Some(132));
        assert_eq!(calls[3].config.split_k, 75);
    }

    #[test]
    fn a_log_becomes_tables_with_their_provenance() {
        let prov = vec!["gpu: NVIDIA H200 (132 SMs)".to_string()];
        let t = tables_of(&format!("{LOG}{}", LOG.lines().next().unwrap().replace("algoId=66", "algoId=24")), &prov);
        assert_eq!((t.calls, t.conflicts, t.tables.len(), t.sm_count), (7, 1, 5, Some(132)));
        let f32 = &t.tables["cublas.gemm.f32.f16.f16.f32"];
        assert_eq!(f32.get(507, 512, 960, TorchOp::Mm).unwrap().algo, 66, "the first kernel seen is kept");
        assert_eq!(f32.gpu_name(), Some("NVIDIA H200"));
        let again = ConfigTable::parse(&f32.to_text()).unwrap();
        assert_eq!(again.get(507, 512, 960, TorchOp::Addmm), f32.get(507, 512, 960, TorchOp::Addmm));
        let odd = tables_of(&LOG.lines().next().unwrap().replace("type=R_16F rows=960", "type=R_8I rows=960"), &prov);
        assert_eq!((odd.calls, odd.skipped.len()), (0, 1));
    }
}
