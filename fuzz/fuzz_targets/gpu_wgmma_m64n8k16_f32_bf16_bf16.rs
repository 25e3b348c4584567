//! wgmma.m64n8k16.f32.bf16.bf16 on the GPU against its sm90 model, guided by arithmetic features (see gpu.rs).
#![no_main]

mod gpu;

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpu::run("wgmma.m64n8k16.f32.bf16.bf16", data));
