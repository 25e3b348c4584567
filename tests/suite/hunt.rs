//! `mmafuzz hunt` on the CPU, as a user runs it: planted differences are found and minimised,
//! a model hunted against itself finds nothing, a killed hunt loses nothing, resumes continue,
//! and unreadable findings are named and skipped.

use mmafuzz::hunt::finding::{read_all, Finding};
use mmafuzz::hunt::HuntState;
use std::path::Path;
use std::process::{Command, Output};

const PATH: &str = "mma.m16n8k16.f32.f16.f16.f32";

fn hunt(dir: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmafuzz"))
        .args(["hunt", "--findings"])
        .arg(dir)
        .args(extra)
        .output()
        .expect("binary runs")
}

fn findings(dir: &Path) -> Vec<Finding> {
    let (ok, bad) = read_all(dir);
    assert!(bad.is_empty(), "{bad:?}");
    ok.into_iter().map(|(_, f)| f).collect()
}

/// Nonzero terms of a finding's minimised element, C counted as one, from its inputs.
fn terms(f: &Finding) -> usize {
    let case = mmafuzz::MmaCase::from_json(f.minimised.as_object().unwrap().clone()).unwrap();
    let [i, j] = f.minimised_element;
    let p = mmafuzz::hunt::probe::Probe::from_tile(&case, i, j);
    p.simplicity().terms
}

#[test]
fn a_model_against_itself_finds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = hunt(dir.path(), &["--model", "h100", "--against", "h100", "--tiles", "3000"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("divergent: 0 tiles, 0 elements"), "{text}");
    assert!(findings(dir.path()).is_empty());
}

