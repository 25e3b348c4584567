//! `MmaCase`: one `D = A·B + C` tile, and the JSONL interchange format that carries it.
//!
//! One JSON object per line: `{"a_fmt":"f16","c_fmt":"f32","m":16,"n":8,"k":16,"a":[...],
//! "b":[...],"c":[...]}`, A m×k, B k×n, C m×n, all row-major, every element the raw bit pattern
//! in lowercase hex without `0x`. Results repeat the input and add `"d"` (layout and format of C,
//! or of `"d_fmt"` where an instruction's D differs: `mma.m8n8k4.f32.f16.f16.f16` adds C in f16
//! into D in f32).
//! Fields we do not know are kept as they came, in order. A block-scaled case adds
//! `"scale_fmt"` (`ue8m0`/`ue4m3`), `"scale_block"` (elements along K per scale), `"scale_a"`
//! (m×(k/block)) and `"scale_b"` ((k/block)×n), each scale two hex digits.

use crate::blockscale::{BlockScales, ScaleFormat};
use crate::format::{Decoded, Format};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// One tile case.
#[derive(Clone, Debug, PartialEq)]
pub struct MmaCase {
    pub a_fmt: Format,
    /// Format of B; the interchange format has it only where it differs from A (`"b_fmt"`).
    pub b_fmt: Format,
    /// Format of C (and of D, unless `d_fmt` says otherwise).
    pub c_fmt: Format,
    /// Format of D: `c_fmt` except where the instruction's D is wider than its C
    /// (`mma.m8n8k4.f32.f16.f16.f16`); `"d_fmt"` in the interchange format only then.
    pub d_fmt: Format,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// m×k, row-major.
    pub a: Vec<u64>,
    /// k×n, row-major.
    pub b: Vec<u64>,
    /// m×n, row-major.
    pub c: Vec<u64>,
    /// 2:4 structured sparsity (`mma.sp`, `wgmma.sp`): `a` then holds m×(k/2) kept values, and
    /// `meta` (same shape, each 0..=3) where each sits in its group of four along K: kept
    /// value t of row i is A[i][4·(t/2) + meta[i·k/2 + t]]. Each pair's two indices increase
    /// (`::ordered_metadata`). The dot product is over the k/2 kept values.
    pub meta: Option<Vec<u8>>,
    /// Block scales of a block-scaled MMA (`"scale_fmt"`, `"scale_block"`, `"scale_a"`,
    /// `"scale_b"` in the interchange format): each element of A and B enters the dot product
    /// multiplied by its block's scale. See [`crate::blockscale`].
    pub scales: Option<BlockScales>,
    /// Every other field of the input line, in order (provenance, recipes, previous results).
    pub extra: Map<String, Value>,
}

/// What is wrong with one line of an interchange file.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("field '{field}': {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

simd_where_available! {
    /// Every element OR-ed together: a pattern too wide for its format shows above the mask.
    fn or_all(v: &[u64]) -> u64 {
        v.iter().fold(0, |acc, &x| acc | x)
    }
}

fn field_err(field: &str, message: impl Into<String>) -> FieldError {
    FieldError { field: field.to_string(), message: message.into() }
}

impl MmaCase {
    /// A case of zeros of the given shape.
    pub fn zeros(a_fmt: Format, c_fmt: Format, m: usize, n: usize, k: usize) -> Self {
        MmaCase {
            a_fmt,
            b_fmt: a_fmt,
            c_fmt,
            d_fmt: c_fmt,
            m,
            n,
            k,
            a: vec![0; m * k],
            b: vec![0; k * n],
            c: vec![0; m * n],
            meta: None,
            scales: None,
            extra: Map::new(),
        }
    }

    /// A's element at row i and (dense) position kk along K. On a sparse case, the kept value
    /// there or +0 where the metadata keeps none: the dense expansion, which equals the sparse
    /// product wherever B's unselected rows are finite ([`MmaCase::dense_row`] is exact).
    pub fn a_at(&self, i: usize, kk: usize) -> u64 {
        match &self.meta {
            None => self.a[i * self.k + kk],
            Some(meta) => {
                let (half, group) = (self.k / 2, kk / 4);
                let at = i * half + 2 * group;
                (0..2).find(|&t| 4 * group + meta[at + t] as usize == kk).map_or(0, |t| self.a[at + t])
            }
        }
    }
    pub fn b_at(&self, kk: usize, j: usize) -> u64 {
        self.b[kk * self.n + j]
    }
    pub fn c_at(&self, i: usize, j: usize) -> u64 {
        self.c[i * self.n + j]
    }

