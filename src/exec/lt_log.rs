//! cuBLASLt's trace log, read: every `cublasLtMatmul` (also the ones cuBLAS makes for
//! `cublasGemmEx`, `cublasSgemm` and `cublasDgemm`, which run through cuBLASLt) logs one line at
//! level 5 naming the matrix layouts, the compute descriptor and the kernel (`algo=[...]`).
//!
//! A line as `CUBLASLT_LOG_FILE` holds it (what `scripts/torch-lib.py` parses with its `TRACE`
//! expression), shortened:
//!
//! ```text
//! [2025-..][cublasLt][123][Trace][cublasLtMatmul] A=0x.. Adesc=[type=R_16F rows=64 cols=128 ld=64]
//!   B=0x.. Bdesc=[type=R_16F rows=64 cols=32 ld=64] C=0x.. Cdesc=[...] D=0x.. Ddesc=[type=R_32F
//!   rows=128 cols=32 ld=128] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F]
//!   algo=[algoId=66 tile=MATMUL_TILE_128x64 ...] workSpace=0x.. workSpaceSizeInBytes=33554432
//!   beta=0 outOfPlace=0 stream=0x0
//! ```
//!
//! A logger callback (`cublasLtLoggerSetCallback`) gets the function name and the text after it;
//! [`TraceLine::parse`] reads either form. Pure text: no CUDA here, so it is tested anywhere.

/// One matrix layout of a trace line: `type=R_16F rows=.. cols=..`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceLayout {
    pub dtype: String,
    pub rows: u64,
    pub cols: u64,
}

/// What one `cublasLt*Matmul` trace line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceLine {
    /// The function logged, e.g. `cublasLtMatmul` (`cublasLt(\w*)Matmul`).
    pub function: String,
    pub a: TraceLayout,
    pub b: TraceLayout,
    pub d: TraceLayout,
    /// The text inside `computeDesc=[...]`.
    pub compute: String,
    /// The `key=value` pairs inside `algo=[...]`, in the log's order.
    pub algo: Vec<(String, String)>,
    pub workspace: u64,
    pub beta: String,
}

/// The bracketed text after `key=[`, up to its `]`.
fn bracket<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let at = text.find(&format!("{key}=["))? + key.len() + 2;
    let end = text[at..].find(']')?;
    Some(&text[at..at + end])
}

/// The value after ` key=` (or at the start), up to the next space.
fn word<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut from = 0;
    while let Some(i) = text[from..].find(&pat) {
        let at = from + i;
        let starts_word = at == 0 || text.as_bytes()[at - 1].is_ascii_whitespace();
        if starts_word {
            let rest = &text[at + pat.len()..];
            return Some(rest.split_whitespace().next().unwrap_or(""));
        }
        from = at + pat.len();
    }
    None
}

fn layout(text: &str, key: &str) -> Option<TraceLayout> {
    let inner = bracket(text, key)?;
    Some(TraceLayout { dtype: word(inner, "type")?.to_string(), rows: word(inner, "rows")?.parse().ok()?, cols: word(inner, "cols")?.parse().ok()? })
}

impl TraceLine {
    /// Read one line of the log file (`[Trace][cublasLt...Matmul] ...`), or a callback's
    /// message with its function name given separately (`function` = `Some("cublasLtMatmul")`).
    /// `None` for any other line (hints, info, other functions).
    pub fn parse(function: Option<&str>, text: &str) -> Option<TraceLine> {
        let function = match function {
            Some(f) => f.to_string(),
            None => {
                let at = text.find("[Trace][")? + "[Trace][".len();
                let end = text[at..].find(']')?;
                text[at..at + end].to_string()
            }
        };
        if !(function.starts_with("cublasLt") && function.ends_with("Matmul")) {
            return None;
        }
        let algo = bracket(text, "algo")?
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Some(TraceLine {
            function,
            a: layout(text, "Adesc")?,
            b: layout(text, "Bdesc")?,
            d: layout(text, "Ddesc")?,
            compute: bracket(text, "computeDesc")?.to_string(),
            algo,
            workspace: word(text, "workSpaceSizeInBytes").and_then(|w| w.parse().ok()).unwrap_or(0),
            beta: word(text, "beta").unwrap_or("").to_string(),
        })
    }

    /// The kernel configuration as `scripts/torch-lib.py` writes it into a record's `"config"`:
    /// the `algo=[...]` pairs joined by spaces.
    pub fn config(&self) -> String {
        self.algo.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }

    /// Whether the call had PyTorch's m×n problem: cuBLAS sees the transposed one, so D is
    /// n rows by m columns.
    pub fn has_shape(&self, m: usize, n: usize) -> bool {
        self.d.rows == n as u64 && self.d.cols == m as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE_LINE: &str = "[2026-03-02 10:11:12][cublasLt][4242][Trace][cublasLtMatmul] A=0x7f0000000000 Adesc=[type=R_16F rows=96 cols=257 ld=96] B=0x7f0000100000 Bdesc=[type=R_16F rows=257 cols=33 ld=257] C=0x7f0000200000 Cdesc=[type=R_32F rows=96 cols=33 ld=96] D=0x7f0000200000 Ddesc=[type=R_32F rows=96 cols=33 ld=96] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F] algo=[algoId=66 tile=MATMUL_TILE_64x32 stages=MATMUL_STAGES_64x5 customOption=3 numSplitsK=2 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE] workSpace=0x7f0001000000 workSpaceSizeInBytes=33554432 beta=1 outOfPlace=0 stream=0x0";

    #[test]
    fn reads_a_log_file_line() {
        let t = TraceLine::parse(None, FILE_LINE).expect("a trace line");
        assert_eq!(t.function, "cublasLtMatmul");
        assert_eq!(t.a, TraceLayout { dtype: "R_16F".into(), rows: 96, cols: 257 });
        assert_eq!(t.d.rows, 96);
        assert_eq!(t.compute, "computeType=COMPUTE_32F scaleType=R_32F");
        assert_eq!(t.workspace, 33554432);
        assert_eq!(t.beta, "1");
        assert_eq!(t.config(), "algoId=66 tile=MATMUL_TILE_64x32 stages=MATMUL_STAGES_64x5 customOption=3 numSplitsK=2 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE");
        // PyTorch's 33x96 (m x n) problem: cuBLAS's D is 96 rows, 33 columns.
        assert!(t.has_shape(33, 96));
        assert!(!t.has_shape(96, 33));
    }

    #[test]
    fn reads_a_callback_message() {
        let message = FILE_LINE.split_once("[cublasLtMatmul] ").unwrap().1;
        let t = TraceLine::parse(Some("cublasLtMatmul"), message).expect("a trace message");
        assert_eq!(t, TraceLine::parse(None, FILE_LINE).unwrap());
        // The config string is what the emulator's KernelConfig reads.
        assert!(crate::library::KernelConfig::from_log(&t.config()).is_ok());
    }

    #[test]
    fn other_lines_are_not_traces() {
        assert!(TraceLine::parse(None, "[2026][cublasLt][1][Api][cublasLtMatmulAlgoGetHeuristic] Adesc=[type=R_16F rows=1 cols=1]").is_none());
        assert!(TraceLine::parse(Some("cublasLtMatmulDescCreate"), "matmulDesc=0x1").is_none());
        assert!(TraceLine::parse(None, "[Trace][cublasLtMatmul] A=0x1 (truncated").is_none());
    }
}
