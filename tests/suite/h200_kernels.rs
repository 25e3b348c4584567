//! The H200's kernel choices, held to what was recorded on an H200 (driver 580.159.04, cuBLAS
//! 13.1.0): the validation traces (corpus/library/traces/h200-validate-*.tsv.gz,
//! scripts/torch-trace.py validate; seed 58601 was drawn after the predictors were learned and
//! kept out of their calibration) and GEMMs recorded with their D (corpus/library/h200-validate/).

use mmafuzz::library::fit::plan_of;
use mmafuzz::library::gemm::LibraryEmulator;
use mmafuzz::library::record::{replay_text, Summary};
use mmafuzz::library::{KernelConfig, LibraryModel, TorchOp};
use std::collections::BTreeMap;
use std::path::Path;

/// (path, op, shape, logged kernel) of every GEMM of a validation trace.
fn validation(name: &str) -> Vec<(String, TorchOp, (usize, usize, usize), KernelConfig)> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/library/traces").join(name);
    let text = String::from_utf8(mmafuzz::store::read_text(&file).unwrap()).unwrap();
    let (mut path, mut configs, mut out) = (String::new(), BTreeMap::new(), vec![]);
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        match f[..] {
            ["path", p] => (path, configs) = (p.to_string(), BTreeMap::new()),
            ["cfg", id, algo] => {
                configs.insert(id.to_string(), KernelConfig::from_log(algo).ok());
            }
            // A configuration the parser refuses (as check-predict does, the GEMM is skipped).
            [op, m, n, k, id, ..] => {
                if let Some(c) = &configs[id] {
                    out.push((path.clone(), op.parse().unwrap(), (m.parse().unwrap(), n.parse().unwrap(), k.parse().unwrap()), c.clone()));
                }
            }
            _ => panic!("{line}"),
        }
    }
    out
}

/// Per validation trace, the exact and wrong answers with the predictor on, as measured
/// (`mmafuzz library check-predict TRACE --gpu h200`): at least that many exact, at most that
/// many wrong. The first five calibrated the H200's predictors (`mmafuzz library calibrate`,
/// report/calibrate-h200.txt), so their traced shapes are in the kernel tables and none is
/// wrong; the FP8 paths' predictors were learned from the same five. 58601 was drawn before
/// calibration and never used in it (its traced shapes chose the GEMV kernels that were
/// recorded and probed, not the predictors); 58701 was drawn after calibration and used for
/// nothing; 58801 after the GEMV lane rules.
const PREDICTED: [(&str, usize, usize); 8] = [
    ("h200-validate-58101.tsv.gz", 29_948, 0),
    ("h200-check-58201.tsv.gz", 32_390, 0),
    ("h200-validate-58301.tsv.gz", 32_380, 0),
    ("h200-validate-58401.tsv.gz", 32_369, 0),
    ("h200-validate-58501.tsv.gz", 32_398, 0),
    ("h200-validate-58601.tsv.gz", 24_225, 21),
    ("h200-validate-58701.tsv.gz", 24_099, 15),
    ("h200-validate-58801.tsv.gz", 24_158, 18),
];

/// (exact, wrong, modelled) over a validation trace's GEMMs whose logged kernel the models of
/// `gpu` run, without (false) or with (true) the predictor.
fn score(gpu: &str, name: &str, predict: bool) -> (usize, usize, usize) {
    let mut models: BTreeMap<String, LibraryModel> = BTreeMap::new();
    let (mut exact, mut wrong, mut all) = (0, 0, 0);
    for (path, op, shape, logged) in validation(name) {
        let lm = models.entry(path.clone()).or_insert_with(|| {
            let mut lm = LibraryModel::load(&format!("{gpu}:{path}"), None).unwrap();
            lm.use_predictor = predict;
            lm
        });
        let Ok(truth) = plan_of(&lm.rules, op, shape, &logged) else { continue };
        all += 1;
        let emu = LibraryEmulator::new(lm);
        // A kernel the models cannot plan is refused when emulated: declined, not wrong.
        match emu.choose(shape, op).map(|(c, _)| plan_of(&lm.rules, op, shape, c)) {
            Ok(Ok(p)) if p == truth => exact += 1,
            Ok(Ok(_)) => wrong += 1,
            _ => {}
        }
    }
    (exact, wrong, all)
}

