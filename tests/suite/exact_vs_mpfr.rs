//! The emulator under `exact-rne` against the independent MPFR reference: bitwise equal on
//! 10^5 random and edge-biased cases per format pair, subnormal and overflow results included.
//! And `fma-chain-rne` against a chain of the standard library's fused multiply-adds.

use mmafuzz::format::{Class, Format, Rounding};
use mmafuzz::{exact, gen, Emulator, MmaCase, Model};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

const CASES_PER_PAIR: usize = 100_000;

fn random_case(seed: u64, a_fmt: Format, c_fmt: Format) -> MmaCase {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let (m, n) = if rng.gen_bool(0.1) { (2, 2) } else { (1, 1) };
    let k = rng.gen_range(1..=33);
    gen::case(&mut rng, a_fmt, c_fmt, m, n, k)
}

#[derive(Default)]
struct Tally {
    elements: usize,
    subnormal: usize,
    overflow: usize,
    nan: usize,
    zero: usize,
    mismatches: Vec<String>,
}

fn check_pair(a_fmt: Format, c_fmt: Format, salt: u64) -> Tally {
    let emu = Emulator::new(Model::load("exact-rne").unwrap());
    let tallies: Vec<Tally> = (0..CASES_PER_PAIR as u64 / 1000)
        .into_par_iter()
        .map(|chunk| {
            let mut t = Tally::default();
            for s in 0..1000 {
                let case = random_case(salt ^ (chunk * 1000 + s), a_fmt, c_fmt);
                let got = emu.run(&case).unwrap();
                for (idx, x) in exact::exact_tile(&case).iter().enumerate() {
                    let want = x.round(c_fmt, Rounding::Rne);
                    t.elements += 1;
                    let d = c_fmt.decode(want);
                    match d.class {
                        Class::Nan => t.nan += 1,
                        Class::Inf if matches!(x, exact::Exact::Finite(_)) => t.overflow += 1,
                        Class::Zero => t.zero += 1,
                        Class::Finite if d.sig >> (c_fmt.precision() - 1) == 0 => t.subnormal += 1,
                        _ => {}
                    }
                    if got[idx] != want && t.mismatches.len() < 5 {
                        t.mismatches.push(format!(
                            "element {idx}: emulator {:x}, MPFR {:x}, exact {}\n  {}",
                            got[idx],
                            want,
                            x.describe(),
                            case.result_json(&got)
                        ));
                    }
                }
            }
            t
        })
        .collect();
    let mut total = Tally::default();
    for t in tallies {
        total.elements += t.elements;
        total.subnormal += t.subnormal;
        total.overflow += t.overflow;
        total.nan += t.nan;
        total.zero += t.zero;
        total.mismatches.extend(t.mismatches);
    }
    total
}

fn assert_pair(a_fmt: Format, c_fmt: Format, overflow_possible: bool) {
    let t = check_pair(a_fmt, c_fmt, (a_fmt as u64) << 32 | c_fmt as u64);
    assert!(t.mismatches.is_empty(), "{a_fmt}->{c_fmt}: mismatches:\n{}", t.mismatches.join("\n"));
    assert!(t.elements >= CASES_PER_PAIR);
    assert!(t.subnormal > 100, "{a_fmt}->{c_fmt}: only {} subnormal results", t.subnormal);
    assert!(t.nan > 100 && t.zero > 100, "{a_fmt}->{c_fmt}: {} NaN, {} zero results", t.nan, t.zero);
    if overflow_possible {
        assert!(t.overflow > 20, "{a_fmt}->{c_fmt}: only {} overflows of finite sums", t.overflow);
    }
}

#[test]
fn exact_rne_equals_mpfr_f16_f32() {
    assert_pair(Format::F16, Format::F32, false);
}
#[test]
fn exact_rne_equals_mpfr_f16_f16() {
    assert_pair(Format::F16, Format::F16, true);
}
#[test]
fn exact_rne_equals_mpfr_bf16_f32() {
    assert_pair(Format::Bf16, Format::F32, true);
}
#[test]
fn exact_rne_equals_mpfr_bf16_bf16() {
    assert_pair(Format::Bf16, Format::Bf16, true);
}
#[test]
fn exact_rne_equals_mpfr_tf32_f32() {
    assert_pair(Format::Tf32, Format::F32, true);
}
#[test]
fn exact_rne_equals_mpfr_e4m3_f32() {
    assert_pair(Format::E4m3, Format::F32, false);
}
#[test]
fn exact_rne_equals_mpfr_e5m2_f32() {
    assert_pair(Format::E5m2, Format::F32, false);
}
#[test]
fn exact_rne_equals_mpfr_f64_f64() {
    assert_pair(Format::F64, Format::F64, true);
}

/// fma-chain-rne is a chain of IEEE fmas: compare with f32::mul_add / f64::mul_add.
#[test]
fn fma_chain_equals_std_mul_add() {
    let emu = Emulator::new(Model::load("fma-chain-rne").unwrap());
    let pairs = [
        (Format::F16, Format::F32),
        (Format::F16, Format::F16),
        (Format::Bf16, Format::F32),
        (Format::Tf32, Format::F32),
        (Format::E4m3, Format::F32),
        (Format::E5m2, Format::F32),
        (Format::F64, Format::F64),
    ];
    for (a_fmt, c_fmt) in pairs {
        for seed in 0..20_000u64 {
            let case = random_case(seed ^ 0xfa11, a_fmt, c_fmt);
            let got = emu.run(&case).unwrap();
            let val = |f: Format, bits: u64| f.decode(bits).to_f64();
            for i in 0..case.m {
                for j in 0..case.n {
                    let want = if a_fmt == Format::F64 {
                        let mut d = val(c_fmt, case.c_at(i, j));
                        for kk in 0..case.k {
                            d = val(a_fmt, case.a_at(i, kk)).mul_add(val(a_fmt, case.b_at(kk, j)), d);
                        }
                        d.to_bits()
                    } else {
                        // Every input format converts exactly to f32.
                        let mut d = val(c_fmt, case.c_at(i, j)) as f32;
                        for kk in 0..case.k {
                            let (a, b) = (val(a_fmt, case.a_at(i, kk)) as f32, val(a_fmt, case.b_at(kk, j)) as f32);
                            d = a.mul_add(b, d);
                        }
                        if c_fmt == Format::F16 {
                            half::f16::from_f32(d).to_bits() as u64
                        } else {
                            d.to_bits() as u64
                        }
                    };
                    let g = got[i * case.n + j];
                    let both_nan = c_fmt.decode(g).is_nan() && c_fmt.decode(want).is_nan();
                    assert!(
                        g == want || both_nan,
                        "{a_fmt}->{c_fmt} ({i},{j}): emulator {g:x}, mul_add chain {want:x}\n{}",
                        case.result_json(&got)
                    );
                }
            }
        }
    }
}
