//! `mmafuzz library`: library GEMM models (cuBLAS/cuBLASLt as PyTorch calls them).

use anyhow::Context;
use mmafuzz::library::record::{replay_text, GemmRecord, Ratchet, Summary};
use mmafuzz::library::{LibraryModel, ScheduleRules, TorchOp};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum LibraryCommand {
    /// List the library models: their tables (shapes learned, distinct kernels) and schedules.
    List,
    /// The kernel a library model says cuBLASLt runs for a call at a shape (traced, or
    /// predicted, or declined with the reason), and the schedule it implies.
    ///
    ///   mmafuzz library config --model h200:cublas.gemm.bf16.bf16.bf16.bf16 --op linear --m 1 --n 4096 --k 4096
    Config {
        /// Library model, e.g. h200:cublas.gemm.f32.f16.f16.f32 (`mmafuzz library list`).
        #[arg(long)]
        model: String,
        #[arg(long)]
        m: usize,
        #[arg(long)]
        n: usize,
        #[arg(long)]
        k: usize,
        /// The PyTorch call: mm, addmm, linear, linear_bias, scaled_mm.
        #[arg(long, default_value = "mm")]
        op: TorchOp,
        /// Same as --op addmm (torch.addmm with a matrix C).
        #[arg(long, conflicts_with = "op")]
        beta: bool,
        /// A kernel table of your own (`mmafuzz library trace`) instead of the model's.
        #[arg(long)]
        table: Option<PathBuf>,
        /// Use the predictor where the table does not hold the shape (its held-out wrong rate
        /// is in report/predict-h200.txt; without this such shapes are declined).
        #[arg(long)]
        predicted: bool,
    },
    /// Run a program under cuBLASLt's trace log and write a kernel table per library path of
    /// every GEMM it made (shape, PyTorch call, kernel; the GPU's name from nvidia-smi):
    /// DIR/<path>.configs.tsv.xz, for `gemm --table`, `library config --table` anywhere later.
    ///
    ///   mmafuzz library trace --out my-model -- python3 forward.py
    ///   mmafuzz gemm --model h200:cublas.gemm.bf16.bf16.bf16.bf16 --table my-model/cublas.gemm.bf16.bf16.bf16.bf16.configs.tsv.xz --a x.npy --b w.npy --out d.npy
    Trace {
        #[arg(long)]
        out: PathBuf,
        /// The GPU's name for the tables' provenance (default: what nvidia-smi reports).
        #[arg(long)]
        gpu_name: Option<String>,
        /// The cuBLAS version for the provenance.
        #[arg(long)]
        cublas: Option<String>,
        /// Also keep cuBLASLt's whole log here.
        #[arg(long)]
        keep_log: Option<PathBuf>,
        /// Run the program once on each of these GPUs, alone (`all`, or ordinals like 0,1 in
        /// nvidia-smi's order): the first one's tables go to --out, each other's to
        /// --out/gpu-N; GPUs of the first one's name must choose its kernel at every GEMM shape
        /// both traced (exit 2 where one does not). Without it the program runs once as it is.
        #[arg(long)]
        devices: Option<String>,
        /// The program and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Check the predictors on a validation trace (scripts/torch-trace.py validate, drawn after
    /// learning): per path, call and shape class, the GEMMs whose kernel the model gives
    /// without the trace with the logged kernel's schedule (exact), declines, or gives another
    /// schedule (wrong); and with the trace, how many logged kernels the model runs. Exits 1 if
    /// any is wrong.
    CheckPredict {
        /// Validation traces (scripts/torch-trace.py validate), taken after the predictors were
        /// made; .tsv or .tsv.gz.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// The GPU whose models are checked: h200 checks h200:<path> for each traced path.
        #[arg(long)]
        gpu: String,
        /// Also write every traced GEMM whose logged kernel the models do not run, one per line
        /// (path, call, m, n, k, shape class, kernel, why; tab-separated): what to record next
        /// (scripts/gap-shapes.py).
        #[arg(long)]
        gaps: Option<PathBuf>,
        /// Check the predictors (and tables) `mmafuzz library fit` or `calibrate` wrote to this
        /// directory instead of the embedded ones: DIR/<path>.predict.tsv.xz, and
        /// DIR/<path>.configs.tsv.xz where present (or .tsv.gz, .tsv).
        #[arg(long, value_name = "DIR")]
        predictors: Option<PathBuf>,
        /// Also write every traced GEMM's outcome, one per line (path, call, m, n, k, shape
        /// class, outcome: exact, declined, wrong or unmodelled; the logged kernel; the kernel
        /// the model chose without the trace, or why it declined; tab-separated).
        #[arg(long, value_name = "FILE")]
        outcomes: Option<PathBuf>,
    },
    /// Where two GPUs' kernel choices compute different bits: on every shape the first GPU's
    /// tables hold (traced there), the second GPU's kernel (its table, else its predictor: each
    /// difference says which) and whether the two schedules are the same. Prints per path and
    /// call the shapes, the same, the differing and the declined, then differing shapes.
    ///
    ///   mmafuzz library compare-gpus --from h100 --to h200
    CompareGpus {
        #[arg(long, default_value = "h100")]
        from: String,
        #[arg(long, default_value = "h200")]
        to: String,
        /// One path only (e.g. cublas.gemm.bf16.bf16.bf16.bf16).
        #[arg(long)]
        path: Option<String>,
        /// How many differing shapes to list.
        #[arg(long, default_value_t = 40)]
        list: usize,
    },
    /// Learn a GPU's kernel choices from a trace (scripts/torch-trace.py learn, or cuBLASLt's
    /// heuristic asked densely: scripts/lt-heuristic.py dense + expand): per path and PyTorch
    /// call, a few decision trees over the shape predicting the numerically relevant
    /// configuration, each learned from another deal of the trace and validated on a held-out
    /// part no tree saw (leaves it finds unsure decline, as do shapes where trees disagree), and, from a
    /// trace of real calls, a table of the traced shapes the tree does not get right. Writes
    /// DIR/<path>.predict.tsv.xz (and DIR/<path>.configs.tsv.xz) atomically, and prints the
    /// held-out results. `unpredicted` lines in a trace make the predictor decline a call's
    /// degenerate class (m--: m = 1 alone) outright. Rebuild to embed them.
    ///
    ///   mmafuzz library fit h200-learn.tsv.gz --gpu h200 --out models/h200/cublas
    ///
    ///   mmafuzz library fit corpus/library/traces/unpredicted-h200.tsv.gz dense.tsv.gz --gpu h200 --out DIR --max-per-call 300000
    Fit {
        /// The trace (scripts/torch-trace.py's output), or with --from-table kernel tables.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// The GPU the trace was taken on: its models are h200:<path> (or h100:...).
        #[arg(long)]
        gpu: String,
        #[arg(long)]
        out: PathBuf,
        /// Seed of the deal into learning, calibration and held-out shapes.
        #[arg(long, default_value_t = 58001)]
        seed: u64,
        /// The inputs are kernel tables (.configs.tsv.xz or .gz, e.g. an older grid trace): learn a
        /// predictor from each and keep the table whole.
        #[arg(long)]
        from_table: bool,
        /// Learn from at most this many shapes per path and call (a subset chosen by a hash of
        /// the shape): a dense heuristic trace holds more than a tree needs.
        #[arg(long, default_value_t = usize::MAX)]
        max_per_call: usize,
        /// Trees per call kind, each grown on its own deal of the learning shapes: a shape is
        /// answered only where all of them give the same configuration (more trees: fewer wrong
        /// answers, more declined).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=16))]
        trees: u16,
    },
    /// Check a GPU's predictors and kernel tables against traces of GEMMs PyTorch ran there
    /// (scripts/torch-trace.py validate): a leaf that answers a traced call with another
    /// schedule than the logged kernel's declines from then on (unless distinct traced calls
    /// confirmed it 300 times per miss), and every traced shape the predictor does not then get
    /// right joins the kernel table with its logged kernel (a shape traced with kernels of
    /// different schedules is left out). Writes DIR/<path>.predict.tsv.xz and
    /// DIR/<path>.configs.tsv.xz atomically and prints per path what changed. Rebuild to embed
    /// them; check the result on a trace not given here.
    ///
    ///   mmafuzz library calibrate corpus/library/traces/h200-validate-58101.tsv.gz --gpu h200 --out DIR
    Calibrate {
        /// Validation traces taken on that GPU (.tsv or .tsv.gz, as scripts/torch-trace.py
        /// validate writes them); keep at least one trace out to check the result on.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// The GPU the traces were taken on: its models h200:<path> (or h100:...) are calibrated.
        #[arg(long)]
        gpu: String,
        /// Directory the calibrated predictors and tables are written to (models/h200/cublas
        /// to replace the embedded ones); created if missing.
        #[arg(long)]
        out: PathBuf,
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
    /// Write recorded GEMMs in their plain form (D's bits as hex, not steps from the codec's
    /// reference), optionally only one path's or one kernel family's: for reading the corpus
    /// with other tools (NumPy regenerates the operands: scripts/torch-lib.py's gen_bits).
    Export {
        #[arg(required = true)]
        records: Vec<PathBuf>,
        /// Only records of this path (e.g. cublas.gemm.f32.f32.f32.f32).
        #[arg(long)]
        path: Option<String>,
        /// Only records of this kernel family, as `replay` names them ("algo 13",
        /// "algo 22 split-K (ComputeType)").
        #[arg(long)]
        family: Option<String>,
        /// Output JSONL ("-" = standard output); written atomically.
        #[arg(long, default_value = "-")]
        out: PathBuf,
    },
    /// Replay recorded library GEMMs (JSONL, .gz allowed) under their models: per path and
    /// kernel family, the elements reproduced bit for bit.
    Replay {
        /// Record files (corpus/library/*.jsonl.xz or a GPU script's output).
        #[arg(required = true)]
        records: Vec<PathBuf>,
        /// Replay under this model instead of the one of the GPU each record names (h200:<path> for an H200, else h100:<path>).
        #[arg(long)]
        model: Option<String>,
        /// The configuration table to use with --model (a .configs.tsv[.xz|.gz] file).
        #[arg(long, requires = "model")]
        table: Option<PathBuf>,
        /// Print every record, not only the summary.
        #[arg(long, short)]
        verbose: bool,
        /// Also print a table per path and shape class (GEMV-like, small m·n with K >= 4096,
        /// K >= 4096, sizes not multiples of 16, multiples of 16).
        #[arg(long)]
        by_shape: bool,
        /// Write the ratchet these results meet (TOML; what tests/suite/library_replay.rs holds the
        /// corpus to), replacing the file atomically.
        #[arg(long)]
        write_ratchet: Option<PathBuf>,
    },
    /// Learn kernel choices: merge the lines of `scripts/torch-lib.py configs` (the kernel
    /// cuBLASLt logged per shape) into each path's table, DIR/<path>.configs.tsv.xz, replacing
    /// what a shape had; written atomically. Rebuild to embed the tables in the binary.
    Learn {
        #[arg(required = true)]
        configs: Vec<PathBuf>,
        #[arg(long, default_value = "models/h100/cublas")]
        tables: PathBuf,
    },
    /// Shape coverage: per path, how many of the kernel configurations in the learned table the
    /// recorded GEMMs reached (coverage = distinct configurations), and the most used ones not
    /// reached. With --steer, write shapes to record next (`scripts/torch-lib.py record ...
    /// --shapes FILE`): one per unreached configuration, then fresh off-grid shapes.
    Coverage {
        /// Recorded GEMMs (corpus/library/*.jsonl.xz or a GPU script's output).
        #[arg(required = true)]
        records: Vec<PathBuf>,
        /// Write this many shapes per path to --out.
        #[arg(long, requires = "out")]
        steer: Option<usize>,
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Largest m·n·k of a steered shape.
        #[arg(long, default_value_t = 1 << 33)]
        max_mnk: usize,
    },
    /// Compare FPRev measurements (scripts/torch-fprev.py: for pairs of k positions, how many
    /// terms the summation tree holds under their lowest common ancestor) with the trees the
    /// library models imply for the same shapes and logged kernels: per probe, the pairs whose
    /// count the model gives. How a schedule rule is checked against the GPU's tree directly,
    /// before rounding hides differences.
    Fprev {
        /// FPRev output files (.json, .json.gz or .json.xz).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Use this library model (file or name) for every probe instead of the one of the GPU
        /// the file names (h200:<path> for an H200's probes, else h100:<path>).
        #[arg(long)]
        model: Option<String>,
        /// Misses to print per probe.
        #[arg(long, default_value_t = 3)]
        misses: usize,
    },
    /// Infer the lane rule of GEMV-like kernels (algorithms 11, 13, 14: K spread over
    /// threads, their sums added by a tree) from FPRev measurements of their summation trees
    /// (scripts/torch-fprev.py). For each kernel the probes ran whose tree the model's rules do
    /// not give (every kernel with --all), every rule a `[[schedule.gemv]]` entry can state is
    /// tried against every measured pair: lanes, how k is dealt to them, how their sums are
    /// added, restarts, and for split-K kernels the slices and how they are added. Prints the
    /// simplest rule all of the kernel's probes agree with, as model text, and how many others
    /// do too (probe another K to tell them apart). The tree fixes the order of the additions,
    /// not their rounding: check an inferred rule on recorded GEMMs (`library replay`) before
    /// relying on it. Exits 1 if some kernel's tree is no such rule's.
    ///
    ///   mmafuzz library infer-lanes corpus/library/fprev/h200-20261204-gemv3.json.xz
    InferLanes {
        /// FPRev output files (.json, .json.gz or .json.xz).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Start from this library model (file or name) instead of the one of the GPU each
        /// file names.
        #[arg(long)]
        model: Option<String>,
        /// Infer a rule for every kernel probed, also those the model already gives.
        #[arg(long)]
        all: bool,
        /// Other agreeing rules to print per kernel.
        #[arg(long, default_value_t = 3)]
        show: usize,
    },
    /// Record GEMMs through mmafuzz's own cuBLAS/cuBLASLt executor, called as PyTorch 2.11 calls
    /// the libraries (torch.mm, torch.addmm, F.linear, torch._scaled_mm; see `mmafuzz::exec::library`),
    /// in the record format of `scripts/torch-lib.py record`: one line per GEMM with the kernel
    /// configuration cuBLASLt logged for the call and D's bits (all of D up to 4,096 elements,
    /// else 1,024 sampled), so it replays (`library replay`) and compares line by line with a
    /// torch recording of the same GEMMs.
    ///
    /// GEMM i of a path gets generator seed SEED·100000 + i (torch-lib.py's numbering).
    /// Examples:
    ///
    ///   mmafuzz library record --path cublas.gemm.f16.f16.f16.f16 --seed 3 --shapes 64x64x4096,1x300x257 --beta bias --out f16.jsonl.gz
    ///
    ///   mmafuzz library record --shapes steer.json --seed 3 --out all.jsonl.gz --jobs-out same.json
    ///
    /// and the same GEMMs through PyTorch:
    ///
    ///   python3 scripts/torch-lib.py record torch.jsonl.gz 3 0 0 --shapes same.json
    Record {
        /// Library path (cublas.gemm.f32.f16.f16.f32, ..., cublaslt.matmul.f32.e5m2.e4m3.f32);
        /// needed with --shapes MxNxK,...; with a JSON file, keeps only that path's entries.
        #[arg(long)]
        path: Option<String>,
        /// Generator seed: GEMM i of a path is made from SEED·100000 + i.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// MxNxK,MxNxK,... or a .json file in torch-lib.py's --shapes form ([{"path","m","n","k",
        /// "beta"}, ...], optionally "bias": 1, "seed", "idx").
        #[arg(long)]
        shapes: String,
        /// With MxNxK shapes: 0 (torch.mm), 1 (torch.addmm with a matrix C) or bias (F.linear:
        /// a bias row, cuBLASLt's bias epilogue; same-format paths only).
        #[arg(long, default_value = "0")]
        beta: String,
        /// Record file (JSONL, .gz to compress); written atomically.
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// Also write every line cuBLASLt logged, call by call.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Also write the GEMMs in torch-lib.py's --shapes form (seeds and indices included), for
        /// recording the same GEMMs through PyTorch.
        #[arg(long)]
        jobs_out: Option<PathBuf>,
    },
    /// Replay GPU runs of the precision refinement schemes (scripts/torch-scheme.py: Markidis
    /// et al.'s three- and four-product FP16 refinement beside plain FP16, FP32 and TF32
    /// GEMMs): emulate every step with its logged kernel, compare with the GPU bit for bit, and
    /// print each scheme's error against the exact product (MPFR) per matrix size.
    Scheme {
        #[arg(required = true)]
        records: Vec<PathBuf>,
        /// Skip the MPFR error table (only the bitwise comparison).
        #[arg(long)]
        no_errors: bool,
    },
}

pub fn library(cmd: LibraryCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        LibraryCommand::List => list(),
        LibraryCommand::Config { model, m, n, k, op, beta, table, predicted } => config(&model, m, n, k, if beta { TorchOp::Addmm } else { op }, table.as_deref(), predicted),
        LibraryCommand::Trace { out, gpu_name, cublas, keep_log, devices, command } => super::library_trace::trace(&out, gpu_name.as_deref(), cublas.as_deref(), keep_log.as_deref(), devices.as_deref(), &command),
        LibraryCommand::Calibrate { traces, gpu, out } => super::library_fit::calibrate(&traces, &gpu, &out),
        LibraryCommand::CheckPredict { traces, gpu, gaps, predictors, outcomes } => {
            super::library_fit::check_predict(&traces, &gpu, gaps.as_deref(), predictors.as_deref(), outcomes.as_deref())
        }
        LibraryCommand::InferLanes { files, model, all, show } => super::library_infer::infer(&files, model.as_deref(), all, show),
        LibraryCommand::CompareGpus { from, to, path, list } => super::library_compare::compare(&from, &to, path.as_deref(), list),
        LibraryCommand::Fit { traces, gpu, out, seed, from_table, max_per_call, trees } => super::library_fit::fit(&traces, &gpu, &out, seed, from_table, max_per_call, trees as usize),
        LibraryCommand::Import { records, corpus, max_elements } => import(&records, &corpus, max_elements),
        LibraryCommand::Replay { records, model, table, verbose, by_shape, write_ratchet } => {
            replay(&records, model.as_deref(), table.as_deref(), verbose, by_shape, write_ratchet.as_deref())
        }
        LibraryCommand::Export { records, path, family, out } => export(&records, path.as_deref(), family.as_deref(), &out),
        LibraryCommand::Scheme { records, no_errors } => scheme(&records, !no_errors),
        LibraryCommand::Fprev { files, model, misses } => fprev(&files, model.as_deref(), misses),
        LibraryCommand::Record { path, seed, shapes, beta, out, device, trace, jobs_out } => {
            let jobs = super::library_exec::jobs(path.as_deref(), seed, &shapes, &beta)?;
            super::library_exec::record(&jobs, device, &out, trace.as_deref(), jobs_out.as_deref())
        }
        LibraryCommand::Learn { configs, tables } => learn(&configs, &tables),
        LibraryCommand::Coverage { records, steer, out, seed, max_mnk } => coverage(&records, steer, out.as_deref(), seed, max_mnk),
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

fn config(model: &str, m: usize, n: usize, k: usize, op: TorchOp, table: Option<&std::path::Path>, predicted: bool) -> anyhow::Result<ExitCode> {
    use mmafuzz::library::gemm::LibraryEmulator;
    let mut lm = LibraryModel::load(model, table)?;
    lm.use_predictor = predicted;
    if let Some(w) = lm.gpu_mismatch(None) {
        eprintln!("warning: {w}");
    }
    let emu = LibraryEmulator::new(&lm);
    let (c, source) = match emu.choose((m, n, k), op) {
        Ok(x) => x,
        Err(e) => {
            println!("{e}");
            return Ok(ExitCode::from(1));
        }
    };
    println!("{op} {m}x{n}x{k}: {c} [{source}]");
    match mmafuzz::library::fit::plan_of(&lm.rules, op, (m, n, k), c) {
        Ok(p) => {
            let lens: Vec<usize> = p.slices.iter().map(|s| s.iter().map(|r| r.len()).sum()).collect();
            println!("  {} chain(s) over K of {:?}{}, reduction {:?}", p.slices.len(), &lens[..lens.len().min(4)], if lens.len() > 4 { " ..." } else { "" }, p.reduction);
            if let Some(tree) = &p.sum {
                let text = tree.show();
                println!("  added as {}{}", &text[..text.len().min(120)], if text.len() > 120 { " ..." } else { "" });
            }
        }
        Err(e) => println!("  schedule: {e}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn fprev(files: &[PathBuf], model: Option<&str>, keep: usize) -> anyhow::Result<ExitCode> {
    use mmafuzz::library::fprev;
    let mut models: BTreeMap<String, LibraryModel> = BTreeMap::new();
    let mut all_agree = true;
    for file in files {
        let text = mmafuzz::store::read_text(file).with_context(|| format!("reading {}", file.display()))?;
        let (gpu, probes) = fprev::parse_with_gpu(&text).with_context(|| format!("{}: not an FPRev file (scripts/torch-fprev.py's output)", file.display()))?;
        let gpu = gpu.as_str();
        for probe in &probes {
            let tag = format!("{} {}x{}x{}", probe.path, probe.m, probe.n, probe.k);
            if let Some(why) = probe.skipped.as_ref().or(probe.error.as_ref()) {
                println!("{tag}: not measured ({why})");
                continue;
            }
            let Some(path) = fprev::library_path(&probe.path) else {
                println!("{tag}: unknown path {:?}", probe.path);
                continue;
            };
            let name = model.map_or_else(|| mmafuzz::library::record::model_of_gpu(gpu, path), str::to_string);
            if !models.contains_key(&name) {
                models.insert(name.clone(), LibraryModel::load(&name, None)?);
            }
            let lm = &models[&name];
            let config = match fprev::config(probe) {
                Some(Ok(c)) => c,
                Some(Err(e)) => {
                    println!("{tag}: logged configuration unreadable: {e}");
                    continue;
                }
                None => {
                    println!("{tag}: no logged configuration (run the probe without --no-config)");
                    continue;
                }
            };
            let plan = match fprev::plan(&lm.rules, probe, &config) {
                Ok(p) => p,
                Err(e) => {
                    println!("{tag} [{config}]: declined by the model: {e}");
                    continue;
                }
            };
            let a = fprev::compare(&plan, probe, keep, lm.fused_width(&plan));
            all_agree &= a.agree == a.pairs;
            let misses: Vec<String> = a.misses.iter().map(|m| format!("({}, {}): GPU {}, model {}", m.q, m.p, m.measured, m.model)).collect();
            println!(
                "{tag} [{config}]: {}/{} pairs agree{}",
                a.agree,
                a.pairs,
                if misses.is_empty() { String::new() } else { format!("; e.g. {}", misses.join(", ")) }
            );
        }
    }
    Ok(if all_agree { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn replay(files: &[PathBuf], model: Option<&str>, table: Option<&std::path::Path>, verbose: bool, by_shape: bool, ratchet: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let mut models: BTreeMap<String, LibraryModel> = BTreeMap::new();
    let mut summary = Summary::new();
    let mut shapes = Summary::new();
    // Every file read first: the bar counts GEMMs across all of them (the corpus takes minutes).
    let texts: Vec<String> = files.iter().map(|f| read_records(f)).collect::<anyhow::Result<_>>()?;
    let total = texts.iter().map(|t| t.lines().filter(|l| !l.trim().is_empty()).count()).sum::<usize>();
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} GEMMs replayed {per_sec} eta {eta}").expect("valid template"));
    for (file, text) in files.iter().zip(&texts) {
        replay_text(text, &mut models, model.map(|m| (m, table)), &mut summary, |rec, r| {
            bar.inc(1);
            shapes.entry((rec.path.clone(), mmafuzz::library::record::shape_class(rec.m, rec.n, rec.k).to_string())).or_default().add(r);
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
            bar.suspend(|| {
                println!("{} {}x{}x{} {kind} seed {}: {}/{} {config}{what}", rec.path, rec.m, rec.n, rec.k, rec.seed, r.matched, r.elements);
                if std::env::var_os("MMAFUZZ_SHOW_MISSES").is_some() && !r.misses.is_empty() {
                    println!("  misses: {:?}", &r.misses[..r.misses.len().min(64)]);
                }
            });
        })
        .map_err(|(line, e)| anyhow::anyhow!("{} line {line}: {e}", file.display()))?;
    }
    bar.finish_and_clear();
    print_summary(&summary);
    if by_shape {
        println!();
        println!("{:<46} {:<26} {:>6} {:>6} {:>8} {:>10}", "path", "shape class", "GEMMs", "exact", "declined", "elements");
        for ((path, class), t) in &shapes {
            let fraction = if t.elements == 0 { "-".to_string() } else { format!("{:.2}%", 100.0 * t.fraction()) };
            println!("{path:<46} {class:<26} {:>6} {:>6} {:>8} {fraction:>10}", t.gemms, t.exact, t.skipped);
        }
    }
    if let Some(file) = ratchet {
        let text = format!(
            "# What `cargo test` (tests/suite/library_replay.rs) holds corpus/library to, per path and kernel family:\n# at least min_gemms replayed, at least min_fraction of their elements reproduced (1.0: every GEMM\n# exact). Written by `mmafuzz library replay corpus/library/*.jsonl.xz --write-ratchet FILE`.\n\n{}",
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
fn export(files: &[PathBuf], path: Option<&str>, family: Option<&str>, out: &std::path::Path) -> anyhow::Result<ExitCode> {
    let mut models: BTreeMap<String, LibraryModel> = BTreeMap::new();
    let mut text = String::new();
    let mut count = 0usize;
    for file in files {
        for (no, line) in read_records(file)?.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = || format!("{} line {}", file.display(), no + 1);
            let rec = GemmRecord::parse(line).with_context(at)?;
            if path.is_some_and(|p| p != rec.path) {
                continue;
            }
            if let Some(want) = family {
                if GemmRecord::family(rec.kernel_config().with_context(at)?.as_ref()) != want {
                    continue;
                }
            }
            let name = mmafuzz::model::default_name(&rec.path);
            if !models.contains_key(&name) {
                models.insert(name.clone(), LibraryModel::load(&name, None)?);
            }
            text.push_str(&serde_json::to_string(&rec.plain(&models[&name]).with_context(at)?)?);
            text.push('\n');
            count += 1;
        }
    }
    if out == std::path::Path::new("-") {
        print!("{text}");
    } else {
        mmafuzz::store::write_atomically(out, text.as_bytes()).with_context(|| format!("cannot write {}", out.display()))?;
        eprintln!("{count} GEMM record(s) written to {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn read_records(file: &std::path::Path) -> anyhow::Result<String> {
    if file == std::path::Path::new("-") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        return Ok(s);
    }
    let bytes = mmafuzz::store::read_text(file).with_context(|| format!("cannot read {}", file.display()))?;
    String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", file.display()))
}

/// Compact GPU-recorded GEMMs into the corpus: CORPUS/<path>.jsonl.xz, one line per GEMM
/// (regenerated inputs, D as steps), records already there skipped.
fn import(files: &[PathBuf], corpus: &std::path::Path, max_elements: usize) -> anyhow::Result<ExitCode> {
    let mut by_path: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut models: BTreeMap<String, LibraryModel> = BTreeMap::new();
    for file in files {
        let text = read_records(file)?;
        for (no, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let rec = GemmRecord::parse(line).with_context(|| format!("{} line {}", file.display(), no + 1))?;
            let name = mmafuzz::model::default_name(&rec.path);
            if !models.contains_key(&name) {
                models.insert(name.clone(), LibraryModel::load(&name, None)?);
            }
            let compact = rec.compact(&models[&name], max_elements).with_context(|| format!("{} line {}", file.display(), no + 1))?;
            by_path.entry(rec.path.clone()).or_default().push(serde_json::to_string(&compact)?);
        }
    }
    for (path, lines) in by_path {
        let file = mmafuzz::store::jsonl_file(corpus, &path);
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

fn scheme(files: &[PathBuf], with_errors: bool) -> anyhow::Result<ExitCode> {
    use mmafuzz::library::scheme::{errors, SchemeRecord};
    let mut recs = Vec::new();
    for file in files {
        let text = read_records(file)?;
        for (no, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            recs.push(SchemeRecord::parse(line).map_err(|e| anyhow::anyhow!("{} line {}: {e}", file.display(), no + 1))?);
        }
    }
    if with_errors {
        println!("error of D against the exact product of the f32 inputs (MPFR), on each record's 32x32 block of D");
    }
    println!("{:>6} {:<10} {:>9} {:>9}{}", "N", "scheme", "elements", "bitwise", if with_errors { "  max rel err  mean rel err  Frobenius rel" } else { "" });
    let (mut total, mut equal) = (0, 0);
    let mut gpus = std::collections::BTreeSet::new();
    let mut declined = 0;
    for rec in &recs {
        let r = match rec.replay() {
            Ok(r) => r,
            Err(e) => {
                declined += rec.d.len();
                println!("{:>6} {:<10} {:>9} {:>9}  not emulated: {e}", rec.n, rec.scheme, rec.d.len(), "-");
                continue;
            }
        };
        total += r.elements;
        equal += r.equal;
        gpus.insert(format!("{}, driver {}, torch {}", rec.gpu, rec.driver, rec.torch));
        let errs = if with_errors {
            let e = errors(&r.problem, &r.gpu);
            format!("  {:>11.3e}  {:>12.3e}  {:>13.3e}", e.max_rel, e.mean_rel, e.norm_rel)
        } else {
            String::new()
        };
        let miss = r.first_miss.map(|(i, j, g, m)| format!("  first miss ({i},{j}): GPU {g:08x}, model {m:08x}")).unwrap_or_default();
        println!("{:>6} {:<10} {:>9} {:>9}{errs}{miss}", rec.n, r.scheme.name(), r.elements, r.equal);
    }
    for g in gpus {
        println!("recorded on {g}");
    }
    println!("{equal} of {total} emulated elements bitwise equal to the GPU{}", if declined > 0 { format!("; {declined} elements of kernels not modelled yet") } else { String::new() });
    Ok(if equal == total && declined == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// One line of `scripts/torch-lib.py configs`.
#[derive(serde::Deserialize)]
struct ConfigLine {
    path: String,
    m: usize,
    n: usize,
    k: usize,
    beta: u8,
    /// Whether the logged call had this shape (cuBLAS sees n×m).
    matched: bool,
    algo: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    gpu: Option<String>,
    #[serde(default)]
    driver: Option<String>,
    #[serde(default)]
    torch: Option<String>,
}

fn learn(files: &[PathBuf], dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    use mmafuzz::library::{ConfigTable, KernelConfig};
    let mut by_path: BTreeMap<String, Vec<(ConfigLine, KernelConfig)>> = BTreeMap::new();
    let mut unmatched = 0;
    for file in files {
        let text = read_records(file)?;
        for (no, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = || format!("{} line {}", file.display(), no + 1);
            let c: ConfigLine = serde_json::from_str(line).with_context(at)?;
            anyhow::ensure!(c.beta <= 1, "{}: beta {} is not 0 or 1", at(), c.beta);
            if !c.matched {
                unmatched += 1;
                continue;
            }
            let text = c.algo.iter().map(|(k, v)| format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), str::to_string))).collect::<Vec<_>>().join(" ");
            let config = KernelConfig::from_log(&text).with_context(at)?;
            by_path.entry(c.path.clone()).or_default().push((c, config));
        }
    }
    for (path, lines) in by_path {
        let file = mmafuzz::library::learned_file(dir, &path, "configs");
        let mut table = match mmafuzz::store::read_text(&file) {
            Ok(b) => ConfigTable::parse(&String::from_utf8(b).with_context(|| format!("{} is not UTF-8", file.display()))?).with_context(|| file.display().to_string())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ConfigTable::default(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
        };
        let before = table.len();
        let first = &lines[0].0;
        let source = [first.gpu.as_deref().map(|g| g.to_string()), first.driver.as_deref().map(|d| format!("driver {d}")), first.torch.as_deref().map(|t| format!("torch {t}"))]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
        for (c, config) in &lines {
            table.insert(c.m, c.n, c.k, if c.beta == 1 { TorchOp::Addmm } else { TorchOp::Mm }, config.clone());
        }
        table.provenance.push(format!("{} shapes merged by `mmafuzz library learn` on {}{}", lines.len(), mmafuzz::store::today_utc(), if source.is_empty() { String::new() } else { format!(" ({source})") }));
        mmafuzz::store::write_atomically(&file, table.to_text().as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
        println!("{}: {} shapes ({} new, {} distinct kernels)", file.display(), table.len(), table.len() - before, table.distinct());
    }
    if unmatched > 0 {
        println!("{unmatched} lines skipped: the logged call did not have the line's shape");
    }
    Ok(ExitCode::SUCCESS)
}

fn coverage(files: &[PathBuf], steer: Option<usize>, out: Option<&std::path::Path>, seed: u64, max_mnk: usize) -> anyhow::Result<ExitCode> {
    use mmafuzz::library::coverage::{coverage, steer as steer_shapes};
    use mmafuzz::library::KernelConfig;
    use std::collections::HashSet;
    let mut seen: BTreeMap<String, HashSet<KernelConfig>> = BTreeMap::new();
    for file in files {
        let text = read_records(file)?;
        for (no, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let rec = GemmRecord::parse(line).with_context(|| format!("{} line {}", file.display(), no + 1))?;
            let set = seen.entry(rec.path.clone()).or_default();
            if let Some(c) = rec.kernel_config().with_context(|| format!("{} line {}", file.display(), no + 1))? {
                set.insert(c);
            }
        }
    }
    println!("{:<46} {:>8} {:>8} {:>7} {:>12}  most used kernel not reached", "path", "kernels", "reached", "beyond", "table shapes");
    let mut jobs = Vec::new();
    for (path, set) in &seen {
        let lm = LibraryModel::load(&mmafuzz::model::default_name(&path), None)?;
        let c = coverage(&lm.table, set);
        let top = c.unreached.first().map(|(k, n)| format!("{k} ({n} shapes)")).unwrap_or_else(|| "-".into());
        let share = if c.shapes == 0 { "-".to_string() } else { format!("{:.1}%", 100.0 * c.shapes_reached as f64 / c.shapes as f64) };
        println!("{path:<46} {:>8} {:>8} {:>7} {share:>12}  {top}", c.table_configs, c.reached, c.beyond_table);
        if let Some(count) = steer {
            if !lm.table.is_empty() {
                jobs.extend(steer_shapes(path, &lm.table, set, count, max_mnk, seed));
            }
        }
    }
    if let Some(out) = out {
        let text = serde_json::to_string_pretty(&jobs)?;
        mmafuzz::store::write_atomically(out, text.as_bytes()).with_context(|| format!("cannot write {}", out.display()))?;
        println!("{} shapes to record written to {} ({} for unreached kernels)", jobs.len(), out.display(), jobs.iter().filter(|j| j.why == "unseen").count());
    }
    Ok(ExitCode::SUCCESS)
}
