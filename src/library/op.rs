//! The PyTorch calls a library GEMM comes from. cuBLASLt picks its kernel per call kind as well
//! as per shape: `F.linear` hands cuBLAS the weight transposed (w is n×k, as `nn.Linear` holds
//! it), `torch.addmm` passes a C, `F.linear` with a bias asks for the bias epilogue, and each of
//! these runs other kernels than `torch.mm` at the same m×n×k.

use std::fmt;
use std::str::FromStr;

/// One kind of PyTorch call, as a kernel table keys it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TorchOp {
    /// `torch.mm(a, b)`: D = A·B, β = 0.
    Mm,
    /// `torch.addmm(c, a, b)` with a full m×n C: D = A·B + C.
    Addmm,
    /// `F.linear(x, w)` without a bias: D = x·wᵀ (the transposed-B layout).
    Linear,
    /// `F.linear(x, w, bias)`: the bias epilogue (or, where the weight is a row or a column,
    /// `addmm` with the bias broadcast into C).
    LinearBias,
    /// `torch._scaled_mm` on FP8 operands.
    ScaledMm,
}

impl TorchOp {
    pub const ALL: [TorchOp; 5] = [TorchOp::Mm, TorchOp::Addmm, TorchOp::Linear, TorchOp::LinearBias, TorchOp::ScaledMm];

    /// The name in table files, traces and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TorchOp::Mm => "mm",
            TorchOp::Addmm => "addmm",
            TorchOp::Linear => "linear",
            TorchOp::LinearBias => "linear_bias",
            TorchOp::ScaledMm => "scaled_mm",
        }
    }

    /// The PyTorch call, for messages.
    pub fn call(self) -> &'static str {
        match self {
            TorchOp::Mm => "torch.mm",
            TorchOp::Addmm => "torch.addmm",
            TorchOp::Linear => "F.linear",
            TorchOp::LinearBias => "F.linear with a bias",
            TorchOp::ScaledMm => "torch._scaled_mm",
        }
    }

    /// The op of a GEMM with or without C and bias, in torch.mm's layout (B k×n).
    pub fn of(c: bool, bias: bool) -> TorchOp {
        match (c, bias) {
            (_, true) => TorchOp::LinearBias,
            (true, false) => TorchOp::Addmm,
            (false, false) => TorchOp::Mm,
        }
    }
}

impl fmt::Display for TorchOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TorchOp {
    type Err = String;
    /// A name, or a kernel table's old β column: `0` (torch.mm), `1` (torch.addmm).
    fn from_str(s: &str) -> Result<TorchOp, String> {
        match s {
            "0" => return Ok(TorchOp::Mm),
            "1" => return Ok(TorchOp::Addmm),
            _ => {}
        }
        TorchOp::ALL.into_iter().find(|o| o.name() == s).ok_or_else(|| {
            format!("'{s}' is not a call kind (one of {})", TorchOp::ALL.map(TorchOp::name).join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_old_beta_columns_read() {
        for op in TorchOp::ALL {
            assert_eq!(op.name().parse::<TorchOp>().unwrap(), op);
        }
        assert_eq!("0".parse::<TorchOp>().unwrap(), TorchOp::Mm);
        assert_eq!("1".parse::<TorchOp>().unwrap(), TorchOp::Addmm);
        assert!("bmm".parse::<TorchOp>().unwrap_err().contains("linear_bias"));
    }
}