    /// Whether each pair of A and B elements contributes `a XOR b` (b1 `.xor.popc` cases carry
    /// `"op": "xor"`) instead of the product `a·b`.
    pub fn xor_pairs(&self) -> bool {
        self.extra.get("op").and_then(Value::as_str) == Some("xor")
    }

    /// The dense positions along K that row i of a sparse case keeps, in order (k/2 of them);
    /// `None` for a dense case.
    pub fn picks(&self, i: usize) -> Option<Vec<usize>> {
        let meta = self.meta.as_ref()?;
        let half = self.k / 2;
        Some((0..half).map(|t| Self::kept_position(t, meta[i * half + t])).collect())
    }

    /// The dense position along K of a sparse row's kept value `t`, whose metadata index is
    /// `index`: each pair of kept values comes from its own group of four.
    #[inline]
    pub fn kept_position(t: usize, index: u8) -> usize {
        4 * (t / 2) + index as usize
    }

    /// Row i of a sparse case as the dense dot products it stands for: a 1×n×(k/2) case of the
    /// row's kept values, the rows of B they select and its row of C. `None` for a dense case.
    pub fn dense_row(&self, i: usize) -> Option<MmaCase> {
        let picks = self.picks(i)?;
        let half = self.k / 2;
        Some(MmaCase {
            m: 1,
            k: half,
            a: self.a[i * half..(i + 1) * half].to_vec(),
            b: picks.iter().flat_map(|&kk| self.b[kk * self.n..(kk + 1) * self.n].iter().copied()).collect(),
            c: self.c[i * self.n..(i + 1) * self.n].to_vec(),
            meta: None,
            scales: None,
            extra: self.extra.iter().filter(|(k, _)| *k == "op").map(|(k, v)| (k.clone(), v.clone())).collect(),
            ..*self
        })
    }

    /// Every row of a sparse case as [`MmaCase::dense_row`]; `None` for a dense case.
    pub fn dense_rows(&self) -> Option<Vec<MmaCase>> {
        self.meta.as_ref()?;
        Some((0..self.m).filter_map(|i| self.dense_row(i)).collect())
    }

