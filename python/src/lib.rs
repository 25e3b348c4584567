//! The native half of the `mmafuzz` Python package. Python (`python/mmafuzz/__init__.py`) turns
//! typed NumPy arrays into raw bit patterns of a named format without copying (a view as the
//! unsigned integer of the container's width, then as bytes) and calls these functions; they read
//! the bytes in place, run the emulator, the library emulator or the MPFR reference on all cores
//! with the GIL released, and hand back D as a fresh byte array that Python views as D's dtype.

use mmafuzz::case::MmaCase;
use mmafuzz::blockscale::{BlockScales, ScaleFormat};
use mmafuzz::exec::paths::path_by_id;
use mmafuzz::format::{Format, Rounding};
use mmafuzz::library::gemm::{Gemm, GemmError, LibraryEmulator};
use mmafuzz::library::{KernelConfig, LibraryError, LibraryModel, Scalars, TorchOp};
use mmafuzz::npz::{container_bytes, le_elements, put_le_elements};
use mmafuzz::{exact, Emulator, Model};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::create_exception;
use pyo3::exceptions::{PyValueError, PyException};
use pyo3::prelude::*;
use rayon::prelude::*;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

create_exception!(mmafuzz, MmafuzzError, PyException, "An input mmafuzz cannot run: a bad tile, model or shape.");
create_exception!(mmafuzz, NotModelled, MmafuzzError, "A library kernel (the configuration the GPU runs for this shape) whose schedule the model does not cover yet: declined, not guessed.");
create_exception!(mmafuzz, UnlearnedShape, MmafuzzError, "A library GEMM whose shape is outside what the model's table learned (give `config=`).");

fn err(message: impl std::fmt::Display) -> PyErr {
    MmafuzzError::new_err(message.to_string())
}

fn format(name: &str) -> PyResult<Format> {
    name.parse().map_err(|e: String| PyValueError::new_err(e))
}

/// Bytes per element of a format's container (1 for the narrow integers and FP8, 2, 4, 8).
fn width(f: Format) -> usize {
    container_bytes(f)
}

/// Elements of `f` from little-endian bytes of its container width.
fn bits_of(bytes: &[u8], f: Format) -> Vec<u64> {
    le_elements(bytes, width(f))
}

/// Write elements of `f` as little-endian bytes of its container width.
fn put_bits(out: &mut [u8], bits: &[u64], f: Format) {
    put_le_elements(out, bits, width(f))
}

/// Instruction models by name, loaded once (a file path is read every time: it may change).
fn emulator(name: &str) -> PyResult<Arc<Emulator>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Emulator>>>> = OnceLock::new();
    let embedded = mmafuzz::model::embedded_model_source(name).is_some();
    let cache = CACHE.get_or_init(Default::default);
    if embedded {
        if let Some(e) = cache.lock().expect("cache lock").get(name) {
            return Ok(e.clone());
        }
    }
    let model = Model::load(name).map_err(err)?;
    if model.schedule.is_some() {
        return Err(err(format!("{name} is a library model: call mmafuzz.matmul (whole GEMMs of any shape), not emulate")));
    }
    let e = Arc::new(Emulator::new(model));
    if embedded {
        cache.lock().expect("cache lock").insert(name.to_string(), e.clone());
    }
    Ok(e)
}

fn library(name: &str) -> PyResult<Arc<LibraryModel>> {
    library_with(name, None, false)
}

