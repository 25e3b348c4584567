//! The minimiser: shrink a diverging element to the simplest probe that still diverges the same
//! way (one element, fewest terms, fewest significand bits, exponents near 0, C zero if it can
//! be). Each round evaluates every one-step simplification in one batch on both sides (one GPU
//! launch pair) and keeps the simplest survivor.

use super::compare::{agree, Divergence};
use super::probe::Probe;
use super::side::{Side, SideError};
use crate::case::MmaCase;
use crate::exact::{self, Exact};

/// A probe with both sides' outputs and the exact value of its element.
#[derive(Clone, Debug)]
pub struct Evaluated {
    pub probe: Probe,
    pub a: u64,
    pub b: u64,
    pub exact: Exact,
    pub divergence: Option<Divergence>,
}

/// Evaluate probes on both sides (one batch each) and classify each element.
pub fn evaluate(a: &Side, b: &Side, probes: &[Probe]) -> Result<Vec<Evaluated>, SideError> {
    use rayon::prelude::*;
    let tiles: Vec<MmaCase> = probes.iter().map(Probe::tile).collect();
    let at: Vec<(usize, usize)> = probes.iter().map(|p| (p.i, p.j)).collect();
    let (ra, rb) = rayon::join(|| a.execute_elements(&tiles, &at), || b.execute_elements(&tiles, &at));
    let (ra, rb) = (ra?, rb?);
    let nan_is_any = a.nan_is_any() || b.nan_is_any();
    Ok(probes
        .par_iter()
        .zip(tiles.par_iter())
        .enumerate()
        .map(|(t, (p, tile))| {
            let exact = exact::exact_element(tile, p.i, p.j);
            let divergence = (!agree(p.d_fmt, ra[t], rb[t], nan_is_any)).then(|| Divergence::classify(p.d_fmt, ra[t], rb[t], &exact));
            Evaluated { probe: p.clone(), a: ra[t], b: rb[t], exact, divergence }
        })
        .collect())
}

/// The result of minimising one divergence.
#[derive(Clone, Debug)]
pub struct Minimised {
    pub first: Evaluated,
    pub last: Evaluated,
    /// Evaluation rounds (each one batch per side).
    pub rounds: usize,
    /// Candidate probes evaluated.
    pub evaluated: usize,
    /// The element alone (the rest of the tile zeroed) no longer diverges: the divergence needs
    /// the other elements, and the original tile is kept as is.
    pub needs_whole_tile: bool,
}

