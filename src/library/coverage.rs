//! Shape coverage of the library corpus: which of the kernel configurations the library runs
//! (the learned table's) recorded GEMMs have reached, and shapes that steer the next recording
//! toward the ones not reached yet.
//!
//! Coverage here is the set of distinct kernel configurations (algorithm, tile, stages, split-K
//! count, reduction scheme, ...), the things that decide a library GEMM's arithmetic; a new
//! configuration is a new schedule to check, a new random matrix under a known one mostly is not.

use super::op::TorchOp;
use super::config::KernelConfig;
use super::table::ConfigTable;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};

/// A shape to record on the GPU: PyTorch's m, n, k and β, and why it was chosen.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShapeJob {
    pub path: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub beta: u8,
    /// `unseen`: the table's kernel for this shape was never recorded; `fresh`: off the grid.
    pub why: String,
}

/// What the recorded GEMMs of one path reached of its table's configurations.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    /// Distinct configurations in the learned table.
    pub table_configs: usize,
    /// Of those, how many some recorded GEMM ran.
    pub reached: usize,
    /// Configurations recorded that the table does not have (off-grid shapes).
    pub beyond_table: usize,
    /// Shapes of the table whose configuration was reached, of all its shapes.
    pub shapes_reached: usize,
    pub shapes: usize,
    /// Unreached configurations with how many table shapes use each, most used first.
    pub unreached: Vec<(KernelConfig, usize)>,
}

/// Coverage of `table` by the configurations of recorded GEMMs.
pub fn coverage(table: &ConfigTable, recorded: &HashSet<KernelConfig>) -> Coverage {
    let mut uses: HashMap<&KernelConfig, usize> = HashMap::new();
    for (_, c) in table.iter() {
        *uses.entry(c).or_default() += 1;
    }
    let mut unreached: Vec<(KernelConfig, usize)> = uses.iter().filter(|(c, _)| !recorded.contains(*c)).map(|(&c, &n)| (c.clone(), n)).collect();
    unreached.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.to_log().cmp(&b.0.to_log())));
    Coverage {
        table_configs: uses.len(),
        reached: uses.len() - unreached.len(),
        beyond_table: recorded.iter().filter(|c| !uses.contains_key(c)).count(),
        shapes_reached: uses.iter().filter(|(c, _)| recorded.contains(*c)).map(|(_, n)| n).sum(),
        shapes: table.len(),
        unreached,
    }
}

/// Sizes that shake the library's choice: odd, prime, powers of two and their neighbours.
const SIZES: &[usize] = &[
    1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33, 63, 64, 65, 97, 127, 128, 129, 200, 255, 256, 257, 383, 509, 511, 512, 513, 768, 1000,
    1021, 1023, 1024, 1025, 1536, 2047, 2048, 2049, 3001, 4093, 4095, 4096, 4097, 6000, 8191, 8192, 8193, 12289, 16383, 16384,
    16385, 20011,
];

/// `count` shapes for `path` to record next: first one table shape for each configuration no
/// recorded GEMM has reached (the most used first, cheapest shape of each), then shapes off the
/// grid drawn from [`SIZES`] with m·n·k at most `max_mnk`. Deterministic in `seed`.
pub fn steer(path: &str, table: &ConfigTable, recorded: &HashSet<KernelConfig>, count: usize, max_mnk: usize, seed: u64) -> Vec<ShapeJob> {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let cov = coverage(table, recorded);
    let mut cheapest: HashMap<&KernelConfig, (usize, usize, usize, bool)> = HashMap::new();
    for ((m, n, k, op), c) in table.iter() {
        // Steered shapes are torch.mm or torch.addmm calls.
        let beta = match op {
            TorchOp::Mm => false,
            TorchOp::Addmm => true,
            _ => continue,
        };
        if m * n * k > max_mnk {
            continue;
        }
        let e = cheapest.entry(c).or_insert((m, n, k, beta));
        if (m * n * k, m, n, k, beta) < (e.0 * e.1 * e.2, e.0, e.1, e.2, e.3) {
            *e = (m, n, k, beta);
        }
    }
    let mut jobs: Vec<ShapeJob> = cov
        .unreached
        .iter()
        .filter_map(|(c, _)| cheapest.get(c))
        .take(count)
        .map(|&(m, n, k, beta)| ShapeJob { path: path.to_string(), m, n, k, beta: beta as u8, why: "unseen".into() })
        .collect();
    let mut guard = 0;
    while jobs.len() < count && guard < 100 * count {
        guard += 1;
        let (m, n, k) = (*SIZES.choose(&mut rng).expect("sizes"), *SIZES.choose(&mut rng).expect("sizes"), *SIZES.choose(&mut rng).expect("sizes"));
        let learned = table.get(m, n, k, TorchOp::Mm).is_some() || table.get(m, n, k, TorchOp::Addmm).is_some();
        if m * n * k > max_mnk || learned {
            continue;
        }
        jobs.push(ShapeJob { path: path.to_string(), m, n, k, beta: rng.gen_range(0..2), why: "fresh".into() });
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> ConfigTable {
        ConfigTable::parse(
            "cfg\ta\talgoId=66 tile=MATMUL_TILE_64x8\ncfg\tb\talgoId=66 tile=MATMUL_TILE_64x32 numSplitsK=3 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE\ncfg\tc\talgoId=24\n\
             128\t128\t64\t0\ta\n128\t128\t4096\t0\tb\n64\t64\t4096\t0\tb\n8\t8\t8\t1\tc\n8192\t8192\t8192\t0\ta\n",
        )
        .unwrap()
    }

    #[test]
    fn coverage_counts_reached_configurations_and_their_shapes() {
        let t = table();
        let seen: HashSet<KernelConfig> = [KernelConfig::from_log("algoId=66 tile=MATMUL_TILE_64x8").unwrap(), KernelConfig::from_log("algoId=99").unwrap()].into();
        let c = coverage(&t, &seen);
        assert_eq!((c.table_configs, c.reached, c.beyond_table, c.shapes_reached, c.shapes), (3, 1, 1, 2, 5));
        // The split-K kernel is used by two shapes: it leads the unreached list.
        assert_eq!(c.unreached[0].1, 2);
        assert_eq!(c.unreached[0].0.split_k, 3);
    }

    #[test]
    fn steering_asks_first_for_unseen_kernels_at_their_cheapest_shape() {
        let t = table();
        let seen: HashSet<KernelConfig> = [KernelConfig::from_log("algoId=66 tile=MATMUL_TILE_64x8").unwrap()].into();
        let jobs = steer("p", &t, &seen, 6, 1 << 31, 7);
        assert_eq!(jobs.len(), 6);
        assert_eq!((jobs[0].m, jobs[0].n, jobs[0].k, jobs[0].why.as_str()), (64, 64, 4096, "unseen"));
        // Then algorithm 24 (one shape, 8x8x8 with beta 1).
        assert_eq!((jobs[1].m, jobs[1].k, jobs[1].beta), (8, 8, 1));
        assert!(jobs[2..].iter().all(|j| j.why == "fresh" && j.m * j.n * j.k <= 1 << 31));
        assert_eq!(jobs, steer("p", &t, &seen, 6, 1 << 31, 7), "deterministic in the seed");
    }
}
