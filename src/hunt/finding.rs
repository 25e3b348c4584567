//! Findings: one Markdown file per minimised divergence under `findings/<path>/<id>.md`, readable
//! on its own, with the full record as a JSON block at the end (what `hunt` reads back to merge
//! duplicates). Files are replaced atomically; a file that cannot be read is reported by name.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One side's output for the minimised element, and where it lies against the exact value.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SideOutput {
    pub side: String,
    /// What the side is (GPU name, driver and path; model and description; reference).
    pub detail: String,
    /// Raw bits of D's element in hex.
    pub bits: String,
    pub value: String,
}

/// A minimised divergence.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    pub id: String,
    pub path: String,
    /// The class the minimiser kept (see `hunt::compare`).
    pub class: String,
    /// The class of the original divergent element, under which the hunt counted this finding
    /// against `--per-class` (absent: `class`, as older findings were counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunt_class: Option<String>,
    /// The minimised case in words.
    pub summary: String,
    pub a: SideOutput,
    pub b: SideOutput,
    /// The exact value of the element and its correct rounding to nearest.
    pub exact: String,
    pub exact_nearest: String,
    /// Which knob the data contradicts, where a single knob change tells.
    pub explanation: String,
    /// Single-knob changes of a model side that reproduce the other side on the minimised case.
    pub knob_changes: Vec<String>,
    /// The minimised case as an interchange line, with "d" = side A's output and "d_b".
    pub minimised: Value,
    pub minimised_element: [usize; 2],
    /// The tile the hunt generated (recipe and seed inside), with both sides' D.
    pub original: Value,
    pub original_element: [usize; 2],
    /// Minimiser effort: rounds and candidate tiles evaluated.
    pub rounds: usize,
    pub evaluated: usize,
    /// How often hunts minimised a divergence to this same case.
    pub seen: u64,
    pub first_seen: String,
    pub last_seen: String,
}

/// Stable 64-bit FNV-1a (file names must not change between Rust versions).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The identity of a minimised case: same path, same sides, same inputs, same element.
pub fn finding_id(path: &str, side_a: &str, side_b: &str, minimised: &Value, element: [usize; 2]) -> String {
    let key = format!("{path}|{side_a}|{side_b}|{}|{}|{}|{:?}", minimised["a"], minimised["b"], minimised["c"], element);
    format!("{:016x}", fnv1a(key.as_bytes()))
}

const RECORD_FENCE: &str = "```json\n";

impl Finding {
    /// The side named `name` (`gpu`, `external`, a model's name) and the key of its D in the
    /// minimised case (`d` for side A, `d_b` for side B).
    pub fn side_named(&self, name: &str) -> Option<(&SideOutput, &'static str)> {
        if self.a.side == name {
            Some((&self.a, "d"))
        } else if self.b.side == name {
            Some((&self.b, "d_b"))
        } else {
            None
        }
    }

    /// The file's text: a readable report, then the record.
    pub fn render(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!("# {}: {} vs {}\n\n", self.path, self.a.side, self.b.side));
        s.push_str(&format!("**Minimised:** {}\n\n", self.summary));
        s.push_str(&format!("**Class:** {} (A = {}, B = {})\n\n", self.class, self.a.side, self.b.side));
        s.push_str("| side | D element | value |\n|---|---|---|\n");
        for o in [&self.a, &self.b] {
            s.push_str(&format!("| {} | `{}` | {} |\n", o.side, o.bits, o.value));
        }
        s.push_str(&format!("| exact | | {} |\n| exact, rounded to nearest | `{}` | |\n\n", self.exact, self.exact_nearest));
        s.push_str(&format!("**Explanation:** {}\n\n", self.explanation));
        s.push_str(&format!("- A: {}\n- B: {}\n", self.a.detail, self.b.detail));
        s.push_str(&format!(
            "- Seen {} time(s), first {}, last {}; minimised in {} rounds ({} candidate tiles)\n",
            self.seen, self.first_seen, self.last_seen, self.rounds, self.evaluated
        ));
        let [i, j] = self.original_element;
        s.push_str(&match self.original.get("engine") {
            // [seed, tile]: the GPU engine's generator (`engine::gen::tile`).
            Some(Value::Array(st)) if st.len() == 2 => format!("- Original: element ({i}, {j}) of GPU engine tile {} of seed {}\n\n", st[1], st[0]),
            _ => format!("- Original: element ({i}, {j}) of a generated tile (recipe {}, seed {})\n\n", self.original.get("recipe").unwrap_or(&Value::Null), self.original.get("seed").unwrap_or(&Value::Null)),
        });
        s.push_str("Nonzero inputs of the minimised case (raw bits; the full tile is in the record):\n\n");
        s.push_str(&format!("```\n{}\n```\n\n", nonzero_inputs(&self.minimised)));
        s.push_str("## Record\n\n");
        s.push_str(RECORD_FENCE);
        // One line: the record is for programs; the report above is for people.
        s.push_str(&serde_json::to_string(self).expect("a finding serialises"));
        s.push_str("\n```\n");
        s
    }

    /// Where the hunt met this finding's divergence: (seed, hunt-wide tile, row, column) of the
    /// original element; findings without a generated tile's seed sort last.
    pub fn hunt_position(&self) -> (u64, u64, usize, usize) {
        let at = |v: Option<&Value>| v.and_then(Value::as_array).filter(|a| a.len() == 2).and_then(|a| Some((a[0].as_u64()?, a[1].as_u64()?)));
        let (seed, tile) = at(self.original.get("seed")).or_else(|| at(self.original.get("engine"))).unwrap_or((u64::MAX, u64::MAX));
        let [i, j] = self.original_element;
        (seed, tile, i, j)
    }

    /// What `--per-class` caps: the path, the two sides and the class the hunt counted.
    fn cap_key(&self) -> (String, String, String, String) {
        (self.path.clone(), self.a.side.clone(), self.b.side.clone(), self.hunt_class.clone().unwrap_or_else(|| self.class.clone()))
    }

    /// Parse a finding file's record block.
    pub fn parse(text: &str) -> Result<Finding, String> {
        let start = text.rfind(RECORD_FENCE).ok_or("no ```json record block")? + RECORD_FENCE.len();
        let end = text[start..].find("\n```").ok_or("the record block is not closed")? + start;
        serde_json::from_str(&text[start..end]).map_err(|e| format!("bad record: {e}"))
    }
}

