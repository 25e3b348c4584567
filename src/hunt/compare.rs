//! Comparing two sides' outputs element by element, and naming how they differ.
//!
//! A divergence's class says what kind of disagreement it is (NaN bits, zero sign, overflow, or a
//! finite difference with each side's position relative to the exact value). Hunts minimise a few
//! divergences per class, and the minimiser only accepts a smaller case of the same class.

use crate::exact::Exact;
use crate::format::{Class, Format, Rounding};

/// Whether two outputs agree: bitwise, except that any NaN matches any NaN when one side is the
/// exact reference (which has no payloads to compare).
#[inline]
pub fn agree(fmt: Format, x: u64, y: u64, nan_is_any: bool) -> bool {
    x == y || (nan_is_any && fmt.decode(x).class == Class::Nan && fmt.decode(y).class == Class::Nan)
}

/// Where one side's finite output lies against the exact value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// The correct rounding to nearest (ties to even).
    Nearest,
    /// The faithful neighbour below (not the nearest).
    Below,
    /// The faithful neighbour above (not the nearest).
    Above,
    /// Neither neighbour of the exact value: not even faithful.
    Unfaithful,
}

impl Position {
    pub fn of(exact: &Exact, fmt: Format, bits: u64) -> Position {
        if bits == exact.round(fmt, Rounding::Rne) {
            Position::Nearest
        } else if bits == exact.round(fmt, Rounding::Rd) {
            Position::Below
        } else if bits == exact.round(fmt, Rounding::Ru) {
            Position::Above
        } else {
            Position::Unfaithful
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Position::Nearest => "nearest",
            Position::Below => "below",
            Position::Above => "above",
            Position::Unfaithful => "unfaithful",
        }
    }
}

/// The kind of a disagreement between sides A and B on one element.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Both NaN, different bit patterns.
    NanBits,
    /// One side NaN, the other not.
    NanVsNumber { a_is_nan: bool },
    /// At least one side infinite (overflow and saturation live here).
    Infinity,
    /// Both zero, opposite signs.
    ZeroSign,
    /// Both finite: each side's position against the exact value.
    Finite { a: Position, b: Position },
}

/// A named divergence: its kind plus details that split classes further.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Divergence {
    pub kind: Kind,
    /// Distance between the two outputs in units of D's last place (finite only).
    pub ulps_apart: u64,
    /// The exact value lies below D's smallest normal (subnormal or gradual underflow territory).
    pub subnormal: bool,
    /// A's output is numerically above B's (finite outputs).
    pub a_above_b: bool,
}

/// Monotone integer image of a finite IEEE bit pattern: neighbours differ by one.
fn ordinal(fmt: Format, bits: u64) -> i128 {
    let sign = 1u64 << (fmt.storage_bits() - 1);
    let mag = (bits & fmt.mask() & !sign) as i128;
    if bits & sign != 0 {
        -mag
    } else {
        mag
    }
}

/// Distance between two finite outputs in units in the last place (0 for ±0).
pub fn ulps_apart(fmt: Format, x: u64, y: u64) -> u64 {
    (ordinal(fmt, x) - ordinal(fmt, y)).unsigned_abs() as u64
}

impl Divergence {
    /// Classify outputs `a` and `b` (which disagree) of one element against its exact value.
    pub fn classify(fmt: Format, a: u64, b: u64, exact: &Exact) -> Divergence {
        let (da, db) = (fmt.decode(a), fmt.decode(b));
        let subnormal = match exact {
            Exact::Finite(x) => x.get_exp().is_some_and(|e| e - 1 < fmt.emin()),
            _ => false,
        };
        let kind = match (da.class, db.class) {
            (Class::Nan, Class::Nan) => Kind::NanBits,
            (Class::Nan, _) => Kind::NanVsNumber { a_is_nan: true },
            (_, Class::Nan) => Kind::NanVsNumber { a_is_nan: false },
            (Class::Inf, _) | (_, Class::Inf) => Kind::Infinity,
            (Class::Zero, Class::Zero) => Kind::ZeroSign,
            _ => Kind::Finite { a: Position::of(exact, fmt, a), b: Position::of(exact, fmt, b) },
        };
        let ulps_apart = if matches!(kind, Kind::Finite { .. } | Kind::ZeroSign) { ulps_apart(fmt, a, b) } else { 0 };
        let a_above_b = fmt.to_f64(a) > fmt.to_f64(b);
        Divergence { kind, ulps_apart, subnormal, a_above_b }
    }

