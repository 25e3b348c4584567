//! The report's library part: per library path (cuBLAS / cuBLASLt as PyTorch calls them) and
//! shape class, which recorded GEMM shapes its model was validated on: how many GEMMs were
//! recorded on the GPU, how many reproduce bit for bit, how many the model declines, and the
//! ranges of m, n and k of the exact ones.

use crate::library::record::{replay, shape_class, GemmRecord};
use crate::library::LibraryModel;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// The shape classes in the order the report shows them ([`shape_class`]'s names).
pub const SHAPE_CLASSES: &[&str] = &["multiples of 16", "not multiples of 16", "K >= 4096", "small m*n, K >= 4096", "m or n <= 2 (GEMV-like)"];

/// What one path's records say about one shape class.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShapeCell {
    pub gemms: usize,
    pub exact: usize,
    pub declined: usize,
    /// Ranges (least, most) of m, n and k over the exact GEMMs.
    pub m: Option<(usize, usize)>,
    pub n: Option<(usize, usize)>,
    pub k: Option<(usize, usize)>,
}

impl ShapeCell {
    /// GEMMs emulated that differ somewhere from the GPU.
    pub fn inexact(&self) -> usize {
        self.gemms - self.exact - self.declined
    }

    fn add(&mut self, m: usize, n: usize, k: usize, exact: bool, declined: bool) {
        self.gemms += 1;
        self.declined += declined as usize;
        if exact {
            self.exact += 1;
            let widen = |r: &mut Option<(usize, usize)>, v: usize| *r = Some(r.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
            widen(&mut self.m, m);
            widen(&mut self.n, n);
            widen(&mut self.k, k);
        }
    }

    /// "m 1-4096, n 8-128, k 24-16384" over the exact GEMMs.
    pub fn ranges(&self) -> String {
        let r = |name: &str, x: Option<(usize, usize)>| match x {
            Some((lo, hi)) if lo == hi => format!("{name} {lo}"),
            Some((lo, hi)) => format!("{name} {lo}-{hi}"),
            None => String::new(),
        };
        [r("m", self.m), r("n", self.n), r("k", self.k)].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(", ")
    }
}

/// One library path's row: its GPUs and a cell per shape class.
#[derive(Clone, Debug)]
pub struct LibraryRow {
    pub path: String,
    pub gpus: Vec<String>,
    pub cells: BTreeMap<&'static str, ShapeCell>,
}

impl LibraryRow {
    pub fn total(&self) -> ShapeCell {
        let mut t = ShapeCell::default();
        for c in self.cells.values() {
            t.gemms += c.gemms;
            t.exact += c.exact;
            t.declined += c.declined;
        }
        t
    }
}

/// Rows for every `*.jsonl[.gz]` of `dir` (corpus/library), each record replayed under its
/// path's embedded model (`sm90:PATH`); at most `limit` records per file where given.
pub fn rows(dir: &Path, limit: Option<usize>) -> std::io::Result<Vec<LibraryRow>> {
    let mut out = Vec::new();
    for file in crate::replay::corpus_files(dir)? {
        let text = String::from_utf8_lossy(&crate::store::read_text(&file)?).into_owned();
        let records: Vec<GemmRecord> = text.lines().filter(|l| !l.trim().is_empty()).take(limit.unwrap_or(usize::MAX)).filter_map(|l| GemmRecord::parse(l).ok()).collect();
        let Some(first) = records.first() else { continue };
        let Ok(model) = LibraryModel::load(&crate::model::default_name(&first.path), None) else { continue };
        let outcomes: Vec<(bool, bool)> = records
            .par_iter()
            .map(|r| match replay(r, &model) {
                Ok(x) if x.skipped.is_some() => (false, true),
                Ok(x) => (x.matched == x.elements, false),
                Err(_) => (false, false),
            })
            .collect();
        let mut row = LibraryRow { path: first.path.clone(), gpus: Vec::new(), cells: BTreeMap::new() };
        for (r, (exact, declined)) in records.iter().zip(outcomes) {
            let class = SHAPE_CLASSES.iter().find(|c| **c == shape_class(r.m, r.n, r.k)).copied().unwrap_or(SHAPE_CLASSES[0]);
            row.cells.entry(class).or_default().add(r.m, r.n, r.k, exact, declined);
            if !r.gpu.is_empty() && !row.gpus.contains(&r.gpu) {
                row.gpus.push(r.gpu.clone());
            }
        }
        out.push(row);
    }
    Ok(out)
}

/// The library part of the Markdown report.
pub fn markdown(rows: &[LibraryRow]) -> String {
    let mut s = String::from(
        "\n## Library GEMMs: the shapes each model was validated on\n\n\
         Per library path (cuBLAS/cuBLASLt as `torch.mm`, `addmm`, `F.linear` and `_scaled_mm` call them) and shape class: \
         the GEMMs recorded on the GPU (`corpus/library/`), how many the model reproduces bit for bit, how many it declines \
         (a kernel whose schedule is not modelled yet: said, never guessed), how many differ, and the ranges of m, n and k \
         over the exact ones. Shapes outside these ranges are predicted from the learned kernel table but not validated.\n\n\
         | path | GPUs | shape class | GEMMs | exact | declined | differ | exact shapes (m, n, k) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        for class in SHAPE_CLASSES {
            let Some(c) = r.cells.get(class) else { continue };
            s.push_str(&format!("| `{}` | {} | {class} | {} | {} | {} | {} | {} |\n", r.path, r.gpus.join(", "), c.gemms, c.exact, c.declined, c.inexact(), c.ranges()));
        }
    }
    let (g, e, d): (usize, usize, usize) = rows.iter().map(|r| r.total()).fold((0, 0, 0), |(g, e, d), t| (g + t.gemms, e + t.exact, d + t.declined));
    s.push_str(&format!("\n{g} recorded GEMMs: {e} exact, {d} declined, {} differ.\n", g - e - d));
    s
}
