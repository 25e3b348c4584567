//! Matrices as `.npy` files for whole-GEMM emulation: read any C-ordered 1- or 2-D array whose
//! elements are a format's bit patterns (typed f16/f32/f64, or raw unsigned integers / void of
//! the format's width, as bfloat16 and FP8 arrays are stored), write D back typed where NumPy
//! has the type, raw otherwise.

use crate::format::Format;
use npyz::{TypeChar, TypeStr};
use std::io::Read;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("{path}: {message}")]
    Bad { path: String, message: String },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// A matrix read from a `.npy` file: its shape and its elements' bit patterns in `format`.
pub struct Matrix {
    pub shape: Vec<usize>,
    pub bits: Vec<u64>,
}

pub use crate::npy_header::MAX_ELEMENTS;

/// Read `path` as elements of `format`: a float dtype must be that format (f2 = f16, f4 = f32
/// or tf32, f8 = f64); an unsigned integer or void dtype of the format's width is taken as raw
/// bits (bf16 as uint16, e4m3 as uint8).
pub fn read(path: &Path, format: Format) -> Result<Matrix, NpyError> {
    let p = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| NpyError::Io { path: p.clone(), source })?;
    read_from(std::io::BufReader::new(file), &p, format)
}

/// [`read`] from any reader (`name` names it in errors). The header is read by
/// [`crate::npy_header`]; the data must be exactly as long as its shape says (a short or a long
/// file is refused), and memory grows only with the bytes really present, never with what a
/// header claims.
pub fn read_from(mut input: impl Read, name: &str, format: Format) -> Result<Matrix, NpyError> {
    let bad = |message: String| NpyError::Bad { path: name.to_string(), message };
    let header = crate::npy_header::read(&mut input).map_err(bad)?;
    if header.fortran_order && header.shape.len() > 1 {
        return Err(bad("Fortran-ordered array: save it C-contiguous (np.ascontiguousarray)".into()));
    }
    let ty: TypeStr = header.descr.parse().map_err(|_| bad(format!("dtype '{}' is not a matrix of numbers", header.descr)))?;
    if !(1..=8).contains(&ty.size_field()) {
        return Err(bad(format!("dtype {ty}: elements of {} bytes hold no format", ty.size_field())));
    }
    let width = ty.size_field() as u32 * 8;
    if format.is_integer() {
        // Integer formats: any integer dtype of the container's width (one byte for the narrow
        // ones), as two's-complement patterns.
        let container = format.storage_bits().div_ceil(8) * 8;
        if !matches!(ty.type_char(), TypeChar::Int | TypeChar::Uint) || width != container {
            return Err(bad(format!("dtype {ty} does not hold {format} elements (an int{container} or uint{container} array)")));
        }
    }
    let typed = match (ty.type_char(), width) {
        _ if format.is_integer() => None,
        (TypeChar::Float, 16) => Some(Format::F16),
        (TypeChar::Float, 32) => Some(Format::F32),
        (TypeChar::Float, 64) => Some(Format::F64),
        (TypeChar::Uint | TypeChar::RawData, _) => None,
        _ => return Err(bad(format!("dtype {ty} holds no {format} elements"))),
    };
    let fits = match typed {
        Some(t) => t == format || (t == Format::F32 && format == Format::Tf32),
        None => width == format.storage_bits().div_ceil(8) * 8,
    };
    if !fits {
        return Err(bad(format!("dtype {ty} does not hold {format} elements ({} bits; raw bits as uint{})", format.storage_bits(), format.storage_bits())));
    }
    if ty.endianness() == npyz::Endianness::Big && width > 8 {
        return Err(bad("big-endian data: save it little-endian".into()));
    }
    let bytes = width as u64 / 8;
    let expected = header.count() * bytes;
    let dims = header.shape;
    if dims.is_empty() || dims.len() > 2 {
        return Err(bad(format!("a {}-D array: a matrix is 2-D (a bias 1-D)", dims.len())));
    }
    let mut raw = Vec::new();
    input.take(expected + 1).read_to_end(&mut raw).map_err(|e| bad(format!("cannot read the data: {e}")))?;
    if raw.len() as u64 != expected {
        let which = if (raw.len() as u64) < expected { "shorter" } else { "longer" };
        return Err(bad(format!("data {which} than its shape {dims:?} says ({expected} bytes)")));
    }
    let mask = format.mask();
    let bits = raw
        .chunks_exact(bytes as usize)
        .map(|c| c.iter().rev().fold(0u64, |acc, &b| acc << 8 | b as u64) & mask)
        .collect();
    Ok(Matrix { shape: dims.iter().map(|&d| d as usize).collect(), bits })
}

