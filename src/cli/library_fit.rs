//! `mmafuzz library fit`: a GPU's traced kernel choices made into predictors and tables.

use anyhow::Context;
use mmafuzz::library::fit::{exception_table, fit as fit_op, FitStats, Fitted, Traced};
use mmafuzz::library::predict::{Degenerate, Predictor};
use mmafuzz::library::{learned_file, ConfigTable, KernelConfig, LibraryModel, TorchOp};
use sha1::{Digest, Sha1};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A trace as scripts/torch-trace.py writes it: a JSON line of provenance, then per path
/// `path<TAB>NAME`, `cfg<TAB>ID<TAB>ALGO` and `OP<TAB>M<TAB>N<TAB>K<TAB>ID` lines.
struct Trace {
    provenance: serde_json::Value,
    paths: BTreeMap<String, BTreeMap<TorchOp, Vec<Traced>>>,
    /// Per path, each GEMM's call, shape class (a validation trace's sixth field) and index
    /// into `paths[path][op]`.
    classes: BTreeMap<String, Vec<(TorchOp, String, usize)>>,
    /// Per path, the degenerate classes its data does not describe (`unpredicted` lines).
    unpredicted: BTreeMap<String, BTreeMap<(TorchOp, Degenerate), String>>,
}

fn read_trace(file: &Path) -> anyhow::Result<Trace> {
    let bytes = mmafuzz::store::read_text(file).with_context(|| format!("cannot read {}", file.display()))?;
    let text = String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8", file.display()))?;
    let mut lines = text.lines().enumerate();
    let (_, first) = lines.next().with_context(|| format!("{} is empty", file.display()))?;
    let provenance: serde_json::Value = serde_json::from_str(first).with_context(|| format!("{} line 1: not the trace's provenance line", file.display()))?;
    let mut paths: BTreeMap<String, BTreeMap<TorchOp, Vec<Traced>>> = BTreeMap::new();
    let mut classes: BTreeMap<String, Vec<(TorchOp, String, usize)>> = BTreeMap::new();
    // A configuration the emulator cannot read (numSplitsK=0, once, on SGEMM) is skipped with
    // its GEMMs, and counted.
    let (mut path, mut configs): (Option<String>, BTreeMap<String, Result<KernelConfig, String>>) = (None, BTreeMap::new());
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut unpredicted: BTreeMap<String, BTreeMap<(TorchOp, Degenerate), String>> = BTreeMap::new();
    for (no, line) in lines {
        let at = || format!("{} line {}", file.display(), no + 1);
        let f: Vec<&str> = line.split('\t').collect();
        let (f, class) = match f[..] {
            [op, m, n, k, id, class] => (vec![op, m, n, k, id], class),
            _ => (f, ""),
        };
        match f[..] {
            ["path", name] => {
                path = Some(name.to_string());
                configs.clear();
            }
            ["unpredicted", op, class, why] => {
                let op: TorchOp = op.parse().map_err(anyhow::Error::msg).with_context(at)?;
                let class = Degenerate::parse(class).with_context(|| format!("{}: '{class}' is not a class like m-- or -n-", at()))?;
                let p = path.clone().with_context(|| format!("{}: an unpredicted line before any path line", at()))?;
                unpredicted.entry(p).or_default().insert((op, class), why.to_string());
            }
            ["cfg", id, algo] => {
                configs.insert(id.to_string(), KernelConfig::from_log(algo).map_err(|e| format!("{algo}: {e}")));
            }
            [op, m, n, k, id] => {
                let op: TorchOp = op.parse().map_err(anyhow::Error::msg).with_context(at)?;
                let dim = |s: &str| -> anyhow::Result<usize> {
                    let x: usize = s.parse().with_context(|| format!("{}: '{s}' is not a dimension", at()))?;
                    anyhow::ensure!((1..=mmafuzz::library::table::MAX_DIM).contains(&x), "{}: dimension {x} out of range", at());
                    Ok(x)
                };
                let p = path.clone().with_context(|| format!("{}: a GEMM before any path line", at()))?;
                let config = match configs.get(id).with_context(|| format!("{}: configuration {id} not defined", at()))? {
                    Ok(c) => c.clone(),
                    Err(why) => {
                        *skipped.entry(format!("{p}: {why}")).or_default() += 1;
                        continue;
                    }
                };
                let list = paths.entry(p.clone()).or_default().entry(op).or_default();
                classes.entry(p).or_default().push((op, class.to_string(), list.len()));
                list.push(Traced { shape: (dim(m)?, dim(n)?, dim(k)?), config });
            }
            [""] => {}
            _ => anyhow::bail!("{}: cannot read this line", at()),
        }
    }
    for (why, count) in skipped {
        eprintln!("{}: {count} GEMM(s) skipped, configuration unreadable: {why}", file.display());
    }
    Ok(Trace { provenance, paths, classes, unpredicted })
}

