//! `.npz` batches: N tiles of one shape and formats as arrays, the binary twin of the JSONL
//! interchange ([`crate::case`]). A file is NumPy's `np.savez` form: a zip of `.npy` arrays.
//!
//! Members, every tile row-major as in JSONL:
//! - `a` N×m×k (N×m×(k/2), the kept values, when `meta` is there), `b` N×k×n, `c` N×m×n;
//! - `meta` (2:4 sparse tiles) N×m×(k/2) uint8, each kept value's index 0..3 in its group of four;
//! - `scale_a` N×m×(k/block) and `scale_b` N×(k/block)×n uint8 (block-scaled tiles), with
//!   `"scale_fmt"` (`ue8m0`/`ue4m3`) and `"scale_block"` in the header;
//! - `header`: 1-D uint8, the bytes of a JSON object `{"a_fmt":"f16","b_fmt":"f16","c_fmt":"f32"}`
//!   with `"op":"xor"` where the tiles pair bits by XOR; other keys are kept and written back;
//! - `d` (results) N×m×n in C's format, or in `"d_fmt"` (header) where D's format is not C's
//!   (`mma.m8n8k4.f32.f16.f16.f16`).
//!
//! Elements are raw bit patterns as unsigned integers of the format's container width (uint8 for
//! e4m3, e5m2 and the narrow integers, one value per element; uint16 for f16 and bf16; uint32 for
//! f32, tf32 and s32; uint64 for f64; NumPy void of that width is read as raw too, as ml_dtypes
//! saves bfloat16 and float8), or typed: float16, float32, float64 for f16, f32 (and tf32), f64,
//! and int8 or int32 values for s4, s8, s32. Without `header` the formats come from typed float
//! dtypes. D is stored the way C is: typed if C was typed, raw otherwise.
//!
//! [`Batch`] holds the arrays as their little-endian bytes; a tile becomes an [`MmaCase`] only
//! when asked ([`Batch::case`]), so a batch is converted in parallel chunks and never held twice.

use crate::case::{FieldError, MmaCase};
use crate::format::Format;
use npyz::{DType, TypeChar, TypeStr, WriterBuilder};
use rayon::prelude::*;
use serde_json::{Map, Value};
use std::io::{Read, Seek, Write};
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

/// Whether a file name says it holds the binary form: it ends in `.npz`.
pub fn is_npz(path: &Path) -> bool {
    path.extension().is_some_and(|x| x.eq_ignore_ascii_case("npz"))
}

/// What is wrong with an npz file, and where: the file, the member, the tile.
#[derive(Debug, thiserror::Error)]
pub struct NpzError {
    pub file: Option<String>,
    pub member: Option<String>,
    pub tile: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for NpzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        if let Some(member) = &self.member {
            write!(f, "member '{member}': ")?;
        }
        if let Some(tile) = self.tile {
            write!(f, "tile {tile}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// How a member stores each element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Storage {
    /// The bit pattern as an unsigned integer (or NumPy void) of the container's width.
    Raw,
    /// An IEEE float16/32/64 of the format itself: its own bits.
    Float,
    /// An integer format's value as a signed integer (int8, int32), two's complement.
    Signed,
}

/// One member: its element storage, shape and little-endian bytes.
#[derive(Clone, Debug)]
struct Array {
    storage: Storage,
    /// Bytes per element.
    width: usize,
    shape: Vec<usize>,
    bytes: Bytes,
}

/// An array's bytes: its own, or a range of an npz file mapped into memory (a stored member of
/// a file [`Batch::read`] opened: read in place, no copy and no memory of its own).
#[derive(Clone, Debug)]
enum Bytes {
    Owned(Vec<u8>),
    Mapped(Arc<memmap2::Mmap>, Range<usize>),
}

impl Default for Bytes {
    fn default() -> Self {
        Bytes::Owned(Vec::new())
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(map, range) => &map[range.clone()],
        }
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Self {
        Bytes::Owned(v)
    }
}

impl Bytes {
    /// The bytes to change: a mapped range is copied first.
    fn to_mut(&mut self) -> &mut Vec<u8> {
        if let Bytes::Mapped(..) = self {
            *self = Bytes::Owned(self.to_vec());
        }
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(..) => unreachable!("just made owned"),
        }
    }
}

impl Array {
    /// A raw array of `shape` for elements of `f`, zeroed.
    fn raw(f: Format, shape: Vec<usize>) -> Self {
        let width = container_bytes(f);
        let bytes = vec![0; shape.iter().product::<usize>() * width].into();
        Array { storage: Storage::Raw, width, shape, bytes }
    }

    /// Elements per tile (everything after the first dimension).
    fn per_tile(&self) -> usize {
        self.shape[1..].iter().product()
    }

    fn tile_bytes(&self, tile: usize) -> &[u8] {
        let size = self.per_tile() * self.width;
        &self.bytes[tile * size..(tile + 1) * size]
    }

    /// Tile `tile`'s elements as bit patterns of `f`, into `out` (its buffer reused); the
    /// message names the first element out of `f`'s range (signed storage only: raw patterns
    /// are checked by [`MmaCase::validate`]).
    fn tile_bits_into(&self, tile: usize, f: Format, out: &mut Vec<u64>) -> Result<(), String> {
        let bytes = self.tile_bytes(tile);
        out.clear();
        if self.storage == Storage::Signed {
            let le = |c: &[u8]| c.iter().rev().fold(0u64, |acc, &b| acc << 8 | b as u64);
            let spec = f.integer().expect("signed storage holds integer formats");
            let shift = 64 - 8 * self.width as u32;
            for (i, c) in bytes.chunks_exact(self.width).enumerate() {
                let v = ((le(c) << shift) as i64) >> shift;
                if v < spec.min() || v > spec.max() {
                    return Err(format!("element {i} is {v}, outside {f}'s range {}..={}", spec.min(), spec.max()));
                }
                out.push(v as u64 & f.mask());
            }
            return Ok(());
        }
        le_elements_into(bytes, self.width, out);
        Ok(())
    }

    /// Tile `tile`'s elements as bit patterns of `f` (see [`Array::tile_bits_into`]).
    fn tile_bits(&self, tile: usize, f: Format) -> Result<Vec<u64>, String> {
        let mut out = Vec::new();
        self.tile_bits_into(tile, f, &mut out)?;
        Ok(out)
    }