/// Write `bits` (elements of `format`, row-major) as an array of `shape`, atomically: f16, f32
/// and f64 typed; tf32 as f32; bf16 and FP8 as raw unsigned integers.
pub fn write(path: &Path, format: Format, shape: &[usize], bits: &[u64]) -> std::io::Result<()> {
    let descr = match format {
        Format::F16 => "<f2",
        Format::F32 | Format::Tf32 => "<f4",
        Format::F64 => "<f8",
        Format::Bf16 => "<u2",
        Format::E4m3 | Format::E5m2 | Format::E3m2 | Format::E2m3 | Format::E2m1 | Format::E4m3fnuz | Format::E5m2fnuz => "|u1",
        Format::S32 => "<i4",
        // Narrow integers one per byte, as their raw (unsigned) patterns.
        Format::S8 => "|i1",
        Format::U8 | Format::S4 | Format::U4 | Format::B1 => "|u1",
    };
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let dims = if dims.len() == 1 { format!("{},", dims[0]) } else { dims.join(", ") };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}");
    // Magic (6) + version (2) + length (2) + header + newline, padded to 64 bytes.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let bytes_per = format.storage_bits().div_ceil(8) as usize;
    let mut out = Vec::with_capacity(10 + header.len() + bits.len() * bytes_per);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for &b in bits {
        out.extend_from_slice(&b.to_le_bytes()[..bytes_per]);
    }
    crate::store::write_atomically(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_format_and_checks_dtypes() {
        let dir = tempfile::tempdir().unwrap();
        for f in [Format::F16, Format::Bf16, Format::F32, Format::F64, Format::E4m3] {
            let path = dir.path().join(format!("{f}.npy"));
            let bits: Vec<u64> = (0..6u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & f.mask()).collect();
            write(&path, f, &[2, 3], &bits).unwrap();
            let back = read(&path, f).unwrap();
            assert_eq!((back.shape, back.bits), (vec![2, 3], bits), "{f}");
        }
        // A typed f32 array is not f16 data; raw uint16 is bf16 or f16 bits.
        let e = read(&dir.path().join("f32.npy"), Format::F16).err().unwrap().to_string();
        assert!(e.contains("does not hold f16"), "{e}");
        assert!(read(&dir.path().join("bf16.npy"), Format::F16).is_ok());
        std::fs::write(dir.path().join("junk.npy"), b"not numpy").unwrap();
        assert!(read(&dir.path().join("junk.npy"), Format::F16).err().unwrap().to_string().contains("not a .npy file"));
    }

    /// A version-1 `.npy` header for `descr` and `shape`, padded as NumPy pads it.
    fn header(descr: &str, shape: &str) -> Vec<u8> {
        let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + dict.len() + 1) % 64 != 0 {
            dict.push(' ');
        }
        dict.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out
    }

    #[test]
    fn hostile_headers_are_refused_before_allocating() {
        let read = |bytes: Vec<u8>| read_from(&bytes[..], "x.npy", Format::F16);
        let mut ok = header("<f2", "(2, 2)");
        ok.extend_from_slice(&[0; 8]);
        assert_eq!(read(ok.clone()).unwrap().bits, vec![0; 4]);
        // A shape of 2^62 elements with no data: refused, nothing allocated.
        let e = read(header("<f2", "(4611686018427387904, 1)")).err().unwrap().to_string();
        assert!(e.contains("more than"), "{e}");
        // A product that overflows u64.
        let e = read(header("<f2", "(4294967296, 4294967296, 16)")).err().unwrap().to_string();
        assert!(e.contains("more than"), "{e}");
        assert!(read(header("<f2", "(2, 2, 1)")).err().unwrap().to_string().contains("3-D"));
        assert!(read(header("<f2", "(99999999999999999999999, 1)")).err().unwrap().to_string().contains("not a size"));
        assert!(read(header("<c8", "(1,)")).is_err(), "complex numbers hold no format");
        assert!(read(header("<a00000000000000000007791680829128035920", "(4, 2)")).err().unwrap().to_string().contains("hold no format"));
        let e = read(header("<f2", "(4294967296, 4294967297)")).err().unwrap().to_string();
        assert!(e.contains("more than"), "{e}");
        // Large but allowed shapes with too little data.
        let e = read(header("<f2", "(65536, 65536)")).err().unwrap().to_string();
        assert!(e.contains("shorter"), "{e}");
        let mut long = ok.clone();
        long.push(0);
        assert!(read(long).err().unwrap().to_string().contains("longer"));
        assert!(read(ok[..ok.len() - 1].to_vec()).err().unwrap().to_string().contains("shorter"));
        assert!(read(header("<f2", "()")).err().unwrap().to_string().contains("0-D"));
        // Zero-sized matrices read as empty (the GEMM refuses them with its own message).
        assert!(read(header("<f2", "(0, 3)")).unwrap().bits.is_empty());
    }
}