/// The learning set's hash: SHA-1 over its sorted `path op m n k config` lines.
fn learning_hash(per_op: &BTreeMap<TorchOp, Vec<Traced>>, path: &str) -> String {
    let mut lines: Vec<String> = per_op.iter().flat_map(|(op, v)| v.iter().map(move |t| format!("{path} {op} {} {} {} {}", t.shape.0, t.shape.1, t.shape.2, t.config.to_log()))).collect();
    lines.sort();
    let mut h = Sha1::new();
    for l in &lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

pub fn fit(files: &[PathBuf], gpu: &str, out: &Path, seed: u64, from_table: bool, max_per_call: usize, trees: usize) -> anyhow::Result<ExitCode> {
    let mut paths: BTreeMap<String, BTreeMap<TorchOp, Vec<Traced>>> = BTreeMap::new();
    let mut unpredicted: BTreeMap<String, BTreeMap<(TorchOp, Degenerate), String>> = BTreeMap::new();
    // A trace of cuBLASLt's heuristic (scripts/lt-heuristic.py) is not a table of calls that ran:
    // the predictor is learned from it, the path's kernel table is left as it is.
    let mut heuristic = false;
    let mut source = String::new();
    let (mut gpu_line, mut sources) = (String::new(), Vec::<String>::new());
    let mut tables: BTreeMap<String, ConfigTable> = BTreeMap::new();
    for file in files {
        if from_table {
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let path = mmafuzz::store::tsv_stem(name).and_then(|s| s.strip_suffix(".configs")).with_context(|| format!("{}: not a <path>.configs.tsv[.xz|.gz] table", file.display()))?;
            let bytes = mmafuzz::store::read_text(file).with_context(|| format!("cannot read {}", file.display()))?;
            let table = ConfigTable::parse(&String::from_utf8(bytes)?).with_context(|| file.display().to_string())?;
            for ((m, n, k, op), c) in table.iter() {
                paths.entry(path.to_string()).or_default().entry(op).or_default().push(Traced { shape: (m, n, k), config: c.clone() });
            }
            source = table.provenance.first().cloned().unwrap_or_default();
            tables.insert(path.to_string(), table);
        } else {
            let t = read_trace(file)?;
            let p = &t.provenance["provenance"];
            heuristic |= t.provenance["heuristic"].as_bool().unwrap_or(false);
            for (path, u) in t.unpredicted {
                unpredicted.entry(path).or_default().extend(u);
            }
            // Each file that carries a GPU names it and how it was drawn: a heuristic's dense
            // draw, a learning trace, or the validation traces of earlier seeds.
            if p.get("gpu").is_some() {
                gpu_line = format!(
                    "gpu: {} ({} SMs), cuBLAS {}, driver {}, torch {}",
                    p["gpu"].as_str().unwrap_or("?"),
                    p["sm_count"],
                    p["cublas"].as_str().unwrap_or("?"),
                    p["driver"].as_str().unwrap_or("?"),
                    p["torch"].as_str().unwrap_or("?"),
                );
                let drawn = if t.provenance["heuristic"].as_bool().unwrap_or(false) {
                    format!("cuBLASLt's heuristic asked at each shape as cuBLAS asks it (scripts/lt-heuristic.py), seed {}", t.provenance["learn_seed"])
                } else if let Some(v) = t.provenance.get("validate_seed") {
                    format!("real calls traced by scripts/torch-trace.py validate, seed {v}")
                } else {
                    format!("real calls traced by scripts/torch-trace.py learn, seed {}", t.provenance["learn_seed"])
                };
                if !sources.contains(&drawn) {
                    sources.push(drawn);
                }
            }
            for (path, ops) in t.paths {
                let e = paths.entry(path).or_default();
                for (op, v) in ops {
                    e.entry(op).or_default().extend(v);
                }
            }
        }
    }
    if !from_table {
        source = format!("{gpu_line}; {}", sources.join("; "));
    }
    let mut report = String::new();
    let _ = writeln!(report, "{:<46} {:<12} {:>7} {:>7} {:>8} {:>9} {:>6} {:>6} {:>7} {:>9}", "path", "call", "traced", "held", "right", "declined", "wrong", "unmod", "leaves", "declining");
    let mut total = FitStats::default();
    for (path, ops) in paths.iter_mut() {
        let skip = unpredicted.get(path.as_str()).cloned().unwrap_or_default();
        for (op, v) in ops.iter_mut() {
            v.retain(|t| !skip.contains_key(&(*op, Degenerate::of(t.shape))));
            if v.len() > max_per_call {
                // A deterministic subset, by a hash of the shape.
                let mut keyed: Vec<(u64, Traced)> = v.drain(..).map(|t| (mmafuzz::library::libgen::splitmix64(seed ^ ((t.shape.0 as u64) << 42) ^ ((t.shape.1 as u64) << 21) ^ t.shape.2 as u64), t)).collect();
                keyed.sort_unstable_by_key(|(h, _)| *h);
                v.extend(keyed.into_iter().take(max_per_call).map(|(_, t)| t));
            }
        }
    }
    for (path, ops) in &paths {
        let name = format!("{gpu}:{path}");
        let lm = LibraryModel::load(&name, None).with_context(|| format!("the trace's path {path} has no model {name}"))?;
        let hash = learning_hash(ops, path);
        // Call kinds fit in parallel (each tree grows on one thread).
        let fitted: Vec<(TorchOp, Fitted)> = {
            use rayon::prelude::*;
            ops.par_iter().map(|(op, v)| (*op, fit_op(&lm.rules, *op, v, seed, trees))).collect()
        };
        let mut predictor = Predictor { unpredicted: unpredicted.get(path.as_str()).cloned().unwrap_or_default(), ..Predictor::default() };
        predictor.provenance = vec![
            format!("{name}: the kernel cuBLASLt runs, predicted per PyTorch call from the shape (`mmafuzz library fit`, {})", mmafuzz::store::today_utc()),
            source.clone(),
            format!("learning set: {} traced GEMMs, SHA-1 {hash} (sorted `path op m n k config` lines); deal seed {seed}: 15% held out; the rest dealt anew for each of {trees} tree(s) per call, 70% of all growing it, 15% calibrating it; a call is answered where its trees agree", ops.values().map(Vec::len).sum::<usize>()),
        ];
        let mut ids: BTreeMap<String, usize> = BTreeMap::new();
        for (op, f) in &fitted {
            let s = f.stats;
            predictor.provenance.push(format!("{op}: held out {} shapes: {} right, {} declined, {} wrong, {} unmodelled kernels; {} leaves, {} declining", s.held_out, s.right, s.declined, s.wrong, s.unmodelled, s.leaves, s.declining_leaves));
            let _ = writeln!(report, "{path:<46} {:<12} {:>7} {:>7} {:>8} {:>9} {:>6} {:>6} {:>7} {:>9}", op.name(), s.learned, s.held_out, s.right, s.declined, s.wrong, s.unmodelled, s.leaves, s.declining_leaves);
            for (a, b) in [(&mut total.learned, s.learned), (&mut total.held_out, s.held_out), (&mut total.right, s.right), (&mut total.declined, s.declined), (&mut total.wrong, s.wrong), (&mut total.unmodelled, s.unmodelled)] {
                *a += b;
            }
            // Renumber the op's configurations into the file's one list.
            let remap: Vec<usize> = f
                .configs
                .iter()
                .map(|c| {
                    let key = c.to_log();
                    let next = predictor.configs.len();
                    *ids.entry(key).or_insert_with(|| {
                        predictor.configs.push(c.clone());
                        next
                    })
                })
                .collect();
            let forest = f
                .nodes
                .iter()
                .map(|tree| {
                    tree.iter()
                        .map(|n| match n {
                            mmafuzz::library::predict::Node::Leaf { config, support, held } => mmafuzz::library::predict::Node::Leaf { config: remap[*config], support: *support, held: *held },
                            other => other.clone(),
                        })
                        .collect()
                })
                .collect();
            predictor.trees.insert(*op, forest);
        }
        let table = match tables.remove(path) {
            Some(t) => t,
            None => {
                let per_op: Vec<(TorchOp, &Fitted)> = fitted.iter().map(|(o, f)| (*o, f)).collect();
                let mut prov = vec![
                    format!("{name}: the traced shapes whose kernel the predictor does not give (`mmafuzz library fit`, {})", mmafuzz::store::today_utc()),
                    source.clone(),
                ];
                prov.push(format!("learning set SHA-1 {hash}"));
                exception_table(prov, &per_op)
            }
        };
        std::fs::create_dir_all(out).with_context(|| format!("cannot make {}", out.display()))?;
        // Compressed as its name says.
        let write = |file: PathBuf, text: String| -> anyhow::Result<()> {
            mmafuzz::store::write_atomically(&file, text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))
        };
        write(learned_file(out, path, "predict"), predictor.to_text())?;
        if !from_table && !heuristic {
            write(learned_file(out, path, "configs"), table.to_text())?;
        }
        eprintln!("{name}: {} tree nodes, {} configurations, {} table shapes", predictor.nodes(), predictor.configs.len(), table.len());
    }
    print!("{report}");
    let pct = |x: usize| 100.0 * x as f64 / total.held_out.max(1) as f64;
    println!(
        "all: {} held-out shapes, {:.2}% right, {:.2}% declined, {:.3}% wrong, {:.2}% unmodelled kernels",
        total.held_out,
        pct(total.right),
        pct(total.declined),
        pct(total.wrong),
        pct(total.unmodelled)
    );
    Ok(ExitCode::SUCCESS)
}

