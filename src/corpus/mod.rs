//! The corpus as a whole: statistics, promotion of GPU findings (in their minimised form),
//! duplicate removal, and minimisation to the tiles that keep every refutation. The line
//! format itself is [`codec`].

pub mod codec;
pub mod first_gen;

use crate::case::MmaCase;
use crate::format::Class;
use crate::hunt::finding::read_all;
use crate::model::{knobs, Emulator, Model};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// What one corpus file holds.
#[derive(Debug, Default)]
pub struct Stats {
    pub tiles: usize,
    pub distinct: usize,
    pub elements: usize,
    /// Recorded outputs by kind: nan, inf, zero, subnormal, normal.
    pub outputs: BTreeMap<&'static str, usize>,
    /// Tiles by generator recipe (or by where they came from: finding, discover).
    pub sources: BTreeMap<String, usize>,
    /// Tiles by GPU and driver.
    pub gpus: BTreeMap<String, usize>,
    pub bad_lines: Vec<String>,
}

fn key(c: &MmaCase) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    (c.a.clone(), c.b.clone(), c.c.clone())
}

pub fn stats(file: &Path) -> std::io::Result<Stats> {
    let (cases, bad) = crate::replay::read_corpus(file)?;
    let mut s = Stats { bad_lines: bad, ..Default::default() };
    let mut seen = HashSet::new();
    for (c, d) in &cases {
        s.tiles += 1;
        s.distinct += seen.insert(key(c)) as usize;
        for &x in d {
            let v = c.c_fmt.decode(x);
            let kind = match v.class {
                Class::Nan => "nan",
                Class::Inf => "inf",
                Class::Zero => "zero",
                Class::Finite if v.sig >> (c.c_fmt.precision() - 1) == 0 => "subnormal",
                Class::Finite => "normal",
            };
            *s.outputs.entry(kind).or_default() += 1;
            s.elements += 1;
        }
        let source = if let Some(r) = c.extra.get("recipe").and_then(|r| r.get("kind")).and_then(|k| k.as_str()) {
            format!("recipe {r}")
        } else if c.extra.contains_key("finding") {
            "finding".into()
        } else {
            "other".into()
        };
        *s.sources.entry(source).or_default() += 1;
        let p = c.extra.get("provenance");
        let gpu = format!("{} (driver {})", p.and_then(|p| p["gpu"].as_str()).unwrap_or("?"), p.and_then(|p| p["driver"].as_str()).unwrap_or("?"));
        *s.gpus.entry(gpu).or_default() += 1;
    }
    Ok(s)
}

/// The GPU findings of `path` under `findings`, as corpus lines (the minimised tile with the
/// GPU's D and provenance), skipping tiles already in `existing`. With `oracle` (what an
/// external oracle is: "MMA-Sim 2.1.1 Blackwell model, not hardware"), findings of that oracle
/// against a model are promoted instead, with provenance naming it (corpus/mmasim/ holds them);
/// the GPU's corpus never takes an oracle's answers unasked.
pub fn findings_as_lines(findings: &Path, path: &str, existing: &[(MmaCase, Vec<u64>)], oracle: Option<&str>) -> (Vec<String>, Vec<String>) {
    let have: HashSet<_> = existing.iter().map(|(c, _)| key(c)).collect();
    let (found, problems) = read_all(&findings.join(path));
    let mut lines = Vec::new();
    let mut added = HashSet::new();
    let observed = if oracle.is_some() { "external" } else { "gpu" };
    for (_, f) in found {
        let Some((gpu, d_key)) = f.side_named(observed) else { continue };
        let mut obj = f.minimised.as_object().cloned().unwrap_or_default();
        let d = obj.get(d_key).cloned();
        obj.shift_remove("d");
        obj.shift_remove("d_b");
        let Ok(mut case) = MmaCase::from_json(obj) else { continue };
        let Some(d) = d.and_then(|d| d.as_array().map(|a| a.iter().filter_map(|x| x.as_str().and_then(|s| u64::from_str_radix(s, 16).ok())).collect::<Vec<u64>>())) else { continue };
        if d.len() != case.m * case.n || have.contains(&key(&case)) || !added.insert(key(&case)) {
            continue;
        }
        case.extra.insert("finding".into(), f.id.clone().into());
        let provenance = match oracle {
            Some(label) => serde_json::json!({"oracle": label, "path": path, "date": f.first_seen, "tool": promoted_by()}),
            None => provenance_of(&gpu.detail, path, &f.first_seen),
        };
        case.extra.insert("provenance".into(), provenance);
        lines.push(codec::encode_line(&case, &d, None, false));
    }
    (lines, problems)
}

/// Provenance from a finding's GPU side description ("NAME xN (cc X.Y, driver D) running PATH").
fn provenance_of(detail: &str, path: &str, date: &str) -> serde_json::Value {
    let name = detail.split(" x").next().unwrap_or(detail).trim();
    let inside = detail.split_once('(').and_then(|(_, r)| r.split_once(')')).map(|(i, _)| i).unwrap_or("");
    let cc = inside.split(',').next().unwrap_or("").trim().trim_start_matches("cc ").to_string();
    let driver = inside.split("driver").nth(1).unwrap_or("").trim().to_string();
    serde_json::json!({"gpu": name, "cc": cc, "driver": driver, "path": path, "date": date, "tool": promoted_by()})
}

/// The provenance's `tool` of a promoted finding.
fn promoted_by() -> String {
    format!("mmafuzz {} (promoted finding)", env!("CARGO_PKG_VERSION"))
}

/// The same lines without repeated tiles (first kept); returns how many were dropped.
pub fn dedup(cases: &[(MmaCase, Vec<u64>)]) -> (Vec<usize>, usize) {
    let mut seen = HashSet::new();
    let keep: Vec<usize> = (0..cases.len()).filter(|&i| seen.insert(key(&cases[i].0))).collect();
    let dropped = cases.len() - keep.len();
    (keep, dropped)
}

/// The smallest set of tiles (greedy) that still refutes every single-knob alternative of
/// `model` that the whole corpus refutes, plus every tile the model itself gets wrong (those
/// are what the model must still learn). Returns tile indices, simplest-first order kept.
pub fn minimise(cases: &[(MmaCase, Vec<u64>)], model: &Model) -> Vec<usize> {
    let fmt = cases.first().map(|(c, _)| c.a_fmt).unwrap_or(crate::Format::F16);
    let alternatives: Vec<Emulator> = knobs::single_knob_changes(model, fmt).into_iter().map(|(_, m)| Emulator::new(m)).collect();
    let own = Emulator::new(model.clone());
    let wrong = |e: &Emulator, (c, d): &(MmaCase, Vec<u64>)| e.run(c).map_or(true, |got| got != *d);
    // For each tile, the alternatives it refutes.
    let refutes: Vec<Vec<usize>> = cases.par_iter().map(|t| (0..alternatives.len()).filter(|&a| wrong(&alternatives[a], t)).collect()).collect();
    let mut keep: Vec<usize> = (0..cases.len()).filter(|&i| wrong(&own, &cases[i])).collect();
    let mut covered: HashSet<usize> = keep.iter().flat_map(|&i| refutes[i].iter().copied()).collect();
    let needed: HashSet<usize> = refutes.iter().flatten().copied().collect();
    while covered.len() < needed.len() {
        let best = (0..cases.len()).max_by_key(|&i| refutes[i].iter().filter(|a| !covered.contains(a)).count()).expect("tiles remain");
        covered.extend(refutes[best].iter().copied());
        keep.push(best);
    }
    keep.sort();
    keep.dedup();
    keep
}
