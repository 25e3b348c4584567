//! The GPU hunt engine (`hunt --engine gpu`): tiles generated on the GPU ([`gen`] is the CPU's
//! twin of its generator), the instruction run, the model computed on the GPU ([`model`] names
//! the knobs it runs) and the two compared, in one kernel (`exec/kernels/engine.cu`); only the
//! numbers of divergent tiles cross PCIe. The CPU regenerates those tiles, runs them again on
//! both sides, classifies and minimises them as any hunt does.

pub mod gen;
pub mod model;
pub mod record;
pub mod tiles;

use crate::case::MmaCase;
use crate::exec::gpu::{Gpu, GpuError};
use crate::exec::PathSpec;
pub use model::EngineModel;

/// Warps per block of the engine kernels (`WARPS` in engine.cu).
const WARPS: u32 = 8;
/// Elements of one generated tile as the dump kernels write it: A (256), B (128), C (128).
const TILE_WORDS: usize = 512;

/// Which tiles one launch runs: tile i is hunt-wide tile (first + i)·shard_n + shard_i.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Launch {
    seed: u64,
    first: u64,
    count: u64,
    shard_n: u64,
    shard_i: u64,
}

// SAFETY: #[repr(C)] of five u64, the layout of the kernel's `Launch`.
unsafe impl cudarc::driver::DeviceRepr for Launch {}

/// What one hunting launch found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchResult {
    pub divergent_tiles: u64,
    pub divergent_elements: u64,
    /// Hunt-wide numbers of divergent tiles, ascending (at most the launch's cap).
    pub tiles: Vec<u64>,
    /// The lowest hunt-wide number of a divergent tile, listed or not.
    pub first: Option<u64>,
}

/// A launch's result whose list of divergent tiles is the same on every run. `launch(n)` runs
/// the first `n` tiles of the launch; the kernel lists whichever `cap` divergent tiles reach its
/// list first, so where more than `cap` of the `count` tiles diverge, shorter prefixes are run
/// again (each cut in proportion to aim at nine tenths of the list) until one diverges at no more
/// than `cap` tiles, and its whole list stands for the launch's. The counts, and so the prefix,
/// are the same on every run; the launch's counters and first divergent tile are the whole
/// launch's.
pub fn listed_in_order<E>(count: u64, cap: u32, mut launch: impl FnMut(u64) -> Result<LaunchResult, E>) -> Result<LaunchResult, E> {
    let mut whole = launch(count)?;
    if cap == 0 {
        whole.tiles.clear();
        return Ok(whole);
    }
    let (cap, mut len, mut diverged) = (cap as u64, count, whole.divergent_tiles);
    while diverged > cap {
        // diverged <= len, so len > cap >= 1 here.
        len = ((len as u128 * cap as u128 * 9 / (10 * diverged as u128)) as u64).clamp(1, len - 1);
        let prefix = launch(len)?;
        diverged = prefix.divergent_tiles;
        if diverged <= cap {
            whole.tiles = prefix.tiles;
        }
    }
    Ok(whole)
}

/// The engine on one GPU for one path and model.
pub struct GpuEngine<'g> {
    gpu: &'g Gpu,
    path: &'static PathSpec,
    model: EngineModel,
    module: std::sync::Arc<cudarc::driver::CudaModule>,
}

fn cuda(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> GpuError + '_ {
    move |source| GpuError::Cuda { what: what.into(), source }
}

impl<'g> GpuEngine<'g> {
    /// The engine for `path` under `model` (see [`EngineModel::new`] for what it refuses).
    pub fn new(gpu: &'g Gpu, path: &'static PathSpec, model: &crate::Model) -> Result<Self, String> {
        let em = EngineModel::new(model, path)?;
        if !gpu.supports(path) {
            return Err(format!("{} cannot run {}", gpu.info.name, path.id));
        }
        let module = gpu.load_ptx(crate::exec::ptx::ENGINE.text()).map_err(|e| e.to_string())?;
        Ok(GpuEngine { gpu, path, model: em, module })
    }

    fn function(&self, kind: &str) -> Result<cudarc::driver::CudaFunction, GpuError> {
        let name = format!("engine_{kind}_{}", self.path.kernel.trim_start_matches("mma_"));
        self.module.load_function(&name).map_err(|source| GpuError::Cuda { what: format!("finding kernel {name}"), source })
    }