    /// Bytes of the whole array, from its shape.
    fn byte_len(&self) -> usize {
        self.shape.iter().product::<usize>() * self.width
    }

    /// Write tiles `ds` (elements of `f`) into `out`, their bytes in this array's storage, in
    /// parallel.
    fn encode_tiles(&self, out: &mut [u8], ds: &[impl AsRef<[u64]> + Sync], f: Format) {
        let size = self.per_tile() * self.width;
        out.par_chunks_mut(size.max(1)).zip(ds).for_each(|(out, bits)| self.encode(out, bits.as_ref(), f));
    }

    /// Write `bits` (elements of `f`) into `out`, one tile's bytes, in this array's storage.
    fn encode(&self, out: &mut [u8], bits: &[u64], f: Format) {
        if self.storage != Storage::Signed {
            return put_le_elements(out, bits, self.width);
        }
        for (o, &b) in out.chunks_exact_mut(self.width).zip(bits) {
            // A signed value is its pattern sign-extended to the container (s4's 0xf is 0xff).
            o.copy_from_slice(&(f.int_value(b) as u64).to_le_bytes()[..self.width]);
        }
    }

    /// The NumPy dtype this array is written as.
    fn descr(&self) -> TypeStr {
        let kind = match self.storage {
            Storage::Raw => 'u',
            Storage::Float => 'f',
            Storage::Signed => 'i',
        };
        let order = if self.width == 1 { '|' } else { '<' };
        format!("{order}{kind}{}", self.width).parse().expect("a valid dtype")
    }
}

/// Bytes of one element of `f` stored raw: the format's width rounded up to whole bytes.
pub fn container_bytes(f: Format) -> usize {
    f.storage_bits().div_ceil(8) as usize
}

/// Elements stored as little-endian unsigned integers of `width` bytes (1, 2, 4 or 8).
pub fn le_elements(bytes: &[u8], width: usize) -> Vec<u64> {
    let mut out = Vec::new();
    le_elements_into(bytes, width, &mut out);
    out
}

simd_where_available! {
    /// [`le_elements`] into `out` (cleared first; its buffer reused).
    fn le_elements_into(bytes: &[u8], width: usize, out: &mut Vec<u64>) {
        out.clear();
        // One loop per width, so each compiles to plain loads (widening ones with AVX2).
        match width {
            1 => out.extend(bytes.iter().map(|&b| b as u64)),
            2 => out.extend(bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as u64)),
            4 => out.extend(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64)),
            _ => out.extend(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))),
        }
    }
}

simd_where_available! {
    /// Write `bits` into `out` as little-endian unsigned integers of `width` bytes.
    pub fn put_le_elements(out: &mut [u8], bits: &[u64], width: usize) {
        // One loop per width, as in `le_elements`: a copy of a run-time length is a call per element.
        match width {
            1 => out.iter_mut().zip(bits).for_each(|(o, &b)| *o = b as u8),
            2 => out.chunks_exact_mut(2).zip(bits).for_each(|(o, &b)| o.copy_from_slice(&(b as u16).to_le_bytes())),
            4 => out.chunks_exact_mut(4).zip(bits).for_each(|(o, &b)| o.copy_from_slice(&(b as u32).to_le_bytes())),
            8 => out.chunks_exact_mut(8).zip(bits).for_each(|(o, &b)| o.copy_from_slice(&b.to_le_bytes())),
            w => out.chunks_exact_mut(w).zip(bits).for_each(|(o, &b)| o.copy_from_slice(&b.to_le_bytes()[..w])),
        }
    }
}

/// NumPy's name of a dtype, for messages.
fn dtype_name(ty: &TypeStr) -> String {
    let bits = ty.size_field() * 8;
    match ty.type_char() {
        TypeChar::Float => format!("float{bits}"),
        TypeChar::Uint => format!("uint{bits}"),
        TypeChar::Int => format!("int{bits}"),
        TypeChar::RawData => format!("void{bits}"),
        _ => ty.to_string(),
    }
}

/// The format a typed float dtype is, where it is one.
fn typed_format(ty: &TypeStr) -> Option<Format> {
    match (ty.type_char(), ty.size_field()) {
        (TypeChar::Float, 2) => Some(Format::F16),
        (TypeChar::Float, 4) => Some(Format::F32),
        (TypeChar::Float, 8) => Some(Format::F64),
        _ => None,
    }
}

/// How a member of dtype `ty` stores elements of `f`, or why it cannot.
fn storage_of(ty: &TypeStr, f: Format) -> Result<Storage, String> {
    let width = ty.size_field() as usize;
    let raw_width = container_bytes(f);
    let storage = match ty.type_char() {
        TypeChar::Uint | TypeChar::RawData if width == raw_width => Storage::Raw,
        TypeChar::Float if typed_format(ty) == Some(f) || (f == Format::Tf32 && width == 4) => Storage::Float,
        TypeChar::Int if f.integer().is_some_and(|i| i.signed) && width == raw_width => Storage::Signed,
        _ => {
            let typed = match f {
                Format::F16 => ", or float16",
                Format::F32 | Format::Tf32 => ", or float32",
                Format::F64 => ", or float64",
                Format::S4 | Format::S8 => ", or int8 values",
                Format::S32 => ", or int32 values",
                _ => "",
            };
            return Err(format!("dtype {} does not hold {f} elements (raw bit patterns as uint{}{typed})", dtype_name(ty), 8 * raw_width));
        }
    };
    Ok(storage)
}

/// A member as read: its dtype, shape and data bytes.
struct Member {
    ty: TypeStr,
    shape: Vec<usize>,
    bytes: Bytes,
}

