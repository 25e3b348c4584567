//! The hand-made experiments of the seed papers, as cases with their published outcomes.
//!
//! Each [`Probe`] is one MMA case (usually a single dot product, d_00) and, for each published
//! hypothesis model it speaks about, the value the paper reports or that its stated conclusion
//! implies. `cargo test` checks the emulator against every one; `mmafuzz probes` prints the table.

use crate::case::MmaCase;
use crate::format::Format;

/// One experiment from a seed paper.
#[derive(Clone, Debug)]
pub struct Probe {
    pub id: String,
    /// Paper and section.
    pub source: &'static str,
    /// What it shows, in the paper's words where possible.
    pub what: String,
    pub case: MmaCase,
    /// `(model name, published value of d_00)`.
    pub published: Vec<(&'static str, f64)>,
}

/// The exact bit pattern of `x` in `f`; probe values are chosen representable.
pub fn bits_of(f: Format, x: f64) -> u64 {
    let d = Format::F64.decode(x.to_bits());
    if x == 0.0 {
        return f.zero_bits(x.is_sign_negative());
    }
    f.encode_exact(d.neg, d.sig, d.exp)
        .unwrap_or_else(|| panic!("{x:e} is not representable in {f}"))
}

fn p2(e: i32) -> f64 {
    crate::format::pow2(e)
}

/// A single dot product `d = c + Σ a_k·b_k` with the given nonzero products at positions k.
fn dot(a_fmt: Format, c_fmt: Format, k: usize, products: &[(usize, f64, f64)], c: f64) -> MmaCase {
    let mut case = MmaCase::zeros(a_fmt, c_fmt, 1, 1, k);
    for &(kk, a, b) in products {
        case.a[kk] = bits_of(a_fmt, a);
        case.b[kk] = bits_of(a_fmt, b);
    }
    case.c[0] = bits_of(c_fmt, c);
    case
}

/// Products of `1 · b_k` (Fasi et al. set the first row of A to 1 and vary the column of B).
fn ones_times(b: &[f64]) -> Vec<(usize, f64, f64)> {
    b.iter().enumerate().filter(|(_, &v)| v != 0.0).map(|(k, &v)| (k, 1.0, v)).collect()
}

struct Builder(Vec<Probe>);

impl Builder {
    fn add(&mut self, id: impl Into<String>, source: &'static str, what: impl Into<String>, case: MmaCase, published: &[(&'static str, f64)]) {
        self.0.push(Probe { id: id.into(), source, what: what.into(), case, published: published.to_vec() });
    }
}

/// Every seed experiment with a published outcome.
pub fn all() -> Vec<Probe> {
    let mut p = Builder(Vec::new());
    fasi(&mut p);
    hickmann(&mut p);
    fttn(&mut p);
    p.0
}

