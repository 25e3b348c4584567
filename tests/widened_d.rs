//! Instructions whose D is wider than C (`mma.m8n8k4.f32.f16.f16.f16`: C in f16, D in f32, as
//! Volta's and Turing's m8n8k4 offer and MMA-Sim models): D's format travels with every case
//! (`"d_fmt"`), the emulator and MPFR's reference round into it, and every interchange keeps it.

use mmafuzz::corpus::codec::{decode_line, encode_line};
use mmafuzz::exact::exact_tile;
use mmafuzz::exec::{path_by_id, PATHS};
use mmafuzz::format::{Format, Rounding};
use mmafuzz::npz::Batch;
use mmafuzz::{gen, Emulator, MmaCase, Model};

const PATH: &str = "mma.m8n8k4.f32.f16.f16.f16";

fn tiles(count: u64, seed: u64) -> Vec<MmaCase> {
    let p = path_by_id(PATH).unwrap();
    (0..count).map(|i| gen::case_at(p, seed, i)).collect()
}

#[test]
fn only_the_widening_path_has_a_d_other_than_c() {
    let p = path_by_id(PATH).unwrap();
    assert_eq!((p.c_fmt, p.d_fmt()), (Format::F16, Format::F32));
    for q in PATHS.iter().filter(|q| q.id != PATH) {
        assert_eq!(q.d_fmt(), q.c_fmt, "{}", q.id);
    }
    let c = &tiles(1, 1)[0];
    assert_eq!((c.c_fmt, c.d_fmt), (Format::F16, Format::F32));
    assert!(p.check(c).is_ok());
    // A case that leaves D in C's format is no case of this path, and says why.
    let mut same = c.clone();
    same.d_fmt = Format::F16;
    assert!(p.check(&same).unwrap_err().contains("d_fmt"));
}

#[test]
fn d_fmt_survives_jsonl_npz_and_the_corpus_codec() {
    let p = path_by_id(PATH).unwrap();
    let cases = tiles(40, 2);
    let emu = Emulator::new(Model::load("exact-rne").unwrap());
    let ds: Vec<Vec<u64>> = cases.iter().map(|c| emu.run(c).unwrap()).collect();
    assert!(ds.iter().flatten().any(|&d| d > 0xffff), "D holds f32 bit patterns");
    for (c, d) in cases.iter().zip(&ds) {
        // JSONL: "d_fmt" written, D in eight hex digits, read back the same.
        let line = c.result_json(d);
        assert!(line.contains(r#""c_fmt":"f16","d_fmt":"f32""#), "{line}");
        let back = MmaCase::from_json_line(&line).unwrap();
        assert_eq!(back.d_fmt, Format::F32);
        assert_eq!(back.recorded_d().unwrap().as_ref(), Some(d));
        // Corpus: stored by reference to its seed and regenerated with the path's D format.
        let stored = encode_line(c, d, Some(p), true);
        assert!(!stored.contains(r#""a":"#), "a generated tile is stored by its seed: {stored}");
        let (again, d_again) = decode_line(&stored, Some(p)).unwrap();
        assert_eq!((again.d_fmt, &d_again), (Format::F32, d));
        let (plain, d_plain) = decode_line(&encode_line(c, d, None, false), None).unwrap();
        assert_eq!((plain.d_fmt, &d_plain), (Format::F32, d));
    }
    // npz: D is f32 (four bytes an element) beside f16 C, "d_fmt" in the header.
    let mut batch = Batch::from_cases(&cases).unwrap();
    batch.set_d(0, &ds);
    let read = Batch::from_bytes(&batch.to_bytes(), "test").unwrap();
    assert_eq!((read.c_fmt, read.d_fmt), (Format::F16, Format::F32));
    for (t, d) in ds.iter().enumerate() {
        assert_eq!(read.case(t).unwrap(), {
            let mut c = cases[t].clone();
            c.extra.clear();
            c
        });
        assert_eq!(read.d(t).unwrap().as_ref(), Some(d));
    }
    // One npz holds one D format: a batch mixing them is refused with both named.
    let mut mixed = cases[..2].to_vec();
    mixed[1].d_fmt = Format::F16;
    assert!(Batch::from_cases(&mixed).unwrap_err().to_string().contains("D f32"));
}

#[test]
fn the_emulator_rounds_into_d_and_adds_c_as_its_value() {
    let cases = tiles(300, 3);
    // An exactly rounding model is MPFR rounded once into D (f32), not into C (f16).
    let exact = Emulator::new(Model::load("exact-rne").unwrap());
    let mut wider = 0;
    for c in &cases {
        let want: Vec<u64> = exact_tile(c).iter().map(|x| x.round(Format::F32, Rounding::Rne)).collect();
        assert_eq!(exact.run(c).unwrap(), want);
        let narrow: Vec<u64> = exact_tile(c).iter().map(|x| x.round(Format::F16, Rounding::Rne)).collect();
        wider += want.iter().zip(&narrow).filter(|(w, n)| Format::F32.to_f64(**w) != Format::F16.to_f64(**n)).count();
    }
    assert!(wider > 1000, "f32 D keeps what f16 D would round away: {wider} elements differ");
    // Volta's f32 model on f16 C equals the same model on that C widened exactly to f32 (every
    // f16 value is an f32 value; NaN payloads aside), element for element.
    let volta = Emulator::new(Model::load("volta:mma.m8n8k4.f32.f16.f16.f32").unwrap());
    let mut compared = 0;
    for c in &cases {
        if c.c.iter().any(|&x| Format::F16.decode(x).is_nan()) {
            continue;
        }
        let mut f32_c = c.clone();
        f32_c.c_fmt = Format::F32;
        f32_c.c = c.c.iter().map(|&x| (Format::F16.to_f64(x) as f32).to_bits() as u64).collect();
        assert_eq!(volta.run(c).unwrap(), volta.run(&f32_c).unwrap());
        compared += 1;
    }
    assert!(compared > 150, "{compared} tiles without NaN C");
}
