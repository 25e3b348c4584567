//! Instructions of GPUs this project has no hardware for: other NVIDIA generations' shapes and
//! types (Blackwell's `tcgen05.mma`, Ada's mixed FP8 `mma.sync`) and AMD CDNA's `mfma`. They
//! have no kernel ([`Module::Simulated`]): an external oracle answers them (MMA-Sim through
//! `scripts/mmasim-oracle.py`), and the models under `models/<arch>/` (discovered against that
//! oracle) emulate them.
//!
//! Every MMA-Sim instruction is covered by the path of its family, types and K: MMA-Sim's
//! arithmetic for an instruction depends only on the architecture, the types and K (its `dpa`
//! reduces each of D's elements from one row of A and one column of B), so one tile shape per
//! (types, K) stands for all its M and N (docs/src/architectures.md, "Simulated paths").

use super::paths::{Module, PathSpec};
use crate::format::Format;

const fn sim(id: &'static str, a_fmt: Format, b_fmt: Format, c_fmt: Format, (m, n, k): (usize, usize, usize), min_cc: (i32, i32)) -> PathSpec {
    PathSpec { id, a_fmt, b_fmt, c_fmt, m, n, k, kernel: "", module: Module::Simulated, min_cc }
}

use Format::{Bf16, E2m1, E2m3, E3m2, E4m3, E4m3fnuz, E5m2, E5m2fnuz, Tf32, F16, F32, F64};

