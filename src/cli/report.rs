//! `mmafuzz report`: inferred knobs against the published claims, as Markdown and SVG.

use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;

pub fn report(corpus: &Path, out: &Path) -> anyhow::Result<ExitCode> {
    let rows = mmafuzz::report::rows(corpus);
    anyhow::ensure!(!rows.is_empty(), "no sm90 models to report on");
    let md = mmafuzz::report::markdown(&rows);
    for (name, text) in [("report.md", &md), ("report.svg", &mmafuzz::report::svg(&rows))] {
        let file = out.join(name);
        mmafuzz::store::write_atomically(&file, text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
    }
    print!("{md}");
    println!("\nwrote {} and {}", out.join("report.md").display(), out.join("report.svg").display());
    Ok(ExitCode::SUCCESS)
}