/// A library model, with the kernel table from `table` (a file `mmafuzz library trace` wrote)
/// where given, and its predictor answering for untraced shapes where `predicted`.
fn library_with(name: &str, table: Option<&std::path::Path>, predicted: bool) -> PyResult<Arc<LibraryModel>> {
    static CACHE: OnceLock<Mutex<HashMap<(String, bool), Arc<LibraryModel>>>> = OnceLock::new();
    let cacheable = table.is_none() && mmafuzz::model::embedded_model_source(name).is_some();
    let cache = CACHE.get_or_init(Default::default);
    let key = (name.to_string(), predicted);
    if let Some(m) = cacheable.then(|| cache.lock().expect("cache lock").get(&key).cloned()).flatten() {
        return Ok(m);
    }
    let mut m = match LibraryModel::load(name, table) {
        Err(LibraryError::NotLibrary(m)) => return Err(err(format!("'{m}' is an instruction model: call mmafuzz.emulate with tiles; matmul needs a library model (h200:cublas..., h100:cublas...)"))),
        other => other.map_err(err)?,
    };
    m.use_predictor = predicted;
    let m = Arc::new(m);
    if cacheable {
        cache.lock().expect("cache lock").insert(key, m.clone());
    }
    Ok(m)
}

/// A batch of N tiles as borrowed bytes, the shape and the formats.
struct Tiles<'a> {
    fmts: (Format, Format, Format),
    shape: (usize, usize, usize, usize),
    a: &'a [u8],
    b: &'a [u8],
    c: &'a [u8],
    meta: Option<&'a [u8]>,
    xor: bool,
    /// Block scales: format, elements along K per scale, A's N×m×(k/block) and B's
    /// N×(k/block)×n bit patterns.
    scales: Option<(ScaleFormat, usize, &'a [u8], &'a [u8])>,
    /// D's format: C's, or a wider one (`mma.m8n8k4.f32.f16.f16.f16`).
    d_fmt: Format,
}

impl Tiles<'_> {
    fn check(&self) -> PyResult<()> {
        let ((af, bf, cf), (tiles, m, n, k)) = (self.fmts, self.shape);
        let a_cols = if self.meta.is_some() { k / 2 } else { k };
        let want = [
            ("a", self.a.len(), tiles * m * a_cols * width(af)),
            ("b", self.b.len(), tiles * k * n * width(bf)),
            ("c", self.c.len(), tiles * m * n * width(cf)),
            ("meta", self.meta.map_or(0, <[u8]>::len), if self.meta.is_some() { tiles * m * a_cols } else { 0 }),
        ];
        if let Some((_, block, sa, sb)) = self.scales {
            if block == 0 || k % block != 0 {
                return Err(err(format!("scales of {block} elements along K do not divide K = {k}")));
            }
            for (name, got, need) in [("scale_a", sa.len(), tiles * m * (k / block)), ("scale_b", sb.len(), tiles * (k / block) * n)] {
                if got != need {
                    return Err(err(format!("{name} holds {got} scales; {tiles} tiles of {m}x{n}x{k} with one per {block} along K need {need}")));
                }
            }
        }
        for (name, got, need) in want {
            if got != need {
                return Err(err(format!("{name} holds {got} bytes; {tiles} tiles of {m}x{n}x{k} need {need}")));
            }
        }
        Ok(())
    }

    /// Tile `t` as a case, checked as a JSONL line is.
    fn case(&self, t: usize) -> Result<MmaCase, String> {
        let ((af, bf, cf), (_, m, n, k)) = (self.fmts, self.shape);
        let a_cols = if self.meta.is_some() { k / 2 } else { k };
        let part = |bytes: &[u8], per: usize, f: Format| bits_of(&bytes[t * per * width(f)..(t + 1) * per * width(f)], f);
        let mut case = MmaCase::zeros(af, cf, m, n, k);
        case.b_fmt = bf;
        case.d_fmt = self.d_fmt;
        case.a = part(self.a, m * a_cols, af);
        case.b = part(self.b, k * n, bf);
        case.c = part(self.c, m * n, cf);
        case.meta = self.meta.map(|meta| meta[t * m * a_cols..(t + 1) * m * a_cols].to_vec());
        case.scales = self.scales.map(|(fmt, block, sa, sb)| {
            let blocks = k / block;
            BlockScales { fmt, block, a: sa[t * m * blocks..(t + 1) * m * blocks].to_vec(), b: sb[t * blocks * n..(t + 1) * blocks * n].to_vec() }
        });
        if self.xor {
            case.extra.insert("op".into(), Value::from("xor"));
        }
        case.validate().map_err(|e| e.to_string())?;
        Ok(case)
    }

    /// D of every tile, `run` on all cores; the first failing tile's error.
    fn run(&self, run: impl Fn(&MmaCase) -> Result<Vec<u64>, String> + Sync) -> Result<Vec<u8>, String> {
        let (tiles, m, n, _) = self.shape;
        let per = m * n * width(self.d_fmt);
        let mut out = vec![0u8; tiles * per];
        out.par_chunks_mut(per.max(1)).enumerate().try_for_each(|(t, o)| {
            let case = self.case(t).map_err(|e| format!("tile {t}: {e}"))?;
            let d = run(&case).map_err(|e| format!("tile {t}: {e}"))?;
            put_bits(o, &d, self.d_fmt);
            Ok::<(), String>(())
        })?;
        Ok(out)
    }
}

