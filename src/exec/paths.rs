//! Instruction paths: stable identifiers (the PTX instruction's shape and types in PTX order),
//! the tile shape and formats each takes, and the kernel that runs it.

use crate::format::Format;

/// One instruction path.
#[derive(Clone, Copy, Debug)]
pub struct PathSpec {
    /// e.g. `mma.m16n8k16.f32.f16.f16.f32` (D, A, B, C types as PTX orders them).
    pub id: &'static str,
    pub a_fmt: Format,
    /// B's format: A's, except for the mixed FP8 paths.
    pub b_fmt: Format,
    pub c_fmt: Format,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Kernel entry point in its module.
    pub kernel: &'static str,
    pub module: Module,
    /// Lowest compute capability that has the instruction.
    pub min_cc: (i32, i32),
}

/// The PTX module a path's kernel lives in, and how it is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Module {
    /// `kernels/mma_sync.ptx`: one warp per tile, four tiles per block.
    MmaSync,
    /// `kernels/wgmma.ptx` (sm_90a): one warpgroup (one block of 128 threads) per tile.
    Wgmma,
    /// cuBLAS or cuBLASLt on whole matrices of any shape, called as PyTorch calls them
    /// (`exec::library`; the listed shape is what `gen` makes): what libraries built on the
    /// tensor cores compute, k-blocking and all.
    Cublas,
    /// No kernel: an instruction of a GPU this project has no hardware for (other NVIDIA
    /// generations, AMD CDNA), answered by an external oracle (MMA-Sim) and by the models
    /// under `models/<arch>/` (`exec::simulated`).
    Simulated,
}

impl Module {
    pub fn ptx(self) -> &'static str {
        match self {
            Module::MmaSync => super::ptx::MMA_SYNC.text(),
            Module::Wgmma => super::ptx::WGMMA.text(),
            Module::Cublas | Module::Simulated => "",
        }
    }
}

