//! `mmafuzz findings`: join the findings of hunts run apart (the shards of one hunt, or hunts
//! on several machines) into one directory, without duplicates.

use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum FindingsCommand {
    /// Merge findings directories into one: the same minimised case found in several (same
    /// id) becomes one file whose counts add up and whose dates span them all; files are
    /// written atomically. Unreadable files are named and skipped (exit status 1).
    Merge {
        /// The findings directory to merge into (created if missing).
        #[arg(long)]
        into: PathBuf,
        /// Findings directories to read (e.g. each shard's).
        #[arg(required = true)]
        sources: Vec<PathBuf>,
        /// Cap the sources as one hunt with `--per-class N` caps itself: per path, sides and
        /// class, merge only the findings of the N divergences met first hunt-wide (lowest
        /// seed, tile, element). The shards of a capped hunt, merged with the same N, give
        /// the findings of the whole hunt.
        #[arg(long, value_name = "N")]
        per_class: Option<u64>,
    },
}

pub fn findings(cmd: FindingsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        FindingsCommand::Merge { into, sources, per_class } => {
            for s in &sources {
                anyhow::ensure!(s.is_dir(), "{} is not a directory of findings", s.display());
            }
            anyhow::ensure!(per_class != Some(0), "--per-class 0 would merge nothing");
            let c = mmafuzz::hunt::finding::merge(&into, &sources, per_class)?;
            for p in &c.problems {
                eprintln!("skipped {p}");
            }
            let capped = if per_class.is_some() { format!("; {} left out by --per-class", c.capped) } else { String::new() };
            println!("merged {} director{} into {}: {} new findings, {} merged into existing ones{capped}", sources.len(), if sources.len() == 1 { "y" } else { "ies" }, into.display(), c.new, c.merged);
            Ok(if c.problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}
