//! The emulator under `exact-rne` must equal MPFR's round-to-nearest-even on every input.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use mmafuzz::{exact, Emulator, Model, Rounding};

fuzz_target!(|input: common::FuzzCase| {
    let Some(case) = input.case() else { return };
    let emu = Emulator::new(Model::load("exact-rne").unwrap());
    let got = emu.run(&case).unwrap();
    for (i, x) in exact::exact_tile(&case).iter().enumerate() {
        assert_eq!(got[i], x.round(case.c_fmt, Rounding::Rne), "element {i}: {}", case.result_json(&got));
    }
});
