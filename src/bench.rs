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
    pub c_fmt: Format,
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

pub const SHAPES: &[Shape] = &[
    Shape { name: "m16n8k16 f16->f32", a_fmt: Format::F16, c_fmt: Format::F32, m: 16, n: 8, k: 16 },
    Shape { name: "m16n8k16 f16->f16", a_fmt: Format::F16, c_fmt: Format::F16, m: 16, n: 8, k: 16 },
    Shape { name: "m16n8k16 bf16->f32", a_fmt: Format::Bf16, c_fmt: Format::F32, m: 16, n: 8, k: 16 },
    Shape { name: "m16n8k8 tf32->f32", a_fmt: Format::Tf32, c_fmt: Format::F32, m: 16, n: 8, k: 8 },
    Shape { name: "m16n8k32 e4m3->f32", a_fmt: Format::E4m3, c_fmt: Format::F32, m: 16, n: 8, k: 32 },
    Shape { name: "m16n8k32 e5m2->f32", a_fmt: Format::E5m2, c_fmt: Format::F32, m: 16, n: 8, k: 32 },
    Shape { name: "m8n8k4 f64->f64", a_fmt: Format::F64, c_fmt: Format::F64, m: 8, n: 8, k: 4 },
];

/// One row of the benchmark table.
#[derive(Clone, Debug)]
pub struct Row {
    pub shape: &'static str,
    pub model: String,
    pub emulator_terms_per_s: f64,
    pub reference_terms_per_s: f64,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        self.emulator_terms_per_s / self.reference_terms_per_s
    }
}

/// Run `work` over `cases` round-robin for at least `budget`; returns terms per second.
fn rate(cases: &[MmaCase], budget: Duration, mut work: impl FnMut(&MmaCase)) -> f64 {
    let terms_per_case = (cases[0].m * cases[0].n * cases[0].k) as f64;
    let start = Instant::now();
    let mut done = 0usize;
    while start.elapsed() < budget || done < cases.len() {
        work(&cases[done % cases.len()]);
        done += 1;
    }
    done as f64 * terms_per_case / start.elapsed().as_secs_f64()
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
            let mut c = case_with(&mut rng, (shape.a_fmt, shape.a_fmt), shape.c_fmt, shape.m, shape.n, shape.k, recipe);
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

/// Measure one shape under one model: the emulator, then MPFR exact values with their RNE
/// rounding, on the same 256 generated finite tiles, each for about `budget`.
pub fn measure(shape: &Shape, model: &Model, budget: Duration) -> Row {
    let cases = finite_tiles(shape, 256);
    let emu = Emulator::new(model.clone());
    let mut sink = 0u64;
    let emulator_terms_per_s = rate(&cases, budget, |c| {
        sink ^= emu.run(c).expect("generated cases are valid")[0];
    });
    let reference_terms_per_s = rate(&cases, budget, |c| {
        for x in crate::exact::exact_tile(c) {
            for r in Rounding::MPFR {
                sink ^= x.round(c.c_fmt, r);
            }
        }
    });
    std::hint::black_box(sink);
    Row { shape: shape.name, model: model.name.clone(), emulator_terms_per_s, reference_terms_per_s }
}

/// The table as text.
pub fn table(rows: &[Row]) -> String {
    let mut s = format!(
        "{:<20} {:<14} {:>16} {:>16} {:>8}\n",
        "shape", "model", "emulator term/s", "MPFR term/s", "ratio"
    );
    for r in rows {
        s += &format!(
            "{:<20} {:<14} {:>16.3e} {:>16.3e} {:>7.1}x\n",
            r.shape,
            r.model,
            r.emulator_terms_per_s,
            r.reference_terms_per_s,
            r.ratio()
        );
    }
    s
}
