//! `cargo bench --bench features`: what the arithmetic features cost next to the model they
//! describe, per mma.sync path, on one core: the same generator tiles run through the path's
//! sm90 model, then through the feature probe (the fuzz targets and guided hunts do both for
//! every tile). Prints a table; `cargo bench --bench features -- <seconds>` sets the time per
//! measurement.

use mmafuzz::exec::{Module, PATHS};
use mmafuzz::features::{Counter, FeatureProbe};
use mmafuzz::model::Emulator;
use mmafuzz::Model;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Tiles per second of `f` over `tiles`, repeated until `time` has passed.
fn rate(tiles: usize, time: Duration, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut rounds = 0u64;
    while rounds == 0 || start.elapsed() < time {
        f();
        rounds += 1;
    }
    (rounds as usize * tiles) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let seconds: f64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1.0);
    let time = Duration::from_secs_f64(seconds);
    println!("one core, {seconds} s per measurement, 1,024 generator tiles (seed 7) per path\n");
    println!("| path | model: tiles/s | features: tiles/s | model + features: tiles/s | features' share |");
    println!("|---|---|---|---|---|");
    for path in PATHS.iter().filter(|p| p.module == Module::MmaSync) {
        let model = Model::load(&mmafuzz::model::default_name(&path.id)).expect("embedded sm90 model");
        let emulator = Emulator::new(model.clone());
        let tiles: Vec<_> = (0..1024).map(|i| mmafuzz::gen::case_at(path, 7, i)).collect();
        let outputs: Vec<Vec<u64>> = tiles.iter().map(|t| emulator.run(t).expect("model runs")).collect();
        let probe = FeatureProbe::new(model.arithmetic(path.a_fmt));
        let model_rate = rate(tiles.len(), time, || {
            for t in &tiles {
                black_box(emulator.run(t).expect("model runs"));
            }
        });
        let mut counts = Counter::default();
        let feature_rate = rate(tiles.len(), time, || {
            for (t, d) in tiles.iter().zip(&outputs) {
                probe.add_tile(t, d, &mut counts);
            }
        });
        black_box(&counts);
        let both = 1.0 / (1.0 / model_rate + 1.0 / feature_rate);
        println!("| {} | {:.0} | {:.0} | {:.0} | {:.0}% |", path.id, model_rate, feature_rate, both, 100.0 * both / feature_rate);
    }
}
