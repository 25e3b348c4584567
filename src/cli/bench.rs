//! `mmafuzz bench`: emulator vs MPFR throughput table.

use indicatif::{ProgressBar, ProgressStyle};
use mmafuzz::bench::{measure, measure_path, table, SHAPES};
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

/// Every chosen instruction path under its own sm90 model, on the path's generated tiles.
pub fn bench_paths(filter: &str, seconds: f64) -> anyhow::Result<ExitCode> {
    let paths = chosen_paths(filter)?;
    let budget = Duration::from_secs_f64(seconds.max(0.01));
    let bar = ProgressBar::new(paths.len() as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("valid template"));
    let mut rows = Vec::new();
    for (path, model) in &paths {
        bar.set_message(path.id);
        rows.push(measure_path(path, model, budget));
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!("single thread, {seconds} s per side; each path under sm90:PATH on its own generated tiles; terms = one a·b joining a sum");
    print!("{}", table(&rows));
    let slowest = rows.iter().min_by(|x, y| x.ratio().total_cmp(&y.ratio())).expect("at least one path");
    println!("{} paths; lowest ratio {:.1}x ({})", rows.len(), slowest.ratio(), slowest.shape);
    Ok(ExitCode::SUCCESS)
}

/// The instruction paths `filter` names (`sm90`: all with an embedded sm90 model; otherwise
/// comma-separated ids or parts of ids), each with its model.
fn chosen_paths(filter: &str) -> anyhow::Result<Vec<(&'static mmafuzz::exec::PathSpec, Model)>> {
    let with_model = mmafuzz::exec::PATHS.iter().filter(|p| p.module != mmafuzz::exec::Module::Cublas).filter_map(|p| Model::load(&mmafuzz::model::default_name(&p.id)).ok().map(|m| (p, m)));
    let chosen: Vec<_> = if filter.trim() == "sm90" {
        with_model.collect()
    } else {
        let parts: Vec<&str> = filter.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
        with_model.filter(|(p, _)| parts.iter().any(|part| p.id.contains(part))).collect()
    };
    anyhow::ensure!(!chosen.is_empty(), "no instruction path with an sm90 model matches '{filter}' (see `mmafuzz models`)");
    Ok(chosen)
}