/// Read member `name` of an archive; `Ok(None)` when it is absent. `mapped`: the whole file
/// `npz` reads, mapped into memory, whose stored members are then read in place.
fn read_member<R: Read + Seek>(npz: &mut zip::ZipArchive<R>, name: &str, mapped: Option<&Arc<memmap2::Mmap>>) -> Result<Option<Member>, String> {
    let entry = match npz.by_name(&format!("{name}.npy")) {
        Ok(entry) => entry,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(format!("cannot read it from the archive: {e}")),
    };
    if let Some(map) = mapped.filter(|_| entry.compression() == zip::CompressionMethod::Stored) {
        // In place: the CRC checked here (the zip reader checks it when read through), the
        // array a range of the map after its .npy header.
        let (start, len, crc) = (entry.data_start() as usize, entry.size() as usize, entry.crc32());
        let data = map.get(start..start.saturating_add(len)).ok_or("cannot read it from the archive: it runs past the end of the file")?;
        if crc32fast::hash(data) != crc {
            return Err("cannot read it from the archive: its CRC-32 does not match (a damaged file)".into());
        }
        let (ty, shape, size, rest) = npy_array(std::io::Cursor::new(data))?;
        let at = start + rest.position() as usize;
        if start + len - at < size {
            return Err(format!("data has {} bytes, shape {shape:?} of {} needs {size}", start + len - at, dtype_name(&ty)));
        }
        return Ok(Some(Member { ty, shape, bytes: Bytes::Mapped(map.clone(), at..at + size) }));
    }
    let (ty, shape, size, mut rest) = npy_array(entry)?;
    let mut bytes = Vec::with_capacity(size.min(1 << 30));
    rest.read_to_end(&mut bytes).map_err(|e| format!("cannot read the data: {e}"))?;
    if bytes.len() < size {
        return Err(format!("data has {} bytes, shape {shape:?} of {} needs {size}", bytes.len(), dtype_name(&ty)));
    }
    bytes.truncate(size);
    Ok(Some(Member { ty, shape, bytes: bytes.into() }))
}

/// A .npy header checked for arrays we read ([`crate::npy_header`]: bounded, parsed in one
/// pass): its dtype, shape, data size in bytes, and the reader at the data.
fn npy_array<R: Read>(mut input: R) -> Result<(TypeStr, Vec<usize>, usize, R), String> {
    let header = crate::npy_header::read(&mut input).map_err(|e| format!("not a .npy array: {e}"))?;
    let ty: TypeStr = header.descr.parse().map_err(|_| format!("dtype '{}' is not an array of numbers", header.descr))?;
    if header.fortran_order && header.shape.len() > 1 {
        return Err("Fortran-ordered array: save it C-contiguous (np.ascontiguousarray)".into());
    }
    if !matches!(ty.type_char(), TypeChar::Uint | TypeChar::Int | TypeChar::Float | TypeChar::RawData) || !(1..=8).contains(&ty.size_field()) {
        return Err(format!("dtype {ty} is not numbers or bit patterns"));
    }
    if ty.endianness() == npyz::Endianness::Big && ty.size_field() > 1 {
        return Err(format!("dtype {ty} is big-endian: save it little-endian (arr.astype(arr.dtype.newbyteorder('<')))"));
    }
    let shape: Vec<usize> = header.shape.iter().map(|&d| d as usize).collect();
    let size = shape
        .iter()
        .try_fold(ty.size_field() as usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format!("shape {shape:?} is too large"))?;
    Ok((ty, shape, size, input))
}

/// A batch's tiles as their operands' little-endian elements ([`Batch::le_tiles`]).
pub struct LeTiles<'a> {
    /// Tile 0 as a case: the shape and formats of every tile.
    pub like: MmaCase,
    members: [&'a Array; 3],
}

impl<'a> LeTiles<'a> {
    /// Tile `tile`'s A, B and C: each its bytes and element width.
    pub fn tile(&self, tile: usize) -> [(&'a [u8], usize); 3] {
        self.members.map(|m| (m.tile_bytes(tile), m.width))
    }
}

/// N tiles of one shape and formats, as arrays (see the module documentation).
#[derive(Clone, Debug)]
pub struct Batch {
    pub a_fmt: Format,
    pub b_fmt: Format,
    /// Format of C (and of D, unless `d_fmt` differs).
    pub c_fmt: Format,
    /// Format of D (`"d_fmt"` in the header where it is not C's).
    pub d_fmt: Format,
    pub tiles: usize,
    pub m: usize,
    pub n: usize,
    /// The dense K (A has k/2 columns on sparse tiles).
    pub k: usize,
    /// The header's keys other than the formats (`"op"` among them), in order; written back.
    pub header: Map<String, Value>,
    /// Where the batch was read from, for messages.
    file: Option<String>,
    a: Array,
    b: Array,
    c: Array,
    meta: Option<Array>,
    /// Block scales (both or neither), each with the header's `scale_fmt` and `scale_block`.
    scale_a: Option<Array>,
    scale_b: Option<Array>,
    d: Option<Array>,
}

impl Batch {
    fn err(&self, member: Option<&str>, tile: Option<usize>, message: impl Into<String>) -> NpzError {
        NpzError { file: self.file.clone(), member: member.map(str::to_string), tile, message: message.into() }
    }

    /// Read and check an npz file: members present, dtypes that hold their formats, shapes that
    /// agree. Tiles are checked when converted ([`Batch::case`]).
    /// The file is mapped into memory and its stored members (what `np.savez` and mmafuzz
    /// write) are read in place; compressed ones, and files that cannot be mapped, are read.
    pub fn read(path: &Path) -> Result<Batch, NpzError> {
        let file = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|e| NpzError { file: Some(file.clone()), member: None, tile: None, message: format!("cannot open: {e}") })?;
        // SAFETY: the map is only read, and lives as long as the arrays that point into it.
        // mmafuzz changes no file in place (results are written beside and renamed); another
        // program truncating the file meanwhile would end this one (SIGBUS), as it would any
        // program that maps its input.
        match unsafe { memmap2::Mmap::map(&f) } {
            Ok(map) => {
                let map = Arc::new(map);
                Batch::read_from(std::io::Cursor::new(&map[..]), &file, Some(&map))
            }
            // (An empty file, a pipe.)
            Err(_) => Batch::read_from(std::io::BufReader::new(f), &file, None),
        }
    }

    /// [`Batch::read`] from bytes in memory (an external oracle's answer); `name` for messages.
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<Batch, NpzError> {
        Batch::read_from(std::io::Cursor::new(bytes), name, None)
    }

