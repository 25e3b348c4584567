//! Tiles made and run on the GPU for a model on the CPU (`hunt --engine gpu-tiles`): the GPU
//! engine's generator makes each tile ([`super::gen`] is its CPU twin), the instruction runs it,
//! and every tile comes back with its D, so that any model the emulator runs (not only what the
//! GPU engine computes) meets GPU-made tiles without the CPU generating or packing them.

use super::{cuda, gen, Launch, WARPS};
use crate::case::MmaCase;
use crate::exec::gpu::{Gpu, GpuError};
use crate::exec::PathSpec;

/// Words of one tile as `engine_run_*` writes it (`RUN_WORDS` in engine.cu): A's 256 and B's 128
/// 16-bit values in pairs (element 2s in the low half of word s), C (128 words), then the
/// instruction's D (128 words, row-major).
pub const RUN_WORDS: usize = D_AT + gen::M * gen::N;
const A_WORDS: usize = gen::M * gen::K / 2;
const B_WORDS: usize = gen::K * gen::N / 2;
const C_AT: usize = A_WORDS + B_WORDS;
const D_AT: usize = C_AT + gen::M * gen::N;

/// A launch's tiles and D, [`RUN_WORDS`] per tile.
#[derive(Default)]
pub struct RunTiles {
    pub words: Vec<u32>,
}

impl RunTiles {
    pub fn len(&self) -> usize {
        self.words.len() / RUN_WORDS
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Tile `i` written into `case` (a case of the path's formats and shape, as
    /// [`GpuTiles::blank`] makes), and the GPU's D of it.
    pub fn tile_into<'w>(&'w self, i: usize, case: &mut MmaCase) -> &'w [u32] {
        let w = &self.words[i * RUN_WORDS..(i + 1) * RUN_WORDS];
        let halves = |words: &[u32], out: &mut [u64]| {
            for (pair, x) in out.chunks_exact_mut(2).zip(words) {
                pair[0] = (x & 0xffff) as u64;
                pair[1] = (x >> 16) as u64;
            }
        };
        halves(&w[..A_WORDS], &mut case.a);
        halves(&w[A_WORDS..C_AT], &mut case.b);
        for (c, &x) in case.c.iter_mut().zip(&w[C_AT..D_AT]) {
            *c = x as u64;
        }
        &w[D_AT..]
    }

    /// The GPU's D of tile `i`.
    pub fn d(&self, i: usize) -> &[u32] {
        &self.words[i * RUN_WORDS + D_AT..(i + 1) * RUN_WORDS]
    }

    /// Whether every C pattern of tiles `range` fits `c_fmt` (C comes a word an element).
    pub fn c_fits(&self, range: std::ops::Range<usize>, c_fmt: crate::Format) -> bool {
        let c_or = range.map(|i| self.words[i * RUN_WORDS + C_AT..i * RUN_WORDS + D_AT].iter().fold(0, |or, &x| or | x)).fold(0, |a, b| a | b);
        c_or as u64 & !c_fmt.mask() == 0
    }

    /// Tiles `range` copied into `bytes` (reused) as little-endian bytes, the layout
    /// [`RunTiles::le_tile`] reads.
    pub fn le_bytes_into(&self, range: std::ops::Range<usize>, bytes: &mut Vec<u8>) {
        let words = &self.words[range.start * RUN_WORDS..range.end * RUN_WORDS];
        bytes.resize(4 * words.len(), 0);
        for (b, w) in bytes.chunks_exact_mut(4).zip(words) {
            b.copy_from_slice(&w.to_le_bytes());
        }
    }

    /// Tile `t` of [`RunTiles::le_bytes_into`]'s bytes: A, B and C, each its bytes and element
    /// width as [`crate::Emulator::run_many_le`] takes them (A and B two 16-bit values a word,
    /// the lower first: 2 bytes an element; C a word an element: 4 bytes).
    pub fn le_tile(bytes: &[u8], t: usize) -> [(&[u8], usize); 3] {
        let w = &bytes[t * 4 * RUN_WORDS..(t + 1) * 4 * RUN_WORDS];
        [(&w[..4 * A_WORDS], 2), (&w[4 * A_WORDS..4 * C_AT], 2), (&w[4 * C_AT..4 * D_AT], 4)]
    }
}

/// The generator and the instruction of one m16n8k16 path on one GPU.
pub struct GpuTiles<'g> {
    gpu: &'g Gpu,
    path: &'static PathSpec,
    function: cudarc::driver::CudaFunction,
}

