//! The diagonal of a square case, D(p, p) for every p: independent dot products (row p of A
//! against column p of B, plus C(p, p)) at the cost of P of them rather than the P² of the
//! whole tile. What the library emulator needs for elements sampled across a large GEMM, each
//! in its own row and column.
//!
//! On the float lane kernel each dot product takes a lane of its own: the kernel reads A and B
//! only through the products `a·b` (and, with field-sum keys, `2^field(a)·2^field(b)`), so a
//! tile whose A is all ones and whose B holds each lane's products in f64 (`fl(a·b)`, the value
//! the kernel would have formed) gives every lane exactly the sums of its own dot product.
//! Elements the kernel hands back, and D's conversion where it is not direct, go through the
//! general path on the original case, as in a whole tile.

use super::*;

impl Emulator {
    /// D(p, p) for p in 0..min(m, n): what [`Emulator::run`] gives on the diagonal. Each
    /// element costs one dot product; on the float lane kernel eight run side by side.
    pub fn run_diagonal(&self, case: &MmaCase) -> Result<Vec<u64>, EmulatorError> {
        case.validate()?;
        let count = case.m.min(case.n);
        let ar = self.model.arithmetic(case.a_fmt);
        if case.meta.is_some() || case.scales.is_some() {
            return (0..count).map(|p| self.run_element(case, p, p)).collect();
        }
        let mut d = match self.cpu_path(ar, case) {
            // The CPU's own FMA chains, element by element; NaN results through the general path.
            Some(CpuPath::FmaChain) => {
                let fast = super::super::fma_chain::diagonal(ar, case, &chain_order(&ar.blocks, case.k), count);
                general_where_none(ar, case, fast, |p| (p, p))?
            }
            // Integer cases and the CPU's chains of pairs: each element as a 1×1 case, which
            // those paths compute directly.
            Some(CpuPath::PairSums) => return (0..count).map(|p| Ok(self.run(&element_case(case, p, p))?[0])).collect(),
            None if case.c_fmt.is_integer() => return (0..count).map(|p| Ok(self.run(&element_case(case, p, p))?[0])).collect(),
            None => {
                let mut tile = TileRun::new(ar, case)?;
                match self.general_only {
                    true => (0..count).map(|p| tile.element(p, p)).collect(),
                    false => tile.diagonal(count),
                }
            }
        };
        if ar.specials.zero_sign == ZeroSign::Unsigned {
            unsigned_zeros(case.d_fmt, &mut d);
        }
        Ok(d)
    }
}

/// Element (i, j) of `case` as a 1×1 case of its own (no sparsity, no scales).
fn element_case(case: &MmaCase, i: usize, j: usize) -> MmaCase {
    let a = case.a[i * case.k..(i + 1) * case.k].to_vec();
    let b = (0..case.k).map(|kk| case.b_at(kk, j)).collect();
    MmaCase { m: 1, n: 1, a, b, c: vec![case.c_at(i, j)], meta: None, scales: None, extra: Default::default(), ..*case }
}

