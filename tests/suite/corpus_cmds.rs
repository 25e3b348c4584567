//! The corpus commands: duplicates go, promoted findings keep their minimised form and
//! provenance, and a minimised corpus refutes everything the whole one refutes.

use mmafuzz::exec::path_by_id;
use mmafuzz::model::knobs::single_knob_changes;
use mmafuzz::replay::read_corpus;
use mmafuzz::{gen, Emulator, Model};
use std::process::Command;

const PATH: &str = "mma.m16n8k16.f32.f16.f16.f32";

fn recorded(model: &Model, tiles: u64) -> Vec<String> {
    let p = path_by_id(PATH).unwrap();
    let emu = Emulator::new(model.clone());
    (0..tiles)
        .map(|i| {
            let mut c = gen::case_at(p, 3, i);
            c.extra.insert("provenance".into(), serde_json::json!({"gpu": "test", "cc": "9.0", "driver": "13.0", "path": PATH, "date": "2026-11-22", "tool": "test"}));
            c.result_json(&emu.run(&c).unwrap())
        })
        .collect()
}

#[test]
fn dedup_removes_repeats_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let lines = recorded(&Model::load("h100").unwrap(), 5);
    let file = dir.path().join(format!("{PATH}.jsonl.gz"));
    let with_repeats = [&lines[..], &lines[1..3]].concat();
    mmafuzz::store::append_lines_atomically(&file, &with_repeats).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(["corpus", "dedup", "--corpus"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("5 tiles, 2 repeats removed"));
    let (cases, bad) = read_corpus(&file).unwrap();
    assert!(bad.is_empty());
    assert_eq!(cases.len(), 5);
    let stats = mmafuzz::corpus::stats(&file).unwrap();
    assert_eq!((stats.tiles, stats.distinct, stats.elements), (5, 5, 640));
}

#[test]
fn a_minimised_corpus_refutes_what_the_whole_one_refutes() {
    let model = Model::load("h100").unwrap();
    let lines = recorded(&model, 300);
    let cases: Vec<_> = lines.iter().map(|l| {
        let c = mmafuzz::MmaCase::from_json_line(l).unwrap();
        let d = c.recorded_d().unwrap().unwrap();
        (c, d)
    }).collect();
    let keep = mmafuzz::corpus::minimise(&cases, &model);
    assert!(!keep.is_empty() && keep.len() < cases.len() / 4, "{}", keep.len());
    let refuted_by = |subset: &[usize], m: &Model| {
        let e = Emulator::new(m.clone());
        subset.iter().any(|&i| e.run(&cases[i].0).unwrap() != cases[i].1)
    };
    let all: Vec<usize> = (0..cases.len()).collect();
    let mut refuted = 0;
    for (change, alt) in single_knob_changes(&model, mmafuzz::Format::F16) {
        if refuted_by(&all, &alt) {
            refuted += 1;
            assert!(refuted_by(&keep, &alt), "{change} is refuted by the corpus but not by the minimised set");
        }
    }
    assert!(refuted > 10, "{refuted}");
}

