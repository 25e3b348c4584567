//! Guided hunts against planted models: one-knob changes that edge-biased tiles essentially
//! never expose are found by the guided hunt, and not by the unguided one on the same budget and
//! seed — a subnormal C passing through an element whose products are all zero (flushed by the
//! plant's accumulator), and the f16-output window floor the H100 taught us (the plant moves it).

use mmafuzz::exec::path_by_id;
use mmafuzz::hunt::{Hunt, HuntConfig, Side};
use mmafuzz::Model;
use std::sync::atomic::AtomicBool;

fn hunt(path: &str, plant: &str, guided: bool, max_tiles: u64, dir: &std::path::Path) -> mmafuzz::hunt::HuntState {
    let path = path_by_id(path).unwrap();
    let plant = Model::load(&format!("{}/fuzz/plants/{plant}.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let (a, b) = (Side::model(plant), Side::model(Model::load(&mmafuzz::model::default_name(&path.id)).unwrap()));
    let cfg = HuntConfig {
        path,
        seed: 1,
        batch: 256,
        max_tiles: Some(max_tiles),
        max_time: None,
        per_class: 1,
        max_rounds: 50,
        exact_every: u64::MAX,
        // Every tile on both sides, so that the two feature maps compare.
        features_every: 1,
        findings: dir.join("findings"),
        stop_at_first: true,
        guided: guided.then(|| dir.join("population")),
        shard: Default::default(),
        engine: Default::default(),
    };
    let mut h = Hunt::new(cfg, &a, &b, false).unwrap();
    h.run(&AtomicBool::new(false), |_| {}).unwrap();
    h.state
}

#[test]
fn the_guided_hunt_finds_a_plant_the_unguided_one_misses() {
    let dir = std::env::temp_dir().join(format!("mmafuzz-guided-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = "mma.m16n8k16.f32.f16.f16.f32";
    let guided = hunt(path, "f16-accflush", true, 12_000, &dir.join("g"));
    let first = guided.first_divergence.expect("the guided hunt finds the planted accumulator flush");
    assert!(first < 12_000 && guided.tiles <= 12_000, "{first}");
    assert!(guided.findings_new >= 1, "the divergence is minimised into a finding");
    assert!(guided.population > 20, "population {}", guided.population);
    let files = std::fs::read_dir(dir.join("g/population")).unwrap().count();
    assert_eq!(files, guided.population, "every population tile is a file (libFuzzer's layout)");
    let unguided = hunt(path, "f16-accflush", false, 12_000, &dir.join("u"));
    assert_eq!(unguided.first_divergence, None, "unguided, 12,000 tiles of seed 1 do not reach it");
    // On the guided hunt's budget, the unguided one reaches fewer features.
    let same = hunt(path, "f16-accflush", false, guided.tiles, &dir.join("s"));
    assert!(guided.features.features() > same.features.features(), "{} vs {}", guided.features.features(), same.features.features());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_guided_hunt_reaches_the_f16_output_window_floor() {
    // The H100 rounds -(2^-25 + 2^-47) to +0 in f16 (findings/mma.m16n8k16.f16.f16.f16.f16/
    // 3180bdd102862137.md): the window floor 7 below f32's emin. The plant moves it to 6.
    let dir = std::env::temp_dir().join(format!("mmafuzz-guided-floor-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = "mma.m16n8k16.f16.f16.f16.f16";
    let guided = hunt(path, "f16h-floor6", true, 12_000, &dir.join("g"));
    let first = guided.first_divergence.expect("the guided hunt finds the moved window floor");
    assert!(first < 12_000, "{first}");
    let unguided = hunt(path, "f16h-floor6", false, 12_000, &dir.join("u"));
    assert_eq!(unguided.first_divergence, None, "unguided, 12,000 tiles of seed 1 do not reach it");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_gpu_artifact_minimised_by_libfuzzer_is_one_term() {
    // fuzz/seeds/gpu_.../f16-accflush-minimised: the 6-byte input libFuzzer's crash minimiser
    // left of the planted accumulator flush found on the H100 (docs/src/guided.md).
    use mmafuzz::fuzzing::{nonzero_terms, Differential};
    let path = path_by_id("mma.m16n8k16.f32.f16.f16.f32").unwrap();
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/gpu_mma_m16n8k16_f32_f16_f16_f32/f16-accflush-minimised")).unwrap();
    let plant = Model::load(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/plants/f16-accflush.toml")).unwrap();
    let against_plant = Differential { path, a: Side::Exact(mmafuzz::Rounding::Rne), b: Side::model(plant) };
    let o = against_plant.run(&bytes).unwrap();
    assert_eq!(nonzero_terms(&o.tiles), 1);
    assert_eq!(o.divergent.len(), 1, "the plant flushes the subnormal C");
    let sm90 = Differential { path, a: Side::Exact(mmafuzz::Rounding::Rne), b: Side::model(Model::load("sm90:mma.m16n8k16.f32.f16.f16.f32").unwrap()) };
    assert!(sm90.run(&bytes).unwrap().divergent.is_empty(), "the sm90 model passes C through, as the H100 did");
}
