//! A hunt's counters, saved after every batch (atomically) so `--resume` continues where a
//! stopped or killed hunt left off.

use super::compare::Position;
use crate::exact::Exact;
use crate::format::Format;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Divergent elements of one class, how many were minimised, and the findings they became.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ClassCount {
    pub elements: u64,
    pub minimised: u64,
    pub findings: BTreeSet<String>,
}

/// One side against the exact value, over the sampled tiles.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ExactStats {
    /// Elements with a finite (or zero) exact value and a finite output.
    pub elements: u64,
    /// Equal to the correct rounding to nearest.
    pub nearest: u64,
    /// One of the two neighbours of the exact value.
    pub faithful: u64,
    /// Largest |error| in units in the last place of D.
    pub max_ulp_error: f64,
}

impl ExactStats {
    pub fn record(&mut self, x: &Exact, fmt: Format, bits: u64) {
        let Some(err) = x.ulp_error(fmt, bits) else { return };
        self.elements += 1;
        match Position::of(x, fmt, bits) {
            Position::Nearest => {
                self.nearest += 1;
                self.faithful += 1;
            }
            Position::Below | Position::Above => self.faithful += 1,
            Position::Unfaithful => {}
        }
        // Errors past f64's range (f64 outputs off by more than 2^1024 ulps) count as f64::MAX:
        // the state is JSON, which has no infinity.
        let err = if err.is_finite() { err.abs() } else { f64::MAX };
        self.max_ulp_error = self.max_ulp_error.max(err);
    }

    /// The counts of `self` and `other` together (parts recorded apart, e.g. on several threads).
    pub fn merged(self, other: ExactStats) -> ExactStats {
        ExactStats {
            elements: self.elements + other.elements,
            nearest: self.nearest + other.nearest,
            faithful: self.faithful + other.faithful,
            max_ulp_error: self.max_ulp_error.max(other.max_ulp_error),
        }
    }
}

/// Everything a hunt has counted.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct HuntState {
    pub path: String,
    pub side_a: String,
    pub side_b: String,
    pub seed: u64,
    /// Index of the next tile to generate.
    pub next_tile: u64,
    /// Seconds spent, over every run of this hunt.
    pub elapsed_s: f64,
    pub tiles: u64,
    /// Elements of D compared (each a dot product of length k plus C).
    pub dot_products: u64,
    pub divergent_tiles: u64,
    pub divergent_elements: u64,
    /// Divergent elements that were classified (at most a few thousand per batch, spread
    /// evenly); class counts add up to this.
    pub classified: u64,
    pub classes: BTreeMap<String, ClassCount>,
    pub findings_new: u64,
    pub findings_merged: u64,
    pub minimiser_rounds: u64,
    /// Minimised cases by their number of nonzero terms (C counted as one).
    pub minimised_terms: BTreeMap<usize, u64>,
    /// Divergences that vanished when their element was isolated.
    pub whole_tile_divergences: u64,
    /// Side A, side B against the exact value.
    pub exact: [ExactStats; 2],
    pub monotonic_checked: [u64; 2],
    pub monotonic_violations: [u64; 2],
    pub monotonic_examples: Vec<String>,
    /// Arithmetic features side B's model went through (situations × count levels).
    #[serde(default)]
    pub features: crate::features::FeatureMap,
    /// (tiles, features, situations) when the hunt reached 10^3, 10^4, … tiles.
    #[serde(default)]
    pub feature_curve: Vec<[u64; 3]>,
    /// The part of the tile index space this hunt runs (`0/1`: all of it).
    #[serde(default)]
    pub shard: super::Shard,
    /// The hunt-wide number of the first tile on which the sides differed.
    #[serde(default)]
    pub first_divergence: Option<u64>,
    /// Guided: tiles come from a population kept for new features.
    #[serde(default)]
    pub guided: bool,
    /// Tiles in the guided hunt's population.
    #[serde(default)]
    pub population: usize,
    /// Situations never reached so far.
    #[serde(default)]
    pub never_reached: Vec<String>,
    /// `gpu`: tiles made, run, modelled and compared by the GPU engine (its own generator).
    #[serde(default)]
    pub engine: Option<String>,
    /// Tiles on which the GPU engine and the CPU's re-run of both sides disagreed about whether
    /// they diverge (0 unless the engine's model or generator departs from its Rust twin).
    #[serde(default)]
    pub engine_disagreements: u64,
}

/// Where a hunt between two sides on a path keeps its state.
/// `kind`: `hunt`, `guided` or `engine` (their tiles come from different generators).
pub fn state_file(findings: &Path, path: &str, a: &str, b: &str, kind: &str, shard: super::Shard) -> PathBuf {
    let safe = |s: &str| s.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect::<String>();
    // Shards of one hunt may share a findings directory: each keeps its own state.
    let part = if shard.is_whole() { String::new() } else { format!("-shard-{}-of-{}", shard.index, shard.count) };
    findings.join(path).join(format!("{kind}-{}-vs-{}{part}.state.json", safe(a), safe(b)))
}

/// The next power of ten of tiles (from 10^3) after `tiles`: batches end there, so the feature
/// curve is measured at exactly those counts.
pub fn next_checkpoint(tiles: u64) -> u64 {
    let mut c = 1000u64;
    while c <= tiles {
        c = c.saturating_mul(10);
    }
    c
}

impl HuntState {
    pub fn new(path: &str, a: &str, b: &str, seed: u64) -> HuntState {
        HuntState { path: path.into(), side_a: a.into(), side_b: b.into(), seed, ..Default::default() }
    }

    pub fn load(file: &Path) -> Result<HuntState, String> {
        let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| format!("not a hunt state: {e}"))
    }

    /// Record the feature curve's point if the hunt just reached a power of ten of tiles.
    pub fn note_features(&mut self) {
        if self.tiles >= 1000 && next_checkpoint(self.tiles - 1) == self.tiles && self.feature_curve.last().is_none_or(|p| p[0] < self.tiles) {
            self.feature_curve.push([self.tiles, self.features.features() as u64, self.features.situations() as u64]);
        }
    }

    pub fn save(&self, file: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).expect("the state serialises");
        crate::store::write_atomically(file, text.as_bytes())
    }

    pub fn findings(&self) -> usize {
        self.classes.values().map(|c| c.findings.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counting a sample in parts on several threads and merging gives what counting it in one
    /// pass gives: the exact elements of 64 generated tiles against a model's D, split anywhere.
    #[test]
    fn exact_stats_merged_from_parts_equal_one_pass() {
        let p = crate::exec::path_by_id("mma.m16n8k16.f16.f16.f16.f16").unwrap();
        let emu = crate::model::Emulator::new(crate::Model::load("h100").unwrap());
        let (mut whole, mut parts) = (ExactStats::default(), vec![ExactStats::default(); 3]);
        for i in 0..64 {
            let t = crate::gen::case_at(p, 3, i);
            let d = emu.run(&t).unwrap();
            for (e, x) in crate::exact::exact_tile(&t).iter().enumerate() {
                whole.record(x, Format::F16, d[e]);
                parts[(i as usize * 7 + e) % 3].record(x, Format::F16, d[e]);
            }
        }
        assert!(whole.elements > 1000 && whole.nearest < whole.elements && whole.max_ulp_error > 0.0, "{whole:?}");
        assert_eq!(parts.into_iter().reduce(ExactStats::merged).unwrap(), whole);
    }
}