#[test]
fn promoted_findings_keep_the_minimised_tile_and_gpu_output() {
    let dir = tempfile::tempdir().unwrap();
    // A finding as the hunt writes it: GPU is side A, its output in the minimised case's "d".
    let model = Model::load("h100").unwrap();
    let line = &recorded(&model, 1)[0];
    let mut case = mmafuzz::MmaCase::from_json_line(line).unwrap();
    let d = case.recorded_d().unwrap().unwrap();
    case.extra.clear();
    let mut minimised = serde_json::Value::Object(case.to_json());
    minimised["d"] = d.iter().map(|x| serde_json::Value::String(format!("{x:08x}"))).collect();
    minimised["d_b"] = minimised["d"].clone();
    let side = |s: &str, detail: &str| mmafuzz::hunt::finding::SideOutput { side: s.into(), detail: detail.into(), bits: "0".into(), value: "0".into() };
    let f = mmafuzz::hunt::finding::Finding {
        id: "00000000000000ff".into(),
        path: PATH.into(),
        class: "x".into(),
        hunt_class: None,
        summary: "x".into(),
        a: side("gpu", &format!("NVIDIA H100 80GB HBM3 x1 (cc 9.0, driver 13.0) running {PATH}")),
        b: side("h100", "model"),
        exact: "1".into(),
        exact_nearest: "0".into(),
        explanation: "x".into(),
        knob_changes: vec![],
        minimised,
        minimised_element: [0, 0],
        original: serde_json::json!({}),
        original_element: [0, 0],
        rounds: 1,
        evaluated: 1,
        seen: 1,
        first_seen: "2026-11-22".into(),
        last_seen: "2026-11-22".into(),
    };
    let mut ext = f.clone();
    mmafuzz::hunt::finding::store(&dir.path().join("findings"), f, &mut vec![]).unwrap();
    let (lines, problems) = mmafuzz::corpus::findings_as_lines(&dir.path().join("findings"), PATH, &[], None);
    assert!(problems.is_empty());
    assert_eq!(lines.len(), 1);
    let promoted = mmafuzz::MmaCase::from_json_line(&lines[0]).unwrap();
    assert_eq!((promoted.a.clone(), promoted.b.clone(), promoted.c.clone()), (case.a.clone(), case.b.clone(), case.c.clone()));
    assert_eq!(promoted.recorded_d().unwrap().unwrap(), d);
    let p = &promoted.extra["provenance"];
    assert_eq!((p["gpu"].as_str(), p["cc"].as_str(), p["driver"].as_str()), (Some("NVIDIA H100 80GB HBM3"), Some("9.0"), Some("13.0")));
    // Already in the corpus: not promoted twice.
    let existing = vec![(promoted.clone(), d.clone())];
    assert!(mmafuzz::corpus::findings_as_lines(&dir.path().join("findings"), PATH, &existing, None).0.is_empty());
    // A GPU finding is not an oracle's: promoting an oracle's findings leaves it out.
    assert!(mmafuzz::corpus::findings_as_lines(&dir.path().join("findings"), PATH, &[], Some("MMA-Sim")).0.is_empty());
    // An external oracle's finding against a model (side B here, its output in "d_b"): promoted
    // only when asked, labelled with what the oracle is, never into the GPU's corpus.
    ext.id = "00000000000000fe".into();
    ext.a = side("h100", "model");
    ext.b = side("external", "external oracle `python3 scripts/mmasim-oracle.py` (Npz protocol)");
    let mut d_ext = d.clone();
    d_ext[0] ^= 1;
    ext.minimised["d_b"] = d_ext.iter().map(|x| serde_json::Value::String(format!("{x:08x}"))).collect();
    mmafuzz::hunt::finding::store(&dir.path().join("other"), ext, &mut vec![]).unwrap();
    assert!(mmafuzz::corpus::findings_as_lines(&dir.path().join("other"), PATH, &[], None).0.is_empty());
    let (lines, _) = mmafuzz::corpus::findings_as_lines(&dir.path().join("other"), PATH, &[], Some("MMA-Sim 2.1.1 Hopper model, not hardware"));
    assert_eq!(lines.len(), 1);
    let promoted = mmafuzz::MmaCase::from_json_line(&lines[0]).unwrap();
    assert_eq!(promoted.recorded_d().unwrap().unwrap(), d_ext);
    assert_eq!(promoted.extra["provenance"]["oracle"].as_str(), Some("MMA-Sim 2.1.1 Hopper model, not hardware"));
}

#[test]
fn compact_stores_generated_tiles_by_seed_and_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{PATH}.jsonl.gz"));
    let mut lines = recorded(&Model::load("sm90:mma.m16n8k16.f32.f16.f16.f32").unwrap(), 200);
    // A hand-made tile (no seed) keeps its inputs.
    lines.push(r#"{"a_fmt":"f16","c_fmt":"f32","m":1,"n":1,"k":1,"a":["3c00"],"b":["3c00"],"c":["80000001"],"d":["3f800000"]}"#.into());
    mmafuzz::store::append_lines_atomically(&file, &lines).unwrap();
    let before_bytes = std::fs::metadata(&file).unwrap().len();
    let (before, _) = read_corpus(&file).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(["corpus", "compact", "--corpus"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (after, bad) = read_corpus(&file).unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(after.len(), before.len());
    for ((c, d), (c0, d0)) in after.iter().zip(&before) {
        assert_eq!((&c.a, &c.b, &c.c, d), (&c0.a, &c0.b, &c0.c, d0));
    }
    let text = String::from_utf8(mmafuzz::store::read_text(&file).unwrap()).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert!(rows[..200].iter().all(|l| !l.contains("\"a\":") && l.contains("\"d_steps\"") && l.contains("\"inputs\"")), "{:.200}", rows[0]);
    assert!(rows[200].contains("\"a\":[\"3c00\"]"), "{}", rows[200]);
    let after_bytes = std::fs::metadata(&file).unwrap().len();
    assert!(after_bytes * 4 < before_bytes, "{before_bytes} -> {after_bytes} bytes");
}
