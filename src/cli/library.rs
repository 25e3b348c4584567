//! `mmafuzz library`: library GEMM models (cuBLAS/cuBLASLt as PyTorch calls them).

use anyhow::Context;
use mmafuzz::library::record::{replay as replay_record, GemmRecord};
use mmafuzz::library::{LibraryModel, ScheduleRules};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum LibraryCommand {
    /// List the library models: their tables (shapes learned, distinct kernels) and schedules.
    List,
    /// The kernel a library model says cuBLASLt runs for a shape, and the schedule it implies.
    Config {
        /// Library model, e.g. sm90:cublas.gemm.f32.f16.f16.f32.
        #[arg(long)]
        model: String,
        #[arg(long)]
        m: usize,
        #[arg(long)]
        n: usize,
        #[arg(long)]
        k: usize,
        /// β = 1 (torch.addmm with a matrix C) instead of β = 0 (torch.mm).
        #[arg(long)]
        beta: bool,
    },
    /// Replay recorded library GEMMs (JSONL, .gz allowed) under their models: per path and
    /// kernel family, the elements reproduced bit for bit.
    Replay {
        /// Record files (corpus/library/*.jsonl.gz or a GPU script's output).
        #[arg(required = true)]
        records: Vec<PathBuf>,
        /// Replay under this model instead of sm90:<path> of each record.
        #[arg(long)]
        model: Option<String>,
        /// The configuration table to use with --model (a .configs.tsv[.gz] file).
        #[arg(long, requires = "model")]
        table: Option<PathBuf>,
        /// Print every record, not only the summary.
        #[arg(long, short)]
        verbose: bool,
    },
}

pub fn library(cmd: LibraryCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        LibraryCommand::List => list(),
        LibraryCommand::Config { model, m, n, k, beta } => config(&model, m, n, k, beta),
        LibraryCommand::Replay { records, model, table, verbose } => replay(&records, model.as_deref(), table.as_deref(), verbose),
    }
}

fn list() -> anyhow::Result<ExitCode> {
    println!("{:<40} {:>8} {:>9}  chain inputs -> compute -> D", "library model", "shapes", "kernels");
    for name in LibraryModel::embedded_names() {
        let lm = LibraryModel::load(name, None)?;
        let r: &ScheduleRules = &lm.rules;
        println!("{name:<40} {:>8} {:>9}  {} -> {} -> {}", lm.table.len(), lm.table.distinct(), r.chain_format(), r.compute, r.output);
    }
    Ok(ExitCode::SUCCESS)
}

fn config(model: &str, m: usize, n: usize, k: usize, beta: bool) -> anyhow::Result<ExitCode> {
    let lm = LibraryModel::load(model, None)?;
    let Some(c) = lm.table.get(m, n, k, beta) else {
        println!("{m}x{n}x{k} (beta {}): not in {model}'s table of {} shapes: outside what was learned", beta as u8, lm.table.len());
        return Ok(ExitCode::from(1));
    };
    println!("{m}x{n}x{k} (beta {}): {c}", beta as u8);
    match lm.rules.plan(k, c) {
        Ok(p) => {
            let lens: Vec<usize> = p.slices.iter().map(|s| s.iter().map(|r| r.len()).sum()).collect();
            println!("  {} K slice(s) of {:?}{}, reduction {:?}", p.slices.len(), &lens[..lens.len().min(4)], if lens.len() > 4 { " ..." } else { "" }, p.reduction);
        }
        Err(e) => println!("  schedule: {e}"),
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Default)]
struct Tally {
    gemms: usize,
    exact: usize,
    elements: usize,
    matched: usize,
    skipped: usize,
}

fn replay(files: &[PathBuf], model: Option<&str>, table: Option<&std::path::Path>, verbose: bool) -> anyhow::Result<ExitCode> {
    let mut models: BTreeMap<String, LibraryModel> = BTreeMap::new();
    let mut by_family: BTreeMap<(String, String), Tally> = BTreeMap::new();
    let mut bad = 0usize;
    for file in files {
        let reader: Box<dyn BufRead> = if file.extension().is_some_and(|e| e == "gz") {
            let f = std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
            Box::new(std::io::BufReader::new(flate2::read::GzDecoder::new(f)))
        } else {
            super::io::open_input(file)?
        };
        for (no, line) in reader.lines().enumerate() {
            let line = line.with_context(|| format!("cannot read {} line {}", file.display(), no + 1))?;
            if line.trim().is_empty() {
                continue;
            }
            let rec = match GemmRecord::parse(&line) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: {} line {}: {e}", file.display(), no + 1);
                    bad += 1;
                    continue;
                }
            };
            let name = model.map(str::to_string).unwrap_or_else(|| format!("sm90:{}", rec.path));
            if !models.contains_key(&name) {
                models.insert(name.clone(), LibraryModel::load(&name, table)?);
            }
            let r = replay_record(&rec, &models[&name]).with_context(|| format!("{} line {}", file.display(), no + 1))?;
            let family = match (&r.config, &r.skipped) {
                (Some(c), _) => format!("algo {}{}", c.algo, if c.split_k == 1 { String::new() } else { format!(" split-K ({:?})", c.reduction) }),
                (None, _) => "no config".into(),
            };
            let t = by_family.entry((rec.path.clone(), family)).or_default();
            t.gemms += 1;
            t.elements += r.elements;
            t.matched += r.matched;
            t.exact += (r.skipped.is_none() && r.matched == r.elements) as usize;
            t.skipped += r.skipped.is_some() as usize;
            if verbose {
                println!(
                    "{} {}x{}x{} beta {} seed {}: {}/{} {}{}",
                    rec.path,
                    rec.m,
                    rec.n,
                    rec.k,
                    rec.beta,
                    rec.seed,
                    r.matched,
                    r.elements,
                    r.config.as_ref().map(|c| c.to_string()).unwrap_or_default(),
                    r.skipped.as_ref().map(|s| format!(" [skipped: {s}]")).or_else(|| r.first_miss.as_ref().map(|(i, j, w, e)| format!(" [first miss ({i},{j}): GPU {w}, model {e}]"))).unwrap_or_default()
                );
                if std::env::var_os("MMAFUZZ_SHOW_MISSES").is_some() && !r.misses.is_empty() {
                    println!("  misses: {:?}", &r.misses[..r.misses.len().min(64)]);
                }
            }
        }
    }
    println!("{:<36} {:<34} {:>6} {:>7} {:>8} {:>12}", "path", "kernel family", "GEMMs", "exact", "skipped", "elements");
    let mut all_exact = true;
    for ((path, family), t) in &by_family {
        all_exact &= t.exact == t.gemms;
        println!(
            "{path:<36} {family:<34} {:>6} {:>7} {:>8} {:>11.2}%",
            t.gemms,
            t.exact,
            t.skipped,
            100.0 * t.matched as f64 / t.elements.max(1) as f64
        );
    }
    if bad > 0 {
        eprintln!("{bad} unreadable record lines");
    }
    Ok(if all_exact && bad == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
