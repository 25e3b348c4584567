//! Command definitions and dispatch.

mod bench;
mod corpus;
mod discover;
mod emulate;
mod engine;
mod findings;
mod fuzz;
mod gemm;
mod gemm_line;
pub(crate) mod gpu;
mod hunt;
mod infer;
mod io;
mod library;
mod library_compare;
mod library_infer;
mod library_exec;
mod library_fit;
mod library_trace;
mod models;
mod probes;
mod report;
mod serve;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Find, explain and pin down how GPU matrix units really do floating-point arithmetic.
///
/// Cases are `D = A·B + C` tiles in the JSONL interchange format, or batches of one shape as
/// NumPy `.npz` arrays (see `mmafuzz emulate --help`).
/// Models are TOML files of numeric knobs; the published hypotheses are built in
/// (`mmafuzz models`).
#[derive(Parser, Debug)]
#[command(name = "mmafuzz", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Emulate cases bit for bit under a numeric model.
    ///
    /// Reads one JSON case per line: {"a_fmt":"f16","c_fmt":"f32","m":16,"n":8,"k":16,
    /// "a":[...],"b":[...],"c":[...]} with A m×k, B k×n, C m×n, row-major, each element a raw bit
    /// pattern in lowercase hex without 0x (tf32 as its 32-bit container). Writes each line back
    /// with "d" added (C's layout and format). Unknown fields are kept. A malformed line is
    /// reported with its line number and field, the others are still processed, and the exit
    /// status is 1 at the end.
    ///
    /// A file whose name ends in .npz is the binary form (in, out, or both): N tiles of one
    /// shape and formats as arrays a (N×m×k), b (N×k×n), c (N×m×n), optional meta
    /// (N×m×(k/2) uint8, 2:4 sparse: a is then N×m×(k/2)) and header (1-D uint8 holding JSON
    /// such as {"a_fmt":"f16","b_fmt":"f16","c_fmt":"f32"}, plus "op":"xor" where the cases have
    /// it; in Python np.frombuffer(json.dumps(h).encode(), np.uint8)). Elements are raw bit
    /// patterns as unsigned integers of the format's container width (uint8 for FP8 and the
    /// narrow integers, uint16 for f16/bf16, uint32 for f32/tf32/s32, uint64 for f64) or typed
    /// float16/float32/float64 for f16, f32 (tf32), f64. Without header, typed float dtypes
    /// give the formats. The npz out holds the input members plus d (N×m×n, C's dtype
    /// convention); a bad tile of an npz in is an error for the file (exit status 2). Other
    /// fields of JSONL cases (recipes, seeds) have no place in an npz.
    Emulate {
        /// Model name (`mmafuzz models`) or path to a model TOML file.
        #[arg(long)]
        model: String,
        /// Input cases: JSONL, - for stdin, or a .npz file.
        #[arg(long = "in", default_value = "-")]
        input: PathBuf,
        /// Output results: JSONL, - for stdout, or a .npz file. Files are replaced atomically
        /// when done.
        #[arg(long = "out", default_value = "-")]
        output: PathBuf,
        /// With an .npz out: write d and the header only, not a copy of the input's a, b, c
        /// (np.load(OUT)["d"]; three quarters less to write for m16n8k16 f16 tiles).
        #[arg(long)]
        d_only: bool,
    },
    /// Compute the exact result of each case with MPFR and its correct rounding.
    ///
    /// Same interchange format as `emulate`; adds "d" (the correct rounding in the chosen
    /// direction) and "exact" (each element's exact value as text). Written as .npz, the
    /// results hold d only: the exact values' text has no place in an array.
    Reference {
        /// Input cases: JSONL, - for stdin, or a .npz file (see `mmafuzz emulate --help`).
        #[arg(long = "in", default_value = "-")]
        input: PathBuf,
        /// Output results: JSONL, - for stdout, or a .npz file (d without the exact values).
        #[arg(long = "out", default_value = "-")]
        output: PathBuf,
        /// With an .npz out: d and the header only (see `mmafuzz emulate --help`).
        #[arg(long)]
        d_only: bool,
        /// Rounding direction: rne, rna, rz, ru, rd, ra.
        #[arg(long, default_value = "rne")]
        rounding: mmafuzz::Rounding,
    },
    /// Run the seed papers' hand-made experiments against models and show each outcome next to
    /// the published one.
    Probes {
        /// Only this model (name or file); default: every model a probe has a published outcome for.
        #[arg(long)]
        model: Option<String>,
        /// Only probes whose id contains this text.
        #[arg(long)]
        filter: Option<String>,
        /// Print every probe, not only the summary per model and the mismatches.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Hunt for divergences: generate edge-biased tiles, run them on side A (the GPU, the exact
    /// value, or a model) and on the model under test, compare bit for bit, minimise each new
    /// kind of divergence to the smallest case that still shows it, and write it to
    /// FINDINGS/<path>/<id>.md.
    ///
    /// Exit status: 0 when nothing diverged, 1 when something did, 2 on errors. Ctrl-C stops
    /// after the current batch; files are written atomically, so even a killed hunt loses
    /// nothing it reported. `--resume` continues from the saved state.
    Hunt(hunt::HuntArgs),
    /// Infer a path's arithmetic: every model of the emulator's knob space that reproduces each
    /// element the GPU computed (corpus tiles and GPU findings), the knobs they agree on, and
    /// for each ruled-out knob value the simplest element that rules it out.
    ///
    /// Exit status 0 when some model survives, 1 when none does (the nearest are shown).
    Infer(infer::InferArgs),
    /// Bring up a path's model on a GPU: active learning from the whole knob space. Each round
    /// generates edge-biased tiles, runs on the GPU those that split the surviving models, and
    /// drops the models they refute, until no generated tile splits the survivors or the budget
    /// ends. Writes the model (--write) and the deciding tiles (--corpus).
    ///
    /// Exit status 0 when models survive, 1 when the data contradicts every one.
    Discover(discover::DiscoverArgs),
    /// Be an external oracle: answer batches of tiles from stdin under a model (or the exact
    /// reference) on stdout, in the protocol of `hunt --against external:CMD` (JSONL or npz),
    /// until stdin ends. E.g. `--against "external:ssh host mmafuzz serve --model sm90:PATH"`.
    Serve(serve::ServeArgs),
    /// Work on the GPU corpus: stats, add (promote findings, or a fuzz artifact), compact,
    /// dedup, merge, minimise.
    #[command(subcommand)]
    Corpus(corpus::CorpusCommand),
    /// Join findings directories (the shards of a hunt, hunts on several machines).
    #[command(subcommand)]
    Findings(findings::FindingsCommand),
    /// Inputs of the GPU fuzz targets (fuzz/, cargo-fuzz): decode an artifact readably, encode
    /// cases as seeds.
    ///
    /// The targets (`cargo +nightly fuzz run gpu_<path with _ for .>`) run a few tiles per input
    /// on the GPU and the path's model, with the model's arithmetic situations as libFuzzer's
    /// coverage; MMAFUZZ_AGAINST (gpu, exact, or a model) and MMAFUZZ_MODEL choose other sides.
    #[command(subcommand)]
    Fuzz(fuzz::FuzzCommand),
    /// Tabulate, per path, the current model's knobs and corpus reproduction next to the seed
    /// papers' published claims (FTTN Table III), marking agreements and contradictions;
    /// writes OUT/report.md and OUT/report.svg, and the hunt totals of the results log as
    /// OUT/hunts.md.
    Report {
        #[arg(long, default_value = "corpus")]
        corpus: PathBuf,
        #[arg(long = "out", default_value = "report")]
        output: PathBuf,
        /// The hunts' results log: its totals go to OUT/hunts.md.
        #[arg(long, default_value = "findings/hunts.jsonl")]
        hunts: PathBuf,
        /// Write OUT/hunts.md only (seconds; the full report replays every recorded GEMM).
        #[arg(long)]
        hunts_only: bool,
    },
    /// Emulate a whole GEMM bit for bit: `.npy` operands as torch.mm, addmm or F.linear run
    /// them on an H100 or H200 (`--model h200:cublas.gemm... --a A.npy --b B.npy --out D.npy`,
    /// the kernel from the model's table, its predictor or --config), or FTTN's D = C - A·B
    /// example under an instruction model with a schedule you choose.
    #[command(after_help = "Examples:\n  mmafuzz gemm --model h200:cublas.gemm.f32.f16.f16.f32 --op mm --a a.npy --b b.npy --out d.npy\n  mmafuzz gemm --model h200:cublas.gemm.bf16.bf16.bf16.bf16 --op linear --a x.npy --b weight.npy --bias bias.npy --out y.npy --predicted\n  mmafuzz gemm --model h100 --example fttn --split-k 4")]
    Gemm(gemm::GemmArgs),
    /// Library GEMMs as PyTorch runs them (cuBLAS/cuBLASLt): learned kernel tables, schedules,
    /// replay of recorded GEMMs.
    #[command(subcommand)]
    Library(library::LibraryCommand),
    /// Measure emulator throughput against the MPFR reference, per instruction shape.
    ///
    /// One core, terms (one a·b joining a sum) per second, the emulator and MPFR (exact value
    /// and its rounding in every direction) on the same tiles in the same run. By default the
    /// published hypotheses on finite edge-biased tiles of each shape; with --paths, each
    /// instruction path under its own measured model (`sm90:PATH`) on the hunt's own generated
    /// tiles of that path (specials, subnormals, cancellation, the bottom of the range).
    Bench {
        /// Comma-separated models to measure (on every shape).
        #[arg(long, default_value = "h100,exact-rne")]
        models: String,
        /// Instruction paths to measure under their sm90 models instead: `sm90` for every path
        /// that has one, or comma-separated path ids (or parts of them: `wgmma.m64n8k16`).
        #[arg(long)]
        paths: Option<String>,
        /// Seconds spent on each side of each measurement.
        #[arg(long, default_value_t = 0.5)]
        seconds: f64,
    },
    /// List GPUs (name, compute capability, driver) and the instruction paths each runs.
    Devices,
    /// List the instruction paths: id, tile shape, formats, lowest compute capability, and how
    /// each runs (an mma.sync or wgmma kernel, a library call, or simulated: another GPU's
    /// instruction answered by an oracle such as MMA-Sim and by models/<arch>/ models), with the
    /// per-path models each has.
    Paths {
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// On the GPU: check every path's fragment layout with integer tiles of known exact result,
    /// and that two runs of a batch agree bit for bit; on several GPUs of one name, also that
    /// each returns the first one's D on the same generated tiles.
    GpuCheck {
        /// Only this path.
        #[arg(long)]
        path: Option<String>,
        /// The GPUs to check: an ordinal, comma-separated ordinals, or `all`.
        #[arg(long, visible_alias = "devices", default_value = "0")]
        device: String,
        /// Tiles per path.
        #[arg(long, default_value_t = 2048)]
        tiles: usize,
    },
    /// On the GPU: the hunt engine (`hunt --engine gpu`) against its Rust twins: its generated
    /// tiles against `engine::gen`, its model's D against the emulator's, on its own tiles and
    /// on the ordinary generators' (`--record` keeps digests for CI).
    EngineCheck(engine::EngineCheckArgs),
    /// GPU-side throughput of the m16n8k16 f16 path (upload + launch + download) per batch size.
    GpuBench {
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Comma-separated batch sizes in tiles.
        #[arg(long, default_value = "65536,262144,1048576")]
        batches: String,
    },
    /// Run cases on the GPU through one instruction path (e.g. mma.m16n8k16.f32.f16.f16.f32).
    ///
    /// Cases and results are JSONL or, for file names ending in .npz, arrays (see `mmafuzz
    /// emulate --help`): the npz out is the input members plus d.
    ///
    /// A library path (cublas.gemm.*, cublaslt.matmul.*) runs whole GEMMs of any shape, one JSONL
    /// line each, as PyTorch calls cuBLAS/cuBLASLt: without "c" β = 0 (torch.mm), with "c" β = 1
    /// (torch.addmm), "bias" (n elements in D's format) instead of "c" F.linear's bias epilogue;
    /// the result adds "d" and the "config" cuBLASLt logged for the call.
    Run {
        #[arg(long)]
        path: String,
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Input cases: JSONL, - for stdin, or a .npz file.
        #[arg(long = "in", default_value = "-")]
        input: PathBuf,
        /// Output results: JSONL, - for stdout, or a .npz file.
        #[arg(long = "out", default_value = "-")]
        output: PathBuf,
    },
    /// Run cases on the GPU and append them with outputs and provenance (GPU, compute
    /// capability, driver, path, date, tool version) to CORPUS/<path>.jsonl.xz.
    ///
    /// The cases come from --in (JSONL or .npz), or with --count from the path's own generator (tile i
    /// of --seed, as `gen` makes them, without the JSON in between: wide wgmma tiles are large).
    Record {
        #[arg(long)]
        path: String,
        #[arg(long, default_value_t = 0)]
        device: usize,
        #[arg(long = "in", default_value = "-", conflicts_with = "count")]
        input: PathBuf,
        /// Record this many generated tiles instead of reading --in.
        #[arg(long)]
        count: Option<u64>,
        /// The generator seed for --count.
        #[arg(long, default_value_t = 1, requires = "count")]
        seed: u64,
        #[arg(long, default_value = "corpus")]
        corpus: PathBuf,
        /// Record another simulator's answers instead of the GPU's: `external:CMD` or
        /// `external-npz:CMD` (see `mmafuzz hunt --help`), with --label saying what it is. Keep
        /// them apart from the GPU corpus (e.g. --corpus corpus/mmasim/hopper).
        #[arg(long, requires = "label")]
        oracle: Option<String>,
        /// What the oracle is, stored as each tile's provenance ("MMA-Sim 2.1.1 Hopper model, not hardware").
        #[arg(long, requires = "oracle")]
        label: Option<String>,
    },
    /// Generate edge-biased cases of a path's shape and formats (recipe and seed recorded).
    ///
    /// To a file name ending in .npz: the tiles as arrays of raw bit patterns (a, b, c, meta
    /// on sparse paths, and a header with the formats, the path and the seed; see `mmafuzz
    /// emulate --help`), for `emulate`, `run` and other simulators. Tile i is case i of the
    /// seed, as in JSONL; per-tile recipes are not kept.
    Gen {
        #[arg(long)]
        path: String,
        #[arg(long, default_value_t = 1000)]
        count: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// JSONL, - for stdout, or a .npz file.
        #[arg(long = "out", default_value = "-")]
        output: PathBuf,
    },
    /// Replay the recorded GPU corpus under models: the fraction of tiles each reproduces bitwise.
    Replay {
        #[arg(long, default_value = "corpus")]
        corpus: PathBuf,
        /// Comma-separated models.
        #[arg(long, default_value = "h100,a100,v100,v100-hickmann,exact-rne,fma-chain-rne")]
        models: String,
        /// Also replay against another simulator: `external:CMD` (JSONL over its stdin and
        /// stdout) or `external-npz:CMD` (length-prefixed npz); repeatable. See `mmafuzz hunt
        /// --help` for the protocol; scripts/mmasim-oracle.py is one for MMA-Sim.
        #[arg(long)]
        oracle: Vec<String>,
        /// Only corpus files whose path contains this.
        #[arg(long)]
        filter: Option<String>,
        /// In the oracles' columns, a NaN reproduces any NaN (for simulators that do not model
        /// NaN payloads, as MMA-Sim's FP64 does not).
        #[arg(long)]
        any_nan: bool,
    },
    /// List the built-in models, or show one model's resolved knobs.
    Models {
        /// Show this model (name or file) as the emulator sees it, per input format.
        #[arg(long)]
        show: Option<String>,
    },
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Emulate { model, input, output, d_only } => emulate::emulate(&model, &input, &output, d_only),
        Command::Reference { input, output, d_only, rounding } => emulate::reference(&input, &output, d_only, rounding),
        Command::Probes { model, filter, verbose } => probes::probes(model.as_deref(), filter.as_deref(), verbose),
        Command::Gemm(args) => gemm::gemm(args),
        Command::Library(cmd) => library::library(cmd),
        Command::Hunt(args) => hunt::hunt(args),
        Command::Infer(args) => infer::infer(args),
        Command::Corpus(cmd) => corpus::corpus(cmd),
        Command::Findings(cmd) => findings::findings(cmd),
        Command::Fuzz(cmd) => fuzz::fuzz(cmd),
        Command::Discover(args) => discover::discover(args),
        Command::Serve(args) => serve::serve(args),
        Command::Report { corpus, output, hunts, hunts_only } => report::report(&corpus, &output, &hunts, hunts_only),
        Command::Bench { models, seconds, paths } => match paths {
            Some(p) => bench::bench_paths(&p, seconds),
            None => bench::bench(&models, seconds),
        },
        Command::Models { show } => models::models(show.as_deref()),
        Command::Devices => gpu::devices(),
        Command::Paths { json } => models::paths(json),
        Command::EngineCheck(args) => engine::check(args),
        Command::GpuBench { device, batches } => gpu::bench(device, &batches),
        Command::Replay { corpus, models, oracle, filter, any_nan } => replay(&corpus, &models, &oracle, filter.as_deref(), any_nan),
        Command::GpuCheck { path, device, tiles } => gpu::check(path.as_deref(), &device, tiles),
        Command::Run { path, device, input, output } => gpu::run(&path, device, &input, &output),
        Command::Record { path, device, input, count, seed, corpus, oracle, label } => {
            gpu::record(&path, device, &input, count.map(|n| (seed, n)), &corpus, oracle.as_deref().zip(label.as_deref()))
        }
        Command::Gen { path, count, seed, output } => gpu::generate(&path, count, seed, &output),
    }
}