/// Fasi, Higham, Mikaitis & Pranesh, "Numerical behavior of NVIDIA tensor cores", §III, on
/// V100 (one tensor core: k = 4, the fifth term is C).
fn fasi(p: &mut Builder) {
    use Format::{F16, F32};
    const S: &str = "Fasi et al. §III";
    let v = |x: f64| [("v100", x)];
    for (c_fmt, tag) in [(F32, "f32"), (F16, "f16")] {
        p.add(format!("fasi-subnormal-input-{tag}"), S, "a = 2^-24 (f16 subnormal), b = 4: d = 2^-22", dot(F16, c_fmt, 4, &[(0, p2(-24), 4.0)], 0.0), &v(p2(-22)));
        p.add(format!("fasi-subnormal-output-{tag}"), S, "a = 2^-14, b = 2^-1: subnormal f16 2^-15 returned", dot(F16, c_fmt, 4, &[(0, p2(-14), 0.5)], 0.0), &v(p2(-15)));
    }
    p.add("fasi-subnormal-c", S, "c = 2^-149, A = B = 0: d = 2^-149", dot(F16, F32, 4, &[], p2(-149)), &v(p2(-149)));
    p.add("fasi-subnormal-output-from-c", S, "a = 2^-14, b = 1, c = -2^-15 (f16): d = 2^-15", dot(F16, F16, 4, &[(0, p2(-14), 1.0)], -p2(-15)), &v(p2(-15)));
    p.add("fasi-subnormal-in-hardware", S, "1·(2^-23+2^-24) + 1·2: the subnormal is dropped (RZ), d = 2", dot(F16, F32, 4, &[(0, 1.0, p2(-23) + p2(-24)), (1, 1.0, 2.0)], 0.0), &v(2.0));
    let x = 1.0 - p2(-11);
    p.add("fasi-exact-products", S, "rows of 1-2^-11: d = 4(1-2^-10+2^-22), products kept exactly", dot(F16, F32, 4, &[(0, x, x), (1, x, x), (2, x, x), (3, x, x)], 0.0), &v(4.0 * (1.0 - p2(-10) + p2(-22))));
    p.add("fasi-exact-products-f16-c", S, "a11=b11=a12=1-2^-11, b21=2^-11, f16 C/D: d = 1-2^-10+2^-11", dot(F16, F16, 4, &[(0, x, x), (1, x, p2(-11))], 0.0), &v(1.0 - p2(-10) + p2(-11)));
    for one_at in 0..5 {
        let mut b = [p2(-24); 5];
        b[one_at] = 1.0;
        let place = if one_at == 4 { "c".to_string() } else { format!("b{}1", one_at + 1) };
        p.add(format!("fasi-four-roundings-{place}"), S, format!("{place} = 1, the other four summands 2^-24: d = 1 (not 1+2^-22)"), dot(F16, F32, 4, &ones_times(&b[..4]), b[4]), &v(1.0));
    }
    for (sign, tag) in [(1.0, "pos"), (-1.0, "neg")] {
        p.add(format!("fasi-round-toward-zero-{tag}"), S, "b11 = ±2, b21 = ±(2^-23+2^-24): d = ±2, so RZ", dot(F16, F32, 4, &ones_times(&[2.0 * sign, (p2(-23) + p2(-24)) * sign]), 0.0), &v(2.0 * sign));
    }
    p.add("fasi-f16-output-rounds-to-nearest", S, "a = 2^-24 twice, b = 2^-1, 2^-2: 3/4·2^-24 rounds to 2^-24 in f16", dot(F16, F16, 4, &[(0, p2(-24), 0.5), (1, p2(-24), 0.25)], 0.0), &v(p2(-24)));
    p.add("fasi-no-guard-digit", S, "b11 = 1, c = -1+2^-24: d = 2^-23 (relative error 1)", dot(F16, F32, 4, &ones_times(&[1.0]), -1.0 + p2(-24)), &v(p2(-23)));
    p.add("fasi-normalise-at-end", S, "c = 1-2^-24, column of B = 2^-24: d = 1+2^-23", dot(F16, F32, 4, &ones_times(&[p2(-24); 4]), 1.0 - p2(-24)), &v(1.0 + p2(-23)));
    p.add("fasi-non-monotonic", S, "c = 1, column of B = 2^-24: d = 1, less than with c = 1-2^-24", dot(F16, F32, 4, &ones_times(&[p2(-24); 4]), 1.0), &v(1.0));
    p.add("fasi-no-normalise-subtraction", S, "c = -1+2^-24, B column 1 and -2^-24: d = 2^-23", dot(F16, F32, 4, &ones_times(&[1.0, -p2(-24)]), -1.0 + p2(-24)), &v(p2(-23)));
    for small_at in 0..4 {
        let mut b = [1.0; 4];
        b[small_at] = p2(-23);
        p.add(format!("fasi-carry-bits-{small_at}"), S, "c = 1+2^-22+2^-23, B column a permutation of 1,1,1,2^-23: d = 4+2^-21", dot(F16, F32, 4, &ones_times(&b), 1.0 + p2(-22) + p2(-23)), &v(4.0 + p2(-21)));
    }
    p.add("fasi-final-rounding-rz", S, "c = 1+2^-22+2^-23, B column 1,1,1,1: d = 5 (RZ in the final normalisation)", dot(F16, F32, 4, &ones_times(&[1.0; 4]), 1.0 + p2(-22) + p2(-23)), &v(5.0));
}

