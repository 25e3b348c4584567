//! The model space of one path: every combination of the emulator's knobs, split into the core
//! arithmetic (what decides plain, finite results) and the special-value and subnormal knobs
//! (what decides the rest), so inference can search the two parts one after the other.

use crate::exec::PathSpec;
use crate::format::Format;
use crate::model::{knobs, Arithmetic};

/// One knob and the values searched for it on this path.
#[derive(Clone, Debug)]
pub struct Axis {
    pub path: &'static str,
    pub values: Vec<toml::Value>,
}

/// A point of the space: a value index per axis.
pub type Point = Vec<usize>;

fn strs(v: &[&str]) -> Vec<toml::Value> {
    v.iter().map(|s| toml::Value::String(s.to_string())).collect()
}

fn axis(path: &'static str) -> Axis {
    let values = knobs::knobs().into_iter().find(|k| k.path == path).map(|k| k.values).unwrap_or_default();
    Axis { path, values }
}

/// The core axes for a path: block structure, alignment and the accumulator's rounding, plus
/// the output conversion where D is narrower than the accumulator and product rounding for f64.
pub fn core_axes(p: &PathSpec) -> Vec<Axis> {
    // A sparse path's dot products have k/2 terms (the values its metadata keeps).
    let terms = p.terms();
    if p.c_fmt.is_integer() {
        // Integer paths: the integer datapath's knobs are the whole space.
        let mut axes: Vec<Axis> = knobs::integer_knobs().into_iter().map(|k| Axis { path: k.path, values: k.values }).collect();
        axes[0].values.retain(|w| w.as_integer().is_some_and(|w| w as usize <= terms));
        return axes;
    }
    let mut axes: Vec<Axis> = ["blocks.width", "blocks.interleave", "blocks.order", "blocks.c", "blocks.normalise", "align.mode", "align.exponent", "align.extra_bits", "accumulator.rounding"]
        .into_iter()
        .map(axis)
        .collect();
    axes[0].values.retain(|w| w.as_integer().is_some_and(|w| w as usize <= terms));
    if p.d_fmt() == Format::F16 {
        axes.push(Axis { path: "accumulator.format", values: strs(&["f32", "f16"]) });
        axes.push(Axis { path: "output.rounding", values: strs(&["rne", "rz"]) });
        axes.push(Axis { path: "align.window", values: strs(&["none", "f32"]) });
    }
    if p.a_fmt.storage_bits() <= 8 && !p.a_fmt.is_integer() {
        // FP8 (and FP6/FP4) accumulation is reported to keep fewer bits than f32 (about 13-14): narrower windows.
        let bits = axes.iter_mut().find(|a| a.path == "align.extra_bits").expect("extra bits axis");
        bits.values = (-12..=3).map(toml::Value::Integer).collect();
        axes.push(Axis { path: "accumulator.precision", values: vec![toml::Value::String("none".into()), toml::Value::Integer(13), toml::Value::Integer(14), toml::Value::Integer(15)] });
    }
    if p.a_fmt == Format::F64 {
        axes.push(Axis { path: "products.round_to", values: strs(&["none", "f64"]) });
    }
    if p.block_scale().is_some() {
        // Block-scaled paths: products may be keyed by their scales alone, and summed exactly
        // in runs of 16 first (MMA-Sim's GST_FDPA for FP4 at K = 64), with wider windows.
        let expo = axes.iter_mut().find(|a| a.path == "align.exponent").expect("exponent axis");
        expo.values.push(toml::Value::String("scale".into()));
        if p.k == 64 {
            axes[0].values.push(toml::Value::Integer(64));
            axes.push(Axis { path: "blocks.group", values: vec![toml::Value::Integer(0), toml::Value::Integer(16)] });
            let bits = axes.iter_mut().find(|a| a.path == "align.extra_bits").expect("extra bits axis");
            bits.values.extend((4..=13).map(toml::Value::Integer));
        }
    }
    axes
}

