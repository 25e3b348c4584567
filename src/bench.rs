//! Throughput of the emulator against the MPFR reference on the same edge-biased tiles, per
//! instruction shape, in fused dot-product terms (one a·b joining a sum) per second on one core.

use crate::case::MmaCase;
use crate::format::{Format, Rounding};
use crate::model::{Emulator, Model};
use rand::SeedableRng;
use std::time::{Duration, Instant};

/// A tile shape and its formats, named like the PTX instruction that has it.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub name: &'static str,
    pub a_fmt: Format,
    pub b_fmt: Format,
    pub c_fmt: Format,
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

pub const SHAPES: &[Shape] = &[
    Shape { name: "m16n8k16 f16->f32", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F32, m: 16, n: 8, k: 16 },
    Shape { name: "m16n8k16 f16->f16", a_fmt: Format::F16, b_fmt: Format::F16, c_fmt: Format::F16, m: 16, n: 8, k: 16 },
    Shape { name: "m16n8k16 bf16->f32", a_fmt: Format::Bf16, b_fmt: Format::Bf16, c_fmt: Format::F32, m: 16, n: 8, k: 16 },
    Shape { name: "m16n8k8 tf32->f32", a_fmt: Format::Tf32, b_fmt: Format::Tf32, c_fmt: Format::F32, m: 16, n: 8, k: 8 },
    Shape { name: "m16n8k32 e4m3->f32", a_fmt: Format::E4m3, b_fmt: Format::E4m3, c_fmt: Format::F32, m: 16, n: 8, k: 32 },
    Shape { name: "m16n8k32 e5m2->f32", a_fmt: Format::E5m2, b_fmt: Format::E5m2, c_fmt: Format::F32, m: 16, n: 8, k: 32 },
    Shape { name: "m8n8k4 f64->f64", a_fmt: Format::F64, b_fmt: Format::F64, c_fmt: Format::F64, m: 8, n: 8, k: 4 },
];

/// One row of the benchmark table.
#[derive(Clone, Debug)]
pub struct Row {
    pub shape: &'static str,
    pub model: String,
    pub emulator_terms_per_s: f64,
    pub reference_terms_per_s: f64,
    /// The emulator on the hunt's own generated tiles of the path (NaN, infinities, zeros,
    /// subnormals and all), where measured.
    pub hunt_terms_per_s: Option<f64>,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        self.emulator_terms_per_s / self.reference_terms_per_s
    }
}

/// Tiles of finite values only: a NaN or infinity ends a dot product early on both sides, and
/// would count terms that no adder ever saw.
pub fn finite_tiles(shape: &Shape, count: usize) -> Vec<MmaCase> {
    use crate::gen::{case_with, Recipe};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(0x5eed);
    let acc_p = if shape.c_fmt == Format::F64 { 53 } else { 24 };
    (0..count)
        .map(|i| {
            let recipe = match i % 3 {
                0 => Recipe::Band,
                1 => Recipe::BigPlusTiny { gap: acc_p + (i % 17) as i32 - 8 },
                _ => Recipe::Cancellation,
            };
            let mut c = case_with(&mut rng, (shape.a_fmt, shape.b_fmt), shape.c_fmt, shape.m, shape.n, shape.k, recipe);
            // Cancellation draws C from every class; keep it finite here.
            for x in c.c.iter_mut() {
                if matches!(c.c_fmt.decode(*x).class, crate::format::Class::Nan | crate::format::Class::Inf) {
                    *x = c.c_fmt.zero_bits(false);
                }
            }
            c
        })
        .collect()
}

/// Measure one shape under one model: the emulator, then MPFR (exact values and their rounding
/// in every direction), on the same 256 generated finite tiles, each for about `budget`.
pub fn measure(shape: &Shape, model: &Model, budget: Duration) -> Row {
    let cases = finite_tiles(shape, 256);
    let mut row = compare(&cases, (shape.m * shape.n * shape.k) as f64, model, budget);
    row.shape = shape.name;
    row
}

