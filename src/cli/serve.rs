//! `mmafuzz serve`: stand as an external oracle for another mmafuzz (or any client of the
//! protocol in src/hunt/external.rs): answer batches of tiles read from stdin under a model or
//! the exact reference, on stdout, until stdin ends.

use mmafuzz::hunt::external::{serve as serve_batches, Protocol};
use mmafuzz::{exact, Emulator, Model, Rounding};
use rayon::prelude::*;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// What answers: a model name or file, or `exact` / `exact-rz`, `-ru`, `-rd`, `-rna` (MPFR).
    #[arg(long)]
    model: String,
    /// `jsonl` (case lines and an empty line each way) or `npz` (length-prefixed npz each way).
    #[arg(long, value_enum, default_value = "jsonl")]
    protocol: ProtocolArg,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ProtocolArg {
    Jsonl,
    Npz,
}

pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let protocol = match args.protocol {
        ProtocolArg::Jsonl => Protocol::Jsonl,
        ProtocolArg::Npz => Protocol::Npz,
    };
    let exact_rounding: Option<Rounding> = match args.model.as_str() {
        "exact" => Some(Rounding::Rne),
        s if s.starts_with("exact-") => Some(s["exact-".len()..].parse().map_err(anyhow::Error::msg)?),
        _ => None,
    };
    let emu = match exact_rounding {
        Some(_) => None,
        None => Some(Emulator::new(Model::load(&args.model)?)),
    };
    let run = |tiles: &[mmafuzz::MmaCase]| -> Result<Vec<Vec<u64>>, String> {
        match (&emu, exact_rounding) {
            (Some(e), _) => tiles.par_iter().map(|t| e.run(t).map_err(|e| e.to_string())).collect(),
            (None, Some(r)) => Ok(tiles.par_iter().map(|t| exact::exact_tile(t).iter().map(|x| x.round(t.d_fmt, r)).collect()).collect()),
            (None, None) => unreachable!("a model or the reference"),
        }
    };
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let batches = serve_batches(protocol, stdin, stdout, run)?;
    eprintln!("serve: {batches} batches answered");
    Ok(ExitCode::SUCCESS)
}