type Bytes<'py> = PyReadonlyArray1<'py, u8>;

/// The block scales handed over from Python: (format name, block, A's bytes, B's bytes).
#[allow(clippy::type_complexity)]
fn scale_args<'a>(s: &'a Option<(String, usize, Bytes<'_>, Bytes<'_>)>) -> PyResult<Option<(ScaleFormat, usize, &'a [u8], &'a [u8])>> {
    match s {
        None => Ok(None),
        Some((fmt, block, a, b)) => Ok(Some((fmt.parse::<ScaleFormat>().map_err(err)?, *block, a.as_slice()?, b.as_slice()?))),
    }
}

/// D = A·B + C on N tiles under an instruction model (bytes of raw bit patterns in).
#[pyfunction]
#[pyo3(signature = (model, fmts, shape, a, b, c, meta=None, xor=false, scales=None, d_fmt=None))]
#[allow(clippy::too_many_arguments)]
fn emulate_raw<'py>(
    py: Python<'py>,
    model: &str,
    fmts: (String, String, String),
    shape: (usize, usize, usize, usize),
    a: Bytes<'py>,
    b: Bytes<'py>,
    c: Bytes<'py>,
    meta: Option<Bytes<'py>>,
    xor: bool,
    scales: Option<(String, usize, Bytes<'py>, Bytes<'py>)>,
    d_fmt: Option<String>,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let emu = emulator(model)?;
    let scales = scale_args(&scales)?;
    let d_fmt = format(d_fmt.as_deref().unwrap_or(&fmts.2))?;
    let tiles = Tiles { fmts: (format(&fmts.0)?, format(&fmts.1)?, format(&fmts.2)?), shape, a: a.as_slice()?, b: b.as_slice()?, c: c.as_slice()?, meta: meta.as_ref().map(|m| m.as_slice()).transpose()?, xor, scales, d_fmt };
    tiles.check()?;
    let d = py.detach(|| tiles.run(|case| emu.run(case).map_err(|e| e.to_string()))).map_err(err)?;
    Ok(d.into_pyarray(py))
}

/// The exact D = A·B + C (MPFR) rounded once to D's format (C's unless `d_fmt`).
#[pyfunction]
#[pyo3(signature = (fmts, shape, a, b, c, rounding="rne", meta=None, xor=false, scales=None, d_fmt=None))]
#[allow(clippy::too_many_arguments)]
fn reference_raw<'py>(
    py: Python<'py>,
    fmts: (String, String, String),
    shape: (usize, usize, usize, usize),
    a: Bytes<'py>,
    b: Bytes<'py>,
    c: Bytes<'py>,
    rounding: &str,
    meta: Option<Bytes<'py>>,
    xor: bool,
    scales: Option<(String, usize, Bytes<'py>, Bytes<'py>)>,
    d_fmt: Option<String>,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let rnd: Rounding = rounding.parse().map_err(|e: String| PyValueError::new_err(e))?;
    let scales = scale_args(&scales)?;
    let d_fmt = format(d_fmt.as_deref().unwrap_or(&fmts.2))?;
    let tiles = Tiles { fmts: (format(&fmts.0)?, format(&fmts.1)?, format(&fmts.2)?), shape, a: a.as_slice()?, b: b.as_slice()?, c: c.as_slice()?, meta: meta.as_ref().map(|m| m.as_slice()).transpose()?, xor, scales, d_fmt };
    tiles.check()?;
    let d = py
        .detach(|| tiles.run(|case| Ok(exact::exact_tile(case).iter().map(|x| x.round(case.d_fmt, rnd)).collect())))
        .map_err(err)?;
    Ok(d.into_pyarray(py))
}

