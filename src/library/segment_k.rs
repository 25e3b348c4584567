//! How many segments cuBLAS's segment-K kernel cuts K into, at a shape where none was measured.
//!
//! The kernel (TF32 algorithm 43 with `numSplitsK=-1`) picks its split at run time. Measured by
//! FPRev on Hopper, its choice is what a cost model of the split gives: with B blocks (output
//! tiles rounded up to whole clusters) of which the GPU holds C at once, S segments of
//! ⌈K/32⌉/S k-tiles each cost that many k-tiles plus a fixed overhead per level of the pairwise
//! tree that adds the segments' partial sums, ⌈log2 S⌉ levels; the kernel takes the cheapest S
//! from 1 to ⌊C/B⌋ (the smallest on a tie). The overhead is in k-tiles of a 128×64 tile and
//! shrinks as the tile grows (a larger tile spends longer per k-tile), by a power of the area
//! ratio. C depends on the cluster shape: how many clusters of that many blocks fit on the
//! GPU's SMs at once.

use super::config::KernelConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The area (elements) of the tile whose k-tiles `overhead` counts in.
const REFERENCE_TILE: f64 = 128.0 * 64.0;

/// The segment-K kernel's choice of split (`[schedule.runtime_split.choice]`).
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SplitChoice {
    /// The cost of one level of the segments' reduction tree, in k-tiles of a 128×64 tile.
    pub overhead: f64,
    /// How that cost in k-tiles scales with the tile: by (8192 / tile area) to this power.
    pub area_power: f64,
    /// Blocks resident at once, per cluster size (blocks in the log's `clusterShape`; `none` for
    /// a kernel whose log names no cluster shape). A cluster size not listed is declined.
    pub resident: BTreeMap<String, usize>,
}

impl SplitChoice {
    /// The segment count for PyTorch's m×n×k GEMM run with `config`, K cut in `k_tile`-deep
    /// tiles; `linear`: through F.linear. None where the configuration names no tile or a
    /// cluster size whose residency is not listed.
    ///
    /// The log's tile `MxN` and cluster `XxY` cover PyTorch's m×n for torch.mm and addmm and its
    /// n×m for F.linear; a kernel that names no cluster shape lies the other way round (each as
    /// measured).
    pub fn segments(&self, config: &KernelConfig, m: usize, n: usize, k: usize, k_tile: usize, linear: bool) -> Option<usize> {
        let (tm, tn) = dims(config.tile.as_deref()?)?;
        let cluster = config.other.get("clusterShape").map(|s| dims(s.trim_start_matches("CLUSTER_SHAPE_")));
        let (cx, cy, key) = match cluster {
            Some(c) => {
                let (x, y) = c?;
                (x, y, (x * y).to_string())
            }
            None => (1, 1, "none".to_string()),
        };
        let resident = *self.resident.get(&key)?;
        let along_m = linear == cluster.is_none();
        let (rows, cols) = if along_m { (m, n) } else { (n, m) };
        let whole = |len: usize, tile: usize, c: usize| len.div_ceil(tile).div_ceil(c) * c;
        let blocks = whole(rows, tm, cx) * whole(cols, tn, cy);
        // Never more segments than k-tiles: a segment holds at least one.
        let tiles = k.div_ceil(k_tile.max(1)).max(1);
        let most = (resident / blocks.max(1)).clamp(1, tiles);
        let k_tiles = tiles as f64;
        let overhead = self.overhead * (REFERENCE_TILE / (tm * tn) as f64).powf(self.area_power);
        let cost = |s: usize| k_tiles / s as f64 + overhead * f64::from(usize::BITS - (s - 1).leading_zeros());
        (1..=most).min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
    }

    /// Checks the numbers: overhead finite and not negative, every residency at least 1.
    pub fn check(&self) -> Result<(), String> {
        if !(self.overhead.is_finite() && self.overhead >= 0.0) {
            return Err(format!("choice.overhead = {} must be a finite number at least 0", self.overhead));
        }
        if !self.area_power.is_finite() {
            return Err(format!("choice.area_power = {} must be a finite number", self.area_power));
        }
        for (size, &c) in &self.resident {
            if size != "none" && size.parse::<usize>().map_or(true, |s| s == 0) {
                return Err(format!("choice.resident: '{size}' is not a cluster size (a whole number, or none)"));
            }
            if c == 0 {
                return Err(format!("choice.resident.{size} = 0: at least one block must fit"));
            }
        }
        Ok(())
    }
}

/// "AxB" (a tile or the start of a cluster shape "AxBx1") as two positive numbers.
fn dims(s: &str) -> Option<(usize, usize)> {
    let mut it = s.split('x').map(|p| p.parse::<usize>().ok().filter(|&v| v > 0));
    Some((it.next()??, it.next()??))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice() -> SplitChoice {
        let resident = [("1", 132), ("2", 132), ("4", 120), ("none", 120)].into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        SplitChoice { overhead: 22.0, area_power: 0.5, resident }
    }

    fn cfg(tile: &str, cluster: Option<&str>) -> KernelConfig {
        let c = cluster.map(|c| format!(" clusterShape=CLUSTER_SHAPE_{c}x1")).unwrap_or_default();
        KernelConfig::from_log(&format!("algoId=43 tile=MATMUL_TILE_{tile} stages=MATMUL_STAGES_32xAUTO numSplitsK=-1{c}")).unwrap()
    }

    /// Segment counts FPRev measured on an H100 (corpus/library/fprev/h100-20261126-tf32-segk.json.xz).
    #[test]
    fn gives_measured_counts() {
        let c = choice();
        // 128x128 tiles, no cluster rounding: 18 tiles at K = 16384 run 7 segments (132 / 18).
        assert_eq!(c.segments(&cfg("128x128", Some("1x1")), 384, 768, 16384, 32, false), Some(7));
        // 1x4 clusters hold 120 blocks: 32 blocks at 8192 run 3, not 4.
        assert_eq!(c.segments(&cfg("128x64", Some("1x4")), 1024, 256, 8192, 32, false), Some(3));
        // 48 blocks: two segments once K has 48 k-tiles, one below.
        assert_eq!(c.segments(&cfg("128x64", Some("1x4")), 512, 768, 1536, 32, false), Some(2));
        assert_eq!(c.segments(&cfg("128x64", Some("1x4")), 512, 768, 1280, 32, false), Some(1));
        // A kernel without a cluster shape lies the other way: 4096x128 is 64 blocks, unsplit.
        assert_eq!(c.segments(&cfg("128x64", None), 4096, 128, 6144, 32, false), Some(1));
        assert_eq!(c.segments(&cfg("128x64", None), 3072, 128, 2048, 32, false), Some(2));
    }

    #[test]
    fn declines_without_tile_or_residency() {
        let c = choice();
        assert_eq!(c.segments(&cfg("128x64", Some("1x3")), 512, 768, 1536, 32, false), None, "cluster size 3 not listed");
        let untiled = KernelConfig::from_log("algoId=43 numSplitsK=-1").unwrap();
        assert_eq!(c.segments(&untiled, 512, 768, 1536, 32, false), None);
        assert!(SplitChoice { overhead: f64::NAN, ..choice() }.check().is_err());
        // No overhead: as many segments as fit, but never more than K has k-tiles.
        let free = SplitChoice { overhead: 0.0, ..choice() };
        assert_eq!(free.segments(&cfg("128x128", Some("1x1")), 128, 128, 64, 32, false), Some(2));
        let mut zero = choice();
        zero.resident.insert("8".into(), 0);
        assert!(zero.check().is_err());
    }
}
