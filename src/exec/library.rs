//! The library executor: a whole row-major GEMM through cuBLAS or cuBLASLt, called the way
//! PyTorch 2.11 calls them on an H100 for `torch.mm`, `torch.addmm`, `F.linear` and
//! `torch._scaled_mm`, with the kernel configuration cuBLASLt logged for the call.
//!
//! What PyTorch does, and so what this does (sources in pytorch/pytorch):
//!
//! - **Row-major tensors, the transposed problem** (`aten/src/ATen/native/cuda/Blas.cpp`,
//!   `cublasCommonArgs`): a contiguous m×n result is column-major n×m, so cuBLAS computes
//!   Dᵀ = Bᵀ·Aᵀ: its A is our B (`lda` = n, or `'t'` with `lda` = k where B is stored as n×k:
//!   an `nn.Linear` weight, `_scaled_mm`'s column-major B), its B is our A (`ldb` = k), `ldc` = n,
//!   its m and n are our n and m.
//! - **`torch.mm`** is `addmm_out_cuda_impl(result, result, a, b, β = 0)`; **`torch.addmm(c, a,
//!   b)`** with a 2-D C copies C into the result and runs the same GEMM with β = 1 (the Lt
//!   interface takes only a 1-D bias). Both reach `at::cuda::blas::gemm<T>`
//!   (`aten/src/ATen/cuda/CUDABlas.cpp`), whose default backend on CUDA is cuBLAS:
//!   - f16/bf16 in (f16, bf16 or f32 out): `cublasGemmEx` with f32 α, β, compute `CUDA_R_32F`
//!     (= `CUBLAS_COMPUTE_32F`), `CUBLAS_GEMM_DEFAULT_TENSOR_OP`, the handle's math mode set to
//!     `CUBLAS_DEFAULT_MATH` around the call (reduced-precision reductions allowed, PyTorch's
//!     default, so no `CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION`);
//!   - f32: `cublasSgemm`, the handle's math mode `CUBLAS_TF32_TENSOR_OP_MATH` when
//!     `torch.backends.cuda.matmul.allow_tf32` is on (the TF32 path), else `CUBLAS_DEFAULT_MATH`
//!     (`CublasHandlePool.cpp`, `getCurrentCUDABlasHandle`);
//!   - f64: `cublasDgemm`.
//! - **`F.linear(x, w, bias)`** is `addmm(bias, x, w.t())`: with a 1-D bias, β = 1, a
//!   contiguous result, f64/f32/f16/bf16, and w (addmm's mat2) with more than one row and
//!   column (`isInputCompliesAddmmCudaLt` in torch 2.11 checks mat2's sizes only: x may have
//!   one row; recorded F.linear GEMMs with m = 1 logged other kernels than addmm's, those with
//!   n = 1 the same), it goes to `gemm_and_bias` (`CUDABlas.cpp`): one
//!   `cublasLtMatmul`, compute 32F (`_FAST_TF32` under allow_tf32, 64F for f64), scale type
//!   32F (64F), α = 1, β = 0, transa = T (w is n×k), `CUBLASLT_EPILOGUE_BIAS` with the bias
//!   pointer, C = D = the result; preference: the Lt workspace size and the minimum alignments
//!   of A, B, C and the bias (D), each the largest power of two up to 256 that divides the
//!   address; the first heuristic result. Otherwise the bias is broadcast into the result and
//!   `gemm<T>` runs with β = 1.
//! - **`torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=float32[, use_fast_accum])`**, B
//!   column-major: `scaled_gemm` (`CUDABlas.cpp`): one `cublasLtMatmul`, compute 32F, scale
//!   type 32F, transa = T, transb = N, the A and B scale pointers (device f32 scalars, here 1.0;
//!   scale mode `SCALAR_32F`), `CUBLASLT_MATMUL_DESC_FAST_ACCUM` 0 or 1, C's layout in the
//!   output type (no bias), α = 1, β = 0, D = the result (C at the A pointer, as torch 2.11's
//!   trace shows: never read with β = 0), preference: the Lt workspace size only. PyTorch requires K and N to be multiples of 16 (and refuses e5m2 × e5m2).
//! - **Workspaces** (`CublasHandlePool.cpp`): the cuBLAS handle gets `cublasSetWorkspace` of
//!   `CUBLAS_WORKSPACE_CONFIG` or else 32 MiB on sm_90 (4096·1024·2 + 16·1024·8 bytes
//!   elsewhere); the Lt calls get `CUBLASLT_WORKSPACE_SIZE` KiB, else 1 MiB (the workspaces
//!   are unified only with `TORCH_CUBLAS_WORKSPACE_CACHE` on; torch 2.11 logs 1048576). The
//!   Lt handle is the cuBLAS handle cast (`getCurrentCUDABlasLtHandle`).
//!
//! The configuration: cuBLASLt logs every matmul, the internal ones of `cublasGemmEx`,
//! `cublasSgemm` and `cublasDgemm` included; a logger callback at level 5 (what
//! `CUBLASLT_LOG_LEVEL=5` gives `scripts/torch-lib.py`) catches the lines of each call, and
//! [`super::lt_log::TraceLine`] reads them.

use super::gpu::{Gpu, GpuError};
use super::lt_log::TraceLine;
use crate::format::Format;
use crate::library::gemm::{bias_as_c, linear_takes_epilogue, transpose};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::sync::{Arc, Mutex, OnceLock};

