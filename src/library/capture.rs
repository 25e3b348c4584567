//! Recording library GEMMs through our own executor ([`crate::exec::library`]) in the record
//! format of `scripts/torch-lib.py record` (a [`GemmRecord`] per line), so that a record from
//! our executor and one from PyTorch compare line by line: same generator seed, shape, β or
//! bias, the configuration cuBLASLt logged, D's bits at the same indices.
//!
//! The GEMM of a job is regenerated from its seed as torch-lib.py makes it: A (m×k) is operand
//! 0; `torch.mm`/`addmm` take B (k×n) as operand 1 and C (m×n) as operand 2; `F.linear` takes
//! the weight (n×k, `"layout": "bt"`) as operand 1 and the bias as operand 2's first n
//! elements; `_scaled_mm` takes B column-major (n×k, `"layout": "bt"`) as operand 1.

use super::libgen::{self, Operand};
use super::record::GemmRecord;
use crate::exec::library::{LibraryGemm, LibraryPath, LibraryRun};
use rand::SeedableRng;

/// What is added to A·B: nothing (`torch.mm`, β = 0), C (`torch.addmm`, β = 1), or a bias
/// row (`F.linear`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addend {
    Beta0,
    Beta1,
    Bias,
}

impl std::str::FromStr for Addend {
    type Err = String;
    fn from_str(s: &str) -> Result<Addend, String> {
        match s {
            "0" => Ok(Addend::Beta0),
            "1" => Ok(Addend::Beta1),
            "bias" => Ok(Addend::Bias),
            _ => Err(format!("'{s}' is not 0 (torch.mm), 1 (torch.addmm) or bias (F.linear)")),
        }
    }
}

/// One GEMM to record.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmJob {
    pub path: String,
    /// The generator seed of its operands.
    pub seed: u64,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub addend: Addend,
    /// The row-major indices of D to record; `None`: all of D.
    pub idx: Option<Vec<u64>>,
}

/// Elements of D recorded: all up to this many, else [`SAMPLED`] of them (torch-lib.py's rule).
pub const WHOLE_D_UP_TO: usize = 4096;
pub const SAMPLED: usize = 1024;

/// The indices a job records: `None` (all of D) for m·n ≤ 4096, else 1,024 distinct indices,
/// sorted, drawn from the job's seed.
pub fn sample_indices(seed: u64, m: usize, n: usize) -> Option<Vec<u64>> {
    if m * n <= WHOLE_D_UP_TO {
        return None;
    }
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut idx: Vec<u64> = rand::seq::index::sample(&mut rng, m * n, SAMPLED).into_iter().map(|i| i as u64).collect();
    idx.sort_unstable();
    Some(idx)
}

/// `MxNxK,MxNxK,...`.
pub fn parse_shapes(text: &str) -> Result<Vec<(usize, usize, usize)>, String> {
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            let dims: Vec<usize> = s.trim().split('x').map(|d| d.parse::<usize>().ok().filter(|&v| v > 0)).collect::<Option<_>>().ok_or_else(|| format!("'{s}' is not MxNxK (positive integers)"))?;
            match dims[..] {
                [m, n, k] => Ok((m, n, k)),
                _ => Err(format!("'{s}' is not MxNxK")),
            }
        })
        .collect()
}

/// Jobs for a list of shapes on one path, all with one addend: GEMM i gets seed
/// `seed·100000 + i` (torch-lib.py's numbering of a path's jobs).
pub fn jobs_for_shapes(path: &str, seed: u64, shapes: &[(usize, usize, usize)], addend: Addend) -> Vec<GemmJob> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, &(m, n, k))| {
            let s = seed * 100_000 + i as u64;
            GemmJob { path: path.to_string(), seed: s, m, n, k, addend, idx: sample_indices(s, m, n) }
        })
        .collect()
}

/// One entry of torch-lib.py's `--shapes` JSON: `{"path", "m", "n", "k", "beta"}`, optionally
/// `"bias": 1` (F.linear), `"seed"` and `"idx"`.
#[derive(serde::Deserialize, serde::Serialize)]
struct ShapeEntry {
    path: String,
    m: usize,
    n: usize,
    k: usize,
    #[serde(default)]
    beta: u8,
    #[serde(default)]
    bias: u8,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    idx: Option<Vec<u64>>,
}

