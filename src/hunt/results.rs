//! The results log: every hunt run appends one line to `hunts.jsonl` in its findings directory
//! (which path, against what GPU or model, which seed and shard, how many tiles, how many
//! diverged, under which model), so hunt totals quoted anywhere come from recorded runs.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The log's file name inside a findings directory.
pub const FILE: &str = "hunts.jsonl";

/// One hunt run: what it covered and what it found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HuntRun {
    /// UTC date the run ended.
    pub date: String,
    pub path: String,
    /// Side A as described to the user (a GPU: its name, count, compute capability, driver).
    pub a: String,
    /// Side B: the model's name.
    pub b: String,
    /// FNV-1a of side B's arithmetic for this path as TOML: which model version was hunted.
    pub model_hash: String,
    pub engine: String,
    pub seed: u64,
    /// "I/N" for a shard, absent for a whole hunt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// Tiles this run compared (a resumed hunt counts only the new ones).
    pub tiles: u64,
    pub divergent_tiles: u64,
    pub divergent_elements: u64,
    /// Findings this run wrote new.
    pub findings_new: u64,
    pub seconds: f64,
    /// The mmafuzz version that ran it.
    pub version: String,
}

/// The hash of an arithmetic, as [`HuntRun::model_hash`] records it.
pub fn model_hash(arithmetic: &crate::model::Arithmetic) -> String {
    let text = toml::Table::try_from(arithmetic).map(|t| t.to_string()).unwrap_or_default();
    format!("{:016x}", super::finding::fnv1a(text.as_bytes()))
}

/// Append `run` to the log in `findings` (under a lock: hunts sharing a directory all land).
pub fn append(findings: &Path, run: &HuntRun) -> std::io::Result<PathBuf> {
    let file = findings.join(FILE);
    let line = serde_json::to_string(run).expect("a run serialises");
    crate::store::append_lines_atomically(&file, &[line])?;
    Ok(file)
}

/// Every run in a log; unreadable lines are returned as "line N: reason".
pub fn read(file: &Path) -> std::io::Result<(Vec<HuntRun>, Vec<String>)> {
    let text = String::from_utf8_lossy(&crate::store::read_text(file)?).into_owned();
    let (mut runs, mut bad) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        match serde_json::from_str(line) {
            Ok(r) => runs.push(r),
            Err(e) => bad.push(format!("line {}: {e}", i + 1)),
        }
    }
    Ok((runs, bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_append_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let run = HuntRun {
            date: "2026-12-02".into(),
            path: "mma.m16n8k16.f32.f16.f16.f32".into(),
            a: "gpu".into(),
            b: "sm90:mma.m16n8k16.f32.f16.f16.f32".into(),
            model_hash: model_hash(crate::model::Model::load("h100").unwrap().arithmetic(crate::Format::F16)),
            engine: "cpu".into(),
            seed: 1,
            shard: None,
            tiles: 10,
            divergent_tiles: 0,
            divergent_elements: 0,
            findings_new: 0,
            seconds: 0.5,
            version: "0".into(),
        };
        append(dir.path(), &run).unwrap();
        append(dir.path(), &HuntRun { seed: 2, ..run.clone() }).unwrap();
        std::fs::write(dir.path().join("other.jsonl"), "x").unwrap();
        let (runs, bad) = read(&dir.path().join(FILE)).unwrap();
        assert!(bad.is_empty());
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0], run);
        assert_eq!(runs[1].seed, 2);
        assert_eq!(run.model_hash.len(), 16);
    }
}
