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
/// observed side of every finding under `findings/<path>/`: the GPU's, or an external oracle's
/// (MMA-Sim standing where the GPU stands, its findings against a model in findings/mmasim/).
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
        let Some((gpu, _)) = f.side_named("gpu").or_else(|| f.side_named("external")) else { continue };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hunt::finding::{store, Finding, SideOutput};
    use crate::Format;

    /// A finding on element (0, 0) of a one-product tile, with these two sides.
    fn finding(id: &str, a_side: &str, b_side: &str, a_bits: &str) -> Finding {
        let mut tile = MmaCase::zeros(Format::F16, Format::F32, 16, 8, 16);
        tile.a[0] = 0x3c00;
        tile.b[0] = 0x4000;
        let side = |s: &str, bits: &str| SideOutput { side: s.into(), detail: String::new(), bits: bits.into(), value: String::new() };
        Finding {
            id: id.into(),
            path: "mma.m16n8k16.f32.f16.f16.f32".into(),
            class: String::new(),
            hunt_class: None,
            summary: String::new(),
            a: side(a_side, a_bits),
            b: side(b_side, "00000000"),
            exact: String::new(),
            exact_nearest: String::new(),
            explanation: String::new(),
            knob_changes: vec![],
            minimised: serde_json::Value::Object(tile.to_json()),
            minimised_element: [0, 0],
            original: serde_json::json!({}),
            original_element: [0, 0],
            rounds: 0,
            evaluated: 0,
            seen: 1,
            first_seen: "2026-11-27".into(),
            last_seen: "2026-11-27".into(),
        }
    }

    #[test]
    fn findings_count_the_gpu_or_an_external_oracle_never_a_model_against_a_model() {
        let dir = tempfile::tempdir().unwrap();
        let mut problems = vec![];
        // MMA-Sim (an external oracle) against our model: MMA-Sim's answer is the observation.
        store(dir.path(), finding("00000000000000e1", "external", "blackwell:x", "40000000"), &mut problems).unwrap();
        // The GPU on side B.
        let mut gpu = finding("00000000000000e2", "h100", "gpu", "00000000");
        gpu.b.bits = "40000001".into();
        store(dir.path(), gpu, &mut problems).unwrap();
        // Two models: nothing observed.
        store(dir.path(), finding("00000000000000e3", "h100", "exact-rne", "40000002"), &mut problems).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let o = observe("mma.m16n8k16.f32.f16.f16.f32", &dir.path().join("no-corpus"), dir.path(), None).unwrap();
        assert_eq!(o.findings, 2);
        let mut seen: Vec<u64> = o.from_findings.iter().map(|x| x.d).collect();
        seen.sort();
        assert_eq!(seen, vec![0x4000_0000, 0x4000_0001]);
    }
}
