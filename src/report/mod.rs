//! The report: per instruction path, the knobs of its current model (inferred from the GPU
//! corpus) side by side with what the seed papers published for the H100 (FTTN Table III), each
//! marked as agreeing or contradicting, with how much of the corpus the model reproduces.
//! Rendered as Markdown and as an SVG picture ([`svg`]); the library paths' validated shapes
//! are [`library`].

pub mod hunts;
pub mod library;
pub mod svg;

use crate::exec::{PathSpec, PATHS};
use crate::format::{Format, Rounding};
use crate::model::{AlignMode, Arithmetic, CPlacement, Model, Subnormals};
use crate::replay::ReplayStats;

/// One published claim about one format's arithmetic on the H100.
pub struct Claim {
    pub formats: &'static [Format],
    /// Short column name.
    pub column: &'static str,
    /// What the paper says.
    pub published: &'static str,
    /// Whether an arithmetic agrees.
    pub holds: fn(&Arithmetic, &PathSpec) -> bool,
}

const F16_BF16: &[Format] = &[Format::F16, Format::Bf16];
const SOURCE: &str = "FTTN Table III, H100 rows";

/// FTTN Table III's H100 rows (FP16, BF16, TF32, FP64). FP8 is not in the seed papers.
pub fn claims() -> Vec<Claim> {
    let truncates = |a: &Arithmetic, _: &PathSpec| a.align.mode == AlignMode::Truncate && a.accumulator.rounding == Rounding::Rz;
    vec![
        Claim { formats: &[Format::F16, Format::Bf16, Format::Tf32, Format::F64], column: "subnormal inputs", published: "handled", holds: |a, _| a.inputs.subnormals == Subnormals::Keep },
        Claim { formats: &[Format::F16, Format::Bf16, Format::Tf32], column: "extra bits", published: ">= 2", holds: |a, _| a.align.mode == AlignMode::Exact || a.align.extra_bits >= 2 },
        Claim { formats: &[Format::F64], column: "extra bits", published: "3", holds: |a, _| a.align.mode != AlignMode::Exact && a.align.extra_bits == 3 },
        Claim { formats: &[Format::F16, Format::Bf16, Format::Tf32], column: "accumulation", published: "truncate", holds: truncates },
        Claim { formats: &[Format::F64], column: "accumulation", published: "RTN-TE", holds: |a, _| a.accumulator.rounding == Rounding::Rne },
        Claim { formats: F16_BF16, column: "FMA width", published: ">= 16", holds: |a, p| a.blocks.width == 0 || a.blocks.width >= 16.min(p.k) },
        Claim { formats: &[Format::Tf32], column: "FMA width", published: "4", holds: |a, _| a.blocks.width == 4 },
        Claim { formats: &[Format::F64], column: "FMA width", published: "1", holds: |a, _| a.blocks.width == 1 },
        Claim { formats: F16_BF16, column: "output rounding", published: "RTN-TE", holds: |a, _| a.output.rounding == Rounding::Rne },
        Claim { formats: &[Format::F64], column: "product rounding", published: "RTN-TE", holds: |a, _| a.products.round_to == Some(Format::F64) && a.products.rounding == Rounding::Rne },
    ]
}

/// The columns of the table, in order.
pub const COLUMNS: &[&str] = &["subnormal inputs", "extra bits", "accumulation", "FMA width", "output rounding", "product rounding"];

/// What the model says for a column.
fn value(a: &Arithmetic, column: &str) -> String {
    match column {
        "subnormal inputs" => match a.inputs.subnormals {
            Subnormals::Keep => "keep".into(),
            Subnormals::Flush => "flush".into(),
            Subnormals::FlushPositive => "flush to +0".into(),
        },
        "extra bits" if a.align.mode == AlignMode::Exact => "exact".into(),
        "extra bits" => format!("{} ({:?})", a.align.extra_bits, a.align.exponent).to_lowercase(),
        "accumulation" if a.accumulator.format.is_some_and(|f| f.is_integer()) => {
            let end = if a.accumulator.overflow == crate::format::Overflow::Saturate { "clamped to" } else { "wrapping in" };
            format!("exact integer sum, {end} {}", a.accumulator.format.map_or("", |f| f.name()))
        }
        "accumulation" => {
            let acc = a.accumulator.format.map_or("D".into(), |f| f.name().to_string());
            let bits = a.accumulator.precision.map_or(String::new(), |q| format!(", {q} bits"));
            let floor = match (a.align.floor_below_emin, a.align.emin_floor) {
                (Some(n), _) => format!(", window floor emin-{n}"),
                (None, true) => ", window floor emin".into(),
                (None, false) => String::new(),
            };
            format!("{:?} align, {} into {acc}{bits}{floor}", a.align.mode, a.accumulator.rounding.name()).to_lowercase()
        }
        "FMA width" => {
            let interleave = if a.blocks.interleave > 0 && a.blocks.width > 0 { format!(", k dealt in runs of {}", a.blocks.interleave) } else { String::new() };
            let c = match a.blocks.c {
                CPlacement::Fused => "",
                CPlacement::Separate => ", C added separately",
                CPlacement::After => ", from 0, C added last",
                CPlacement::Staged => ", C joined in a second adder",
            };
            format!("{}{interleave}{c}", a.blocks.width)
        }
        "output rounding" => a.output.rounding.name().into(),
        "product rounding" => a.products.round_to.map_or("exact".into(), |f| format!("{} {}", a.products.rounding.name(), f.name())),
        _ => String::new(),
    }
}

