//! Guided hunts against a planted model: a one-knob change that edge-biased tiles essentially
//! never expose (C subnormal passing through an element whose products are all zero, flushed by
//! the plant's accumulator) is found by the guided hunt, and not by the unguided one on the
//! same budget and seed.

use mmafuzz::exec::path_by_id;
use mmafuzz::hunt::{Hunt, HuntConfig, Side};
use mmafuzz::Model;
use std::sync::atomic::AtomicBool;

fn hunt(guided: bool, dir: &std::path::Path) -> mmafuzz::hunt::HuntState {
    let path = path_by_id("mma.m16n8k16.f32.f16.f16.f32").unwrap();
    let plant = Model::load(concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/plants/f16-accflush.toml")).unwrap();
    let (a, b) = (Side::model(plant), Side::model(Model::load("sm90:mma.m16n8k16.f32.f16.f16.f32").unwrap()));
    let cfg = HuntConfig {
        path,
        seed: 1,
        batch: 256,
        max_tiles: Some(12_000),
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
        gpu_engine: false,
    };
    let mut h = Hunt::new(cfg, &a, &b, false).unwrap();
    h.run(&AtomicBool::new(false), |_| {}).unwrap();
    h.state
}

#[test]
fn the_guided_hunt_finds_a_plant_the_unguided_one_misses() {
    let dir = std::env::temp_dir().join(format!("mmafuzz-guided-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let guided = hunt(true, &dir.join("g"));
    let first = guided.first_divergence.expect("the guided hunt finds the planted accumulator flush");
    assert!(first < 12_000 && guided.tiles <= 12_000, "{first}");
    assert!(guided.findings_new >= 1, "the divergence is minimised into a finding");
    assert!(guided.population > 50, "population {}", guided.population);
    let files = std::fs::read_dir(dir.join("g/population")).unwrap().count();
    assert_eq!(files, guided.population, "every population tile is a file (libFuzzer's layout)");
    let unguided = hunt(false, &dir.join("u"));
    assert_eq!(unguided.first_divergence, None, "unguided, 12,000 tiles of seed 1 do not reach it");
    assert!(guided.features.features() > unguided.features.features(), "{} vs {}", guided.features.features(), unguided.features.features());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_gpu_artifact_minimised_by_libfuzzer_is_one_term() {
    // fuzz/seeds/gpu_.../f16-accflush-minimised: the 6-byte input libFuzzer's crash minimiser
    // left of the planted accumulator flush found on the H100 (README, Guided hunts).
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
