//! Corpus replay: run every recorded GPU case through a model and count what it reproduces
//! bitwise. CI does this with no GPU, so the emulator can never drift from the hardware silently.

use crate::case::MmaCase;
use crate::model::{Emulator, Model};
use rayon::prelude::*;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// What a model reproduces of one corpus file.
#[derive(Clone, Debug, Default)]
pub struct ReplayStats {
    pub tiles: usize,
    pub tiles_matching: usize,
    pub elements: usize,
    pub elements_matching: usize,
    /// The first few differing tiles, readable: element, GPU bits, model bits.
    pub first_mismatches: Vec<String>,
    /// Lines that could not be read, by `file:line: reason` (skipped, not fatal).
    pub bad_lines: Vec<String>,
}

impl ReplayStats {
    pub fn tile_fraction(&self) -> f64 {
        if self.tiles == 0 { 0.0 } else { self.tiles_matching as f64 / self.tiles as f64 }
    }
}

/// Every `*.jsonl`, `*.jsonl.xz` and `*.jsonl.gz` file under `dir`, sorted.
pub fn corpus_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| crate::store::is_jsonl(p))
        .collect();
    files.sort();
    Ok(files)
}

/// The instruction path a corpus file is for: its name without `.jsonl` / `.jsonl.xz` /
/// `.jsonl.gz`.
pub fn corpus_path_id(file: &Path) -> String {
    crate::store::jsonl_stem(file)
}

/// Read a corpus file: its cases (each with its recorded D) and its unreadable lines. Tiles
/// stored by reference are regenerated for the path the file is named after ([`codec`]).
///
/// [`codec`]: crate::corpus::codec
pub fn read_corpus(file: &Path) -> std::io::Result<(Vec<(MmaCase, Vec<u64>)>, Vec<String>)> {
    let text = crate::store::read_text(file)?;
    let path = crate::exec::path_by_id(&corpus_path_id(file));
    let lines: Vec<String> = text.lines().collect::<Result<_, _>>()?;
    let parsed: Vec<_> = lines.par_iter().map(|line| (!line.trim().is_empty()).then(|| crate::corpus::codec::decode_line(line, path))).collect();
    let (mut cases, mut bad) = (Vec::new(), Vec::new());
    for (no, p) in parsed.into_iter().enumerate() {
        match p {
            None => {}
            Some(Ok(x)) => cases.push(x),
            Some(Err(e)) => bad.push(format!("{}:{}: {e}", file.display(), no + 1)),
        }
    }
    Ok((cases, bad))
}

/// Lines for a corpus file of `path`: generated tiles by reference and D as steps, except
/// promoted findings, which keep their readable form.
pub fn corpus_lines(cases: &[&(MmaCase, Vec<u64>)], path: Option<&crate::exec::PathSpec>) -> Vec<String> {
    cases.par_iter().map(|(c, d)| crate::corpus::codec::encode_line(c, d, path, !c.extra.contains_key("finding"))).collect()
}

/// Replay one corpus file under a model.
pub fn replay_file(file: &Path, model: &Model) -> std::io::Result<ReplayStats> {
    let (cases, bad_lines) = read_corpus(file)?;
    Ok(replay_cases(&cases, bad_lines, model))
}

/// Replay cases already read ([`read_corpus`]) under a model: reading a file costs more than
/// replaying it, so a caller that also inspects the cases reads it once.
pub fn replay_cases(cases: &[(MmaCase, Vec<u64>)], bad_lines: Vec<String>, model: &Model) -> ReplayStats {
    let emu = Emulator::new(model.clone());
    let results: Vec<Result<Vec<u64>, String>> = cases.par_iter().map(|(case, _)| emu.run(case).map_err(|e| format!("cannot emulate: {e}"))).collect();
    tally(cases, results, &model.name, bad_lines, false)
}

/// Replay one corpus file against another side (an external oracle: [`crate::hunt::side`]),
/// in batches of `batch` tiles. A batch the side cannot run counts as not reproduced. With
/// `any_nan`, a NaN reproduces any NaN (a simulator that does not model NaN payloads).
pub fn replay_file_side(file: &Path, side: &crate::hunt::side::Side, batch: usize, any_nan: bool) -> std::io::Result<ReplayStats> {
    let (cases, bad_lines) = read_corpus(file)?;
    let mut results = Vec::with_capacity(cases.len());
    for chunk in cases.chunks(batch.max(1)) {
        let tiles: Vec<MmaCase> = chunk.iter().map(|(c, _)| c.clone()).collect();
        match side.execute(&tiles) {
            Ok(ds) => results.extend(ds.into_iter().map(Ok)),
            Err(e) => results.extend(std::iter::repeat_n(Err(format!("cannot run: {e}")), chunk.len())),
        }
    }
    Ok(tally(&cases, results, &side.name(), bad_lines, any_nan))
}