    fn read_from<R: Read + Seek>(reader: R, file: &str, mapped: Option<&Arc<memmap2::Mmap>>) -> Result<Batch, NpzError> {
        let file = file.to_string();
        let err = |member: Option<&str>, message: String| NpzError { file: Some(file.clone()), member: member.map(str::to_string), tile: None, message };
        let mut npz = zip::ZipArchive::new(reader).map_err(|e| err(None, format!("not an npz file (a zip of .npy arrays): {e}")))?;
        let mut member = |name: &str| read_member(&mut npz, name, mapped).map_err(|e| err(Some(name), e));
        const HEADER: &str = "a 1-D uint8 array of JSON text: np.frombuffer(json.dumps(h).encode(), np.uint8)";
        let header = member("header").map_err(|e| NpzError { message: format!("{}; the header is {HEADER}", e.message), ..e })?;
        let (a, b, c, meta, d) = (member("a")?, member("b")?, member("c")?, member("meta")?, member("d")?);
        let (scale_a, scale_b) = (member("scale_a")?, member("scale_b")?);
        let required = |m: Option<Member>, name: &str| {
            m.ok_or_else(|| err(Some(name), "missing: an npz of tiles holds a, b, c and header (and meta for sparse tiles)".into()))
        };
        let (a, b, c) = (required(a, "a")?, required(b, "b")?, required(c, "c")?);

        // The header, then each operand's format: the header's, else what a typed dtype says.
        let mut header = match header {
            None => Map::new(),
            Some(h) => {
                if h.shape.len() != 1 || !matches!(h.ty.type_char(), TypeChar::Uint | TypeChar::Int) || h.ty.size_field() != 1 {
                    return Err(err(Some("header"), format!("is {} of shape {:?}, not {HEADER}", dtype_name(&h.ty), h.shape)));
                }
                match serde_json::from_slice(&h.bytes) {
                    Ok(Value::Object(map)) => map,
                    Ok(_) => return Err(err(Some("header"), "is not a JSON object".into())),
                    Err(e) => return Err(err(Some("header"), format!("is not JSON: {e}"))),
                }
            }
        };
        let mut named = |key: &str| -> Result<Option<Format>, NpzError> {
            match header.shift_remove(key) {
                None => Ok(None),
                Some(Value::String(s)) => s.parse().map(Some).map_err(|e: String| err(Some("header"), format!("{key}: {e}"))),
                Some(v) => Err(err(Some("header"), format!("{key}: {v} is not a format name"))),
            }
        };
        let (a_named, b_named, c_named, d_named) = (named("a_fmt")?, named("b_fmt")?, named("c_fmt")?, named("d_fmt")?);
        let format = |named: Option<Format>, m: &Member, name: &str| {
            named.or_else(|| typed_format(&m.ty)).ok_or_else(|| {
                err(
                    Some(name),
                    format!(
                        "dtype {} does not say which format its bit patterns are in: add a 'header' member, \
                         np.frombuffer(json.dumps({{\"a_fmt\": ..., \"b_fmt\": ..., \"c_fmt\": ...}}).encode(), np.uint8)",
                        dtype_name(&m.ty)
                    ),
                )
            })
        };
        let a_fmt = format(a_named, &a, "a")?;
        let b_fmt = format(b_named.or(a_named), &b, "b")?;
        let c_fmt = format(c_named, &c, "c")?;
        let d_fmt = d_named.unwrap_or(c_fmt);

        // Shapes: C gives N, m, n; B gives k; A and meta follow.
        let three = |m: &Member, name: &str, dims: &str| {
            if m.shape.len() == 3 {
                Ok([m.shape[0], m.shape[1], m.shape[2]])
            } else {
                Err(err(Some(name), format!("shape {:?} is not {dims} (tiles first)", m.shape)))
            }
        };
        let [tiles, rows, cols] = three(&c, "c", "N×m×n")?;
        let [b_tiles, k, b_cols] = three(&b, "b", "N×k×n")?;
        let [a_tiles, a_rows, a_cols] = three(&a, "a", "N×m×k")?;
        if rows == 0 || cols == 0 || k == 0 {
            return Err(err(Some(if k == 0 { "b" } else { "c" }), format!("tiles of {rows}x{cols}x{k} have a zero dimension")));
        }
        let tiles_of = |got: usize, name: &str| {
            if got == tiles { Ok(()) } else { Err(err(Some(name), format!("has {got} tiles, 'c' has {tiles}"))) }
        };
        tiles_of(b_tiles, "b")?;
        tiles_of(a_tiles, "a")?;
        if b_cols != cols {
            return Err(err(Some("b"), format!("tiles are {k}x{b_cols}, C's are {rows}x{cols}: B needs n = {cols} columns")));
        }
        let a_width = if meta.is_some() {
            if k % 4 != 0 {
                return Err(err(Some("meta"), format!("2:4 sparsity needs k a multiple of 4; B's tiles have k = {k} rows")));
            }
            k / 2
        } else {
            k
        };
        if (a_rows, a_cols) != (rows, a_width) {
            let cols = if meta.is_some() { format!("k/2 = {a_width} kept values of k = {k} from 'b', as 'meta' is there") } else { format!("k = {k} from 'b'") };
            return Err(err(Some("a"), format!("tiles are {a_rows}x{a_cols}, not {rows}x{a_width} (m = {rows} from 'c', {cols})")));
        }
        let array = |m: Member, f: Format, name: &str| -> Result<Array, NpzError> {
            let storage = storage_of(&m.ty, f).map_err(|e| err(Some(name), e))?;
            Ok(Array { storage, width: m.ty.size_field() as usize, shape: m.shape, bytes: m.bytes })
        };
        let meta = match meta {
            None => None,
            Some(m) => {
                if !matches!(m.ty.type_char(), TypeChar::Uint | TypeChar::Int) || m.ty.size_field() != 1 {
                    return Err(err(Some("meta"), format!("dtype {} is not uint8 (one index 0..3 per kept A value)", dtype_name(&m.ty))));
                }
                if m.shape != a.shape {
                    return Err(err(Some("meta"), format!("shape {:?} is not A's {:?} (one index per kept value)", m.shape, a.shape)));
                }
                Some(Array { storage: Storage::Raw, width: 1, shape: m.shape, bytes: m.bytes })
            }
        };
        let (scale_a, scale_b) = match (scale_a, scale_b) {
            (None, None) => (None, None),
            (Some(sa), Some(sb)) => {
                let block = header.get("scale_block").and_then(Value::as_u64).filter(|&b| b > 0 && k % b as usize == 0).ok_or_else(|| {
                    err(Some("header"), format!("block-scaled tiles need \"scale_block\": the elements along K (k = {k}) per scale, dividing k"))
                })? as usize;
                match header.get("scale_fmt").and_then(Value::as_str).map(str::parse::<crate::blockscale::ScaleFormat>) {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(err(Some("header"), format!("scale_fmt: {e}"))),
                    None => return Err(err(Some("header"), "block-scaled tiles need \"scale_fmt\": \"ue8m0\" or \"ue4m3\"".into())),
                }
                let blocks = k / block;
                let scales = |m: Member, name: &str, want: [usize; 3]| -> Result<Array, NpzError> {
                    if !matches!(m.ty.type_char(), TypeChar::Uint | TypeChar::Int | TypeChar::RawData) || m.ty.size_field() != 1 {
                        return Err(err(Some(name), format!("dtype {} is not uint8 (one scale bit pattern per block)", dtype_name(&m.ty))));
                    }
                    if m.shape != want {
                        return Err(err(Some(name), format!("shape {:?} is not {want:?} ({blocks} blocks of {block} along k = {k})", m.shape)));
                    }
                    Ok(Array { storage: Storage::Raw, width: 1, shape: m.shape, bytes: m.bytes })
                };
                (Some(scales(sa, "scale_a", [tiles, rows, blocks])?), Some(scales(sb, "scale_b", [tiles, blocks, cols])?))
            }
            (a, _) => {
                let (has, lacks) = if a.is_some() { ("scale_a", "scale_b") } else { ("scale_b", "scale_a") };
                return Err(err(Some(lacks), format!("missing: '{has}' is there, and block-scaled tiles need both")));
            }
        };
        let d = match d {
            None => None,
            Some(m) if m.shape == c.shape => Some(array(m, d_fmt, "d")?),
            Some(m) => return Err(err(Some("d"), format!("shape {:?} is not C's {:?}", m.shape, c.shape))),
        };
        let mut extra = Map::new();
        if let Some(op) = header.get("op") {
            extra.insert("op".into(), op.clone());
        }
        header.shift_remove("op");
        // Formats that mix, or an "op" the formats do not take, are the header's fault.
        let mut probe = MmaCase::zeros(a_fmt, c_fmt, 1, 1, 1);
        probe.b_fmt = b_fmt;
        probe.d_fmt = d_fmt;
        probe.extra = extra.clone();
        probe.validate().map_err(|e| err(Some("header"), e.to_string()))?;
        extra.extend(header);
        Ok(Batch {
            a_fmt,
            b_fmt,
            c_fmt,
            d_fmt,
            tiles,
            m: rows,
            n: cols,
            k,
            header: extra,
            file: Some(file.clone()),
            a: array(a, a_fmt, "a")?,
            b: array(b, b_fmt, "b")?,
            c: array(c, c_fmt, "c")?,
            meta,
            scale_a,
            scale_b,
            d,
        })
    }