/// The simulated paths (see the module documentation).
pub const SIMULATED: &[PathSpec] = &[
    // Volta's (sm_70+) m8n8k4 adding C in f16 into D in f32 (`"d_fmt": "f32"` on its cases).
    sim("mma.m8n8k4.f32.f16.f16.f16", F16, F16, F16, (8, 8, 4), (7, 0)),
    // mma.sync with mixed FP8 operands and the FP8 shapes with f16 accumulators the H100 paths
    // lack (sm_89+: Ada, Hopper, RTX Blackwell).
    sim("mma.m16n8k32.f16.e4m3.e5m2.f16", E4m3, E5m2, F16, (16, 8, 32), (8, 9)),
    sim("mma.m16n8k32.f16.e5m2.e4m3.f16", E5m2, E4m3, F16, (16, 8, 32), (8, 9)),
    sim("mma.m16n8k16.f32.e4m3.e5m2.f32", E4m3, E5m2, F32, (16, 8, 16), (8, 9)),
    sim("mma.m16n8k16.f32.e5m2.e4m3.f32", E5m2, E4m3, F32, (16, 8, 16), (8, 9)),
    sim("mma.m16n8k16.f16.e4m3.e5m2.f16", E4m3, E5m2, F16, (16, 8, 16), (8, 9)),
    sim("mma.m16n8k16.f16.e5m2.e4m3.f16", E5m2, E4m3, F16, (16, 8, 16), (8, 9)),
    // Blackwell (sm_100) tcgen05.mma, kind::tf32 / f16 / f8f6f4, at M = 64, N = 8.
    sim("tcgen05.mma.m64n8k8.f32.tf32.tf32", Tf32, Tf32, F32, (64, 8, 8), (10, 0)),
    sim("tcgen05.mma.m64n8k16.f32.f16.f16", F16, F16, F32, (64, 8, 16), (10, 0)),
    sim("tcgen05.mma.m64n8k16.f32.bf16.bf16", Bf16, Bf16, F32, (64, 8, 16), (10, 0)),
    sim("tcgen05.mma.m64n8k16.f16.f16.f16", F16, F16, F16, (64, 8, 16), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e4m3.e4m3", E4m3, E4m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e4m3.e5m2", E4m3, E5m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e5m2.e4m3", E5m2, E4m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e5m2.e5m2", E5m2, E5m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e4m3.e4m3", E4m3, E4m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e4m3.e5m2", E4m3, E5m2, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e5m2.e4m3", E5m2, E4m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e5m2.e5m2", E5m2, E5m2, F16, (64, 8, 32), (10, 0)),
    // kind::f8f6f4 with FP6 (e3m2, e2m3) or FP4 (e2m1) operands: RTX Blackwell's mma.sync
    // (sm_120) and Blackwell's tcgen05.mma (sm_100); the FP8-only pairs are above or GPU paths.
    sim("mma.m16n8k32.f32.e5m2.e3m2.f32", E5m2, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e5m2.e2m3.f32", E5m2, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e5m2.e2m1.f32", E5m2, E2m1, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e4m3.e3m2.f32", E4m3, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e4m3.e2m3.f32", E4m3, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e4m3.e2m1.f32", E4m3, E2m1, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e3m2.e5m2.f32", E3m2, E5m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e3m2.e4m3.f32", E3m2, E4m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e3m2.e3m2.f32", E3m2, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e3m2.e2m3.f32", E3m2, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e3m2.e2m1.f32", E3m2, E2m1, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m3.e5m2.f32", E2m3, E5m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m3.e4m3.f32", E2m3, E4m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m3.e3m2.f32", E2m3, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m3.e2m3.f32", E2m3, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m3.e2m1.f32", E2m3, E2m1, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m1.e5m2.f32", E2m1, E5m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m1.e4m3.f32", E2m1, E4m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m1.e3m2.f32", E2m1, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m1.e2m3.f32", E2m1, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f32.e2m1.e2m1.f32", E2m1, E2m1, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e5m2.e3m2.f16", E5m2, E3m2, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e5m2.e2m3.f16", E5m2, E2m3, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e5m2.e2m1.f16", E5m2, E2m1, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e4m3.e3m2.f16", E4m3, E3m2, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e4m3.e2m3.f16", E4m3, E2m3, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e4m3.e2m1.f16", E4m3, E2m1, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e3m2.e5m2.f16", E3m2, E5m2, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e3m2.e4m3.f16", E3m2, E4m3, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e3m2.e3m2.f16", E3m2, E3m2, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e3m2.e2m3.f16", E3m2, E2m3, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e3m2.e2m1.f16", E3m2, E2m1, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m3.e5m2.f16", E2m3, E5m2, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m3.e4m3.f16", E2m3, E4m3, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m3.e3m2.f16", E2m3, E3m2, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m3.e2m3.f16", E2m3, E2m3, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m3.e2m1.f16", E2m3, E2m1, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m1.e5m2.f16", E2m1, E5m2, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m1.e4m3.f16", E2m1, E4m3, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m1.e3m2.f16", E2m1, E3m2, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m1.e2m3.f16", E2m1, E2m3, F16, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.f16.e2m1.e2m1.f16", E2m1, E2m1, F16, (16, 8, 32), (12, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e5m2.e3m2", E5m2, E3m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e5m2.e2m3", E5m2, E2m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e5m2.e2m1", E5m2, E2m1, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e4m3.e3m2", E4m3, E3m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e4m3.e2m3", E4m3, E2m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e4m3.e2m1", E4m3, E2m1, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e3m2.e5m2", E3m2, E5m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e3m2.e4m3", E3m2, E4m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e3m2.e3m2", E3m2, E3m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e3m2.e2m3", E3m2, E2m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e3m2.e2m1", E3m2, E2m1, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m3.e5m2", E2m3, E5m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m3.e4m3", E2m3, E4m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m3.e3m2", E2m3, E3m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m3.e2m3", E2m3, E2m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m3.e2m1", E2m3, E2m1, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m1.e5m2", E2m1, E5m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m1.e4m3", E2m1, E4m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m1.e3m2", E2m1, E3m2, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m1.e2m3", E2m1, E2m3, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f32.e2m1.e2m1", E2m1, E2m1, F32, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e5m2.e3m2", E5m2, E3m2, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e5m2.e2m3", E5m2, E2m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e5m2.e2m1", E5m2, E2m1, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e4m3.e3m2", E4m3, E3m2, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e4m3.e2m3", E4m3, E2m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e4m3.e2m1", E4m3, E2m1, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e3m2.e5m2", E3m2, E5m2, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e3m2.e4m3", E3m2, E4m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e3m2.e3m2", E3m2, E3m2, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e3m2.e2m3", E3m2, E2m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e3m2.e2m1", E3m2, E2m1, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m3.e5m2", E2m3, E5m2, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m3.e4m3", E2m3, E4m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m3.e3m2", E2m3, E3m2, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m3.e2m3", E2m3, E2m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m3.e2m1", E2m3, E2m1, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m1.e5m2", E2m1, E5m2, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m1.e4m3", E2m1, E4m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m1.e3m2", E2m1, E3m2, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m1.e2m3", E2m1, E2m3, F16, (64, 8, 32), (10, 0)),
    sim("tcgen05.mma.m64n8k32.f16.e2m1.e2m1", E2m1, E2m1, F16, (64, 8, 32), (10, 0)),
    // Block-scaled mma.sync (RTX Blackwell, sm_120: kind::mxf8f6f4.block_scale with one ue8m0
    // scale per 32 elements along K of each row of A and column of B; `exec::paths::block_scale`).
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e5m2.e5m2.f32.ue8m0", E5m2, E5m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e5m2.e4m3.f32.ue8m0", E5m2, E4m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e5m2.e3m2.f32.ue8m0", E5m2, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e5m2.e2m3.f32.ue8m0", E5m2, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e5m2.e2m1.f32.ue8m0", E5m2, E2m1, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e5m2.f32.ue8m0", E4m3, E5m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e4m3.f32.ue8m0", E4m3, E4m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e3m2.f32.ue8m0", E4m3, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e2m3.f32.ue8m0", E4m3, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0", E4m3, E2m1, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e3m2.e5m2.f32.ue8m0", E3m2, E5m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e3m2.e4m3.f32.ue8m0", E3m2, E4m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e3m2.e3m2.f32.ue8m0", E3m2, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e3m2.e2m3.f32.ue8m0", E3m2, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e3m2.e2m1.f32.ue8m0", E3m2, E2m1, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m3.e5m2.f32.ue8m0", E2m3, E5m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m3.e4m3.f32.ue8m0", E2m3, E4m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m3.e3m2.f32.ue8m0", E2m3, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m3.e2m3.f32.ue8m0", E2m3, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m3.e2m1.f32.ue8m0", E2m3, E2m1, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m1.e5m2.f32.ue8m0", E2m1, E5m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m1.e4m3.f32.ue8m0", E2m1, E4m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m1.e3m2.f32.ue8m0", E2m1, E3m2, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m1.e2m3.f32.ue8m0", E2m1, E2m3, F32, (16, 8, 32), (12, 0)),
    sim("mma.m16n8k32.mxf8f6f4.block32.f32.e2m1.e2m1.f32.ue8m0", E2m1, E2m1, F32, (16, 8, 32), (12, 0)),
    // Blackwell's block-scaled tcgen05.mma (sm_100, kind::mxf8f6f4.block_scale, ue8m0 scales per
    // 32 elements along K), at M = 128 as MMA-Sim has it.
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e5m2.e5m2.ue8m0", E5m2, E5m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e5m2.e4m3.ue8m0", E5m2, E4m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e5m2.e3m2.ue8m0", E5m2, E3m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e5m2.e2m3.ue8m0", E5m2, E2m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e5m2.e2m1.ue8m0", E5m2, E2m1, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e4m3.e5m2.ue8m0", E4m3, E5m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e4m3.e4m3.ue8m0", E4m3, E4m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e4m3.e3m2.ue8m0", E4m3, E3m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e4m3.e2m3.ue8m0", E4m3, E2m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e4m3.e2m1.ue8m0", E4m3, E2m1, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e3m2.e5m2.ue8m0", E3m2, E5m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e3m2.e4m3.ue8m0", E3m2, E4m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e3m2.e3m2.ue8m0", E3m2, E3m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e3m2.e2m3.ue8m0", E3m2, E2m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e3m2.e2m1.ue8m0", E3m2, E2m1, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m3.e5m2.ue8m0", E2m3, E5m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m3.e4m3.ue8m0", E2m3, E4m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m3.e3m2.ue8m0", E2m3, E3m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m3.e2m3.ue8m0", E2m3, E2m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m3.e2m1.ue8m0", E2m3, E2m1, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m1.e5m2.ue8m0", E2m1, E5m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m1.e4m3.ue8m0", E2m1, E4m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m1.e3m2.ue8m0", E2m1, E3m2, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m1.e2m3.ue8m0", E2m1, E2m3, F32, (128, 8, 32), (10, 0)),
    sim("tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m1.e2m1.ue8m0", E2m1, E2m1, F32, (128, 8, 32), (10, 0)),
    // Block-scaled FP4 at K = 64 (kind::mxf4 and kind::mxf4nvf4, RTX Blackwell's mma.sync and
    // Blackwell's tcgen05.mma): ue8m0 scales per 32 or 16 elements, or ue4m3 per 16.
    sim("mma.m16n8k64.mxf4.block32.f32.e2m1.e2m1.f32.ue8m0", E2m1, E2m1, F32, (16, 8, 64), (12, 0)),
    sim("mma.m16n8k64.mxf4nvf4.block32.f32.e2m1.e2m1.f32.ue8m0", E2m1, E2m1, F32, (16, 8, 64), (12, 0)),
    sim("mma.m16n8k64.mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue8m0", E2m1, E2m1, F32, (16, 8, 64), (12, 0)),
    sim("mma.m16n8k64.mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3", E2m1, E2m1, F32, (16, 8, 64), (12, 0)),
    sim("tcgen05.mma.m128n8k64.mxf4.block32.f32.e2m1.e2m1.ue8m0", E2m1, E2m1, F32, (128, 8, 64), (10, 0)),
    sim("tcgen05.mma.m128n8k64.mxf4nvf4.block32.f32.e2m1.e2m1.ue8m0", E2m1, E2m1, F32, (128, 8, 64), (10, 0)),
    sim("tcgen05.mma.m128n8k64.mxf4nvf4.block16.f32.e2m1.e2m1.ue8m0", E2m1, E2m1, F32, (128, 8, 64), (10, 0)),
    sim("tcgen05.mma.m128n8k64.mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3", E2m1, E2m1, F32, (128, 8, 64), (10, 0)),
    // CDNA3's FP8 mfma on AMD's fnuz formats (fp8 = e4m3fnuz, bf8 = e5m2fnuz).
    sim("mfma.m16n16k32.f32.e4m3fnuz.e4m3fnuz.f32", E4m3fnuz, E4m3fnuz, F32, (16, 16, 32), (0, 0)),
    sim("mfma.m16n16k32.f32.e4m3fnuz.e5m2fnuz.f32", E4m3fnuz, E5m2fnuz, F32, (16, 16, 32), (0, 0)),
    sim("mfma.m16n16k32.f32.e5m2fnuz.e4m3fnuz.f32", E5m2fnuz, E4m3fnuz, F32, (16, 16, 32), (0, 0)),
    sim("mfma.m16n16k32.f32.e5m2fnuz.e5m2fnuz.f32", E5m2fnuz, E5m2fnuz, F32, (16, 16, 32), (0, 0)),
    sim("mfma.m32n32k16.f32.e4m3fnuz.e4m3fnuz.f32", E4m3fnuz, E4m3fnuz, F32, (32, 32, 16), (0, 0)),
    sim("mfma.m32n32k16.f32.e4m3fnuz.e5m2fnuz.f32", E4m3fnuz, E5m2fnuz, F32, (32, 32, 16), (0, 0)),
    sim("mfma.m32n32k16.f32.e5m2fnuz.e4m3fnuz.f32", E5m2fnuz, E4m3fnuz, F32, (32, 32, 16), (0, 0)),
    sim("mfma.m32n32k16.f32.e5m2fnuz.e5m2fnuz.f32", E5m2fnuz, E5m2fnuz, F32, (32, 32, 16), (0, 0)),
    // AMD CDNA1-3 mfma (v_mfma_*), named as PTX names shapes and types (D.A.B.C); xf32 is
    // CDNA3's TF32 (f32 registers whose low 13 bits are ignored).
    sim("mfma.m4n4k1.f32.f32.f32.f32", F32, F32, F32, (4, 4, 1), (0, 0)),
    sim("mfma.m16n16k4.f32.f32.f32.f32", F32, F32, F32, (16, 16, 4), (0, 0)),
    sim("mfma.m4n4k4.f64.f64.f64.f64", F64, F64, F64, (4, 4, 4), (0, 0)),
    sim("mfma.m4n4k4.f32.f16.f16.f32", F16, F16, F32, (4, 4, 4), (0, 0)),
    sim("mfma.m32n32k8.f32.f16.f16.f32", F16, F16, F32, (32, 32, 8), (0, 0)),
    sim("mfma.m16n16k16.f32.f16.f16.f32", F16, F16, F32, (16, 16, 16), (0, 0)),
    sim("mfma.m4n4k2.f32.bf16.bf16.f32", Bf16, Bf16, F32, (4, 4, 2), (0, 0)),
    sim("mfma.m32n32k4.f32.bf16.bf16.f32", Bf16, Bf16, F32, (32, 32, 4), (0, 0)),
    sim("mfma.m16n16k8.f32.bf16.bf16.f32", Bf16, Bf16, F32, (16, 16, 8), (0, 0)),
    sim("mfma.m4n4k4.f32.bf16.bf16.f32", Bf16, Bf16, F32, (4, 4, 4), (0, 0)),
    sim("mfma.m32n32k8.f32.bf16.bf16.f32", Bf16, Bf16, F32, (32, 32, 8), (0, 0)),
    sim("mfma.m16n16k16.f32.bf16.bf16.f32", Bf16, Bf16, F32, (16, 16, 16), (0, 0)),
    sim("mfma.m32n32k4.f32.xf32.xf32.f32", Tf32, Tf32, F32, (32, 32, 4), (0, 0)),
    sim("mfma.m16n16k8.f32.xf32.xf32.f32", Tf32, Tf32, F32, (16, 16, 8), (0, 0)),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{path_by_id, PATHS};

    #[test]
    fn simulated_paths_are_found_unique_and_take_their_own_tiles() {
        for p in SIMULATED {
            assert_eq!(path_by_id(p.id).map(|q| q.id), Some(p.id));
            assert!(!PATHS.iter().any(|q| q.id == p.id), "{} is also a GPU path", p.id);
            assert_eq!(SIMULATED.iter().filter(|q| q.id == p.id).count(), 1, "{}", p.id);
            assert!(p.check(&p.zeros()).is_ok(), "{}", p.id);
            // The id spells the shape and D's, A's and B's formats.
            let shape = format!(".m{}n{}k{}.", p.m, p.n, p.k);
            assert!(p.id.contains(&shape), "{} vs {shape}", p.id);
        }
    }
}
