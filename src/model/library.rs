//! The model library shipped inside the binary, so `--model h100` works from any directory.
//! The files themselves live in `models/`, where they are read, cited and reviewed.

const EMBEDDED: &[(&str, &str)] = &[
    ("exact-rne", include_str!("../../models/exact-rne.toml")),
    ("fma-chain-rne", include_str!("../../models/fma-chain-rne.toml")),
    ("v100", include_str!("../../models/v100.toml")),
    ("v100-hickmann", include_str!("../../models/v100-hickmann.toml")),
    ("a100", include_str!("../../models/a100.toml")),
    ("h100", include_str!("../../models/h100.toml")),
    ("s32-exact", include_str!("../../models/s32-exact.toml")),
];

/// Per-path models, named `ARCH:PATH` (files `models/<arch>/<path>.toml`).
const EMBEDDED_ARCH: &[(&str, &str)] = &[
    ("sm90:cublaslt.matmul.f32.e4m3.e4m3.f32", include_str!("../../models/sm90/cublaslt.matmul.f32.e4m3.e4m3.f32.toml")),
    ("sm90:cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum", include_str!("../../models/sm90/cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum.toml")),
    ("sm90:cublaslt.matmul.f32.e4m3.e5m2.f32", include_str!("../../models/sm90/cublaslt.matmul.f32.e4m3.e5m2.f32.toml")),
    ("sm90:cublaslt.matmul.f32.e5m2.e4m3.f32", include_str!("../../models/sm90/cublaslt.matmul.f32.e5m2.e4m3.f32.toml")),
    ("sm90:cublas.gemm.bf16.bf16.bf16.bf16", include_str!("../../models/sm90/cublas.gemm.bf16.bf16.bf16.bf16.toml")),
    ("sm90:cublas.gemm.f16.f16.f16.f16", include_str!("../../models/sm90/cublas.gemm.f16.f16.f16.f16.toml")),
    ("sm90:cublas.gemm.f32.tf32.tf32.f32", include_str!("../../models/sm90/cublas.gemm.f32.tf32.tf32.f32.toml")),
    ("sm90:cublas.gemm.f32.f32.f32.f32", include_str!("../../models/sm90/cublas.gemm.f32.f32.f32.f32.toml")),
    ("sm90:cublas.gemm.f32.bf16.bf16.f32", include_str!("../../models/sm90/cublas.gemm.f32.bf16.bf16.f32.toml")),
    ("sm90:cublas.gemm.f32.f16.f16.f32", include_str!("../../models/sm90/cublas.gemm.f32.f16.f16.f32.toml")),
    ("sm90:cublas.gemm.f64.f64.f64.f64", include_str!("../../models/sm90/cublas.gemm.f64.f64.f64.f64.toml")),
    ("sm90:mma.m16n8k16.f16.f16.f16.f16", include_str!("../../models/sm90/mma.m16n8k16.f16.f16.f16.f16.toml")),
    ("sm90:mma.m16n8k16.f32.bf16.bf16.f32", include_str!("../../models/sm90/mma.m16n8k16.f32.bf16.bf16.f32.toml")),
    ("sm90:mma.m16n8k16.f32.f16.f16.f32", include_str!("../../models/sm90/mma.m16n8k16.f32.f16.f16.f32.toml")),
    ("sm90:mma.m16n8k32.f32.e4m3.e4m3.f32", include_str!("../../models/sm90/mma.m16n8k32.f32.e4m3.e4m3.f32.toml")),
    ("sm90:mma.m16n8k32.f32.e5m2.e5m2.f32", include_str!("../../models/sm90/mma.m16n8k32.f32.e5m2.e5m2.f32.toml")),
    ("sm90:mma.m16n8k8.f32.tf32.tf32.f32", include_str!("../../models/sm90/mma.m16n8k8.f32.tf32.tf32.f32.toml")),
    ("sm90:wgmma.m64n16k16.f32.f16.f16", include_str!("../../models/sm90/wgmma.m64n16k16.f32.f16.f16.toml")),
    ("sm90:wgmma.m64n64k16.f32.f16.f16", include_str!("../../models/sm90/wgmma.m64n64k16.f32.f16.f16.toml")),
    ("sm90:wgmma.m64n128k16.f32.f16.f16", include_str!("../../models/sm90/wgmma.m64n128k16.f32.f16.f16.toml")),
    ("sm90:wgmma.m64n256k16.f32.f16.f16", include_str!("../../models/sm90/wgmma.m64n256k16.f32.f16.f16.toml")),
    ("sm90:wgmma.m64n256k16.f32.bf16.bf16", include_str!("../../models/sm90/wgmma.m64n256k16.f32.bf16.bf16.toml")),
    ("sm90:wgmma.m64n256k16.f16.f16.f16", include_str!("../../models/sm90/wgmma.m64n256k16.f16.f16.f16.toml")),
    ("sm90:wgmma.m64n256k8.f32.tf32.tf32", include_str!("../../models/sm90/wgmma.m64n256k8.f32.tf32.tf32.toml")),
    ("sm90:wgmma.m64n256k32.f32.e4m3.e4m3", include_str!("../../models/sm90/wgmma.m64n256k32.f32.e4m3.e4m3.toml")),
    ("sm90:wgmma.m64n256k32.f32.e5m2.e5m2", include_str!("../../models/sm90/wgmma.m64n256k32.f32.e5m2.e5m2.toml")),
    ("sm90:wgmma.m64n8k32.f32.e4m3.e5m2", include_str!("../../models/sm90/wgmma.m64n8k32.f32.e4m3.e5m2.toml")),
    ("sm90:wgmma.m64n8k32.f32.e5m2.e4m3", include_str!("../../models/sm90/wgmma.m64n8k32.f32.e5m2.e4m3.toml")),
    ("sm90:wgmma.m64n8k32.f16.e4m3.e4m3", include_str!("../../models/sm90/wgmma.m64n8k32.f16.e4m3.e4m3.toml")),
    ("sm90:wgmma.m64n8k32.f16.e5m2.e5m2", include_str!("../../models/sm90/wgmma.m64n8k32.f16.e5m2.e5m2.toml")),
    ("sm90:mma.m8n8k4.f64.f64.f64.f64", include_str!("../../models/sm90/mma.m8n8k4.f64.f64.f64.f64.toml")),
    ("sm90:mma.m8n8k4.f32.f16.f16.f32", include_str!("../../models/sm90/mma.m8n8k4.f32.f16.f16.f32.toml")),
    ("sm90:mma.m8n8k4.f16.f16.f16.f16", include_str!("../../models/sm90/mma.m8n8k4.f16.f16.f16.f16.toml")),
    ("sm90:mma.m16n8k8.f32.f16.f16.f32", include_str!("../../models/sm90/mma.m16n8k8.f32.f16.f16.f32.toml")),
    ("sm90:mma.m16n8k8.f16.f16.f16.f16", include_str!("../../models/sm90/mma.m16n8k8.f16.f16.f16.f16.toml")),
    ("sm90:mma.m16n8k8.f32.bf16.bf16.f32", include_str!("../../models/sm90/mma.m16n8k8.f32.bf16.bf16.f32.toml")),
    ("sm90:mma.m16n8k4.f32.tf32.tf32.f32", include_str!("../../models/sm90/mma.m16n8k4.f32.tf32.tf32.f32.toml")),
    ("sm90:mma.m16n8k4.f64.f64.f64.f64", include_str!("../../models/sm90/mma.m16n8k4.f64.f64.f64.f64.toml")),
    ("sm90:mma.m16n8k8.f64.f64.f64.f64", include_str!("../../models/sm90/mma.m16n8k8.f64.f64.f64.f64.toml")),
    ("sm90:mma.m16n8k16.f64.f64.f64.f64", include_str!("../../models/sm90/mma.m16n8k16.f64.f64.f64.f64.toml")),
    ("sm90:mma.m16n8k32.f16.e4m3.e4m3.f16", include_str!("../../models/sm90/mma.m16n8k32.f16.e4m3.e4m3.f16.toml")),
    ("sm90:mma.m16n8k32.f16.e5m2.e5m2.f16", include_str!("../../models/sm90/mma.m16n8k32.f16.e5m2.e5m2.f16.toml")),
    ("sm90:mma.m16n8k16.f32.e4m3.e4m3.f32", include_str!("../../models/sm90/mma.m16n8k16.f32.e4m3.e4m3.f32.toml")),
    ("sm90:mma.m16n8k16.f32.e5m2.e5m2.f32", include_str!("../../models/sm90/mma.m16n8k16.f32.e5m2.e5m2.f32.toml")),
    ("sm90:mma.m16n8k16.f16.e4m3.e4m3.f16", include_str!("../../models/sm90/mma.m16n8k16.f16.e4m3.e4m3.f16.toml")),
    ("sm90:mma.m16n8k16.f16.e5m2.e5m2.f16", include_str!("../../models/sm90/mma.m16n8k16.f16.e5m2.e5m2.f16.toml")),
    ("sm90:mma.m16n8k32.f32.e4m3.e5m2.f32", include_str!("../../models/sm90/mma.m16n8k32.f32.e4m3.e5m2.f32.toml")),
    ("sm90:mma.m16n8k32.f32.e5m2.e4m3.f32", include_str!("../../models/sm90/mma.m16n8k32.f32.e5m2.e4m3.f32.toml")),
    ("sm90:wgmma.m64n8k16.f16.f16.f16", include_str!("../../models/sm90/wgmma.m64n8k16.f16.f16.f16.toml")),
    ("sm90:wgmma.m64n8k16.f32.bf16.bf16", include_str!("../../models/sm90/wgmma.m64n8k16.f32.bf16.bf16.toml")),
    ("sm90:wgmma.m64n8k16.f32.f16.f16", include_str!("../../models/sm90/wgmma.m64n8k16.f32.f16.f16.toml")),
    ("sm90:wgmma.m64n8k32.f32.e4m3.e4m3", include_str!("../../models/sm90/wgmma.m64n8k32.f32.e4m3.e4m3.toml")),
    ("sm90:wgmma.m64n8k32.f32.e5m2.e5m2", include_str!("../../models/sm90/wgmma.m64n8k32.f32.e5m2.e5m2.toml")),
    ("sm90:wgmma.m64n8k8.f32.tf32.tf32", include_str!("../../models/sm90/wgmma.m64n8k8.f32.tf32.tf32.toml")),
    ("sm90:wgmma.m64n8k16.f32.f16.f16.smem_a", include_str!("../../models/sm90/wgmma.m64n8k16.f32.f16.f16.smem_a.toml")),
    ("sm90:wgmma.m64n8k16.f32.f16.f16.trans_b", include_str!("../../models/sm90/wgmma.m64n8k16.f32.f16.f16.trans_b.toml")),
    ("sm90:wgmma.m64n8k16.f32.bf16.bf16.trans_b", include_str!("../../models/sm90/wgmma.m64n8k16.f32.bf16.bf16.trans_b.toml")),
    ("sm90:wgmma.m64n8k16.f32.f16.f16.trans_ab", include_str!("../../models/sm90/wgmma.m64n8k16.f32.f16.f16.trans_ab.toml")),
    ("sm90:wgmma.m64n8k16.f32.bf16.bf16.trans_ab", include_str!("../../models/sm90/wgmma.m64n8k16.f32.bf16.bf16.trans_ab.toml")),
    ("sm90:wgmma.m64n8k16.f32.f16.f16.neg_a", include_str!("../../models/sm90/wgmma.m64n8k16.f32.f16.f16.neg_a.toml")),
    ("sm90:wgmma.m64n8k16.f32.f16.f16.neg_b", include_str!("../../models/sm90/wgmma.m64n8k16.f32.f16.f16.neg_b.toml")),
    ("sm90:wgmma.m64n8k16.f32.f16.f16.scale_d0", include_str!("../../models/sm90/wgmma.m64n8k16.f32.f16.f16.scale_d0.toml")),
    ("sm90:wgmma.m64n8k16.f32.f16.f16.chain4", include_str!("../../models/sm90/wgmma.m64n8k16.f32.f16.f16.chain4.toml")),
    ("sm90:wgmma.m64n8k16.f32.bf16.bf16.chain4", include_str!("../../models/sm90/wgmma.m64n8k16.f32.bf16.bf16.chain4.toml")),
    ("sm90:wgmma.m64n8k16.f16.f16.f16.chain4", include_str!("../../models/sm90/wgmma.m64n8k16.f16.f16.f16.chain4.toml")),
    ("sm90:wgmma.m64n8k32.f32.e4m3.e4m3.chain4", include_str!("../../models/sm90/wgmma.m64n8k32.f32.e4m3.e4m3.chain4.toml")),
    ("sm90:mma.m16n8k32.s32.s8.s8.s32", include_str!("../../models/sm90/mma.m16n8k32.s32.s8.s8.s32.toml")),
    ("sm90:mma.m16n8k32.s32.s8.s8.s32.satfinite", include_str!("../../models/sm90/mma.m16n8k32.s32.s8.s8.s32.satfinite.toml")),
    ("sm90:mma.m16n8k32.s32.u8.u8.s32", include_str!("../../models/sm90/mma.m16n8k32.s32.u8.u8.s32.toml")),
    ("sm90:mma.m16n8k32.s32.u8.u8.s32.satfinite", include_str!("../../models/sm90/mma.m16n8k32.s32.u8.u8.s32.satfinite.toml")),
    ("sm90:mma.m16n8k32.s32.s8.u8.s32.satfinite", include_str!("../../models/sm90/mma.m16n8k32.s32.s8.u8.s32.satfinite.toml")),
    ("sm90:mma.m16n8k32.s32.u8.s8.s32", include_str!("../../models/sm90/mma.m16n8k32.s32.u8.s8.s32.toml")),
    ("sm90:mma.m16n8k16.s32.s8.s8.s32", include_str!("../../models/sm90/mma.m16n8k16.s32.s8.s8.s32.toml")),
    ("sm90:mma.m16n8k16.s32.s8.s8.s32.satfinite", include_str!("../../models/sm90/mma.m16n8k16.s32.s8.s8.s32.satfinite.toml")),
    ("sm90:mma.m16n8k64.s32.s4.s4.s32", include_str!("../../models/sm90/mma.m16n8k64.s32.s4.s4.s32.toml")),
    ("sm90:mma.m16n8k64.s32.s4.s4.s32.satfinite", include_str!("../../models/sm90/mma.m16n8k64.s32.s4.s4.s32.satfinite.toml")),
    ("sm90:mma.m16n8k64.s32.u4.u4.s32", include_str!("../../models/sm90/mma.m16n8k64.s32.u4.u4.s32.toml")),
    ("sm90:mma.m16n8k256.s32.b1.b1.s32.and.popc", include_str!("../../models/sm90/mma.m16n8k256.s32.b1.b1.s32.and.popc.toml")),
    ("sm90:mma.m16n8k256.s32.b1.b1.s32.xor.popc", include_str!("../../models/sm90/mma.m16n8k256.s32.b1.b1.s32.xor.popc.toml")),
    ("sm90:wgmma.m64n8k32.s32.s8.s8", include_str!("../../models/sm90/wgmma.m64n8k32.s32.s8.s8.toml")),
    ("sm90:wgmma.m64n8k32.s32.s8.s8.satfinite", include_str!("../../models/sm90/wgmma.m64n8k32.s32.s8.s8.satfinite.toml")),
    ("sm90:wgmma.m64n8k32.s32.u8.u8", include_str!("../../models/sm90/wgmma.m64n8k32.s32.u8.u8.toml")),
    ("sm90:wgmma.m64n8k32.s32.s8.u8.satfinite", include_str!("../../models/sm90/wgmma.m64n8k32.s32.s8.u8.satfinite.toml")),
    ("sm90:wgmma.m64n8k256.s32.b1.b1.and.popc", include_str!("../../models/sm90/wgmma.m64n8k256.s32.b1.b1.and.popc.toml")),
];

/// Names of the embedded models, in library order (the per-path `ARCH:PATH` ones are listed by
/// [`embedded_arch_model_names`]).
pub fn embedded_model_names() -> Vec<&'static str> {
    EMBEDDED.iter().map(|(n, _)| *n).collect()
}

/// Names of the embedded per-path models, `ARCH:PATH`.
pub fn embedded_arch_model_names() -> Vec<&'static str> {
    EMBEDDED_ARCH.iter().map(|(n, _)| *n).collect()
}

/// The TOML text of an embedded model.
pub fn embedded_model_source(name: &str) -> Option<&'static str> {
    EMBEDDED.iter().chain(EMBEDDED_ARCH).find(|(n, _)| *n == name).map(|(_, s)| *s)
}
