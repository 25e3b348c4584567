//! The GPU executor: batches of tile cases through one instruction path's kernel, one warp per
//! case, one launch per batch. Every output element is poisoned before the launch and checked
//! afterwards; every CUDA call's error is returned, never unwrapped.

use super::paths::{Module, PathSpec};
use crate::case::MmaCase;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DevicePtrMut, DeviceRepr, DriverError, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use rayon::prelude::*;
use std::sync::Arc;

/// Why the GPU could not run something.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no CUDA driver on this machine (libcuda not found): GPU commands need an NVIDIA GPU and its driver")]
    NoDriver,
    #[error("the CUDA driver reports no GPU")]
    NoDevice,
    #[error("GPU {0} does not exist (this machine has {1})")]
    BadOrdinal(usize, usize),
    #[error("CUDA error while {what}: {source}")]
    Cuda { what: String, source: DriverError },
    #[error("{0}")]
    WrongCase(String),
    #[error("path {path} needs compute capability {need_major}.{need_minor}, the GPU has {major}.{minor}")]
    Unsupported { path: String, need_major: i32, need_minor: i32, major: i32, minor: i32 },
    #[error("the kernel left {0} output elements unwritten (poison survived): layout or launch bug")]
    Unwritten(usize),
    #[error("cuBLAS is not available (libcublas or libcublasLt not found on the library path)")]
    NoCublas,
    #[error("cuBLAS error while {what}: {source}")]
    Cublas { what: String, source: cudarc::cublas::result::CublasError },
    #[error("cuBLAS/cuBLASLt error while {what}: {status}")]
    Library { what: String, status: String },
}

fn cuda(what: impl Into<String>) -> impl FnOnce(DriverError) -> GpuError {
    let what = what.into();
    move |source| GpuError::Cuda { what, source }
}

/// What the corpus records of the machine that produced an output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    /// CUDA driver version as the driver reports it, e.g. "13.0".
    pub driver: String,
}

/// One open GPU with the mma.sync module loaded.
pub struct Gpu {
    pub info: GpuInfo,
    stream: Arc<CudaStream>,
    mma_sync: Arc<CudaModule>,
    /// Loaded only on GPUs with wgmma (sm_90a).
    wgmma: Option<Arc<CudaModule>>,
}

/// Number of GPUs, or why there are none to use.
pub fn device_count() -> Result<usize, GpuError> {
    // CudaContext::new panics when libcuda is absent: ask first.
    // SAFETY: only probes whether the library can be loaded.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(GpuError::NoDriver);
    }
    let n = CudaContext::device_count().map_err(cuda("counting GPUs"))?;
    if n <= 0 {
        return Err(GpuError::NoDevice);
    }
    Ok(n as usize)
}

