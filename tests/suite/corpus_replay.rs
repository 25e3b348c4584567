//! CI's view of the hardware: every recorded GPU tile in corpus/ is replayed on the emulator
//! under its path's current model, and the fraction reproduced bitwise may never fall below
//! the committed figure in corpus/ratchet.toml.

use mmafuzz::exec::path_by_id;
use mmafuzz::replay::{corpus_files, corpus_path_id, read_corpus, replay_cases};
use mmafuzz::Model;
use std::path::Path;

fn corpus_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

fn ratchet() -> toml::Table {
    std::fs::read_to_string(corpus_dir().join("ratchet.toml")).unwrap().parse().unwrap()
}

/// One pass over the corpus (reading and regenerating its tiles costs more than replaying
/// them): every file well formed, with provenance and at least its committed tiles, and the
/// fraction its path's model reproduces bitwise never below the committed floor.
#[test]
fn corpus_is_well_formed_and_models_keep_reproducing_the_recorded_gpu() {
    let dir = corpus_dir();
    let ratchet = ratchet();
    let files = corpus_files(&dir).unwrap();
    assert!(!files.is_empty(), "no corpus files");
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for f in files {
        let stem = corpus_path_id(&f);
        let path = path_by_id(&stem).unwrap_or_else(|| panic!("{}: not a known path", f.display()));
        let entry = ratchet.get(&stem).and_then(|v| v.as_table()).unwrap_or_else(|| panic!("ratchet.toml has no entry for {stem}"));
        let (cases, bad) = read_corpus(&f).unwrap();
        assert!(bad.is_empty(), "unreadable lines: {bad:?}");
        let min_tiles = entry["min_tiles"].as_integer().unwrap() as usize;
        assert!(cases.len() >= min_tiles, "{}: only {} tiles", f.display(), cases.len());
        for (c, _) in &cases {
            path.check(c).unwrap();
            let p = &c.extra["provenance"];
            assert_eq!(p["path"], path.id);
            for key in ["gpu", "cc", "driver", "date", "tool"] {
                assert!(p[key].as_str().is_some_and(|s| !s.is_empty()), "{}: provenance lacks {key}", f.display());
            }
        }
        let model = Model::load(entry["model"].as_str().unwrap()).unwrap();
        let min = entry["min_fraction"].as_float().unwrap();
        let s = replay_cases(&cases, bad, &model);
        report.push(format!("{stem}: {} reproduces {}/{} tiles ({:.1}%), floor {:.1}%", model.name, s.tiles_matching, s.tiles, 100.0 * s.tile_fraction(), 100.0 * min));
        if s.tile_fraction() < min {
            failures.push(format!("{stem} under {}: {:.2}% < {:.2}%; first differences:\n  {}", model.name, 100.0 * s.tile_fraction(), 100.0 * min, s.first_mismatches.join("\n  ")));
        }
    }
    println!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