#[test]
fn fma_chain_against_exact_is_found_and_minimised() {
    let dir = tempfile::tempdir().unwrap();
    let out = hunt(dir.path(), &["--model", "fma-chain-rne", "--against", "exact-rne", "--tiles", "512", "--per-class", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let all = findings(dir.path());
    assert!(!all.is_empty());
    for f in &all {
        assert_ne!(f.a.bits, f.b.bits, "{}", f.summary);
        // The minimised case really diverges: re-run both models on it.
        let case = mmafuzz::MmaCase::from_json(f.minimised.as_object().unwrap().clone()).unwrap();
        let [i, j] = f.minimised_element;
        let run = |m: &str| mmafuzz::Emulator::new(mmafuzz::Model::load(m).unwrap()).run_element(&case, i, j).unwrap();
        assert_ne!(run("exact-rne"), run("fma-chain-rne"), "{}", f.summary);
        assert!(terms(f) < 17, "{}", f.summary);
    }
    // A chain of roundings against one rounding needs at least two rounded steps.
    assert!(all.iter().any(|f| terms(f) <= 3), "{:?}", all.iter().map(|f| &f.summary).collect::<Vec<_>>());
}

#[test]
fn v100_against_h100_is_minimised_to_at_most_four_terms() {
    let dir = tempfile::tempdir().unwrap();
    let out = hunt(dir.path(), &["--model", "v100", "--against", "h100", "--tiles", "2048", "--seed", "7"]);
    assert_eq!(out.status.code(), Some(1));
    let all = findings(dir.path());
    assert!(all.len() >= 10, "{}", all.len());
    for f in &all {
        assert!(terms(f) <= 4, "{} ({})", f.summary, f.class);
        assert!(f.explanation.contains("h100") && f.explanation.contains("v100"), "{}", f.explanation);
    }
    // The hypotheses differ in block width and alignment bits; single-knob changes say so.
    let knobs: String = all.iter().flat_map(|f| f.knob_changes.clone()).collect::<Vec<_>>().join(" ");
    assert!(knobs.contains("blocks.width") || knobs.contains("align.extra_bits"), "{knobs}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("minimised cases by nonzero terms"), "{text}");
}

#[test]
fn resume_continues_where_the_hunt_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--model", "v100", "--against", "h100", "--per-class", "0", "--batch", "500"];
    assert_eq!(hunt(dir.path(), &[&args[..], &["--tiles", "1000"]].concat()).status.code(), Some(1));
    let file = dir.path().join(PATH).join("hunt-h100-vs-v100.state.json");
    let first = HuntState::load(&file).unwrap();
    assert_eq!((first.tiles, first.next_tile), (1000, 1000));
    assert_eq!(hunt(dir.path(), &[&args[..], &["--tiles", "2000", "--resume"]].concat()).status.code(), Some(1));
    let second = HuntState::load(&file).unwrap();
    assert_eq!((second.tiles, second.next_tile), (2000, 2000));
    assert!(second.divergent_elements > first.divergent_elements);
    // The same 2000 tiles in one go count the same divergences.
    let fresh = tempfile::tempdir().unwrap();
    hunt(fresh.path(), &[&args[..], &["--tiles", "2000"]].concat());
    let once = HuntState::load(&fresh.path().join(PATH).join("hunt-h100-vs-v100.state.json")).unwrap();
    assert_eq!(once.divergent_elements, second.divergent_elements);
}

#[test]
fn sigkill_loses_no_reported_finding_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmafuzz"))
        .args(["hunt", "--model", "v100", "--against", "h100", "--time", "600s", "--per-class", "50", "--findings"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sub = dir.path().join(PATH);
    let start = std::time::Instant::now();
    // Killed as soon as five findings are on disk; a slow, loaded machine gets five minutes.
    while start.elapsed().as_secs() < 300 {
        let n = std::fs::read_dir(&sub).map(|d| d.filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "md")).count()).unwrap_or(0);
        if n >= 5 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = findings(dir.path());
    assert!(before.len() >= 5, "{}", before.len());
    let state = HuntState::load(&sub.join("hunt-h100-vs-v100.state.json"));
    // The state file is either absent (killed before the first batch ended) or whole.
    if sub.join("hunt-h100-vs-v100.state.json").exists() {
        state.unwrap();
    }
    // A new hunt in the same place removes the dead process's temporaries and keeps every finding.
    hunt(dir.path(), &["--model", "v100", "--against", "h100", "--tiles", "10", "--per-class", "0"]);
    let names: Vec<String> = std::fs::read_dir(&sub).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    let after = findings(dir.path());
    for f in &before {
        assert!(after.iter().any(|g| g.id == f.id), "lost {}", f.id);
    }
}

#[test]
fn unreadable_findings_are_named_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join(PATH);
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("0123456789abcdef.md"), "# half a finding\n```json\n{\"id\": ").unwrap();
    let out = hunt(dir.path(), &["--model", "h100", "--against", "h100", "--tiles", "10"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("0123456789abcdef.md"), "{err}");
}

#[test]
fn bad_arguments_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = hunt(dir.path(), &["--model", "h100", "--against", "exact"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--time"));
    let out = hunt(dir.path(), &["--path", "mma.nonsense", "--tiles", "1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown path"));
    let out = hunt(dir.path(), &["--time", "ten minutes"]);
    assert_eq!(out.status.code(), Some(2));
    // --against gpu without a GPU: one clear line, no panic.
    let out = hunt(dir.path(), &["--against", "gpu", "--tiles", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn ctrl_c_stops_after_the_batch_and_prints_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_mmafuzz"))
        .args(["hunt", "--model", "v100", "--against", "h100", "--time", "900s", "--findings"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let state = dir.path().join(PATH).join("hunt-h100-vs-v100.state.json");
    let start = std::time::Instant::now();
    // Interrupted once the first batch is saved; a slow, loaded machine gets five minutes.
    while !state.exists() && start.elapsed().as_secs() < 300 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(state.exists(), "no batch finished within 300 s");
    let interrupted = std::time::Instant::now();
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    // The hunt runs 900 s unless stopped: it stops after the batch, well before that.
    assert!(interrupted.elapsed().as_secs() < 450, "Ctrl-C did not stop the hunt");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("divergent:") && stdout.contains("findings:"), "{stdout}");
    let saved = HuntState::load(&state).unwrap();
    assert!(saved.tiles > 0);
    assert_eq!(findings(dir.path()).len() as u64, saved.findings_new);
}