/// Shrink the divergence at element (i, j) of `case`.
pub fn minimise(a: &Side, b: &Side, case: &MmaCase, i: usize, j: usize, max_rounds: usize) -> Result<Minimised, SideError> {
    let start = Probe::from_tile(case, i, j);
    let first = evaluate(a, b, std::slice::from_ref(&start))?.remove(0);
    let Some(target) = first.divergence.clone() else {
        return Ok(Minimised { last: first.clone(), first, rounds: 1, evaluated: 1, needs_whole_tile: true });
    };
    let class = target.coarse();
    let (mut cur, mut rounds, mut evaluated) = (first.clone(), 1, 1);
    while rounds < max_rounds {
        let cands = cur.probe.candidates();
        if cands.is_empty() {
            break;
        }
        rounds += 1;
        evaluated += cands.len();
        let results = evaluate(a, b, &cands)?;
        // Candidates come sorted simplest first: take the first that keeps the class.
        match results.into_iter().find(|e| e.divergence.as_ref().is_some_and(|d| d.coarse() == class)) {
            Some(next) => cur = next,
            None => break,
        }
    }
    Ok(Minimised { first, last: cur, rounds, evaluated, needs_whole_tile: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::model::Model;

    #[test]
    fn v100_against_h100_shrinks_to_a_few_terms() {
        // 1 + sixteen small products: V100 (no extra bits... truncating at width 4) and H100
        // (3 extra bits, width 16) differ; the minimiser must end with at most 4 nonzero terms.
        let mut case = MmaCase::zeros(Format::F16, Format::F32, 16, 8, 16);
        for (n, x) in case.a.iter_mut().enumerate() {
            *x = 0x3c00 + (n as u64 * 37 % 1024); // 1.xxx
        }
        for (n, x) in case.b.iter_mut().enumerate() {
            *x = 0x0c00 + (n as u64 * 91 % 1024); // about 2^-12
        }
        case.c.iter_mut().for_each(|x| *x = 0x3f80_0000);
        let (v100, h100) = (Side::model(Model::load("v100").unwrap()), Side::model(Model::load("h100").unwrap()));
        let da = v100.execute(std::slice::from_ref(&case)).unwrap().remove(0);
        let db = h100.execute(std::slice::from_ref(&case)).unwrap().remove(0);
        let e = (0..128).find(|&e| da[e] != db[e]).expect("the hypotheses differ on this tile");
        let m = minimise(&v100, &h100, &case, e / 8, e % 8, 200).unwrap();
        assert!(!m.needs_whole_tile);
        let last = &m.last;
        assert_eq!(last.divergence.as_ref().unwrap().coarse(), m.first.divergence.as_ref().unwrap().coarse());
        assert!(last.probe.simplicity().terms <= 4, "{}", last.probe.describe());
        assert!(last.probe.simplicity() < m.first.probe.simplicity());
        // And the minimised case really diverges when run afresh as a whole tile.
        let t = last.probe.tile();
        assert_ne!(v100.execute(std::slice::from_ref(&t)).unwrap()[0][last.probe.i * 8 + last.probe.j], h100.execute(std::slice::from_ref(&t)).unwrap()[0][last.probe.i * 8 + last.probe.j]);
    }

    /// A sparse tile's divergence minimises to a sparse probe: the H100's sparse k32 model (one
    /// block over the 16 kept products) against the same knobs blocked by dense K (blocks of 16
    /// dense positions, 8 kept products each) shrinks to a few terms at their dense positions,
    /// and the minimised tile still diverges when run afresh.
    #[test]
    fn sparse_divergences_minimise_to_sparse_probes() {
        let path = crate::exec::path_by_id("mma.sp.m16n8k32.f32.f16.f16.f32").unwrap();
        let kept = Model::load("sm90:mma.sp.m16n8k32.f32.f16.f16.f32").unwrap();
        let dense_k = Model::from_toml("dense-k", "base = \"sm90:mma.sp.m16n8k32.f32.f16.f16.f32\"\n[blocks]\nwidth = 8").unwrap();
        let (a, b) = (Side::model(kept), Side::model(dense_k));
        let (case, e) = first_divergence(&a, &b, path, 11, |_, _| true).expect("blocking by kept products or by dense K differ on some tile");
        let m = minimise(&a, &b, &case, e / 8, e % 8, 200).unwrap();
        assert!(!m.needs_whole_tile);
        let last = &m.last.probe;
        assert!(last.picks.is_some() && last.simplicity().terms <= 4, "{}", last.describe());
        still_diverges(&a, &b, path, last);
    }

    /// The first element where sides `a` and `b` differ (and `keep` holds) on the path's
    /// generated tiles of `seed` (the first 400).
    fn first_divergence(a: &Side, b: &Side, path: &crate::exec::PathSpec, seed: u64, keep: impl Fn(&MmaCase, usize) -> bool) -> Option<(MmaCase, usize)> {
        (0..400).find_map(|i| {
            let c = crate::gen::case_at(path, seed, i);
            let (da, db) = (a.execute(std::slice::from_ref(&c)).unwrap().remove(0), b.execute(std::slice::from_ref(&c)).unwrap().remove(0));
            (0..da.len()).find(|&e| da[e] != db[e] && keep(&c, e)).map(|e| (c, e))
        })
    }

    /// The minimised probe's tile is one the path takes, and still diverges when run afresh.
    fn still_diverges(a: &Side, b: &Side, path: &crate::exec::PathSpec, last: &Probe) {
        let t = last.tile();
        path.check(&t).unwrap();
        let at = last.i * t.n + last.j;
        assert_ne!(a.execute(std::slice::from_ref(&t)).unwrap()[0][at], b.execute(std::slice::from_ref(&t)).unwrap()[0][at], "{}", last.describe());
    }

    /// A block-scaled tile's divergence minimises to a probe that keeps its scales where they
    /// matter and sets the others to 1: the RTX Blackwell e4m3 x e2m1 model (scales folded
    /// into the field-sum keys) against the same model keyed by leading bits, on scaled tiles.
    #[test]
    fn block_scaled_divergences_keep_their_scales() {
        let path = crate::exec::path_by_id("mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0").unwrap();
        let fused = Model::load("rtx-blackwell:mma.m16n8k32.f32.e4m3.e2m1.f32").unwrap();
        let lead = Model::from_toml("lead", "base = \"rtx-blackwell:mma.m16n8k32.f32.e4m3.e2m1.f32\"\n[align]\nexponent = \"leading_bit\"").unwrap();
        let (a, b) = (Side::model(fused), Side::model(lead));
        let (case, e) = first_divergence(&a, &b, path, 5, |c, e| c.scales.as_ref().unwrap().a[e / 8] != 127).expect("field-sum and leading-bit keys differ on some scaled tile");
        let m = minimise(&a, &b, &case, e / 8, e % 8, 200).unwrap();
        let last = &m.last.probe;
        assert!(last.scales.is_some() && last.simplicity().terms <= 4, "{}", last.describe());
        assert!(last.simplicity() < m.first.probe.simplicity());
        still_diverges(&a, &b, path, last);
        assert!(last.describe().contains("ue8m0 scales"), "{}", last.describe());
    }
}