/// Without a trace, the H200 models never give a kernel whose schedule differs from the one
/// cuBLASLt ran: by default a shape the table does not hold is declined. With the predictor
/// turned on, exact and wrong answers stay where they were measured (report/predict-h200*.txt):
/// on the five traces the predictors were calibrated on, and on 58601 (drawn after the
/// predictors' rules were final, kept sealed until they were calibrated).
#[test]
fn h200_models_decline_rather_than_guess() {
    let failed = predicted_as_measured("h200", &PREDICTED, 29_000);
    assert!(failed.is_empty(), "{failed:?}");
}

/// For each (trace, least exact, most wrong): without the predictor no wrong kernel; with it,
/// the traces whose exact or wrong answers left what was measured.
fn predicted_as_measured(gpu: &str, measured: &[(&str, usize, usize)], min_gemms: usize) -> Vec<String> {
    let mut failed = Vec::new();
    for &(name, min_exact, max_wrong) in measured {
        let (exact, wrong, all) = score(gpu, name, false);
        assert!(all > min_gemms, "{name}: {all} GEMMs");
        assert_eq!(wrong, 0, "{name}: {wrong} wrong of {all} without the predictor ({exact} exact)");
        let (exact, wrong, _) = score(gpu, name, true);
        eprintln!("{name} with the predictor: {exact} exact, {wrong} wrong of {all}");
        if wrong > max_wrong || exact < min_exact {
            failed.push(format!("{name}: {exact} exact (at least {min_exact}), {wrong} wrong (at most {max_wrong}) of {all}"));
        }
    }
    failed
}

/// The H100's table is not the H200's: at the decode GEMV 1x4096x4096 through F.linear the
/// H200's cuBLASLt splits K (the validation trace), where the H100 table holds one chain for
/// torch.mm; and the old `sm90:` names say which GPUs there are.
#[test]
fn library_models_name_their_gpu() {
    let err = LibraryModel::load("sm90:cublas.gemm.bf16.bf16.bf16.bf16", None).err().unwrap().to_string();
    assert!(err.contains("h100:cublas.gemm.bf16.bf16.bf16.bf16") && err.contains("h200:cublas.gemm.bf16.bf16.bf16.bf16"), "{err}");
    let h100 = LibraryModel::load("h100:cublas.gemm.bf16.bf16.bf16.bf16", None).unwrap();
    let h200 = LibraryModel::load("h200:cublas.gemm.bf16.bf16.bf16.bf16", None).unwrap();
    assert_eq!(h100.gpu().unwrap().name, "NVIDIA H100 80GB HBM3");
    assert_eq!((h200.gpu().unwrap().name.as_str(), h200.gpu().unwrap().sm_count), ("NVIDIA H200", 132));
    assert!(h200.gpu_mismatch(Some("h100")).is_some_and(|w| w.contains("NVIDIA H200")));
    assert!(h200.gpu_mismatch(Some("h200")).is_none());
    let logged = validation("h200-validate-58101.tsv.gz").into_iter().find(|(p, op, s, _)| p == "cublas.gemm.bf16.bf16.bf16.bf16" && *op == TorchOp::Linear && *s == (1, 4096, 4096)).expect("1x4096x4096 traced").3;
    assert!(logged.split_k > 1, "{logged}");
    let h100_mm = h100.table.get(1, 4096, 4096, TorchOp::Mm).unwrap();
    assert_eq!(h100_mm.split_k, 1, "{h100_mm}");
}

