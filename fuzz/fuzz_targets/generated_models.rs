//! libFuzzer drives the hunt's own generators (`gen::ArbitraryCase`: recipes, exponent gaps,
//! significand shapes chosen by the fuzzer's bytes) through every path's shape; on each case the
//! `exact-rne` emulator must equal MPFR, and the lane kernel must equal the general path under
//! the H100 hypothesis. Integer paths: the exact integer model clamping into s32 must equal
//! MPFR's exact value clamped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmafuzz::gen::ArbitraryCase;
use mmafuzz::{exact, Emulator, Model, Rounding};

fuzz_target!(|input: ArbitraryCase| {
    let case = input.case;
    if case.m * case.n * case.k > 64 * 8 * 32 {
        return;
    }
    let exact_model = if case.c_fmt.is_integer() {
        Model::from_toml("s32-saturate", "base = \"s32-exact\"\n[accumulator]\noverflow = \"saturate\"\n").unwrap()
    } else {
        Model::load("exact-rne").unwrap()
    };
    let got = Emulator::new(exact_model).run(&case).unwrap();
    for (i, x) in exact::exact_tile(&case).iter().enumerate() {
        assert_eq!(got[i], x.round(case.c_fmt, Rounding::Rne), "{} element {i}: {}", input.path, case.result_json(&got));
    }
    if case.c_fmt.is_integer() {
        return;
    }
    let h100 = Model::load("h100").unwrap();
    let fast = Emulator::new(h100.clone()).run(&case).unwrap();
    let general = Emulator::general_only(h100).run(&case).unwrap();
    assert_eq!(fast, general, "{}: {}", input.path, case.result_json(&fast));
});
