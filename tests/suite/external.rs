//! External oracles (`external:CMD`, `external-npz:CMD`) as users run them: another mmafuzz
//! behind `mmafuzz serve` stands where the GPU stands for `replay`, `hunt` and `discover`, in
//! both protocols; an oracle that fails says so and nothing panics.

use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_mmafuzz");
const PATH: &str = "mma.m16n8k16.f32.f16.f16.f32";

fn mmafuzz(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("binary runs")
}

fn serve(protocol: &str, model: &str) -> String {
    let prefix = if protocol == "npz" { "external-npz" } else { "external" };
    format!("{prefix}:{BIN} serve --protocol {protocol} --model {model}")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The GPU corpus through an oracle running the path's model: every tile, both protocols; and
/// through one running V100's arithmetic: not every tile.
#[test]
fn replay_against_an_external_oracle() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let corpus = corpus.to_str().unwrap();
    for protocol in ["jsonl", "npz"] {
        let right = serve(protocol, &mmafuzz::model::default_name(&PATH));
        let wrong = serve(protocol, "v100");
        let o = mmafuzz(&["replay", "--corpus", corpus, "--filter", PATH, "--models", "", "--oracle", &right, "--oracle", &wrong]);
        assert!(o.status.success(), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let row = out.lines().find(|l| l.starts_with(PATH)).unwrap_or_else(|| panic!("{out}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], "100.0%", "{protocol}: {out}");
        let tiles: usize = cols[2].parse().unwrap();
        assert!(tiles >= 5000, "{out}");
        assert_ne!(cols[3], "100.0%", "{protocol}: {out}");
        assert!(out.contains("oracle 2") && out.contains("not reproduced"), "{out}");
    }
}

/// A hunt against an oracle of the same arithmetic finds nothing; against a different one it
/// finds and minimises the difference.
#[test]
fn hunt_against_an_external_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let same = serve("npz", "h100");
    let o = mmafuzz(&["hunt", "--path", PATH, "--model", "h100", "--against", &same, "--tiles", "2000", "--findings", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("divergent: 0 tiles, 0 elements"), "{}", text(&o));

    let dir = tempfile::tempdir().unwrap();
    let other = serve("jsonl", "v100");
    let o = mmafuzz(&["hunt", "--path", PATH, "--model", "h100", "--against", &other, "--tiles", "512", "--per-class", "1", "--findings", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let (found, bad) = mmafuzz::hunt::finding::read_all(dir.path());
    assert!(bad.is_empty() && !found.is_empty(), "{}", text(&o));
    for (_, f) in &found {
        // The minimised case really splits the two arithmetics.
        let case = mmafuzz::MmaCase::from_json(f.minimised.as_object().unwrap().clone()).unwrap();
        let [i, j] = f.minimised_element;
        let run = |m: &str| mmafuzz::Emulator::new(mmafuzz::Model::load(m).unwrap()).run_element(&case, i, j).unwrap();
        assert_ne!(run("v100"), run("h100"), "{}", f.summary);
    }
}

/// Discovery with an oracle process instead of a GPU keeps the arithmetic the oracle has.
#[test]
fn discover_against_an_external_oracle() {
    let oracle = serve("npz", &mmafuzz::model::default_name(&PATH));
    let o = mmafuzz(&["discover", "--path", PATH, "--oracle", &oracle, "--max-tiles", "3000", "--seconds", "120"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Oracles that fail: one that exits, one that echoes its input, one that is not there. Each is
/// an error that names the oracle and the reason; none panics.
#[test]
fn failing_oracles_are_clear_errors() {
    let cases = [
        ("external:exit 3", "exited"),
        ("external:cat", "no \"d\""),
        ("external-npz:head -c 5", "answer"),
        ("external:/no/such/oracle", "exited"),
    ];
    for (spec, says) in cases {
        let o = mmafuzz(&["hunt", "--path", PATH, "--against", spec, "--tiles", "64"]);
        let all = text(&o);
        assert_eq!(o.status.code(), Some(2), "{spec}: {all}");
        assert!(all.contains("external oracle") && all.contains(says), "{spec}: {all}");
        assert!(!all.contains("panicked"), "{spec}: {all}");
    }
}

/// `mmafuzz serve` answers a bad line with an error line and keeps going.
#[test]
fn serve_answers_bad_lines_and_keeps_going() {
    let mut child = Command::new(BIN)
        .args(["serve", "--model", "exact"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let good = r#"{"a_fmt":"f16","c_fmt":"f32","m":1,"n":1,"k":2,"a":["3c00","3c00"],"b":["3c00","0001"],"c":["00000000"]}"#;
    let input = format!("{good}\n{{\"a_fmt\": 1}}\n\n{good}\n\n");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    // 1 + 2^-24 in f32 rounds to 1: the exact reference rounded to nearest.
    assert_eq!(lines, [r#"{"d":["3f800000"]}"#, lines[1], "", r#"{"d":["3f800000"]}"#, ""], "{lines:?}");
    assert!(lines[1].starts_with(r#"{"error":"#), "{lines:?}");
}
