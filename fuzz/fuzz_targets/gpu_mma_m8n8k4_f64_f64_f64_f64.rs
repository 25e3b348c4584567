//! mma.m8n8k4.f64.f64.f64.f64 on the GPU against its sm90 model, guided by arithmetic features (see gpu.rs).
#![no_main]

mod gpu;

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpu::run("mma.m8n8k4.f64.f64.f64.f64", data));