/// Jobs from torch-lib.py's `--shapes` JSON (a list of entries); seeds where an entry has none
/// are `seed·100000 + i`, i counting that path's entries.
pub fn jobs_from_json(text: &str, seed: u64) -> Result<Vec<GemmJob>, String> {
    let entries: Vec<ShapeEntry> = serde_json::from_str(text).map_err(|e| format!("not a list of {{\"path\",\"m\",\"n\",\"k\",\"beta\"}} entries: {e}"))?;
    let mut count: std::collections::BTreeMap<String, u64> = Default::default();
    entries
        .into_iter()
        .map(|e| {
            let i = count.entry(e.path.clone()).or_default();
            let s = e.seed.unwrap_or(seed * 100_000 + *i);
            *i += 1;
            let addend = match (e.beta, e.bias) {
                (0, 0) => Addend::Beta0,
                (1, 0) => Addend::Beta1,
                (0, 1) => Addend::Bias,
                (b, bias) => return Err(format!("{} {}x{}x{}: beta {b} with bias {bias}", e.path, e.m, e.n, e.k)),
            };
            if e.m == 0 || e.n == 0 || e.k == 0 {
                return Err(format!("{} {}x{}x{}: a zero dimension", e.path, e.m, e.n, e.k));
            }
            if let Some(bad) = e.idx.as_ref().and_then(|v| v.iter().find(|&&x| x as usize >= e.m * e.n)) {
                return Err(format!("{} {}x{}x{}: index {bad} outside D", e.path, e.m, e.n, e.k));
            }
            let idx = match e.idx {
                Some(v) => Some(v),
                None => sample_indices(s, e.m, e.n),
            };
            Ok(GemmJob { path: e.path, seed: s, m: e.m, n: e.n, k: e.k, addend, idx })
        })
        .collect()
}

/// The jobs in torch-lib.py's `--shapes` JSON form, seeds and indices included, so that
/// `python3 scripts/torch-lib.py record OUT SEED 0 0 --shapes FILE` records the same GEMMs.
pub fn jobs_to_json(jobs: &[GemmJob]) -> String {
    let entries: Vec<ShapeEntry> = jobs
        .iter()
        .map(|j| ShapeEntry { path: j.path.clone(), m: j.m, n: j.n, k: j.k, beta: (j.addend == Addend::Beta1) as u8, bias: (j.addend == Addend::Bias) as u8, seed: Some(j.seed), idx: j.idx.clone() })
        .collect();
    serde_json::to_string(&entries).expect("plain data serialises")
}

/// Why a job cannot run on its path (before any GPU is touched).
pub fn check_job(job: &GemmJob, path: &LibraryPath) -> Result<(), String> {
    let what = format!("{} {}x{}x{}", job.path, job.m, job.n, job.k);
    let scaled = path.b_column_major();
    if job.addend == Addend::Bias && !path.takes_bias() {
        return Err(format!("{what}: no bias on this path (F.linear keeps D in the inputs' format)"));
    }
    if scaled && job.addend != Addend::Beta0 {
        return Err(format!("{what}: torch._scaled_mm records β = 0 only"));
    }
    if scaled && (job.k % 16 != 0 || job.n % 16 != 0) {
        return Err(format!("{what}: torch._scaled_mm needs K and N multiples of 16"));
    }
    Ok(())
}

/// The job's operands, regenerated as torch-lib.py makes them (module docs).
pub fn operands(job: &GemmJob, path: &LibraryPath) -> LibraryGemm {
    let (m, n, k, s) = (job.m, job.n, job.k, job.seed);
    let a = libgen::elements(path.a_fmt, s, Operand::A, m * k);
    let b_transposed = job.addend == Addend::Bias || path.b_column_major();
    let b = libgen::elements(path.b_fmt, s, Operand::B, k * n);
    let c = (job.addend == Addend::Beta1).then(|| libgen::elements(path.d_fmt, s, Operand::C, m * n));
    let bias = (job.addend == Addend::Bias).then(|| libgen::elements(path.d_fmt, s, Operand::C, n));
    LibraryGemm { m, n, k, a, b, b_transposed, c, bias }
}

/// Where a record comes from.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    pub gpu: String,
    pub driver: String,
    pub cublas: String,
    pub executor: String,
}