/// `a[i][k] = 3c00, ...` for every nonzero input of an interchange case.
fn nonzero_inputs(case: &Value) -> String {
    let dim = |k: &str| case[k].as_u64().unwrap_or(1).max(1) as usize;
    let (n, k) = (dim("n"), dim("k"));
    // A sparse case's A holds k/2 kept values per row: each printed at its dense position.
    let meta: Option<Vec<u64>> = case["meta"].as_array().map(|m| m.iter().map(|x| x.as_u64().unwrap_or(0)).collect());
    let a_cols = if meta.is_some() { (k / 2).max(1) } else { k };
    let mut parts = Vec::new();
    for (name, cols) in [("a", a_cols), ("b", n), ("c", n)] {
        for (idx, v) in case[name].as_array().into_iter().flatten().enumerate() {
            let bits = v.as_str().unwrap_or("?");
            if bits.chars().any(|ch| ch != '0') {
                let col = match (&meta, name) {
                    (Some(m), "a") => 4 * (idx % cols / 2) + m.get(idx).copied().unwrap_or(0) as usize,
                    _ => idx % cols,
                };
                parts.push(format!("{name}[{}][{col}] = {bits}", idx / cols));
            }
        }
    }
    if parts.is_empty() {
        "all inputs zero".into()
    } else {
        parts.join("\n")
    }
}

/// The file a finding lives in.
pub fn finding_file(dir: &Path, f: &Finding) -> PathBuf {
    dir.join(&f.path).join(format!("{}.md", f.id))
}

/// What happened when a finding was stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    New,
    /// Same minimised case as an existing file: its count was raised.
    Merged,
}

