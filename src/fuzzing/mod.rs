//! Coverage-guided fuzzing of one instruction path: libFuzzer's GPU targets (`fuzz/`) and the
//! guided hunt share what is here. An input ([`codec`]) is a few tiles; [`Differential`] runs
//! them on two sides (the GPU and the path's model, or any two sides a hunt takes), computes
//! the arithmetic situations the model's output went through ([`crate::features`]), and lists
//! the elements that differ; [`describe`] prints all of it with the exact value (MPFR), the
//! mismatches marked. [`mutate`] changes tiles the way the guided hunt explores.

pub mod codec;
pub mod mutate;

use crate::case::{hex, MmaCase};
use crate::exact;
use crate::exec::PathSpec;
use crate::format::Format;
use crate::features::{Counter, FeatureProbe, TileCounts};
use crate::hunt::compare::agree;
use crate::hunt::probe::value_text;
use crate::hunt::{Side, SideError};
use std::fmt::Write as _;

/// Two sides of one path and the model whose arithmetic names the situations.
pub struct Differential {
    pub path: &'static PathSpec,
    pub a: Side,
    /// The model under test (its arithmetic names the situations).
    pub b: Side,
}

/// What one input did.
pub struct Outcome {
    pub tiles: Vec<MmaCase>,
    pub da: Vec<Vec<u64>>,
    pub db: Vec<Vec<u64>>,
    /// Situations of every tile of the input together.
    pub counts: TileCounts,
    /// (tile, element) where the two sides differ.
    pub divergent: Vec<(usize, usize)>,
}

impl Differential {
    /// Side A from `MMAFUZZ_AGAINST` (`gpu`, the default; `exact`, `exact-rz`…; or a model),
    /// side B from `MMAFUZZ_MODEL` (default `sm90:PATH`): how the fuzz targets are pointed.
    pub fn from_env(path: &'static PathSpec) -> Result<Differential, String> {
        let against = std::env::var("MMAFUZZ_AGAINST").unwrap_or_else(|_| "gpu".into());
        let model = std::env::var("MMAFUZZ_MODEL").unwrap_or_else(|_| crate::model::default_name(&path.id));
        Ok(Differential { path, a: Side::from_spec(&against, path)?, b: Side::from_spec(&model, path)? })
    }

    /// Run one input's tiles on both sides; situations from side B's output.
    pub fn run(&self, bytes: &[u8]) -> Result<Outcome, SideError> {
        self.run_tiles(codec::decode(self.path, bytes))
    }

    pub fn run_tiles(&self, tiles: Vec<MmaCase>) -> Result<Outcome, SideError> {
        let (da, db) = if tiles.len() <= crate::hunt::side::FEW {
            (self.a.execute(&tiles), self.b.execute(&tiles))
        } else {
            rayon::join(|| self.a.execute(&tiles), || self.b.execute(&tiles))
        };
        let (da, db) = (da?, db?);
        let mut counter = Counter::default();
        if let Some(ar) = self.b.arithmetic(self.path.a_fmt) {
            let probe = FeatureProbe::new(ar);
            for (t, d) in tiles.iter().zip(&db) {
                probe.add_tile(t, d, &mut counter);
            }
        }
        let counts = counter.take();
        let nan_is_any = self.a.nan_is_any() || self.b.nan_is_any();
        let fmt = self.path.c_fmt;
        let divergent = (0..tiles.len()).flat_map(|t| (0..da[t].len()).map(move |e| (t, e))).filter(|&(t, e)| !agree(fmt, da[t][e], db[t][e], nan_is_any)).collect();
        Ok(Outcome { tiles, da, db, counts, divergent })
    }
}

