//! The part of the model space the GPU engine computes: what `kernels/engine.cu` reads as its
//! `EngineModel` argument (same fields, same order), made from a model's `Arithmetic` for one
//! path, or refused with the knob that the engine does not run.

use crate::exec::PathSpec;
use crate::format::{Format, Overflow, Rounding};
use crate::model::{AccRange, AlignExponent, AlignMode, BlockOrder, CPlacement, Model, NanOutput, Normalise, Subnormals, ZeroSign};

/// The engine's knobs, laid out as the CUDA struct (twenty 32-bit integers).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineModel {
    pub window_p: i32,
    pub extra_bits: i32,
    /// 0 truncate, 1 floor, 2 sticky.
    pub mode: i32,
    pub field_sum: i32,
    pub has_floor: i32,
    pub anchor_floor: i32,
    /// -1: unbounded.
    pub carry_bits: i32,
    pub block_width: i32,
    pub reverse: i32,
    pub acc_fmt: i32,
    pub acc_rnd: i32,
    pub acc_ovf: i32,
    pub acc_flush: i32,
    pub in_flush: i32,
    pub c_flush: i32,
    pub out_rnd: i32,
    pub out_ovf: i32,
    pub out_flush: i32,
    pub nan_all_ones: i32,
    /// 0 ieee, 1 positive, 2 unsigned.
    pub zero_sign: i32,
}

// SAFETY: a plain #[repr(C)] struct of i32s, the layout the kernel's `EngineModel` declares.
unsafe impl cudarc::driver::DeviceRepr for EngineModel {}

fn fmt_code(f: Format) -> Option<i32> {
    match f {
        Format::F16 => Some(0),
        Format::Bf16 => Some(1),
        Format::F32 => Some(2),
        _ => None,
    }
}

fn rounding_code(r: Rounding) -> i32 {
    match r {
        Rounding::Rne => 0,
        Rounding::Rz => 1,
        Rounding::Ru => 2,
        Rounding::Rd => 3,
        Rounding::Rna => 4,
        Rounding::Ra => 5,
    }
}

fn overflow_code(o: Overflow) -> i32 {
    match o {
        Overflow::Ieee | Overflow::Wrap => 0,
        Overflow::Saturate => 1,
        Overflow::Infinity => 2,
    }
}

impl EngineModel {
    /// The engine's form of `model` on `path`, or why the engine cannot compute it (the CPU
    /// engine can: `hunt --engine cpu`).
    pub fn new(model: &Model, path: &PathSpec) -> Result<EngineModel, String> {
        let ar = model.arithmetic(path.a_fmt);
        let refuse = |what: &str| Err(format!("the GPU engine does not compute {what} (model {}); hunt with --engine cpu", model.name));
        if !super::gen::supports(path) {
            return Err(format!("the GPU engine runs m16n8k16 paths with f16 or bf16 inputs and f16 or f32 C, not {}; hunt with --engine cpu", path.id));
        }
        let acc = ar.accumulator.format.unwrap_or(path.c_fmt);
        let Some(acc_fmt) = fmt_code(acc) else { return refuse(&format!("an accumulator in {acc}")) };
        let width = if ar.blocks.width == 0 { path.k } else { ar.blocks.width };
        if path.k % width != 0 {
            return refuse(&format!("blocks of {width} that do not divide K = {}", path.k));
        }
        if ar.blocks.interleave != 0 && width != path.k {
            return refuse("interleaved blocks");
        }
        let checks: [(bool, &str); 10] = [
            (ar.inputs.subnormals == Subnormals::FlushPositive || ar.inputs.c_subnormals == Subnormals::FlushPositive, "operands flushed to +0"),
            (ar.products.round_to.is_some() || ar.products.inf_above.is_some(), "rounded products"),
            (ar.blocks.c != CPlacement::Fused, "C outside the fused blocks"),
            (ar.blocks.normalise != Normalise::End, "blocks normalised after every addition"),
            (ar.align.mode == AlignMode::Exact, "exact alignment"),
            (ar.accumulator.precision.is_some(), "a narrowed accumulator precision"),
            (ar.accumulator.range != AccRange::Format, "an unbounded accumulator range"),
            (ar.inputs.field_format.is_some(), "exponent fields read in another format"),
            (ar.specials.nan == NanOutput::Propagate, "NaN payload propagation"),
            (ar.window_precision(acc) + ar.align.extra_bits.max(0) as u32 > 40, "a window over 40 bits"),
        ];
        if let Some((_, what)) = checks.iter().find(|(bad, _)| *bad) {
            return refuse(what);
        }
        let floor = ar.anchor_floor(acc);
        let flush = |s: Subnormals| (s == Subnormals::Flush) as i32;
        Ok(EngineModel {
            window_p: ar.window_precision(acc) as i32,
            extra_bits: ar.align.extra_bits,
            mode: match ar.align.mode {
                AlignMode::Floor => 1,
                AlignMode::Sticky => 2,
                _ => 0,
            },
            field_sum: (ar.align.exponent == AlignExponent::FieldSum) as i32,
            has_floor: floor.is_some() as i32,
            anchor_floor: floor.unwrap_or(0),
            carry_bits: ar.align.carry_bits.map_or(-1, |c| c.min(64) as i32),
            block_width: width as i32,
            reverse: (ar.blocks.order == BlockOrder::Reverse) as i32,
            acc_fmt,
            acc_rnd: rounding_code(ar.accumulator.rounding),
            acc_ovf: overflow_code(ar.accumulator.overflow),
            acc_flush: flush(ar.accumulator.subnormals),
            in_flush: flush(ar.inputs.subnormals),
            c_flush: flush(ar.inputs.c_subnormals),
            out_rnd: rounding_code(ar.output.rounding),
            out_ovf: overflow_code(ar.output.overflow),
            out_flush: flush(ar.output.subnormals),
            nan_all_ones: (ar.specials.nan == NanOutput::AllOnes) as i32,
            zero_sign: match ar.specials.zero_sign {
                ZeroSign::Ieee => 0,
                ZeroSign::Positive => 1,
                ZeroSign::Unsigned => 2,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::paths::path_by_id;

    #[test]
    fn sm90_models_of_the_engine_paths_are_taken_and_others_refused() {
        for id in ["mma.m16n8k16.f32.f16.f16.f32", "mma.m16n8k16.f32.bf16.bf16.f32", "mma.m16n8k16.f16.f16.f16.f16"] {
            let p = path_by_id(id).unwrap();
            let m = EngineModel::new(&Model::load(&crate::model::default_name(&id)).unwrap(), p).unwrap();
            assert_eq!((m.block_width, m.extra_bits, m.field_sum), (16, 2, 1), "{id}");
        }
        let p = path_by_id("mma.m16n8k16.f32.f16.f16.f32").unwrap();
        let e = EngineModel::new(&Model::load("exact-rne").unwrap(), p).unwrap_err();
        assert!(e.contains("exact alignment"), "{e}");
        let tf32 = path_by_id("mma.m16n8k8.f32.tf32.tf32.f32").unwrap();
        assert!(EngineModel::new(&Model::load("sm90:mma.m16n8k8.f32.tf32.tf32.f32").unwrap(), tf32).unwrap_err().contains("m16n8k16"));
    }
}