/// A library model's formats: (A, B, D), as format names.
#[pyfunction]
fn library_formats(model: &str) -> PyResult<(String, String, String)> {
    let lm = library(model)?;
    let r = &lm.rules;
    Ok((r.inputs.name().into(), r.b_inputs().name().into(), r.output.name().into()))
}

/// "instruction" or "library" for a model name or file; an error for an unknown or bad model.
#[pyfunction]
fn model_kind(model: &str) -> PyResult<&'static str> {
    let m = Model::load(model).map_err(err)?;
    Ok(if m.schedule.is_some() { "library" } else { "instruction" })
}

/// The shapes a library model's table learned, sorted by (m, n, k, beta): (m, n, k, beta, the
/// kernel configuration). Sorted, so the same model gives the same list in every process.
#[pyfunction]
fn learned_shapes(model: &str) -> PyResult<Vec<(usize, usize, usize, u8, String)>> {
    let lm = library(model)?;
    let mut shapes: Vec<_> = lm.table.iter().map(|((m, n, k, beta), c)| (m, n, k, beta as u8, c.to_log())).collect();
    shapes.sort_unstable_by_key(|s| (s.0, s.1, s.2, s.3));
    Ok(shapes)
}

/// A path's formats and kind, where `name` is `ARCH:PATH` of a known instruction:
/// (A, B, C, sparse, xor, block scales as (format, block) or None, D); None otherwise.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn path_formats(name: &str) -> Option<(String, String, String, bool, bool, Option<(String, usize)>, String)> {
    let id = name.split_once(':').map_or(name, |(_, p)| p);
    let p = path_by_id(id)?;
    let scales = p.block_scale().map(|(f, block)| (f.name().to_string(), block));
    Some((p.a_fmt.name().into(), p.b_fmt.name().into(), p.c_fmt.name().into(), p.sparse(), p.xor_popc(), scales, p.d_fmt().name().into()))
}

