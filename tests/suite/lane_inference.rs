//! `mmafuzz library infer-lanes`: GEMV-like kernels' lane rules inferred from the summation
//! trees FPRev measured on the GPU (corpus/library/fprev/), against the rules written into the
//! models by hand from the same measurements.

use mmafuzz::library::fprev;
use mmafuzz::library::infer_lanes::{candidates, consistent};
use mmafuzz::library::tree::Combine;
use mmafuzz::library::LibraryModel;
use std::process::Command;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus/library/fprev");

type Lanes = (Option<usize>, usize, Option<usize>, Combine, Option<usize>, Option<usize>);

fn fields(r: &mmafuzz::library::schedule::SliceRule) -> Lanes {
    (r.lanes, r.lane_deal, r.lane_chunk_max, r.lanes_combine, r.promote_every, r.lane_blocks)
}

/// Every rule (simplest first) that all unsplit probes of (path, customOption) through torch.mm
/// in `file` agree with: lanes, lane_deal, lane_chunk_max, lanes_combine, promote_every,
/// lane_blocks.
fn inferred(file: &str, path: &str, option: u32) -> Vec<Lanes> {
    let text = mmafuzz::store::read_text(&std::path::Path::new(DIR).join(file)).unwrap();
    let (gpu, probes) = fprev::parse_with_gpu(&text).unwrap();
    let lm = LibraryModel::load(&mmafuzz::library::record::model_of_gpu(&gpu, path), None).unwrap();
    let list = candidates(13, option, false);
    let mut left: Option<Vec<usize>> = None;
    for probe in probes.iter().filter(|p| fprev::library_path(&p.path) == Some(path) && !fprev::through_linear(&p.path)) {
        let config = fprev::config(probe).unwrap().unwrap();
        if config.custom_option() != option || config.split_k != 1 {
            continue;
        }
        let width = |plan: &mmafuzz::library::Plan| lm.fused_width(plan);
        left = Some(consistent(&lm.rules, probe, &config, &list, left.as_deref(), &width));
    }
    left.expect("the file probes this kernel").into_iter().map(|i| fields(&list[i].rule)).collect()
}

/// The model's own rule for customOption `option` of algorithm 13.
fn written(model: &str, option: u32) -> Lanes {
    let lm = LibraryModel::load(model, None).unwrap();
    fields(lm.rules.gemv.iter().find(|r| r.algos == [13] && r.custom_options.as_deref() == Some(&[option])).expect("the model's rule"))
}

#[test]
fn inferred_lane_rules_are_the_ones_written_by_hand() {
    // gemvx with customOption 92 past K = 257 (f16 -> f32, five probes on an H200): 32 lanes,
    // chunks of min(64, ceil(K / 32)) dealt round robin, the butterfly; rules that differ only
    // in restarts longer than any lane's chain at these K agree too.
    let left = inferred("h200-20261204-gemv3.json.xz", "cublas.gemm.f32.f16.f16.f32", 92);
    assert_eq!(left[0], (Some(32), 0, Some(64), Combine::Butterfly, None, None));
    assert!(left.len() <= 4 && left.iter().all(|r| r.4.is_some_and(|p| p >= 128) || r.4.is_none()), "{left:?}");
    // gemvNSP with customOption 10 (f32, five probes on an H100): 24 lanes, blocks of 4 k, as the
    // model holds it (its first rule for n >= 85; the probes' n is 512 to 8192).
    let left = inferred("h100-20261126-co10.json.xz", "cublas.gemm.f32.f32.f32.f32", 10);
    assert_eq!(left[0], written("h100:cublas.gemm.f32.f32.f32.f32", 10));
    // gemv2T with customOption 12 (f32, m x 1, K = 300 and 511): the model's two accumulators
    // per lane for alternate blocks of 256 k, and a chain restarting every 16 of its k, give the
    // same tree up to three blocks: both agree, and the command says so.
    let left = inferred("h100-20261126-co12.json.xz", "cublas.gemm.f32.f32.f32.f32", 12);
    assert!(left.contains(&written("h100:cublas.gemm.f32.f32.f32.f32", 12)) && left.len() >= 2, "{left:?}");
}

#[test]
fn the_command_prints_model_text_and_says_what_it_cannot_infer() {
    let file = format!("{DIR}/h200-20261204-gemv3.json.xz");
    let out = Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(["library", "infer-lanes", &file, "--all"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("[[schedule.gemv]]") && stdout.contains("custom_options = [92]") && stdout.contains("lane_chunk_max = 64"), "{stdout}");
    // Without --all, kernels the model already gives are only named.
    let out = Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(["library", "infer-lanes", &file]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && !stdout.contains("[[schedule.gemv]]") && stdout.contains("the model's rules give every measured pair"), "{stdout}");
    let out = Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(["library", "infer-lanes", "/nonexistent.json"]).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("/nonexistent.json"));
}

