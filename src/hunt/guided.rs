//! The guided hunt's population: tiles that reached a new arithmetic feature, kept as files of
//! `fuzz/corpus/<target>/` (libFuzzer's layout and input encoding, [`crate::fuzzing::codec`]),
//! so a guided hunt and the GPU fuzz target of the same path share one corpus. Each batch is
//! mostly mutants of population tiles ([`crate::fuzzing::mutate`]) and some fresh generator
//! tiles, so the edge-biased recipes keep feeding it.

use crate::case::MmaCase;
use crate::exec::PathSpec;
use crate::fuzzing::{codec, mutate};
use crate::gen;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A guided hunt's first batch; later ones double up to the hunt's batch size.
pub const FIRST_BATCH: u64 = 16;
/// One tile in this many of a batch is fresh from the generators (the rest are mutants).
const FRESH_EVERY: u64 = 16;
/// Parents are drawn from the newest this many tiles a fifth of the time.
const RECENT: usize = 64;

/// The population of a guided hunt.
pub struct Population {
    pub path: &'static PathSpec,
    pub dir: PathBuf,
    pub tiles: Vec<MmaCase>,
    /// The situations each population tile reached.
    reached: Vec<Vec<u16>>,
    /// Per situation, how many hunted tiles reached it: parents whose situations are rare are
    /// mutated more often.
    hits: Vec<u64>,
    names: HashSet<String>,
    /// Tiles loaded from the directory that have not been run yet (they run first).
    pending: Vec<MmaCase>,
    /// Files in the directory that do not decode (never: every byte string decodes) or could
    /// not be read.
    pub problems: Vec<String>,
}

impl Population {
    /// The population in `dir` (created when missing): every file's tiles, run again first.
    pub fn open(path: &'static PathSpec, dir: &Path) -> std::io::Result<Population> {
        std::fs::create_dir_all(dir)?;
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))).collect();
        files.sort();
        let mut pending = Vec::new();
        let mut names = HashSet::new();
        let mut problems = Vec::new();
        for f in files {
            match std::fs::read(&f) {
                Ok(bytes) => {
                    names.insert(f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
                    pending.extend(codec::decode(path, &bytes));
                }
                Err(e) => problems.push(format!("{}: {e}", f.display())),
            }
        }
        pending.reverse();
        Ok(Population { path, dir: dir.to_path_buf(), tiles: Vec::new(), reached: Vec::new(), hits: vec![0; crate::features::SITUATIONS], names, pending, problems })
    }

    /// The next `n` tiles: saved tiles not yet run, then mutants and fresh generator tiles
    /// (`next_fresh` is the generator index, advanced). `batch` seeds the mutations, so a hunt
    /// with the same seed and population makes the same tiles.
    pub fn next_batch(&mut self, n: usize, seed: u64, batch: u64, next_fresh: &mut u64) -> Vec<MmaCase> {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ batch);
        let mut out = Vec::with_capacity(n);
        let weights = self.rarity();
        while out.len() < n {
            if let Some(t) = self.pending.pop() {
                out.push(t);
                continue;
            }
            if self.tiles.is_empty() || rng.gen_range(0..FRESH_EVERY) == 0 {
                let mut t = gen::case_at(self.path, seed, *next_fresh);
                *next_fresh += 1;
                t.extra.clear();
                out.push(t);
                continue;
            }
            let parent = self.pick(&mut rng, &weights);
            let donor = self.pick(&mut rng, &weights);
            let mut child = self.tiles[parent].clone();
            mutate::mutate(&mut rng, &mut child, &self.tiles[donor]);
            self.path.conform(&mut child);
            out.push(child);
        }
        out
    }

    /// Cumulative rarity weights of the population: a tile weighs the sum over the situations
    /// it reached of 1 / (tiles that reached each).
    fn rarity(&self) -> Vec<f64> {
        let mut total = 0.0;
        self.reached
            .iter()
            .map(|r| {
                total += r.iter().map(|&s| 1.0 / self.hits[s as usize].max(1) as f64).sum::<f64>();
                total
            })
            .collect()
    }

    /// A parent: mostly by rarity, sometimes among the newest, sometimes any.
    fn pick<R: Rng>(&self, rng: &mut R, cumulative: &[f64]) -> usize {
        let len = self.tiles.len();
        match rng.gen_range(0..10) {
            0..=5 if cumulative.last().is_some_and(|&t| t > 0.0) => {
                let x = rng.gen::<f64>() * cumulative[len - 1];
                cumulative.partition_point(|&c| c <= x).min(len - 1)
            }
            0..=7 => len - 1 - rng.gen_range(0..len.min(RECENT)),
            _ => rng.gen_range(0..len),
        }
    }

    /// Count the situations a batch's tiles reached (for the rarity of parents).
    pub fn count_hits(&mut self, counts: &[crate::features::TileCounts]) {
        for s in counts.iter().flat_map(|c| c.situations()) {
            self.hits[s] += 1;
        }
    }

    /// Keep a tile that reached a new feature: in memory, and as a file named by the SHA-1 of
    /// its bytes (an existing file is left as it is). The file is renamed into place whole, so a
    /// killed hunt leaves whole files, but not synced to disk first (nor does libFuzzer sync its
    /// corpus): a tile an operating-system crash loses is one the hunt finds again, and a sync
    /// for each of the thousands of tiles a hunt keeps cost a third of its time.
    pub fn admit(&mut self, tile: &MmaCase, counts: &crate::features::TileCounts) -> std::io::Result<()> {
        let mut t = tile.clone();
        t.extra.clear();
        let bytes = codec::encode(self.path, std::slice::from_ref(&t)).map_err(std::io::Error::other)?;
        let name = codec::corpus_name(&bytes);
        if self.names.insert(name.clone()) {
            crate::store::replace_output_with(&self.dir.join(&name), |f| std::io::Write::write_all(f, &bytes))?;
        }
        self.tiles.push(t);
        self.reached.push(counts.0.iter().map(|&(s, _)| s).collect());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::path_by_id;

    #[test]
    fn population_files_read_back_and_run_first() {
        let path = path_by_id("mma.m16n8k16.f32.bf16.bf16.f32").unwrap();
        let dir = std::env::temp_dir().join(format!("mmafuzz-pop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut pop = Population::open(path, &dir).unwrap();
        let mut fresh = 0;
        let first = pop.next_batch(4, 9, 0, &mut fresh);
        assert_eq!(fresh, 4, "an empty population draws from the generators");
        let counts = crate::features::TileCounts((0..crate::features::SITUATIONS as u16).map(|s| (s, 1)).collect());
        pop.admit(&first[0], &counts).unwrap();
        pop.admit(&first[0], &counts).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "one file per distinct tile");
        let mutants = pop.next_batch(64, 9, 1, &mut fresh);
        assert!(mutants.iter().filter(|t| **t != first[0]).count() > 40);
        // Same seed, batch and population: the same tiles.
        let mut again = 0;
        let mut pop2 = Population::open(path, &dir).unwrap();
        assert_eq!(pop2.next_batch(1, 9, 0, &mut again)[0], first[0], "saved tiles run first");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
