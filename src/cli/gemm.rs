//! `mmafuzz gemm`: whole-matrix emulation with a chosen schedule.

use indicatif::{ProgressBar, ProgressStyle};
use mmafuzz::gemm::{elements, fttn_example, CEntry, Schedule, FTTN_SCHEDULE};
use mmafuzz::Model;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct GemmArgs {
    /// Model name or file.
    #[arg(long)]
    model: String,
    /// The problem: `fttn` is FTTN §V's D = C - A·B with m = n = k = 8192.
    #[arg(long, default_value = "fttn")]
    example: String,
    /// Where C enters: the epilogue (D = α·acc + β·C) or the accumulator's start.
    #[arg(long, value_enum, default_value = "epilogue")]
    c_entry: CEntry,
    /// Split K into this many slices summed with RNE.
    #[arg(long, default_value_t = 1)]
    split_k: usize,
    /// How many elements to emulate (corners, diagonal and random ones); each is a full K chain.
    #[arg(long, default_value_t = 64)]
    elements: usize,
    /// Emulate every element of D (67 million K=8192 chains for fttn: hours on few cores).
    #[arg(long)]
    all: bool,
}

pub fn gemm(args: GemmArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.example == "fttn", "unknown example '{}' (available: fttn)", args.example);
    let problem = fttn_example();
    let model = Model::load(&args.model)?;
    let schedule = Schedule { c_entry: args.c_entry, split_k: args.split_k.max(1), ..FTTN_SCHEDULE };
    let which: Vec<(usize, usize)> = if args.all {
        (0..problem.m).flat_map(|i| (0..problem.n).map(move |j| (i, j))).collect()
    } else {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let (m, n) = (problem.m, problem.n);
        let mut v = vec![(0, 0), (m - 1, n - 1), (0, n - 1), (m - 1, 0)];
        while v.len() < args.elements.max(1) {
            v.push((rng.gen_range(0..m), rng.gen_range(0..n)));
        }
        v.truncate(args.elements.max(1));
        v
    };
    let bar = ProgressBar::new(which.len() as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} elements {per_sec} eta {eta}").expect("valid template"));
    let start = Instant::now();
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for chunk in which.chunks(4096) {
        for d in elements(&problem, &model, &schedule, chunk)? {
            *counts.entry(d).or_default() += 1;
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}: {}x{}x{}, model {}, C in {:?}, split-K {}: {} of {} elements emulated in {:.2} s ({:.3e} terms/s)",
        problem.name,
        problem.m,
        problem.n,
        problem.k,
        model.name,
        schedule.c_entry,
        schedule.split_k,
        which.len(),
        problem.m * problem.n,
        secs,
        (which.len() * problem.k) as f64 / secs
    );
    for (bits, count) in counts {
        let v = problem.c_fmt.decode(bits).to_f64();
        println!("  d = {v} ({:08x}) in {count} elements", bits);
    }
    Ok(ExitCode::SUCCESS)
}