/// Which library call a path makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LibraryApi {
    /// `cublasGemmEx` on 16-bit inputs, FP32 compute (`torch.mm`/`addmm` on f16, bf16).
    GemmEx,
    /// `cublasSgemm`; `tf32`: the handle in `CUBLAS_TF32_TENSOR_OP_MATH` (allow_tf32).
    Sgemm { tf32: bool },
    /// `cublasDgemm`.
    Dgemm,
    /// `cublasLtMatmul` of FP8 inputs with unit tensor-wise scales (`torch._scaled_mm`).
    ScaledMm { fast_accum: bool },
}

/// A library path: its identifier, formats and call.
#[derive(Clone, Copy, Debug)]
pub struct LibraryPath {
    pub id: &'static str,
    pub a_fmt: Format,
    pub b_fmt: Format,
    /// C's, the bias's and D's format.
    pub d_fmt: Format,
    pub api: LibraryApi,
}

/// The 11 library paths, as `scripts/torch-lib.py` records them.
pub const LIBRARY_PATHS: &[LibraryPath] = &[
    LibraryPath { id: "cublas.gemm.f32.f16.f16.f32", a_fmt: Format::F16, b_fmt: Format::F16, d_fmt: Format::F32, api: LibraryApi::GemmEx },
    LibraryPath { id: "cublas.gemm.f16.f16.f16.f16", a_fmt: Format::F16, b_fmt: Format::F16, d_fmt: Format::F16, api: LibraryApi::GemmEx },
    LibraryPath { id: "cublas.gemm.f32.bf16.bf16.f32", a_fmt: Format::Bf16, b_fmt: Format::Bf16, d_fmt: Format::F32, api: LibraryApi::GemmEx },
    LibraryPath { id: "cublas.gemm.bf16.bf16.bf16.bf16", a_fmt: Format::Bf16, b_fmt: Format::Bf16, d_fmt: Format::Bf16, api: LibraryApi::GemmEx },
    LibraryPath { id: "cublas.gemm.f32.tf32.tf32.f32", a_fmt: Format::F32, b_fmt: Format::F32, d_fmt: Format::F32, api: LibraryApi::Sgemm { tf32: true } },
    LibraryPath { id: "cublas.gemm.f32.f32.f32.f32", a_fmt: Format::F32, b_fmt: Format::F32, d_fmt: Format::F32, api: LibraryApi::Sgemm { tf32: false } },
    LibraryPath { id: "cublas.gemm.f64.f64.f64.f64", a_fmt: Format::F64, b_fmt: Format::F64, d_fmt: Format::F64, api: LibraryApi::Dgemm },
    LibraryPath { id: "cublaslt.matmul.f32.e4m3.e4m3.f32", a_fmt: Format::E4m3, b_fmt: Format::E4m3, d_fmt: Format::F32, api: LibraryApi::ScaledMm { fast_accum: false } },
    LibraryPath { id: "cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum", a_fmt: Format::E4m3, b_fmt: Format::E4m3, d_fmt: Format::F32, api: LibraryApi::ScaledMm { fast_accum: true } },
    LibraryPath { id: "cublaslt.matmul.f32.e4m3.e5m2.f32", a_fmt: Format::E4m3, b_fmt: Format::E5m2, d_fmt: Format::F32, api: LibraryApi::ScaledMm { fast_accum: false } },
    LibraryPath { id: "cublaslt.matmul.f32.e5m2.e4m3.f32", a_fmt: Format::E5m2, b_fmt: Format::E4m3, d_fmt: Format::F32, api: LibraryApi::ScaledMm { fast_accum: false } },
];

/// The library path with this identifier.
pub fn library_path(id: &str) -> Option<&'static LibraryPath> {
    LIBRARY_PATHS.iter().find(|p| p.id == id)
}

impl LibraryPath {
    /// Whether PyTorch can put a bias on this path: `F.linear` keeps D in the inputs' format,
    /// so the same-format paths (not the f32-out 16-bit ones, not `_scaled_mm` here).
    pub fn takes_bias(&self) -> bool {
        self.a_fmt == self.d_fmt || matches!(self.api, LibraryApi::Sgemm { tf32: true })
    }

    /// How the PyTorch call stores B: `_scaled_mm` needs it column-major (n×k row-major).
    pub fn b_column_major(&self) -> bool {
        matches!(self.api, LibraryApi::ScaledMm { .. })
    }
}

/// One row-major GEMM for [`LibraryExecutor::run`].
#[derive(Clone, Debug)]
pub struct LibraryGemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// A, m×k row-major, raw bits.
    pub a: Vec<u64>,
    /// B: k×n row-major, or n×k row-major (Bᵀ) where `b_transposed`.
    pub b: Vec<u64>,
    /// B is stored as n×k: an `nn.Linear` weight, `_scaled_mm`'s column-major B.
    pub b_transposed: bool,
    /// C (m×n): `torch.addmm`, β = 1. Absent: β = 0 (`torch.mm`).
    pub c: Option<Vec<u64>>,
    /// A bias of n elements (`F.linear`); excludes `c`.
    pub bias: Option<Vec<u64>>,
}

/// What a GEMM gave: D (m×n row-major) and what cuBLASLt logged for it.
#[derive(Clone, Debug)]
pub struct LibraryRun {
    pub d: Vec<u64>,
    /// The matmul trace line of the call (the one with this GEMM's shape), if logged.
    pub trace: Option<TraceLine>,
    /// Every line the logger gave during the call: (function, message).
    pub log: Vec<(String, String)>,
}

impl LibraryRun {
    /// The kernel configuration as `scripts/torch-lib.py` records it.
    pub fn config(&self) -> Option<String> {
        self.trace.as_ref().map(TraceLine::config)
    }
}