fn driver_version() -> Result<String, GpuError> {
    let mut v = 0i32;
    // SAFETY: the driver library is present (checked by `device_count`) and `v` is a valid out pointer.
    let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    r.result().map_err(cuda("reading the driver version"))?;
    Ok(format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// Threads per block: four warps, four tile cases.
const WARPS_PER_BLOCK: u32 = 4;

impl Gpu {
    /// Open GPU `ordinal` and load the kernels.
    pub fn open(ordinal: usize) -> Result<Gpu, GpuError> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(GpuError::BadOrdinal(ordinal, count));
        }
        let ctx = CudaContext::new(ordinal).map_err(cuda("creating a context"))?;
        let info = GpuInfo {
            ordinal,
            name: ctx.name().map_err(cuda("reading the GPU name"))?,
            compute_capability: ctx.compute_capability().map_err(cuda("reading the compute capability"))?,
            driver: driver_version()?,
        };
        let load = |m: Module| ctx.load_module(cudarc::nvrtc::Ptx::from_src(m.ptx()));
        let mma_sync = load(Module::MmaSync).map_err(cuda("loading the mma.sync PTX module"))?;
        let wgmma = if info.compute_capability == (9, 0) {
            Some(load(Module::Wgmma).map_err(cuda("loading the wgmma PTX module"))?)
        } else {
            None
        };
        Ok(Gpu { info, stream: ctx.default_stream(), mma_sync, wgmma })
    }

    /// The stream every launch on this GPU goes through.
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Load another PTX module into this GPU's context (the hunt engine's).
    pub(crate) fn load_ptx(&self, ptx: &str) -> Result<Arc<CudaModule>, GpuError> {
        self.stream.context().load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(cuda("loading a PTX module"))
    }

    /// Whether this GPU has the path's instruction (wgmma: exactly sm_90a; cuBLAS: the library
    /// can be loaded).
    pub fn supports(&self, path: &PathSpec) -> bool {
        match path.module {
            Module::MmaSync => self.info.compute_capability >= path.min_cc,
            Module::Wgmma => self.wgmma.is_some(),
            // SAFETY: only probes whether the library can be loaded.
            Module::Cublas => self.info.compute_capability >= path.min_cc && unsafe { cudarc::cublas::sys::is_culib_present() && cudarc::cublaslt::sys::is_culib_present() },
            Module::Simulated => false,
        }
    }

    /// Run a batch of cases through `path`; each result is D (row-major, C's format).
    /// `poison` fills D before the launch; an element still equal to it afterwards is counted in
    /// the returned number of possibly unwritten elements (a real result can equal the poison, so
    /// callers run twice with different poisons, see [`Gpu::run_checked`]).
    pub fn run_once(&self, path: &PathSpec, cases: &[MmaCase], poison: u64) -> Result<(Vec<Vec<u64>>, Vec<bool>), GpuError> {
        let run = self.run_poisoned(path, cases, &[poison])?;
        Ok((run.results, run.unwritten))
    }

    /// The batch run once per poison (its inputs laid out and uploaded once): the first run's
    /// D, the elements every run left equal to its poison, the tiles whose runs differ.
    fn run_poisoned(&self, path: &PathSpec, cases: &[MmaCase], poisons: &[u64]) -> Result<Poisoned, GpuError> {
        if !self.supports(path) {
            let (major, minor) = self.info.compute_capability;
            return Err(GpuError::Unsupported { path: path.id.into(), need_major: path.min_cc.0, need_minor: path.min_cc.1, major, minor });
        }
        let wrong = |(i, c): (usize, &MmaCase)| path.check(c).err().map(|e| GpuError::WrongCase(format!("case {i}: {e}")));
        let first_wrong = if cases.len() < PARALLEL_FROM { cases.iter().enumerate().find_map(wrong) } else { cases.par_iter().enumerate().find_map_first(wrong) };
        if let Some(e) = first_wrong {
            return Err(e);
        }
        if path.module == Module::Cublas {
            let runs = poisons.iter().map(|&poison| self.run_cublas(path, cases, poison)).collect::<Result<Vec<_>, _>>()?;
            return Ok(Poisoned::of(runs));
        }
        let f = self.kernel(path)?;
        let m = path.module;
        // Element containers: 4-bit and 1-bit operands travel one per byte.
        let container = |f: crate::Format| f.storage_bits().div_ceil(8) * 8;
        match (container(path.a_fmt), container(path.c_fmt)) {
            (8, 32) => self.launch::<u8, u32>(&f, m, cases, poisons),
            (8, 16) => self.launch::<u8, u16>(&f, m, cases, poisons),
            (16, 32) => self.launch::<u16, u32>(&f, m, cases, poisons),
            (16, 16) => self.launch::<u16, u16>(&f, m, cases, poisons),
            (32, 32) => self.launch::<u32, u32>(&f, m, cases, poisons),
            (64, 64) => self.launch::<u64, u64>(&f, m, cases, poisons),
            other => unreachable!("no path has element widths {other:?}"),
        }
    }

    fn launch<TA, TC>(&self, f: &CudaFunction, module: Module, cases: &[MmaCase], poisons: &[u64]) -> Result<Poisoned, GpuError>
    where
        TA: DeviceRepr + ValidAsZeroBits + Copy + TryFrom<u64> + Into<u64> + Send + Sync,
        TC: DeviceRepr + ValidAsZeroBits + Copy + TryFrom<u64> + Into<u64> + Send + Sync,
    {
        let narrow_a = |x: u64| TA::try_from(x).unwrap_or_else(|_| unreachable!("validated widths"));
        let narrow_c = |x: u64| TC::try_from(x).unwrap_or_else(|_| unreachable!("validated widths"));
        // The batch laid out once (in parallel on large batches) and uploaded once; every
        // poison's run reads the same inputs.
        let a: Vec<TA> = pack(cases, |c| &c.a, narrow_a);
        let b: Vec<TA> = pack(cases, |c| &c.b, narrow_a);
        let c: Vec<TC> = pack(cases, |c| &c.c, narrow_c);
        // Sparse paths: the metadata, one index (0..=3) per kept A value, packed in the kernel.
        let meta: Vec<u8> = cases.iter().flat_map(|c| c.meta.iter().flatten().copied()).collect();
        let inputs = self.upload((&a, &meta), &b, &c)?;
        let poisons: Vec<TC> = poisons.iter().map(|&p| narrow_c(p & cases[0].c_fmt.mask())).collect();
        let run = |p: TC| {
            // A poison of one byte repeated (the checked runs' two) is set on the GPU.
            let v: u64 = p.into();
            let byte = v as u8;
            let filled;
            let poison = if (0..std::mem::size_of::<TC>()).all(|i| (v >> (8 * i)) as u8 == byte) {
                Poison::Bytes(byte)
            } else {
                filled = vec![p; c.len()];
                Poison::Upload(&filled)
            };
            self.run_inputs(f, module, &inputs, poison, cases.len())
        };
        let runs = poisons.iter().map(|&p| run(p)).collect::<Result<Vec<_>, _>>()?;
        let per = cases[0].m * cases[0].n;
        let first = &runs[0];
        let unwritten = |e: usize| runs.iter().zip(&poisons).all(|(d, &p)| d[e].into() == p.into());
        let differs = |t: usize| runs[1..].iter().any(|d| d[t * per..(t + 1) * per].iter().zip(&first[t * per..(t + 1) * per]).any(|(&x, &y)| Into::<u64>::into(x) != y.into()));
        let tile = |t: usize| -> Vec<u64> { first[t * per..(t + 1) * per].iter().map(|&x| x.into()).collect() };
        if cases.len() < PARALLEL_FROM {
            return Ok(Poisoned { results: (0..cases.len()).map(tile).collect(), unwritten: (0..first.len()).map(unwritten).collect(), differing_tiles: (0..cases.len()).filter(|&t| differs(t)).count() });
        }
        Ok(Poisoned {
            results: (0..cases.len()).into_par_iter().map(tile).collect(),
            unwritten: (0..first.len()).into_par_iter().map(unwritten).collect(),
            differing_tiles: (0..cases.len()).into_par_iter().filter(|&t| differs(t)).count(),
        })
    }

    /// One launch over flat arrays of `ntiles` tiles (A, B, C concatenated tile after tile);
    /// D comes back the same way, poisoned beforehand with `poison`.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_flat<TA: DeviceRepr, TC: DeviceRepr + Copy>(&self, f: &CudaFunction, module: Module, a: &[TA], b: &[TA], c: &[TC], poison: TC, ntiles: usize) -> Result<Vec<TC>, GpuError> {
        let inputs = self.upload((a, &[]), b, c)?;
        self.run_inputs(f, module, &inputs, Poison::Upload(&vec![poison; c.len()]), ntiles)
    }

    /// A batch's inputs on the GPU: A (and a sparse path's metadata after it: empty for dense
    /// paths), B, C.
    fn upload<TA: DeviceRepr, TC: DeviceRepr>(&self, (a, meta): (&[TA], &[u8]), b: &[TA], c: &[TC]) -> Result<Inputs<TA, TC>, GpuError> {
        let s = &self.stream;
        Ok(Inputs {
            a: s.clone_htod(a).map_err(cuda("copying A to the GPU"))?,
            meta: if meta.is_empty() { None } else { Some(s.clone_htod(meta).map_err(cuda("copying the metadata to the GPU"))?) },
            b: s.clone_htod(b).map_err(cuda("copying B to the GPU"))?,
            c: s.clone_htod(c).map_err(cuda("copying C to the GPU"))?,
        })
    }

    /// One launch over uploaded inputs of `ntiles` tiles: D poisoned first, run, read back.
    fn run_inputs<TA: DeviceRepr, TC: DeviceRepr + Copy>(&self, f: &CudaFunction, module: Module, inputs: &Inputs<TA, TC>, poison: Poison<TC>, ntiles: usize) -> Result<Vec<TC>, GpuError> {
        let s = &self.stream;
        let len = inputs.c.len();
        let mut d_dev = match poison {
            Poison::Bytes(byte) => {
                // SAFETY: every byte of the allocation is written by the memset before any read.
                let mut d = unsafe { s.alloc::<TC>(len) }.map_err(cuda("allocating D on the GPU"))?;
                {
                    let (ptr, _record) = d.device_ptr_mut(s);
                    // SAFETY: `ptr` addresses `len` elements of TC, the bytes set here.
                    unsafe { cudarc::driver::result::memset_d8_async(ptr, byte, len * std::mem::size_of::<TC>(), s.cu_stream()) }.map_err(cuda("poisoning D on the GPU"))?;
                }
                d
            }
            Poison::Upload(d) => s.clone_htod(d).map_err(cuda("poisoning D on the GPU"))?,
        };
        let (blocks, threads) = match module {
            Module::MmaSync => ((ntiles as u32).div_ceil(WARPS_PER_BLOCK), 32 * WARPS_PER_BLOCK),
            Module::Wgmma | Module::Cublas | Module::Simulated => (ntiles as u32, 128),
        };
        let ntiles = ntiles as i64;
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 };
        let mut launch = s.launch_builder(f);
        launch.arg(&inputs.a).arg(&inputs.b).arg(&inputs.c).arg(&mut d_dev).arg(&ntiles);
        if let Some(meta) = &inputs.meta {
            launch.arg(meta);
        }
        // SAFETY: the kernel reads m·k (sparse: m·k/2 values and as many indices), k·n and m·n
        // elements per tile and writes m·n, all within
        // the buffers sized from the same cases; ntiles bounds the warps that do any work.
        unsafe { launch.launch(cfg) }.map_err(cuda("launching the kernel"))?;
        let d: Vec<TC> = s.clone_dtoh(&d_dev).map_err(cuda("copying D back"))?;
        s.synchronize().map_err(cuda("waiting for the GPU"))?;
        Ok(d)
    }

    /// The kernel of a path, for [`Gpu::launch_flat`].
    pub fn kernel(&self, path: &PathSpec) -> Result<CudaFunction, GpuError> {
        let module = match path.module {
            Module::MmaSync => &self.mma_sync,
            Module::Wgmma => self.wgmma.as_ref().ok_or_else(|| GpuError::WrongCase(format!("{} needs sm_90a", path.id)))?,
            Module::Cublas => return Err(GpuError::WrongCase(format!("{} is a library call, not a kernel", path.id))),
            Module::Simulated => return Err(GpuError::WrongCase(format!("{} is simulated: no GPU kernel here; run it against an oracle (--oracle external:...) or its models/<arch> model", path.id))),
        };
        module.load_function(path.kernel).map_err(cuda(format!("finding kernel {}", path.kernel)))
    }

    /// GPU-side throughput of the m16n8k16 f16 path: random tiles already in flat host arrays,
    /// each batch uploaded, run (poison included), downloaded. Returns tiles per second.
    pub fn bench_f16(&self, batch: usize, batches: usize) -> Result<f64, GpuError> {
        let path = super::paths::path_by_id("mma.m16n8k16.f32.f16.f16.f32").expect("known path");
        let f = self.kernel(path)?;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Finite f16 values (exponent field below 31) and finite f32 C: the common case.
        let a: Vec<u16> = (0..batch * 256).map(|_| (next() as u16) & 0x7bff).collect();
        let b: Vec<u16> = (0..batch * 128).map(|_| (next() as u16) & 0xfbff).collect();
        let c: Vec<u32> = (0..batch * 128).map(|_| (next() as u32) & 0xbf7f_ffff).collect();
        self.launch_flat(&f, Module::MmaSync, &a, &b, &c, 0xaaaa_aaaa, batch)?; // warm-up: module, allocator
        let start = std::time::Instant::now();
        let mut sink = 0u32;
        for _ in 0..batches {
            let d = self.launch_flat(&f, Module::MmaSync, &a, &b, &c, 0xaaaa_aaaa, batch)?;
            sink ^= d[d.len() / 2];
        }
        std::hint::black_box(sink);
        Ok((batch * batches) as f64 / start.elapsed().as_secs_f64())
    }

    /// Run twice with two different poisons: every element must have been written both times
    /// (a value equal to both poisons is impossible) and both runs must agree bit for bit.
    pub fn run_checked(&self, path: &PathSpec, cases: &[MmaCase]) -> Result<CheckedRun, GpuError> {
        if cases.is_empty() {
            return Ok(CheckedRun { results: vec![], nondeterministic: 0 });
        }
        // The inputs uploaded once, run twice: D poisoned one way, then the other (each poison
        // one byte repeated, so filled on the GPU).
        let run = self.run_poisoned(path, cases, &[0xAAAA_AAAA_AAAA_AAAA, 0x5555_5555_5555_5555])?;
        let unwritten = run.unwritten.par_iter().filter(|&&u| u).count();
        if unwritten > 0 {
            return Err(GpuError::Unwritten(unwritten));
        }
        Ok(CheckedRun { results: run.results, nondeterministic: run.differing_tiles })
    }
}

