//! The model space, knob by knob: every value the emulator supports for each knob, and the
//! models one knob change away from a given one. Findings use it to say which knob a divergence
//! contradicts; inference enumerates combinations of the same list.

use super::{Arithmetic, Model};
use crate::format::Format;

/// One knob (dotted path into [`Arithmetic`]) and the values worth trying for it.
pub struct Knob {
    pub path: &'static str,
    pub values: Vec<toml::Value>,
}

fn strs(v: &[&str]) -> Vec<toml::Value> {
    v.iter().map(|s| toml::Value::String(s.to_string())).collect()
}

/// The knobs the emulator supports, with their values.
pub fn knobs() -> Vec<Knob> {
    let ints = |v: &[i64]| v.iter().map(|&x| toml::Value::Integer(x)).collect::<Vec<_>>();
    let rounding = ["rne", "rz", "ru", "rd", "rna"];
    let subnormals = ["keep", "flush"];
    let operand_subnormals = ["keep", "flush", "flush_positive"];
    vec![
        Knob { path: "blocks.width", values: ints(&[1, 2, 4, 8, 16, 32]) },
        Knob { path: "blocks.order", values: strs(&["forward", "reverse"]) },
        Knob { path: "blocks.interleave", values: ints(&[0, 1, 2, 4]) },
        Knob { path: "blocks.c", values: strs(&["fused", "separate", "after", "staged"]) },
        Knob { path: "blocks.normalise", values: strs(&["end", "every_add", "pairwise"]) },
        Knob { path: "align.mode", values: strs(&["exact", "truncate", "floor", "sticky"]) },
        Knob { path: "align.exponent", values: strs(&["leading_bit", "field_sum"]) },
        Knob { path: "align.extra_bits", values: ints(&[0, 1, 2, 3, 4, 5, 6, 8]) },
        Knob { path: "align.emin_floor", values: vec![toml::Value::Boolean(false), toml::Value::Boolean(true)] },
        Knob { path: "align.floor_below_emin", values: ints(&[0, 5, 6, 7, 8]) },
        Knob { path: "accumulator.rounding", values: strs(&rounding) },
        Knob { path: "accumulator.subnormals", values: strs(&subnormals) },
        Knob { path: "accumulator.overflow", values: strs(&["ieee", "infinity"]) },
        Knob { path: "accumulator.precision", values: ints(&[13, 14, 15]) },
        Knob { path: "accumulator.range", values: strs(&["format", "unbounded"]) },
        Knob { path: "output.rounding", values: strs(&rounding) },
        Knob { path: "output.subnormals", values: strs(&subnormals) },
        Knob { path: "inputs.subnormals", values: strs(&operand_subnormals) },
        Knob { path: "inputs.c_subnormals", values: strs(&operand_subnormals) },
        Knob { path: "specials.nan", values: strs(&["canonical", "all_ones", "propagate"]) },
        Knob { path: "specials.zero_sign", values: strs(&["ieee", "positive", "unsigned"]) },
    ]
}

/// The knobs of the integer datapath (s8/u8/s4/u4/b1 into s32): how K is cut into blocks,
/// where C enters, and wrap-around or saturation.
pub fn integer_knobs() -> Vec<Knob> {
    let ints = |v: &[i64]| v.iter().map(|&x| toml::Value::Integer(x)).collect::<Vec<_>>();
    vec![
        Knob { path: "blocks.width", values: ints(&[0, 4, 8, 16, 32, 64, 128]) },
        Knob { path: "blocks.c", values: strs(&["fused", "after"]) },
        Knob { path: "accumulator.overflow", values: strs(&["wrap", "saturate"]) },
    ]
}

/// The knobs that matter for inputs of `a_fmt`.
pub fn knobs_for(a_fmt: Format) -> Vec<Knob> {
    if a_fmt.is_integer() { integer_knobs() } else { knobs() }
}

/// A model holding exactly this arithmetic for every input format.
pub fn model_of(name: &str, arith: &Arithmetic) -> Result<Model, String> {
    Model::from_arithmetic(name, arith).map_err(|e| e.to_string())
}

/// Every model one knob change away from `model`'s arithmetic for `a_fmt` inputs, as
/// (`knob = value`, model).
pub fn single_knob_changes(model: &Model, a_fmt: Format) -> Vec<(String, Model)> {
    let arith = model.arithmetic(a_fmt);
    let Ok(table) = toml::Table::try_from(arith) else { return vec![] };
    let mut out = Vec::new();
    for knob in knobs_for(a_fmt) {
        let (section, key) = knob.path.split_once('.').expect("knob paths are section.key");
        for v in knob.values {
            let mut t = table.clone();
            let sec = t.entry(section).or_insert_with(|| toml::Value::Table(Default::default()));
            let Some(sec) = sec.as_table_mut() else { continue };
            if sec.get(key) == Some(&v) {
                continue;
            }
            sec.insert(key.to_string(), v.clone());
            let change = format!("{} = {}", knob.path, v);
            if let Ok(m) = Model::from_toml(&format!("{} with {change}", model.name), &t.to_string()) {
                if m.arithmetic(a_fmt) != arith {
                    out.push((change, m));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_knob_away_differs_in_exactly_that_knob() {
        let h100 = Model::load("h100").unwrap();
        let same = model_of("copy", h100.arithmetic(Format::F16)).unwrap();
        assert_eq!(same.arithmetic(Format::F16), h100.arithmetic(Format::F16));
        let changes = single_knob_changes(&h100, Format::F16);
        assert!(changes.len() > 30, "{}", changes.len());
        let (name, m) = changes.iter().find(|(c, _)| c == "align.extra_bits = 2").expect("extra bits 2 is one step away");
        assert_eq!(m.arithmetic(Format::F16).align.extra_bits, 2, "{name}");
        assert_eq!(m.arithmetic(Format::F16).blocks, h100.arithmetic(Format::F16).blocks);
        assert!(!changes.iter().any(|(c, _)| c == "align.extra_bits = 3"), "the current value is not a change");
    }
}
