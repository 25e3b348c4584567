//! Which knob a finding contradicts: the models one knob change away from a model side that
//! reproduce the other side's output on the minimised case.

use super::side::Side;
use crate::case::MmaCase;
use crate::model::knobs::single_knob_changes;
use crate::model::Emulator;

/// A one-line explanation and the knob changes behind it.
pub fn explain(a: &Side, b: &Side, case: &MmaCase, i: usize, j: usize, out_a: u64, out_b: u64) -> (String, Vec<String>) {
    let mut lines = Vec::new();
    let mut all = Vec::new();
    for (side, other, want) in [(a, b, out_b), (b, a, out_a)] {
        let Side::Model(e) = side else { continue };
        let model = e.model();
        let fixes: Vec<String> = single_knob_changes(model, case.a_fmt)
            .into_iter()
            .filter(|(_, m)| Emulator::new(m.clone()).run_element(case, i, j).ok() == Some(want))
            .map(|(change, _)| change)
            .collect();
        if fixes.is_empty() {
            lines.push(format!("no single knob change of {} gives {}'s output (it takes several knobs, or one the emulator lacks)", model.name, other.name()));
        } else {
            lines.push(format!("{} gives {}'s output with any one of: {}", model.name, other.name(), fixes.join(", ")));
        }
        all.extend(fixes.into_iter().map(|f| format!("{}: {f}", model.name)));
    }
    if lines.is_empty() {
        lines.push("neither side is a model: no knob to blame".into());
    }
    (lines.join("; "), all)
}
