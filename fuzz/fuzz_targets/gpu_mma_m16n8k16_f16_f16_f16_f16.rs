//! mma.m16n8k16.f16.f16.f16.f16 on the GPU against its sm90 model, guided by arithmetic features (see gpu.rs).
#![no_main]

mod gpu;

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpu::run("mma.m16n8k16.f16.f16.f16.f16", data));
