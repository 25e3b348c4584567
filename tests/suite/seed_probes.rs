//! Every numbered experiment of the seed papers with a published outcome, run on the emulator
//! under the matching published model, must give the published result bit for bit.

use mmafuzz::{probes, Emulator, Model};
use std::collections::BTreeMap;

#[test]
fn every_published_outcome_is_reproduced_by_its_model() {
    let mut emulators: BTreeMap<&str, Emulator> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for p in probes::all() {
        for &(model, published) in &p.published {
            let emu = emulators.entry(model).or_insert_with(|| Emulator::new(Model::load(model).unwrap()));
            let got = emu.run(&p.case).unwrap()[0];
            let want = probes::bits_of(p.case.c_fmt, published);
            checked += 1;
            if got != want {
                let got_v = p.case.c_fmt.decode(got).to_f64();
                failures.push(format!("{} under {model}: published {published:e}, emulated {got_v:e} ({})", p.id, p.what));
            }
        }
    }
    assert!(checked > 150, "only {checked} outcomes checked");
    assert!(failures.is_empty(), "{} of {checked} outcomes differ:\n{}", failures.len(), failures.join("\n"));
}

/// The probes discriminate: each published model disagrees with the exact one on some probe,
/// and the V100 hypotheses of Fasi et al. and Hickmann & Bradford disagree on where C enters.
#[test]
fn probes_tell_the_models_apart() {
    let run = |model: &str, id: &str| {
        let p = probes::all().into_iter().find(|p| p.id == id).unwrap();
        let emu = Emulator::new(Model::load(model).unwrap());
        p.case.c_fmt.decode(emu.run(&p.case).unwrap()[0]).to_f64()
    };
    assert_ne!(run("v100", "hb-c-added-rne"), run("v100-hickmann", "hb-c-added-rne"));
    assert_ne!(run("exact-rne", "fasi-no-guard-digit"), run("v100", "fasi-no-guard-digit"));
    assert_ne!(run("a100", "fttn-1bit-f16"), run("v100", "fttn-1bit-f16"));
    assert_ne!(run("a100", "fttn-blk-fma-width-f16-9"), run("h100", "fttn-blk-fma-width-f16-9"));
}
