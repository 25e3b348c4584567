//! `mmafuzz library infer-lanes`: the lane rule of each GEMV-like kernel an FPRev file measured,
//! inferred from its summation trees (`mmafuzz::library::infer_lanes`), as `[[schedule.gemv]]`
//! text to put into the model.

use anyhow::Context;
use mmafuzz::library::fprev;
use mmafuzz::library::infer_lanes::{candidates, consistent, same_plans, Candidate};
use mmafuzz::library::{KernelConfig, LibraryModel};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// One kernel as the probes meet it: the path, how the probe called it (F.linear or not, with
/// its bias epilogue or not), the algorithm, its customOption and whether it split K.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Kernel {
    path: String,
    linear: bool,
    bias: bool,
    algo: u32,
    option: u32,
    split: bool,
}

/// Listed by path, then by the call's name, then by the kernel.
impl Ord for Kernel {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.path.as_str(), self.via(), self.algo, self.option, self.split).cmp(&(other.path.as_str(), other.via(), other.algo, other.option, other.split))
    }
}

impl PartialOrd for Kernel {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Kernel {
    /// The PyTorch call the probes made.
    fn via(&self) -> &'static str {
        match (self.bias, self.linear) {
            (true, _) => "F.linear with a bias",
            (false, true) => "F.linear",
            _ => "torch.mm",
        }
    }
}

/// What the probes of one kernel leave.
struct Found {
    shapes: Vec<String>,
    /// The probes' K, the model they were read against, and the first probe's m, n and kernel.
    ks: Vec<usize>,
    model: String,
    first: (usize, usize, KernelConfig),
    /// Candidates every probe so far agrees with (None before the first).
    left: Option<Vec<usize>>,
    /// Probes the model's own rules already give.
    modelled: usize,
}

pub fn infer(files: &[PathBuf], model: Option<&str>, all: bool, show: usize) -> anyhow::Result<ExitCode> {
    let mut models: BTreeMap<String, LibraryModel> = BTreeMap::new();
    let mut cands: BTreeMap<(u32, u32, bool), Vec<Candidate>> = BTreeMap::new();
    let mut found: BTreeMap<Kernel, Found> = BTreeMap::new();
    let bar = indicatif::ProgressBar::new(0).with_style(indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} probes {msg}").expect("a valid template"));
    let mut probes_of = vec![];
    for file in files {
        let text = mmafuzz::store::read_text(file).with_context(|| format!("reading {}", file.display()))?;
        let (gpu, probes) = fprev::parse_with_gpu(&text).with_context(|| format!("{}: not an FPRev file (scripts/torch-fprev.py's output)", file.display()))?;
        probes_of.push((gpu, probes));
    }
    bar.set_length(probes_of.iter().map(|(_, p)| p.len() as u64).sum());
    for (gpu, probes) in &probes_of {
        for probe in probes {
            bar.inc(1);
            let (Some(path), Some(Ok(config)), true) = (fprev::library_path(&probe.path), fprev::config(probe), probe.counts.is_some() && probe.skipped.is_none() && probe.error.is_none()) else {
                continue;
            };
            let name = model.map_or_else(|| mmafuzz::library::record::model_of_gpu(gpu, path), str::to_string);
            if !models.contains_key(&name) {
                models.insert(name.clone(), LibraryModel::load(&name, None)?);
            }
            let lm = &models[&name];
            let (linear, bias) = (fprev::through_linear(&probe.path), fprev::through_bias(&probe.path));
            let key = Kernel { path: path.to_string(), linear, bias, algo: config.algo, option: config.custom_option(), split: config.split_k > 1 };
            let own = fprev::plan(&lm.rules, probe, &config).is_ok_and(|plan| fprev::agrees_everywhere(&plan, probe, lm.fused_width(&plan)));
            let entry = found.entry(key.clone()).or_insert(Found { shapes: vec![], ks: vec![], model: name.clone(), first: (probe.m, probe.n, config.clone()), left: None, modelled: 0 });
            entry.shapes.push(format!("{}x{}x{}", probe.m, probe.n, probe.k));
            entry.ks.push(probe.k);
            entry.modelled += own as usize;
            if own && !all {
                continue;
            }
            bar.set_message(format!("{path} algo {} customOption {}", key.algo, key.option));
            let list = cands.entry((key.algo, key.option, key.split)).or_insert_with(|| candidates(key.algo, key.option, key.split));
            let width = |plan: &mmafuzz::library::Plan| lm.fused_width(plan);
            let left = consistent(&lm.rules, probe, &config, list, entry.left.as_deref(), &width);
            entry.left = Some(left);
        }
    }
    bar.finish_and_clear();
    let mut unresolved = 0;
    for (k, f) in &found {
        let split = if k.split { "split-K" } else { "unsplit" };
        println!("== {} through {}: algo {} customOption {} ({split}), probed at {}", k.path, k.via(), k.algo, k.option, f.shapes.join(", "));
        let Some(left) = &f.left else {
            println!("   the model's rules give every measured pair at all {} probe(s)", f.shapes.len());
            continue;
        };
        if f.modelled > 0 {
            println!("   the model's rules give every measured pair at {} of {} probe(s)", f.modelled, f.shapes.len());
        }
        let list = &cands[&(k.algo, k.option, k.split)];
        match left.len() {
            0 => {
                unresolved += 1;
                println!("   no rule of the {} tried gives the measured tree: a kernel of another kind", list.len());
            }
            n => {
                let (k_min, k_max) = (*f.ks.iter().min().expect("probed"), *f.ks.iter().max().expect("probed"));
                // Held to the probed K: where every agreeing rule gives one plan at each K of that
                // range (all of it up to 1,024 values, else 1,024 spread over it), the simplest is
                // the kernel's rule there.
                let ks: Vec<usize> = if k_max - k_min < 1024 { (k_min..=k_max).collect() } else { (0..1024).map(|i| k_min + i * (k_max - k_min) / 1023).collect() };
                let rules: Vec<_> = left.iter().map(|&i| &list[i].rule).collect();
                let (m, nn, config) = &f.first;
                let settled = n == 1 || (n <= 16 && same_plans(&models[&f.model].rules, &rules, (*m, *nn), ks.into_iter(), config, k.bias, k.linear));
                println!("   {n} of {} rules give every measured pair{}", list.len(), match (n, settled) {
                    (1, _) => "; as model text, held to the probed K:",
                    (_, true) => ", and the same plans at every K probed between: the simplest, held to those K:",
                    _ => "; they differ between the probed K: probe other K to tell them apart (not given as model text)",
                });
                if settled {
                    println!("[[schedule.gemv]]\n# inferred by `mmafuzz library infer-lanes` from FPRev at {}", f.shapes.join(", "));
                    print!("{}", list[left[0]].toml);
                    println!("linear = {}", k.linear);
                    if k.linear {
                        println!("bias = {}", k.bias);
                    }
                    println!("k_min = {k_min}\nk_max = {k_max}");
                } else {
                    unresolved += 1;
                }
                for &i in left.iter().skip(usize::from(settled)).take(show) {
                    println!("   {}: {}", if settled { "also" } else { "agrees" }, list[i].toml.lines().skip(3).collect::<Vec<_>>().join(", "));
                }
            }
        }
    }
    Ok(if unresolved == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