/// Lines the cuBLASLt logger gave since the last drain: (level, function, message).
static LOG: Mutex<Vec<(i32, String, String)>> = Mutex::new(Vec::new());
static LOGGER: OnceLock<Result<(), String>> = OnceLock::new();

unsafe extern "C" fn on_log(level: std::ffi::c_int, function: *const std::ffi::c_char, message: *const std::ffi::c_char) {
    // SAFETY: cuBLASLt passes NUL-terminated strings valid for the call (or null).
    let text = |p: *const std::ffi::c_char| if p.is_null() { String::new() } else { unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned() };
    if let Ok(mut log) = LOG.lock() {
        log.push((level, text(function), text(message)));
    }
}

fn drain_log() -> Vec<(i32, String, String)> {
    LOG.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default()
}

/// The cuBLAS workspace PyTorch gives its handles (`parseChosenWorkspaceSize`): the sum of
/// `:SIZE:COUNT` KiB pairs of `CUBLAS_WORKSPACE_CONFIG`, else 32 MiB on sm_90 and
/// 4096·1024·2 + 16·1024·8 bytes on other GPUs.
pub fn cublas_workspace_bytes(cc: (i32, i32), config: Option<&str>) -> usize {
    let default = if cc == (9, 0) { 4096 * 8 * 1024 } else { 4096 * 1024 * 2 + 16 * 1024 * 8 };
    let Some(config) = config else { return default };
    let mut total = 0usize;
    let mut found = false;
    let parts: Vec<&str> = config.split(':').collect();
    // ":4096:8:16:8" splits into "", "4096", "8", "16", "8": pairs from index 1.
    for pair in parts.get(1..).unwrap_or(&[]).chunks(2) {
        if let [size, count] = pair {
            if let (Ok(s), Ok(c)) = (size.parse::<usize>(), count.parse::<usize>()) {
                total += s * 1024 * c;
                found = true;
            }
        }
    }
    if found {
        total
    } else {
        default
    }
}

/// The cuBLASLt workspace PyTorch passes (`getCUDABlasLtWorkspaceSize`): `CUBLASLT_WORKSPACE_SIZE`
/// KiB, else 1,024 KiB ("default size in KiB according to #73328"). The cuBLAS and cuBLASLt
/// workspaces are unified only with workspace caching on (`TORCH_CUBLAS_WORKSPACE_CACHE`, off
/// by default on CUDA); torch 2.11's trace on the H100 shows `workSpaceSizeInBytes=1048576` for
/// F.linear and `_scaled_mm` (32 MiB here gave other split-K choices for 17 of 35 bias GEMMs).
pub fn lt_workspace_bytes(lt_kib: Option<&str>) -> usize {
    lt_kib.and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(1024) * 1024
}

/// PyTorch's `_getAlignment`: the largest power of two up to 256 dividing the address.
pub fn alignment(address: u64) -> u32 {
    let mut a = 256u32;
    while a > 1 && address % a as u64 != 0 {
        a /= 2;
    }
    a
}

/// Raw bits to little-endian bytes of the format's container width.
fn to_bytes(values: &[u64], f: Format) -> Vec<u8> {
    let width = f.storage_bits().div_ceil(8) as usize;
    values.iter().flat_map(|v| v.to_le_bytes().into_iter().take(width)).collect()
}

fn from_bytes(bytes: &[u8], f: Format) -> Vec<u64> {
    let width = f.storage_bits().div_ceil(8) as usize;
    bytes
        .chunks_exact(width)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..width].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

fn lt_dtype(f: Format) -> cudarc::cublaslt::sys::cudaDataType {
    use cudarc::cublaslt::sys::cudaDataType as T;
    match f {
        Format::F16 => T::CUDA_R_16F,
        Format::Bf16 => T::CUDA_R_16BF,
        Format::F64 => T::CUDA_R_64F,
        Format::E4m3 => T::CUDA_R_8F_E4M3,
        Format::E5m2 => T::CUDA_R_8F_E5M2,
        _ => T::CUDA_R_32F,
    }
}

fn blas_dtype(f: Format) -> cudarc::cublas::sys::cudaDataType {
    use cudarc::cublas::sys::cudaDataType as T;
    match f {
        Format::F16 => T::CUDA_R_16F,
        Format::Bf16 => T::CUDA_R_16BF,
        Format::F64 => T::CUDA_R_64F,
        _ => T::CUDA_R_32F,
    }
}

/// An open cuBLAS handle set up as PyTorch sets up its handles, and the workspaces.
pub struct LibraryExecutor {
    stream: Arc<CudaStream>,
    blas: cudarc::cublas::CudaBlas,
    /// PyTorch casts its cuBLAS handle (one handle, two libraries); a handle of the cuBLASLt we
    /// loaded ourselves is the same library state without relying on the cast.
    lt_handle: cudarc::cublaslt::sys::cublasLtHandle_t,
    /// Held for the handle, which was given it with cublasSetWorkspace.
    _cublas_workspace: CudaSlice<u8>,
    lt_workspace: CudaSlice<u8>,
    lt_workspace_bytes: usize,
    /// 1.0f32 on the device: `_scaled_mm`'s unit scales.
    unit_scale: CudaSlice<f32>,
    /// cuBLAS's version as "major.minor.patch".
    pub cublas_version: String,
}

fn lib_err(what: &str, status: impl std::fmt::Debug) -> GpuError {
    GpuError::Library { what: what.to_string(), status: format!("{status:?}") }
}