    /// A batch of `cases` stored raw; they must share shape, formats, sparsity and `"op"`.
    /// Other fields of the cases (recipes, seeds) have no place in an npz and are left out.
    pub fn from_cases(cases: &[MmaCase]) -> Result<Batch, NpzError> {
        let err = |tile: Option<usize>, message: String| NpzError { file: None, member: None, tile, message };
        let first = cases.first().ok_or_else(|| err(None, "no tiles: an npz needs one to know its shape and formats".into()))?;
        let kind = |c: &MmaCase| (c.a_fmt, c.b_fmt, c.c_fmt, c.d_fmt, c.m, c.n, c.k, c.meta.is_some(), c.xor_pairs(), c.scales.as_ref().map(|s| (s.fmt, s.block)));
        let describe = |c: &MmaCase| {
            let sparse = if c.meta.is_some() { " sparse" } else { "" };
            let xor = if c.xor_pairs() { " xor" } else { "" };
            let scaled = c.scales.as_ref().map(|s| format!(" scaled by {} per {}", s.fmt, s.block)).unwrap_or_default();
            let widened = if c.d_fmt != c.c_fmt { format!(", D {}", c.d_fmt) } else { String::new() };
            format!("{}x{}x{} {}/{} into {}{widened}{sparse}{xor}{scaled}", c.m, c.n, c.k, c.a_fmt, c.b_fmt, c.c_fmt)
        };
        if let Some(i) = cases.iter().position(|c| kind(c) != kind(first)) {
            return Err(err(
                Some(i),
                format!("is {}, the first is {}: an npz holds tiles of one shape and formats", describe(&cases[i]), describe(first)),
            ));
        }
        let (tiles, m, n, k) = (cases.len(), first.m, first.n, first.k);
        let a_cols = if first.meta.is_some() { k / 2 } else { k };
        let fill = |f: Format, shape: [usize; 3], part: &(dyn Fn(&MmaCase) -> &[u64] + Sync)| {
            let mut arr = Array::raw(f, shape.to_vec());
            let size = arr.per_tile() * arr.width;
            let mut bytes = std::mem::take(&mut arr.bytes);
            bytes.to_mut().par_chunks_mut(size.max(1)).zip(cases).for_each(|(out, c)| arr.encode(out, part(c), f));
            arr.bytes = bytes;
            arr
        };
        let meta = first.meta.as_ref().map(|_| {
            let mut arr = Array::raw(Format::U8, vec![tiles, m, a_cols]);
            arr.bytes = cases.iter().flat_map(|c| c.meta.as_deref().unwrap_or_default().iter().copied()).collect::<Vec<u8>>().into();
            arr
        });
        let mut header = Map::new();
        if first.xor_pairs() {
            header.insert("op".into(), "xor".into());
        }
        let (mut scale_a, mut scale_b) = (None, None);
        if let Some(s) = &first.scales {
            header.insert("scale_fmt".into(), s.fmt.name().into());
            header.insert("scale_block".into(), s.block.into());
            let blocks = k / s.block;
            let gather = |shape: Vec<usize>, part: &dyn Fn(&crate::blockscale::BlockScales) -> &[u8]| {
                let bytes = cases.iter().flat_map(|c| part(c.scales.as_ref().expect("same kind as the first")).iter().copied()).collect::<Vec<u8>>();
                Array { storage: Storage::Raw, width: 1, shape, bytes: bytes.into() }
            };
            scale_a = Some(gather(vec![tiles, m, blocks], &|s| &s.a));
            scale_b = Some(gather(vec![tiles, blocks, n], &|s| &s.b));
        }
        Ok(Batch {
            a_fmt: first.a_fmt,
            b_fmt: first.b_fmt,
            c_fmt: first.c_fmt,
            d_fmt: first.d_fmt,
            tiles,
            m,
            n,
            k,
            header,
            file: None,
            a: fill(first.a_fmt, [tiles, m, a_cols], &|c| &c.a),
            b: fill(first.b_fmt, [tiles, k, n], &|c| &c.b),
            c: fill(first.c_fmt, [tiles, m, n], &|c| &c.c),
            meta,
            scale_a,
            scale_b,
            d: None,
        })
    }

