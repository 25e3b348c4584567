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

/// Every `*.jsonl` and `*.jsonl.gz` file under `dir`, sorted.
pub fn corpus_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".jsonl") || p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    files.sort();
    Ok(files)
}

/// The instruction path a corpus file is for: its name without `.jsonl` / `.jsonl.gz`.
pub fn corpus_path_id(file: &Path) -> String {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.trim_end_matches(".gz").trim_end_matches(".jsonl").to_string()
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
    let emu = Emulator::new(model.clone());
    let results: Vec<(usize, usize, Option<String>)> = cases
        .par_iter()
        .map(|(case, d)| match emu.run(case) {
            Ok(got) => {
                let same = got.iter().zip(d).filter(|(a, b)| a == b).count();
                let first = (same < d.len()).then(|| {
                    let i = (0..d.len()).find(|&i| got[i] != d[i]).expect("a difference");
                    let tile = case.extra.get("seed").map(|s| format!("tile {s} ")).unwrap_or_default();
                    format!("{tile}element {i} (row {}, col {}): GPU {:x}, {} {:x}", i / case.n, i % case.n, d[i], model.name, got[i])
                });
                (d.len(), same, first)
            }
            Err(e) => (d.len(), 0, Some(format!("cannot emulate: {e}"))),
        })
        .collect();
    let mut s = ReplayStats { bad_lines, ..Default::default() };
    for (n, same, first) in results {
        s.tiles += 1;
        s.elements += n;
        s.elements_matching += same;
        if same == n {
            s.tiles_matching += 1;
        } else if let Some(f) = first.filter(|_| s.first_mismatches.len() < 3) {
            s.first_mismatches.push(f);
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

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