/// Hickmann & Bradford, "Experimental analysis of matrix multiplication functional units"
/// (slides), V100 with 16x16x16 wmma: k = 16 in four groups T0..T3 of 4 products.
fn hickmann(p: &mut Builder) {
    use Format::{F16, F32};
    const S: &str = "Hickmann & Bradford";
    let v = |x: f64| [("v100-hickmann", x)];
    let big = p2(15);
    p.add("hb-big-minus-big-small", S, "2^30 + -2^30 + 2^-14 in one group: always 0.0 (no internal rounding)", dot(F16, F32, 16, &[(0, big, big), (1, -big, big), (2, p2(-7), p2(-7))], 0.0), &v(0.0));
    p.add("hb-small-big-minus-big", S, "2^-14 + 2^30 + -2^30: 0.0 too, so not a chain of FMAs", dot(F16, F32, 16, &[(0, p2(-7), p2(-7)), (1, big, big), (3, -big, big)], 0.0), &v(0.0));
    for (n, want) in [(7, p2(7)), (6, 0.0)] {
        p.add(format!("hb-datapath-width-{n}"), S, format!("2^30 + -2^30 + 2^{n}: the small term survives only above the 24-bit window"), dot(F16, F32, 16, &[(0, big, big), (1, -big, big), (2, p2(n / 2), p2(n - n / 2))], 0.0), &v(want));
    }
    for (s, tag) in [(1.0, "pos"), (-1.0, "neg")] {
        p.add(format!("hb-fp32-round-{tag}"), S, "±(1 + 2^-23 + 2^-24): no round up, so truncated", dot(F16, F32, 16, &[(0, s, 1.0), (1, s * p2(-12), p2(-11)), (2, s * p2(-12), p2(-12))], 0.0), &v(s * (1.0 + p2(-23))));
        p.add(format!("hb-integer-overflow-{tag}"), S, "±(1 + 1 + 2^-23 + 2^-24): normalised and truncated to 24 bits", dot(F16, F32, 16, &[(0, s, 1.0), (1, s, 1.0), (2, s * p2(-12), p2(-11)), (3, s * p2(-12), p2(-12))], 0.0), &v(s * 2.0));
        p.add(format!("hb-fp16-round-{tag}"), S, "±(1 + 2^-10 + 2^-11) into f16: RNE gives 1 + 2^-9", dot(F16, Format::F16, 16, &[(0, s, 1.0), (1, s * p2(-5), p2(-5)), (2, s * p2(-5), p2(-6))], 0.0), &v(s * (1.0 + p2(-9))));
        for n in [-12, -30] {
            p.add(format!("hb-fp16-datapath-{}-{tag}", -n), S, format!("±(1 + 2^-10 + 2^{n}) into f16 rounds to ±(1 + 2^-10)"), dot(F16, Format::F16, 16, &[(0, s, 1.0), (1, s * p2(-5), p2(-5)), (2, s * p2(n / 2), p2(n - n / 2))], 0.0), &v(s * (1.0 + p2(-10))));
        }
    }
    // "Division found when inputs permuted between groups (T0,T1) and (T2,T3)": inside a fused
    // group the tail is truncated, across groups the partial results are added with RNE.
    let tail = |k0: usize| vec![(0, 1.0, 1.0), (k0, p2(-12), p2(-12)), (k0 + 1, p2(-12), p2(-13))];
    p.add("hb-same-group-truncates", S, "1 in T0, 2^-24 + 2^-25 in T1: one fused group, truncated to 1", dot(F16, F32, 16, &tail(4), 0.0), &v(1.0));
    p.add("hb-across-groups-rne", S, "1 in T0, 2^-24 + 2^-25 in T2: groups added with RNE, 1 + 2^-23", dot(F16, F32, 16, &tail(8), 0.0), &v(1.0 + p2(-23)));
    p.add("hb-c-added-rne", S, "c = 1, 2^-24 + 2^-25 in T0: C is added to the products with RNE, 1 + 2^-23", dot(F16, F32, 16, &[(0, p2(-12), p2(-12)), (1, p2(-12), p2(-13))], 1.0), &v(1.0 + p2(-23)));
}

