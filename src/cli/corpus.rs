//! `mmafuzz corpus stats|add|dedup|minimise`.

use anyhow::Context;
use mmafuzz::replay::{corpus_files, corpus_lines, corpus_path_id, read_corpus};
use mmafuzz::Model;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum CorpusCommand {
    /// Per path: tiles, distinct tiles, recorded output kinds, where tiles came from, GPUs.
    Stats {
        #[arg(long, default_value = "corpus")]
        corpus: PathBuf,
    },
    /// Promote a path's GPU findings, in their minimised form, into its corpus file; or, with
    /// --from-fuzz, run a fuzz target's input on the GPU and the model, record its tiles with
    /// the GPU's outputs and provenance, and minimise every divergence into a finding.
    Add {
        /// The path (with --from-fuzz, default: from the artifact's target directory).
        #[arg(long, required_unless_present = "from_fuzz")]
        path: Option<String>,
        /// A GPU fuzz target's input (crash artifact or corpus file).
        #[arg(long)]
        from_fuzz: Option<PathBuf>,
        /// With --from-fuzz: the model under test (default sm90:PATH).
        #[arg(long)]
        model: Option<String>,
        #[arg(long, default_value = "findings")]
        findings: PathBuf,
        #[arg(long, default_value = "corpus")]
        corpus: PathBuf,
        /// Promote an external oracle's findings instead of the GPU's (`hunt --against
        /// external:...` against a model), labelled with what the oracle is: `--oracle-label
        /// "MMA-Sim 2.1.1 Blackwell model, not hardware" --corpus corpus/mmasim/blackwell`.
        #[arg(long, conflicts_with = "from_fuzz")]
        oracle_label: Option<String>,
    },
    /// Rewrite every corpus file in the compact form (generated tiles by seed, D as steps from
    /// the f64 reference; findings stay readable) and check that every tile reads back the same.
    Compact {
        #[arg(long, default_value = "corpus")]
        corpus: PathBuf,
    },
    /// Remove repeated tiles (same A, B and C) from every corpus file, keeping the first.
    Dedup {
        #[arg(long, default_value = "corpus")]
        corpus: PathBuf,
    },
    /// Join corpus directories into one (e.g. recordings made on several machines): each
    /// path's tiles appended to its file in INTO, repeats (same A, B, C) dropped, files
    /// rewritten atomically in the compact form.
    Merge {
        #[arg(long, default_value = "corpus")]
        into: PathBuf,
        /// Corpus directories to read.
        #[arg(required = true)]
        sources: Vec<PathBuf>,
    },
    /// Write the fewest tiles of a path's corpus that still refute every single-knob
    /// alternative of its model that the whole corpus refutes (plus every tile the model gets
    /// wrong) to OUT: a small regression set.
    Minimise {
        #[arg(long)]
        path: String,
        #[arg(long, default_value = "corpus")]
        corpus: PathBuf,
        /// Model whose alternatives must stay refuted (default sm90:PATH).
        #[arg(long)]
        model: Option<String>,
        #[arg(long = "out")]
        output: PathBuf,
    },
}

fn file_of(corpus: &Path, path: &str) -> PathBuf {
    mmafuzz::store::jsonl_file(corpus, path)
}

fn lines_of(file: &Path, cases: &[(mmafuzz::MmaCase, Vec<u64>)], keep: &[usize]) -> Vec<String> {
    let kept: Vec<_> = keep.iter().map(|&i| &cases[i]).collect();
    corpus_lines(&kept, mmafuzz::exec::path_by_id(&corpus_path_id(file)))
}