/// One cell: the model's value, and the claim with its verdict where there is one.
pub struct Cell {
    pub value: String,
    pub claim: Option<(&'static str, bool)>,
}

/// One path's row.
pub struct Row {
    pub path: &'static PathSpec,
    pub model: String,
    /// `inferred` (reproduces everything it was inferred from), `nearest` (inferred, the best
    /// of the space), `discovered` (by `discover` on the GPU), `fitted` (by hand on the corpus),
    /// or `hypothesis` (the published H100 hypothesis).
    pub origin: &'static str,
    pub stats: Option<ReplayStats>,
    pub cells: Vec<Cell>,
}

/// Rows for every path that has a model (and its corpus replay where `corpus` has the file).
pub fn rows(corpus: &std::path::Path) -> Vec<Row> {
    let claims = claims();
    PATHS
        .iter()
        .filter_map(|p| {
            let name = crate::model::default_name(&p.id);
            let model = Model::load(&name).ok()?;
            let a = model.arithmetic(p.a_fmt).clone();
            let file = crate::store::jsonl_file(&corpus, &p.id);
            let stats = file.exists().then(|| crate::replay::replay_file(&file, &model).ok()).flatten();
            let cells = COLUMNS
                .iter()
                .map(|col| {
                    // The output-rounding claim is about f16/bf16 outputs only.
                    let applies = |c: &&Claim| c.column == *col && c.formats.contains(&p.a_fmt) && (c.column != "output rounding" || p.c_fmt == Format::F16);
                    let claim = claims.iter().find(applies).map(|c| (c.published, (c.holds)(&a, p)));
                    Cell { value: value(&a, col), claim }
                })
                .collect();
            let src = crate::model::embedded_model_source(&name).unwrap_or("");
            let origin = if src.starts_with("# Discovered") {
                "discovered"
            } else if src.starts_with("# Fitted") {
                "fitted"
            } else if src.starts_with("# Checked") {
                "sibling's, checked"
            } else if !src.starts_with("# Inferred") {
                "H100 hypothesis"
            } else if src.lines().next().is_some_and(|l| l.contains("nearest")) {
                "nearest of the space"
            } else {
                "inferred"
            };
            Some(Row { path: p, model: name, origin, stats, cells })
        })
        .collect()
}

/// The report as Markdown.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from("# mmafuzz report: inferred H100 arithmetic against the published claims\n\n");
    s.push_str(&format!(
        "Per instruction path: the knobs of its current model (`models/sm90/`, inferred by `mmafuzz infer` from the GPU corpus and the hunts' findings), how much of the recorded corpus it reproduces bit for bit, and, where the seed papers say something ({SOURCE}), the published claim: ✓ the model agrees, ✗ it contradicts. Fasi et al. measured V100, T4 and A100, not Hopper: their experiments are reproduced by the `v100`/`a100` models (`mmafuzz probes`). FP8 is in neither paper.\n\n![knobs against claims](report.svg)\n\n"
    ));
    s.push_str("| path | model | tiles reproduced | elements reproduced |");
    for c in COLUMNS {
        s.push_str(&format!(" {c} |"));
    }
    s.push_str("\n|---|---|---|---|");
    s.push_str(&"---|".repeat(COLUMNS.len()));
    s.push('\n');
    for r in rows {
        let (tiles, elems) = r.stats.as_ref().map_or(("no corpus".to_string(), String::new()), |st| {
            (format!("{:.1}% of {}", 100.0 * st.tile_fraction(), st.tiles), format!("{:.3}%", 100.0 * st.elements_matching as f64 / st.elements.max(1) as f64))
        });
        s.push_str(&format!("| `{}` | {} | {tiles} | {elems} |", r.path.id, r.origin));
        for c in &r.cells {
            match c.claim {
                Some((claim, true)) => s.push_str(&format!(" {} ✓ ({claim}) |", c.value)),
                Some((claim, false)) => s.push_str(&format!(" **{}** ✗ ({claim}) |", c.value)),
                None => s.push_str(&format!(" {} |", c.value)),
            }
        }
        s.push('\n');
    }
    let (agree, contra): (Vec<bool>, Vec<bool>) = rows.iter().flat_map(|r| r.cells.iter().filter_map(|c| c.claim.map(|(_, ok)| ok))).partition(|ok| *ok);
    s.push_str(&format!("\n{} claims checked: {} agree, {} contradicted.\n", agree.len() + contra.len(), agree.len(), contra.len()));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdicts(model: &str, path: &str) -> Vec<(&'static str, bool)> {
        let p = crate::exec::path_by_id(path).unwrap();
        let a = Model::load(model).unwrap().arithmetic(p.a_fmt).clone();
        claims().iter().filter(|c| c.formats.contains(&p.a_fmt)).map(|c| (c.column, (c.holds)(&a, p))).collect()
    }