impl Gpu {
    /// Whole-matrix cases of a library path through [`super::library::LibraryExecutor`], as
    /// `torch.addmm` runs them: D = A·B + C with β = 1 (`_scaled_mm` paths: β = 0, so their C
    /// must be +0). D starts as C, so there is no poison to check: `poison` is unused and
    /// nothing is reported unwritten.
    fn run_cublas(&self, path: &PathSpec, cases: &[MmaCase], _poison: u64) -> Result<(Vec<Vec<u64>>, Vec<bool>), GpuError> {
        use super::library::{library_path, LibraryApi, LibraryExecutor, LibraryGemm};
        let lib = library_path(path.id).ok_or_else(|| GpuError::WrongCase(format!("{} is not a library path", path.id)))?;
        let exec = LibraryExecutor::new(self)?;
        let scaled = matches!(lib.api, LibraryApi::ScaledMm { .. });
        let mut out = Vec::with_capacity(cases.len());
        for (i, case) in cases.iter().enumerate() {
            if scaled && case.c.iter().any(|&x| x != 0) {
                return Err(GpuError::WrongCase(format!("case {i}: {} runs torch._scaled_mm (D = A·B): its cases carry C = +0", path.id)));
            }
            let g = LibraryGemm { m: case.m, n: case.n, k: case.k, a: case.a.clone(), b: case.b.clone(), b_transposed: false, c: (!scaled).then(|| case.c.clone()), bias: None };
            out.push(exec.run(lib, &g)?.d);
        }
        let flags = vec![false; out.iter().map(Vec::len).sum()];
        Ok((out, flags))
    }
}

