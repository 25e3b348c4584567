//! The GPU engine's model (CUDA, `exec/kernels/engine.cu`) against the Rust emulator on any
//! tiles: the input decodes to up to 32 tiles of MMAFUZZ_PATH (default
//! mma.m16n8k16.f32.f16.f16.f32) by the GPU targets' codec; the engine computes MMAFUZZ_MODEL
//! (default the path's sm90 model) on the GPU, the emulator on the CPU; any difference panics
//! with the tile and both outputs. Needs a GPU.
#![no_main]

use mmafuzz::engine::GpuEngine;
use mmafuzz::exec::{path_by_id, Gpu};
use mmafuzz::{Emulator, Model};
use std::sync::OnceLock;

struct Sides {
    engine: GpuEngine<'static>,
    emulator: Emulator,
    path: &'static mmafuzz::exec::PathSpec,
}

fn sides() -> &'static Sides {
    static SIDES: OnceLock<Sides> = OnceLock::new();
    SIDES.get_or_init(|| {
        let id = std::env::var("MMAFUZZ_PATH").unwrap_or_else(|_| "mma.m16n8k16.f32.f16.f16.f32".into());
        let path = path_by_id(&id).unwrap_or_else(|| {
            eprintln!("gpu_engine: unknown path '{id}'");
            std::process::exit(2)
        });
        let name = std::env::var("MMAFUZZ_MODEL").unwrap_or_else(|_| format!("sm90:{id}"));
        let fail = |e: String| -> ! {
            eprintln!("gpu_engine: {e}");
            std::process::exit(2)
        };
        let model = Model::load(&name).unwrap_or_else(|e| fail(e.to_string()));
        let gpu: &'static Gpu = Box::leak(Box::new(Gpu::open(0).unwrap_or_else(|e| fail(e.to_string()))));
        let engine = GpuEngine::new(gpu, path, &model).unwrap_or_else(|e| fail(e));
        eprintln!("gpu_engine: {} under {name} on {}", path.id, gpu.info.name);
        Sides { engine, emulator: Emulator::new(model), path }
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let s = sides();
    let tiles = mmafuzz::fuzzing::codec::decode(s.path, data);
    let got = s.engine.model_tiles(&tiles).unwrap_or_else(|e| {
        eprintln!("gpu_engine: {e}");
        std::process::exit(2)
    });
    for (t, (tile, g)) in tiles.iter().zip(&got).enumerate() {
        let want = s.emulator.run(tile).expect("the engine's paths emulate");
        if let Some(e) = (0..want.len()).find(|&e| want[e] != g[e]) {
            panic!("tile {t}, element ({}, {}): engine {:#x}, emulator {:#x}\n{}", e / tile.n, e % tile.n, g[e], want[e], serde_json::Value::Object(tile.to_json()));
        }
    }
});
