//! Inference: every model of the emulator's space that reproduces what the GPU computed on a
//! path, the knobs those models agree on, and for each ruled-out knob value the simplest
//! observation that rules it out.
//!
//! The search is staged. Core arithmetic (block structure, alignment, accumulator rounding)
//! alone decides plain observations (normal inputs, normal output), so every core combination is
//! tried on those first, simplest observation first, and dropped at its first mismatch; most
//! fall within a few minimised findings. The survivors are then crossed with the special-value
//! and subnormal knobs and tried on everything else.

pub mod discover;
pub mod observe;
pub mod space;

use crate::case::hex;
use crate::exec::PathSpec;
use crate::model::{Arithmetic, Emulator};
use observe::{Observation, Observations};
use rayon::prelude::*;
use space::{Axis, Point};

/// A knob value ruled out, and the simplest observation that does it.
#[derive(Clone, Debug)]
pub struct Refutation {
    pub knob: String,
    pub value: String,
    pub origin: String,
    pub case: String,
    pub gpu: String,
    pub model: String,
}

/// A candidate that explains the most, when none explains everything.
#[derive(Clone, Debug)]
pub struct Near {
    pub knobs: Vec<String>,
    pub mismatches: usize,
    pub of: usize,
    pub first_mismatch: Option<Refutation>,
}

/// What inference found for one path.
#[derive(Debug)]
pub struct Inference {
    pub path: String,
    pub observations: usize,
    pub plain: usize,
    pub core_axes: Vec<Axis>,
    pub special_axes: Vec<Axis>,
    pub core_candidates: usize,
    pub core_survivors: Vec<Point>,
    /// Full survivors: (core point, special point).
    pub survivors: Vec<(Point, Point)>,
    /// Per knob, the values the survivors take.
    pub agreed: Vec<(String, Vec<String>)>,
    pub refutations: Vec<Refutation>,
    /// When nothing survives: the best candidates and how much they miss.
    pub nearest: Vec<Near>,
    /// The arithmetic of the first survivor (or the nearest candidate).
    pub best: Option<Arithmetic>,
    pub seconds: f64,
}

use space::emulator;

fn mismatch(emu: &Emulator, o: &Observation) -> bool {
    emu.run(&o.case).map_or(true, |d| d[0] != o.d)
}

/// Index (in `obs`) of the first observation `arith` gets wrong.
fn first_failure(arith: &Arithmetic, obs: &[&Observation]) -> Option<usize> {
    let Some(emu) = emulator(arith) else { return Some(0) };
    obs.iter().position(|o| mismatch(&emu, o))
}

/// Elements of `obs` that `arith` gets wrong, counted tile by tile (and the findings' elements);
/// with `first_only`, stops at the first.
fn mismatches(arith: &Arithmetic, obs: &Observations, first_only: bool) -> usize {
    let Some(emu) = emulator(arith) else { return usize::MAX };
    let found = obs.from_findings.iter().filter(|o| mismatch(&emu, o)).count();
    if first_only && found > 0 {
        return found;
    }
    let tile_misses = |(t, d): &(crate::case::MmaCase, Vec<u64>)| emu.run(t).map_or(d.len(), |got| got.iter().zip(d).filter(|(a, b)| a != b).count());
    found
        + if first_only {
            obs.recorded.par_iter().any(|x| tile_misses(x) > 0) as usize
        } else {
            obs.recorded.par_iter().map(tile_misses).sum()
        }
}

fn refutation(knob: String, value: String, arith: &Arithmetic, o: &Observation) -> Refutation {
    let got = emulator(arith).and_then(|e| e.run(&o.case).ok()).map_or("(cannot emulate)".into(), |d| hex(d[0], o.case.d_fmt));
    Refutation { knob, value, origin: o.origin.clone(), case: o.describe(), gpu: hex(o.d, o.case.d_fmt), model: got }
}

