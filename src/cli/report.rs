//! `mmafuzz report`: inferred knobs against the published claims, and the library paths'
//! validated shapes, as Markdown and SVG.

use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;

pub fn report(corpus: &Path, out: &Path, hunts: &Path, hunts_only: bool) -> anyhow::Result<ExitCode> {
    if hunts.exists() {
        let (runs, bad) = mmafuzz::hunt::results::read(hunts).with_context(|| format!("cannot read {}", hunts.display()))?;
        for b in &bad {
            eprintln!("{}: skipped {b}", hunts.display());
        }
        let file = out.join("hunts.md");
        let md = mmafuzz::report::hunts::markdown(&runs, &format!("`{}`", hunts.display()));
        mmafuzz::store::write_atomically(&file, md.as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
        println!("wrote {} ({} hunt runs)", file.display(), runs.len());
    } else if hunts_only {
        anyhow::bail!("no results log at {} (every `mmafuzz hunt` appends to FINDINGS/hunts.jsonl)", hunts.display());
    }
    if hunts_only {
        return Ok(ExitCode::SUCCESS);
    }
    let rows = mmafuzz::report::rows(corpus);
    anyhow::ensure!(!rows.is_empty(), "no sm90 models to report on");
    let lib_dir = corpus.join("library");
    let library = if lib_dir.is_dir() {
        eprintln!("replaying {} (every recorded GEMM, a few minutes)...", lib_dir.display());
        mmafuzz::report::library::rows(&lib_dir, None).with_context(|| format!("cannot read {}", lib_dir.display()))?
    } else {
        Vec::new()
    };
    let mut md = mmafuzz::report::markdown(&rows);
    if !library.is_empty() {
        md.push_str(&mmafuzz::report::library::markdown(&library));
    }
    for (name, text) in [("report.md", &md), ("report.svg", &mmafuzz::report::svg::svg(&rows, &library))] {
        let file = out.join(name);
        mmafuzz::store::write_atomically(&file, text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
    }
    print!("{md}");
    println!("\nwrote {} and {}", out.join("report.md").display(), out.join("report.svg").display());
    Ok(ExitCode::SUCCESS)
}
