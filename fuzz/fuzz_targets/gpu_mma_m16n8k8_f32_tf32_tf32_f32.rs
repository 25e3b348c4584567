//! mma.m16n8k8.f32.tf32.tf32.f32 on the GPU against its sm90 model, guided by arithmetic features (see gpu.rs).
#![no_main]

mod gpu;

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpu::run("mma.m16n8k8.f32.tf32.tf32.f32", data));