    /// Tile `tile` as a case, checked as a JSONL line is ([`MmaCase::validate`]); the error
    /// names the member and the tile.
    pub fn case(&self, tile: usize) -> Result<MmaCase, NpzError> {
        let mut case = self.empty_case();
        self.case_into(tile, &mut case)?;
        Ok(case)
    }

    /// The tiles as their operands' little-endian elements, read in place (no case made):
    /// where every tile's patterns are valid as they lie, since each of A, B and C is stored
    /// raw or as its own float type in a container exactly as wide as its format (f16, bf16,
    /// tf32, f32, f64, the 8-bit floats), without sparsity metadata, block scales or an
    /// `"op"`; and tile 0 passes [`MmaCase::validate`] (the other checks are the batch's, the
    /// same for every tile). `None` otherwise: then tiles go through [`Batch::case_into`].
    pub fn le_tiles(&self) -> Option<LeTiles<'_>> {
        let fits = |a: &Array, f: Format| !f.is_integer() && a.storage != Storage::Signed && 8 * a.width == f.storage_bits() as usize;
        let plain = self.meta.is_none() && self.scale_a.is_none() && self.header.iter().all(|(key, _)| key != "op");
        if !(plain && fits(&self.a, self.a_fmt) && fits(&self.b, self.b_fmt) && fits(&self.c, self.c_fmt)) || self.tiles == 0 {
            return None;
        }
        let like = self.case(0).ok()?;
        Some(LeTiles { like, members: [&self.a, &self.b, &self.c] })
    }

    /// A case of this batch's shape and formats with no elements yet (for [`Batch::case_into`]).
    fn empty_case(&self) -> MmaCase {
        MmaCase {
            a_fmt: self.a_fmt,
            b_fmt: self.b_fmt,
            c_fmt: self.c_fmt,
            d_fmt: self.d_fmt,
            m: self.m,
            n: self.n,
            k: self.k,
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            meta: None,
            scales: None,
            extra: Map::new(),
        }
    }

    /// [`Batch::case`] into `case`, whose element buffers are reused (a loop over a batch's
    /// tiles allocates nothing per tile).
    pub fn case_into(&self, tile: usize, case: &mut MmaCase) -> Result<(), NpzError> {
        let err = |name: &str, e: String| self.err(Some(name), Some(tile), e);
        (case.a_fmt, case.b_fmt, case.c_fmt, case.d_fmt) = (self.a_fmt, self.b_fmt, self.c_fmt, self.d_fmt);
        (case.m, case.n, case.k) = (self.m, self.n, self.k);
        self.a.tile_bits_into(tile, self.a_fmt, &mut case.a).map_err(|e| err("a", e))?;
        self.b.tile_bits_into(tile, self.b_fmt, &mut case.b).map_err(|e| err("b", e))?;
        self.c.tile_bits_into(tile, self.c_fmt, &mut case.c).map_err(|e| err("c", e))?;
        case.meta = self.meta.as_ref().map(|m| m.tile_bytes(tile).to_vec());
        case.scales = self.scales(tile);
        case.extra.clear();
        // (A scan, not a hashed lookup: the header holds a few keys, and this runs per tile.)
        if let Some((_, op)) = self.header.iter().find(|(key, _)| *key == "op") {
            case.extra.insert("op".into(), op.clone());
        }
        case.validate().map_err(|FieldError { field, message }| {
            let member = if ["a", "b", "c", "meta", "scale_a", "scale_b"].contains(&field.as_str()) { field } else { "header".into() };
            self.err(Some(&member), Some(tile), message)
        })
    }

    /// Tile `tile`'s block scales (the header's format and block were checked on reading).
    fn scales(&self, tile: usize) -> Option<crate::blockscale::BlockScales> {
        let (sa, sb) = (self.scale_a.as_ref()?, self.scale_b.as_ref()?);
        let fmt = self.header.get("scale_fmt")?.as_str()?.parse().ok()?;
        let block = self.header.get("scale_block")?.as_u64()? as usize;
        Some(crate::blockscale::BlockScales { fmt, block, a: sa.tile_bytes(tile).to_vec(), b: sb.tile_bytes(tile).to_vec() })
    }

    /// Tiles `range` as cases, converted in parallel; the error is the first bad tile's.
    pub fn cases_in(&self, range: Range<usize>) -> Result<Vec<MmaCase>, NpzError> {
        let mut cases = Vec::new();
        self.cases_into(range, &mut cases)?;
        Ok(cases)
    }

    /// [`Batch::cases_in`] into `cases` (resized to the range), reusing the buffers of the
    /// cases already there: a loop over a batch in chunks allocates for its first chunk only.
    pub fn cases_into(&self, range: Range<usize>, cases: &mut Vec<MmaCase>) -> Result<(), NpzError> {
        cases.resize_with(range.len(), || self.empty_case());
        let first = range.start;
        let bad: Vec<NpzError> = cases.par_iter_mut().enumerate().filter_map(|(i, c)| self.case_into(first + i, c).err()).collect();
        // In tile order: the first bad tile's error.
        bad.into_iter().min_by_key(|e| e.tile).map_or(Ok(()), Err)
    }

    /// Every tile as a case.
    pub fn cases(&self) -> Result<Vec<MmaCase>, NpzError> {
        self.cases_in(0..self.tiles)
    }

    /// D's array, empty: stored as C is, typed if C is typed, raw otherwise (in D's width
    /// where D is wider).
    fn d_layout(&self) -> Array {
        let c = &self.c;
        let width = if self.d_fmt == self.c_fmt { c.width } else { container_bytes(self.d_fmt) };
        Array { storage: c.storage, width, shape: c.shape.clone(), bytes: Bytes::default() }
    }

    /// Set the results of tiles `first..first + ds.len()` (each m×n in D's format), stored as
    /// [`Batch::d_layout`] says.
    pub fn set_d(&mut self, first: usize, ds: &[impl AsRef<[u64]> + Sync]) {
        let f = self.d_fmt;
        let layout = self.d_layout();
        // Made once, for the whole batch (chunks of tiles fill it in turn).
        if !self.d.as_ref().is_some_and(|d| d.storage == layout.storage && d.width == layout.width) {
            self.d = Some(Array { bytes: vec![0; layout.byte_len()].into(), ..layout });
        }
        let d = self.d.as_mut().expect("just made");
        let mut bytes = std::mem::take(&mut d.bytes);
        let size = d.per_tile() * d.width;
        d.encode_tiles(&mut bytes.to_mut()[first * size..(first + ds.len()) * size], ds, f);
        d.bytes = bytes;
    }

    /// The result D of tile `tile`, where the batch has one.
    pub fn d(&self, tile: usize) -> Result<Option<Vec<u64>>, NpzError> {
        let Some(d) = &self.d else { return Ok(None) };
        d.tile_bits(tile, self.d_fmt).map(Some).map_err(|e| self.err(Some("d"), Some(tile), e))
    }

    /// The header as written: the formats, then the other keys.
    fn header_json(&self) -> Map<String, Value> {
        let mut h = Map::new();
        h.insert("a_fmt".into(), self.a_fmt.name().into());
        h.insert("b_fmt".into(), self.b_fmt.name().into());
        h.insert("c_fmt".into(), self.c_fmt.name().into());
        if self.d_fmt != self.c_fmt {
            h.insert("d_fmt".into(), self.d_fmt.name().into());
        }
        h.extend(self.header.iter().map(|(k, v)| (k.clone(), v.clone())));
        h
    }

    /// Write the batch (and D, where set) to `path` as an npz, atomically: written beside it
    /// and renamed into place when complete (not synced: see [`crate::store::replace_output_with`]).
    /// Members are stored uncompressed, as `np.savez` does.
    /// `d_only`: the members `d` and `header` alone (a batch's results without its tiles).
    pub fn write(&self, path: &Path, d_only: bool) -> Result<(), NpzError> {
        crate::store::replace_output_with(path, |file| self.write_to(std::io::BufWriter::new(file), d_only, None)).map_err(|e| self.write_error(path, e))
    }

    fn write_error(&self, path: &Path, e: std::io::Error) -> NpzError {
        NpzError { file: Some(path.display().to_string()), member: None, tile: None, message: format!("cannot write: {e}") }
    }

    /// [`Batch::write`] with D made while it is written: `fill` hands every tile's result, in
    /// tile order, to the [`DSink`] (a chunk at a time), whose bytes go straight into the file,
    /// so the batch's D is never held whole in memory. The file is renamed into place only
    /// when `fill` succeeds and gave every tile; otherwise the old file stays and `fill`'s
    /// error (or the missing tiles) is returned.
    pub fn write_with_d<E: From<NpzError>>(&self, path: &Path, d_only: bool, fill: impl FnOnce(&mut DSink) -> Result<(), E>) -> Result<(), E> {
        let mut fill = Some(fill);
        let mut failed = None;
        let mut stream = |sink: &mut DSink| {
            let fill = fill.take().expect("d is written once");
            fill(sink).map_err(|e| {
                failed = Some(e);
                std::io::Error::other("stopped")
            })
        };
        let written = crate::store::replace_output_with(path, |file| self.write_to(std::io::BufWriter::new(file), d_only, Some(&mut stream)));
        match (failed, written) {
            (Some(e), _) => Err(e),
            (None, r) => r.map_err(|e| self.write_error(path, e).into()),
        }
    }

    /// The npz file's bytes (what [`Batch::write`] writes), in memory.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        self.write_to(&mut out, false, None).expect("writing to memory does not fail");
        out.into_inner()
    }

    /// The members in order; `d` is the batch's, or made by `stream_d` as it is written.
    fn write_to<W: Write + Seek>(&self, out: W, d_only: bool, mut stream_d: Option<&mut dyn FnMut(&mut DSink) -> std::io::Result<()>>) -> std::io::Result<()> {
        let header = serde_json::to_vec(&self.header_json()).expect("a JSON map serialises");
        let header = Array { storage: Storage::Raw, width: 1, shape: vec![header.len()], bytes: header.into() };
        let streamed = stream_d.as_ref().map(|_| self.d_layout());
        let d = streamed.as_ref().or(self.d.as_ref());
        let members = [("a", Some(&self.a)), ("b", Some(&self.b)), ("c", Some(&self.c)), ("meta", self.meta.as_ref()), ("scale_a", self.scale_a.as_ref()), ("scale_b", self.scale_b.as_ref()), ("d", d), ("header", Some(&header))];
        let mut npz = zip::ZipWriter::new(out);
        for (name, arr) in members {
            let Some(arr) = arr.filter(|_| !d_only || name == "d" || name == "header") else { continue };
            let options = zip::write::FileOptions::default()
                .compression_method(zip::CompressionMethod::Stored)
                // A fixed date: the same batch gives the same bytes.
                .last_modified_time(zip::DateTime::default())
                .large_file(arr.byte_len() as u64 + 4096 >= u32::MAX as u64);
            npz.start_file(format!("{name}.npy"), options)?;
            let shape: Vec<u64> = arr.shape.iter().map(|&d| d as u64).collect();
            let w = npyz::WriteOptions::<u8>::new().dtype(DType::Plain(arr.descr())).shape(&shape).writer(&mut npz).write_header_only()?;
            match stream_d.as_mut().filter(|_| name == "d") {
                Some(fill) => {
                    let mut sink = DSink { out: w, layout: arr, format: self.d_fmt, tiles: self.tiles, written: 0, buf: Vec::new() };
                    fill(&mut sink)?;
                    if sink.written != sink.tiles {
                        return Err(std::io::Error::other(format!("d has {} of {} tiles", sink.written, sink.tiles)));
                    }
                }
                None => w.write_all(&arr.bytes)?,
            }
        }
        npz.finish()?.flush()
    }
}

