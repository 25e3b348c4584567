//! `mmafuzz probes`: the seed papers' experiments, emulated, next to the published outcomes.

use mmafuzz::format::Format;
use mmafuzz::{probes, Emulator, Model};
use std::collections::BTreeMap;
use std::process::ExitCode;

fn show(f: Format, bits: u64) -> String {
    let v = f.decode(bits).to_f64();
    format!("{v:e}")
}

pub fn probes(model: Option<&str>, filter: Option<&str>, verbose: bool) -> anyhow::Result<ExitCode> {
    let all: Vec<_> = probes::all().into_iter().filter(|p| filter.is_none_or(|f| p.id.contains(f))).collect();
    let mut emulators: BTreeMap<String, Emulator> = BTreeMap::new();
    let chosen = model.map(Model::load).transpose()?;
    let (mut agree, mut total) = (BTreeMap::<String, usize>::new(), BTreeMap::<String, usize>::new());
    println!("{:<34} {:<14} {:>16} {:>16}  source", "probe", "model", "published", "emulated");
    for p in &all {
        let runs: Vec<(String, Option<f64>)> = match &chosen {
            Some(m) => vec![(m.name.clone(), p.published.iter().find(|(n, _)| *n == m.name).map(|x| x.1))],
            None => p.published.iter().map(|(n, v)| (n.to_string(), Some(*v))).collect(),
        };
        for (name, published) in runs {
            let emu = match (&chosen, emulators.get(&name)) {
                (Some(m), _) => emulators.entry(name.clone()).or_insert_with(|| Emulator::new(m.clone())),
                (None, Some(_)) => &emulators[&name],
                (None, None) => emulators.entry(name.clone()).or_insert(Emulator::new(Model::load(&name)?)),
            };
            let got = emu.run(&p.case)?[0];
            let got_v = p.case.c_fmt.decode(got).to_f64();
            let ok = published.map(|v| v == got_v && v.is_sign_negative() == got_v.is_sign_negative());
            if let Some(ok) = ok {
                *total.entry(name.clone()).or_default() += 1;
                *agree.entry(name.clone()).or_default() += ok as usize;
            }
            if verbose || ok == Some(false) {
                let mark = match ok {
                    Some(true) => "ok",
                    Some(false) => "MISMATCH",
                    None => "",
                };
                let pub_s = published.map(|v| format!("{v:e}")).unwrap_or_else(|| "-".into());
                println!(
                    "{:<34} {:<14} {:>16} {:>16}  {} {}",
                    p.id,
                    name,
                    pub_s,
                    show(p.case.c_fmt, got),
                    p.source,
                    mark
                );
            }
        }
    }
    println!();
    let mut all_ok = true;
    for (name, t) in &total {
        let a = agree[name];
        all_ok &= a == *t;
        println!("{name:<14} reproduces {a} of {t} published outcomes");
    }
    if total.is_empty() {
        println!("no published outcome for this model: outcomes shown only (use --verbose)");
    }
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