/// The special-value and subnormal axes. The window's floor under tiny sums is one of them
/// (`floor_below_emin = 0` is `emin_floor`) where products can be smaller than the accumulator's
/// smallest normal; elsewhere the largest term always anchors above the floor, so it cannot
/// matter and is left out.
pub fn special_axes(p: &PathSpec) -> Vec<Axis> {
    if p.c_fmt.is_integer() {
        // No NaN, infinity, zero sign or subnormal in integer formats.
        return Vec::new();
    }
    // The highest smallest-normal among the accumulators searched (f32, or D's own format).
    let d_fmt = p.d_fmt();
    let acc_emin = if d_fmt == Format::F64 { Format::F64.emin() } else { Format::F32.emin().max(d_fmt.emin()) };
    // Block scales reach far below any accumulator: 2^-127 per operand.
    let tiny_products = 2 * p.a_fmt.min_lsb_exp() < acc_emin || p.block_scale().is_some();
    let mut floor = Axis { path: "align.floor_below_emin", values: vec![toml::Value::String("none".into()), toml::Value::Integer(0), toml::Value::Integer(5), toml::Value::Integer(6), toml::Value::Integer(7), toml::Value::Integer(8)] };
    if p.block_scale().is_some() {
        floor.values.push(toml::Value::Integer(13)); // MMA-Sim's GST_FDPA: e_zero = -139
    }
    let floor = tiny_products.then_some(floor);
    // Mixed FP8 (A and B in different formats): the GPU may read both operands' exponent
    // fields as one wider format's (the dense mixed paths read them as f16's).
    let mixed = (p.a_fmt != p.b_fmt).then(|| Axis { path: "inputs.field_format", values: strs(&["none", "f16"]) });
    // Products that can pass f32's range: some units make them infinities before adding.
    let big_products = 2 * (p.a_fmt.emax().max(p.b_fmt.emax()) + 1) > Format::F32.emax() + 1 && p.a_fmt != Format::F64;
    let inf_above = big_products.then(|| Axis { path: "products.inf_above", values: strs(&["none", "f32"]) });
    let rest = ["accumulator.subnormals", "accumulator.overflow", "accumulator.range", "output.subnormals", "inputs.subnormals", "inputs.c_subnormals", "specials.nan", "specials.zero_sign"].into_iter().map(axis);
    floor.into_iter().chain(mixed).chain(inf_above).chain(rest).collect()
}

/// Every point of the product of `axes` for a path of depth `k`, skipping points that only
/// repeat another (extra bits and the alignment exponent mean nothing when alignment is exact,
/// the interleaving of K nothing unless its runs split several blocks).
pub fn points(axes: &[Axis], k: usize) -> Vec<Point> {
    let mut out = vec![vec![]];
    for a in axes {
        out = out.into_iter().flat_map(|p: Point| (0..a.values.len()).map(move |v| [p.clone(), vec![v]].concat())).collect();
    }
    let find = |name: &str| axes.iter().position(|a| a.path == name);
    if let (Some(mode), Some(bits), Some(expo)) = (find("align.mode"), find("align.extra_bits"), find("align.exponent")) {
        let exact = axes[mode].values.iter().position(|v| v.as_str() == Some("exact"));
        out.retain(|p| Some(p[mode]) != exact || (p[bits] == 0 && p[expo] == 0));
    }
    if let (Some(c), Some(norm), Some(mode)) = (find("blocks.c"), find("blocks.normalise"), find("align.mode")) {
        // The second adder of `staged` takes a truncated block summed at its end; `pairwise`
        // rounds every product and every sum (no window: exact alignment stands for it) and
        // joins the running sum by one more rounded addition.
        let is = |axis: usize, p: &Point, v: &str| axes[axis].values[p[axis]].as_str() == Some(v);
        out.retain(|p| {
            let staged_ok = !is(c, p, "staged") || (is(norm, p, "end") && !is(mode, p, "exact"));
            let pairwise_ok = !is(norm, p, "pairwise") || (is(c, p, "separate") && is(mode, p, "exact"));
            staged_ok && pairwise_ok
        });
    }
    if let (Some(acc), Some(prec)) = (find("accumulator.format"), find("accumulator.precision")) {
        // A precision the accumulator's format already holds narrows nothing: only "none".
        out.retain(|p| {
            let holds = axes[acc].values[p[acc]].as_str().and_then(|f| f.parse::<Format>().ok()).map_or(0, |f| f.precision());
            axes[prec].values[p[prec]].as_integer().is_none_or(|q| q < holds as i64)
        });
    }
    if let (Some(acc), Some(window)) = (find("accumulator.format"), find("align.window")) {
        // A window sized by the accumulator's own format is no window setting at all.
        out.retain(|p| axes[window].values[p[window]].as_str() == Some("none") || axes[window].values[p[window]] != axes[acc].values[p[acc]]);
    }
    if let (Some(width), Some(inter)) = (find("blocks.width"), find("blocks.interleave")) {
        // Runs as long as a block (or longer) deal K out as contiguous blocks again, or leave
        // some empty: only runs that divide a block into several are new structures.
        out.retain(|p| {
            let (w, i) = (axes[width].values[p[width]].as_integer().unwrap_or(0), axes[inter].values[p[inter]].as_integer().unwrap_or(0));
            i == 0 || (w > 0 && (w as usize) < k && i < w && w % i == 0)
        });
    }
    out
}