/// Where [`Batch::write_with_d`] takes D: tiles in order, a chunk at a time, encoded and
/// written into the npz's `d` member as they come.
pub struct DSink<'a> {
    out: &'a mut dyn Write,
    layout: &'a Array,
    format: Format,
    tiles: usize,
    written: usize,
    /// One chunk's bytes, reused.
    buf: Vec<u8>,
}

impl DSink<'_> {
    /// The next tiles' results (each m×n in D's format).
    pub fn put(&mut self, ds: &[impl AsRef<[u64]> + Sync]) -> std::io::Result<()> {
        if self.written + ds.len() > self.tiles {
            return Err(std::io::Error::other(format!("more than the batch's {} tiles of d", self.tiles)));
        }
        self.buf.resize(ds.len() * self.layout.per_tile() * self.layout.width, 0);
        self.layout.encode_tiles(&mut self.buf, ds, self.format);
        self.out.write_all(&self.buf)?;
        self.written += ds.len();
        Ok(())
    }
}

/// The results in an npz of only `d` (N×m×n in `d_fmt`, raw or typed): an external oracle's
/// answer to a batch of `tiles` tiles of m×n. `name` is for messages.
pub fn read_d(bytes: &[u8], name: &str, d_fmt: Format, tiles: usize, m: usize, n: usize) -> Result<Vec<Vec<u64>>, NpzError> {
    let err = |member: Option<&str>, message: String| NpzError { file: Some(name.to_string()), member: member.map(str::to_string), tile: None, message };
    let mut npz = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| err(None, format!("not an npz file (a zip of .npy arrays): {e}")))?;
    let d = read_member(&mut npz, "d", None).map_err(|e| err(Some("d"), e))?.ok_or_else(|| err(Some("d"), "missing".into()))?;
    if d.shape != [tiles, m, n] {
        return Err(err(Some("d"), format!("shape {:?}, asked for {tiles} tiles of {m}x{n}", d.shape)));
    }
    let storage = storage_of(&d.ty, d_fmt).map_err(|e| err(Some("d"), e))?;
    let arr = Array { storage, width: d.ty.size_field() as usize, shape: d.shape, bytes: d.bytes };
    (0..tiles)
        .map(|t| {
            let bits = arr.tile_bits(t, d_fmt).map_err(|e| NpzError { tile: Some(t), ..err(Some("d"), e) })?;
            match bits.iter().find(|&&b| b & !d_fmt.mask() != 0) {
                Some(b) => Err(NpzError { tile: Some(t), ..err(Some("d"), format!("{b:#x} is not a {d_fmt} bit pattern")) }),
                None => Ok(bits),
            }
        })
        .collect()
}