    /// Check shapes and that every element fits its format's width.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.m == 0 || self.n == 0 || self.k == 0 {
            return Err(field_err("m", format!("shape {}x{}x{} has a zero dimension", self.m, self.n, self.k)));
        }
        if self.a_fmt.is_integer() != self.c_fmt.is_integer() || self.b_fmt.is_integer() != self.c_fmt.is_integer() {
            return Err(field_err("c_fmt", format!("{}/{} into {}: integer and floating-point formats do not mix in one case", self.a_fmt, self.b_fmt, self.c_fmt)));
        }
        if self.d_fmt.is_integer() != self.c_fmt.is_integer() {
            return Err(field_err("d_fmt", format!("{} into {}: integer and floating-point formats do not mix in one case", self.c_fmt, self.d_fmt)));
        }
        // A scan, not a hashed lookup: these maps hold a key or two (a recipe, a seed), and the
        // lookup runs for every tile the emulator is given.
        match self.extra.iter().find_map(|(key, v)| (key == "op").then_some(v)) {
            None => {}
            Some(op) if op.as_str() == Some("xor") && self.a_fmt == Format::B1 => {}
            Some(op) => return Err(field_err("op", format!("{op}: the only other pairing is \"xor\", for b1 operands (.xor.popc)"))),
        }
        if (self.a_fmt == Format::B1) != (self.b_fmt == Format::B1) {
            return Err(field_err("b_fmt", format!("{}/{}: b1 operands pair only with b1", self.a_fmt, self.b_fmt)));
        }
        let a_len = if self.meta.is_some() { self.m * self.k / 2 } else { self.m * self.k };
        if let Some(meta) = &self.meta {
            if self.k % 4 != 0 {
                return Err(field_err("meta", format!("2:4 sparsity needs K a multiple of 4, not {}", self.k)));
            }
            if meta.len() != a_len {
                return Err(field_err("meta", format!("has {} indices, the {} kept A elements need one each", meta.len(), a_len)));
            }
            // One pass without branches first; the offending pair only when there is one.
            let bad = |p: &[u8]| (p[0] >= p[1]) | (p[1] > 3);
            if meta.chunks_exact(2).fold(false, |any, p| any | bad(p)) {
                let t = meta.chunks_exact(2).position(bad).expect("some pair is out of order");
                return Err(field_err("meta", format!("pair {t} is {:?}: each pair's indices must increase within 0..=3", &meta[2 * t..2 * t + 2])));
            }
        }
        if let Some(s) = &self.scales {
            self.validate_scales(s)?;
        }
        for (name, v, len, f) in [
            ("a", &self.a, a_len, self.a_fmt),
            ("b", &self.b, self.k * self.n, self.b_fmt),
            ("c", &self.c, self.m * self.n, self.c_fmt),
        ] {
            if v.len() != len {
                return Err(field_err(name, format!("has {} elements, shape needs {len}", v.len())));
            }
            // One OR over the slice first (fast); the offending index only when there is one.
            if or_all(v) & !f.mask() != 0 {
                let i = v.iter().position(|&x| x & !f.mask() != 0).expect("some element is too wide");
                return Err(field_err(name, format!("element {i} does not fit in {f}")));
            }
        }
        Ok(())
    }

    fn validate_scales(&self, s: &BlockScales) -> Result<(), FieldError> {
        if self.meta.is_some() || self.c_fmt.is_integer() {
            return Err(field_err("scale_fmt", "block scales go with dense floating-point tiles only"));
        }
        if s.block == 0 || self.k % s.block != 0 {
            return Err(field_err("scale_block", format!("{} does not divide K = {}", s.block, self.k)));
        }
        let blocks = self.k / s.block;
        for (name, v, len) in [("scale_a", &s.a, self.m * blocks), ("scale_b", &s.b, blocks * self.n)] {
            if v.len() != len {
                return Err(field_err(name, format!("has {} scales, {} blocks of {} need {len}", v.len(), blocks, s.block)));
            }
            if let Some(i) = v.iter().position(|&x| x > s.fmt.max_bits()) {
                return Err(field_err(name, format!("scale {i} ({:02x}) is not a {} bit pattern (at most {:02x})", v[i], s.fmt, s.fmt.max_bits())));
            }
        }
        Ok(())
    }

    /// The scale factor of A's element (i, kk) and of B's element (kk, j), decoded; `None` for
    /// a case without block scales.
    pub fn scale_of_a(&self, i: usize, kk: usize) -> Option<Decoded> {
        self.scales.as_ref().map(|s| s.fmt.decode(s.a_at(i, kk, self.k)))
    }
    pub fn scale_of_b(&self, kk: usize, j: usize) -> Option<Decoded> {
        self.scales.as_ref().map(|s| s.fmt.decode(s.b_at(kk, j, self.n)))
    }

    /// Parse one interchange line.
    pub fn from_json_line(line: &str) -> Result<Self, FieldError> {
        let value: Value = serde_json::from_str(line).map_err(|e| field_err("<line>", format!("not JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(field_err("<line>", "expected a JSON object"));
        };
        Self::from_json(obj)
    }

    pub fn from_json(mut obj: Map<String, Value>) -> Result<Self, FieldError> {
        let fmt = |obj: &mut Map<String, Value>, key: &str| -> Result<Option<Format>, FieldError> {
            match obj.shift_remove(key) {
                None => Ok(None),
                Some(Value::String(s)) => s.parse().map(Some).map_err(|e: String| field_err(key, e)),
                Some(_) => Err(field_err(key, "expected a format name string")),
            }
        };
        let a_fmt = fmt(&mut obj, "a_fmt")?.ok_or_else(|| field_err("a_fmt", "missing"))?;
        let b_fmt = fmt(&mut obj, "b_fmt")?.unwrap_or(a_fmt);
        let c_fmt = fmt(&mut obj, "c_fmt")?.ok_or_else(|| field_err("c_fmt", "missing"))?;
        let d_fmt = fmt(&mut obj, "d_fmt")?.unwrap_or(c_fmt);
        let dim = |obj: &mut Map<String, Value>, key: &str| -> Result<usize, FieldError> {
            match obj.shift_remove(key) {
                Some(Value::Number(n)) => n
                    .as_u64()
                    .filter(|&v| v > 0 && v <= 1 << 20)
                    .map(|v| v as usize)
                    .ok_or_else(|| field_err(key, "expected a positive integer up to 2^20")),
                Some(_) => Err(field_err(key, "expected a positive integer")),
                None => Err(field_err(key, "missing")),
            }
        };
        let (m, n, k) = (dim(&mut obj, "m")?, dim(&mut obj, "n")?, dim(&mut obj, "k")?);
        let a = parse_hex_array(obj.shift_remove("a"), "a", a_fmt)?;
        let b = parse_hex_array(obj.shift_remove("b"), "b", b_fmt)?;
        let c = parse_hex_array(obj.shift_remove("c"), "c", c_fmt)?;
        let meta = match obj.shift_remove("meta") {
            None => None,
            Some(Value::Array(v)) => Some(
                v.iter()
                    .map(|x| x.as_u64().filter(|&i| i <= 3).map(|i| i as u8))
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(|| field_err("meta", "expected indices 0 to 3 (position of each kept A element in its group of four)"))?,
            ),
            Some(_) => return Err(field_err("meta", "expected an array of indices 0 to 3")),
        };
        let scales = parse_scales(&mut obj)?;
        let case = MmaCase { a_fmt, b_fmt, c_fmt, d_fmt, m, n, k, a, b, c, meta, scales, extra: obj };
        case.validate()?;
        Ok(case)
    }

    /// The case as a JSON object, known fields first, then the preserved extras.
    pub fn to_json(&self) -> Map<String, Value> {
        let mut obj = Map::new();
        obj.insert("a_fmt".into(), self.a_fmt.name().into());
        if self.b_fmt != self.a_fmt {
            obj.insert("b_fmt".into(), self.b_fmt.name().into());
        }
        obj.insert("c_fmt".into(), self.c_fmt.name().into());
        if self.d_fmt != self.c_fmt {
            obj.insert("d_fmt".into(), self.d_fmt.name().into());
        }
        obj.insert("m".into(), self.m.into());
        obj.insert("n".into(), self.n.into());
        obj.insert("k".into(), self.k.into());
        obj.insert("a".into(), hex_array(&self.a, self.a_fmt));
        obj.insert("b".into(), hex_array(&self.b, self.b_fmt));
        obj.insert("c".into(), hex_array(&self.c, self.c_fmt));
        if let Some(meta) = &self.meta {
            obj.insert("meta".into(), meta.iter().map(|&x| Value::from(x)).collect());
        }
        if let Some(s) = &self.scales {
            obj.insert("scale_fmt".into(), s.fmt.name().into());
            obj.insert("scale_block".into(), s.block.into());
            obj.insert("scale_a".into(), s.a.iter().map(|&x| Value::String(format!("{x:02x}"))).collect());
            obj.insert("scale_b".into(), s.b.iter().map(|&x| Value::String(format!("{x:02x}"))).collect());
        }
        for (key, v) in &self.extra {
            if !obj.contains_key(key) {
                obj.insert(key.clone(), v.clone());
            }
        }
        obj
    }

    /// The result line: the case with `"d"` set (replacing any earlier `"d"`).
    pub fn result_json(&self, d: &[u64]) -> String {
        let mut obj = self.to_json();
        obj.insert("d".into(), hex_array(d, self.d_fmt));
        Value::Object(obj).to_string()
    }

    /// A previously recorded `"d"` carried in the extras, if any.
    pub fn recorded_d(&self) -> Result<Option<Vec<u64>>, FieldError> {
        match self.extra.get("d") {
            None => Ok(None),
            Some(v) => {
                let d = parse_hex_array(Some(v.clone()), "d", self.d_fmt)?;
                if d.len() != self.m * self.n {
                    return Err(field_err("d", format!("has {} elements, shape needs {}", d.len(), self.m * self.n)));
                }
                Ok(Some(d))
            }
        }
    }
}

/// The block scales of a line: all four fields or none.
fn parse_scales(obj: &mut Map<String, Value>) -> Result<Option<BlockScales>, FieldError> {
    const KEYS: [&str; 4] = ["scale_fmt", "scale_block", "scale_a", "scale_b"];
    let present: Vec<&str> = KEYS.into_iter().filter(|k| obj.contains_key(*k)).collect();
    if present.is_empty() {
        return Ok(None);
    }
    if let Some(missing) = KEYS.into_iter().find(|k| !present.contains(k)) {
        return Err(field_err(missing, format!("missing: a block-scaled case has all of {}", KEYS.join(", "))));
    }
    let fmt = match obj.shift_remove("scale_fmt") {
        Some(Value::String(s)) => s.parse::<ScaleFormat>().map_err(|e| field_err("scale_fmt", e))?,
        _ => return Err(field_err("scale_fmt", "expected \"ue8m0\" or \"ue4m3\"")),
    };
    let block = match obj.shift_remove("scale_block") {
        Some(Value::Number(n)) => n.as_u64().filter(|&v| (1..=1 << 20).contains(&v)).map(|v| v as usize),
        _ => None,
    }
    .ok_or_else(|| field_err("scale_block", "expected a positive integer (elements along K per scale)"))?;
    let mut bytes = |key: &str| -> Result<Vec<u8>, FieldError> {
        let Some(Value::Array(items)) = obj.shift_remove(key) else {
            return Err(field_err(key, "expected an array of two-hex-digit scale bit patterns"));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_str()
                    .filter(|s| (1..=2).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_hexdigit()))
                    .map(|s| u8::from_str_radix(s, 16).expect("checked hex"))
                    .ok_or_else(|| field_err(key, format!("element {i} is not a scale bit pattern (one or two hex digits)")))
            })
            .collect()
    };
    let (a, b) = (bytes("scale_a")?, bytes("scale_b")?);
    Ok(Some(BlockScales { fmt, block, a, b }))
}