pub const PATHS: &[PathSpec] = &[
    PathSpec { id: "mma.m16n8k16.f32.f16.f16.f32", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_f32_f16_f16_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k16.f32.bf16.bf16.f32", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_f32_bf16_bf16_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k16.f16.f16.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F16, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_f16_f16_f16_f16", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k8.f32.tf32.tf32.f32", a_fmt: Format::Tf32, b_fmt: Format::Tf32, c_fmt: Format::F32, m: 16, n: 8, k: 8, kernel: "mma_m16n8k8_f32_tf32_tf32_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k32.f32.e4m3.e4m3.f32", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_f32_e4m3_e4m3_f32", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.m16n8k32.f32.e5m2.e5m2.f32", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_f32_e5m2_e5m2_f32", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.m8n8k4.f64.f64.f64.f64", a_fmt: Format::F64, b_fmt: Format::F64, c_fmt: Format::F64, m: 8, n: 8, k: 4, kernel: "mma_m8n8k4_f64_f64_f64_f64", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m8n8k4.f32.f16.f16.f32", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 8, n: 8, k: 4, kernel: "mma_m8n8k4_f32_f16_f16_f32", module: Module::MmaSync, min_cc: (7, 0) },
    PathSpec { id: "mma.m8n8k4.f16.f16.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F16, m: 8, n: 8, k: 4, kernel: "mma_m8n8k4_f16_f16_f16_f16", module: Module::MmaSync, min_cc: (7, 0) },
    PathSpec { id: "mma.m16n8k8.f32.f16.f16.f32", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 16, n: 8, k: 8, kernel: "mma_m16n8k8_f32_f16_f16_f32", module: Module::MmaSync, min_cc: (7, 5) },
    PathSpec { id: "mma.m16n8k8.f16.f16.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F16, m: 16, n: 8, k: 8, kernel: "mma_m16n8k8_f16_f16_f16_f16", module: Module::MmaSync, min_cc: (7, 5) },
    PathSpec { id: "mma.m16n8k8.f32.bf16.bf16.f32", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 16, n: 8, k: 8, kernel: "mma_m16n8k8_f32_bf16_bf16_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k4.f32.tf32.tf32.f32", a_fmt: Format::Tf32, b_fmt: Format::Tf32, c_fmt: Format::F32, m: 16, n: 8, k: 4, kernel: "mma_m16n8k4_f32_tf32_tf32_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k4.f64.f64.f64.f64", a_fmt: Format::F64, b_fmt: Format::F64, c_fmt: Format::F64, m: 16, n: 8, k: 4, kernel: "mma_m16n8k4_f64_f64_f64_f64", module: Module::MmaSync, min_cc: (9, 0) },
    PathSpec { id: "mma.m16n8k8.f64.f64.f64.f64", a_fmt: Format::F64, b_fmt: Format::F64, c_fmt: Format::F64, m: 16, n: 8, k: 8, kernel: "mma_m16n8k8_f64_f64_f64_f64", module: Module::MmaSync, min_cc: (9, 0) },
    PathSpec { id: "mma.m16n8k16.f64.f64.f64.f64", a_fmt: Format::F64, b_fmt: Format::F64, c_fmt: Format::F64, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_f64_f64_f64_f64", module: Module::MmaSync, min_cc: (9, 0) },
    PathSpec { id: "mma.m16n8k32.f16.e4m3.e4m3.f16", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F16, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_f16_e4m3_e4m3_f16", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.m16n8k32.f16.e5m2.e5m2.f16", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F16, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_f16_e5m2_e5m2_f16", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.m16n8k16.f32.e4m3.e4m3.f32", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_f32_e4m3_e4m3_f32", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.m16n8k16.f32.e5m2.e5m2.f32", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_f32_e5m2_e5m2_f32", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.m16n8k16.f16.e4m3.e4m3.f16", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F16, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_f16_e4m3_e4m3_f16", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.m16n8k16.f16.e5m2.e5m2.f16", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F16, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_f16_e5m2_e5m2_f16", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.m16n8k32.f32.e4m3.e5m2.f32", a_fmt: Format::E4m3, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_f32_e4m3_e5m2_f32", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.m16n8k32.f32.e5m2.e4m3.f32", a_fmt: Format::E5m2, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_f32_e5m2_e4m3_f32", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "wgmma.m64n8k16.f32.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_f16_f16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.bf16.bf16", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_bf16_bf16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f16.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F16, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f16_f16_f16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k8.f32.tf32.tf32", a_fmt: Format::Tf32, b_fmt: Format::Tf32, c_fmt: Format::F32, m: 64, n: 8, k: 8, kernel: "wgmma_m64n8k8_f32_tf32_tf32", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.f32.e4m3.e4m3", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_f32_e4m3_e4m3", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.f32.e5m2.e5m2", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_f32_e5m2_e5m2", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.f32.e4m3.e5m2", a_fmt: Format::E4m3, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_f32_e4m3_e5m2", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.f32.e5m2.e4m3", a_fmt: Format::E5m2, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_f32_e5m2_e4m3", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.f16.e4m3.e4m3", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F16, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_f16_e4m3_e4m3", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.f16.e5m2.e5m2", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F16, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_f16_e5m2_e5m2", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n16k16.f32.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 16, k: 16, kernel: "wgmma_m64n16k16_f32_f16_f16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n64k16.f32.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 64, k: 16, kernel: "wgmma_m64n64k16_f32_f16_f16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n128k16.f32.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 128, k: 16, kernel: "wgmma_m64n128k16_f32_f16_f16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n256k16.f32.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 256, k: 16, kernel: "wgmma_m64n256k16_f32_f16_f16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n256k16.f32.bf16.bf16", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 64, n: 256, k: 16, kernel: "wgmma_m64n256k16_f32_bf16_bf16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n256k16.f16.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F16, m: 64, n: 256, k: 16, kernel: "wgmma_m64n256k16_f16_f16_f16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n256k8.f32.tf32.tf32", a_fmt: Format::Tf32, b_fmt: Format::Tf32, c_fmt: Format::F32, m: 64, n: 256, k: 8, kernel: "wgmma_m64n256k8_f32_tf32_tf32", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n256k32.f32.e4m3.e4m3", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 64, n: 256, k: 32, kernel: "wgmma_m64n256k32_f32_e4m3_e4m3", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n256k32.f32.e5m2.e5m2", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 64, n: 256, k: 32, kernel: "wgmma_m64n256k32_f32_e5m2_e5m2", module: Module::Wgmma, min_cc: (9, 0) },
    // Forms of m64n8 (kernels/wgmma_forms.cuh): the suffix names the form; `chain4` paths run
    // four instructions over K (k = 4 x the instruction's k) on one accumulator.
    PathSpec { id: "wgmma.m64n8k16.f32.f16.f16.smem_a", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_f16_f16_smem_a", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.f16.f16.trans_b", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_f16_f16_trans_b", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.bf16.bf16.trans_b", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_bf16_bf16_trans_b", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.f16.f16.trans_ab", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_f16_f16_trans_ab", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.bf16.bf16.trans_ab", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_bf16_bf16_trans_ab", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.f16.f16.neg_a", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_f16_f16_neg_a", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.f16.f16.neg_b", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_f16_f16_neg_b", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.f16.f16.scale_d0", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 16, kernel: "wgmma_m64n8k16_f32_f16_f16_scale_d0", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.f16.f16.chain4", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 64, kernel: "wgmma_m64n8k16_f32_f16_f16_chain4", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f32.bf16.bf16.chain4", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 64, n: 8, k: 64, kernel: "wgmma_m64n8k16_f32_bf16_bf16_chain4", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k16.f16.f16.f16.chain4", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F16, m: 64, n: 8, k: 64, kernel: "wgmma_m64n8k16_f16_f16_f16_chain4", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.f32.e4m3.e4m3.chain4", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 64, n: 8, k: 128, kernel: "wgmma_m64n8k32_f32_e4m3_e4m3_chain4", module: Module::Wgmma, min_cc: (9, 0) },
    // Integer operands into s32 (kernels/mma_int.cuh, kernels/wgmma_int.cuh); `.satfinite`
    // clamps where the plain form wraps around.
    PathSpec { id: "mma.m16n8k32.s32.s8.s8.s32", a_fmt: Format::S8, b_fmt: Format::S8, c_fmt: Format::S32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_s32_s8_s8_s32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k32.s32.s8.s8.s32.satfinite", a_fmt: Format::S8, b_fmt: Format::S8, c_fmt: Format::S32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_s32_s8_s8_s32_satfinite", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k32.s32.u8.u8.s32", a_fmt: Format::U8, b_fmt: Format::U8, c_fmt: Format::S32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_s32_u8_u8_s32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k32.s32.u8.u8.s32.satfinite", a_fmt: Format::U8, b_fmt: Format::U8, c_fmt: Format::S32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_s32_u8_u8_s32_satfinite", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k32.s32.s8.u8.s32.satfinite", a_fmt: Format::S8, b_fmt: Format::U8, c_fmt: Format::S32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_s32_s8_u8_s32_satfinite", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k32.s32.u8.s8.s32", a_fmt: Format::U8, b_fmt: Format::S8, c_fmt: Format::S32, m: 16, n: 8, k: 32, kernel: "mma_m16n8k32_s32_u8_s8_s32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k16.s32.s8.s8.s32", a_fmt: Format::S8, b_fmt: Format::S8, c_fmt: Format::S32, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_s32_s8_s8_s32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k16.s32.s8.s8.s32.satfinite", a_fmt: Format::S8, b_fmt: Format::S8, c_fmt: Format::S32, m: 16, n: 8, k: 16, kernel: "mma_m16n8k16_s32_s8_s8_s32_satfinite", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k64.s32.s4.s4.s32", a_fmt: Format::S4, b_fmt: Format::S4, c_fmt: Format::S32, m: 16, n: 8, k: 64, kernel: "mma_m16n8k64_s32_s4_s4_s32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k64.s32.s4.s4.s32.satfinite", a_fmt: Format::S4, b_fmt: Format::S4, c_fmt: Format::S32, m: 16, n: 8, k: 64, kernel: "mma_m16n8k64_s32_s4_s4_s32_satfinite", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k64.s32.u4.u4.s32", a_fmt: Format::U4, b_fmt: Format::U4, c_fmt: Format::S32, m: 16, n: 8, k: 64, kernel: "mma_m16n8k64_s32_u4_u4_s32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k256.s32.b1.b1.s32.and.popc", a_fmt: Format::B1, b_fmt: Format::B1, c_fmt: Format::S32, m: 16, n: 8, k: 256, kernel: "mma_m16n8k256_s32_b1_b1_s32_and_popc", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.m16n8k256.s32.b1.b1.s32.xor.popc", a_fmt: Format::B1, b_fmt: Format::B1, c_fmt: Format::S32, m: 16, n: 8, k: 256, kernel: "mma_m16n8k256_s32_b1_b1_s32_xor_popc", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "wgmma.m64n8k32.s32.s8.s8", a_fmt: Format::S8, b_fmt: Format::S8, c_fmt: Format::S32, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_s32_s8_s8", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.s32.s8.s8.satfinite", a_fmt: Format::S8, b_fmt: Format::S8, c_fmt: Format::S32, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_s32_s8_s8_satfinite", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.s32.u8.u8", a_fmt: Format::U8, b_fmt: Format::U8, c_fmt: Format::S32, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_s32_u8_u8", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k32.s32.s8.u8.satfinite", a_fmt: Format::S8, b_fmt: Format::U8, c_fmt: Format::S32, m: 64, n: 8, k: 32, kernel: "wgmma_m64n8k32_s32_s8_u8_satfinite", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.m64n8k256.s32.b1.b1.and.popc", a_fmt: Format::B1, b_fmt: Format::B1, c_fmt: Format::S32, m: 64, n: 8, k: 256, kernel: "wgmma_m64n8k256_s32_b1_b1_and_popc", module: Module::Wgmma, min_cc: (9, 0) },
    // Structured sparsity (kernels/mma_sp.cuh, kernels/wgmma_sp.cuh; PTX mma.sp::ordered_metadata
    // and wgmma.sp): k is the dense K, cases carry k/2 kept A values per row and "meta".
    PathSpec { id: "mma.sp.m16n8k32.f32.f16.f16.f32", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 16, n: 8, k: 32, kernel: "mma_sp_m16n8k32_f32_f16_f16_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.sp.m16n8k32.f32.bf16.bf16.f32", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 16, n: 8, k: 32, kernel: "mma_sp_m16n8k32_f32_bf16_bf16_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.sp.m16n8k32.f16.f16.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F16, m: 16, n: 8, k: 32, kernel: "mma_sp_m16n8k32_f16_f16_f16_f16", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.sp.m16n8k16.f32.f16.f16.f32", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 16, n: 8, k: 16, kernel: "mma_sp_m16n8k16_f32_f16_f16_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.sp.m16n8k16.f32.bf16.bf16.f32", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 16, n: 8, k: 16, kernel: "mma_sp_m16n8k16_f32_bf16_bf16_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.sp.m16n8k16.f32.tf32.tf32.f32", a_fmt: Format::Tf32, b_fmt: Format::Tf32, c_fmt: Format::F32, m: 16, n: 8, k: 16, kernel: "mma_sp_m16n8k16_f32_tf32_tf32_f32", module: Module::MmaSync, min_cc: (8, 0) },
    PathSpec { id: "mma.sp.m16n8k64.f32.e4m3.e4m3.f32", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 16, n: 8, k: 64, kernel: "mma_sp_m16n8k64_f32_e4m3_e4m3_f32", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.sp.m16n8k64.f32.e5m2.e5m2.f32", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 16, n: 8, k: 64, kernel: "mma_sp_m16n8k64_f32_e5m2_e5m2_f32", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "mma.sp.m16n8k64.f32.e4m3.e5m2.f32", a_fmt: Format::E4m3, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 16, n: 8, k: 64, kernel: "mma_sp_m16n8k64_f32_e4m3_e5m2_f32", module: Module::MmaSync, min_cc: (8, 9) },
    PathSpec { id: "wgmma.sp.m64n8k32.f32.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 32, kernel: "wgmma_sp_m64n8k32_f32_f16_f16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.sp.m64n8k32.f32.bf16.bf16", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 64, n: 8, k: 32, kernel: "wgmma_sp_m64n8k32_f32_bf16_bf16", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.sp.m64n8k64.f32.e4m3.e4m3", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 64, n: 8, k: 64, kernel: "wgmma_sp_m64n8k64_f32_e4m3_e4m3", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.sp.m64n8k64.f32.e5m2.e5m2", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 64, n: 8, k: 64, kernel: "wgmma_sp_m64n8k64_f32_e5m2_e5m2", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.sp.m64n8k32.f32.f16.f16.smem_a", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 64, n: 8, k: 32, kernel: "wgmma_sp_m64n8k32_f32_f16_f16_smem_a", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "wgmma.sp.m64n8k64.f32.e4m3.e4m3.smem_a", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 64, n: 8, k: 64, kernel: "wgmma_sp_m64n8k64_f32_e4m3_e4m3_smem_a", module: Module::Wgmma, min_cc: (9, 0) },
    PathSpec { id: "cublas.gemm.f32.f16.f16.f32", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 32, n: 32, k: 64, kernel: "cublasGemmEx", module: Module::Cublas, min_cc: (7, 0) },
    PathSpec { id: "cublas.gemm.f32.bf16.bf16.f32", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 32, n: 32, k: 64, kernel: "cublasGemmEx", module: Module::Cublas, min_cc: (8, 0) },
    PathSpec { id: "cublas.gemm.f64.f64.f64.f64", a_fmt: Format::F64, b_fmt: Format::F64, c_fmt: Format::F64, m: 32, n: 32, k: 64, kernel: "cublasDgemm", module: Module::Cublas, min_cc: (7, 0) },
    PathSpec { id: "cublas.gemm.f16.f16.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F16, m: 32, n: 32, k: 64, kernel: "cublasGemmEx", module: Module::Cublas, min_cc: (7, 0) },
    PathSpec { id: "cublas.gemm.bf16.bf16.bf16.bf16", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::Bf16, m: 32, n: 32, k: 64, kernel: "cublasGemmEx", module: Module::Cublas, min_cc: (8, 0) },
    PathSpec { id: "cublas.gemm.f32.f32.f32.f32", a_fmt: Format::F32, b_fmt: Format::F32, c_fmt: Format::F32, m: 32, n: 32, k: 64, kernel: "cublasSgemm", module: Module::Cublas, min_cc: (7, 0) },
    // FP32 arrays, TF32 compute (allow_tf32): cases carry "a_fmt": "f32".
    PathSpec { id: "cublas.gemm.f32.tf32.tf32.f32", a_fmt: Format::F32, b_fmt: Format::F32, c_fmt: Format::F32, m: 32, n: 32, k: 64, kernel: "cublasSgemm", module: Module::Cublas, min_cc: (8, 0) },
    // torch._scaled_mm (cublasLtMatmul, β = 0: C is +0); K and N multiples of 16.
    PathSpec { id: "cublaslt.matmul.f32.e4m3.e4m3.f32", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 32, n: 32, k: 64, kernel: "cublasLtMatmul", module: Module::Cublas, min_cc: (8, 9) },
    PathSpec { id: "cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 32, n: 32, k: 64, kernel: "cublasLtMatmul", module: Module::Cublas, min_cc: (8, 9) },
    PathSpec { id: "cublaslt.matmul.f32.e4m3.e5m2.f32", a_fmt: Format::E4m3, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 32, n: 32, k: 64, kernel: "cublasLtMatmul", module: Module::Cublas, min_cc: (8, 9) },
    PathSpec { id: "cublaslt.matmul.f32.e5m2.e4m3.f32", a_fmt: Format::E5m2, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 32, n: 32, k: 64, kernel: "cublasLtMatmul", module: Module::Cublas, min_cc: (8, 9) },
];

/// The path with this identifier: one of [`PATHS`] or of the simulated instructions
/// ([`super::simulated::SIMULATED`]).
pub fn path_by_id(id: &str) -> Option<&'static PathSpec> {
    PATHS.iter().chain(super::simulated::SIMULATED).find(|p| p.id == id)
}

impl PathSpec {
    /// An all-zero tile of this path's shape and formats.
    pub fn zeros(&self) -> crate::MmaCase {
        let mut c = crate::MmaCase::zeros(self.a_fmt, self.c_fmt, self.m, self.n, self.k);
        c.b_fmt = self.b_fmt;
        self.conform(&mut c);
        c
    }

    /// Whether the instruction is sparse (`mma.sp::ordered_metadata`, `wgmma.sp`): its cases
    /// carry `"meta"` and m×(k/2) kept A values, k being the dense K of the PTX shape.
    pub fn sparse(&self) -> bool {
        self.id.starts_with("mma.sp.") || self.id.starts_with("wgmma.sp.")
    }

    /// Terms of each element's dot product: k, or k/2 on a sparse path.
    pub fn terms(&self) -> usize {
        if self.sparse() {
            self.k / 2
        } else {
            self.k
        }
    }

    /// Whether the sparsity is tf32's 1:2 (one of every two) rather than 2:4.
    pub fn one_of_two(&self) -> bool {
        self.sparse() && self.a_fmt == Format::Tf32
    }

    /// Whether the instruction does not read C (`scale_d0`: wgmma with scale-d = 0 computes
    /// D = A·B). Its cases carry C = +0 everywhere ([`PathSpec::c_ignored`]), so the case still
    /// reads D = A·B + C exactly, signs of zero included.
    pub fn ignores_c(&self) -> bool {
        // `torch._scaled_mm` (the cublaslt.matmul paths) computes D = A·B, β = 0, too.
        self.id.ends_with(".scale_d0") || self.id.starts_with("cublaslt.matmul.")
    }

    /// The C that stands for "no C" on a path that ignores it: +0. Not -0, the additive
    /// identity: with scale-d = 0 a row of -0 products gives +0 on the GPU (H100, H200), as
    /// an accumulator started from +0 does. Being all-zero bits, it is also what the
    /// minimiser's probes leave in C (they never simplify a C that is already +0).
    pub fn c_ignored(&self) -> u64 {
        self.c_fmt.zero_bits(false)
    }

    /// Make a generated or mutated case one this path can run: C = +0 where the instruction
    /// ignores C, `"op": "xor"` on `.xor.popc` paths, a dense tile on a sparse path keeping
    /// the first of [`crate::sparse::PAIRS`] in every group; other paths take every case of
    /// their shape unchanged.
    pub fn conform(&self, case: &mut crate::MmaCase) {
        if self.sparse() && case.meta.is_none() && case.a.len() == case.m * case.k {
            // A dense tile of the path's shape: keep the first pair of each group.
            *case = crate::sparse::zeros_like(case);
        }
        if self.xor_popc() {
            case.extra.insert("op".into(), "xor".into());
        }
        if self.ignores_c() {
            let zero = self.c_ignored();
            case.c.iter_mut().for_each(|x| *x = zero);
        }
        case.d_fmt = self.d_fmt();
        match self.block_scale() {
            Some((fmt, block)) if case.scales.as_ref().is_none_or(|s| (s.fmt, s.block) != (fmt, block)) && case.k % block == 0 => {
                case.scales = Some(crate::blockscale::BlockScales::ones(fmt, block, case.m, case.n, case.k));
            }
            None if self.module != Module::Cublas => case.scales = None,
            _ => {}
        }
    }

    /// Format of D: C's, except where the id's first type after the shape (PTX's `.dtype`) names
    /// another one, as `mma.m8n8k4.f32.f16.f16.f16` does (C in f16, D in f32).
    pub fn d_fmt(&self) -> Format {
        let is_shape = |p: &str| p.starts_with('m') && p[1..].starts_with(|c: char| c.is_ascii_digit()) && p.contains('n') && p.contains('k');
        let mut parts = self.id.split('.');
        parts.by_ref().find(|p| is_shape(p));
        parts.next().and_then(|p| p.parse::<Format>().ok()).filter(|f| f.is_integer() == self.c_fmt.is_integer()).unwrap_or(self.c_fmt)
    }

    /// The block scaling of a block-scaled instruction (`...mxf8f6f4.block32....ue8m0`): the
    /// scale format (the id's last part) and the elements along K per scale (its `blockN`
    /// part); `None` for every other path.
    pub fn block_scale(&self) -> Option<(crate::blockscale::ScaleFormat, usize)> {
        let block = self.id.split('.').find_map(|part| part.strip_prefix("block")?.parse().ok())?;
        let fmt = self.id.rsplit('.').next()?.parse().ok()?;
        Some((fmt, block))
    }

    /// Whether the path's `b1` pairs contribute `a XOR b` (`.xor.popc`) rather than `a AND b`.
    pub fn xor_popc(&self) -> bool {
        self.id.ends_with(".xor.popc")
    }

    /// Whether a case has this path's shape and formats.
    pub fn check(&self, case: &crate::MmaCase) -> Result<(), String> {
        // cuBLAS takes any shape: only the formats must match.
        let any_shape = self.module == Module::Cublas;
        let shape = |m, n, k| if any_shape { (0, 0, 0) } else { (m, n, k) };
        let (m, n, k) = shape(self.m, self.n, self.k);
        let want = (self.a_fmt, self.b_fmt, self.c_fmt, m, n, k);
        let (cm, cn, ck) = shape(case.m, case.n, case.k);
        let got = (case.a_fmt, case.b_fmt, case.c_fmt, cm, cn, ck);
        if want != got {
            return Err(format!(
                "path {} takes {}x{}x{} tiles of {}/{} with C/D in {}; the case is {}x{}x{} {}/{} with C in {}",
                self.id, self.m, self.n, self.k, self.a_fmt, self.b_fmt, self.c_fmt, case.m, case.n, case.k, case.a_fmt, case.b_fmt, case.c_fmt
            ));
        }
        let d_fmt = self.d_fmt();
        if case.d_fmt != d_fmt {
            return Err(format!("path {} writes D in {d_fmt} (\"d_fmt\"); the case says {}", self.id, case.d_fmt));
        }
        match (&case.meta, self.sparse()) {
            (None, true) => return Err(format!("path {} is sparse: its cases carry \"meta\" (the kept A elements' positions)", self.id)),
            (Some(_), false) => return Err(format!("path {} is dense: its cases carry no \"meta\"", self.id)),
            (Some(meta), true) if self.one_of_two() && !crate::sparse::one_of_two(meta) => {
                return Err(format!("path {} keeps one of every two tf32 values: each \"meta\" pair needs one index in 0..=1 and one in 2..=3", self.id))
            }
            _ => {}
        }
        match (self.block_scale(), &case.scales) {
            (Some((fmt, block)), Some(s)) if (s.fmt, s.block) == (fmt, block) => {}
            (Some((fmt, block)), _) => return Err(format!("path {} is block-scaled: its cases carry {fmt} scales, one per {block} elements along K (\"scale_fmt\", \"scale_block\", \"scale_a\", \"scale_b\")", self.id)),
            (None, Some(_)) => return Err(format!("path {} takes no block scales: its cases carry no \"scale_a\"/\"scale_b\"", self.id)),
            (None, None) => {}
        }
        if self.xor_popc() != case.xor_pairs() {
            let want = if self.xor_popc() { "carry \"op\": \"xor\"" } else { "carry no \"op\" field" };
            return Err(format!("path {} pairs bits by {}: its cases {want}", self.id, if self.xor_popc() { "XOR" } else { "AND" }));
        }
        let zero = self.c_ignored();
        if self.ignores_c() && case.c.iter().any(|&x| x != zero) {
            return Err(format!("path {} does not read C (scale-d = 0): its cases carry C = +0 ({}) in every element", self.id, crate::case::hex(zero, self.c_fmt)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PTX the driver will load: a version the 13.0 driver takes, the sm_90a target, and an
    /// entry point for every path.
    #[test]
    fn ptx_has_every_kernel_at_a_loadable_version() {
        for ptx in [Module::MmaSync.ptx(), Module::Wgmma.ptx()] {
            let version = ptx.lines().find_map(|l| l.strip_prefix(".version ")).expect(".version line");
            let (major, minor) = version.trim().split_once('.').expect("major.minor");
            assert!((major.parse::<u32>().unwrap(), minor.parse::<u32>().unwrap()) <= (9, 0), "{version}");
            assert!(ptx.contains(".target sm_90a"));
        }
        for p in PATHS.iter().filter(|p| p.module != Module::Cublas) {
            assert!(p.module.ptx().contains(&format!(".entry {}(", p.kernel)), "{}", p.kernel);
            assert!(path_by_id(p.id).is_some());
        }
    }
}
