//! `cargo bench`: emulator against MPFR reference throughput, per instruction shape and model,
//! one core, printed as a table (`mmafuzz bench` prints the same table).

use mmafuzz::bench::{measure, table, SHAPES};
use mmafuzz::Model;
use std::time::Duration;

fn main() {
    // `cargo bench -- <seconds>` sets the time per measurement side.
    let seconds: f64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1.0);
    let mut rows = Vec::new();
    for name in ["h100", "a100", "v100", "exact-rne", "fma-chain-rne"] {
        let model = Model::load(name).expect("embedded model");
        for shape in SHAPES {
            rows.push(measure(shape, &model, Duration::from_secs_f64(seconds)));
        }
    }
    println!("single thread, {seconds} s per side; terms = one a·b joining a sum; MPFR = exact value + its rounding in 5 directions");
    print!("{}", table(&rows));
}