/// `mmafuzz library check-predict`: a validation trace's logged kernels against what the
/// models say without it (table, then predictor), per path, call and shape class.
pub fn check_predict(files: &[PathBuf], gpu: &str, gaps_out: Option<&std::path::Path>, learned: Option<&std::path::Path>, outcomes_out: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    use mmafuzz::library::fit::plan_of;
    use mmafuzz::library::gemm::LibraryEmulator;
    #[derive(Default, Clone, Copy)]
    struct Count {
        all: usize,
        exact: usize,
        declined: usize,
        wrong: usize,
        traced_ok: usize,
    }
    impl std::ops::AddAssign for Count {
        fn add_assign(&mut self, c: Count) {
            for (a, b) in [(&mut self.all, c.all), (&mut self.exact, c.exact), (&mut self.declined, c.declined), (&mut self.wrong, c.wrong), (&mut self.traced_ok, c.traced_ok)] {
                *a += b;
            }
        }
    }
    let mut rows: BTreeMap<(String, String, String), Count> = BTreeMap::new();
    let mut wrongs: Vec<String> = vec![];
    // Why the model cannot run a logged kernel: (path, reason) -> GEMMs.
    let mut unmodelled: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut gap_lines: Vec<String> = vec![];
    let mut outcome_lines: Vec<String> = vec![];
    for file in files {
        let t = read_trace(file)?;
        if let Some(seed) = t.provenance.get("validate_seed") {
            println!("{}: validation seed {seed}, {}", file.display(), t.provenance["provenance"]);
        }
        for (path, ops) in &t.paths {
            let name = format!("{gpu}:{path}");
            let mut lm = LibraryModel::load(&name, None)?;
            if let Some(dir) = learned {
                lm = lm.with_learned_from(dir)?;
            }
            lm.use_predictor = true;
            let emu = LibraryEmulator::new(&lm);
            for (op, class, i) in &t.classes[path] {
                let traced = &ops[op][*i];
                let truth = plan_of(&lm.rules, *op, traced.shape, &traced.config);
                let class = if class.is_empty() { "-".to_string() } else { class.clone() };
                let c = rows.entry((path.clone(), op.name().to_string(), class.clone())).or_default();
                c.all += 1;
                c.traced_ok += truth.is_ok() as usize;
                if let Err(e) = &truth {
                    *unmodelled.entry((path.clone(), e.to_string())).or_default() += 1;
                    let (m, n, k) = traced.shape;
                    gap_lines.push(format!("{path}\t{}\t{m}\t{n}\t{k}\t{class}\t{}\t{e}\n", op.name(), traced.config));
                }
                let choice = emu.choose(traced.shape, *op);
                let chosen = choice.as_ref().ok().map(|(cfg, _)| *cfg);
                let outcome = match (chosen.map(|cfg| (cfg, plan_of(&lm.rules, *op, traced.shape, cfg))), &truth) {
                    (Some((_, Ok(p))), Ok(t)) if p == *t => {
                        c.exact += 1;
                        "exact"
                    }
                    (Some((cfg, Ok(_))), Ok(_)) => {
                        c.wrong += 1;
                        let (m, n, k) = traced.shape;
                        wrongs.push(format!("{path} {op} {m}x{n}x{k}: logged {}, predicted {cfg}", traced.config));
                        "wrong"
                    }
                    (_, Err(_)) => {
                        c.declined += 1;
                        "unmodelled"
                    }
                    _ => {
                        c.declined += 1;
                        "declined"
                    }
                };
                if outcomes_out.is_some() {
                    let (m, n, k) = traced.shape;
                    let said = match &choice {
                        Ok((cfg, _)) => cfg.to_log(),
                        Err(e) => e.to_string(),
                    };
                    outcome_lines.push(format!("{path}\t{}\t{m}\t{n}\t{k}\t{class}\t{outcome}\t{}\t{said}\n", op.name(), traced.config.to_log()));
                }
            }
        }
    }
    println!("{:<46} {:<12} {:<8} {:>6} {:>8} {:>9} {:>6}   {:>12}", "path", "call", "shapes", "GEMMs", "exact", "declined", "wrong", "with trace");
    let mut total = Count::default();
    for ((path, op, class), c) in &rows {
        let pct = |x: usize| 100.0 * x as f64 / c.all.max(1) as f64;
        println!("{path:<46} {op:<12} {class:<8} {:>6} {:>7.2}% {:>8.2}% {:>5.2}%   {:>10.2}%", c.all, pct(c.exact), pct(c.declined), pct(c.wrong), pct(c.traced_ok));
        total += *c;
    }
    // The same counts summed per path and per shape class.
    for (title, key) in [("per path", 0usize), ("per shape class", 2)] {
        let mut sums: BTreeMap<&str, Count> = BTreeMap::new();
        for ((path, _, class), c) in &rows {
            *sums.entry(if key == 0 { path.as_str() } else { class.as_str() }).or_default() += *c;
        }
        println!("{title}:");
        for (name, c) in &sums {
            let pct = |x: usize| 100.0 * x as f64 / c.all.max(1) as f64;
            println!("  {name:<44} {:>6} GEMMs {:>7.2}% exact {:>7.2}% declined {:>6.3}% wrong   with trace {:>6.2}%", c.all, pct(c.exact), pct(c.declined), pct(c.wrong), pct(c.traced_ok));
        }
    }
    let pct = |x: usize| 100.0 * x as f64 / total.all.max(1) as f64;
    println!("all: {} GEMMs, without the trace {:.2}% exact, {:.2}% declined, {:.3}% wrong; with the trace {:.2}% modelled", total.all, pct(total.exact), pct(total.declined), pct(total.wrong), pct(total.traced_ok));
    for w in wrongs.iter().take(20) {
        println!("  wrong: {w}");
    }
    let mut gaps: Vec<_> = unmodelled.into_iter().collect();
    gaps.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if !gaps.is_empty() {
        println!("logged kernels the models do not run ({} kinds, most GEMMs first):", gaps.len());
    }
    for ((path, why), n) in gaps.iter().take(30) {
        println!("  {n:>6}  {path}: {why}");
    }
    if let Some(out) = gaps_out {
        let text: String = std::iter::once("path\tcall\tm\tn\tk\tclass\tkernel\twhy\n".to_string()).chain(gap_lines).collect();
        mmafuzz::store::write_atomically(out, text.as_bytes()).with_context(|| format!("writing {}", out.display()))?;
        println!("{} GEMMs whose kernel the models do not run: {}", text.lines().count() - 1, out.display());
    }
    if let Some(out) = outcomes_out {
        let text: String = std::iter::once("path\tcall\tm\tn\tk\tclass\toutcome\tlogged\tmodel\n".to_string()).chain(outcome_lines).collect();
        mmafuzz::store::write_atomically(out, text.as_bytes()).with_context(|| format!("writing {}", out.display()))?;
        println!("every GEMM's outcome: {}", out.display());
    }
    Ok(if total.wrong == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `mmafuzz library calibrate`: the GPU's predictors and tables checked against traces of calls
/// PyTorch ran there; leaves a traced call contradicts decline and the traced shapes the
/// predictor does not get right join the table. Writes DIR/<path>.predict.tsv.xz and
/// DIR/<path>.configs.tsv.xz (or rewrites them in the format they have).
pub fn calibrate(files: &[PathBuf], gpu: &str, out: &Path) -> anyhow::Result<ExitCode> {
    use mmafuzz::library::calibrate::calibrate as calibrate_path;
    let mut calls: BTreeMap<String, Vec<(TorchOp, Traced)>> = BTreeMap::new();
    let mut names = vec![];
    let mut gpu_name: Option<String> = None;
    for file in files {
        let t = read_trace(file)?;
        anyhow::ensure!(!t.provenance["heuristic"].as_bool().unwrap_or(false), "{}: a trace of cuBLASLt's heuristic, not of calls that ran: give it to `library fit`", file.display());
        let name = t.provenance["provenance"]["gpu"].as_str().with_context(|| format!("{}: its provenance names no GPU", file.display()))?.to_string();
        if let Some(g) = &gpu_name {
            anyhow::ensure!(*g == name, "{}: traced on {name}, the other traces on {g}", file.display());
        }
        gpu_name = Some(name);
        let seed = t.provenance.get("validate_seed").or_else(|| t.provenance.get("learn_seed")).map(|s| s.to_string()).unwrap_or_else(|| "?".into());
        names.push(format!("seed {seed}"));
        for (path, ops) in t.paths {
            let list = calls.entry(path).or_default();
            for (op, v) in ops {
                list.extend(v.into_iter().map(|t| (op, t)));
            }
        }
    }
    let gpu_name = gpu_name.context("no traces")?;
    let traced_on = format!("traced on the {gpu_name}, {}", names.join(", "));
    std::fs::create_dir_all(out).with_context(|| format!("cannot make {}", out.display()))?;
    println!("{:<46} {:>7} {:>8} {:>7} {:>7} {:>9} {:>7} {:>11}", "path", "calls", "modelled", "right", "wrong", "declining", "tabled", "conflicting");
    for (path, calls) in &calls {
        let name = format!("{gpu}:{path}");
        let mut lm = LibraryModel::load(&name, None).with_context(|| format!("the trace's path {path} has no model {name}"))?;
        if let Some(g) = lm.table.gpu_name() {
            anyhow::ensure!(gpu_name.contains(g) || g.contains(gpu_name.as_str()), "{name} holds the kernels of the {g}; the traces were taken on the {gpu_name}");
        }
        let s = calibrate_path(&lm.rules, &mut lm.predictor, &mut lm.table, calls, &traced_on);
        let line = format!(
            "calibrated against {} GEMMs PyTorch ran ({traced_on}; `mmafuzz library calibrate`, {}): {} leaves that traced calls contradicted decline, {} traced shapes joined the table, {} traced with kernels of different schedules left out",
            s.calls,
            mmafuzz::store::today_utc(),
            s.leaves_declined,
            s.table_added,
            s.conflicting
        );
        lm.predictor.provenance.push(line.clone());
        lm.table.provenance.push(line);
        let write = |file: PathBuf, text: String| -> anyhow::Result<()> {
            mmafuzz::store::write_atomically(&file, text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))
        };
        write(learned_file(out, &path, "predict"), lm.predictor.to_text())?;
        write(learned_file(out, &path, "configs"), lm.table.to_text())?;
        println!("{path:<46} {:>7} {:>8} {:>7} {:>7} {:>9} {:>7} {:>11}", s.calls, s.modelled, s.right_before, s.wrong_before, s.leaves_declined, s.table_added, s.conflicting);
    }
    Ok(ExitCode::SUCCESS)
}
