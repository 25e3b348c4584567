//! `mmafuzz bench`: emulator vs MPFR throughput table.

use indicatif::{ProgressBar, ProgressStyle};
use mmafuzz::bench::{measure, table, SHAPES};
use mmafuzz::Model;
use std::process::ExitCode;
use std::time::Duration;

pub fn bench(models: &str, seconds: f64) -> anyhow::Result<ExitCode> {
    let models: Vec<Model> = models.split(',').map(|m| Model::load(m.trim())).collect::<Result<_, _>>()?;
    let budget = Duration::from_secs_f64(seconds.max(0.01));
    let bar = ProgressBar::new((models.len() * SHAPES.len()) as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"));
    let mut rows = Vec::new();
    for m in &models {
        for s in SHAPES {
            bar.set_message(format!("{} {}", m.name, s.name));
            rows.push(measure(s, m, budget));
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    println!("single thread, {} s per side; terms = one a·b joining a sum", seconds);
    print!("{}", table(&rows));
    Ok(ExitCode::SUCCESS)
}