impl LibraryExecutor {
    /// Load cuBLAS and cuBLASLt, create the handle, the workspaces and the logger. Errors, never
    /// panics, where the libraries are missing.
    pub fn new(gpu: &Gpu) -> Result<LibraryExecutor, GpuError> {
        // SAFETY: only probe whether the libraries can be loaded.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } || !unsafe { cudarc::cublaslt::sys::is_culib_present() } {
            return Err(GpuError::NoCublas);
        }
        let stream = gpu.stream().clone();
        let blas = cudarc::cublas::CudaBlas::new(stream.clone()).map_err(|source| GpuError::Cublas { what: "creating a handle".into(), source })?;
        let cublas_bytes = cublas_workspace_bytes(gpu.info.compute_capability, std::env::var("CUBLAS_WORKSPACE_CONFIG").ok().as_deref());
        let lt_bytes = lt_workspace_bytes(std::env::var("CUBLASLT_WORKSPACE_SIZE").ok().as_deref());
        let alloc = |bytes: usize, what: &str| stream.alloc_zeros::<u8>(bytes.max(1)).map_err(|source| GpuError::Cuda { what: what.into(), source });
        let cublas_workspace = alloc(cublas_bytes, "allocating the cuBLAS workspace")?;
        let lt_workspace = alloc(lt_bytes, "allocating the cuBLASLt workspace")?;
        let unit_scale = stream.clone_htod(&[1.0f32]).map_err(|source| GpuError::Cuda { what: "copying the unit scale".into(), source })?;
        {
            let (ws, _guard) = cublas_workspace.device_ptr(&stream);
            // SAFETY: the handle is live; the workspace buffer outlives it (both owned here,
            // the handle dropped first).
            let s = unsafe { cudarc::cublas::sys::cublasSetWorkspace_v2(*blas.handle(), ws as *mut _, cublas_bytes) };
            if s != cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                return Err(lib_err("setting the cuBLAS workspace", s));
            }
        }
        LOGGER
            .get_or_init(|| {
                // SAFETY: the callback is a plain function that only copies its strings.
                unsafe {
                    // The log goes to the callback; its own output (stdout by default) nowhere.
                    let null = std::ffi::CString::new("/dev/null").expect("no NUL");
                    let s = cudarc::cublaslt::sys::cublasLtLoggerOpenFile(null.as_ptr());
                    if s != cudarc::cublaslt::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                        return Err(format!("{s:?}"));
                    }
                    let s = cudarc::cublaslt::sys::cublasLtLoggerSetCallback(Some(on_log));
                    if s != cudarc::cublaslt::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                        return Err(format!("{s:?}"));
                    }
                    let s = cudarc::cublaslt::sys::cublasLtLoggerSetLevel(5);
                    if s != cudarc::cublaslt::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                        return Err(format!("{s:?}"));
                    }
                }
                Ok(())
            })
            .clone()
            .map_err(|s| lib_err("setting up cuBLASLt's logger", s))?;
        // SAFETY: plain queries of the loaded libraries.
        let lt_version = unsafe { cudarc::cublaslt::sys::cublasLtGetVersion() };
        let mut blas_version = 0;
        // SAFETY: the handle is live and the out pointer valid.
        let st = unsafe { cudarc::cublas::sys::cublasGetVersion_v2(*blas.handle(), &mut blas_version) };
        if st != cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(lib_err("reading cuBLAS's version", st));
        }
        // cuBLAS must run on the cuBLASLt whose logger we hold, or its calls go unlogged (the
        // loader found two copies: put the wanted library's directory first on LD_LIBRARY_PATH).
        if blas_version as usize != lt_version {
            return Err(GpuError::Library { what: "loading cuBLAS and cuBLASLt".into(), status: format!("libcublas is version {blas_version}, libcublasLt {lt_version}: two CUDA installations on the loader path") });
        }
        let cublas_version = format!("{}.{}.{}", lt_version / 10000, (lt_version / 100) % 100, lt_version % 100);
        let mut lt_handle: cudarc::cublaslt::sys::cublasLtHandle_t = std::ptr::null_mut();
        // SAFETY: creates a handle into a valid out pointer; destroyed in Drop.
        let st = unsafe { cudarc::cublaslt::sys::cublasLtCreate(&mut lt_handle) };
        if st != cudarc::cublaslt::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(lib_err("creating a cuBLASLt handle", st));
        }
        Ok(LibraryExecutor { stream, blas, lt_handle, _cublas_workspace: cublas_workspace, lt_workspace, lt_workspace_bytes: lt_bytes, unit_scale, cublas_version })
    }

    /// Run one GEMM on `path` the way PyTorch does (module docs); D comes back row-major.
    pub fn run(&self, path: &LibraryPath, g: &LibraryGemm) -> Result<LibraryRun, GpuError> {
        let wrong = |m: String| Err(GpuError::WrongCase(m));
        let (m, n, k) = (g.m, g.n, g.k);
        if m == 0 || n == 0 || k == 0 || m.max(n).max(k) > i32::MAX as usize {
            return wrong(format!("{m}x{n}x{k}: every dimension must be 1 to 2^31-1"));
        }
        if g.a.len() != m * k || g.b.len() != k * n || g.c.as_ref().is_some_and(|c| c.len() != m * n) || g.bias.as_ref().is_some_and(|b| b.len() != n) {
            return wrong(format!("{m}x{n}x{k}: A needs {} elements, B {}, C {}, a bias {}", m * k, k * n, m * n, n));
        }
        if g.c.is_some() && g.bias.is_some() {
            return wrong("a GEMM has C (torch.addmm) or a bias (F.linear), not both".into());
        }
        if g.bias.is_some() && !path.takes_bias() {
            return wrong(format!("{}: F.linear keeps D in the inputs' format, so no bias on this path", path.id));
        }
        let scaled = matches!(path.api, LibraryApi::ScaledMm { .. });
        if scaled {
            if g.c.is_some() || g.bias.is_some() {
                return wrong(format!("{}: torch._scaled_mm here has no C and no bias (β = 0)", path.id));
            }
            if k % 16 != 0 || n % 16 != 0 {
                return wrong(format!("{}: torch._scaled_mm needs K and N multiples of 16, not {m}x{n}x{k}", path.id));
            }
        }
        // B as the PyTorch call stores it: n×k for F.linear's weight and _scaled_mm.
        let b_stored_t = g.bias.is_some() || scaled;
        let b_stored = match (b_stored_t, g.b_transposed) {
            (true, false) => transpose(&g.b, k, n),
            (false, true) => transpose(&g.b, n, k),
            _ => g.b.clone(),
        };
        let s = &self.stream;
        let up = |v: &[u64], f: Format, what: &str| s.clone_htod(&to_bytes(v, f)).map_err(|source| GpuError::Cuda { what: format!("copying {what} to the GPU"), source });
        let a_dev = up(&g.a, path.a_fmt, "A")?;
        let b_dev = up(&b_stored, path.b_fmt, "B")?;
        // F.linear without the epilogue is addmm with the bias broadcast into C (the emulator's
        // rule, `Gemm::as_torch_linear`); B stays stored as F.linear's weight.
        let addmm_c = match &g.bias {
            Some(bias) if !linear_takes_epilogue(n, k) => Some(bias_as_c(m, bias)),
            _ => None,
        };
        let (c, bias) = match addmm_c {
            Some(c) => (Some(c), None),
            None => (g.c.clone(), g.bias.as_ref()),
        };
        // The result starts as C (addmm copies C into it), else zeros (torch.empty: never read
        // with β = 0).
        let beta_one = c.is_some();
        let d_init = c.unwrap_or_else(|| vec![0; m * n]);
        let mut d_dev = up(&d_init, path.d_fmt, "the result")?;
        let bias_dev = match bias {
            Some(b) => Some(up(b, path.d_fmt, "the bias")?),
            None => None,
        };
        drain_log();
        if scaled {
            self.scaled_mm(path, g, &a_dev, &b_dev, &mut d_dev)?;
        } else if let Some(bias_dev) = &bias_dev {
            self.gemm_and_bias(path, g, &a_dev, &b_dev, bias_dev, &mut d_dev)?;
        } else {
            self.gemm(path, g, &a_dev, &b_dev, &mut d_dev, beta_one, b_stored_t)?;
        }
        s.synchronize().map_err(|source| GpuError::Cuda { what: "waiting for the GEMM".into(), source })?;
        let bytes: Vec<u8> = s.clone_dtoh(&d_dev).map_err(|source| GpuError::Cuda { what: "copying D back".into(), source })?;
        let log = drain_log();
        let traces: Vec<(i32, TraceLine)> = log.iter().filter_map(|(level, f, msg)| TraceLine::parse(Some(f), msg).map(|t| (*level, t))).filter(|(_, t)| t.has_shape(m, n)).collect();
        // The level-2 ("Trace") line where there is one, else the first matching line.
        let trace = traces.iter().find(|(l, _)| *l == 2).or(traces.first()).map(|(_, t)| t.clone());
        Ok(LibraryRun { d: from_bytes(&bytes, path.d_fmt), trace, log: log.into_iter().map(|(_, f, m)| (f, m)).collect() })
    }

    /// `at::cuda::blas::gemm<T>` through cuBLAS: Dᵀ = Bᵀ·Aᵀ (+ β·Dᵀ), our B as cuBLAS's A.
    #[allow(clippy::too_many_arguments)]
    fn gemm(&self, path: &LibraryPath, g: &LibraryGemm, a: &CudaSlice<u8>, b: &CudaSlice<u8>, d: &mut CudaSlice<u8>, beta_one: bool, b_stored_t: bool) -> Result<(), GpuError> {
        use cudarc::cublas::sys::{self as blas, cublasMath_t as Math, cublasOperation_t as Op};
        let s = &self.stream;
        let handle = *self.blas.handle();
        let (m, n, k) = (g.m as i32, g.n as i32, g.k as i32);
        // F.linear's unfused fallback reads the weight (n×k) transposed, unless n or k is 1,
        // where w.t() is contiguous and PyTorch passes it untransposed with the mm leading dims.
        let op_b = if b_stored_t && n > 1 && k > 1 { Op::CUBLAS_OP_T } else { Op::CUBLAS_OP_N };
        let lda = if op_b == Op::CUBLAS_OP_T { k } else { n };
        let (ap, _ga) = a.device_ptr(s);
        let (bp, _gb) = b.device_ptr(s);
        let (dp, _gd) = d.device_ptr(s);
        let ok = blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS;
        // The handle's math mode as getCurrentCUDABlasHandle leaves it.
        let mode = if path.api == (LibraryApi::Sgemm { tf32: true }) { Math::CUBLAS_TF32_TENSOR_OP_MATH } else { Math::CUBLAS_DEFAULT_MATH };
        // SAFETY: the handle is live; every pointer below points to a live device buffer of the
        // size the dimensions and leading dimensions imply (checked in `run`); α and β point to
        // host scalars of the call's scale type.
        unsafe {
            let st = blas::cublasSetMathMode(handle, mode);
            if st != ok {
                return Err(lib_err("setting the math mode", st));
            }
            let st = match path.api {
                LibraryApi::GemmEx => {
                    let (one, beta) = (1.0f32, if beta_one { 1.0f32 } else { 0.0 });
                    // gemm_internal_cublas_half/bfloat16_helper: math mode set around the call.
                    let st = blas::cublasSetMathMode(handle, Math::CUBLAS_DEFAULT_MATH);
                    if st != ok {
                        return Err(lib_err("setting the math mode", st));
                    }
                    let ab = blas_dtype(path.a_fmt);
                    let st = blas::cublasGemmEx(
                        handle,
                        op_b,
                        Op::CUBLAS_OP_N,
                        n,
                        m,
                        k,
                        &one as *const f32 as *const _,
                        bp as *const _,
                        ab,
                        lda,
                        ap as *const _,
                        ab,
                        k,
                        &beta as *const f32 as *const _,
                        dp as *mut _,
                        blas_dtype(path.d_fmt),
                        n,
                        blas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                        blas::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT_TENSOR_OP,
                    );
                    let reset = blas::cublasSetMathMode(handle, Math::CUBLAS_DEFAULT_MATH);
                    if st == ok && reset != ok {
                        return Err(lib_err("resetting the math mode", reset));
                    }
                    st
                }
                LibraryApi::Sgemm { .. } => {
                    let (one, beta) = (1.0f32, if beta_one { 1.0f32 } else { 0.0 });
                    blas::cublasSgemm_v2(handle, op_b, Op::CUBLAS_OP_N, n, m, k, &one, bp as *const f32, lda, ap as *const f32, k, &beta, dp as *mut f32, n)
                }
                LibraryApi::Dgemm => {
                    let (one, beta) = (1.0f64, if beta_one { 1.0f64 } else { 0.0 });
                    blas::cublasDgemm_v2(handle, op_b, Op::CUBLAS_OP_N, n, m, k, &one, bp as *const f64, lda, ap as *const f64, k, &beta, dp as *mut f64, n)
                }
                LibraryApi::ScaledMm { .. } => unreachable!("scaled_mm goes through cuBLASLt"),
            };
            if st != ok {
                return Err(lib_err(&format!("running the {:?} GEMM {}x{}x{}", path.api, g.m, g.n, g.k), st));
            }
        }
        Ok(())
    }

    /// `gemm_and_bias` (F.linear): one cublasLtMatmul with the bias epilogue.
    fn gemm_and_bias(&self, path: &LibraryPath, g: &LibraryGemm, a: &CudaSlice<u8>, b: &CudaSlice<u8>, bias: &CudaSlice<u8>, d: &mut CudaSlice<u8>) -> Result<(), GpuError> {
        use cudarc::cublaslt::sys::{cublasComputeType_t as Compute, cublasLtEpilogue_t as Epi, cublasLtMatmulDescAttributes_t as Desc, cublasLtMatmulPreferenceAttributes_t as Pref, cudaDataType as T};
        use cudarc::cublas::sys::cublasOperation_t as Op;
        let s = &self.stream;
        let (compute, scale) = match path.api {
            LibraryApi::Dgemm => (Compute::CUBLAS_COMPUTE_64F, T::CUDA_R_64F),
            LibraryApi::Sgemm { tf32: true } => (Compute::CUBLAS_COMPUTE_32F_FAST_TF32, T::CUDA_R_32F),
            _ => (Compute::CUBLAS_COMPUTE_32F, T::CUDA_R_32F),
        };
        let (ap, _ga) = a.device_ptr(s);
        let (bp, _gb) = b.device_ptr(s);
        let (biasp, _gbias) = bias.device_ptr(s);
        let (dp, _gd) = d.device_ptr(s);
        let (m, n, k) = (g.m as u64, g.n as u64, g.k as u64);
        let ab = lt_dtype(path.a_fmt);
        let call = LtCall {
            compute,
            scale,
            transa: Op::CUBLAS_OP_T,
            // Adesc(abType, m=n, k, ld=k, transposed): k rows, n columns.
            a: (ab, k, n, k as i64),
            b: (ab, k, m, k as i64),
            c: (lt_dtype(path.d_fmt), n, m, n as i64),
            d: (lt_dtype(path.d_fmt), n, m, n as i64),
            desc_attrs: vec![(Desc::CUBLASLT_MATMUL_DESC_EPILOGUE, (Epi::CUBLASLT_EPILOGUE_BIAS as u32).to_le_bytes().to_vec()), (Desc::CUBLASLT_MATMUL_DESC_BIAS_POINTER, biasp.to_le_bytes().to_vec())],
            pref_attrs: vec![
                (Pref::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, (self.lt_workspace_bytes as u64).to_le_bytes().to_vec()),
                (Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment(bp).to_le_bytes().to_vec()),
                (Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment(ap).to_le_bytes().to_vec()),
                (Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment(dp).to_le_bytes().to_vec()),
                (Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment(biasp).to_le_bytes().to_vec()),
            ],
            f64_scalars: path.api == LibraryApi::Dgemm,
        };
        // Our B (stored as the n×k weight) is cuBLAS's A; our A its B.
        self.lt_matmul(&call, bp, ap, (dp, dp), "gemm_and_bias")
    }

    /// `scaled_gemm` (`torch._scaled_mm`, unit tensor-wise scales, B column-major).
    fn scaled_mm(&self, path: &LibraryPath, g: &LibraryGemm, a: &CudaSlice<u8>, b: &CudaSlice<u8>, d: &mut CudaSlice<u8>) -> Result<(), GpuError> {
        use cudarc::cublaslt::sys::{cublasComputeType_t as Compute, cublasLtMatmulDescAttributes_t as Desc, cublasLtMatmulMatrixScale_t as Scale, cublasLtMatmulPreferenceAttributes_t as Pref, cudaDataType as T};
        use cudarc::cublas::sys::cublasOperation_t as Op;
        let LibraryApi::ScaledMm { fast_accum } = path.api else { unreachable!("a scaled_mm path") };
        let s = &self.stream;
        let (ap, _ga) = a.device_ptr(s);
        let (bp, _gb) = b.device_ptr(s);
        let (dp, _gd) = d.device_ptr(s);
        let (scale, _gs) = self.unit_scale.device_ptr(s);
        let (m, n, k) = (g.m as u64, g.n as u64, g.k as u64);
        let scalar = (Scale::CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F as i32).to_le_bytes().to_vec();
        let call = LtCall {
            compute: Compute::CUBLAS_COMPUTE_32F,
            scale: T::CUDA_R_32F,
            transa: Op::CUBLAS_OP_T,
            // cuBLAS's A is our B (mat1 after the swap), in B's FP8 format.
            a: (lt_dtype(path.b_fmt), k, n, k as i64),
            b: (lt_dtype(path.a_fmt), k, m, k as i64),
            c: (T::CUDA_R_32F, n, m, n as i64),
            d: (T::CUDA_R_32F, n, m, n as i64),
            desc_attrs: vec![
                (Desc::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale.to_le_bytes().to_vec()),
                (Desc::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale.to_le_bytes().to_vec()),
                (Desc::CUBLASLT_MATMUL_DESC_FAST_ACCUM, vec![fast_accum as u8]),
                (Desc::CUBLASLT_MATMUL_DESC_A_SCALE_MODE, scalar.clone()),
                (Desc::CUBLASLT_MATMUL_DESC_B_SCALE_MODE, scalar),
            ],
            pref_attrs: vec![(Pref::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, (self.lt_workspace_bytes as u64).to_le_bytes().to_vec())],
            f64_scalars: false,
        };
        // torch 2.11's trace of _scaled_mm shows C at cuBLAS's A pointer and outOfPlace=1 (β = 0:
        // C is never read); the same here.
        self.lt_matmul(&call, bp, ap, (bp, dp), "scaled_gemm")
    }

    /// Descriptors, the first heuristic result, the matmul, descriptors destroyed; `(c, d)`:
    /// the C and D pointers.
    fn lt_matmul(&self, call: &LtCall, a: u64, b: u64, (c, d): (u64, u64), what: &str) -> Result<(), GpuError> {
        use cudarc::cublaslt::sys::{self as lt, cublasLtMatmulDescAttributes_t as Desc};
        let ok = lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS;
        let check = |st: lt::cublasStatus_t, step: &str| if st == ok { Ok(()) } else { Err(lib_err(&format!("{what}: {step}"), st)) };
        let s = &self.stream;
        let handle = self.lt_handle;
        let (ws, _gw) = self.lt_workspace.device_ptr(s);
        // SAFETY: descriptors are created, used and destroyed here; attribute buffers are
        // the sizes cuBLASLt expects for each attribute (u32 enums, i32 scale modes, i8 fast
        // accumulation, u64 pointers and sizes); the matrices are live device buffers of the
        // sizes the layouts describe; α and β point to host scalars of the scale type.
        unsafe {
            let mut desc: lt::cublasLtMatmulDesc_t = std::ptr::null_mut();
            check(lt::cublasLtMatmulDescCreate(&mut desc, call.compute, call.scale), "creating the matmul descriptor")?;
            let mut layouts: Vec<lt::cublasLtMatrixLayout_t> = Vec::new();
            let mut pref: lt::cublasLtMatmulPreference_t = std::ptr::null_mut();
            let result = (|| -> Result<(), GpuError> {
                let transa = (call.transa as u32).to_le_bytes();
                check(lt::cublasLtMatmulDescSetAttribute(desc, Desc::CUBLASLT_MATMUL_DESC_TRANSA, transa.as_ptr() as *const _, 4), "TRANSA")?;
                let transb = (cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N as u32).to_le_bytes();
                check(lt::cublasLtMatmulDescSetAttribute(desc, Desc::CUBLASLT_MATMUL_DESC_TRANSB, transb.as_ptr() as *const _, 4), "TRANSB")?;
                for (attr, bytes) in &call.desc_attrs {
                    check(lt::cublasLtMatmulDescSetAttribute(desc, *attr, bytes.as_ptr() as *const _, bytes.len()), &format!("{attr:?}"))?;
                }
                for &(t, rows, cols, ld) in [&call.a, &call.b, &call.c, &call.d] {
                    let mut l: lt::cublasLtMatrixLayout_t = std::ptr::null_mut();
                    check(lt::cublasLtMatrixLayoutCreate(&mut l, t, rows, cols, ld), "creating a matrix layout")?;
                    layouts.push(l);
                }
                check(lt::cublasLtMatmulPreferenceCreate(&mut pref), "creating the preference")?;
                for (attr, bytes) in &call.pref_attrs {
                    check(lt::cublasLtMatmulPreferenceSetAttribute(pref, *attr, bytes.as_ptr() as *const _, bytes.len()), &format!("{attr:?}"))?;
                }
                let mut heuristic: lt::cublasLtMatmulHeuristicResult_t = std::mem::zeroed();
                let mut returned = 0;
                check(lt::cublasLtMatmulAlgoGetHeuristic(handle, desc, layouts[0], layouts[1], layouts[2], layouts[3], pref, 1, &mut heuristic, &mut returned), "asking for an algorithm")?;
                if returned == 0 {
                    return Err(lib_err(&format!("{what}: no algorithm"), lt::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED));
                }
                let stream = s.cu_stream() as lt::cudaStream_t;
                let st = if call.f64_scalars {
                    let (one, zero) = (1.0f64, 0.0f64);
                    lt::cublasLtMatmul(handle, desc, &one as *const f64 as *const _, a as *const _, layouts[0], b as *const _, layouts[1], &zero as *const f64 as *const _, c as *const _, layouts[2], d as *mut _, layouts[3], &heuristic.algo, ws as *mut _, self.lt_workspace_bytes, stream)
                } else {
                    let (one, zero) = (1.0f32, 0.0f32);
                    lt::cublasLtMatmul(handle, desc, &one as *const f32 as *const _, a as *const _, layouts[0], b as *const _, layouts[1], &zero as *const f32 as *const _, c as *const _, layouts[2], d as *mut _, layouts[3], &heuristic.algo, ws as *mut _, self.lt_workspace_bytes, stream)
                };
                check(st, "running cublasLtMatmul")
            })();
            if !pref.is_null() {
                lt::cublasLtMatmulPreferenceDestroy(pref);
            }
            for l in layouts {
                lt::cublasLtMatrixLayoutDestroy(l);
            }
            lt::cublasLtMatmulDescDestroy(desc);
            result
        }
    }
}

