//! Bring your own trace, end to end: `mmafuzz library trace --out TABLES -- python3
//! scripts/example-model.py GEMMS.npz` on an H200 (driver 580.159.04, torch 2.11.0+cu130) wrote
//! kernel tables for a small MLP's 44 GEMMs (bf16, f16, TF32, f32; F.linear with and without a
//! bias, torch.mm, torch.addmm) and saved each GEMM's operands and torch's result. Under those
//! tables every GEMM emulates to torch's bits, through the library and through `mmafuzz gemm`.

use mmafuzz::library::gemm::{transpose, Gemm, LibraryEmulator};
use mmafuzz::library::npy;
use mmafuzz::library::{LibraryModel, TorchOp};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

const DIR: &str = "corpus/library/traces/example-model";

/// A `.npy` array: shape and little-endian element bits.
struct Array {
    shape: Vec<usize>,
    bits: Vec<u64>,
    /// The data as stored (for a unicode array: UTF-32LE).
    data: Vec<u8>,
}

fn parse_npy(bytes: &[u8]) -> Array {
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let (len, start) = if bytes[6] == 1 { (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10) } else { (u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize, 12) };
    let header = std::str::from_utf8(&bytes[start..start + len]).unwrap();
    let descr = header.split("'descr':").nth(1).unwrap().split('\'').nth(1).unwrap();
    assert!(header.contains("'fortran_order': False"), "{header}");
    let data = bytes[start + len..].to_vec();
    if descr.starts_with("<U") {
        return Array { shape: vec![], bits: vec![], data };
    }
    let width: usize = descr[2..].parse().unwrap();
    let shape: Vec<usize> = header.split("'shape': (").nth(1).unwrap().split(')').next().unwrap().split(',').filter_map(|s| s.trim().parse().ok()).collect();
    let bits = data.chunks_exact(width).map(|c| c.iter().rev().fold(0u64, |a, &b| (a << 8) | b as u64)).collect();
    Array { shape, bits, data }
}

fn arrays() -> (Vec<serde_json::Value>, HashMap<String, Array>) {
    let file = std::fs::File::open(Path::new(DIR).join("gemms.npz")).unwrap();
    let mut zip = zip::ZipArchive::new(file).unwrap();
    let mut out = HashMap::new();
    let mut calls = vec![];
    for i in 0..zip.len() {
        let mut member = zip.by_index(i).unwrap();
        let name = member.name().trim_end_matches(".npy").to_string();
        let mut bytes = vec![];
        member.read_to_end(&mut bytes).unwrap();
        if name == "calls" {
            // A 0-d unicode array: UTF-32LE code points after the header.
            let a = parse_npy(&bytes);
            let text: String = a.data.chunks_exact(4).filter_map(|c| char::from_u32(u32::from_le_bytes(c.try_into().unwrap()))).filter(|&c| c != '\0').collect();
            calls = serde_json::from_str::<Vec<serde_json::Value>>(&text).unwrap();
        } else {
            out.insert(name, parse_npy(&bytes));
        }
    }
    (calls, out)
}

fn path_of(dtype: &str) -> &'static str {
    match dtype {
        "bf16" => "cublas.gemm.bf16.bf16.bf16.bf16",
        "f16" => "cublas.gemm.f16.f16.f16.f16",
        "tf32" => "cublas.gemm.f32.tf32.tf32.f32",
        "f32" => "cublas.gemm.f32.f32.f32.f32",
        other => panic!("{other}"),
    }
}

/// One saved GEMM as the library sees it: the call, m×n×k, A, B (k×n), C, bias, torch's D.
struct Saved {
    op: TorchOp,
    dtype: String,
    shape: (usize, usize, usize),
    gemm: Gemm,
    y: Vec<u64>,
    /// The weight as F.linear takes it (n×k) for the CLI.
    weight: Option<Vec<u64>>,
}

