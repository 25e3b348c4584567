//! The order in which a kernel adds its chains' partial sums: a binary tree over chain indices,
//! each addition rounded in the compute format. FPRev probes (`scripts/torch-fprev.py`) measure
//! these trees on the GPU; the shapes that occur are built here from a few parameters.

use serde::{Deserialize, Serialize};

/// A summation tree in postfix form: `Leaf(i)` pushes chain i's partial sum, `Add` pops two
/// and pushes their rounded sum.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SumTree(Vec<Node>);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Node {
    Leaf(usize),
    Add,
}

/// How a group of partial sums is added, as a model file names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    /// ((p0 + p1) + p2) + …
    #[default]
    InOrder,
    /// A shared-memory or shuffle tree over a power-of-two count: x[t] += x[t + s] for
    /// s = n/2, …, 1 (lane 0 of an xor butterfly adds the same pairs).
    Butterfly,
    /// cuBLASLt's in-kernel split-K reduction of `customOption=1` (DGEMM 35/36, SGEMM 55):
    /// with h = ceil(n/2) and r = n - 1, (p0 + p_h), then + p_r, then + (p_i + p_{i+h}) for
    /// i = 1 … h-1, leaving out r and members past the end.
    PairedHalves,
    /// Partial c joins group c mod 4; each group is added in order, then the groups in order.
    Groups4,
    /// Adjacent pairs first ((p0 + p1), (p2 + p3), …: a thread's two accumulators), then the
    /// pair sums by `Butterfly` (the f32 dot kernel, whose threads load two k at a time).
    PairsButterfly,
    /// The dot kernel's one-block reduction (`reduce_1Block_kernel<T, 128, …>`; FPRev at 5 to
    /// 124 partials): thread t < 128 adds p_t, p_{t+128}, … in order, then x_t += x_{t+64} and
    /// x_t += x_{t+32} (where present), then the 32 x_t by `Groups4`.
    DotReduce,
    /// Pairs from the end, level by level: (p_{n-2} + p_{n-1}), (p_{n-4} + p_{n-3}), … then
    /// those sums likewise, a part left over at the front joining one level up (segment-K's
    /// reduction, TF32 algorithm 43 with its split chosen at run time; FPRev at 2 to 7 segments:
    /// 5 read p0 + ((p1 + p2) + (p3 + p4))).
    PairsFromEnd,
}

/// (p0 + p1), (p2 + p3), …; an odd last part passes through alone.
fn adjacent_pairs(parts: Vec<SumTree>) -> Vec<SumTree> {
    let mut pairs = Vec::with_capacity(parts.len().div_ceil(2));
    let mut it = parts.into_iter();
    while let Some(lo) = it.next() {
        pairs.push(match it.next() {
            Some(hi) => lo.add(hi),
            None => lo,
        });
    }
    pairs
}

impl SumTree {
    pub fn leaf(i: usize) -> SumTree {
        SumTree(vec![Node::Leaf(i)])
    }

    fn add(mut self, other: SumTree) -> SumTree {
        self.0.extend(other.0);
        self.0.push(Node::Add);
        self
    }

    /// `parts` added by `how` (`parts` non-empty).
    pub fn combine(parts: Vec<SumTree>, how: Combine) -> SumTree {
        assert!(!parts.is_empty(), "a sum of nothing");
        let in_order = |parts: Vec<SumTree>| parts.into_iter().reduce(SumTree::add).expect("non-empty");
        match how {
            Combine::InOrder => in_order(parts),
            Combine::Butterfly => {
                let mut v: Vec<Option<SumTree>> = parts.into_iter().map(Some).collect();
                let mut s = v.len().next_power_of_two() / 2;
                while s >= 1 {
                    for t in 0..s {
                        if let Some(hi) = v.get_mut(t + s).and_then(Option::take) {
                            let lo = v[t].take().expect("lower half present");
                            v[t] = Some(lo.add(hi));
                        }
                    }
                    s /= 2;
                }
                v[0].take().expect("lane 0")
            }
            Combine::PairedHalves => {
                let n = parts.len();
                let (h, r) = (n.div_ceil(2), n - 1);
                let mut v: Vec<Option<SumTree>> = parts.into_iter().map(Some).collect();
                let mut acc = v[0].take().expect("first");
                if h != r && h < n {
                    acc = acc.add(v[h].take().expect("p_h"));
                }
                if r > 0 {
                    acc = acc.add(v[r].take().expect("p_r"));
                }
                for i in 1..h {
                    let Some(lo) = v[i].take() else { continue };
                    let pair = match (i + h != r).then(|| v.get_mut(i + h).and_then(Option::take)).flatten() {
                        Some(hi) => lo.add(hi),
                        None => lo,
                    };
                    acc = acc.add(pair);
                }
                acc
            }
            Combine::PairsButterfly => SumTree::combine(adjacent_pairs(parts), Combine::Butterfly),
            Combine::DotReduce => {
                let mut x: Vec<Option<SumTree>> = vec![None; 128];
                for (c, p) in parts.into_iter().enumerate() {
                    let t = c % 128;
                    x[t] = Some(match x[t].take() {
                        Some(acc) => acc.add(p),
                        None => p,
                    });
                }
                for s in [64, 32] {
                    for t in 0..s {
                        if let Some(hi) = x[t + s].take() {
                            let lo = x[t].take().expect("lower thread present");
                            x[t] = Some(lo.add(hi));
                        }
                    }
                }
                SumTree::combine(x.into_iter().take(32).flatten().collect(), Combine::Groups4)
            }
            Combine::PairsFromEnd => {
                let mut level = parts;
                while level.len() > 1 {
                    // Pairs aligned to the end: an odd count leaves the first part over.
                    let rest = level.split_off(level.len() % 2);
                    level.extend(adjacent_pairs(rest));
                }
                level.pop().expect("non-empty")
            }
            Combine::Groups4 => {
                let mut groups: Vec<Vec<SumTree>> = vec![vec![]; 4];
                for (c, p) in parts.into_iter().enumerate() {
                    groups[c % 4].push(p);
                }
                in_order(groups.into_iter().filter(|g| !g.is_empty()).map(in_order).collect())
            }
        }
    }