/// Write a finding, or merge it into the existing file with the same id (counts and dates). An
/// unreadable existing file is kept aside as `<name>.unreadable` and reported in the error list.
pub fn store(dir: &Path, mut f: Finding, problems: &mut Vec<String>) -> std::io::Result<Stored> {
    let file = finding_file(dir, &f);
    let mut how = Stored::New;
    match std::fs::read_to_string(&file) {
        Ok(text) => match Finding::parse(&text) {
            Ok(old) => {
                // Seen in both: counts add, the dates span both (a merge may bring older ones).
                f.seen += old.seen;
                f.first_seen = f.first_seen.clone().min(old.first_seen);
                f.last_seen = f.last_seen.clone().max(old.last_seen);
                how = Stored::Merged;
            }
            Err(e) => {
                let aside = file.with_extension("md.unreadable");
                std::fs::rename(&file, &aside)?;
                problems.push(format!("{}: {e} (kept as {})", file.display(), aside.display()));
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    crate::store::write_atomically(&file, f.render().as_bytes())?;
    Ok(how)
}

/// Merge every finding under each of `sources` into `into` (a findings directory, one
/// subdirectory per path): a finding already there (same id: the same minimised case) has its
/// counts added and its dates widened, a new one is written. With `per_class`, the sources are
/// first capped as one hunt caps them: per path, sides and class, only the findings of the
/// `per_class` divergences met first hunt-wide (lowest seed, tile, element) are merged, so the
/// shards of a hunt merge into what the whole hunt finds. Returns (new, merged, left out by the
/// cap, unreadable files named with their reason).
pub fn merge(into: &Path, sources: &[PathBuf], per_class: Option<u64>) -> std::io::Result<MergeCounts> {
    let mut counts = MergeCounts::default();
    let mut found = Vec::new();
    for src in sources {
        let (all, bad) = read_all(src);
        counts.problems.extend(bad);
        found.extend(all.into_iter().map(|(_, f)| f));
    }
    if let Some(cap) = per_class {
        found.sort_by_cached_key(|f| (f.cap_key(), f.hunt_position(), f.id.clone()));
        let mut taken: std::collections::HashMap<_, u64> = std::collections::HashMap::new();
        let before = found.len();
        found.retain(|f| {
            let n = taken.entry(f.cap_key()).or_default();
            *n += 1;
            *n <= cap
        });
        counts.capped = before - found.len();
    }
    for f in found {
        match store(into, f, &mut counts.problems)? {
            Stored::New => counts.new += 1,
            Stored::Merged => counts.merged += 1,
        }
    }
    Ok(counts)
}

/// What [`merge`] did.
#[derive(Debug, Default)]
pub struct MergeCounts {
    pub new: usize,
    pub merged: usize,
    /// Findings of the sources left out by the per-class cap.
    pub capped: usize,
    /// Unreadable files, "file: reason".
    pub problems: Vec<String>,
}

/// Every finding under `dir` (recursively); files that cannot be read or parsed are returned
/// as "file: reason" and skipped.
pub fn read_all(dir: &Path) -> (Vec<(PathBuf, Finding)>, Vec<String>) {
    let (mut ok, mut bad) = (Vec::new(), Vec::new());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name.starts_with('.') {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if name.ends_with(".md") && name != "README.md" {
                match std::fs::read_to_string(&p).map_err(|e| e.to_string()).and_then(|t| Finding::parse(&t)) {
                    Ok(f) => ok.push((p, f)),
                    Err(e) => bad.push(format!("{}: {e}", p.display())),
                }
            }
        }
    }
    (ok, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(id: &str) -> Finding {
        let side = |s: &str| SideOutput { side: s.into(), detail: format!("{s} detail"), bits: "3f800000".into(), value: "1".into() };
        Finding {
            id: id.into(),
            path: "mma.m16n8k16.f32.f16.f16.f32".into(),
            class: "finite: A below, B nearest, 1 ulp apart".into(),
            hunt_class: None,
            summary: "c = 1; 2^-24·1 at k = 0".into(),
            a: side("gpu"),
            b: side("h100"),
            exact: "1".into(),
            exact_nearest: "3f800000".into(),
            explanation: "x".into(),
            knob_changes: vec![],
            minimised: serde_json::json!({"a": ["3c00"], "b": ["3c00"], "c": ["3f800000"]}),
            minimised_element: [0, 0],
            original: serde_json::json!({"recipe": {"kind": "band"}}),
            original_element: [3, 4],
            rounds: 5,
            evaluated: 100,
            seen: 1,
            first_seen: "2026-11-01".into(),
            last_seen: "2026-11-22".into(),
        }
    }

    #[test]
    fn round_trips_merges_and_reports_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = sample("00000000000000aa");
        assert_eq!(Finding::parse(&f.render()).unwrap(), f);
        let mut problems = vec![];
        assert_eq!(store(dir.path(), f.clone(), &mut problems).unwrap(), Stored::New);
        let mut again = f.clone();
        again.first_seen = "2026-11-22".into();
        assert_eq!(store(dir.path(), again, &mut problems).unwrap(), Stored::Merged);
        let (all, bad) = read_all(dir.path());
        assert!(bad.is_empty());
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].1.seen, 2);
        assert_eq!(all[0].1.first_seen, "2026-11-01");
        // A truncated file is named and skipped; storing over it keeps it aside.
        let file = finding_file(dir.path(), &f);
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, &text[..text.len() / 2]).unwrap();
        let (all, bad) = read_all(dir.path());
        assert!(all.is_empty());
        assert!(bad[0].contains(&format!("{}.md", f.id)), "{bad:?}");
        assert_eq!(store(dir.path(), f.clone(), &mut problems).unwrap(), Stored::New);
        assert_eq!(problems.len(), 1);
        assert!(file.with_extension("md.unreadable").exists());
    }

    /// A sparse case's kept A values are listed at their dense positions.
    #[test]
    fn sparse_inputs_print_at_dense_positions() {
        let case = serde_json::json!({"m": 2, "n": 1, "k": 8, "a": ["0", "3c00", "0", "0", "0", "0", "4000", "0"], "meta": [0, 3, 1, 2, 0, 1, 1, 3], "b": ["0", "0", "0", "0", "0", "0", "0", "0"], "c": ["0", "0"]});
        assert_eq!(nonzero_inputs(&case), "a[0][3] = 3c00\na[1][5] = 4000");
    }
}
