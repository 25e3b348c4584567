//! Command definitions and dispatch.

mod bench;
mod emulate;
mod gemm;
mod io;
mod models;
mod probes;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Find, explain and pin down how GPU matrix units really do floating-point arithmetic.
///
/// Cases are `D = A·B + C` tiles in the JSONL interchange format (see `mmafuzz emulate --help`).
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
    Emulate {
        /// Model name (`mmafuzz models`) or path to a model TOML file.
        #[arg(long)]
        model: String,
        /// Input cases (JSONL), or - for stdin.
        #[arg(long = "in", default_value = "-")]
        input: PathBuf,
        /// Output results (JSONL), or - for stdout. Files are replaced atomically when done.
        #[arg(long = "out", default_value = "-")]
        output: PathBuf,
    },
    /// Compute the exact result of each case with MPFR and its correct rounding.
    ///
    /// Same interchange format as `emulate`; adds "d" (the correct rounding in the chosen
    /// direction) and "exact" (each element's exact value as text).
    Reference {
        #[arg(long = "in", default_value = "-")]
        input: PathBuf,
        #[arg(long = "out", default_value = "-")]
        output: PathBuf,
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
    /// Emulate a whole GEMM (FTTN's D = C - A·B example) with a chosen schedule.
    Gemm(gemm::GemmArgs),
    /// Measure emulator throughput against the MPFR reference, per instruction shape.
    Bench {
        /// Comma-separated models to measure.
        #[arg(long, default_value = "h100,exact-rne")]
        models: String,
        /// Seconds spent on each side of each measurement.
        #[arg(long, default_value_t = 0.5)]
        seconds: f64,
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
        Command::Emulate { model, input, output } => emulate::emulate(&model, &input, &output),
        Command::Reference { input, output, rounding } => emulate::reference(&input, &output, rounding),
        Command::Probes { model, filter, verbose } => probes::probes(model.as_deref(), filter.as_deref(), verbose),
        Command::Gemm(args) => gemm::gemm(args),
        Command::Bench { models, seconds } => bench::bench(&models, seconds),
        Command::Models { show } => models::models(show.as_deref()),
    }
}