    /// Chains `first .. first + n` as leaves added by `how`.
    pub fn over(first: usize, n: usize, how: Combine) -> SumTree {
        SumTree::combine((first..first + n).map(SumTree::leaf).collect(), how)
    }

    /// The sum of `partials` in this tree's order, `add` rounding each addition.
    pub fn eval(&self, partials: &[f64], add: impl Fn(f64, f64) -> f64) -> f64 {
        let mut stack: Vec<f64> = Vec::with_capacity(16);
        for node in &self.0 {
            match *node {
                Node::Leaf(i) => stack.push(partials[i]),
                Node::Add => {
                    let y = stack.pop().expect("two operands");
                    let x = stack.pop().expect("two operands");
                    stack.push(add(x, y));
                }
            }
        }
        stack.pop().expect("one result")
    }

    /// The summed `weight` of the leaves under the lowest common ancestor of leaves `a` and
    /// `b` (a ≠ b): what an FPRev probe of one term in each measures.
    pub fn lca_weight(&self, a: usize, b: usize, weight: &[usize]) -> usize {
        let mut stack: Vec<(usize, bool, bool)> = Vec::with_capacity(16);
        for node in &self.0 {
            match *node {
                Node::Leaf(i) => stack.push((weight[i], i == a, i == b)),
                Node::Add => {
                    let y = stack.pop().expect("two operands");
                    let x = stack.pop().expect("two operands");
                    let z = (x.0 + y.0, x.1 || y.1, x.2 || y.2);
                    if z.1 && z.2 {
                        return z.0;
                    }
                    stack.push(z);
                }
            }
        }
        stack.pop().map_or(0, |r| r.0)
    }

    /// [`SumTree::lca_weight`] of leaf `a` with every leaf, in one pass: `out[b]` for the
    /// `n = weight.len()` leaves 0..n (0 at b = a). An addition with `a` on one side is the
    /// lowest common ancestor of `a` and every leaf on the other; a probe file asks for `a`
    /// against all of hundreds of partial sums, and one walk each would cost n².
    pub fn lca_weights_from(&self, a: usize, weight: &[usize]) -> Vec<usize> {
        let mut out = vec![0; weight.len()];
        // Each operand on the stack: its summed weight and, unless `a` is under it, its leaves.
        let mut stack: Vec<(usize, Option<Vec<usize>>)> = Vec::new();
        for node in &self.0 {
            match *node {
                Node::Leaf(i) => stack.push((weight[i], (i != a).then(|| vec![i]))),
                Node::Add => {
                    let (yw, ys) = stack.pop().expect("two operands");
                    let (xw, xs) = stack.pop().expect("two operands");
                    let w = xw + yw;
                    let leaves = match (xs, ys) {
                        (Some(mut xs), Some(mut ys)) => {
                            if xs.len() < ys.len() {
                                std::mem::swap(&mut xs, &mut ys);
                            }
                            xs.extend(ys);
                            Some(xs)
                        }
                        (Some(other), None) | (None, Some(other)) => {
                            other.into_iter().for_each(|b| out[b] = w);
                            None
                        }
                        (None, None) => None,
                    };
                    stack.push((w, leaves));
                }
            }
        }
        out
    }