/// The table as text (a column for the hunt's tiles when any row has it).
pub fn table(rows: &[Row]) -> String {
    let w = rows.iter().map(|r| r.shape.len()).max().unwrap_or(0).max(20);
    let mw = rows.iter().map(|r| r.model.len()).max().unwrap_or(0).max(14);
    let hunt = rows.iter().any(|r| r.hunt_terms_per_s.is_some());
    let mut s = format!("{:<w$} {:<mw$} {:>16} {:>16} {:>8}", "shape", "model", "emulator term/s", "MPFR term/s", "ratio");
    if hunt {
        s += &format!(" {:>18}", "hunt tiles term/s");
    }
    s += "\n";
    for r in rows {
        s += &format!("{:<w$} {:<mw$} {:>16.3e} {:>16.3e} {:>7.1}x", r.shape, r.model, r.emulator_terms_per_s, r.reference_terms_per_s, r.ratio());
        if let Some(h) = r.hunt_terms_per_s {
            s += &format!(" {h:>18.3e}");
        }
        s += "\n";
    }
    s
}

/// Edge-biased tiles of one instruction path, as the hunt generates them (specials,
/// subnormals, cancellation, sums at the bottom of the range, every recipe), from a fixed seed.
pub fn path_tiles(path: &crate::exec::PathSpec, count: usize) -> Vec<MmaCase> {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(0x5eed);
    (0..count).map(|_| crate::gen::path_case(&mut rng, path)).collect()
}

/// Measure one instruction path under its model: the emulator against MPFR (exact values and
/// their rounding in every direction) on the same finite edge-biased tiles of the path's shape
/// and formats (as [`measure`] does for a shape), then the emulator alone on the hunt's own
/// generated tiles of the path. Terms are m·n times the products each element sums (k/2 on
/// sparse paths).
pub fn measure_path(path: &crate::exec::PathSpec, model: &Model, budget: Duration) -> Row {
    let shape = Shape { name: path.id, a_fmt: path.a_fmt, b_fmt: path.b_fmt, c_fmt: path.c_fmt, m: path.m, n: path.n, k: path.k };
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(0x5eed);
    let finite: Vec<MmaCase> = finite_tiles(&shape, 256)
        .into_iter()
        .map(|mut c| {
            if path.sparse() {
                c = crate::sparse::sparsify(&mut rng, &c, path.one_of_two());
            }
            path.conform(&mut c);
            c
        })
        .collect();
    let terms = (path.m * path.n * path.terms()) as f64;
    let mut row = compare(&finite, terms, model, budget);
    row.shape = path.id;
    let emu = Emulator::new(model.clone());
    let mut sink = 0u64;
    row.hunt_terms_per_s = Some(rate_tiles(&path_tiles(path, 256), terms, budget, |c| {
        sink ^= emu.run(c).expect("generated cases are valid")[0];
    }));
    std::hint::black_box(sink);
    row
}

/// The emulator under `model`, then MPFR, on the same cases, each for about `budget`.
fn compare(cases: &[MmaCase], terms: f64, model: &Model, budget: Duration) -> Row {
    let emu = Emulator::new(model.clone());
    let mut sink = 0u64;
    let emulator_terms_per_s = rate_tiles(cases, terms, budget, |c| {
        sink ^= emu.run(c).expect("generated cases are valid")[0];
    });
    let reference_terms_per_s = rate_tiles(cases, terms, budget, |c| {
        for x in crate::exact::exact_tile(c) {
            for r in Rounding::MPFR {
                sink ^= x.round(c.c_fmt, r);
            }
        }
    });
    std::hint::black_box(sink);
    Row { shape: "", model: model.name.clone(), emulator_terms_per_s, reference_terms_per_s, hunt_terms_per_s: None }
}

/// Run `work` over `cases` round-robin for at least `budget` (and every case once); returns
/// terms per second at `terms` per case.
fn rate_tiles(cases: &[MmaCase], terms: f64, budget: Duration, mut work: impl FnMut(&MmaCase)) -> f64 {
    let start = Instant::now();
    let mut done = 0usize;
    while start.elapsed() < budget || done < cases.len() {
        work(&cases[done % cases.len()]);
        done += 1;
    }
    done as f64 * terms / start.elapsed().as_secs_f64()
}
