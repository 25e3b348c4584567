//! Typed fuzz input: a small MMA case with any formats and any bit patterns.

use arbitrary::Arbitrary;
use mmafuzz::{Format, MmaCase};

#[derive(Debug, Arbitrary)]
pub struct FuzzCase {
    a_fmt: u8,
    c_fmt: u8,
    m: u8,
    n: u8,
    k: u8,
    bits: Vec<u64>,
}

impl FuzzCase {
    /// The case, or `None` when the input is too short to fill it.
    pub fn case(&self) -> Option<MmaCase> {
        let a_fmt = Format::ALL[self.a_fmt as usize % Format::ALL.len()];
        if a_fmt == Format::F32 {
            return None; // no MMA takes plain f32 operands (tf32 stands for them)
        }
        let c_fmt = match a_fmt {
            Format::F64 => Format::F64,
            _ => [Format::F32, Format::F16, Format::Bf16][self.c_fmt as usize % 3],
        };
        let (m, n, k) = (1 + self.m as usize % 2, 1 + self.n as usize % 8, 1 + self.k as usize % 40);
        let mut case = MmaCase::zeros(a_fmt, c_fmt, m, n, k);
        let mut it = self.bits.iter().copied().cycle();
        if self.bits.is_empty() {
            return None;
        }
        case.a.iter_mut().for_each(|x| *x = it.next().unwrap() & a_fmt.mask());
        case.b.iter_mut().for_each(|x| *x = it.next().unwrap() & a_fmt.mask());
        case.c.iter_mut().for_each(|x| *x = it.next().unwrap() & c_fmt.mask());
        Some(case)
    }
}
