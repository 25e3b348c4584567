//! Hunts spread over machines: four shards of a hunt run exactly its tiles, and their findings,
//! merged, are the findings of the one hunt; corpus directories merge without repeats.

use mmafuzz::hunt::finding::read_all;
use mmafuzz::hunt::HuntState;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

const PATH: &str = "mma.m16n8k16.f32.bf16.bf16.f32";

fn mmafuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(args).output().expect("binary runs")
}

/// Findings by id with their counts and classes.
fn findings(dir: &Path) -> BTreeMap<String, (u64, String)> {
    let (ok, bad) = read_all(dir);
    assert!(bad.is_empty(), "{bad:?}");
    ok.into_iter().map(|(_, f)| (f.id, (f.seen, f.class))).collect()
}

fn state(dir: &Path) -> Vec<HuntState> {
    let d = dir.join(PATH);
    std::fs::read_dir(&d).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(".state.json")).map(|p| HuntState::load(&p).unwrap()).collect()
}

/// The bf16 model against itself with the window floor one place higher (a plant that diverges
/// on about one tile in a thousand), every divergence minimised: the unsharded hunt and its four
/// shards, merged, find the same cases the same number of times, over the same tiles.
#[test]
fn four_shards_merged_equal_one_hunt() {
    let dir = tempfile::tempdir().unwrap();
    let plant = dir.path().join("plant.toml");
    std::fs::write(&plant, format!("base = \"sm90:{PATH}\"\n[align]\nfloor_below_emin = 6\n")).unwrap();
    let plant = plant.to_str().unwrap();
    let common = ["hunt", "--path", PATH, "--against", &mmafuzz::model::default_name(&PATH) as &str, "--model", plant, "--tiles", "3000", "--seed", "5", "--per-class", "1000000"];
    let whole = dir.path().join("whole");
    let out = mmafuzz(&[&common[..], &["--findings", whole.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "the plant diverges: {}", String::from_utf8_lossy(&out.stderr));
    let mut shards = Vec::new();
    for i in 0..4 {
        let d = dir.path().join(format!("shard{i}"));
        let shard = format!("{i}/4");
        let out = mmafuzz(&[&common[..], &["--shard", &shard, "--findings", d.to_str().unwrap()]].concat());
        assert!(out.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&out.stderr));
        shards.push(d);
    }
    // The shards ran 750 tiles each and together the whole hunt's divergences.
    let whole_state = &state(&whole)[0];
    let shard_states: Vec<HuntState> = shards.iter().flat_map(|d| state(d)).collect();
    assert_eq!(shard_states.len(), 4);
    assert!(shard_states.iter().all(|s| s.tiles == 750 && s.shard.count == 4));
    for (name, get) in [("tiles", (|s: &HuntState| s.tiles) as fn(&HuntState) -> u64), ("divergent tiles", |s| s.divergent_tiles), ("divergent elements", |s| s.divergent_elements)] {
        assert_eq!(shard_states.iter().map(get).sum::<u64>(), get(whole_state), "{name}");
    }
    assert!(whole_state.divergent_elements > 0);
    // The first divergence is named by its hunt-wide tile number in both.
    assert_eq!(shard_states.iter().filter_map(|s| s.first_divergence).min(), whole_state.first_divergence);
    let merged = dir.path().join("merged");
    let mut args = vec!["findings", "merge", "--into", merged.to_str().unwrap()];
    args.extend(shards.iter().map(|d| d.to_str().unwrap()));
    let out = mmafuzz(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let (want, got) = (findings(&whole), findings(&merged));
    assert!(!want.is_empty());
    assert_eq!(got, want);
    // Merging a shard again counts its cases twice: nothing is dropped silently, no file doubles.
    let out = mmafuzz(&["findings", "merge", "--into", merged.to_str().unwrap(), shards[0].to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let again = findings(&merged);
    assert_eq!(again.len(), want.len());
    assert_eq!(again.values().map(|v| v.0).sum::<u64>(), want.values().map(|v| v.0).sum::<u64>() + findings(&shards[0]).values().map(|v| v.0).sum::<u64>());
    // A bad shard is one line, not a panic; guided hunts cannot be sharded.
    let out = mmafuzz(&[&common[..], &["--shard", "4/4"]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("0 <= I < N"));
    let out = mmafuzz(&[&common[..], &["--shard", "1/4", "--guided"]].concat());
    assert_eq!(out.status.code(), Some(2));
}

/// With a per-class cap binding (the V100's model against the H100's: divergent everywhere, a
/// few dozen classes), three shards merged with the same cap keep the findings of the
/// whole hunt: per class the ones met first hunt-wide.
#[test]
fn capped_shards_merged_equal_one_capped_hunt() {
    let dir = tempfile::tempdir().unwrap();
    let common = ["hunt", "--model", "v100", "--against", "h100", "--tiles", "1024", "--batch", "256", "--seed", "5", "--per-class", "1"];
    let run = |name: &str, shard: Option<String>| {
        let d = dir.path().join(name);
        let mut args = common.to_vec();
        args.extend(["--findings", d.to_str().unwrap()]);
        let shard = shard.unwrap_or_default();
        if !shard.is_empty() {
            args.extend(["--shard", &shard]);
        }
        let out = mmafuzz(&args);
        assert_eq!(out.status.code(), Some(1), "the models diverge: {}", String::from_utf8_lossy(&out.stderr));
        d
    };
    let ids = |d: &Path| findings(d).into_keys().collect::<Vec<_>>();
    let whole_dir = run("whole", None);
    let whole = ids(&whole_dir);
    // The run is in the results log, with its totals and the model it hunted.
    let (runs, bad) = mmafuzz::hunt::results::read(&whole_dir.join(mmafuzz::hunt::results::FILE)).unwrap();
    assert!(bad.is_empty() && runs.len() == 1, "{bad:?}");
    assert_eq!((runs[0].tiles, runs[0].seed, runs[0].b.as_str(), runs[0].shard.as_deref()), (1024, 5, "v100", None));
    assert!(runs[0].divergent_elements > 0 && runs[0].findings_new as usize == whole.len());
    assert!(whole.len() >= 10, "the cap binds on many classes: {whole:?}");
    // Three shards: a split that is not a power of two, so shard sizes differ.
    for n in [3] {
        let shards: Vec<_> = (0..n).map(|i| run(&format!("s{n}-{i}"), Some(format!("{i}/{n}")))).collect();
        let merged = dir.path().join(format!("merged{n}"));
        let mut args = vec!["findings", "merge", "--per-class", "1", "--into", merged.to_str().unwrap()];
        args.extend(shards.iter().map(|d| d.to_str().unwrap()));
        let out = mmafuzz(&args);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("left out by --per-class"));
        assert_eq!(ids(&merged), whole, "{n} shards");
        // Without the cap the shards' findings are a superset of the whole hunt's.
        let all = dir.path().join(format!("all{n}"));
        let mut args = vec!["findings", "merge", "--into", all.to_str().unwrap()];
        args.extend(shards.iter().map(|d| d.to_str().unwrap()));
        assert_eq!(mmafuzz(&args).status.code(), Some(0));
        let all = ids(&all);
        assert!(whole.iter().all(|id| all.contains(id)) && all.len() > whole.len(), "{n} shards");
    }
}

/// Two corpus directories with overlapping tiles merge into one file holding each tile once,
/// and merging again adds nothing.
#[test]
fn corpus_directories_merge_without_repeats() {
    let stem = "mma.m16n8k8.f32.f16.f16.f32";
    let file = format!("{stem}.jsonl.gz");
    let (cases, bad) = mmafuzz::replay::read_corpus(&mmafuzz::store::jsonl_file(Path::new("corpus"), stem)).unwrap();
    assert!(bad.is_empty() && cases.len() >= 80);
    let dir = tempfile::tempdir().unwrap();
    let path = mmafuzz::exec::path_by_id("mma.m16n8k8.f32.f16.f16.f32");
    for (name, range) in [("one", 0..50), ("two", 30..80)] {
        let part: Vec<_> = cases[range].iter().collect();
        std::fs::create_dir_all(dir.path().join(name)).unwrap();
        mmafuzz::store::write_lines_atomically(&dir.path().join(name).join(&file), &mmafuzz::replay::corpus_lines(&part, path)).unwrap();
    }
    let into = dir.path().join("merged");
    for _ in 0..2 {
        let out = mmafuzz(&["corpus", "merge", "--into", into.to_str().unwrap(), dir.path().join("one").to_str().unwrap(), dir.path().join("two").to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        // The sources are gzip; the merged file is a new one, xz.
        let (merged, bad) = mmafuzz::replay::read_corpus(&into.join(format!("{stem}.jsonl.xz"))).unwrap();
        assert!(bad.is_empty());
        assert_eq!(merged, cases[..80].to_vec(), "each tile once, in order, GPU outputs intact");
    }
}
