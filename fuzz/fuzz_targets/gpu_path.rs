//! Any instruction path on the GPU against its sm90 model (MMAFUZZ_PATH names it; default
//! mma.m16n8k16.f32.f16.f16.f32): one binary for every path, for machines a binary is carried to.
#![no_main]

mod gpu;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let path = PATH.get_or_init(|| std::env::var("MMAFUZZ_PATH").unwrap_or_else(|_| "mma.m16n8k16.f32.f16.f16.f32".into()));
    gpu::run(path, data)
});