/// Infer the models of `path` that reproduce `obs`, starting from `base` for the knobs the
/// space does not vary.
pub fn infer(path: &PathSpec, obs: &Observations, base: &Arithmetic) -> Inference {
    let start = std::time::Instant::now();
    let core_axes = space::core_axes(path);
    let special_axes = space::special_axes(path);
    let plain: Vec<&Observation> = obs.all.iter().filter(|o| o.plain).collect();
    let rest: Vec<&Observation> = obs.all.iter().filter(|o| !o.plain).collect();
    let everything: Vec<&Observation> = obs.all.iter().collect();

    // Stage 1: core combinations against plain observations, special knobs as in `base`.
    let core_points = space::points(&core_axes, path.terms());
    let core_results: Vec<(Point, Option<usize>)> = core_points
        .par_iter()
        .map(|p| {
            let fail = space::arithmetic_at(base, &core_axes, p).map_or(Some(0), |a| first_failure(&a, &plain));
            (p.clone(), fail)
        })
        .collect();
    let core_survivors: Vec<Point> = core_results.iter().filter(|(_, f)| f.is_none()).map(|(p, _)| p.clone()).collect();

    // Stage 2: survivors crossed with the special knobs, against the other observations.
    let special_points = space::points(&special_axes, path.terms());
    let pairs: Vec<(Point, Point)> = core_survivors.iter().flat_map(|c| special_points.iter().map(move |s| (c.clone(), s.clone()))).collect();
    let at = |c: &Point, s: &Point| space::arithmetic_at(base, &core_axes, c).and_then(|a| space::arithmetic_at(&a, &special_axes, s));
    // The simplest non-plain elements first (most candidates fall there), then every tile whole.
    let probe = &rest[..rest.len().min(4096)];
    let mut survivors: Vec<(Point, Point)> = pairs
        .par_iter()
        .filter(|(c, s)| at(c, s).is_some_and(|a| first_failure(&a, probe).is_none() && mismatches(&a, obs, true) == 0))
        .cloned()
        .collect();

    let mut inf = Inference {
        path: path.id.into(),
        observations: obs.all.len(),
        plain: plain.len(),
        core_candidates: core_points.len(),
        core_survivors: core_survivors.clone(),
        survivors: survivors.clone(),
        agreed: vec![],
        refutations: vec![],
        nearest: vec![],
        best: None,
        seconds: 0.0,
        core_axes: core_axes.clone(),
        special_axes: special_axes.clone(),
    };

    // The reference point: the first survivor, else the candidate that explains the most.
    let reference: Option<(Point, Point)> = if let Some(s) = survivors.first() {
        Some(s.clone())
    } else {
        let base_special = base_special_point(base, &special_axes);
        // The special knobs for a core point, one axis at a time, keeping the value that misses
        // fewest observations (coordinate descent).
        let descend = |c: &Point| {
            let mut s = base_special.clone();
            for _round in 0..2 {
                for (i, axis) in special_axes.iter().enumerate() {
                    let best = (0..axis.values.len())
                        .min_by_key(|&v| {
                            let mut t = s.clone();
                            t[i] = v;
                            at(c, &t).map_or(usize::MAX, |a| mismatches(&a, obs, false))
                        })
                        .expect("axes have values");
                    s[i] = best;
                }
            }
            (c.clone(), s)
        };
        let cores: Vec<Point> = if core_survivors.is_empty() {
            // The core points that got furthest through the plain observations.
            let mut by_reach: Vec<&(Point, Option<usize>)> = core_results.iter().collect();
            by_reach.sort_by_key(|(_, f)| std::cmp::Reverse(f.unwrap_or(usize::MAX)));
            by_reach.iter().take(8).map(|(p, _)| p.clone()).collect()
        } else {
            core_survivors.clone()
        };
        let candidates: Vec<(Point, Point)> = cores.iter().map(descend).collect();
        let mut near: Vec<(Near, (Point, Point))> = candidates
            .iter()
            .filter_map(|(c, s)| {
                let a = at(c, s)?;
                let misses = mismatches(&a, obs, false);
                let first_mismatch = first_failure(&a, &everything).map(|i| refutation("(all)".into(), "(all)".into(), &a, everything[i]));
                let knobs = [space::describe(&core_axes, c), space::describe(&special_axes, s)].concat();
                let of = obs.recorded.iter().map(|(_, d)| d.len()).sum::<usize>() + obs.from_findings.len();
                Some((Near { knobs, mismatches: misses, of, first_mismatch }, (c.clone(), s.clone())))
            })
            .collect();
        near.sort_by_key(|(n, _)| n.mismatches);
        let best = near.first().map(|(_, p)| p.clone());
        if near.first().is_some_and(|(n, _)| n.mismatches == 0) {
            // The core stage ran with `base`'s special knobs, which can decide a plain element
            // (an intermediate overflow, say); a candidate the descent completed that misses
            // nothing is a survivor all the same.
            survivors.extend(best.clone());
            inf.survivors = survivors.clone();
        } else {
            inf.nearest = near.into_iter().take(5).map(|(n, _)| n).collect();
        }
        best
    };

    if let Some((c, s)) = reference {
        inf.best = at(&c, &s);
        // Of the survivors, the one nearest to the base: knobs the data leave undecided keep
        // the base's values. (A cap of 5,000 once hid the base's own knobs behind 7,104
        // survivors; a million takes about a second.)
        if let Some(b) = space::nearest_to(base, survivors.iter().take(1_000_000).filter_map(|(c, s)| at(c, s))) {
            inf.best = Some(b);
        }
        // Each knob value the survivors do not take, one change away from the reference.
        let axes: Vec<(&Axis, bool)> = core_axes.iter().map(|a| (a, true)).chain(special_axes.iter().map(|a| (a, false))).collect();
        let mut ci = 0;
        let mut si = 0;
        for (axis, is_core) in axes {
            let idx = if is_core { ci } else { si };
            let taken: Vec<usize> = {
                let mut v: Vec<usize> = survivors.iter().map(|(sc, ss)| if is_core { sc[idx] } else { ss[idx] }).collect();
                v.sort();
                v.dedup();
                v
            };
            inf.agreed.push((axis.path.to_string(), taken.iter().map(|&v| axis.values[v].to_string()).collect()));
            let current = if is_core { c[idx] } else { s[idx] };
            let refs: Vec<Refutation> = (0..axis.values.len())
                .into_par_iter()
                .filter(|v| *v != current && !taken.contains(v))
                .filter_map(|v| {
                    let (mut c2, mut s2) = (c.clone(), s.clone());
                    if is_core { c2[idx] = v } else { s2[idx] = v }
                    let a = at(&c2, &s2)?;
                    let i = first_failure(&a, &everything)?;
                    Some(refutation(axis.path.to_string(), axis.values[v].to_string(), &a, everything[i]))
                })
                .collect();
            inf.refutations.extend(refs);
            if is_core { ci += 1 } else { si += 1 }
        }
    }
    inf.seconds = start.elapsed().as_secs_f64();
    inf
}

