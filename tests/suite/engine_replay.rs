//! The GPU engine's recordings (`corpus/engine/*.json`, written by `mmafuzz engine-check
//! --record` on the GPU) replayed without a GPU: the tiles `engine::gen` makes must be the tiles
//! the GPU's generator made, and the emulator's D on them the D the engine's CUDA model computed,
//! chunk by chunk (digests of every bit).

use mmafuzz::engine::{gen, record};
use mmafuzz::exec::path_by_id;
use mmafuzz::{Emulator, Model};
use rayon::prelude::*;

#[test]
fn engine_recordings_replay_bit_for_bit() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/engine");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("corpus/engine exists").filter_map(Result::ok).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    assert!(files.len() >= 3, "expected recordings for the three engine paths in {}", dir.display());
    for file in files {
        let r = record::load(&file).unwrap();
        let path = path_by_id(&r.path).unwrap_or_else(|| panic!("{}: unknown path {}", file.display(), r.path));
        let emulator = Emulator::new(Model::load(&r.model).unwrap());
        assert!(!r.chunks.is_empty());
        for (c, want) in r.chunks.iter().enumerate() {
            let first = c as u64 * r.chunk;
            let tiles: Vec<_> = (first..first + r.chunk).into_par_iter().map(|i| gen::tile(path, r.seed, i)).collect();
            let d: Vec<Vec<u64>> = tiles.par_iter().map(|t| emulator.run(t).unwrap()).collect();
            let got = record::digests(&tiles, &d);
            assert_eq!(got[0], want[0], "{}: chunk {c}: the generator's tiles differ from the GPU's", file.display());
            assert_eq!(got[1], want[1], "{}: chunk {c}: the emulator's D differs from the engine's on the GPU", file.display());
        }
        eprintln!("{}: {} chunks of {} tiles ({}, {}) replayed", file.display(), r.chunks.len(), r.chunk, r.gpu, r.driver);
    }
}