fn replay(corpus: &std::path::Path, models: &str, oracles: &[String], filter: Option<&str>, any_nan: bool) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    use mmafuzz::hunt::external::External;
    let models: Vec<mmafuzz::Model> = models.split(',').filter(|m| !m.trim().is_empty()).map(|m| mmafuzz::Model::load(m.trim())).collect::<Result<_, _>>()?;
    let oracles: Vec<mmafuzz::hunt::side::Side> = oracles
        .iter()
        .map(|spec| match External::from_spec(spec) {
            Some(x) => Ok(mmafuzz::hunt::side::Side::External(x?)),
            None => anyhow::bail!("--oracle '{spec}': expected external:CMD or external-npz:CMD"),
        })
        .collect::<anyhow::Result<_>>()?;
    let files: Vec<_> = mmafuzz::replay::corpus_files(corpus)
        .with_context(|| format!("cannot list {}", corpus.display()))?
        .into_iter()
        .filter(|f| filter.is_none_or(|s| mmafuzz::replay::corpus_path_id(f).contains(s)))
        .collect();
    print!("{:<36}", "path (tiles reproduced bitwise)");
    for i in 0..oracles.len() {
        print!(" {:>14}", format!("oracle {}", i + 1));
    }
    for m in &models {
        print!(" {:>14}", m.name);
    }
    println!();
    for f in files {
        let name = mmafuzz::replay::corpus_path_id(&f);
        print!("{name:<36}");
        let mut bad = Vec::new();
        let mut wrong = Vec::new();
        for (i, o) in oracles.iter().enumerate() {
            let s = mmafuzz::replay::replay_file_side(&f, o, 4096, any_nan).with_context(|| format!("cannot read {}", f.display()))?;
            let pct = 100.0 * s.tile_fraction();
            let pct = if s.tiles_matching < s.tiles { pct.min(99.9) } else { pct };
            print!(" {pct:>7.1}% {:>5}", s.tiles);
            if s.tiles_matching < s.tiles {
                wrong.push(format!("oracle {} ({}): {} of {} tiles not reproduced; first: {}", i + 1, o.describe(), s.tiles - s.tiles_matching, s.tiles, s.first_mismatches.join("; ")));
            }
        }
        for m in &models {
            let s = mmafuzz::replay::replay_file(&f, m).with_context(|| format!("cannot read {}", f.display()))?;
            // Never 100.0% for a corpus with one tile in ten thousand not reproduced.
            let pct = 100.0 * s.tile_fraction();
            let pct = if s.tiles_matching < s.tiles { pct.min(99.9) } else { pct };
            print!(" {pct:>7.1}% {:>5}", s.tiles);
            // What the path's own model misses is news; other models' misses are expected.
            if s.tiles_matching < s.tiles && m.name.ends_with(name.as_str()) {
                wrong.push(format!("{}: {} of {} tiles not reproduced; first: {}", m.name, s.tiles - s.tiles_matching, s.tiles, s.first_mismatches.join("; ")));
            }
            bad = s.bad_lines;
        }
        println!();
        for w in wrong {
            println!("  {w}");
        }
        for b in bad.iter().take(3) {
            eprintln!("skipped {b}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
