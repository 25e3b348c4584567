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

#[test]
fn discovery_finds_a_model_of_the_widening_path() {
    use mmafuzz::hunt::side::Side;
    use mmafuzz::infer::discover::{discover, DiscoverConfig};
    use mmafuzz::infer::observe::{element_case, plain_element};
    use std::time::Duration;
    let p = path_by_id(PATH).unwrap();
    // Element cases of a widened tile keep D's format, and plainness reads D in it: an f32
    // result read as f16 bits would make every model refute itself.
    let tile = &tiles(1, 4)[0];
    let d = Emulator::new(Model::load("exact-rne").unwrap()).run(tile).unwrap();
    assert_eq!(element_case(tile, 2, 3).d_fmt, Format::F32);
    let plain = (0..64).filter(|&idx| plain_element(tile, idx / 8, idx % 8, d[idx])).count();
    let by_f32 = (0..64).filter(|&idx| Format::F32.decode(d[idx]).class == mmafuzz::format::Class::Finite).count();
    assert!(plain <= by_f32);
    // The oracle: Volta's f32-C model adding f16 C. Discovery from that model's knobs must keep
    // a model that reproduces every tile the oracle ran and fresh ones.
    let truth = Model::load("volta:mma.m8n8k4.f32.f16.f16.f32").unwrap();
    let base = truth.arithmetic(Format::F16).clone();
    let oracle = Side::model(truth.clone());
    let cfg = DiscoverConfig { seed: 5, pool: 512, batch: 128, sample: 24, max_tiles: 2000, max_time: Duration::from_secs(120), screen_above: 50_000 };
    let found = discover(p, &oracle, &base, &cfg, |_| {}).unwrap();
    assert!(!found.survivors.is_empty(), "{}", found.ending);
    let best = Emulator::new(mmafuzz::model::knobs::model_of("found", found.best.as_ref().unwrap()).unwrap());
    for (t, d) in &found.decided_by {
        assert_eq!(&best.run(t).unwrap(), d);
    }
    let truth = Emulator::new(truth);
    for t in tiles(500, 6) {
        assert_eq!(best.run(&t).unwrap(), truth.run(&t).unwrap());
    }
}
