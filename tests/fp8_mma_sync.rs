//! The H100 mma.sync fp8 models (`blocks.c = "after"`, `blocks.interleave = 2`) must equal what
//! the SASS does, built here from independent parts: the fp8 values widened to f16, two runs of
//! the f16 path's model on the interleaved halves of K (the first from +0, the second chained
//! onto it), then C added by an IEEE f32 addition.

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
        let model = Emulator::new(Model::load(&format!("sm90:{id}")).unwrap());
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