/// `base` with every axis of `axes` set to the value `point` picks.
pub fn arithmetic_at(base: &Arithmetic, axes: &[Axis], point: &[usize]) -> Option<Arithmetic> {
    let mut t = toml::Table::try_from(base).ok()?;
    for (a, &v) in axes.iter().zip(point) {
        let (section, key) = a.path.split_once('.').expect("section.key");
        let sec = t.entry(section).or_insert_with(|| toml::Value::Table(Default::default())).as_table_mut()?;
        match &a.values[v] {
            toml::Value::String(s) if s == "none" => {
                sec.remove(key);
            }
            x => {
                sec.insert(key.to_string(), x.clone());
            }
        }
    }
    toml::Value::Table(t).try_into().ok()
}

/// An emulator of `arith` (for every input format), or `None` if it is not a valid model.
pub fn emulator(arith: &Arithmetic) -> Option<crate::model::Emulator> {
    knobs::model_of("candidate", arith).ok().map(crate::model::Emulator::new)
}

/// `knob = value` for every axis at `point`.
pub fn describe(axes: &[Axis], point: &[usize]) -> Vec<String> {
    axes.iter().zip(point).map(|(a, &v)| format!("{} = {}", a.path, a.values[v])).collect()
}

/// How many knobs of `a` differ from `b` (every knob, not only the searched ones).
pub fn distance(a: &Arithmetic, b: &Arithmetic) -> usize {
    fn flat(prefix: &str, v: &toml::Value, out: &mut std::collections::BTreeMap<String, toml::Value>) {
        match v {
            toml::Value::Table(t) => t.iter().for_each(|(k, v)| flat(&format!("{prefix}.{k}"), v, out)),
            _ => {
                out.insert(prefix.to_string(), v.clone());
            }
        }
    }
    let (mut fa, mut fb) = (Default::default(), Default::default());
    if let (Ok(ta), Ok(tb)) = (toml::Value::try_from(a), toml::Value::try_from(b)) {
        flat("", &ta, &mut fa);
        flat("", &tb, &mut fb);
    }
    let keys: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    keys.into_iter().filter(|k| fa.get(*k) != fb.get(*k)).count()
}

/// The candidate nearest to `base` (fewest knobs changed; the first of equals): where the data
/// leave knobs undecided, the model keeps the base's values for them.
pub fn nearest_to(base: &Arithmetic, candidates: impl IntoIterator<Item = Arithmetic>) -> Option<Arithmetic> {
    candidates.into_iter().enumerate().min_by_key(|(i, a)| (distance(a, base), *i)).map(|(_, a)| a)
}
