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
    },
}

pub fn findings(cmd: FindingsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        FindingsCommand::Merge { into, sources } => {
            for s in &sources {
                anyhow::ensure!(s.is_dir(), "{} is not a directory of findings", s.display());
            }
            let (new, merged, problems) = mmafuzz::hunt::finding::merge(&into, &sources)?;
            for p in &problems {
                eprintln!("skipped {p}");
            }
            println!("merged {} director{} into {}: {new} new findings, {merged} merged into existing ones", sources.len(), if sources.len() == 1 { "y" } else { "ies" }, into.display());
            Ok(if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}