impl<'g> GpuTiles<'g> {
    /// The path's run kernel, or why this path or GPU cannot have one.
    pub fn new(gpu: &'g Gpu, path: &'static PathSpec) -> Result<Self, String> {
        if !gen::supports(path) {
            return Err(format!("the GPU engine's generator makes no tiles for {} (it makes m16n8k16 f16/bf16 tiles)", path.id));
        }
        if !gpu.supports(path) {
            return Err(format!("{} cannot run {}", gpu.info.name, path.id));
        }
        let module = gpu.load_ptx(crate::exec::ptx::ENGINE.text()).map_err(|e| e.to_string())?;
        let name = format!("engine_run_{}", path.kernel.trim_start_matches("mma_"));
        let function = module.load_function(&name).map_err(|e| format!("finding kernel {name}: {e}"))?;
        Ok(GpuTiles { gpu, path, function })
    }

    /// A case of the path's formats and shape for [`RunTiles::tile_into`] to fill.
    pub fn blank(&self) -> MmaCase {
        let mut c = MmaCase::zeros(self.path.a_fmt, self.path.c_fmt, gen::M, gen::N, gen::K);
        self.path.conform(&mut c);
        c
    }

    /// Tiles `first..first + count` of a shard (`(0, 1)`: the whole hunt) of `seed`, generated
    /// and run on the GPU, into `out` (its allocation reused).
    pub fn run(&self, seed: u64, first: u64, count: u64, (shard_i, shard_n): (u64, u64), out: &mut RunTiles) -> Result<(), GpuError> {
        use cudarc::driver::PushKernelArg;
        let s = self.gpu.stream();
        let words = count as usize * RUN_WORDS;
        // SAFETY: the kernel writes all RUN_WORDS words of each of the `count` tiles before the
        // copy below reads them.
        let mut dev = unsafe { s.alloc::<u32>(words) }.map_err(cuda("allocating tiles"))?;
        let launch = Launch { seed, first, count, shard_n, shard_i };
        let mut b = s.launch_builder(&self.function);
        b.arg(&launch).arg(&mut dev);
        let blocks = count.div_ceil(WARPS as u64).clamp(1, 8192) as u32;
        let cfg = cudarc::driver::LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (32 * WARPS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the kernel writes RUN_WORDS words per tile for `count` tiles, the allocation's size.
        unsafe { b.launch(cfg) }.map_err(cuda("launching the tile kernel"))?;
        out.words.resize(words, 0);
        s.memcpy_dtoh(&dev, out.words.as_mut_slice()).map_err(cuda("copying tiles back"))?;
        s.synchronize().map_err(cuda("waiting for the GPU"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path the generator makes tiles for has its run kernel in the committed PTX (a
    /// kernel added to engine.cu without `scripts/build-ptx.sh` fails here, not on the GPU).
    #[test]
    fn every_engine_path_has_a_run_kernel() {
        let paths: Vec<_> = crate::exec::PATHS.iter().filter(|p| gen::supports(p)).collect();
        assert_eq!(paths.len(), 3);
        for p in paths {
            let entry = format!(".entry engine_run_{}(", p.kernel.trim_start_matches("mma_"));
            assert!(crate::exec::ptx::ENGINE.text().contains(&entry), "{entry}");
        }
    }

    /// The word layout reads back into the generator's own tile: A and B from their 16-bit
    /// pairs, C whole, D after them.
    #[test]
    fn words_read_back_into_the_generated_tile() {
        let p = crate::exec::path_by_id("mma.m16n8k16.f32.bf16.bf16.f32").unwrap();
        let want = gen::tile(p, 5, 77);
        let mut words = Vec::with_capacity(2 * RUN_WORDS);
        words.extend(std::iter::repeat_n(0xdead_beef, RUN_WORDS));
        words.extend(want.a.chunks(2).map(|x| (x[0] | x[1] << 16) as u32));
        words.extend(want.b.chunks(2).map(|x| (x[0] | x[1] << 16) as u32));
        words.extend(want.c.iter().map(|&x| x as u32));
        words.extend(0..128u32);
        let run = RunTiles { words };
        assert_eq!(run.len(), 2);
        let mut case = MmaCase::zeros(p.a_fmt, p.c_fmt, gen::M, gen::N, gen::K);
        let d = run.tile_into(1, &mut case);
        assert_eq!((&case.a, &case.b, &case.c), (&want.a, &want.b, &want.c));
        assert_eq!(d, (0..128).collect::<Vec<u32>>());
        case.validate().unwrap();
    }
}
