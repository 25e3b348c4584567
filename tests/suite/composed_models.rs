//! Models built from other paths' steps must equal that composition, computed here from
//! independent parts: the H100 mma.sync fp8 models (`blocks.c = "after"`, `blocks.interleave =
//! 2`) against the fp8 values widened to f16, two runs of the f16 path's model on the
//! interleaved halves of K (the first from +0, the second chained onto it) and an IEEE f32
//! addition of C; the cuBLAS models against the instruction's model chained over K from zero
//! and an IEEE addition of C (the GEMM epilogue).

use mmafuzz::{exec::path_by_id, gen, Emulator, Format, MmaCase, Model};

/// The m16n8k16 f16 case holding A's columns and B's rows `ks` (widened exactly to f16).
fn half_of(case: &MmaCase, ks: &[usize], c: Vec<u64>) -> MmaCase {
    let widen = |f: Format, bits: u64| half::f16::from_f64(f.to_f64(bits)).to_bits() as u64;
    let mut h = MmaCase::zeros(Format::F16, Format::F32, case.m, case.n, ks.len());
    for i in 0..case.m {
        for (kk, &k) in ks.iter().enumerate() {
            h.a[i * ks.len() + kk] = widen(case.a_fmt, case.a_at(i, k));
        }
    }
    for (kk, &k) in ks.iter().enumerate() {
        for j in 0..case.n {
            h.b[kk * case.n + j] = widen(case.b_fmt, case.b_at(k, j));
        }
    }
    h.c = c;
    h
}

#[test]
fn fp8_mma_sync_is_two_f16_steps_then_an_f32_add() {
    let f16_step = Emulator::new(Model::load("sm90:mma.m16n8k16.f32.f16.f16.f32").unwrap());
    let (low, high): (Vec<usize>, Vec<usize>) = (0..32).partition(|k| k % 4 < 2);
    let mut checked = 0;
    for fmt in ["e4m3", "e5m2"] {
        let id = format!("mma.m16n8k32.f32.{fmt}.{fmt}.f32");
        let path = path_by_id(&id).unwrap();
        let model = Emulator::new(Model::load(&mmafuzz::model::default_name(&id)).unwrap());
        for index in 0..400 {
            let case = gen::case_at(path, 3, index);
            let got = model.run(&case).unwrap();
            let first = f16_step.run(&half_of(&case, &low, vec![0; case.m * case.n])).unwrap();
            let second = f16_step.run(&half_of(&case, &high, first)).unwrap();
            for e in 0..got.len() {
                let sum = f32::from_bits(case.c[e] as u32) + f32::from_bits(second[e] as u32);
                let want = if sum.is_nan() { 0x7fff_ffff } else { sum.to_bits() as u64 };
                assert_eq!(got[e], want, "{id} tile {index} element {e}: C {:08x}, steps {:08x}", case.c[e], second[e]);
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 2 * 400 * 128);
}

/// The case's K split into `steps` consecutive parts of the instruction's depth.
fn k_slice(case: &MmaCase, ks: std::ops::Range<usize>, c: Vec<u64>) -> MmaCase {
    let mut s = MmaCase::zeros(case.a_fmt, case.c_fmt, case.m, case.n, ks.len());
    for i in 0..case.m {
        for (kk, k) in ks.clone().enumerate() {
            s.a[i * ks.len() + kk] = case.a_at(i, k);
        }
    }
    for (kk, k) in ks.clone().enumerate() {
        for j in 0..case.n {
            s.b[kk * case.n + j] = case.b_at(k, j);
        }
    }
    s.c = c;
    s
}

#[test]
fn cublas_f16_and_bf16_gemms_are_wgmma_steps_from_zero_then_an_f32_add() {
    for (gemm, step) in [("cublas.gemm.f32.f16.f16.f32", "wgmma.m64n8k16.f32.f16.f16"), ("cublas.gemm.f32.bf16.bf16.f32", "wgmma.m64n8k16.f32.bf16.bf16")] {
        let path = path_by_id(gemm).unwrap();
        let model = Emulator::new(Model::load(&mmafuzz::model::default_name(&gemm)).unwrap());
        let step = Emulator::new(Model::load(&mmafuzz::model::default_name(&step)).unwrap());
        for index in 0..12 {
            let case = gen::case_at(path, 8, index);
            let got = model.run(&case).unwrap();
            let mut acc = vec![0u64; case.m * case.n];
            for k0 in (0..case.k).step_by(16) {
                acc = step.run(&k_slice(&case, k0..k0 + 16, acc)).unwrap();
            }
            for e in 0..got.len() {
                let sum = f32::from_bits(case.c[e] as u32) + f32::from_bits(acc[e] as u32);
                let want = if sum.is_nan() { 0x7fff_ffff } else { sum.to_bits() as u64 };
                assert_eq!(got[e], want, "{gemm} tile {index} element {e}");
            }
        }
    }
}

#[test]
fn cublas_f64_gemm_is_an_fma_chain_from_zero_then_an_f64_add() {
    let path = path_by_id("cublas.gemm.f64.f64.f64.f64").unwrap();
    let model = Emulator::new(Model::load("h100:cublas.gemm.f64.f64.f64.f64").unwrap());
    let (mut numbers, mut c_nans) = (0, 0);
    for index in 0..12 {
        let case = gen::case_at(path, 8, index);
        let got = model.run(&case).unwrap();
        for e in 0..got.len() {
            let (i, j) = (e / case.n, e % case.n);
            let acc = (0..case.k).fold(0.0f64, |acc, k| f64::from_bits(case.a_at(i, k)).mul_add(f64::from_bits(case.b_at(k, j)), acc));
            let c = f64::from_bits(case.c[e]);
            if c.is_nan() {
                // The epilogue passes C's NaN on, quieted.
                assert_eq!(got[e], case.c[e] | 1 << 51, "tile {index} element {e}");
                c_nans += 1;
            } else if !acc.is_nan() && !(c + acc).is_nan() {
                assert_eq!(got[e], (c + acc).to_bits(), "tile {index} element {e}");
                numbers += 1;
            }
        }
    }
    assert!(numbers > 5_000 && c_nans > 0, "{numbers} numbers, {c_nans} NaN Cs");
}