pub fn corpus(cmd: CorpusCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        CorpusCommand::Stats { corpus } => {
            println!("{:<34} {:>7} {:>8} {:>9}  outputs / sources / GPUs", "path", "tiles", "distinct", "elements");
            for f in corpus_files(&corpus).with_context(|| format!("cannot list {}", corpus.display()))? {
                let s = mmafuzz::corpus::stats(&f).with_context(|| format!("cannot read {}", f.display()))?;
                let join = |m: &std::collections::BTreeMap<_, usize>| m.iter().map(|(k, v): (&_, &usize)| format!("{k} {v}")).collect::<Vec<String>>().join(", ");
                let outputs: std::collections::BTreeMap<String, usize> = s.outputs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
                println!("{:<34} {:>7} {:>8} {:>9}  {}", corpus_path_id(&f), s.tiles, s.distinct, s.elements, join(&outputs));
                println!("{:<62}{}", "", join(&s.sources));
                println!("{:<62}{}", "", join(&s.gpus));
                for b in s.bad_lines.iter().take(3) {
                    eprintln!("skipped {b}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        CorpusCommand::Add { path, from_fuzz: Some(artifact), model, findings, corpus, .. } => add_from_fuzz(&artifact, path.as_deref(), model.as_deref(), &findings, &corpus),
        CorpusCommand::Add { path, from_fuzz: None, findings, corpus, oracle_label, .. } => {
            let path = path.expect("clap requires --path without --from-fuzz");
            let file = file_of(&corpus, &path);
            let existing = if file.exists() { read_corpus(&file)?.0 } else { vec![] };
            let (lines, problems) = mmafuzz::corpus::findings_as_lines(&findings, &path, &existing, oracle_label.as_deref());
            for p in problems.iter().take(5) {
                eprintln!("skipped {p}");
            }
            if !lines.is_empty() {
                mmafuzz::store::append_lines_atomically(&file, &lines).with_context(|| format!("cannot write {}", file.display()))?;
            }
            let whose = if oracle_label.is_some() { "oracle" } else { "GPU" };
            println!("added {} minimised {whose} findings to {}", lines.len(), file.display());
            Ok(ExitCode::SUCCESS)
        }
        CorpusCommand::Compact { corpus } => {
            for f in corpus_files(&corpus)? {
                let before = std::fs::metadata(&f)?.len();
                let (mut cases, bad) = read_corpus(&f)?;
                anyhow::ensure!(bad.is_empty(), "{} has unreadable lines (first: {}); not rewriting it", f.display(), bad[0]);
                if let Some(p) = mmafuzz::exec::path_by_id(&corpus_path_id(&f)) {
                    mmafuzz::corpus::first_gen::attach_states(&mut cases, p);
                }
                let lines = lines_of(&f, &cases, &(0..cases.len()).collect::<Vec<_>>());
                // Write beside the file, read it back, and only then replace the original.
                let scratch = corpus.join(".compact");
                std::fs::create_dir_all(&scratch)?;
                let trial = scratch.join(f.file_name().unwrap_or_default());
                mmafuzz::store::write_lines_atomically(&trial, &lines)?;
                let (again, bad) = read_corpus(&trial)?;
                let same = bad.is_empty() && again.len() == cases.len() && again.iter().zip(&cases).all(|((c, d), (c0, d0))| (&c.a, &c.b, &c.c, d) == (&c0.a, &c0.b, &c0.c, d0));
                if !same {
                    let _ = std::fs::remove_file(&trial);
                    anyhow::bail!("{}: the compact form does not read back the same tiles; left unchanged", f.display());
                }
                std::fs::rename(&trial, &f)?;
                println!("{}: {} tiles, {} -> {} bytes", corpus_path_id(&f), cases.len(), before, std::fs::metadata(&f)?.len());
            }
            let _ = std::fs::remove_dir(corpus.join(".compact"));
            Ok(ExitCode::SUCCESS)
        }
        CorpusCommand::Dedup { corpus } => {
            for f in corpus_files(&corpus)? {
                let (cases, bad) = read_corpus(&f)?;
                anyhow::ensure!(bad.is_empty(), "{} has unreadable lines (first: {}); not rewriting it", f.display(), bad[0]);
                let (keep, dropped) = mmafuzz::corpus::dedup(&cases);
                if dropped > 0 {
                    mmafuzz::store::write_lines_atomically(&f, &lines_of(&f, &cases, &keep))?;
                }
                println!("{}: {} tiles, {dropped} repeats removed", corpus_path_id(&f), keep.len());
            }
            Ok(ExitCode::SUCCESS)
        }
        CorpusCommand::Merge { into, sources } => {
            std::fs::create_dir_all(&into).with_context(|| format!("cannot create {}", into.display()))?;
            for src in &sources {
                for f in corpus_files(src).with_context(|| format!("cannot list {}", src.display()))? {
                    let (mut cases, bad) = read_corpus(&f).with_context(|| format!("cannot read {}", f.display()))?;
                    anyhow::ensure!(bad.is_empty(), "{} has unreadable lines (first: {}); nothing merged from it", f.display(), bad[0]);
                    // One file per path in INTO (an existing one of any ending, else .jsonl.xz).
                    let target = mmafuzz::store::jsonl_file(&into, &corpus_path_id(&f));
                    let mut all = if target.exists() { read_corpus(&target)?.0 } else { vec![] };
                    let before = all.len();
                    all.append(&mut cases);
                    let (keep, dropped) = mmafuzz::corpus::dedup(&all);
                    mmafuzz::store::write_lines_atomically(&target, &lines_of(&target, &all, &keep))?;
                    println!("{}: {before} + {} tiles, {dropped} repeats dropped, {} now", corpus_path_id(&f), all.len() - before, keep.len());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        CorpusCommand::Minimise { path, corpus, model, output } => {
            let f = file_of(&corpus, &path);
            let (cases, bad) = read_corpus(&f).with_context(|| format!("cannot read {}", f.display()))?;
            anyhow::ensure!(bad.is_empty(), "{} has unreadable lines (first: {})", f.display(), bad[0]);
            let model = Model::load(model.as_deref().unwrap_or(&mmafuzz::model::default_name(&path)))?;
            let keep = mmafuzz::corpus::minimise(&cases, &model);
            mmafuzz::store::write_lines_atomically(&output, &lines_of(&f, &cases, &keep)).with_context(|| format!("cannot write {}", output.display()))?;
            println!("kept {} of {} tiles of {path} in {} (every single-knob alternative of {} the corpus refutes stays refuted)", keep.len(), cases.len(), output.display(), model.name);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A fuzz input into the corpus (GPU outputs, provenance) and its divergences into findings.
fn add_from_fuzz(artifact: &Path, path: Option<&str>, model: Option<&str>, findings: &Path, corpus: &Path) -> anyhow::Result<ExitCode> {
    use mmafuzz::hunt::{Hunt, HuntConfig, Side};
    let p = super::fuzz::path_of(artifact, path)?;
    let bytes = std::fs::read(artifact).with_context(|| format!("cannot read {}", artifact.display()))?;
    let a = Side::from_spec("gpu", p).map_err(|e| anyhow::anyhow!("the corpus holds GPU results: {e}"))?;
    let b = Side::from_spec(model.unwrap_or(&mmafuzz::model::default_name(&p.id)), p).map_err(|e| anyhow::anyhow!(e))?;
    let Side::Gpu { gpus, .. } = &a else { unreachable!("side A is the GPU") };
    let provenance = super::gpu::provenance(&gpus[0], p);
    // Distinct tiles only: an input's unnamed tiles are all zeros.
    let mut tiles = mmafuzz::fuzzing::codec::decode(p, &bytes);
    let mut seen = std::collections::HashSet::new();
    tiles.retain(|t| seen.insert((t.a.clone(), t.b.clone(), t.c.clone())));
    let (da, db) = (a.execute(&tiles)?, b.execute(&tiles)?);
    let source = serde_json::json!({"artifact": artifact.file_name().map(|n| n.to_string_lossy().into_owned())});
    let lines: Vec<String> = tiles
        .iter()
        .zip(&da)
        .map(|(t, d)| {
            let mut c = t.clone();
            c.extra.insert("provenance".into(), provenance.clone());
            c.extra.insert("fuzz".into(), source.clone());
            mmafuzz::corpus::codec::encode_line(&c, d, Some(p), true)
        })
        .collect();
    let file = mmafuzz::store::jsonl_file(corpus, &p.id);
    mmafuzz::store::append_lines_atomically(&file, &lines).with_context(|| format!("cannot write {}", file.display()))?;
    println!("recorded {} tiles of {} from {} into {}", lines.len(), p.id, gpus[0].info.name, file.display());
    let cfg = HuntConfig { path: p, seed: 0, batch: tiles.len(), max_tiles: None, max_time: None, per_class: 4, max_rounds: 200, exact_every: u64::MAX, features_every: 1, findings: findings.to_path_buf(), stop_at_first: false, guided: None, shard: Default::default(), engine: Default::default() };
    let mut hunt = Hunt::new(cfg, &a, &b, false)?;
    let divergent = hunt.record_divergences(&tiles, &da, &db)?;
    println!("{divergent} divergent elements; findings: {} new, {} merged, in {}", hunt.state.findings_new, hunt.state.findings_merged, findings.join(p.id).display());
    Ok(if divergent == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