/// The record line of a job that ran: D at the job's indices, the logged configuration.
pub fn record(job: &GemmJob, path: &LibraryPath, run: &LibraryRun, provenance: &Provenance) -> GemmRecord {
    let d: Vec<String> = match &job.idx {
        Some(idx) => idx.iter().map(|&i| crate::case::hex(run.d[i as usize], path.d_fmt)).collect(),
        None => run.d.iter().map(|&x| crate::case::hex(x, path.d_fmt)).collect(),
    };
    GemmRecord {
        path: job.path.clone(),
        gpu: provenance.gpu.clone(),
        driver: provenance.driver.clone(),
        torch: String::new(),
        cublas: provenance.cublas.clone(),
        executor: Some(provenance.executor.clone()),
        seed: job.seed,
        m: job.m,
        n: job.n,
        k: job.k,
        beta: (job.addend == Addend::Beta1) as u8,
        bias: (job.addend == Addend::Bias) as u8,
        layout: (job.addend == Addend::Bias || path.b_column_major()).then(|| "bt".to_string()),
        config: run.config(),
        values: None,
        idx: job.idx.clone(),
        d,
        d_steps: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::library::library_path;

    #[test]
    fn shapes_parse_and_refuse_clearly() {
        assert_eq!(parse_shapes("64x64x4096, 1x300x257").unwrap(), vec![(64, 64, 4096), (1, 300, 257)]);
        assert!(parse_shapes("64x64").unwrap_err().contains("MxNxK"));
        assert!(parse_shapes("0x4x4").is_err());
        assert!("2".parse::<Addend>().unwrap_err().contains("F.linear"));
    }

    #[test]
    fn jobs_number_seeds_and_sample_large_d() {
        let jobs = jobs_for_shapes("cublas.gemm.f16.f16.f16.f16", 7, &[(8, 8, 8), (128, 128, 64)], Addend::Bias);
        assert_eq!((jobs[0].seed, jobs[1].seed), (700_000, 700_001));
        assert!(jobs[0].idx.is_none());
        let idx = jobs[1].idx.as_ref().unwrap();
        assert_eq!(idx.len(), SAMPLED);
        assert!(idx.windows(2).all(|w| w[0] < w[1]) && idx[SAMPLED - 1] < 128 * 128);
        // The same jobs back from torch-lib.py's --shapes form.
        assert_eq!(jobs_from_json(&jobs_to_json(&jobs), 99).unwrap(), jobs);
    }

    #[test]
    fn torch_lib_shapes_json_reads() {
        let j = jobs_from_json(r#"[{"path":"cublas.gemm.f32.f32.f32.f32","m":3,"n":5,"k":7,"beta":1},{"path":"cublas.gemm.f32.f32.f32.f32","m":3,"n":5,"k":7,"beta":0,"bias":1}]"#, 2).unwrap();
        assert_eq!((j[0].seed, j[0].addend, j[1].seed, j[1].addend), (200_000, Addend::Beta1, 200_001, Addend::Bias));
        assert!(jobs_from_json(r#"[{"path":"p","m":3,"n":5,"k":7,"beta":1,"bias":1}]"#, 2).is_err());
    }

    #[test]
    fn operands_follow_torch_lib() {
        let p = library_path("cublas.gemm.f16.f16.f16.f16").unwrap();
        let job = GemmJob { path: p.id.into(), seed: 3, m: 2, n: 3, k: 4, addend: Addend::Bias, idx: None };
        let g = operands(&job, p);
        // F.linear: the weight is n×k (operand 1 in that order), the bias operand 2's first n.
        assert!(g.b_transposed);
        assert_eq!(g.b, libgen::elements(crate::Format::F16, 3, Operand::B, 12));
        assert_eq!(g.bias.as_deref(), Some(&libgen::elements(crate::Format::F16, 3, Operand::C, 3)[..]));
        assert!(g.c.is_none());
        let f8 = library_path("cublaslt.matmul.f32.e4m3.e4m3.f32").unwrap();
        assert!(check_job(&GemmJob { path: f8.id.into(), seed: 1, m: 16, n: 24, k: 32, addend: Addend::Beta0, idx: None }, f8).is_err());
        assert!(check_job(&GemmJob { path: f8.id.into(), seed: 1, m: 3, n: 32, k: 32, addend: Addend::Beta0, idx: None }, f8).is_ok());
    }

    #[test]
    fn a_record_line_reads_back_as_a_gemm_record() {
        let p = library_path("cublas.gemm.f32.f16.f16.f32").unwrap();
        let job = GemmJob { path: p.id.into(), seed: 5, m: 1, n: 2, k: 3, addend: Addend::Beta1, idx: None };
        let run = LibraryRun { d: vec![0x3f80_0000, 0xc000_0000], trace: None, log: vec![] };
        let rec = record(&job, p, &run, &Provenance { gpu: "NVIDIA H100 80GB HBM3".into(), driver: "580.159.04".into(), cublas: "13.1.0".into(), executor: "mmafuzz 0.1.0".into() });
        let line = serde_json::to_string(&rec).unwrap();
        assert!(line.starts_with(r#"{"path":"cublas.gemm.f32.f16.f16.f32","gpu":"NVIDIA H100 80GB HBM3","driver":"580.159.04""#), "{line}");
        assert!(line.contains(r#""seed":5,"m":1,"n":2,"k":3,"beta":1,"#) && line.ends_with(r#""d":["3f800000","c0000000"]}"#), "{line}");
        let back = GemmRecord::parse(&line).unwrap();
        assert_eq!((back.executor.as_deref(), back.config, back.d.len()), (Some("mmafuzz 0.1.0"), None, 2));
    }
}