/// Every record file of a corpus directory (`files` of them) replayed under the models of the
/// GPU each record names.
fn replay_dir(dir: &str, files: usize) -> Summary {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    assert_eq!(paths.len(), files, "{}", dir.display());
    let mut models = BTreeMap::new();
    let mut summary = Summary::new();
    for f in &paths {
        let text = String::from_utf8(mmafuzz::store::read_text(f).unwrap()).unwrap();
        replay_text(&text, &mut models, None, &mut summary, |_, _| {}).unwrap_or_else(|(line, e)| panic!("{} line {line}: {e}", f.display()));
    }
    summary
}

/// GEMMs recorded with their D on the H200 at validation shapes replay bit for bit under their
/// logged kernels, but for kernels the models decline and one known miss: TF32 SGEMM algorithm
/// 20 at k = 1 writes +0 where the model gives -0 (201x316x1, 9 of 1,024 elements).
#[test]
fn h200_validation_gemms_replay_with_their_kernels() {
    let summary = replay_dir("corpus/library/h200-validate", 11);
    let (mut gemms, mut exact, mut skipped) = (0, 0, 0);
    for ((path, family), t) in &summary {
        gemms += t.gemms;
        exact += t.exact;
        skipped += t.skipped;
        if t.exact + t.skipped != t.gemms {
            assert_eq!((path.as_str(), family.as_str(), t.gemms - t.exact - t.skipped), ("cublas.gemm.f32.tf32.tf32.f32", "algo 20", 1), "{path} {family}");
        }
    }
    assert_eq!(gemms, 464);
    assert_eq!((exact, skipped), (462, 1));
}

/// GEMMs recorded on the H200 for kernels the models did not run on the validation traces
/// (corpus/library/h200-gaps/, scripts/gap-shapes.py and scripts/device-gaps.sh): each is
/// reproduced in every element or declined, and DGEMM algorithm 12 at K = 1 (C or the bias as
/// the FMA's addend, -0 without either) in all 240, 120 of them recorded after its rule; the
/// GEMV-like kernels whose trees FPRev measured on the H200 (DGEMM's gemvx and gemv2T, bf16
/// gemmSN) in all but the few the rules hold back.
#[test]
fn h200_gap_gemms_are_exact_or_declined() {
    let summary = replay_dir("corpus/library/h200-gaps", 7);
    let (mut gemms, mut exact) = (0, 0);
    for ((path, family), t) in &summary {
        assert_eq!(t.exact + t.skipped, t.gemms, "{path} {family}: {} of {} GEMMs wrong", t.gemms - t.exact - t.skipped, t.gemms);
        gemms += t.gemms;
        exact += t.exact;
    }
    let dgemm = &summary[&("cublas.gemm.f64.f64.f64.f64".to_string(), "algo 12 split-K (ComputeType)".to_string())];
    assert_eq!((dgemm.gemms, dgemm.exact), (240, 240));
    let dgemv = &summary[&("cublas.gemm.f64.f64.f64.f64".to_string(), "algo 13".to_string())];
    assert!(dgemv.gemms >= 590 && dgemv.exact + 10 >= dgemv.gemms, "DGEMM algo 13: {} of {} exact", dgemv.exact, dgemv.gemms);
    let gemm_sn = &summary[&("cublas.gemm.bf16.bf16.bf16.bf16".to_string(), "algo 11".to_string())];
    assert_eq!((gemm_sn.gemms, gemm_sn.exact), (170, 170));
    // 2,674 before the GEMV lane rules inferred from FPRev (corpus/library/fprev-gaps/), 2,691
    // with those of runs a and b; 2,698 with those of runs a to d and TF32 gemvNSP's 32 lanes
    // below n = 85.
    assert_eq!((gemms, exact), (2720, 2698));
}