/// Who computed a corpus tile's recorded D: "GPU", or "oracle" where its provenance names one
/// (a simulator's answers recorded with `--oracle-label`).
fn recorded_by(case: &MmaCase) -> &'static str {
    if case.extra.get("provenance").and_then(|p| p.get("oracle")).is_some() {
        "oracle"
    } else {
        "GPU"
    }
}

/// Count what `results` (one per recorded case) reproduce of the recorded D.
fn tally(cases: &[(MmaCase, Vec<u64>)], results: Vec<Result<Vec<u64>, String>>, name: &str, bad_lines: Vec<String>, any_nan: bool) -> ReplayStats {
    let mut s = ReplayStats { bad_lines, ..Default::default() };
    for ((case, d), got) in cases.iter().zip(results) {
        let f = case.d_fmt;
        let equal = |a: Option<&u64>, b: Option<&u64>| match (a, b) {
            (Some(&a), Some(&b)) => a == b || (any_nan && f.decode(a).is_nan() && f.decode(b).is_nan()),
            _ => false,
        };
        let (same, first) = match got {
            Ok(got) => {
                let same = (0..d.len()).filter(|&i| equal(got.get(i), d.get(i))).count();
                let first = (same < d.len()).then(|| {
                    let i = (0..d.len()).find(|&i| !equal(got.get(i), d.get(i))).expect("a difference");
                    let tile = case.extra.get("seed").map(|s| format!("tile {s} ")).unwrap_or_default();
                    format!("{tile}element {i} (row {}, col {}): {} {:x}, {name} {:x}", i / case.n, i % case.n, recorded_by(case), d[i], got.get(i).copied().unwrap_or_default())
                });
                (same, first)
            }
            Err(e) => (0, Some(e)),
        };
        s.tiles += 1;
        s.elements += d.len();
        s.elements_matching += same;
        if same == d.len() {
            s.tiles_matching += 1;
        } else if let Some(f) = first.filter(|_| s.first_mismatches.len() < 3) {
            s.first_mismatches.push(f);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `any_nan` a NaN reproduces any NaN; without, only its own bits.
    #[test]
    fn any_nan_counts_nan_against_nan() {
        let mut case = MmaCase::zeros(crate::Format::F16, crate::Format::F32, 1, 2, 1);
        case.extra.insert("seed".into(), 1.into());
        let cases = vec![(case, vec![0x7fff_ffff, 0x3f80_0000])];
        let got = || vec![Ok(vec![0x7fc0_0000, 0x3f80_0000])];
        let strict = tally(&cases, got(), "x", vec![], false);
        assert_eq!((strict.elements_matching, strict.tiles_matching), (1, 0));
        assert!(strict.first_mismatches[0].contains("element 0") && strict.first_mismatches[0].contains("GPU 7fffffff"), "{:?}", strict.first_mismatches);
        // A simulator's recorded answers are named as the oracle's, not the GPU's.
        let mut by_oracle = cases.clone();
        by_oracle[0].0.extra.insert("provenance".into(), serde_json::json!({"oracle": "MMA-Sim 2.1.1"}));
        let s = tally(&by_oracle, got(), "x", vec![], false);
        assert!(s.first_mismatches[0].contains("oracle 7fffffff"), "{:?}", s.first_mismatches);
        let loose = tally(&cases, got(), "x", vec![], true);
        assert_eq!((loose.elements_matching, loose.tiles_matching), (2, 1));
        // A NaN against a number is never equal.
        let wrong = tally(&cases, vec![Ok(vec![0x3f80_0000, 0x3f80_0000])], "x", vec![], true);
        assert_eq!(wrong.elements_matching, 1);
    }

    /// A corrupted line is reported by file and line and skipped; the good lines still count.
    #[test]
    fn corrupted_lines_are_named_and_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mma.m16n8k16.f32.f16.f16.f32.jsonl");
        let good = r#"{"a_fmt":"f16","c_fmt":"f32","m":1,"n":1,"k":1,"a":["3c00"],"b":["3c00"],"c":["00000000"],"d":["3f800000"]}"#;
        let no_d = good.replace(r#","d":["3f800000"]"#, "");
        std::fs::write(&file, format!("{good}\n{{\"a_fmt\": trunc\n{no_d}\n{good}\n")).unwrap();
        let (cases, bad) = read_corpus(&file).unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(bad.len(), 2);
        assert!(bad[0].contains("mma.m16n8k16.f32.f16.f16.f32.jsonl:2:"), "{bad:?}");
        assert!(bad[1].contains(":3:") && bad[1].contains("'d'"), "{bad:?}");
        let s = replay_file(&file, &Model::load("exact-rne").unwrap()).unwrap();
        assert_eq!((s.tiles, s.tiles_matching, s.bad_lines.len()), (2, 2, 2));
        assert_eq!(corpus_path_id(&file), "mma.m16n8k16.f32.f16.f16.f32");
    }
}