/// Every tile of an npz file as a case, checked.
pub fn read_cases(path: &Path) -> Result<Vec<MmaCase>, NpzError> {
    Batch::read(path)?.cases()
}

/// Every tile of an npz file of results as a case and its D (an error when it has no `d`).
pub fn read_results(path: &Path) -> Result<Vec<(MmaCase, Vec<u64>)>, NpzError> {
    let batch = Batch::read(path)?;
    if batch.d.is_none() {
        return Err(batch.err(Some("d"), None, "missing: not a file of results"));
    }
    let cases = batch.cases()?;
    cases.into_iter().enumerate().map(|(i, c)| Ok((c, batch.d(i)?.expect("d is there")))).collect()
}

/// Write cases as an npz of raw bit patterns (see [`Batch::from_cases`]).
pub fn write_cases(path: &Path, cases: &[MmaCase]) -> Result<(), NpzError> {
    with_file(Batch::from_cases(cases), path)?.write(path, false)
}

/// Write cases and their results `d` (one m×n per case) as an npz of raw bit patterns.
pub fn write_results(path: &Path, cases: &[MmaCase], d: &[Vec<u64>]) -> Result<(), NpzError> {
    assert_eq!(cases.len(), d.len(), "one result per case");
    let mut batch = with_file(Batch::from_cases(cases), path)?;
    batch.set_d(0, d);
    batch.write(path, false)
}

/// An error about cases bound for `path` names that file.
fn with_file(r: Result<Batch, NpzError>, path: &Path) -> Result<Batch, NpzError> {
    r.map_err(|e| NpzError { file: Some(path.display().to_string()), ..e })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each container width and storage decodes and encodes the same bit patterns; signed
    /// storage sign-extends narrow integers and refuses values outside the format.
    #[test]
    fn arrays_keep_bit_patterns_in_every_storage() {
        for (f, storage, width) in [
            (Format::F16, Storage::Raw, 2),
            (Format::F16, Storage::Float, 2),
            (Format::Tf32, Storage::Float, 4),
            (Format::F64, Storage::Raw, 8),
            (Format::E4m3, Storage::Raw, 1),
            (Format::S32, Storage::Signed, 4),
            (Format::S4, Storage::Signed, 1),
        ] {
            let bits: Vec<u64> = (0..6u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & f.mask()).collect();
            let mut arr = Array { storage, width, shape: vec![1, 2, 3], bytes: vec![0; 6 * width].into() };
            let mut bytes = std::mem::take(&mut arr.bytes);
            arr.encode(bytes.to_mut(), &bits, f);
            arr.bytes = bytes;
            assert_eq!(arr.tile_bits(0, f).unwrap(), bits, "{f} {storage:?}");
        }
        let s4 = Array { storage: Storage::Signed, width: 1, shape: vec![1, 1, 2], bytes: vec![0xff, 0x08].into() };
        let e = s4.tile_bits(0, Format::S4).unwrap_err();
        assert!(e.contains("element 1 is 8, outside s4's range -8..=7"), "{e}");
        let mut ok = s4.clone();
        ok.bytes = vec![0xff, 0xf8].into();
        assert_eq!(ok.tile_bits(0, Format::S4).unwrap(), vec![0xf, 0x8], "-1 and -8");
    }

    #[test]
    fn dtypes_hold_formats_only_where_they_fit() {
        let ty = |s: &str| s.parse::<TypeStr>().unwrap();
        assert_eq!(storage_of(&ty("<u2"), Format::Bf16), Ok(Storage::Raw));
        assert_eq!(storage_of(&ty("|V2"), Format::Bf16), Ok(Storage::Raw));
        assert_eq!(storage_of(&ty("<f4"), Format::Tf32), Ok(Storage::Float));
        assert_eq!(storage_of(&ty("|i1"), Format::S4), Ok(Storage::Signed));
        assert_eq!(storage_of(&ty("|u1"), Format::B1), Ok(Storage::Raw));
        let e = storage_of(&ty("<f2"), Format::Bf16).unwrap_err();
        assert_eq!(e, "dtype float16 does not hold bf16 elements (raw bit patterns as uint16)");
        assert!(storage_of(&ty("<f4"), Format::F16).unwrap_err().contains("or float16"));
        assert!(storage_of(&ty("<u4"), Format::F16).is_err());
        assert!(storage_of(&ty("|i1"), Format::U8).is_err(), "unsigned formats are raw");
    }
}
