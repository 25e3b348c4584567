//! The vectorised lane kernel must equal the general block code under every shipped model.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use mmafuzz::model::embedded_model_names;
use mmafuzz::{Emulator, Model};

fuzz_target!(|input: (u8, common::FuzzCase)| {
    let Some(case) = input.1.case() else { return };
    let names = embedded_model_names();
    let model = Model::load(names[input.0 as usize % names.len()]).unwrap();
    let fast = Emulator::new(model.clone()).run(&case).unwrap();
    let general = Emulator::general_only(model).run(&case).unwrap();
    assert_eq!(fast, general, "{}", case.result_json(&general));
});