fn saved() -> Vec<Saved> {
    let (calls, a) = arrays();
    assert_eq!(calls.len(), 44);
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let key = |name: &str| c["operands"][name].as_str().map(|k| &a[k]);
            let y = &a[&format!("{i}.y")];
            let (op, m, n, k, am, bm, weight) = match c["op"].as_str().unwrap() {
                "linear" => {
                    let (x, w) = (key("x").unwrap(), key("w").unwrap());
                    let (n, k) = (w.shape[0], w.shape[1]);
                    let m = x.bits.len() / k;
                    let op = if key("bias").is_some() { TorchOp::LinearBias } else { TorchOp::Linear };
                    (op, m, n, k, x.bits.clone(), transpose(&w.bits, n, k), Some(w.bits.clone()))
                }
                other => {
                    let (x, b) = (key("a").unwrap(), key("b").unwrap());
                    let op = if other == "mm" { TorchOp::Mm } else { TorchOp::Addmm };
                    (op, x.shape[0], b.shape[1], x.shape[1], x.bits.clone(), b.bits.clone(), None)
                }
            };
            let gemm = Gemm { m, n, k, a: am, b: bm, c: key("c").map(|c| c.bits.clone()), bias: key("bias").map(|b| b.bits.clone()) }.as_torch_linear();
            Saved { op, dtype: c["dtype"].as_str().unwrap().to_string(), shape: (m, n, k), gemm, y: y.bits.clone(), weight }
        })
        .collect()
}

#[test]
fn every_gemm_of_the_traced_program_emulates_to_torchs_bits() {
    let mut models: HashMap<String, LibraryModel> = HashMap::new();
    let mut kinds: HashMap<TorchOp, usize> = HashMap::new();
    for (i, s) in saved().iter().enumerate() {
        let path = path_of(&s.dtype);
        let lm = models.entry(path.to_string()).or_insert_with(|| {
            let table = PathBuf::from(DIR).join(format!("{path}.configs.tsv.xz"));
            let lm = LibraryModel::load(&format!("h200:{path}"), Some(&table)).unwrap();
            assert_eq!(lm.gpu_mismatch(Some("h200")), None, "the table was traced on an H200");
            lm
        });
        let emu = LibraryEmulator::new(lm);
        let (config, _) = emu.choose(s.shape, s.op).unwrap_or_else(|e| panic!("GEMM {i}: {e}"));
        let plan = emu.plan_op(&s.gemm, config, s.op).unwrap();
        let d = emu.run(&s.gemm, &plan, &|_| ()).unwrap();
        let differ = d.iter().zip(&s.y).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "GEMM {i} ({} {} {:?}, {config}): {differ} of {} elements differ", s.op, s.dtype, s.shape, d.len());
        *kinds.entry(s.op).or_default() += 1;
    }
    assert_eq!(kinds.len(), 4, "{kinds:?}");
}

#[test]
fn the_cli_gives_the_same_bits_from_the_traced_table() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_mmafuzz");
    let all = saved();
    // The prefill block of each precision (F.linear with and without a bias) and torch.addmm.
    let picked: Vec<&Saved> = all.iter().filter(|s| s.shape.0 == 18 || s.op == TorchOp::Addmm).collect();
    assert_eq!(picked.len(), 16);
    for (i, s) in picked.iter().enumerate() {
        let (m, n, k) = s.shape;
        let path = path_of(&s.dtype);
        let model = format!("h200:{path}");
        let r = LibraryModel::load(&model, None).unwrap().rules;
        let p = |name: &str| dir.path().join(format!("{i}.{name}.npy"));
        npy::write(&p("a"), r.inputs, &[m, k], &s.gemm.a).unwrap();
        let mut cmd = std::process::Command::new(bin);
        cmd.args(["gemm", "--model", &model, "--gpu", "h200"]);
        cmd.arg("--table").arg(PathBuf::from(DIR).join(format!("{path}.configs.tsv.xz")));
        cmd.arg("--a").arg(p("a")).arg("--out").arg(p("d"));
        match s.op {
            TorchOp::Addmm => {
                npy::write(&p("b"), r.b_inputs(), &[k, n], &s.gemm.b).unwrap();
                npy::write(&p("c"), r.output, &[m, n], s.gemm.c.as_ref().unwrap()).unwrap();
                cmd.arg("--b").arg(p("b")).arg("--c").arg(p("c")).args(["--op", "addmm"]);
            }
            _ => {
                npy::write(&p("w"), r.b_inputs(), &[n, k], s.weight.as_ref().unwrap()).unwrap();
                cmd.arg("--b").arg(p("w")).args(["--op", "linear"]);
                if let Some(bias) = &s.gemm.bias {
                    npy::write(&p("bias"), r.output, &[n], bias).unwrap();
                    cmd.arg("--bias").arg(p("bias"));
                }
            }
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let d = npy::read(&p("d"), r.output).unwrap();
        assert_eq!(d.shape, vec![m, n]);
        assert_eq!(d.bits, s.y, "{} {} {:?} through the CLI", s.op, s.dtype, s.shape);
    }
}