/// The special knobs' values in `base`, as a point.
fn base_special_point(base: &Arithmetic, axes: &[Axis]) -> Point {
    let t = toml::Table::try_from(base).unwrap_or_default();
    axes.iter()
        .map(|a| {
            let (section, key) = a.path.split_once('.').expect("section.key");
            let v = t.get(section).and_then(|s| s.get(key));
            v.and_then(|v| a.values.iter().position(|x| x == v)).unwrap_or(0)
        })
        .collect()
}

/// A model file for `arith` as path `sm90:PATH`: a comment on where it comes from, then
/// name, description, sources and the knobs.
pub fn model_text(arch: &str, path: &str, arith: &Arithmetic, origin: &str, description: &str, source: &str) -> String {
    let table = toml::Table::try_from(arith).expect("an arithmetic serialises");
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let (name, description, source) = (quote(&format!("{arch}:{path}")), quote(&format!("{arch} {path}: {description}")), quote(source));
    format!("# {origin}.\nname = {name}\ndescription = {description}\nsources = [{source}]\n\n{table}")
}

/// The model file for an inferred arithmetic.
/// `label` names what recorded the corpus when it is not the GPU (an oracle such as MMA-Sim).
pub fn model_file(arch: &str, path: &str, arith: &Arithmetic, inf: &Inference, sources: &str, label: Option<&str>) -> String {
    let status = if inf.survivors.is_empty() {
        format!("no model of the space reproduces every observation; this is the nearest ({} of {} observations missed)", inf.nearest.first().map_or(0, |n| n.mismatches), inf.observations)
    } else {
        format!("{} surviving models of {} core combinations; this is the one nearest the base", inf.survivors.len(), inf.core_candidates)
    };
    let origin = format!("Inferred by `mmafuzz infer --path {path}` from {sources}: {status}");
    match label {
        None => model_text(arch, path, arith, &origin, "inferred from the GPU corpus and findings", &format!("mmafuzz infer over {sources}")),
        Some(l) => model_text(arch, path, arith, &origin, &format!("inferred from {l}"), &format!("mmafuzz infer over {sources} recorded from {l}")),
    }
}

/// The model a path's search starts from (knobs outside the searched space, and the values
/// undecided knobs keep): the path's measured sm90 model, or that of its nearest measured kin
/// (Blackwell's tcgen05.mma → Hopper's wgmma of the same shape and types; mixed FP8 → the
/// same path with B in A's format), else the generic hypothesis for its formats.
pub fn base_model(p: &crate::exec::PathSpec) -> Result<crate::Model, crate::model::ModelError> {
    use crate::format::Format;
    let kin = p.id.replacen("tcgen05.mma.", "wgmma.", 1);
    let same_types = kin.replacen(&format!(".{}.{}", p.a_fmt, p.b_fmt), &format!(".{}.{}", p.a_fmt, p.a_fmt), 1);
    for id in [p.id.to_string(), kin, same_types] {
        if let Ok(m) = crate::Model::load(&crate::model::default_name(&id)) {
            return Ok(m);
        }
    }
    let generic = match p.a_fmt {
        f if f.is_integer() => "s32-exact",
        Format::F32 | Format::F64 => "fma-chain-rne",
        _ => "h100",
    };
    crate::Model::load(generic)
}
