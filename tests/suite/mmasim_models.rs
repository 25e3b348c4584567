//! The models of MMA-Sim's architectures (`models/<arch>/`, discovered against MMA-Sim 2.1.1 by
//! `scripts/mmasim-models.py`), replayed on MMA-Sim's recorded answers (`corpus/mmasim/<arch>/`)
//! without PyTorch: every model reproduces every element of its tiles, and names its origin.

use mmafuzz::exec::path_by_id;
use mmafuzz::replay::{corpus_path_id, read_corpus};
use mmafuzz::{Emulator, Model};
use rayon::prelude::*;
use std::path::Path;

const ARCHS: &[(&str, &str)] = &[
    ("volta", "Volta"),
    ("turing", "Turing"),
    ("ampere", "Ampere"),
    ("ada", "Ada Lovelace"),
    ("blackwell", "Blackwell"),
    ("rtx-blackwell", "RTX Blackwell"),
    ("cdna1", "CDNA1"),
    ("cdna2", "CDNA2"),
    ("cdna3", "CDNA3"),
];

fn toml_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect()).unwrap_or_default();
    v.sort();
    v
}

#[test]
fn every_mmasim_model_reproduces_mmasims_recorded_answers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut models = 0;
    for (dir, arch) in ARCHS {
        for file in toml_files(&root.join("models").join(dir)) {
            let stem = file.file_stem().unwrap().to_str().unwrap().to_string();
            let name = format!("{dir}:{stem}");
            // Embedded under ARCH:PATH, the same text as the file.
            let model = Model::load(&name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(model.name, name);
            assert!(model.sources.iter().any(|s| s.contains(&format!("MMA-Sim 2.1.1 {arch} model"))), "{name}: {:?}", model.sources);
            let path = path_by_id(&stem).unwrap_or_else(|| panic!("{name}: no path {stem}"));
            let corpus = mmafuzz::store::jsonl_file(&root.join("corpus/mmasim").join(dir), &stem);
            assert_eq!(corpus_path_id(&corpus), stem);
            let (cases, bad) = read_corpus(&corpus).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(bad.is_empty(), "{name}: {bad:?}");
            assert!(cases.len() >= 256, "{name}: {} tiles", cases.len());
            let emu = Emulator::new(model);
            let differ: usize = cases
                .par_iter()
                .map(|(c, d)| {
                    let label = c.extra["provenance"]["oracle"].as_str().unwrap_or_default();
                    assert!(label.starts_with(&format!("MMA-Sim 2.1.1 {arch} model")) && label.ends_with("not hardware"), "{name}: {label}");
                    assert!(path.check(c).is_ok(), "{name}: a tile of another shape");
                    emu.run(c).unwrap().iter().zip(d).filter(|(a, b)| a != b).count()
                })
                .sum();
            assert_eq!(differ, 0, "{name}: {differ} elements differ from MMA-Sim's recorded answers");
            models += 1;
        }
    }
    // Every NVIDIA generation before Blackwell and every CDNA has models (report/mmasim.md).
    for (dir, _) in ARCHS {
        assert!(!toml_files(&root.join("models").join(dir)).is_empty(), "no models for {dir}");
    }
    assert!(models >= 256, "{models} models");
}

#[test]
fn a_model_of_another_architecture_fails_the_replay() {
    // The replay can tell architectures apart: Volta's m8n8k4 (4-wide, no extra bit) is not
    // Ampere's m16n8k8 structure, and Ampere's f16 model (1 extra bit) misses some of Hopper's
    // answers (2 extra bits) on the same path.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = mmafuzz::store::jsonl_file(&root.join("corpus/mmasim/hopper"), "mma.m16n8k16.f32.f16.f16.f32");
    let (cases, _) = read_corpus(&corpus).unwrap();
    let emu = Emulator::new(Model::load("ampere:mma.m16n8k16.f32.f16.f16.f32").unwrap());
    let differ: usize = cases.par_iter().map(|(c, d)| emu.run(c).unwrap().iter().zip(d).filter(|(a, b)| a != b).count()).sum();
    assert!(differ > 0, "Ampere's model reproduces Hopper's answers: the replay cannot tell them apart");
}
