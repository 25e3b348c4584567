//! `mmafuzz gemm`: whole-GEMM emulation: `.npy` operands under a library model (as cuBLAS runs
//! them for PyTorch), or FTTN's example under an instruction model with a chosen schedule.

use indicatif::{ProgressBar, ProgressStyle};
use mmafuzz::gemm::{elements, fttn_example, CEntry, Schedule, FTTN_SCHEDULE};
use mmafuzz::Model;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct GemmArgs {
    /// Model name or file (not needed with --scheme, whose steps name their models).
    #[arg(long, required_unless_present = "scheme")]
    model: Option<String>,
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
    /// A as a .npy file (m×k, C order; typed f16/f32/f64 or raw bits as unsigned integers):
    /// emulate this GEMM under a library model (h200:cublas..., h100:cublaslt...) instead of
    /// the example. Needs --b and --out.
    #[arg(long, requires_all = ["b", "out"])]
    a: Option<PathBuf>,
    /// B as a .npy file (k×n).
    #[arg(long)]
    b: Option<PathBuf>,
    /// C as a .npy file (m×n): β = 1, as torch.addmm. Without it β = 0, as torch.mm.
    #[arg(long, conflicts_with = "bias")]
    c: Option<PathBuf>,
    /// A bias row as a .npy file (n elements): F.linear's bias epilogue.
    #[arg(long)]
    bias: Option<PathBuf>,
    /// Where D goes (.npy, D's format; bf16 and FP8 as raw unsigned integers), written atomically.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The kernel cuBLASLt runs (the text of `algo=[...]` in its CUBLASLT_LOG_LEVEL=5 trace);
    /// default: the model's learned table for this shape.
    #[arg(long)]
    config: Option<String>,
    /// A kernel table of your own (`.configs.tsv[.gz]`, e.g. from a trace of your program)
    /// instead of the model's.
    #[arg(long, requires = "a")]
    table: Option<PathBuf>,
    /// Where the table does not hold the shape, use the model's predictor (declined otherwise;
    /// report/predict-h200.txt: how often it is wrong on held-out shapes).
    #[arg(long, requires = "a")]
    predicted: bool,
    /// The GPU you want D of (h100, h200, or its name): a warning where the model's kernel
    /// choices belong to another.
    #[arg(long, requires = "a")]
    gpu: Option<String>,
    /// The PyTorch call whose kernel runs: mm (torch.mm, B k×n), addmm (with --c), linear
    /// (F.linear: --b is the weight, n×k as nn.Linear holds it; with --bias, its bias
    /// epilogue). Default: mm, addmm with --c, the bias epilogue with --bias (B k×n).
    #[arg(long, requires = "a")]
    op: Option<mmafuzz::library::TorchOp>,
    /// α of D = α·A·B + β·C, as torch.addmm's `alpha` (rounded to float32, applied where the
    /// kernel's epilogue applies it: docs/src/library.md). Other than 1, declined where it
    /// was not measured: in-place split-K, kernels whose algorithm was not measured for their
    /// kind (unsplit, split-K, GEMV lanes), --bias, TF32, FP64, H100 models.
    #[arg(long, requires = "a", default_value_t = 1.0, allow_negative_numbers = true)]
    alpha: f64,
    /// β of D = α·A·B + β·C (with --c), as torch.addmm's `beta`; 0 ignores C.
    #[arg(long, requires = "c", default_value_t = 1.0, allow_negative_numbers = true)]
    beta: f64,
    /// With --a/--b as f32 matrices: run a precision scheme of library GEMMs instead of one
    /// (markidis3/markidis4: Markidis et al.'s FP16 refinement A16·B16 + R_A·B16 + A16·R_B
    /// [+ R_A·R_B], each product added by torch.addmm(D, X, Y, out_dtype=float32); f16, f32,
    /// tf32: one plain GEMM). Each step's kernel comes from its model's learned table.
    #[arg(long, value_enum, requires_all = ["a", "b", "out"], conflicts_with_all = ["c", "bias", "config", "model"])]
    scheme: Option<mmafuzz::library::scheme::Scheme>,
    /// With --scheme: also report D's error against the exact product (MPFR) on this many
    /// elements (a block of random rows and columns).
    #[arg(long, requires = "scheme")]
    error_samples: Option<usize>,
}

