//! The header of a `.npy` array, read without trusting it: the magic, the version, a length of
//! at most [`MAX_HEADER`] bytes, and the dictionary NumPy writes (`{'descr': '<f2',
//! 'fortran_order': False, 'shape': (2, 3), }`), parsed in one pass (no general Python-literal
//! parser whose backtracking a crafted header could make exponential) with its shape's element
//! count checked against [`MAX_ELEMENTS`] before anything is allocated.

use std::io::Read;

/// The largest header accepted (NumPy writes a few hundred bytes).
pub const MAX_HEADER: usize = 1 << 16;

/// The most elements one array may hold (2^32: a 65,536 × 65,536 matrix).
pub const MAX_ELEMENTS: u64 = 1 << 32;

/// What a `.npy` header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The dtype string (`<f2`, `|u1`, ...).
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<u64>,
}

impl Header {
    /// Elements the shape holds (at most [`MAX_ELEMENTS`], checked when read).
    pub fn count(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// Read a header from `input`, leaving it at the first byte of the data.
pub fn read(input: &mut impl Read) -> Result<Header, String> {
    let mut head = [0u8; 10];
    input.read_exact(&mut head).map_err(|_| "not a .npy file: shorter than its magic and version".to_string())?;
    if &head[..6] != b"\x93NUMPY" {
        return Err("not a .npy file: no \\x93NUMPY magic".into());
    }
    let len = match head[6] {
        1 => u16::from_le_bytes([head[8], head[9]]) as usize,
        2 | 3 => {
            let mut more = [0u8; 2];
            input.read_exact(&mut more).map_err(|_| "not a .npy file: truncated header length".to_string())?;
            u32::from_le_bytes([head[8], head[9], more[0], more[1]]) as usize
        }
        v => return Err(format!("not a .npy file: format version {v}")),
    };
    if len > MAX_HEADER {
        return Err(format!("a {len}-byte .npy header: more than {MAX_HEADER}"));
    }
    let mut dict = vec![0u8; len];
    input.read_exact(&mut dict).map_err(|_| "not a .npy file: the header is cut short".to_string())?;
    let text = std::str::from_utf8(&dict).map_err(|_| "not a .npy file: the header is not text".to_string())?;
    parse(text)
}

/// Parse the header dictionary.
pub fn parse(text: &str) -> Result<Header, String> {
    let mut p = Parser { s: text.as_bytes(), at: 0 };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    p.expect(b'{')?;
    loop {
        p.skip_space();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.skip_space();
        p.expect(b':')?;
        p.skip_space();
        let slot_taken = match key.as_str() {
            "descr" => descr.replace(p.string()?).is_some(),
            "fortran_order" => fortran.replace(p.boolean()?).is_some(),
            "shape" => shape.replace(p.shape()?).is_some(),
            other => return Err(format!("the .npy header has an unknown key '{other}'")),
        };
        if slot_taken {
            return Err(format!("the .npy header names '{key}' twice"));
        }
        p.skip_space();
        if !p.eat(b',') {
            p.skip_space();
            p.expect(b'}')?;
            break;
        }
    }
    if p.s[p.at..].iter().any(|c| !c.is_ascii_whitespace()) {
        return Err("the .npy header has text after its dictionary".into());
    }
    match (descr, fortran, shape) {
        (Some(descr), Some(fortran_order), Some(shape)) => Ok(Header { descr, fortran_order, shape }),
        _ => Err("the .npy header lacks one of 'descr', 'fortran_order' and 'shape'".into()),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.s.get(self.at) == Some(&c);
        self.at += usize::from(hit);
        hit
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.skip_space();
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("the .npy header is not a dictionary NumPy writes: '{}' expected at byte {}", c as char, self.at))
        }
    }

    /// A quoted string without escapes (keys and dtype strings have none).
    fn string(&mut self) -> Result<String, String> {
        let quote = match self.s.get(self.at) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("the .npy header: a quoted string expected at byte {}", self.at)),
        };
        let start = self.at + 1;
        let len = self.s[start..].iter().position(|&c| c == quote).ok_or("the .npy header: an unclosed string")?;
        let text = &self.s[start..start + len];
        if text.contains(&b'\\') {
            return Err("the .npy header: an escaped string".into());
        }
        self.at = start + len + 1;
        Ok(String::from_utf8_lossy(text).into_owned())
    }

    fn boolean(&mut self) -> Result<bool, String> {
        for (word, value) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(format!("the .npy header: True or False expected at byte {}", self.at))
    }

    /// `(d0, d1, ...)`, a trailing comma allowed, each a decimal size; the product at most
    /// [`MAX_ELEMENTS`].
    fn shape(&mut self) -> Result<Vec<u64>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        let mut count = 1u64;
        loop {
            self.skip_space();
            if self.eat(b')') {
                break;
            }
            let start = self.at;
            while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
                self.at += 1;
            }
            let digits = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
            let d: u64 = digits.parse().map_err(|_| format!("the .npy header's shape holds '{}' at byte {start}, not a size", String::from_utf8_lossy(&self.s[start..(start + 20).min(self.s.len())])))?;
            count = count.checked_mul(d).filter(|&c| c <= MAX_ELEMENTS).ok_or_else(|| format!("the .npy header's shape holds more than {MAX_ELEMENTS} elements"))?;
            dims.push(d);
            self.skip_space();
            if !self.eat(b',') {
                self.expect(b')')?;
                break;
            }
        }
        Ok(dims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_numpy_writes_and_refuses_the_rest() {
        let h = parse("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }          \n").unwrap();
        assert_eq!(h, Header { descr: "<f2".into(), fortran_order: false, shape: vec![2, 3] });
        assert_eq!(parse("{\"descr\":\"|u1\",\"fortran_order\":True,\"shape\":(5,)}").unwrap().shape, vec![5]);
        assert_eq!(parse("{'descr': '<f8', 'fortran_order': False, 'shape': ()}").unwrap().count(), 1);
        for (bad, says) in [
            ("{'descr': '<f2', 'fortran_order': False, 'shape': (4294967296, 2)}", "more than"),
            ("{'descr': '<f2', 'fortran_order': False, 'shape': (99999999999999999999999,)}", "not a size"),
            ("{'descr': '<f2', 'fortran_order': False}", "lacks"),
            ("{'descr': '<f2', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "twice"),
            ("{'descr': '<f2', 'fortran_order': 0, 'shape': (1,)}", "True or False"),
            ("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), 'x': 1}", "unknown key"),
            ("{'descr': '<f2', 'fortran_order': False, 'shape': (1,)} junk", "after"),
            ("{'descr': '<f2", "unclosed"),
            ("{'descr': b'<f2', 'fortran_order': False, 'shape': (1,)}", "quoted string"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // Linear in the header's length, however it is crafted.
        let deep = format!("{{'descr': '{}", "'\\\"".repeat(20_000));
        assert!(parse(&deep).is_err());
    }
}
