//! `mmafuzz models`: the model library.

use mmafuzz::format::Format;
use mmafuzz::model::embedded_model_names;
use mmafuzz::Model;
use std::process::ExitCode;

pub fn models(show: Option<&str>) -> anyhow::Result<ExitCode> {
    match show {
        None => {
            for name in embedded_model_names() {
                let m = Model::load(name)?;
                println!("{name:<16} {}", m.description);
            }
            let arch = mmafuzz::model::embedded_arch_model_names();
            println!("\nPer-path models, ARCH:PATH ({}): {}", arch.len(), arch.join(", "));
            println!("\nAny path to a model TOML file works where a name does (see models/ for the format).");
        }
        Some(name) => {
            let m = Model::load(name)?;
            println!("# {} — {}", m.name, m.description);
            for s in &m.sources {
                println!("# source: {s}");
            }
            let variants = m.variant_formats();
            // An integer model shows its integer arithmetic; a float model its float variants.
            let integer = m.arithmetic(Format::S8).accumulator.format.is_some_and(|f| f.is_integer());
            // Hopper's formats, and any other format the model has a variant for.
            let shown: Vec<Format> = if integer {
                vec![Format::S8]
            } else {
                Format::ALL.into_iter().filter(|f| Format::HOPPER.contains(f) || variants.contains(f)).collect()
            };
            for f in shown {
                let label = if variants.contains(&f) { "its own variant" } else { "base knobs" };
                println!("\n# A in {f} ({label})");
                print!("{}", toml::to_string(m.arithmetic(f))?);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `mmafuzz paths`: every instruction path and the per-path models that cover it.
pub fn paths(json: bool) -> anyhow::Result<ExitCode> {
    use mmafuzz::exec::{simulated::SIMULATED, Module, PATHS};
    let models = mmafuzz::model::embedded_arch_model_names();
    for p in PATHS.iter().chain(SIMULATED) {
        let runs = match p.module {
            Module::MmaSync => "mma.sync kernel",
            Module::Wgmma => "wgmma kernel",
            Module::Cublas => "library",
            Module::Simulated => "simulated",
        };
        let archs: Vec<&str> = models.iter().filter_map(|n| n.split_once(':').filter(|(_, path)| *path == p.id).map(|(a, _)| a)).collect();
        if json {
            let line = serde_json::json!({
                "id": p.id, "m": p.m, "n": p.n, "k": p.k,
                "a_fmt": p.a_fmt.name(), "b_fmt": p.b_fmt.name(), "c_fmt": p.c_fmt.name(), "d_fmt": p.d_fmt().name(),
                "min_cc": [p.min_cc.0, p.min_cc.1], "runs": runs, "models": archs,
            });
            println!("{line}");
        } else {
            // C's format, or "C>D" where D is wider (m8n8k4 f16 C into f32 D).
            let cd = if p.d_fmt() == p.c_fmt { p.c_fmt.name().to_string() } else { format!("{}>{}", p.c_fmt.name(), p.d_fmt().name()) };
            println!("{:<44} {:>3}x{:<3}x{:<3} {:>4}/{:<4} -> {:<8} {:<16} {}", p.id, p.m, p.n, p.k, p.a_fmt.name(), p.b_fmt.name(), cd, runs, archs.join(" "));
        }
    }
    Ok(ExitCode::SUCCESS)
}