pub fn gemm(args: GemmArgs) -> anyhow::Result<ExitCode> {
    if let Some(scheme) = args.scheme {
        return gemm_scheme(&args, scheme);
    }
    if args.a.is_some() {
        return gemm_npy(&args);
    }
    anyhow::ensure!(args.example == "fttn", "unknown example '{}' (available: fttn)", args.example);
    let problem = fttn_example();
    let model = Model::load(args.model.as_deref().expect("clap requires --model"))?;
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

/// D = A·B (+ C or bias) of .npy matrices under a library model, every element, in parallel.
fn gemm_npy(args: &GemmArgs) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    use mmafuzz::library::gemm::{Gemm, LibraryEmulator};
    use mmafuzz::library::{npy, KernelConfig, LibraryError, LibraryModel};
    let mut lm = match LibraryModel::load(args.model.as_deref().expect("clap requires --model"), args.table.as_deref()) {
        Err(LibraryError::NotLibrary(m)) => anyhow::bail!("--a needs a library model (h200:cublas..., h100:cublaslt..., see `mmafuzz library list`); '{m}' is an instruction model"),
        other => other?,
    };
    lm.use_predictor = args.predicted;
    if let Some(w) = lm.gpu_mismatch(args.gpu.as_deref()) {
        eprintln!("warning: {w}");
    }
    let r = &lm.rules;
    let (a_path, b_path, out) = (args.a.as_ref().expect("checked"), args.b.as_ref().expect("clap requires --b"), args.out.as_ref().expect("clap requires --out"));
    let a = npy::read(a_path, r.inputs)?;
    let mut b = npy::read(b_path, r.b_inputs())?;
    use mmafuzz::library::TorchOp;
    let linear = matches!(args.op, Some(TorchOp::Linear | TorchOp::LinearBias));
    if linear {
        // F.linear's weight is n×k: B is its transpose.
        let &[wn, wk] = b.shape.as_slice() else { anyhow::bail!("the weight must be 2-D (n×k), not {:?}", b.shape) };
        b.bits = mmafuzz::library::gemm::transpose(&b.bits, wn, wk);
        b.shape = vec![wk, wn];
    }
    let (&[m, k], &[kb, n]) = (a.shape.as_slice(), b.shape.as_slice()) else {
        anyhow::bail!("A and B must be 2-D (A is {:?}, B is {:?})", a.shape, b.shape);
    };
    anyhow::ensure!(k == kb, "A is {m}×{k} but B is {kb}×{n}: the inner dimensions differ");
    let c = args.c.as_ref().map(|p| npy::read(p, r.output)).transpose()?;
    if let Some(c) = &c {
        anyhow::ensure!(c.shape == [m, n], "C is {:?}, D is {m}×{n}", c.shape);
    }
    let bias = args.bias.as_ref().map(|p| npy::read(p, r.output)).transpose()?;
    if let Some(bias) = &bias {
        anyhow::ensure!(bias.shape == [n], "the bias has shape {:?}, D has {n} columns", bias.shape);
    }
    let op = match (args.op, bias.is_some(), c.is_some()) {
        (Some(TorchOp::Linear | TorchOp::LinearBias), true, _) => TorchOp::LinearBias,
        (Some(TorchOp::Linear | TorchOp::LinearBias), false, _) => TorchOp::Linear,
        (Some(TorchOp::Addmm), _, false) => anyhow::bail!("--op addmm needs --c"),
        (Some(TorchOp::Mm), _, true) => anyhow::bail!("--op mm takes no --c (that is addmm)"),
        (Some(TorchOp::ScaledMm), ..) => anyhow::bail!("--op scaled_mm: give an FP8 model (h200:cublaslt...) without --op"),
        (Some(op), ..) => op,
        (None, b, c) => TorchOp::of(c, b),
    };
    // β = 0: torch ignores C and runs torch.mm's kernel.
    let (c, op) = match (c, op) {
        (Some(_), TorchOp::Addmm) if args.beta == 0.0 => (None, TorchOp::Mm),
        other => other,
    };
    let scalars = mmafuzz::library::Scalars::new(args.alpha, args.beta).map_err(anyhow::Error::msg)?;
    let g = Gemm { m, n, k, a: a.bits, b: b.bits, c: c.map(|c| c.bits), bias: bias.map(|b| b.bits) }.as_torch_linear();
    let emu = LibraryEmulator::new(&lm).with_scalars(scalars);
    emu.check(&g)?;
    let (config, source) = match &args.config {
        Some(text) => (KernelConfig::from_log(text)?, "given".to_string()),
        None => {
            let (c, s) = emu.choose((m, n, k), op).map_err(|e| anyhow::anyhow!("{e}; give the kernel with --config (CUBLASLT_LOG_LEVEL=5 prints it) or a traced table with --table"))?;
            (c.clone(), s.to_string())
        }
    };
    let plan = emu.plan_op(&g, &config, op)?;
    let bar = ProgressBar::new((m * n) as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} elements {per_sec} eta {eta}").expect("valid template"));
    let start = Instant::now();
    let d = emu.run(&g, &plan, &|done| bar.inc(done as u64))?;
    bar.finish_and_clear();
    npy::write(out, r.output, &[m, n], &d).with_context(|| format!("cannot write {}", out.display()))?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} {m}x{n}x{k} under {} with {config} ({source}): {} K slice(s); D written to {} in {secs:.2} s ({:.3e} terms/s)",
        op.call(),
        lm.chain.name,
        plan.slices.len(),
        out.display(),
        (m * n * k) as f64 / secs
    );
    Ok(ExitCode::SUCCESS)
}

