//! The kernel configurations cuBLASLt chose, per shape, as recorded on the GPU: what a library
//! model looks up to know which schedule a GEMM of shape m×n×k runs.
//!
//! File format (`models/<arch>/cublas/<path>.configs.tsv`, gzipped where the name says so):
//! comment lines start with `#`; `cfg<TAB>ID<TAB>ALGO` lines name each configuration as the log
//! wrote it (the text of `algo=[...]`); every other line is `M<TAB>N<TAB>K<TAB>BETA<TAB>ID`.
//! Shapes are PyTorch's: A is m×k and B k×n, row-major (cuBLAS sees the transposed problem).

use super::config::{ConfigError, KernelConfig};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Shape → configuration, for one library path on one GPU and library version.
#[derive(Clone, Debug, Default)]
pub struct ConfigTable {
    /// Where the recording came from (the `#` lines).
    pub provenance: Vec<String>,
    configs: Vec<KernelConfig>,
    shapes: HashMap<(usize, usize, usize, bool), usize>,
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
            let [m, n, k, beta, id] = fields[..] else { return Err(bad(format!("expected M N K BETA ID, got {} fields", fields.len()))) };
            let num = |s: &str, what: &str| s.parse::<usize>().map_err(|_| bad(format!("{what} '{s}' is not a number")));
            let (m, n, k) = (num(m, "m")?, num(n, "n")?, num(k, "k")?);
            let beta = match beta {
                "0" => false,
                "1" => true,
                _ => return Err(bad(format!("beta '{beta}' is not 0 or 1"))),
            };
            let index = *ids.get(id).ok_or_else(|| bad(format!("configuration '{id}' is not defined above")))?;
            t.shapes.insert((m, n, k, beta), index);
        }
        Ok(t)
    }

    /// The configuration recorded for this shape, if any.
    pub fn get(&self, m: usize, n: usize, k: usize, beta: bool) -> Option<&KernelConfig> {
        self.shapes.get(&(m, n, k, beta)).map(|&i| &self.configs[i])
    }

    /// Record a configuration for a shape (replacing what was there).
    pub fn insert(&mut self, m: usize, n: usize, k: usize, beta: bool, config: KernelConfig) {
        let index = match self.configs.iter().position(|c| *c == config) {
            Some(i) => i,
            None => {
                self.configs.push(config);
                self.configs.len() - 1
            }
        };
        self.shapes.insert((m, n, k, beta), index);
    }

    pub fn len(&self) -> usize {
        self.shapes.len()
    }

    /// Every learned shape `(m, n, k, beta)` with its configuration, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = ((usize, usize, usize, bool), &KernelConfig)> {
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
        for (&(m, n, k, beta), id) in shapes {
            let _ = writeln!(s, "{m}\t{n}\t{k}\t{}\t{id}", beta as u8);
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
        assert_eq!(t.get(128, 128, 4096, false).unwrap().split_k, 3);
        assert_eq!(t.get(128, 128, 1024, false).unwrap().split_k, 1);
        assert!(t.get(128, 128, 4096, true).is_none());
        let again = ConfigTable::parse(&t.to_text()).unwrap();
        assert_eq!(again.get(128, 128, 4096, false), t.get(128, 128, 4096, false));
        assert_eq!((again.len(), again.distinct()), (2, 2));
        assert_eq!(again.provenance, vec!["recorded on NVIDIA H100 80GB HBM3"]);
    }

    #[test]
    fn bad_lines_name_their_number() {
        for (text, line) in [("1\t2\t3\t0\tz\n", 1), ("cfg\ta\talgoId=66\n1\t2\tx\t0\ta\n", 2), ("cfg\ta\n", 1), ("cfg\ta\talgoId=66\n1\t2\t3\t7\ta\n", 2)] {
            let e = ConfigTable::parse(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("line {line}:")), "{text:?}: {e}");
        }
    }
}