// SAFETY: the cuBLASLt handle is plain library state, not bound to a thread; `run` takes
// `&self` and callers share an executor across threads only behind a lock (cuBLAS's own handle,
// in `CudaBlas`, is Send already).
unsafe impl Send for LibraryExecutor {}

impl Drop for LibraryExecutor {
    fn drop(&mut self) {
        // SAFETY: the handle was created in `new` and is destroyed once.
        unsafe { cudarc::cublaslt::sys::cublasLtDestroy(self.lt_handle) };
    }
}

/// The descriptors of one cublasLtMatmul: layouts as (type, rows, cols, ld).
struct LtCall {
    compute: cudarc::cublaslt::sys::cublasComputeType_t,
    scale: cudarc::cublaslt::sys::cudaDataType,
    transa: cudarc::cublas::sys::cublasOperation_t,
    a: (cudarc::cublaslt::sys::cudaDataType, u64, u64, i64),
    b: (cudarc::cublaslt::sys::cudaDataType, u64, u64, i64),
    c: (cudarc::cublaslt::sys::cudaDataType, u64, u64, i64),
    d: (cudarc::cublaslt::sys::cudaDataType, u64, u64, i64),
    desc_attrs: Vec<(cudarc::cublaslt::sys::cublasLtMatmulDescAttributes_t, Vec<u8>)>,
    pref_attrs: Vec<(cudarc::cublaslt::sys::cublasLtMatmulPreferenceAttributes_t, Vec<u8>)>,
    f64_scalars: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspaces_as_pytorch_sizes_them() {
        assert_eq!(cublas_workspace_bytes((9, 0), None), 32 << 20);
        assert_eq!(cublas_workspace_bytes((8, 0), None), 4096 * 1024 * 2 + 16 * 1024 * 8);
        assert_eq!(cublas_workspace_bytes((9, 0), Some(":4096:8")), 32 << 20);
        assert_eq!(cublas_workspace_bytes((9, 0), Some(":4096:2:16:8")), 4096 * 1024 * 2 + 16 * 1024 * 8);
        assert_eq!(cublas_workspace_bytes((9, 0), Some("junk")), 32 << 20);
        assert_eq!(lt_workspace_bytes(None), 1 << 20);
        assert_eq!(lt_workspace_bytes(Some("4096")), 4 << 20);
        assert_eq!(lt_workspace_bytes(Some("junk")), 1 << 20);
    }

