//! The kernel configurations cuBLASLt chose, per shape, as recorded on the GPU: what a library
//! model looks up to know which schedule a GEMM of shape m×n×k runs.
//!
//! File format (`models/<arch>/cublas/<path>.configs.tsv`, gzipped where the name says so):
//! comment lines start with `#`; `cfg<TAB>ID<TAB>ALGO` lines name each configuration as the log
//! wrote it (the text of `algo=[...]`); every other line is `M<TAB>N<TAB>K<TAB>OP<TAB>ID`, OP the
//! PyTorch call ([`TorchOp`]: `mm`, `addmm`, `linear`, `linear_bias`, `scaled_mm`; the older
//! files' `0` and `1` read as `mm` and `addmm`). Shapes are PyTorch's: A (x) is m×k, D m×n
//! (cuBLAS sees the transposed problem).

use super::config::{ConfigError, KernelConfig};
use super::op::TorchOp;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The largest dimension a table line may hold (cuBLAS's own dimensions are 32-bit).
pub const MAX_DIM: usize = 1 << 31;

/// Shape → configuration, for one library path on one GPU and library version.
#[derive(Clone, Debug, Default)]
pub struct ConfigTable {
    /// Where the recording came from (the `#` lines).
    pub provenance: Vec<String>,
    configs: Vec<KernelConfig>,
    shapes: HashMap<(usize, usize, usize, TorchOp), usize>,
}

/// A line of a configuration table that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("line {line}: {message}")]
    Line { line: usize, message: String },
    #[error("line {line}: {source}")]
    Config { line: usize, source: ConfigError },
}