    /// The tree as text, e.g. `((0+2)+1)`: for reports and tests.
    pub fn show(&self) -> String {
        let mut stack: Vec<String> = vec![];
        for node in &self.0 {
            match *node {
                Node::Leaf(i) => stack.push(i.to_string()),
                Node::Add => {
                    let y = stack.pop().expect("two operands");
                    let x = stack.pop().expect("two operands");
                    stack.push(format!("({x}+{y})"));
                }
            }
        }
        stack.pop().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The orders FPRev measured on the H100 (scripts/torch-fprev.py).
    #[test]
    fn trees_read_as_measured() {
        let t = |n, how| SumTree::over(0, n, how).show();
        assert_eq!(t(3, Combine::InOrder), "((0+1)+2)");
        assert_eq!(t(2, Combine::PairedHalves), "(0+1)");
        assert_eq!(t(3, Combine::PairedHalves), "((0+2)+1)");
        assert_eq!(t(4, Combine::PairedHalves), "(((0+2)+3)+1)");
        assert_eq!(t(5, Combine::PairedHalves), "((((0+3)+4)+1)+2)");
        assert_eq!(t(8, Combine::PairedHalves), "(((((0+4)+7)+(1+5))+(2+6))+3)");
        assert_eq!(t(4, Combine::Butterfly), "((0+2)+(1+3))");
        assert_eq!(t(8, Combine::Groups4), "((((0+4)+(1+5))+(2+6))+(3+7))");
        assert_eq!(t(8, Combine::DotReduce), t(8, Combine::Groups4));
        assert_eq!(t(8, Combine::PairsButterfly), "(((0+1)+(4+5))+((2+3)+(6+7)))");
        // Segment-K (FPRev, TF32 384x1000x12288 in 5 segments, 1024x256x8192 in 3).
        assert_eq!(t(2, Combine::PairsFromEnd), "(0+1)");
        assert_eq!(t(3, Combine::PairsFromEnd), "(0+(1+2))");
        assert_eq!(t(4, Combine::PairsFromEnd), "((0+1)+(2+3))");
        assert_eq!(t(5, Combine::PairsFromEnd), "(0+((1+2)+(3+4)))");
        assert_eq!(t(6, Combine::PairsFromEnd), "((0+1)+((2+3)+(4+5)))");
        assert_eq!(t(7, Combine::PairsFromEnd), "((0+(1+2))+((3+4)+(5+6)))");
        // ((0+2)+(1+3)) with weights 1, 10, 100, 1000: 0 and 2 meet under (0+2), 0 and 3 at the root.
        let bf = SumTree::over(0, 4, Combine::Butterfly);
        assert_eq!((bf.lca_weight(0, 2, &[1, 10, 100, 1000]), bf.lca_weight(3, 0, &[1, 10, 100, 1000])), (101, 1111));
        // One leaf against all at once agrees with one walk per pair, on every shape of tree.
        let weights: Vec<usize> = (0..13).map(|i| 1 << i).collect();
        for how in [Combine::InOrder, Combine::Butterfly, Combine::PairedHalves, Combine::Groups4, Combine::PairsButterfly, Combine::DotReduce, Combine::PairsFromEnd] {
            for n in [2, 3, 5, 8, 13] {
                let tree = SumTree::over(0, n, how);
                for a in 0..n {
                    let row = tree.lca_weights_from(a, &weights[..n]);
                    for b in (0..n).filter(|&b| b != a) {
                        assert_eq!(row[b], tree.lca_weight(a, b, &weights[..n]), "{how:?} {n}: {a}, {b}");
                    }
                }
            }
        }
        let dot = t(64, Combine::DotReduce);
        assert!(dot.starts_with("(((((((((((0+32)+(4+36))+(8+40))"), "{dot:.60}");
        // 124 partials (FPRev, f64 1x8x32768): p0 meets p64 first, then (p32 + p96).
        let dot = t(124, Combine::DotReduce);
        assert!(dot.starts_with("((((((((((((0+64)+(32+96))+((4+68)+(36+100)))+((8+72)"), "{dot:.60}");
        // 176 slices (SGEMM 5x65x1025): h = 88, the last slice second, then pairs (i, i + 88).
        let big = SumTree::over(0, 176, Combine::PairedHalves).show();
        assert!(big.contains("((0+88)+175)+(1+89))") && big.contains("+(86+174))+87)"), "{big}");
    }

    #[test]
    fn eval_follows_the_tree() {
        let tree = SumTree::over(0, 3, Combine::PairedHalves);
        // (1e16 + -1e16) + 1 = 1, whereas in order (1e16 + 1) + -1e16 = 0.
        assert_eq!(tree.eval(&[1e16, 1.0, -1e16], |x, y| x + y), 1.0);
        assert_eq!(SumTree::over(0, 3, Combine::InOrder).eval(&[1e16, 1.0, -1e16], |x, y| x + y), 0.0);
    }
}
