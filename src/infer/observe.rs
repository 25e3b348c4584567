//! Observations: single elements of D that the GPU computed, each as a 1×1×k case with the
//! recorded output. Elements are independent (d_ij reads row i of A, column j of B and c_ij),
//! so every recorded tile gives m·n of them, and every GPU finding its minimised element.

use crate::case::MmaCase;
use crate::format::Class;
use crate::hunt::finding::read_all;
use crate::hunt::probe::{Probe, Simplicity};
use std::collections::HashSet;
use std::path::Path;

/// One element the GPU computed.
#[derive(Clone, Debug)]
pub struct Observation {
    /// A 1×1×k case.
    pub case: MmaCase,
    /// What the GPU wrote.
    pub d: u64,
    /// Where it comes from: `file:line element (i, j)` or `finding ID`.
    pub origin: String,
    /// Finite, normal inputs and a finite, normal, nonzero output: decided by the core
    /// arithmetic alone (no special-value or subnormal knob can change it).
    pub plain: bool,
    pub simplicity: Simplicity,
}

impl Observation {
    pub fn new(case: MmaCase, d: u64, origin: String) -> Observation {
        let plain = plain_element(&case, 0, 0, d);
        let simplicity = Probe::from_tile(&case, 0, 0).simplicity();
        Observation { simplicity, case, d, origin, plain }
    }

    /// The element in words.
    pub fn describe(&self) -> String {
        Probe::from_tile(&self.case, 0, 0).describe()
    }
}

/// Whether element (i, j) of `tile`, with output `d`, is plain: normal or zero inputs, a
/// normal nonzero output.
pub fn plain_element(tile: &MmaCase, i: usize, j: usize, d: u64) -> bool {
    if let Some(row) = tile.dense_row(i) {
        return plain_element(&row, 0, j, d);
    }
    let normal = |f: crate::Format, x: u64| {
        let v = f.decode(x);
        v.class == Class::Zero || (v.class == Class::Finite && v.sig >> (f.precision() - 1) == 1)
    };
    (0..tile.k).all(|kk| normal(tile.a_fmt, tile.a_at(i, kk)) && normal(tile.b_fmt, tile.b_at(kk, j)))
        && normal(tile.c_fmt, tile.c_at(i, j))
        && tile.d_fmt.decode(d).class == Class::Finite
        && normal(tile.d_fmt, d)
}

/// Element (i, j) of a tile as a 1×1×k case (with its block scales, where the tile has them).
pub fn element_case(tile: &MmaCase, i: usize, j: usize) -> MmaCase {
    if let Some(row) = tile.dense_row(i) {
        return element_case(&row, 0, j);
    }
    let mut c = MmaCase::zeros(tile.a_fmt, tile.c_fmt, 1, 1, tile.k);
    c.b_fmt = tile.b_fmt;
    c.d_fmt = tile.d_fmt;
    for kk in 0..tile.k {
        c.a[kk] = tile.a_at(i, kk);
        c.b[kk] = tile.b_at(kk, j);
    }
    c.c[0] = tile.c_at(i, j);
    // A block-scaled tile's element keeps the scales of its row of A and its column of B.
    c.scales = tile.scales.as_ref().map(|s| s.of_element(i, j, tile.k, tile.n));
    c
}

/// What was read, and what could not be.
pub struct Observations {
    /// Distinct observations, simplest first (minimised findings lead).
    pub all: Vec<Observation>,
    pub tiles: usize,
    pub findings: usize,
    pub problems: Vec<String>,
    /// The corpus tiles whole, with their recorded D: a model is checked against all of them
    /// tile by tile (the emulator's fast path), far quicker than element by element.
    pub recorded: Vec<(MmaCase, Vec<u64>)>,
    /// The findings' elements (not in any recorded tile).
    pub from_findings: Vec<Observation>,
}

/// Every GPU-computed element of a path: the corpus file's tiles (at most `max_tiles`) and the
/// GPU side of every finding under `findings/<path>/`.
pub fn observe(path: &str, corpus: &Path, findings: &Path, max_tiles: Option<usize>) -> std::io::Result<Observations> {
    let mut out = Observations { all: Vec::new(), tiles: 0, findings: 0, problems: Vec::new(), recorded: Vec::new(), from_findings: Vec::new() };
    let mut seen = HashSet::new();
    let mut push = |out: &mut Observations, case: MmaCase, d: u64, origin: String| {
        if seen.insert((case.a.clone(), case.b.clone(), case.c[0])) {
            out.all.push(Observation::new(case, d, origin));
        }
    };
    let (found, bad) = read_all(&findings.join(path));
    out.problems.extend(bad);
    for (file, f) in found {
        let gpu = if f.a.side == "gpu" { &f.a } else if f.b.side == "gpu" { &f.b } else { continue };
        let Ok(tile) = MmaCase::from_json(f.minimised.as_object().cloned().unwrap_or_default()) else {
            out.problems.push(format!("{}: minimised case does not parse", file.display()));
            continue;
        };
        let Ok(d) = u64::from_str_radix(&gpu.bits, 16) else { continue };
        let [i, j] = f.minimised_element;
        out.findings += 1;
        let case = element_case(&tile, i, j);
        out.from_findings.push(Observation::new(case.clone(), d, format!("finding {}", f.id)));
        push(&mut out, case, d, format!("finding {}", f.id));
    }
    let file = crate::store::jsonl_file(corpus, &path);
    if file.exists() {
        let (cases, bad) = crate::replay::read_corpus(&file)?;
        out.problems.extend(bad);
        let cases: Vec<(MmaCase, Vec<u64>)> = cases.into_iter().take(max_tiles.unwrap_or(usize::MAX)).collect();
        for (line, (tile, d)) in cases.iter().enumerate() {
            out.tiles += 1;
            for i in 0..tile.m {
                for j in 0..tile.n {
                    push(&mut out, element_case(tile, i, j), d[i * tile.n + j], format!("{} case {} element ({i}, {j})", file.display(), line + 1));
                }
            }
        }
        out.recorded = cases;
    }
    out.all.sort_by_key(|o| o.simplicity);
    Ok(out)
}
