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
    /// keeping the numbers of at most `cap` divergent tiles.
    pub fn hunt(&self, seed: u64, first: u64, count: u64, (shard_i, shard_n): (u64, u64), cap: u32) -> Result<LaunchResult, GpuError> {
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
