//! What the GPU engine produced, kept for CI: per chunk of tiles, a digest of the tiles its
//! generator made and one of the D its model computed on them, with the GPU, driver, path,
//! model and seed. Replaying regenerates the tiles with [`super::gen::tile`], runs the emulator,
//! and must reach the same digests (`tests/suite/engine_replay.rs`).

use crate::case::MmaCase;
use crate::exec::GpuInfo;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EngineRecord {
    pub path: String,
    pub model: String,
    pub gpu: String,
    pub driver: String,
    pub seed: u64,
    pub chunk: u64,
    pub recorded: String,
    /// Per chunk: (FNV-1a of the tiles' A, B, C bits, FNV-1a of D's bits), as 16 hex digits.
    pub chunks: Vec<[String; 2]>,
}

/// FNV-1a over 64-bit words, continuing from `h`.
fn fnv(mut h: u64, words: impl IntoIterator<Item = u64>) -> u64 {
    for w in words {
        for b in w.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01B3);
        }
    }
    h
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// The two digests of one chunk.
pub fn digests(tiles: &[MmaCase], d: &[Vec<u64>]) -> [String; 2] {
    let t = tiles.iter().fold(FNV_START, |h, c| fnv(h, c.a.iter().chain(&c.b).chain(&c.c).copied()));
    let dd = d.iter().fold(FNV_START, |h, x| fnv(h, x.iter().copied()));
    [format!("{t:016x}"), format!("{dd:016x}")]
}

impl EngineRecord {
    pub fn new(path: &str, model: &str, gpu: &GpuInfo, seed: u64, chunk: u64) -> Self {
        EngineRecord { path: path.into(), model: model.into(), gpu: gpu.name.clone(), driver: gpu.driver.clone(), seed, chunk, recorded: crate::store::today_utc(), chunks: vec![] }
    }

    pub fn push_chunk(&mut self, tiles: &[MmaCase], d: &[Vec<u64>]) {
        self.chunks.push(digests(tiles, d));
    }
}

pub fn save(r: &EngineRecord, file: &Path) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(r).expect("the record serialises");
    crate::store::write_atomically(file, text.as_bytes())
}

pub fn load(file: &Path) -> Result<EngineRecord, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not an engine record: {e}", file.display()))
}
