//! `mmafuzz library`: library GEMM models (cuBLAS/cuBLASLt as PyTorch calls them).

use anyhow::Context;
use mmafuzz::library::record::{replay_text, GemmRecord, Ratchet, Summary};
use mmafuzz::library::{LibraryModel, ScheduleRules};
use std::collections::BTreeMap;
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
    /// Put GPU-recorded GEMMs (scripts/torch-lib.py record) into the corpus in its compact
    /// form: at most --max-elements elements per GEMM, D as steps from a reference sum of the
    /// regenerated operands; GEMMs already there are skipped. Written atomically.
    Import {
        #[arg(required = true)]
        records: Vec<PathBuf>,
        #[arg(long, default_value = "corpus/library")]
        corpus: PathBuf,
        #[arg(long, default_value_t = 256)]
        max_elements: usize,
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
        /// Write the ratchet these results meet (TOML; what tests/library_replay.rs holds the
        /// corpus to), replacing the file atomically.
        #[arg(long)]
        write_ratchet: Option<PathBuf>,
    },
}

pub fn library(cmd: LibraryCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        LibraryCommand::List => list(),
        LibraryCommand::Config { model, m, n, k, beta } => config(&model, m, n, k, beta),
        LibraryCommand::Import { records, corpus, max_elements } => import(&records, &corpus, max_elements),
        LibraryCommand::Replay { records, model, table, verbose, write_ratchet } => {
            replay(&records, model.as_deref(), table.as_deref(), verbose, write_ratchet.as_deref())
        }
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

fn replay(files: &[PathBuf], model: Option<&str>, table: Option<&std::path::Path>, verbose: bool, ratchet: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let mut models: BTreeMap<String, LibraryModel> = BTreeMap::new();
    let mut summary = Summary::new();
    for file in files {
        let text = read_records(file)?;
        replay_text(&text, &mut models, model.map(|m| (m, table)), &mut summary, |rec, r| {
            if !verbose {
                return;
            }
            let what = match (&r.skipped, &r.first_miss) {
                (Some(s), _) => format!(" [skipped: {s}]"),
                (None, Some((i, j, w, e))) => format!(" [first miss ({i},{j}): GPU {w}, model {e}]"),
                (None, None) => String::new(),
            };
            let config = r.config.as_ref().map(|c| c.to_string()).unwrap_or_default();
            let kind = if rec.bias == 1 { "bias" } else if rec.beta == 1 { "beta 1" } else { "beta 0" };
            println!("{} {}x{}x{} {kind} seed {}: {}/{} {config}{what}", rec.path, rec.m, rec.n, rec.k, rec.seed, r.matched, r.elements);
            if std::env::var_os("MMAFUZZ_SHOW_MISSES").is_some() && !r.misses.is_empty() {
                println!("  misses: {:?}", &r.misses[..r.misses.len().min(64)]);
            }
        })
        .map_err(|(line, e)| anyhow::anyhow!("{} line {line}: {e}", file.display()))?;
    }
    print_summary(&summary);
    if let Some(file) = ratchet {
        let text = format!(
            "# What `cargo test` (tests/library_replay.rs) holds corpus/library to, per path and kernel family:\n# at least min_gemms replayed, at least min_fraction of their elements reproduced (1.0: every GEMM\n# exact). Written by `mmafuzz library replay corpus/library/*.jsonl.gz --write-ratchet FILE`.\n\n{}",
            toml::to_string(&Ratchet::from_summary(&summary))?
        );
        mmafuzz::store::write_atomically(file, text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
        println!("ratchet written to {}", file.display());
    }
    let all_exact = summary.values().all(|t| t.exact == t.gemms);
    Ok(if all_exact { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The per-family table `replay` prints.
pub fn print_summary(summary: &Summary) {
    println!("{:<46} {:<30} {:>6} {:>6} {:>8} {:>10}", "path", "kernel family", "GEMMs", "exact", "skipped", "elements");
    for ((path, family), t) in summary {
        let fraction = if t.elements == 0 { "-".to_string() } else { format!("{:.2}%", 100.0 * t.fraction()) };
        println!("{path:<46} {family:<30} {:>6} {:>6} {:>8} {fraction:>10}", t.gemms, t.exact, t.skipped);
    }
}

/// A record file's text (gunzipped for .gz; - for stdin).
fn read_records(file: &std::path::Path) -> anyhow::Result<String> {
    if file == std::path::Path::new("-") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        return Ok(s);
    }
    let bytes = mmafuzz::store::read_text(file).with_context(|| format!("cannot read {}", file.display()))?;
    String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", file.display()))
}

/// Compact GPU-recorded GEMMs into the corpus: CORPUS/<path>.jsonl.gz, one line per GEMM
/// (regenerated inputs, D as steps), records already there skipped.
fn import(files: &[PathBuf], corpus: &std::path::Path, max_elements: usize) -> anyhow::Result<ExitCode> {
    let mut by_path: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut models: BTreeMap<String, LibraryModel> = BTreeMap::new();
    for file in files {
        let text = read_records(file)?;
        for (no, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let rec = GemmRecord::parse(line).with_context(|| format!("{} line {}", file.display(), no + 1))?;
            let name = format!("sm90:{}", rec.path);
            if !models.contains_key(&name) {
                models.insert(name.clone(), LibraryModel::load(&name, None)?);
            }
            let compact = rec.compact(&models[&name], max_elements).with_context(|| format!("{} line {}", file.display(), no + 1))?;
            by_path.entry(rec.path.clone()).or_default().push(serde_json::to_string(&compact)?);
        }
    }
    for (path, lines) in by_path {
        let file = corpus.join(format!("{path}.jsonl.gz"));
        let old = match mmafuzz::store::read_text(&file) {
            Ok(b) => String::from_utf8(b).with_context(|| format!("{} is not UTF-8", file.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
        };
        let key = |l: &str| -> Option<String> {
            let r = GemmRecord::parse(l).ok()?;
            Some(format!("{} {} {} {} {} {} {} {:?}", r.path, r.seed, r.m, r.n, r.k, r.beta, r.bias, r.layout))
        };
        let mut seen: std::collections::BTreeSet<String> = old.lines().filter_map(key).collect();
        let mut all: Vec<String> = old.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect();
        let before = all.len();
        for l in lines {
            if let Some(k) = key(&l) {
                if seen.insert(k) {
                    all.push(l);
                }
            }
        }
        mmafuzz::store::write_lines_atomically(&file, &all).with_context(|| format!("cannot write {}", file.display()))?;
        println!("{}: {} GEMMs ({} new)", file.display(), all.len(), all.len() - before);
    }
    Ok(ExitCode::SUCCESS)
}