    /// The class the minimiser must keep: the kind, and for finite outputs which side is larger
    /// (positions against the exact value move as terms are dropped; the disagreement stays).
    pub fn coarse(&self) -> String {
        match &self.kind {
            Kind::Finite { .. } => format!("finite: A {} B", if self.a_above_b { ">" } else { "<" }),
            _ => self.kind_name(),
        }
    }

    fn kind_name(&self) -> String {
        match &self.kind {
            Kind::NanBits => "nan-bits".into(),
            Kind::NanVsNumber { a_is_nan: true } => "nan-vs-number (A is NaN)".into(),
            Kind::NanVsNumber { a_is_nan: false } => "nan-vs-number (B is NaN)".into(),
            Kind::Infinity => "infinity".into(),
            Kind::ZeroSign => "zero-sign".into(),
            Kind::Finite { a, b } => format!("finite: A {}, B {}", a.name(), b.name()),
        }
    }

    /// The class hunts count and budget minimisations by: kind, distance bucket, subnormal range.
    pub fn class(&self) -> String {
        let mut s = self.kind_name();
        if matches!(self.kind, Kind::Finite { .. }) {
            let d = match self.ulps_apart {
                0 => "0 ulp".to_string(),
                1 => "1 ulp apart".to_string(),
                2 => "2 ulps apart".to_string(),
                3..=16 => "3-16 ulps apart".to_string(),
                _ => ">16 ulps apart".to_string(),
            };
            s = format!("{s}, {d}");
        }
        if self.subnormal {
            s.push_str(", subnormal result");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::MmaCase;

    fn exact_of(c: u64, terms: &[(u64, u64)]) -> Exact {
        let mut case = MmaCase::zeros(Format::F16, Format::F32, 1, 1, terms.len());
        case.c = vec![c];
        for (k, &(a, b)) in terms.iter().enumerate() {
            case.a[k] = a;
            case.b[k] = b;
        }
        crate::exact::exact_element(&case, 0, 0)
    }

    #[test]
    fn positions_and_classes_follow_the_exact_value() {
        // 1 + 3·2^-24: nearest is 1 + 2^-22 (3f800002), below 3f800001, above 3f800002.
        let x = exact_of(0x3f80_0000, &[(0x3c00, 0x0001); 3]);
        assert_eq!(Position::of(&x, Format::F32, 0x3f80_0002), Position::Nearest);
        assert_eq!(Position::of(&x, Format::F32, 0x3f80_0001), Position::Below);
        assert_eq!(Position::of(&x, Format::F32, 0x3f80_0000), Position::Unfaithful);
        let d = Divergence::classify(Format::F32, 0x3f80_0000, 0x3f80_0002, &x);
        assert_eq!(d.kind, Kind::Finite { a: Position::Unfaithful, b: Position::Nearest });
        assert_eq!(d.ulps_apart, 2);
        assert_eq!(d.class(), "finite: A unfaithful, B nearest, 2 ulps apart");
        // NaN bits, zero signs, infinities.
        let nan = exact_of(0x7fc0_0000, &[]);
        assert_eq!(Divergence::classify(Format::F32, 0x7fff_ffff, 0x7fc0_0000, &nan).class(), "nan-bits");
        assert!(agree(Format::F32, 0x7fff_ffff, 0x7fc0_0000, true));
        assert!(!agree(Format::F32, 0x7fff_ffff, 0x7fc0_0000, false));
        let zero = exact_of(0x8000_0000, &[(0x3c00, 0x3c00), (0xbc00, 0x3c00)]);
        assert_eq!(Divergence::classify(Format::F32, 0x8000_0000, 0, &zero).kind, Kind::ZeroSign);
        assert_eq!(ulps_apart(Format::F32, 0x8000_0001, 0x0000_0001), 2);
    }
}