/// One whole GEMM under a library model: (D's bytes, the kernel configuration used, where it
/// came from, a warning where the model's GPU is not the one asked about). `op` is the PyTorch
/// call (mm, addmm, linear, linear_bias; by default what c and bias say, in torch.mm's layout).
#[pyfunction]
#[pyo3(signature = (model, shape, a, b, c=None, bias=None, config=None, op=None, table=None, predicted=false, gpu=None, alpha=1.0, beta=1.0, whole_shape=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn matmul_raw<'py>(
    py: Python<'py>,
    model: &str,
    shape: (usize, usize, usize),
    a: Bytes<'py>,
    b: Bytes<'py>,
    c: Option<Bytes<'py>>,
    bias: Option<Bytes<'py>>,
    config: Option<&str>,
    op: Option<&str>,
    table: Option<std::path::PathBuf>,
    predicted: bool,
    gpu: Option<&str>,
    alpha: f64,
    beta: f64,
    whole_shape: Option<(usize, usize, usize)>,
) -> PyResult<(Bound<'py, PyArray1<u8>>, String, String, Option<String>)> {
    let scalars = Scalars::new(alpha, beta).map_err(PyValueError::new_err)?;
    let lm = library_with(model, table.as_deref(), predicted)?;
    let r = &lm.rules;
    let (m, n, k) = shape;
    let (ia, ib, out) = (r.inputs, r.b_inputs(), r.output);
    let sized = |name: &str, bytes: &[u8], count: usize, f: Format| -> PyResult<Vec<u64>> {
        if bytes.len() != count * width(f) {
            return Err(err(format!("{name} holds {} bytes; {count} elements of {f} need {}", bytes.len(), count * width(f))));
        }
        Ok(bits_of(bytes, f))
    };
    let g = Gemm {
        m,
        n,
        k,
        a: sized("a", a.as_slice()?, m * k, ia)?,
        b: sized("b", b.as_slice()?, k * n, ib)?,
        c: c.as_ref().map(|c| sized("c", c.as_slice()?, m * n, out)).transpose()?,
        bias: bias.as_ref().map(|x| sized("bias", x.as_slice()?, n, out)).transpose()?,
    }
    .as_torch_linear();
    let op: TorchOp = match op {
        Some(o) => o.parse().map_err(err)?,
        None => TorchOp::of(c.is_some(), bias.is_some()),
    };
    let config = config.map(|t| KernelConfig::from_log(t).map_err(|e| err(format!("config: {e}")))).transpose()?;
    let warning = lm.gpu_mismatch(gpu);
    let run = || -> Result<(Vec<u8>, String, String), PyErr> {
        let emu = LibraryEmulator::new(&lm).with_scalars(scalars);
        emu.check(&g).map_err(err)?;
        let (config, source) = match config {
            Some(c) => (c, "given".to_string()),
            None => match emu.choose(whole_shape.unwrap_or((m, n, k)), op) {
                Ok((c, s)) => (c.clone(), s.to_string()),
                Err(e @ GemmError::Unlearned { .. }) => {
                    return Err(UnlearnedShape::new_err(format!("{e}; pass config= (the algo=[...] text cuBLASLt's CUBLASLT_LOG_LEVEL=5 trace prints) or table= (a file mmafuzz library trace wrote)")))
                }
                Err(e) => return Err(err(e)),
            },
        };
        let plan = match whole_shape {
            // Rows and columns of a larger GEMM: its kernel's plan.
            Some((wm, wn, wk)) if wk == k && wm >= m && wn >= n => {
                let whole = Gemm { m: wm, n: wn, k, a: Vec::new(), b: Vec::new(), c: None, bias: g.bias.clone() };
                emu.plan_op(&whole, &config, op)
            }
            Some(s) => return Err(PyValueError::new_err(format!("whole_shape {s:?} does not hold a {m}x{n}x{k} part"))),
            None => emu.plan_op(&g, &config, op),
        }
        .map_err(|e| match e {
            GemmError::Plan(p) => NotModelled::new_err(p.to_string()),
            e => err(e),
        })?;
        let d = emu.run(&g, &plan, &|_| ()).map_err(|e| match e {
            GemmError::Scalars(why) => NotModelled::new_err(why),
            e => err(e),
        })?;
        let mut bytes = vec![0u8; d.len() * width(out)];
        put_bits(&mut bytes, &d, out);
        Ok((bytes, config.to_log(), source))
    };
    let (d, used, source) = py.detach(run)?;
    Ok((d.into_pyarray(py), used, source, warning))
}

/// Every model by name and kind: ("instruction" | "library" | "hypothesis", name, description).
#[pyfunction]
fn models() -> PyResult<Vec<(String, String, String)>> {
    let mut out = Vec::new();
    for name in mmafuzz::model::embedded_model_names() {
        out.push(("hypothesis".to_string(), name.to_string(), Model::load(name).map_err(err)?.description));
    }
    for name in mmafuzz::model::embedded_arch_model_names() {
        let model = Model::load(name).map_err(err)?;
        let kind = if model.schedule.is_some() { "library" } else { "instruction" };
        out.push((kind.to_string(), name.to_string(), model.description));
    }
    Ok(out)
}

/// One group of a corpus file's tiles (one shape, formats and kind): formats (A, B, C, D), shape, the raw
/// bytes of A, B, C and the GPU's D, the sparsity metadata, XOR pairing, and each tile's GPU.
type CorpusGroup<'py> = (
    (String, String, String, String),
    (usize, usize, usize, usize),
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<u8>>,
    Option<Bound<'py, PyArray1<u8>>>,
    bool,
    Vec<String>,
    Option<GroupScales<'py>>,
);