/// A precision scheme of library GEMMs on f32 .npy matrices, every element, D written as f32.
fn gemm_scheme(args: &GemmArgs, scheme: mmafuzz::library::scheme::Scheme) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    use mmafuzz::format::Format;
    use mmafuzz::library::npy;
    use mmafuzz::library::scheme::{errors, run, SchemeProblem};
    let (a_path, b_path, out) = (args.a.as_ref().expect("clap requires --a"), args.b.as_ref().expect("clap requires --b"), args.out.as_ref().expect("clap requires --out"));
    let (a, b) = (npy::read(a_path, Format::F32)?, npy::read(b_path, Format::F32)?);
    let (&[m, k], &[kb, n]) = (a.shape.as_slice(), b.shape.as_slice()) else {
        anyhow::bail!("A and B must be 2-D (A is {:?}, B is {:?})", a.shape, b.shape);
    };
    anyhow::ensure!(k == kb, "A is {m}×{k} but B is {kb}×{n}: the inner dimensions differ");
    let (a, b): (Vec<u32>, Vec<u32>) = (a.bits.iter().map(|&x| x as u32).collect(), b.bits.iter().map(|&x| x as u32).collect());
    let steps = scheme.steps().len();
    let bar = ProgressBar::new((steps * m * n) as u64);
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} elements (all steps) {per_sec} eta {eta}").expect("valid template"));
    let start = Instant::now();
    let whole = SchemeProblem { m, n, k, rows: m, cols: n, a, b };
    let d = run(scheme, &whole, &[], &|done| bar.inc(done as u64)).map_err(|e| anyhow::anyhow!("{}: {e}", scheme.name()))?;
    bar.finish_and_clear();
    npy::write(out, Format::F32, &[m, n], &d).with_context(|| format!("cannot write {}", out.display()))?;
    println!("{m}x{n}x{k}, scheme {} ({steps} library GEMMs): D written to {} in {:.2} s", scheme.name(), out.display(), start.elapsed().as_secs_f64());
    if let Some(samples) = args.error_samples {
        let side = ((samples as f64).sqrt().ceil() as usize).max(1);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let pick = |rng: &mut rand_xoshiro::Xoshiro256PlusPlus, len: usize| {
            let mut v: Vec<usize> = rand::seq::index::sample(rng, len, side.min(len)).into_vec();
            v.sort_unstable();
            v
        };
        let (rows, cols) = (pick(&mut rng, m), pick(&mut rng, n));
        let block = SchemeProblem::block(m, n, k, &rows, &cols, |x| whole.a[x], |x| whole.b[x]);
        let d_block: Vec<u64> = rows.iter().flat_map(|&i| cols.iter().map(move |&j| i * n + j)).map(|e| d[e]).collect();
        let e = errors(&block, &d_block);
        println!(
            "error against the exact product (MPFR) on {} elements: max relative {:.3e}, mean relative {:.3e}, Frobenius relative {:.3e}",
            e.elements, e.max_rel, e.mean_rel, e.norm_rel
        );
    }
    Ok(ExitCode::SUCCESS)
}