/// Results of a checked batch.
#[derive(Debug)]
pub struct CheckedRun {
    pub results: Vec<Vec<u64>>,
    /// Tiles whose two runs differed.
    pub nondeterministic: usize,
}

/// Batches from this many tiles lay out and read back their arrays on every core (the hunt's
/// batches); fewer (a fuzz input) stay on the calling thread.
const PARALLEL_FROM: usize = 1024;

/// One operand of every case, narrowed to the kernel's element type, tile after tile. Tiles of
/// one path all have the same size (the path checked them); large batches fill in parallel.
/// A batch run once per poison ([`Gpu::run_poisoned`]): the first run's D per tile, the
/// elements every run left equal to its poison (possibly unwritten), and the number of tiles
/// whose D differs between runs.
struct Poisoned {
    results: Vec<Vec<u64>>,
    unwritten: Vec<bool>,
    differing_tiles: usize,
}

impl Poisoned {
    /// From each poison's (D per tile, elements equal to the poison).
    fn of(mut runs: Vec<(Vec<Vec<u64>>, Vec<bool>)>) -> Poisoned {
        let (results, mut unwritten) = runs.remove(0);
        for (_, u) in &runs {
            unwritten.iter_mut().zip(u).for_each(|(x, &y)| *x &= y);
        }
        let differing_tiles = (0..results.len()).filter(|&t| runs.iter().any(|(r, _)| r[t] != results[t])).count();
        Poisoned { results, unwritten, differing_tiles }
    }
}