    #[test]
    fn alignment_is_the_largest_power_of_two_up_to_256() {
        assert_eq!(alignment(0x7f00_0000_0000), 256);
        assert_eq!(alignment(0x7f00_0000_0040), 64);
        assert_eq!(alignment(0x7f00_0000_0002), 2);
        assert_eq!(alignment(0x7f00_0000_0001), 1);
    }

    #[test]
    fn bytes_round_trip_per_container() {
        for f in [Format::E4m3, Format::F16, Format::F32, Format::F64] {
            let v: Vec<u64> = (0..5).map(|i| (0x0123_4567_89ab_cdefu64 >> i) & f.mask()).collect();
            assert_eq!(from_bytes(&to_bytes(&v, f), f), v);
        }
        assert_eq!(transpose(&[1, 2, 3, 4, 5, 6], 2, 3), vec![1, 4, 2, 5, 3, 6]);
    }

    #[test]
    fn eleven_paths_with_bias_only_where_linear_keeps_the_format() {
        assert_eq!(LIBRARY_PATHS.len(), 11);
        let bias: Vec<&str> = LIBRARY_PATHS.iter().filter(|p| p.takes_bias()).map(|p| p.id).collect();
        assert_eq!(bias, ["cublas.gemm.f16.f16.f16.f16", "cublas.gemm.bf16.bf16.bf16.bf16", "cublas.gemm.f32.tf32.tf32.f32", "cublas.gemm.f32.f32.f32.f32", "cublas.gemm.f64.f64.f64.f64"]);
        assert!(library_path("cublaslt.matmul.f32.e4m3.e5m2.f32").unwrap().b_column_major());
    }
}
