//! Many tiles of one shape and formats (an npz batch): D of each, as [`Emulator::run_validated`]
//! gives it, with what depends only on the shape and formats worked out once.
//!
//! On a small tile (m16n8k16) that work (the model's arithmetic looked up, the CPU paths and
//! the lane kernel ruled in or out, the window and the kernel chosen, the block layout, the
//! tile's own D vector) cost about as much as converting its operands. Where the float kernel
//! computes the whole tile and its bits are D as they are (every dense sm90 float path), each
//! tile here is only its operands converted and the kernel run, D written straight into the
//! caller's slice. A tile whose kernel hands an element back (a NaN whose payload the model
//! passes on, a zero whose sign needs the zero rules), and every tile of another kind, goes
//! through [`Emulator::run_validated`], the specification.

use super::*;

impl Emulator {
    /// D of every tile of `cases`, one after another in `out` (m·n elements each), each what
    /// [`Emulator::run_validated`] gives. The tiles share the first one's shape and formats
    /// (those that do not go through `run_validated` alone) and were checked when read. The
    /// error names the tile (its index in `cases`).
    pub fn run_many_validated(&self, cases: &[MmaCase], out: &mut [u64]) -> Result<(), (usize, EmulatorError)> {
        let Some(first) = cases.first() else { return Ok(()) };
        let size = first.m * first.n;
        assert_eq!(out.len(), cases.len() * size, "out holds m·n elements a tile");
        let plan = WholeTilePlan::of(self, first);
        // The operand arrays, reused from tile to tile.
        let mut bufs = FloatBuffers::default();
        for (t, (case, d)) in cases.iter().zip(out.chunks_exact_mut(size)).enumerate() {
            if plan.as_ref().is_some_and(|p| p.fits(case) && p.run(case, d, &mut bufs)) {
                continue;
            }
            d.copy_from_slice(&self.run_validated(case).map_err(|e| (t, e))?);
        }
        Ok(())
    }

    /// [`Emulator::run_many_validated`] for tiles given as their operands' little-endian
    /// elements (`[A, B, C]`, each its bytes and element width: an npz batch's members as they
    /// lie in the file), each of the shape and formats of `like` and each element a valid
    /// pattern of its format (checked by the caller: [`crate::npz::Batch::le_tiles`]). A tile
    /// the whole-tile plan takes needs no case; every other one (no plan for `like`, or the
    /// kernel handed an element back) goes to `alone(t, d)`, which makes tile `t`'s case and
    /// writes its D (through [`Emulator::run_validated`]).
    pub fn run_many_le<'a, E>(
        &self,
        like: &MmaCase,
        tiles: impl IntoIterator<Item = [(&'a [u8], usize); 3]>,
        out: &mut [u64],
        mut alone: impl FnMut(usize, &mut [u64]) -> Result<(), E>,
    ) -> Result<(), E> {
        let size = like.m * like.n;
        let plan = WholeTilePlan::of(self, like);
        let mut bufs = FloatBuffers::default();
        for (t, (ops, d)) in tiles.into_iter().zip(out.chunks_exact_mut(size)).enumerate() {
            let [a, b, c] = ops.map(|(bytes, width)| Patterns::Le(bytes, width));
            if plan.as_ref().is_some_and(|p| p.run_from(like, [a, b, c], d, &mut bufs)) {
                continue;
            }
            alone(t, d)?;
        }
        Ok(())
    }
}

/// What a tile of one shape and formats needs when the float kernel computes all of it and its
/// bits are D: the same decisions [`Emulator::run_validated`] and [`TileRun::new`] make for
/// such a tile, made once.
struct WholeTilePlan<'a> {
    ar: &'a Arithmetic,
    window: Window,
    kernel: super::super::lanes::FloatTileFn,
    /// The shape and formats it was made for.
    kind: (Format, Format, Format, Format, usize, usize, usize),
    /// D's zeros made +0 (`zero_sign = "unsigned"`).
    unsigned: bool,
}

fn kind(case: &MmaCase) -> (Format, Format, Format, Format, usize, usize, usize) {
    (case.a_fmt, case.b_fmt, case.c_fmt, case.d_fmt, case.m, case.n, case.k)
}

impl<'a> WholeTilePlan<'a> {
    /// The plan for tiles like `case`, where `run_validated` would take such a tile to
    /// [`TileRun::tile`]'s float kernel with D direct; `None` otherwise.
    fn of(emu: &'a Emulator, case: &MmaCase) -> Option<Self> {
        if emu.general_only || case.meta.is_some() || case.scales.is_some() || case.c_fmt.is_integer() {
            return None;
        }
        let ar = emu.model.arithmetic(case.a_fmt);
        let acc_fmt = ar.accumulator.format.unwrap_or(case.d_fmt);
        let lane_plan = LanePlan::of(&ar.blocks, case.k);
        let whole = emu.cpu_path(ar, case).is_none()
            && lane_plan.order.is_none()
            && lanes_apply(ar, case, acc_fmt, lane_plan.full_blocks)
            && cpu_c_after(ar, case, acc_fmt).is_none()
            && direct(ar, case, acc_fmt);
        if !whole {
            return None;
        }
        let (window, Kernel::Float(kernel)) = lane_setup(ar, case, acc_fmt) else { return None };
        Some(WholeTilePlan { ar, window, kernel, kind: kind(case), unsigned: ar.specials.zero_sign == ZeroSign::Unsigned })
    }

    fn fits(&self, case: &MmaCase) -> bool {
        kind(case) == self.kind && case.meta.is_none() && case.scales.is_none()
    }

    /// D of `case` into `d` (its operands in `bufs`); false (and `d` unspecified) where the
    /// kernel handed an element back, for the general path.
    fn run(&self, case: &MmaCase, d: &mut [u64], bufs: &mut FloatBuffers) -> bool {
        self.run_from(case, [Patterns::Bits(&case.a), Patterns::Bits(&case.b), Patterns::Bits(&case.c)], d, bufs)
    }

    /// [`WholeTilePlan::run`] of a tile of `like`'s shape and formats, from its patterns.
    fn run_from(&self, like: &MmaCase, operands: [Patterns; 3], d: &mut [u64], bufs: &mut FloatBuffers) -> bool {
        bufs.fill_from(self.ar, like, operands, None, false);
        (self.kernel)(&dense_float_tile(self.ar, like, bufs.arrays(), &self.window), d);
        if any_general(d) {
            return false;
        }
        if self.unsigned {
            unsigned_zeros(like.d_fmt, d);
        }
        true
    }
}

simd_where_available! {
    /// Whether the kernel handed some element of `d` back (a fold over every element, which
    /// vectorises, not a search that stops at the first).
    fn any_general(d: &[u64]) -> bool {
        d.iter().fold(0u64, |any, &x| any | (x == GENERAL) as u64) != 0
    }
}