/// The input as a reader wants it: each tile's nonzero inputs, every element where the sides
/// differ (both outputs, the exact value and its nearest rounding, the mismatch marked), and a
/// count of the elements that agree.
pub fn describe(d: &Differential, o: &Outcome) -> String {
    let (fa, fb, fc, fd) = (d.path.a_fmt, d.path.b_fmt, d.path.c_fmt, d.path.d_fmt());
    let (na, nb) = (d.a.name(), d.b.name());
    let width = na.len().max(nb.len()).max("exact".len());
    let mut s = String::new();
    let _ = writeln!(s, "{}: {} tile(s); A = {} | B = {}", d.path.id, o.tiles.len(), d.a.describe(), d.b.describe());
    let quiet = |t: usize| nonzero_terms(&o.tiles[t..t + 1]) == 0 && !o.divergent.iter().any(|&(x, _)| x == t);
    let skipped = (0..o.tiles.len()).filter(|&t| quiet(t)).count();
    if skipped > 0 {
        let _ = writeln!(s, "{skipped} tile(s) of zeros on which both sides agree (not shown)");
    }
    for (t, tile) in o.tiles.iter().enumerate().filter(|&(t, _)| !quiet(t)) {
        let _ = writeln!(s, "tile {t}:");
        let mut nonzero = 0;
        let operands: [(&str, Format, usize, usize, &dyn Fn(usize, usize) -> u64); 3] = [
            ("a", fa, tile.m, tile.k, &|r, c| tile.a_at(r, c)),
            ("b", fb, tile.k, tile.n, &|r, c| tile.b_at(r, c)),
            ("c", fc, tile.m, tile.n, &|r, c| tile.c_at(r, c)),
        ];
        for (name, f, rows, cols, at) in operands {
            for r in 0..rows {
                for c in 0..cols {
                    let x = at(r, c);
                    if x != 0 {
                        nonzero += 1;
                        let _ = writeln!(s, "  {name}[{r}][{c}] = {} ({})", hex(x, f), value_text(f, x));
                    }
                }
            }
        }
        if nonzero == 0 {
            let _ = writeln!(s, "  (every input +0)");
        }
        // Block scales other than 1 (a scale no entry of the input names is 1).
        if let Some(sc) = &tile.scales {
            let blocks = tile.k / sc.block;
            let one = sc.fmt.one();
            for (r, t, x) in sc.a.iter().enumerate().map(|(at, &x)| (at / blocks, at % blocks, x)).filter(|&(_, _, x)| x != one) {
                let _ = writeln!(s, "  {} scale of a row {r}, k = {}..{}: {x:02x} ({})", sc.fmt, t * sc.block, (t + 1) * sc.block - 1, sc.fmt.text(x));
            }
            for (t, c, x) in sc.b.iter().enumerate().map(|(at, &x)| (at / tile.n, at % tile.n, x)).filter(|&(_, _, x)| x != one) {
                let _ = writeln!(s, "  {} scale of b column {c}, k = {}..{}: {x:02x} ({})", sc.fmt, t * sc.block, (t + 1) * sc.block - 1, sc.fmt.text(x));
            }
        }
        let mut differ = 0;
        for &(_, e) in o.divergent.iter().filter(|(x, _)| *x == t) {
            differ += 1;
            let (i, j) = (e / tile.n, e % tile.n);
            let x = exact::exact_element(tile, i, j);
            let nearest = x.round(fd, crate::Rounding::Rne);
            let _ = writeln!(s, "  d[{i}][{j}]:");
            let mark = |bits: u64| if bits == nearest { "" } else { "   <- not the nearest" };
            let _ = writeln!(s, "    {na:<width$} {} ({}){}", hex(o.da[t][e], fd), value_text(fd, o.da[t][e]), mark(o.da[t][e]));
            let _ = writeln!(s, "    {nb:<width$} {} ({}){}", hex(o.db[t][e], fd), value_text(fd, o.db[t][e]), mark(o.db[t][e]));
            let _ = writeln!(s, "    {:<width$} {}, nearest {} ({})", "exact", x.describe(), hex(nearest, fd), value_text(fd, nearest));
            let _ = writeln!(s, "    MISMATCH: {na} and {nb} differ");
        }
        let _ = writeln!(s, "  {} of {} elements of D agree", tile.m * tile.n - differ, tile.m * tile.n);
    }
    s
}

/// Nonzero inputs (C counted) of the tiles of an input: what a minimised artifact is judged by.
pub fn nonzero_terms(tiles: &[MmaCase]) -> usize {
    tiles.iter().map(|t| t.a.iter().chain(&t.b).chain(&t.c).filter(|&&x| x != 0).count()).sum()
}