/// The H100's predictors, learned from its cuBLASLt heuristic asked at 26.7 million shapes
/// (dense draw seed 63002, report/fit-h100-dense.txt) and calibrated on the H100 traces of
/// seeds 59102 and 59103, on calls PyTorch ran on the H100 that were used for neither: seed
/// 59101 (report/predict-h100-59101.txt) and seed 59104, drawn after these predictors were
/// made (report/predict-h100-59104.txt). Without the predictor the H100's tables give no wrong
/// kernel; with it, exact and wrong answers stay where they were measured.
#[test]
fn h100_predictors_on_fresh_h100_calls() {
    let failed = predicted_as_measured("h100", &H100_PREDICTED, 32_000);
    assert!(failed.is_empty(), "{failed:?}");
}

/// What `h100_predictors_on_fresh_h100_calls` measured with the f32, TF32 and f64 predictors
/// learned from every shape of draw 63103 (report/predict-h100-63104.txt; seed 63104 was sealed
/// until they were installed). The predictors of draw 63002 before them gave 26,664 exact and 18
/// wrong on 59101 and 26,539 and 25 on 59104; those of draw 58802, with a leaf declining at any
/// calibration shape it got wrong, 23,276 and 12 on 59101.
const H100_PREDICTED: [(&str, usize, usize); 3] = [("h100-validate-59101.tsv.gz", 27_126, 18), ("h100-validate-59104.tsv.gz", 27_047, 26), ("h100-validate-63104.tsv.gz", 26_995, 10)];

/// A fit's output directory stands in for the embedded predictor (and table, where it holds
/// one) before it is embedded; a directory without the path's predictor is an error.
#[test]
fn a_fitted_directory_replaces_the_embedded_predictor() {
    let dir = std::env::temp_dir().join(format!("mmafuzz-learned-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let name = "h100:cublas.gemm.bf16.bf16.bf16.bf16";
    let missing = LibraryModel::load(name, None).unwrap().with_learned_from(&dir);
    assert!(missing.err().is_some_and(|e| e.to_string().contains("cublas.gemm.bf16.bf16.bf16.bf16.predict.tsv.xz")));
    let text = "# one leaf\ncfg\t0\talgoId=24 tile=MATMUL_TILE_64x64\nop\tmm\nleaf\t0\t9\t9\t9\n";
    // A plain-text predictor is found where no compressed one is.
    std::fs::write(dir.join("cublas.gemm.bf16.bf16.bf16.bf16.predict.tsv"), text).unwrap();
    let lm = LibraryModel::load(name, None).unwrap().with_learned_from(&dir).unwrap();
    assert_eq!(lm.predictor.provenance, vec!["one leaf".to_string()]);
    assert!(lm.table.len() > 1000, "the model's own table stays: {}", lm.table.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `check-predict --outcomes FILE` writes one line per GEMM whose outcome adds up to the printed
/// summary: the sealed trace 58701 gives the exact and wrong counts measured above.
#[test]
fn check_predict_writes_every_gemms_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("outcomes.tsv.gz");
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/library/traces/h200-validate-58701.tsv.gz");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_mmafuzz"))
        .args(["library", "check-predict", "--gpu", "h200", "--outcomes"])
        .arg(&out)
        .arg(&trace)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let text = String::from_utf8(mmafuzz::store::read_text(&out).unwrap()).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("path\tcall\tm\tn\tk\tclass\toutcome\tlogged\tmodel"));
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 9, "{l}");
        KernelConfig::from_log(f[7]).unwrap();
        *count.entry(f[6].to_string()).or_default() += 1;
    }
    let all: usize = count.values().sum();
    assert!(stdout.contains(&format!("all: {all} GEMMs")), "{stdout}");
    let (exact, wrong) = (count.get("exact").copied().unwrap_or(0), count.get("wrong").copied().unwrap_or(0));
    assert!(exact >= 24_099 && wrong <= 15 && count.get("declined").is_some_and(|&d| d > 0), "{count:?}");
    assert_eq!(run.status.success(), wrong == 0, "exits 1 where any is wrong");
}