/// A block-scaled group's scales: format, block, and A's and B's scale bytes of every tile.
type GroupScales<'py> = (String, usize, Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<u8>>);

/// A corpus file's GPU-recorded tiles (regenerated from their seeds where stored by reference),
/// grouped by shape and formats in the order they first appear.
#[pyfunction]
fn corpus_raw<'py>(py: Python<'py>, file: std::path::PathBuf) -> PyResult<Vec<CorpusGroup<'py>>> {
    let (cases, bad) = py.detach(|| mmafuzz::replay::read_corpus(&file)).map_err(|e| err(format!("{}: {e}", file.display())))?;
    if let Some(first) = bad.first() {
        return Err(err(format!("{} unreadable line(s), the first: {first}", bad.len())));
    }
    let key = |c: &MmaCase| (c.a_fmt, c.b_fmt, c.c_fmt, c.d_fmt, c.m, c.n, c.k, c.meta.is_some(), c.xor_pairs(), c.scales.as_ref().map(|s| (s.fmt, s.block)));
    let mut groups: Vec<(_, Vec<&(MmaCase, Vec<u64>)>)> = Vec::new();
    for x in &cases {
        match groups.iter_mut().find(|(k, _)| *k == key(&x.0)) {
            Some((_, v)) => v.push(x),
            None => groups.push((key(&x.0), vec![x])),
        }
    }
    let mut out = Vec::new();
    for ((af, bf, cf, df, m, n, k, sparse, xor, scaled), tiles) in groups {
        let bytes = |part: &dyn Fn(&(MmaCase, Vec<u64>)) -> &[u64], f: Format| {
            let mut v = Vec::new();
            for t in &tiles {
                let bits = part(t);
                let at = v.len();
                v.resize(at + bits.len() * width(f), 0);
                put_bits(&mut v[at..], bits, f);
            }
            v.into_pyarray(py)
        };
        let meta = sparse.then(|| tiles.iter().flat_map(|(c, _)| c.meta.clone().unwrap_or_default()).collect::<Vec<u8>>().into_pyarray(py));
        let scales = scaled.map(|(fmt, block)| {
            let side = |part: &dyn Fn(&BlockScales) -> &[u8]| {
                tiles.iter().flat_map(|(c, _)| c.scales.as_ref().map(|s| part(s).to_vec()).unwrap_or_default()).collect::<Vec<u8>>().into_pyarray(py)
            };
            (fmt.name().to_string(), block, side(&|s| &s.a), side(&|s| &s.b))
        });
        // The GPU that ran the tile, or the simulator that answered in its place (MMA-Sim's records).
        let gpu = |c: &MmaCase| {
            let prov = c.extra.get("provenance");
            prov.and_then(|p| p.get("gpu").or_else(|| p.get("oracle"))).and_then(Value::as_str).unwrap_or("").to_string()
        };
        out.push((
            (af.name().to_string(), bf.name().to_string(), cf.name().to_string(), df.name().to_string()),
            (tiles.len(), m, n, k),
            bytes(&|t| &t.0.a, af),
            bytes(&|t| &t.0.b, bf),
            bytes(&|t| &t.0.c, cf),
            bytes(&|t| &t.1, df),
            meta,
            xor,
            tiles.iter().map(|(c, _)| gpu(c)).collect(),
            scales,
        ));
    }
    Ok(out)
}

