//! The two sides a hunt compares: the GPU (one or several devices), a model's emulator, or the
//! exact MPFR reference. Each turns a batch of tiles into their D outputs.

use crate::case::MmaCase;
use crate::exact;
use crate::exec::{Gpu, PathSpec};
use crate::format::Rounding;
use crate::model::{Emulator, Model};
use super::external::{External, ExternalError};
use rayon::prelude::*;

/// Batches of at most this many tiles run on the calling thread.
pub const FEW: usize = crate::fuzzing::codec::MAX_TILES;

/// One way of computing D.
pub enum Side {
    /// Real tensor cores: each batch is split across the GPUs and run twice with two poisons.
    Gpu { gpus: Vec<Gpu>, path: &'static PathSpec },
    /// The emulator under a model, on every CPU core.
    Model(Emulator),
    /// The exact value correctly rounded into D's format (MPFR).
    Exact(Rounding),
    /// Another simulator as a child process ([`External`]: `external:CMD`, `external-npz:CMD`).
    External(External),
}

/// What went wrong while computing one side.
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    #[error(transparent)]
    Gpu(#[from] crate::exec::GpuError),
    #[error("the GPU gave different results for {0} tiles of one batch in two runs")]
    Nondeterministic(usize),
    #[error("emulator: {0}")]
    Emulator(#[from] crate::model::EmulatorError),
    #[error(transparent)]
    External(#[from] ExternalError),
}

impl Side {
    pub fn model(model: Model) -> Side {
        Side::Model(Emulator::new(model))
    }

    /// A side from its name: `gpu` (the first GPU), `exact` (MPFR, rounded to nearest),
    /// `exact-rz`/`-ru`/`-rd`/`-rna`, `external:CMD` or `external-npz:CMD` (another simulator,
    /// [`External`]), or a model name or file.
    pub fn from_spec(spec: &str, path: &'static PathSpec) -> Result<Side, String> {
        if let Some(oracle) = External::from_spec(spec) {
            return oracle.map(Side::External).map_err(|e| e.to_string());
        }
        match spec {
            "gpu" => {
                let gpu = Gpu::open(0).map_err(|e| format!("no GPU to fuzz against ({e}); name another side: exact, exact-rz, or a model"))?;
                if !gpu.supports(path) {
                    return Err(format!("{} cannot run {}", gpu.info.name, path.id));
                }
                Ok(Side::Gpu { gpus: vec![gpu], path })
            }
            "exact" => Ok(Side::Exact(Rounding::Rne)),
            s if s.starts_with("exact-") => Ok(Side::Exact(s["exact-".len()..].parse()?)),
            m => Ok(Side::model(Model::load(m).map_err(|e| e.to_string())?)),
        }
    }

    /// The arithmetic of a model side for inputs of this format.
    pub fn arithmetic(&self, a_fmt: crate::Format) -> Option<&crate::model::Arithmetic> {
        match self {
            Side::Model(e) => Some(e.model().arithmetic(a_fmt)),
            _ => None,
        }
    }

    /// A short name for tables and file names: `gpu`, the model's name, or `exact-rne`.
    pub fn name(&self) -> String {
        match self {
            Side::Gpu { .. } => "gpu".into(),
            Side::Model(e) => e.model().name.clone(),
            Side::Exact(r) => format!("exact-{}", r.name()),
            Side::External(_) => "external".into(),
        }
    }

    /// What this side is, in full: the GPU's name, driver and path; the model; the reference.
    pub fn describe(&self) -> String {
        match self {
            Side::Gpu { gpus, path } => {
                let i = &gpus[0].info;
                format!("{} x{} (cc {}.{}, driver {}) running {}", i.name, gpus.len(), i.compute_capability.0, i.compute_capability.1, i.driver, path.id)
            }
            Side::Model(e) => format!("model {}: {}", e.model().name, e.model().description),
            Side::Exact(r) => format!("exact value (MPFR) rounded {} into D's format", r.name()),
            Side::External(x) => format!("external oracle `{}` ({:?} protocol)", x.recorded_command(), x.protocol),
        }
    }

    /// Whether any NaN stands for any other: the exact reference does not model NaN payloads.
    pub fn nan_is_any(&self) -> bool {
        matches!(self, Side::Exact(_))
    }

    /// D of every tile.
    pub fn execute(&self, tiles: &[MmaCase]) -> Result<Vec<Vec<u64>>, SideError> {
        if tiles.is_empty() {
            return Ok(vec![]);
        }
        match self {
            Side::Gpu { gpus, path } => run_on_gpus(gpus, path, tiles),
            // A few tiles (a fuzz input): waking the thread pool costs more than it saves.
            Side::Model(e) if tiles.len() <= FEW => Ok(tiles.iter().map(|t| e.run(t)).collect::<Result<_, _>>()?),
            Side::Model(e) => Ok(tiles.par_iter().map(|t| e.run(t)).collect::<Result<_, _>>()?),
            Side::Exact(r) => Ok(tiles
                .par_iter()
                .map(|t| exact::exact_tile(t).iter().map(|x| x.round(t.d_fmt, *r)).collect())
                .collect()),
            Side::External(x) => Ok(x.execute(tiles)?),
        }
    }

    /// One element of D per tile: element `at[t] = (i, j)` of tile `t` (the minimiser looks at
    /// one element per candidate).
    pub fn execute_elements(&self, tiles: &[MmaCase], at: &[(usize, usize)]) -> Result<Vec<u64>, SideError> {
        match self {
            Side::Gpu { .. } | Side::External(_) => {
                let d = self.execute(tiles)?;
                Ok(d.iter().zip(tiles).zip(at).map(|((d, t), &(i, j))| d[i * t.n + j]).collect())
            }
            Side::Model(e) => Ok(tiles.par_iter().zip(at).map(|(t, &(i, j))| e.run_element(t, i, j)).collect::<Result<_, _>>()?),
            Side::Exact(r) => Ok(tiles.par_iter().zip(at).map(|(t, &(i, j))| exact::exact_element(t, i, j).round(t.d_fmt, *r)).collect()),
        }
    }
}

/// Split a batch evenly across the GPUs, one thread each; results in tile order.
fn run_on_gpus(gpus: &[Gpu], path: &PathSpec, tiles: &[MmaCase]) -> Result<Vec<Vec<u64>>, SideError> {
    let checked = |gpu: &Gpu, chunk: &[MmaCase]| {
        let run = gpu.run_checked(path, chunk)?;
        if run.nondeterministic > 0 {
            return Err(SideError::Nondeterministic(run.nondeterministic));
        }
        Ok(run.results)
    };
    if let [gpu] = gpus {
        // One GPU: no thread to start (a fuzz target calls this for every input of a few tiles).
        return checked(gpu, tiles);
    }
    let per = tiles.len().div_ceil(gpus.len());
    let parts: Vec<Result<Vec<Vec<u64>>, SideError>> = std::thread::scope(|s| {
        let handles: Vec<_> = gpus
            .iter()
            .zip(tiles.chunks(per))
            .map(|(gpu, chunk)| {
                s.spawn(move || checked(gpu, chunk))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("GPU worker thread panicked")).collect()
    });
    let mut out = Vec::with_capacity(tiles.len());
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}