/// The GEMV kernels the models did not run, probed with FPRev on an H100 at traced shapes, at
/// half and twice their K, and at shapes of the kernel tables and K between (corpus/library/fprev-gaps/,
/// runs a to e): the lane rules `infer-lanes` gave were added to the models, held to the probed
/// K and layout. Every probe the models now plan agrees in every pair, and GEMMs recorded with
/// their D at other shapes of the same kernels (never probed: `records/` after runs a and b,
/// `records-d/` with run d) are exact or declined, none wrong; and so are every one of 27
/// recorded after the four corrected rules were final, at shapes in their new ranges
/// (`records-corrected/`; report/replay-fprev-gaps.txt).
#[test]
fn inferred_gap_rules_give_the_trees_and_the_recorded_bits() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/library/fprev-gaps");
    let mut models = std::collections::BTreeMap::new();
    let (mut planned, mut probes) = (0, 0);
    for name in ["h100-20261207-gaps-a.json.xz", "h100-20261207-gaps-b.json.xz", "h100-20261207-gaps-c.json.xz", "h100-20261207-gaps-d.json.xz", "h100-20261207-gaps-e.json.xz"] {
        let (gpu, list) = fprev::parse_with_gpu(&mmafuzz::store::read_text(&dir.join(name)).unwrap()).unwrap();
        for probe in list.iter().filter(|p| p.counts.is_some()) {
            probes += 1;
            let model = mmafuzz::library::record::model_of_gpu(&gpu, fprev::library_path(&probe.path).unwrap());
            let lm = models.entry(model.clone()).or_insert_with(|| LibraryModel::load(&model, None).unwrap());
            let config = fprev::config(probe).unwrap().unwrap();
            let Ok(plan) = fprev::plan(&lm.rules, probe, &config) else { continue };
            let a = fprev::compare(&plan, probe, 3, lm.fused_width(&plan));
            assert_eq!(a.agree, a.pairs, "{} {}x{}x{} [{config}]: {:?}", probe.path, probe.m, probe.n, probe.k, a.misses);
            planned += 1;
        }
    }
    assert!(probes >= 990 && planned >= 840, "{planned} of {probes} probes planned");
    for (records, want_gemms, min_exact) in [("records", 76, 31), ("records-d", 86, 54), ("records-corrected", 27, 27)] {
        let mut models = std::collections::BTreeMap::new();
        let mut summary = mmafuzz::library::record::Summary::new();
        for entry in std::fs::read_dir(dir.join(records)).unwrap() {
            let f = entry.unwrap().path();
            let text = String::from_utf8(mmafuzz::store::read_text(&f).unwrap()).unwrap();
            mmafuzz::library::record::replay_text(&text, &mut models, None, &mut summary, |_, _| {}).unwrap_or_else(|(line, e)| panic!("{} line {line}: {e}", f.display()));
        }
        let (mut gemms, mut exact) = (0, 0);
        for ((path, family), t) in &summary {
            assert_eq!(t.exact + t.skipped, t.gemms, "{records}: {path} {family}: {} of {} GEMMs wrong", t.gemms - t.exact - t.skipped, t.gemms);
            gemms += t.gemms;
            exact += t.exact;
        }
        assert_eq!(gemms, want_gemms, "{records}");
        assert!(exact >= min_exact, "{records}: {exact} of {gemms} exact");
    }
}

/// bf16 -> f32 gemvNSP (customOption 10) past n = 8,192, FPRev on an H100 at K = 100 and 28
/// values of n (corpus/library/fprev-gaps/h100-20261207-gaps-f.json.xz): the lanes of 4-k blocks
/// under the butterfly change with n, not monotonically (24 at n = 10,000, 20 at 12,000, 12 at
/// 13,000, 16 at 15,000), so the model declines every one of them and names why.
#[test]
fn gemvnsp_lanes_change_with_n_and_the_model_declines_them() {
    let path = "cublas.gemm.f32.bf16.bf16.f32";
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/library/fprev-gaps/h100-20261207-gaps-f.json.xz");
    let (gpu, probes) = fprev::parse_with_gpu(&mmafuzz::store::read_text(&file).unwrap()).unwrap();
    assert_eq!(probes.len(), 28);
    let lm = LibraryModel::load(&mmafuzz::library::record::model_of_gpu(&gpu, path), None).unwrap();
    let list = candidates(13, 10, false);
    let width = |plan: &mmafuzz::library::Plan| lm.fused_width(plan);
    for probe in &probes {
        let config = fprev::config(probe).unwrap().unwrap();
        assert_eq!((config.algo, config.custom_option(), probe.k), (13, 10, 100));
        let why = lm.rules.plan_layout(probe.m, probe.n, probe.k, &config, false, false).unwrap_err().to_string();
        assert!(why.contains("not monotone"), "1x{}x100: {why}", probe.n);
        let want = match probe.n {
            10_000 => 24,
            12_000 => 20,
            13_000 => 12,
            15_000 => 16,
            _ => continue,
        };
        let left = consistent(&lm.rules, probe, &config, &list, None, &width);
        assert_eq!(fields(&list[left[0]].rule), (Some(want), 4, None, Combine::Butterfly, None, None), "1x{}x100", probe.n);
    }
}
