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
            let shown: Vec<Format> = if integer { vec![Format::S8] } else { Format::ALL.to_vec() };
            for f in shown {
                let label = if variants.contains(&f) { "its own variant" } else { "base knobs" };
                println!("\n# A in {f} ({label})");
                print!("{}", toml::to_string(m.arithmetic(f))?);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