/// FTTN feature-targeted tests (§III) with the outcomes that Table III reports for NVIDIA.
fn fttn(p: &mut Builder) {
    use Format::{Bf16, F16, F32, F64, Tf32};
    const S: &str = "FTTN §III, Table III";
    let all3 = |x: f64| [("v100", x), ("a100", x), ("h100", x)];
    let amp_hop = |x: f64| [("a100", x), ("h100", x)];
    // Subnormal support: every NVIDIA entry in Table III is ✓.
    p.add("fttn-si-no-f16", S, "T_si_no: subnormal a, normal product: handled", dot(F16, F32, 16, &[(0, p2(-24), p2(10))], 0.0), &all3(p2(-14)));
    p.add("fttn-si-no-bf16", S, "T_si_no: subnormal a, normal product: handled", dot(Bf16, F32, 16, &[(0, p2(-133), p2(10))], 0.0), &amp_hop(p2(-123)));
    p.add("fttn-si-no-tf32", S, "T_si_no: subnormal a, normal product: handled", dot(Tf32, F32, 8, &[(0, p2(-136), p2(20))], 0.0), &amp_hop(p2(-116)));
    p.add("fttn-si-no-f64", S, "T_si_no: subnormal a, normal product: handled", dot(F64, F64, 4, &[(0, p2(-1074), p2(60))], 0.0), &amp_hop(p2(-1014)));
    p.add("fttn-ni-so-f16", S, "T_ni_so: normal inputs, subnormal f16 result: handled", dot(F16, F16, 16, &[(0, p2(-8), p2(-8))], 0.0), &all3(p2(-16)));
    p.add("fttn-ni-so-bf16", S, "T_ni_so: normal inputs, subnormal f32 result: handled", dot(Bf16, F32, 16, &[(0, p2(-70), p2(-70))], 0.0), &amp_hop(p2(-140)));
    p.add("fttn-ni-so-tf32", S, "T_ni_so: normal inputs, subnormal f32 result: handled", dot(Tf32, F32, 8, &[(0, p2(-70), p2(-70))], 0.0), &amp_hop(p2(-140)));
    p.add("fttn-ni-so-f64", S, "T_ni_so: normal inputs, subnormal f64 result: handled", dot(F64, F64, 4, &[(0, p2(-540), p2(-540))], 0.0), &amp_hop(p2(-1080)));
    p.add("fttn-sa-f32", S, "T_sa: subnormal c alone passes through", dot(F16, F32, 16, &[], p2(-149)), &all3(p2(-149)));
    p.add("fttn-sa-f64", S, "T_sa: subnormal c alone passes through", dot(F64, F64, 4, &[], p2(-1074)), &amp_hop(p2(-1074)));
    // T_1bit: 1 - half an ulp survives only with an extra bit (V100: 0, A100: 1, H100: >= 2).
    let (half, q) = (p2(-12), p2(-12));
    for (fmt, k, tag) in [(F16, 16, "f16"), (Bf16, 16, "bf16"), (Tf32, 8, "tf32")] {
        let case = dot(fmt, F32, k, &[(0, half, -q)], 1.0);
        let mut want = vec![("a100", 1.0 - p2(-24)), ("h100", 1.0 - p2(-24))];
        if fmt == F16 {
            want.push(("v100", 1.0));
        }
        p.add(format!("fttn-1bit-{tag}"), S, "T_1bit: 1 - 2^-1·ulp keeps the half ulp iff there is an extra bit", case, &want);
    }
    p.add("fttn-1bit-f64", S, "T_1bit: 1 - 2^-1·ulp keeps the half ulp (FP64: 3 extra bits)", dot(F64, F64, 4, &[(0, p2(-27), -p2(-26))], 1.0), &amp_hop(1.0 - p2(-53)));
    // T_rnd_dir: a half-ulp tie on an odd last bit separates truncation from RTN-TE.
    for (s, tag) in [(1.0, "pos"), (-1.0, "neg")] {
        let c = s * (1.0 + p2(-23));
        let trunc = s * (1.0 + p2(-23));
        let rtn = s * (1.0 + p2(-22));
        p.add(format!("fttn-rnd-dir-f16-{tag}"), S, "T_rnd_dir: (1+ulp) + ulp/2 is truncated (f16: truncate)", dot(F16, F32, 16, &[(0, s * half, q)], c), &[("v100", trunc), ("a100", trunc), ("h100", trunc)]);
        p.add(format!("fttn-rnd-dir-bf16-{tag}"), S, "T_rnd_dir: (1+ulp) + ulp/2 is truncated (bf16: truncate)", dot(Bf16, F32, 16, &[(0, s * half, q)], c), &amp_hop(trunc));
        p.add(format!("fttn-rnd-dir-tf32-{tag}"), S, "T_rnd_dir: tf32 rounds RTN-TE on A100, truncates on H100", dot(Tf32, F32, 8, &[(0, s * half, q)], c), &[("a100", rtn), ("h100", trunc)]);
        p.add(format!("fttn-rnd-dir-f64-{tag}"), S, "T_rnd_dir: FP64 rounds RTN-TE", dot(F64, F64, 4, &[(0, s * p2(-27), p2(-26))], s * (1.0 + p2(-52))), &amp_hop(s * (1.0 + p2(-51))));
    }
    p.add("fttn-3bits-f64", S, "T_3bits_fin_rnd: 1 + (2^-53 + 2^-56) rounds up only with a sticky bit (FP64: 3 bits, RTN-TE)", dot(F64, F64, 4, &[(0, 1.0 + p2(-3), p2(-53))], 1.0), &amp_hop(1.0 + p2(-52)));
    p.add("fttn-prod-f64", S, "T_prod: (1+3·2^-52)(1+2^-2) - 1.25: the product is rounded RTN-TE first", dot(F64, F64, 4, &[(0, 1.0 + 3.0 * p2(-52), 1.25)], -1.25), &amp_hop(p2(-50)));
    // T_pres_extra_acc: 1 + three half-ulps is 1 + ulp if the extra bits are kept while accumulating.
    for (fmt, tag) in [(F16, "f16"), (Bf16, "bf16")] {
        let case = dot(fmt, F32, 16, &[(0, half, q), (1, half, q), (2, half, q)], 1.0);
        let mut want = vec![("a100", 1.0 + p2(-23)), ("h100", 1.0 + p2(-23))];
        if fmt == F16 {
            want.push(("v100", 1.0));
        }
        p.add(format!("fttn-pres-extra-acc-{tag}"), S, "T_pres_extra_acc: 1 + 3·(ulp/2) gives 1 + ulp iff the extra bits are kept", case, &want);
    }
    // T_acc_order: 1 + four quarter-ulps in every placement gives one answer: order not controllable.
    for one_at in 0..5 {
        // Positions 0..4 are products, position 4 is C; 2^-25 = 2^-12 · 2^-13.
        let prods: Vec<(usize, f64, f64)> =
            (0..4).map(|k| if k == one_at { (k, 1.0, 1.0) } else { (k, p2(-12), p2(-13)) }).collect();
        let c = if one_at == 4 { 1.0 } else { p2(-25) };
        p.add(format!("fttn-acc-order-{one_at}"), S, "T_acc_order: 1 + 4·(ulp/4) in any placement: one answer (V100, A100 lose the quarters; H100 keeps them)", dot(F16, F32, 16, &prods, c), &[("v100", 1.0), ("a100", 1.0), ("h100", 1.0 + p2(-23))]);
    }
    // T_blk_fma_width (Algorithm 1, in a form that also works without extra bits): c = 1-ulp/2,
    // ulp/2 at k = 0, 1 and a third at k = i. All three in c's block give 1+ulp; once the third
    // falls into the next block the result is 1. The first such i is the block width.
    for (fmt, k, tag, widths) in [
        (F16, 32, "f16", vec![("v100", 4.0), ("a100", 8.0), ("h100", 16.0)]),
        (Bf16, 32, "bf16", vec![("a100", 8.0), ("h100", 16.0)]),
        (Tf32, 16, "tf32", vec![("a100", 4.0), ("h100", 4.0)]),
    ] {
        for i in 2..k {
            let case = dot(fmt, F32, k, &[(0, half, q), (1, half, q), (i, half, q)], 1.0 - p2(-24));
            let want: Vec<(&'static str, f64)> = widths
                .iter()
                .map(|&(m, w)| (m, if (i as f64) < w { 1.0 + p2(-23) } else { 1.0 }))
                .collect();
            p.add(format!("fttn-blk-fma-width-{tag}-{i}"), S, format!("T_blk_fma_width: third ulp/2 at k = {i}"), case, &want);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_ids_are_unique_and_every_probe_names_a_model() {
        let probes = all();
        let mut ids: Vec<_> = probes.iter().map(|p| p.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), probes.len());
        assert!(probes.iter().all(|p| !p.published.is_empty()));
        assert!(probes.len() > 100, "{}", probes.len());
    }
}