/// A library corpus file's GEMMs (`corpus/library/*.jsonl.xz`), operands regenerated from
/// their seeds: one dict each with m, n, k, a, b, c, bias (raw bytes or None), idx and d (the
/// GPU's elements), config, gpu, driver, torch, cublas, executor.
#[pyfunction]
#[pyo3(signature = (file, limit=None))]
fn gemm_records_raw<'py>(py: Python<'py>, file: std::path::PathBuf, limit: Option<usize>) -> PyResult<Vec<Bound<'py, pyo3::types::PyDict>>> {
    use mmafuzz::library::record::GemmRecord;
    use pyo3::types::PyDict;
    let text = mmafuzz::store::read_text(&file).map_err(|e| err(format!("{}: {e}", file.display())))?;
    let mut out = Vec::new();
    let mut models: HashMap<String, Arc<LibraryModel>> = HashMap::new();
    for (no, line) in std::io::BufRead::lines(&text[..]).enumerate() {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        let line = line.map_err(|e| err(format!("{}: {e}", file.display())))?;
        if line.trim().is_empty() {
            continue;
        }
        let at = |e: &dyn std::fmt::Display| err(format!("{}:{}: {e}", file.display(), no + 1));
        let r = GemmRecord::parse(&line).map_err(|e| at(&e))?;
        let name = mmafuzz::model::default_name(&r.path);
        let lm = match models.get(&name) {
            Some(m) => m.clone(),
            None => {
                let m = library(&name).map_err(|e| at(&e))?;
                models.insert(name.clone(), m.clone());
                m
            }
        };
        let rules = &lm.rules;
        let (g, elements) = py.detach(|| {
            let g = r.operands(&lm);
            let elements = r.elements_with(&lm, &g);
            (g, elements)
        });
        let elements = elements.map_err(|e| at(&e))?;
        let raw = |bits: &[u64], f: Format| {
            let mut v = vec![0u8; bits.len() * width(f)];
            put_bits(&mut v, bits, f);
            v.into_pyarray(py)
        };
        let d = PyDict::new(py);
        d.set_item("model", &name)?;
        d.set_item("formats", (rules.inputs.name(), rules.b_inputs().name(), rules.output.name()))?;
        d.set_item("m", r.m)?;
        d.set_item("n", r.n)?;
        d.set_item("k", r.k)?;
        d.set_item("a", raw(&g.a, rules.inputs))?;
        d.set_item("b", raw(&g.b, rules.b_inputs()))?;
        d.set_item("c", g.c.as_ref().map(|c| raw(c, rules.output)))?;
        d.set_item("bias", g.bias.as_ref().map(|x| raw(x, rules.output)))?;
        d.set_item("idx", elements.iter().map(|(i, _)| *i).collect::<Vec<usize>>())?;
        d.set_item("d", raw(&elements.iter().map(|(_, b)| *b).collect::<Vec<u64>>(), rules.output))?;
        d.set_item("config", r.config.clone())?;
        for (key, v) in [("gpu", &r.gpu), ("driver", &r.driver), ("torch", &r.torch), ("cublas", &r.cublas)] {
            d.set_item(key, v)?;
        }
        d.set_item("executor", r.executor.clone())?;
        out.push(d);
    }
    Ok(out)
}

/// Bytes per element of each format's container, and each format's bit mask.
#[pyfunction]
fn formats() -> Vec<(String, usize, u64)> {
    Format::ALL.into_iter().chain(Format::INTEGERS).map(|f| (f.name().to_string(), width(f), f.mask())).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MmafuzzError", m.py().get_type::<MmafuzzError>())?;
    m.add("UnlearnedShape", m.py().get_type::<UnlearnedShape>())?;
    m.add("NotModelled", m.py().get_type::<NotModelled>())?;
    m.add_function(wrap_pyfunction!(emulate_raw, m)?)?;
    m.add_function(wrap_pyfunction!(reference_raw, m)?)?;
    m.add_function(wrap_pyfunction!(matmul_raw, m)?)?;
    m.add_function(wrap_pyfunction!(library_formats, m)?)?;
    m.add_function(wrap_pyfunction!(path_formats, m)?)?;
    m.add_function(wrap_pyfunction!(models, m)?)?;
    m.add_function(wrap_pyfunction!(formats, m)?)?;
    m.add_function(wrap_pyfunction!(corpus_raw, m)?)?;
    m.add_function(wrap_pyfunction!(learned_shapes, m)?)?;
    m.add_function(wrap_pyfunction!(model_kind, m)?)?;
    m.add_function(wrap_pyfunction!(gemm_records_raw, m)?)?;
    Ok(())
}