/// Format a bit pattern as the interchange format writes it.
pub fn hex(bits: u64, f: Format) -> String {
    let mut s = String::with_capacity(f.hex_digits());
    let _ = write!(s, "{:0width$x}", bits & f.mask(), width = f.hex_digits());
    s
}

fn hex_array(v: &[u64], f: Format) -> Value {
    Value::Array(v.iter().map(|&x| Value::String(hex(x, f))).collect())
}

fn parse_hex_array(v: Option<Value>, field: &str, f: Format) -> Result<Vec<u64>, FieldError> {
    let Some(v) = v else { return Err(field_err(field, "missing")) };
    let Value::Array(items) = v else { return Err(field_err(field, "expected an array of hex strings")) };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let s = item
                .as_str()
                .ok_or_else(|| field_err(field, format!("element {i} is not a string")))?;
            if s.is_empty() || s.len() > f.hex_digits() || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(field_err(
                    field,
                    format!("element {i} '{s}' is not a {f} bit pattern (at most {} hex digits, no 0x)", f.hex_digits()),
                ));
            }
            Ok(u64::from_str_radix(s, 16).expect("checked hex"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"a_fmt":"f16","c_fmt":"f32","m":1,"n":2,"k":2,"a":["3c00","0001"],"b":["3c00","0","4000","bc00"],"c":["3f800000","80000000"],"recipe":{"gen":"x"},"note":"keep me"}"#;

    /// A 2:4 sparse case is the dense dot products over the values its metadata keeps: the
    /// emulator and the MPFR reference see B's selected rows only (an infinity in a row no
    /// metadata selects does not reach D).
    #[test]
    fn sparse_cases_gather_the_rows_their_metadata_selects() {
        let line = r#"{"a_fmt":"f16","c_fmt":"f32","m":2,"n":1,"k":8,"a":["3c00","4000","4200","4400","3c00","3c00","3c00","3c00"],"meta":[0,2,1,3,0,1,2,3],"b":["3c00","7c00","4000","4200","4400","4500","4600","4700"],"c":["00000000","3f800000"]}"#;
        let case = MmaCase::from_json_line(line).unwrap();
        let rows = case.dense_rows().unwrap();
        assert_eq!(rows[0].b, vec![0x3c00, 0x4000, 0x4500, 0x4700], "k = 0, 2, 5, 7");
        assert_eq!(rows[1].b, vec![0x3c00, 0x7c00, 0x4600, 0x4700], "k = 0, 1, 6, 7");
        let exact = crate::exact::exact_tile(&case);
        // Row 0: 1·1 + 2·2 + 3·5 + 4·7 = 48; row 1 selects B's infinity: +inf.
        assert_eq!(exact[0].round(Format::F32, crate::format::Rounding::Rne), 48f32.to_bits() as u64);
        assert_eq!(exact[1].round(Format::F32, crate::format::Rounding::Rne), f32::INFINITY.to_bits() as u64);
        let d = crate::model::Emulator::new(crate::model::Model::load("exact-rne").unwrap()).run(&case).unwrap();
        assert_eq!(d, vec![48f32.to_bits() as u64, f32::INFINITY.to_bits() as u64]);
        assert_eq!(MmaCase::from_json_line(&case.result_json(&d)).unwrap().meta, case.meta, "meta round-trips");
        let unordered = line.replace("[0,2,1,3,0,1,2,3]", "[2,0,1,3,0,1,2,3]");
        assert_eq!(MmaCase::from_json_line(&unordered).unwrap_err().field, "meta");
        let short = line.replace("[0,2,1,3,0,1,2,3]", "[0,2]");
        assert_eq!(MmaCase::from_json_line(&short).unwrap_err().field, "meta");
    }

    #[test]
    fn integer_cases_do_not_mix_with_floats_and_only_b1_pairs_by_xor() {
        let mut c = MmaCase::zeros(Format::S8, Format::F32, 1, 1, 1);
        assert_eq!(c.validate().unwrap_err().field, "c_fmt");
        c.c_fmt = Format::S32;
        // D's format follows C's kind too (an integer C with a float D is no case).
        assert_eq!(c.validate().unwrap_err().field, "d_fmt");
        c.d_fmt = Format::S32;
        c.validate().unwrap();
        c.extra.insert("op".into(), "xor".into());
        assert_eq!(c.validate().unwrap_err().field, "op");
        let mut bits = MmaCase::zeros(Format::B1, Format::S32, 1, 1, 2);
        bits.extra.insert("op".into(), "xor".into());
        bits.validate().unwrap();
        assert!(bits.xor_pairs());
        bits.b_fmt = Format::S8;
        assert_eq!(bits.validate().unwrap_err().field, "b_fmt");
        let line = r#"{"a_fmt":"s4","b_fmt":"u4","c_fmt":"s32","m":1,"n":1,"k":2,"a":["f","7"],"b":["f","1"],"c":["80000000"]}"#;
        let parsed = MmaCase::from_json_line(line).unwrap();
        assert_eq!((parsed.a_fmt, parsed.b_fmt, parsed.c[0]), (Format::S4, Format::U4, 0x8000_0000));
        assert!(MmaCase::from_json_line(&line.replace("\"f\",\"7\"", "\"1f\",\"7\"")).is_err(), "s4 holds one hex digit");
    }

    #[test]
    fn round_trip_keeps_unknown_fields_in_order() {
        let case = MmaCase::from_json_line(LINE).unwrap();
        assert_eq!((case.m, case.n, case.k), (1, 2, 2));
        assert_eq!(case.b, vec![0x3c00, 0, 0x4000, 0xbc00]);
        let out = case.result_json(&[0x4000_0000, 0x8000_0000]);
        assert!(out.contains(r#""b":["3c00","0000","4000","bc00"]"#), "{out}");
        assert!(out.ends_with(r#""recipe":{"gen":"x"},"note":"keep me","d":["40000000","80000000"]}"#), "{out}");
        let again = MmaCase::from_json_line(&out).unwrap();
        assert_eq!(again.recorded_d().unwrap(), Some(vec![0x4000_0000, 0x8000_0000]));
    }

    #[test]
    fn numbers_in_unknown_fields_pass_through_exactly() {
        // Found by the parse_interchange fuzz target: without correctly rounded float parsing
        // this number read as 1.1111111111111108e81 and was written back changed.
        let line = LINE.replace(r#""note":"keep me""#, r#""note":1.111111111111111e+81"#);
        let case = MmaCase::from_json_line(&line).unwrap();
        assert_eq!(case.extra["note"].as_f64(), Some(1.111111111111111e81));
        let again = MmaCase::from_json_line(&serde_json::to_string(&case.to_json()).unwrap()).unwrap();
        assert_eq!(again, case);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (LINE.replace(r#""m":1"#, r#""m":0"#), "m"),
            (LINE.replace(r#""a_fmt":"f16""#, r#""a_fmt":"f17""#), "a_fmt"),
            (LINE.replace(r#""0001""#, r#""10001""#), "a"),
            (LINE.replace(r#""0001""#, r#""0x01""#), "a"),
            (LINE.replace(r#","bc00""#, ""), "b"),
            (LINE.replace(r#""c_fmt":"f32","#, ""), "c_fmt"),
            ("[1,2]".to_string(), "<line>"),
            ("{".to_string(), "<line>"),
        ];
        for (line, field) in cases {
            let e = MmaCase::from_json_line(&line).unwrap_err();
            assert_eq!(e.field, field, "{line}: {e}");
        }
    }
}