    fn grid(count: u64) -> cudarc::driver::LaunchConfig {
        let blocks = count.div_ceil(WARPS as u64).clamp(1, 8192) as u32;
        cudarc::driver::LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (32 * WARPS, 1, 1), shared_mem_bytes: 0 }
    }

    /// Run `count` tiles from hunt-wide position `first` of a shard (`(0, 1)`: the whole hunt),
    /// keeping the numbers of at most `cap` divergent tiles: every divergent tile where they are
    /// `cap` or fewer, else every one of a prefix of the launch that holds at most `cap`, cut
    /// by the launch's counts ([`listed_in_order`]), so that the list is the same on every run
    /// and GPU.
    pub fn hunt(&self, seed: u64, first: u64, count: u64, shard: (u64, u64), cap: u32) -> Result<LaunchResult, GpuError> {
        listed_in_order(count, cap, |n| self.launch(seed, first, n, shard, cap))
    }

    /// One launch of the hunting kernel over `count` tiles; where more than `cap` diverge, which
    /// ones it lists depends on the order its warps reach the list.
    fn launch(&self, seed: u64, first: u64, count: u64, (shard_i, shard_n): (u64, u64), cap: u32) -> Result<LaunchResult, GpuError> {
        use cudarc::driver::PushKernelArg;
        let s = self.gpu.stream();
        let f = self.function("hunt")?;
        let mut counters = s.clone_htod(&[0, 0, 0, u64::MAX]).map_err(cuda("allocating counters"))?;
        let mut found = s.alloc_zeros::<u64>(cap.max(1) as usize).map_err(cuda("allocating the divergent-tile list"))?;
        let launch = Launch { seed, first, count, shard_n, shard_i };
        let mut b = s.launch_builder(&f);
        b.arg(&self.model).arg(&launch).arg(&mut counters).arg(&mut found).arg(&cap);
        // SAFETY: the kernel writes four counters and at most `cap` entries of `found`, both
        // allocated here at those sizes; it reads nothing else from memory.
        unsafe { b.launch(Self::grid(count)) }.map_err(cuda("launching the engine"))?;
        let c = s.clone_dtoh(&counters).map_err(cuda("copying the counters back"))?;
        let listed = (c[2] as usize).min(cap as usize);
        let mut tiles = s.clone_dtoh(&found).map_err(cuda("copying the divergent tiles back"))?;
        s.synchronize().map_err(cuda("waiting for the GPU"))?;
        tiles.truncate(listed);
        tiles.sort_unstable();
        Ok(LaunchResult { divergent_tiles: c[0], divergent_elements: c[1], tiles, first: (c[3] != u64::MAX).then_some(c[3]) })
    }

    /// The GPU's own generated tiles `first..first+count` of `seed` and its model's D of each:
    /// what [`gen::tile`] and the emulator must reproduce.
    pub fn dump(&self, seed: u64, first: u64, count: u64) -> Result<(Vec<MmaCase>, Vec<Vec<u64>>), GpuError> {
        use cudarc::driver::PushKernelArg;
        let s = self.gpu.stream();
        let f = self.function("dump")?;
        let n = count as usize;
        let mut tiles = s.alloc_zeros::<u32>(n * TILE_WORDS).map_err(cuda("allocating tiles"))?;
        let mut d = s.alloc_zeros::<u32>(n * 128).map_err(cuda("allocating D"))?;
        let launch = Launch { seed, first, count, shard_n: 1, shard_i: 0 };
        let mut b = s.launch_builder(&f);
        b.arg(&self.model).arg(&launch).arg(&mut tiles).arg(&mut d);
        // SAFETY: the kernel writes 512 words of `tiles` and 128 of `d` per tile, count tiles.
        unsafe { b.launch(Self::grid(count)) }.map_err(cuda("launching the engine dump"))?;
        let tiles = s.clone_dtoh(&tiles).map_err(cuda("copying tiles back"))?;
        let d = s.clone_dtoh(&d).map_err(cuda("copying D back"))?;
        s.synchronize().map_err(cuda("waiting for the GPU"))?;
        let cases = tiles.chunks(TILE_WORDS).map(|w| self.case_from_words(w)).collect();
        Ok((cases, d.chunks(128).map(|x| x.iter().map(|&v| v as u64).collect()).collect()))
    }

    /// The engine's model on given tiles (of this path's formats and shape).
    pub fn model_tiles(&self, cases: &[MmaCase]) -> Result<Vec<Vec<u64>>, GpuError> {
        use cudarc::driver::PushKernelArg;
        if cases.is_empty() {
            return Ok(vec![]);
        }
        for (i, c) in cases.iter().enumerate() {
            self.path.check(c).map_err(|e| GpuError::WrongCase(format!("case {i}: {e}")))?;
        }
        let s = self.gpu.stream();
        let f = self.function("model")?;
        let words: Vec<u32> = cases.iter().flat_map(|c| c.a.iter().chain(&c.b).chain(&c.c).map(|&x| x as u32)).collect();
        let input = s.clone_htod(&words).map_err(cuda("copying tiles"))?;
        let mut d = s.alloc_zeros::<u32>(cases.len() * 128).map_err(cuda("allocating D"))?;
        let count = cases.len() as u64;
        let mut b = s.launch_builder(&f);
        b.arg(&self.model).arg(&input).arg(&count).arg(&mut d);
        // SAFETY: reads 512 words and writes 128 per tile, count tiles, sizes from `cases`.
        unsafe { b.launch(Self::grid(count)) }.map_err(cuda("launching the engine model"))?;
        let d = s.clone_dtoh(&d).map_err(cuda("copying D back"))?;
        s.synchronize().map_err(cuda("waiting for the GPU"))?;
        Ok(d.chunks(128).map(|x| x.iter().map(|&v| v as u64).collect()).collect())
    }

    fn case_from_words(&self, w: &[u32]) -> MmaCase {
        let mut c = MmaCase::zeros(self.path.a_fmt, self.path.c_fmt, gen::M, gen::N, gen::K);
        let (a, rest) = w.split_at(gen::M * gen::K);
        let (b, cc) = rest.split_at(gen::K * gen::N);
        c.a = a.iter().map(|&x| x as u64).collect();
        c.b = b.iter().map(|&x| x as u64).collect();
        c.c = cc.iter().map(|&x| x as u64).collect();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the kernel: tiles whose number is divisible by 3 or 7 diverge; past `cap`,
    /// it lists a different `cap` of them on every run (as warps racing to the list do).
    fn racing(divergent: &[u64], n: u64, cap: u64, run: &mut u64) -> Result<LaunchResult, ()> {
        *run += 1;
        let mine: Vec<u64> = divergent.iter().copied().filter(|&t| t < n).collect();
        let mut listed: Vec<u64> = mine.iter().copied().filter(|t| (t.wrapping_mul(2654435761) ^ *run) % 5 != 0).take(cap as usize).collect();
        if mine.len() as u64 <= cap {
            listed = mine.clone();
        }
        listed.sort_unstable();
        Ok(LaunchResult { divergent_tiles: mine.len() as u64, divergent_elements: 2 * mine.len() as u64, tiles: listed, first: mine.first().copied() })
    }

    #[test]
    fn the_listed_tiles_are_the_same_on_every_run() {
        let divergent: Vec<u64> = (0..100_000u64).filter(|t| t % 3 == 0 || t % 7 == 0).collect();
        for (count, cap) in [(100_000u64, 4096u32), (5_000, 4096), (100_000, 1), (37, 4096)] {
            let mut lists = Vec::new();
            for start in [0u64, 1_000, 77] {
                let mut run = start;
                let r = listed_in_order(count, cap, |n| racing(&divergent, n, cap as u64, &mut run)).unwrap();
                let all: Vec<u64> = divergent.iter().copied().filter(|&t| t < count).collect();
                assert_eq!((r.divergent_tiles, r.first), (all.len() as u64, all.first().copied()), "the counters are the whole launch's");
                assert!(r.tiles.len() as u64 <= cap as u64 && r.tiles[..] == all[..r.tiles.len()], "a prefix of the divergent tiles, in order");
                lists.push(r.tiles);
            }
            assert!(lists.windows(2).all(|w| w[0] == w[1]), "count {count}, cap {cap}: {:?}", lists.iter().map(Vec::len).collect::<Vec<_>>());
        }
    }
}