    #[test]
    fn claims_judge_the_hypotheses_they_come_from() {
        // The H100 hypothesis was built from these rows: it agrees with every f16 claim.
        let h100 = verdicts("h100", "mma.m16n8k16.f16.f16.f16.f16");
        assert!(h100.len() >= 4 && h100.iter().all(|(_, ok)| *ok), "{h100:?}");
        // V100 truncates with no extra bits in 4-wide blocks: the H100 claims reject it.
        let v100 = verdicts("v100", "mma.m16n8k16.f32.f16.f16.f32");
        for col in ["extra bits", "FMA width"] {
            assert!(v100.iter().any(|(c, ok)| *c == col && !ok), "{col}: {v100:?}");
        }
    }

    #[test]
    fn report_covers_every_path_in_markdown_and_svg() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        // The first tiles of every corpus file (replaying all of it is tests/suite/corpus_replay.rs's).
        let head = tempfile::tempdir().unwrap();
        for f in crate::replay::corpus_files(&corpus).unwrap() {
            let text = String::from_utf8(crate::store::read_text(&f).unwrap()).unwrap();
            let first: Vec<&str> = text.lines().take(32).collect();
            std::fs::write(head.path().join(format!("{}.jsonl", crate::replay::corpus_path_id(&f))), first.join("\n") + "\n").unwrap();
        }
        let rows = rows(head.path());
        assert_eq!(rows.len(), PATHS.len());
        for r in &rows {
            let has_file = crate::store::jsonl_file(&corpus, r.path.id).exists();
            assert_eq!(r.stats.as_ref().map(|s| s.tiles > 0), has_file.then_some(true), "{}", r.path.id);
        }
        let md = markdown(&rows);
        for r in &rows {
            assert!(md.contains(r.path.id), "{}", r.path.id);
        }
        assert!(md.contains("claims checked"));
        // A few records per library file: every library path gets a row.
        let library = library::rows(&corpus.join("library"), Some(12)).unwrap();
        assert!(library.len() >= 11, "{}", library.len());
        assert!(library.iter().all(|r| r.total().gemms == 12 && r.total().exact > 0), "{library:?}");
        let md = library::markdown(&library);
        assert!(md.contains("`cublas.gemm.f32.f16.f16.f32`") && md.contains(&format!("{} recorded GEMMs", 12 * library.len())), "{md}");
        let picture = svg::svg(&rows, &library);
        assert!(picture.starts_with("<svg") && picture.trim_end().ends_with("</svg>"));
        // One cell per path and column (label, corpus, knobs), one per library path and shape
        // class plus its label, the background and the legends' swatches.
        let cells = rows.len() * (COLUMNS.len() + 2) + library.len() * (library::SHAPE_CLASSES.len() + 1);
        assert_eq!(picture.matches("<rect").count(), 1 + 4 + 4 + cells);
        // Nothing is clipped: every knob value is in the picture, wrapped at spaces.
        for r in &rows {
            for c in &r.cells {
                let words: Vec<&str> = c.value.split_whitespace().collect();
                assert!(words.iter().all(|w| picture.contains(&svg::wrap(w, 100)[0])), "{}", c.value);
            }
        }
    }
}