impl TileRun<'_> {
    /// D(p, p) for p below `count`: the float kernel with a lane per element where it is the
    /// kernel chosen; otherwise the integer kernel's chunk holding each, or the general path.
    fn diagonal(&mut self, count: usize) -> Vec<u64> {
        if let Some(d) = self.float_diagonal(count) {
            return d;
        }
        (0..count).map(|p| self.one(p, p)).collect()
    }

    fn float_diagonal(&mut self, count: usize) -> Option<Vec<u64>> {
        let Some(LanePrep { operands: LaneOperands::Float { a, b, fa, fb, c, kernel }, window }) = &self.lanes else {
            return None;
        };
        let (n, k) = (self.case.n, self.case.k);
        let chunks = count.div_ceil(LANES);
        // Lane l of chunk q is element p = 8q + l: its products in B, A all ones. Column p of
        // the prepared B is already lane l of chunk q.
        let mut prod = vec![[0f64; LANES]; chunks * k];
        let mut fprod = if window.field_sum { vec![[0f64; LANES]; chunks * k] } else { Vec::new() };
        for q in 0..chunks {
            let width = LANES.min(count - q * LANES);
            let rows = q * LANES * k;
            for kk in 0..k {
                for l in 0..width {
                    prod[q * k + kk][l] = a[rows + l * k + kk] * b[q * k + kk][l];
                }
            }
            if window.field_sum {
                for kk in 0..k {
                    for l in 0..width {
                        fprod[q * k + kk][l] = fa[rows + l * k + kk] * fb[q * k + kk][l];
                    }
                }
            }
        }
        let ones = vec![1f64; k];
        let fones: &[f64] = if window.field_sum { &ones } else { &[] };
        let c_diag: Vec<f64> = (0..count).map(|p| c[p * n + p]).collect();
        let block_width = if self.ar.blocks.width == 0 { k } else { self.ar.blocks.width };
        let reverse = self.ar.blocks.order == BlockOrder::Reverse;
        let c_floor = crate::format::pow2(self.case.c_fmt.emin());
        let mut d = vec![0u64; count];
        let tile = FloatTile { a: &ones, b: &prod, fa: fones, fb: &fprod, c_floor, c: &c_diag, m: 1, n: count, k, block_width, reverse, w: window, b_picks: &[] };
        kernel(&tile, &mut d);
        let direct = self.direct();
        for (p, x) in d.iter_mut().enumerate() {
            *x = self.settle_float(p, p, *x, direct);
        }
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;

    /// The flat chain order is the blocks' members one after another, whatever the width,
    /// order and interleaving.
    #[test]
    fn chain_order_is_the_blocks_in_turn() {
        let mut checked = 0;
        for width in [0, 1, 3, 4, 16] {
            for order in ["forward", "reverse"] {
                for interleave in [0, 2] {
                    let toml = format!("[blocks]\nwidth = {width}\nc = \"fused\"\norder = \"{order}\"\ninterleave = {interleave}\n[align]\nmode = \"truncate\"\nextra_bits = 3\n[accumulator]\nformat = \"f32\"\nrounding = \"rne\"\n");
                    // (Runs of two need blocks wider than two.)
                    let Ok(model) = crate::Model::from_toml("t", &toml) else {
                        assert!(interleave != 0 && width <= interleave, "{toml}");
                        continue;
                    };
                    let blocks = &model.arithmetic(Format::F16).blocks;
                    for k in 1..40 {
                        assert_eq!(chain_order(blocks, k), block_members(blocks, k).concat(), "width {width}, {order}, interleave {interleave}, k {k}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked >= 8 * 39 * 2, "{checked}");
    }

    /// The lane kernel's plan (made without each block's members where the blocks are runs of
    /// K) is the layout `lane_layout` makes from the members, for every width, order and
    /// interleaving; interleaved blocks are judged full as the members say.
    #[test]
    fn lane_plan_is_the_members_layout() {
        let mut checked = 0;
        for width in [0, 1, 3, 4, 8, 16] {
            for order in ["forward", "reverse"] {
                for interleave in [0, 2] {
                    let toml = format!("[blocks]\nwidth = {width}\nc = \"fused\"\norder = \"{order}\"\ninterleave = {interleave}\n[align]\nmode = \"truncate\"\nextra_bits = 3\n[accumulator]\nformat = \"f32\"\nrounding = \"rne\"\n");
                    let Ok(model) = crate::Model::from_toml("t", &toml) else { continue };
                    let blocks = &model.arithmetic(Format::F16).blocks;
                    for k in 1..40 {
                        let plan = LanePlan::of(blocks, k);
                        let members = block_members(blocks, k);
                        let (layout, ranges) = lane_layout(&members, blocks.order);
                        let at = format!("width {width}, {order}, interleave {interleave}, k {k}");
                        assert_eq!(plan.ranges, ranges, "{at}");
                        assert_eq!(plan.order.unwrap_or_else(|| (0..k).collect()), layout, "{at}");
                        if interleave != 0 {
                            assert_eq!(plan.full_blocks, members.len() == 1 || members.iter().all(|b| b.len() == blocks.width), "{at}");
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked >= 12 * 39, "{checked}");
    }
}
