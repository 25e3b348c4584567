//! One whole-GEMM JSONL line, as `emulate` under a library model and `run` on a library path
//! read and write it: no `"c"` means β = 0 (torch.mm), `"c"` β = 1 (torch.addmm), `"bias"` (n
//! hex elements of D's format, instead of `"c"`) F.linear's bias; a `"config"` in the log's
//! form may name the kernel. The answer is the line with `"config"` and `"d"` added.

use mmafuzz::case::hex;
use mmafuzz::{Format, MmaCase};
use serde_json::Value;

pub struct GemmLine {
    /// The case, with C all zeros where the line had none.
    pub case: MmaCase,
    pub m: usize,
    pub n: usize,
    pub had_c: bool,
    pub bias: Option<Vec<u64>>,
    bias_json: Option<Value>,
    /// The line's `"config"`, as given.
    pub config: Option<Value>,
}

impl GemmLine {
    /// Parses a line for a GEMM whose A, B and C/D formats must be `formats` (`who` names
    /// the model or path in the error).
    pub fn parse(line: &str, formats: (Format, Format, Format), who: &str) -> Result<GemmLine, String> {
        let Value::Object(mut obj) = serde_json::from_str::<Value>(line).map_err(|e| format!("field '<line>': not JSON: {e}"))? else {
            return Err("field '<line>': expected a JSON object".into());
        };
        let dim = |key: &str| obj.get(key).and_then(Value::as_u64).map(|v| v as usize);
        let (m, n) = (dim("m").ok_or("field 'm': missing")?, dim("n").ok_or("field 'n': missing")?);
        let had_c = obj.contains_key("c");
        if !had_c {
            obj.insert("c".into(), Value::Array(vec![Value::String("0".into()); m * n]));
        }
        let bias_json = obj.shift_remove("bias");
        let config = obj.shift_remove("config");
        obj.shift_remove("d");
        let case = MmaCase::from_json(obj).map_err(|e| e.to_string())?;
        let (a, b, d) = formats;
        if (case.a_fmt, case.b_fmt, case.c_fmt) != formats {
            return Err(format!("field 'a_fmt': {who} takes A {a}, B {b}, C/D {d} (got {}, {}, {})", case.a_fmt, case.b_fmt, case.c_fmt));
        }
        let bias = match &bias_json {
            None => None,
            Some(Value::Array(items)) if items.len() == n && !had_c => Some(
                items
                    .iter()
                    .map(|v| v.as_str().and_then(|s| u64::from_str_radix(s, 16).ok()).filter(|x| x & !d.mask() == 0))
                    .collect::<Option<Vec<u64>>>()
                    .ok_or(format!("field 'bias': not {n} {d} bit patterns"))?,
            ),
            Some(_) => return Err(format!("field 'bias': expected {n} hex elements and no 'c'")),
        };
        Ok(GemmLine { case, m, n, had_c, bias, bias_json, config })
    }

    /// C as the GEMM takes it: None for β = 0.
    pub fn c(&self) -> Option<Vec<u64>> {
        self.had_c.then(|| self.case.c.clone())
    }

    /// The answer line: the input as read, the kernel configuration and D.
    pub fn answer(&self, config: Option<String>, d: &[u64]) -> String {
        let mut out = self.case.to_json();
        if !self.had_c {
            out.shift_remove("c");
        }
        if let Some(b) = &self.bias_json {
            out.insert("bias".into(), b.clone());
        }
        if let Some(c) = config {
            out.insert("config".into(), c.into());
        }
        out.insert("d".into(), Value::Array(d.iter().map(|&b| hex(b, self.case.c_fmt).into()).collect()));
        Value::Object(out).to_string()
    }
}