impl ConfigTable {
    pub fn parse(text: &str) -> Result<ConfigTable, TableError> {
        let mut t = ConfigTable::default();
        let mut ids: HashMap<String, usize> = HashMap::new();
        for (no, line) in text.lines().enumerate() {
            let line_no = no + 1;
            let bad = |message: String| TableError::Line { line: line_no, message };
            if let Some(c) = line.strip_prefix('#') {
                t.provenance.push(c.trim().to_string());
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            if fields[0] == "cfg" {
                let [_, id, algo] = fields[..] else { return Err(bad("expected cfg<TAB>ID<TAB>ALGO".into())) };
                let config = KernelConfig::from_log(algo).map_err(|source| TableError::Config { line: line_no, source })?;
                ids.insert(id.to_string(), t.configs.len());
                t.configs.push(config);
                continue;
            }
            let [m, n, k, op, id] = fields[..] else { return Err(bad(format!("expected M N K OP ID, got {} fields", fields.len()))) };
            let num = |s: &str, what: &str| match s.parse::<usize>() {
                Ok(0) => Err(bad(format!("{what} is 0"))),
                Ok(x) if x > MAX_DIM => Err(bad(format!("{what} {x} is past {MAX_DIM}"))),
                Ok(x) => Ok(x),
                Err(_) => Err(bad(format!("{what} '{s}' is not a number"))),
            };
            let (m, n, k) = (num(m, "m")?, num(n, "n")?, num(k, "k")?);
            let op: TorchOp = op.parse().map_err(bad)?;
            let index = *ids.get(id).ok_or_else(|| bad(format!("configuration '{id}' is not defined above")))?;
            t.shapes.insert((m, n, k, op), index);
        }
        Ok(t)
    }

    /// The configuration recorded for this shape and call, if any.
    pub fn get(&self, m: usize, n: usize, k: usize, op: TorchOp) -> Option<&KernelConfig> {
        self.shapes.get(&(m, n, k, op)).map(|&i| &self.configs[i])
    }

    /// The GPU the table was traced on, where its provenance names it (a `# gpu: NAME` line, as
    /// `mmafuzz library trace` and `library fit` write).
    pub fn gpu_name(&self) -> Option<&str> {
        self.provenance.iter().find_map(|p| p.strip_prefix("gpu: ")).map(|g| g.split(" (").next().unwrap_or(g).trim())
    }

    /// Whether any shape of this call kind was recorded.
    pub fn has_op(&self, op: TorchOp) -> bool {
        self.shapes.keys().any(|s| s.3 == op)
    }

    /// Record a configuration for a shape and call (replacing what was there).
    pub fn insert(&mut self, m: usize, n: usize, k: usize, op: TorchOp, config: KernelConfig) {
        let index = match self.configs.iter().position(|c| *c == config) {
            Some(i) => i,
            None => {
                self.configs.push(config);
                self.configs.len() - 1
            }
        };
        self.shapes.insert((m, n, k, op), index);
    }

    pub fn len(&self) -> usize {
        self.shapes.len()
    }

    /// Every learned shape `(m, n, k, op)` with its configuration, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = ((usize, usize, usize, TorchOp), &KernelConfig)> {
        self.shapes.iter().map(|(&s, &i)| (s, &self.configs[i]))
    }

    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }

    /// Distinct configurations that some shape uses.
    pub fn distinct(&self) -> usize {
        let mut used: Vec<usize> = self.shapes.values().copied().collect();
        used.sort_unstable();
        used.dedup();
        used.len()
    }

    /// The table in its file format, shapes sorted.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for p in &self.provenance {
            let _ = writeln!(s, "# {p}");
        }
        for (i, c) in self.configs.iter().enumerate() {
            let _ = writeln!(s, "cfg\t{i}\t{}", c.to_log());
        }
        let mut shapes: Vec<_> = self.shapes.iter().collect();
        shapes.sort();
        for (&(m, n, k, op), id) in shapes {
            let _ = writeln!(s, "{m}\t{n}\t{k}\t{op}\t{id}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "# recorded on NVIDIA H100 80GB HBM3\ncfg\ta\talgoId=66 tile=MATMUL_TILE_64x32 stages=MATMUL_STAGES_64xAUTO reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=3 customOption=3\ncfg\tb\talgoId=66 tile=MATMUL_TILE_64x8 stages=MATMUL_STAGES_64xAUTO\n128\t128\t4096\t0\ta\n128\t128\t1024\t0\tb\n";

    #[test]
    fn round_trips_and_looks_up() {
        let t = ConfigTable::parse(TABLE).unwrap();
        assert_eq!(t.get(128, 128, 4096, TorchOp::Mm).unwrap().split_k, 3);
        assert_eq!(t.get(128, 128, 1024, TorchOp::Mm).unwrap().split_k, 1);
        assert!(t.get(128, 128, 4096, TorchOp::Addmm).is_none());
        let again = ConfigTable::parse(&t.to_text()).unwrap();
        assert_eq!(again.get(128, 128, 4096, TorchOp::Mm), t.get(128, 128, 4096, TorchOp::Mm));
        assert_eq!((again.len(), again.distinct()), (2, 2));
        assert_eq!(again.provenance, vec!["recorded on NVIDIA H100 80GB HBM3"]);
    }

    #[test]
    fn calls_are_kept_apart() {
        let text = "cfg\ta\talgoId=66\ncfg\tb\talgoId=24\n8\t8\t8\tlinear\ta\n8\t8\t8\tlinear_bias\tb\n";
        let t = ConfigTable::parse(text).unwrap();
        assert_eq!(t.get(8, 8, 8, TorchOp::Linear).unwrap().algo, 66);
        assert_eq!(t.get(8, 8, 8, TorchOp::LinearBias).unwrap().algo, 24);
        assert!(t.get(8, 8, 8, TorchOp::Mm).is_none());
        assert!(t.has_op(TorchOp::Linear) && !t.has_op(TorchOp::Addmm));
        assert_eq!(ConfigTable::parse(&t.to_text()).unwrap().get(8, 8, 8, TorchOp::LinearBias).unwrap().algo, 24);
    }

    #[test]
    fn bad_lines_name_their_number() {
        for (text, line) in [
            ("1\t2\t3\t0\tz\n", 1),
            ("cfg\ta\talgoId=66\n1\t2\tx\t0\ta\n", 2),
            ("cfg\ta\n", 1),
            ("cfg\ta\talgoId=66\n1\t2\t3\t7\ta\n", 2),
            ("cfg\ta\talgoId=66\n1\t0\t3\tmm\ta\n", 2),
            ("cfg\ta\talgoId=66\n1\t99999999999\t3\tmm\ta\n", 2),
            ("cfg\ta\talgoId=66\n1\t2\t3\tbmm\ta\n", 2),
        ] {
            let e = ConfigTable::parse(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("line {line}:")), "{text:?}: {e}");
        }
    }
}