/// A batch's inputs uploaded to the GPU ([`Gpu::upload`]).
struct Inputs<TA: DeviceRepr, TC: DeviceRepr> {
    a: cudarc::driver::CudaSlice<TA>,
    meta: Option<cudarc::driver::CudaSlice<u8>>,
    b: cudarc::driver::CudaSlice<TA>,
    c: cudarc::driver::CudaSlice<TC>,
}

/// What D holds before a launch: one byte repeated (set on the GPU), or given element by
/// element (uploaded).
enum Poison<'a, TC> {
    Bytes(u8),
    Upload(&'a [TC]),
}

fn pack<T: Copy + Send + Sync>(cases: &[MmaCase], of: impl Fn(&MmaCase) -> &Vec<u64> + Sync, narrow: impl Fn(u64) -> T + Sync) -> Vec<T> {
    let per = of(&cases[0]).len();
    if cases.len() < PARALLEL_FROM || cases.iter().any(|c| of(c).len() != per) {
        return cases.iter().flat_map(|c| of(c).iter().map(|&x| narrow(x))).collect();
    }
    let mut out = vec![narrow(0); cases.len() * per];
    out.par_chunks_mut(per).zip(cases.par_iter()).for_each(|(dst, c)| {
        for (d, &x) in dst.iter_mut().zip(of(c)) {
            *d = narrow(x);
        }
    });
    out
}
