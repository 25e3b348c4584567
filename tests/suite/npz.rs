//! The binary interchange: batches of tiles as `.npz` arrays for `emulate`, `reference`, `run`
//! and `gen`, read and written beside JSONL in every combination, with the same cases and the
//! same D; typed and raw dtypes alike; every malformed file an error naming its member.

use mmafuzz::exec::path_by_id;
use mmafuzz::npz::{read_cases, read_results, write_cases, Batch};
use mmafuzz::{gen, Emulator, Format, MmaCase, Model};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mmafuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmafuzz")).args(args).output().expect("binary runs")
}

fn ok(out: &Output) {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The command's error line, asserting it failed with status 2 (an error for the whole file).
fn fails(args: &[&str]) -> String {
    let out = mmafuzz(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    stderr
}

/// Generated tiles of a path, as `gen` makes them.
fn tiles(path: &str, count: u64, seed: u64) -> Vec<MmaCase> {
    let p = path_by_id(path).unwrap();
    (0..count).map(|i| gen::case_at(p, seed, i)).collect()
}

/// A case as an npz carries it: every field but `"op"` among the extras is left out.
fn bare(c: &MmaCase) -> MmaCase {
    let mut c = c.clone();
    c.extra.retain(|k, _| k == "op");
    c
}

fn write_jsonl(path: &Path, cases: &[MmaCase]) {
    let text: String = cases.iter().map(|c| serde_json::Value::Object(c.to_json()).to_string() + "\n").collect();
    std::fs::write(path, text).unwrap();
}

/// Cases and D of a JSONL results file.
fn read_jsonl(path: &Path) -> Vec<(MmaCase, Vec<u64>)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let c = MmaCase::from_json_line(l).unwrap();
            let d = c.recorded_d().unwrap().expect("a result line has d");
            (c, d)
        })
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A dense f16 path, a mixed FP8 path, an s4 path, b1 XOR pairs, and two sparse paths (tf32's
/// 1:2 among them): JSONL → npz → JSONL keeps every case, and D is the emulator's whether the
/// cases come in or go out as JSONL or npz; `gen` makes the same tiles in both forms.
#[test]
fn every_combination_of_forms_gives_the_same_cases_and_d() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    for path in [
        "mma.m16n8k16.f32.f16.f16.f32",
        "mma.m16n8k32.f32.e4m3.e5m2.f32",
        "mma.m16n8k64.s32.s4.s4.s32",
        "mma.m16n8k256.s32.b1.b1.s32.xor.popc",
        "mma.sp.m16n8k32.f32.f16.f16.f32",
        "mma.sp.m16n8k16.f32.tf32.tf32.f32",
    ] {
        let model = mmafuzz::model::default_name(&path);
        let cases = tiles(path, 40, 11);
        let emu = Emulator::new(Model::load(&model).unwrap());
        let want: Vec<Vec<u64>> = cases.iter().map(|c| emu.run(c).unwrap()).collect();
        write_jsonl(&at("cases.jsonl"), &cases);
        ok(&mmafuzz(&["gen", "--path", path, "--count", "40", "--seed", "11", "--out", s(&at("gen.npz"))]));
        assert_eq!(read_cases(&at("gen.npz")).unwrap(), cases.iter().map(bare).collect::<Vec<_>>(), "{path}: gen");

        // JSONL in, npz out; npz in, JSONL out; npz both ways; JSONL both ways.
        for (input, output) in [("cases.jsonl", "r1.npz"), ("gen.npz", "r2.jsonl"), ("gen.npz", "r3.npz"), ("cases.jsonl", "r4.jsonl")] {
            ok(&mmafuzz(&["emulate", "--model", &model, "--in", s(&at(input)), "--out", s(&at(output))]));
            let got = if output.ends_with(".npz") { read_results(&at(output)).unwrap() } else { read_jsonl(&at(output)) };
            assert_eq!(got.len(), cases.len());
            for ((case, d), (want_case, want_d)) in got.iter().zip(cases.iter().zip(&want)) {
                assert_eq!(bare(case), bare(want_case), "{path}: {input} -> {output}");
                assert_eq!(d, want_d, "{path}: {input} -> {output}");
            }
        }
        // The npz of results is a batch of the same arrays with d: read back as cases, then
        // through JSONL again, it is the JSONL it came from.
        let batch = Batch::read(&at("r1.npz")).unwrap();
        assert_eq!((batch.tiles, batch.m, batch.n, batch.k), (40, cases[0].m, cases[0].n, cases[0].k));
        assert_eq!(batch.d(39).unwrap().as_ref(), Some(&want[39]));
        write_cases(&at("again.npz"), &cases).unwrap();
        ok(&mmafuzz(&["emulate", "--model", &model, "--in", s(&at("again.npz")), "--out", s(&at("again.jsonl"))]));
        let lines = |p: &Path| std::fs::read_to_string(p).unwrap();
        assert_eq!(lines(&at("again.jsonl")), lines(&at("r2.jsonl")), "{path}");
    }
}

/// `emulate` runs an npz in chunks of about 1 MiB of cases (256 m16n8k16 tiles): 700 tiles,
/// two whole chunks and a short one, each D the emulator's for its own tile.
#[test]
fn an_npz_of_several_chunks_keeps_each_tile_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let path = "mma.m16n8k16.f32.f16.f16.f32";
    let model = mmafuzz::model::default_name(&path);
    ok(&mmafuzz(&["gen", "--path", path, "--count", "700", "--seed", "5", "--out", s(&at("tiles.npz"))]));
    ok(&mmafuzz(&["emulate", "--model", &model, "--in", s(&at("tiles.npz")), "--out", s(&at("d.npz"))]));
    let emu = Emulator::new(Model::load(&model).unwrap());
    let (got, want) = (read_results(&at("d.npz")).unwrap(), tiles(path, 700, 5));
    assert_eq!(got.len(), 700);
    for (i, (case, d)) in got.iter().enumerate() {
        assert_eq!(bare(case), bare(&want[i]), "tile {i}");
        assert_eq!(d, &emu.run(case).unwrap(), "tile {i}");
    }
    // --d-only: the same d, beside the header alone; JSONL out has no such form.
    ok(&mmafuzz(&["emulate", "--model", &model, "--in", s(&at("tiles.npz")), "--out", s(&at("d-only.npz")), "--d-only"]));
    let bytes = std::fs::read(at("d-only.npz")).unwrap();
    let mut names: Vec<String> = zip::ZipArchive::new(std::io::Cursor::new(&bytes)).unwrap().file_names().map(str::to_string).collect();
    names.sort();
    assert_eq!(names, ["d.npy", "header.npy"]);
    let d = mmafuzz::npz::read_d(&bytes, "d-only.npz", Format::F32, 700, 16, 8).unwrap();
    assert_eq!(d, got.iter().map(|(_, d)| d.clone()).collect::<Vec<_>>());
    let err = fails(&["emulate", "--model", &model, "--in", s(&at("tiles.npz")), "--out", s(&at("d.jsonl")), "--d-only"]);
    assert!(err.contains("--d-only is for an .npz out"), "{err}");
}

/// D streamed into the file a chunk at a time gives the same bytes as D set whole and written;
/// a fill that fails, or gives fewer tiles than the batch has, leaves the old file as it was.
#[test]
fn d_streamed_into_the_file_is_d_written_whole() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let cases = tiles("mma.m16n8k16.f32.f16.f16.f32", 300, 9);
    let emu = Emulator::new(Model::load("sm90:mma.m16n8k16.f32.f16.f16.f32").unwrap());
    let ds: Vec<Vec<u64>> = cases.iter().map(|c| emu.run(c).unwrap()).collect();
    let batch = Batch::from_cases(&cases).unwrap();
    let stop = || mmafuzz::npz::NpzError { file: None, member: None, tile: Some(200), message: "stopped by the test".into() };
    for d_only in [false, true] {
        let mut whole = batch.clone();
        whole.set_d(0, &ds);
        whole.write(&at("whole.npz"), d_only).unwrap();
        let streamed = |fill_to: usize, fail_at: Option<usize>| {
            batch.write_with_d(&at("streamed.npz"), d_only, |sink| -> Result<(), mmafuzz::npz::NpzError> {
                for (first, chunk) in (0..fill_to).step_by(128).map(|f| (f, &ds[f..(f + 128).min(fill_to)])) {
                    if fail_at.is_some_and(|t| t < first + chunk.len()) {
                        return Err(stop());
                    }
                    sink.put(chunk).unwrap();
                }
                Ok(())
            })
        };
        streamed(300, None).unwrap();
        let bytes = std::fs::read(at("streamed.npz")).unwrap();
        assert_eq!(bytes, std::fs::read(at("whole.npz")).unwrap(), "d_only {d_only}");
        // A fill that stops with an error in the second chunk: its error, the old file kept.
        let err = streamed(300, Some(200)).unwrap_err();
        assert_eq!(err.to_string(), stop().to_string());
        assert_eq!(std::fs::read(at("streamed.npz")).unwrap(), bytes, "the old file stays");
        // Fewer tiles than the batch's: an error naming both counts, the old file kept.
        let err = streamed(250, None).unwrap_err().to_string();
        assert!(err.contains("d has 250 of 300 tiles"), "{err}");
        assert_eq!(std::fs::read(at("streamed.npz")).unwrap(), bytes, "the old file stays");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).filter(|n| n.to_string_lossy().ends_with(".tmp")).collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

/// A model that cannot run an npz's tiles: one line naming the file and the first tile, exit
/// status 2, nothing written (the tiles run many at a time, the error still names its tile).
#[test]
fn tiles_the_model_cannot_run_are_an_error_naming_the_tile() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    ok(&mmafuzz(&["gen", "--path", "mma.m16n8k32.s32.s8.s8.s32", "--count", "300", "--seed", "1", "--out", s(&at("s8.npz"))]));
    let err = fails(&["emulate", "--model", "sm90:mma.m16n8k16.f32.f16.f16.f32", "--in", s(&at("s8.npz")), "--out", s(&at("d.npz"))]);
    assert!(err.contains("s8.npz: tile 0: model 'sm90:mma.m16n8k16.f32.f16.f16.f32' cannot run s8/s8 into s32"), "{err}");
    assert!(!at("d.npz").exists(), "nothing written");
}

/// A stored member is read in place (the file mapped): a byte changed in its data is a damaged
/// file, caught by its CRC-32 (as the zip reader catches it when it reads a member through).
#[test]
fn a_damaged_member_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    ok(&mmafuzz(&["gen", "--path", "mma.m16n8k16.f32.f16.f16.f32", "--count", "8", "--seed", "1", "--out", s(&at("tiles.npz"))]));
    let mut bytes = std::fs::read(at("tiles.npz")).unwrap();
    // The first member, a, starts with its zip and .npy headers; byte 2000 is in its data.
    bytes[2000] ^= 0x40;
    std::fs::write(at("damaged.npz"), &bytes).unwrap();
    let err = fails(&["emulate", "--model", "h100", "--in", s(&at("damaged.npz")), "--out", s(&at("d.npz"))]);
    assert!(err.contains("a") && err.contains("CRC-32 does not match"), "{err}");
    assert!(!at("d.npz").exists(), "nothing written");
}

/// `reference` into an npz: D is the correct rounding in the chosen direction, the same D as
/// the JSONL form's (which also carries the exact values as text).
#[test]
fn reference_writes_the_correct_rounding_as_d() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let cases = tiles("mma.m16n8k32.f32.e4m3.e4m3.f32", 12, 5);
    write_cases(&at("cases.npz"), &cases).unwrap();
    write_jsonl(&at("cases.jsonl"), &cases);
    for rounding in ["rne", "rz"] {
        ok(&mmafuzz(&["reference", "--rounding", rounding, "--in", s(&at("cases.npz")), "--out", s(&at("r.npz"))]));
        ok(&mmafuzz(&["reference", "--rounding", rounding, "--in", s(&at("cases.jsonl")), "--out", s(&at("r.jsonl"))]));
        let from_npz: Vec<Vec<u64>> = read_results(&at("r.npz")).unwrap().into_iter().map(|(_, d)| d).collect();
        let from_jsonl: Vec<Vec<u64>> = read_jsonl(&at("r.jsonl")).into_iter().map(|(_, d)| d).collect();
        assert_eq!(from_npz, from_jsonl, "{rounding}");
        assert!(std::fs::read_to_string(at("r.jsonl")).unwrap().contains("\"exact\""));
    }
    let rne: Vec<Vec<u64>> = cases
        .iter()
        .map(|c| mmafuzz::exact::exact_tile(c).iter().map(|x| x.round(c.c_fmt, mmafuzz::Rounding::Rne)).collect())
        .collect();
    ok(&mmafuzz(&["reference", "--in", s(&at("cases.npz")), "--out", s(&at("rne.npz"))]));
    assert_eq!(read_results(&at("rne.npz")).unwrap().into_iter().map(|(_, d)| d).collect::<Vec<_>>(), rne);
}

/// One `.npy` member as NumPy's `np.save` writes it: format 1.0, the header dict padded with
/// spaces to a multiple of 64 bytes and ended by a newline, then the data.
fn npy(descr: &str, shape: &[usize], fortran: bool, data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let dims = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let order = if fortran { "True" } else { "False" };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {dims}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.bytes());
    out.extend(data);
    out
}

/// A zip of members named `NAME.npy`, as `np.savez` (stored) or `np.savez_compressed` (deflated).
fn npz(path: &Path, members: &[(&str, Vec<u8>)], compressed: bool) {
    use zip::{write::FileOptions, CompressionMethod, ZipWriter};
    let mut zip = ZipWriter::new(std::fs::File::create(path).unwrap());
    let method = if compressed { CompressionMethod::Deflated } else { CompressionMethod::Stored };
    for (name, bytes) in members {
        zip.start_file(format!("{name}.npy"), FileOptions::default().compression_method(method)).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

/// Little-endian bytes of elements, `width` bytes each.
fn le(bits: impl IntoIterator<Item = u64>, width: usize) -> Vec<u8> {
    bits.into_iter().flat_map(|b| b.to_le_bytes()[..width].to_vec()).collect()
}

fn header(json: &str) -> Vec<u8> {
    npy("|u1", &[json.len()], false, json.as_bytes())
}

/// NumPy's conventions: `<u2`/`<f2`/`<f4` members in a zip, stored or deflated, header or
/// none. Typed float16/float32 and raw uint16/uint32 give the same D (typed D where C was
/// typed); int8 values for s4 give what their raw patterns give.
#[test]
fn numpy_files_typed_or_raw_give_the_same_d() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let path = "mma.m16n8k16.f32.f16.f16.f32";
    let model = mmafuzz::model::default_name(&path);
    let cases = tiles(path, 24, 3);
    let n = cases.len();
    let cat = |part: fn(&MmaCase) -> &Vec<u64>| cases.iter().flat_map(|c| part(c).iter().copied()).collect::<Vec<u64>>();
    let (a, b, c) = (cat(|c| &c.a), cat(|c| &c.b), cat(|c| &c.c));
    let raw = [
        ("a", npy("<u2", &[n, 16, 16], false, &le(a.clone(), 2))),
        ("b", npy("<u2", &[n, 16, 8], false, &le(b.clone(), 2))),
        ("c", npy("<u4", &[n, 16, 8], false, &le(c.clone(), 4))),
        ("header", header(r#"{"a_fmt": "f16", "b_fmt": "f16", "c_fmt": "f32"}"#)),
    ];
    let typed = [
        ("a", npy("<f2", &[n, 16, 16], false, &le(a, 2))),
        ("b", npy("<f2", &[n, 16, 8], false, &le(b, 2))),
        ("c", npy("<f4", &[n, 16, 8], false, &le(c, 4))),
    ];
    npz(&at("raw.npz"), &raw, false);
    npz(&at("typed.npz"), &typed, true);
    let emu = Emulator::new(Model::load(&model).unwrap());
    let want: Vec<Vec<u64>> = cases.iter().map(|c| emu.run(c).unwrap()).collect();
    for input in ["raw.npz", "typed.npz"] {
        assert_eq!(read_cases(&at(input)).unwrap(), cases.iter().map(bare).collect::<Vec<_>>(), "{input}");
        ok(&mmafuzz(&["emulate", "--model", &model, "--in", s(&at(input)), "--out", s(&at("d.npz"))]));
        let d: Vec<Vec<u64>> = read_results(&at("d.npz")).unwrap().into_iter().map(|(_, d)| d).collect();
        assert_eq!(d, want, "{input}");
        // D is stored as C was: float32 after typed C, uint32 after raw C.
        // (Members are stored uncompressed, so their .npy headers can be read in the bytes.)
        let bytes = String::from_utf8_lossy(&std::fs::read(at("d.npz")).unwrap()).into_owned();
        let (descr, not) = if input == "typed.npz" { ("'descr': '<f4'", "'descr': '<u4'") } else { ("'descr': '<u4'", "'descr': '<f4'") };
        assert_eq!((bytes.matches(descr).count(), bytes.matches(not).count()), (2, 0), "{input}: c and d are {descr}");
    }

    // A batch of no tiles is still a batch: its results hold a d of no tiles.
    let empty = [("a", npy("<f2", &[0, 16, 16], false, &[])), ("b", npy("<f2", &[0, 16, 8], false, &[])), ("c", npy("<f4", &[0, 16, 8], false, &[]))];
    npz(&at("empty.npz"), &empty, false);
    ok(&mmafuzz(&["emulate", "--model", &model, "--in", s(&at("empty.npz")), "--out", s(&at("d0.npz"))]));
    assert!(read_results(&at("d0.npz")).unwrap().is_empty());

    // s4 tiles: int8 values (-8..=7) and their raw uint8 patterns (0..=15) are the same tiles.
    let path = "mma.m16n8k64.s32.s4.s4.s32";
    let cases = tiles(path, 8, 9);
    let n = cases.len();
    let sign = |x: u64| ((x << 60) as i64 >> 60) as u64;
    let cat = |part: fn(&MmaCase) -> &Vec<u64>, f: &dyn Fn(u64) -> u64| cases.iter().flat_map(|c| part(c).iter().map(|&x| f(x))).collect::<Vec<u64>>();
    let hdr = header(r#"{"a_fmt": "s4", "c_fmt": "s32"}"#);
    let members = |descr: &str, f: &dyn Fn(u64) -> u64| {
        [
            ("a", npy(descr, &[n, 16, 64], false, &le(cat(|c| &c.a, f), 1))),
            ("b", npy(descr, &[n, 64, 8], false, &le(cat(|c| &c.b, f), 1))),
            ("c", npy("<i4", &[n, 16, 8], false, &le(cat(|c| &c.c, &|x| x), 4))),
            ("header", hdr.clone()),
        ]
    };
    npz(&at("s4_raw.npz"), &members("|u1", &|x| x), false);
    npz(&at("s4_values.npz"), &members("|i1", &sign), false);
    assert!(cases.iter().any(|c| c.a.iter().any(|&x| x >= 8)), "some negative s4 values");
    for input in ["s4_raw.npz", "s4_values.npz"] {
        assert_eq!(read_cases(&at(input)).unwrap(), cases.iter().map(bare).collect::<Vec<_>>(), "{input}");
    }
}

/// A NumPy-written file (numpy 2.4, `np.savez_compressed`): tiles 0..4 of seed 7 of the
/// m16n8k16 f16 path, made with
/// ```python
/// z = np.load("gen.npz")  # mmafuzz gen --path mma.m16n8k16.f32.f16.f16.f32 --count 4 --seed 7
/// np.savez_compressed("numpy-m16n8k16-f16.npz", a=z["a"].view("<f2"), b=z["b"].astype("<u2"),
///     c=z["c"].view("<f4"), header=np.frombuffer(json.dumps({"a_fmt": "f16", "c_fmt": "f32"}).encode(), np.uint8))
/// ```
#[test]
fn a_file_numpy_wrote_is_read() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/numpy-m16n8k16-f16.npz");
    let cases = read_cases(&file).unwrap();
    assert_eq!(cases, tiles("mma.m16n8k16.f32.f16.f16.f32", 4, 7).iter().map(bare).collect::<Vec<_>>());
}

/// Every malformed file is one line naming the file and the member (and the tile), exit
/// status 2, and no output written.
#[test]
fn malformed_files_are_errors_naming_the_member() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let n = 4;
    let cases = tiles("mma.m16n8k16.f32.f16.f16.f32", n as u64, 1);
    let cat = |part: fn(&MmaCase) -> &Vec<u64>| cases.iter().flat_map(|c| part(c).iter().copied()).collect::<Vec<u64>>();
    let (a, b, c) = (cat(|c| &c.a), cat(|c| &c.b), cat(|c| &c.c));
    let f16 = r#"{"a_fmt": "f16", "c_fmt": "f32"}"#;
    let good = || -> Vec<(&'static str, Vec<u8>)> {
        vec![
            ("a", npy("<u2", &[n, 16, 16], false, &le(a.clone(), 2))),
            ("b", npy("<u2", &[n, 16, 8], false, &le(b.clone(), 2))),
            ("c", npy("<u4", &[n, 16, 8], false, &le(c.clone(), 4))),
            ("header", header(f16)),
        ]
    };
    let with = |name: &'static str, member: Option<Vec<u8>>| {
        let mut m = good();
        m.retain(|(k, _)| *k != name);
        if let Some(bytes) = member {
            m.push((name, bytes));
        }
        m
    };
    // Sparse tiles for the metadata's cases.
    let sparse = tiles("mma.sp.m16n8k32.f32.f16.f16.f32", n as u64, 1);
    let sp = |part: fn(&MmaCase) -> Vec<u64>| sparse.iter().flat_map(part).collect::<Vec<u64>>();
    let meta = sp(|c| c.meta.as_ref().unwrap().iter().map(|&x| x as u64).collect());
    let mut unordered = meta.clone();
    unordered.swap(2 * 16 * 16 + 6, 2 * 16 * 16 + 7); // tile 2, row 0, pair 3
    let sparse_members = |meta: Vec<u8>, a_cols: usize| {
        vec![
            // The kept values, or as many zeros as a dense A would have.
            ("a", npy("<u2", &[n, 16, a_cols], false, &if a_cols == 16 { le(sp(|c| c.a.clone()), 2) } else { vec![0; n * 16 * a_cols * 2] })),
            ("b", npy("<u2", &[n, 32, 8], false, &le(sp(|c| c.b.clone()), 2))),
            ("c", npy("<u4", &[n, 16, 8], false, &le(sp(|c| c.c.clone()), 4))),
            ("meta", meta),
            ("header", header(f16)),
        ]
    };
    let s4 = tiles("mma.m16n8k64.s32.s4.s4.s32", 2, 1);
    let mut s4_a: Vec<u64> = s4.iter().flat_map(|c| c.a.clone()).collect();
    s4_a[16 * 64 + 5] = 0x1f;
    let too_wide = vec![
        ("a", npy("|u1", &[2, 16, 64], false, &le(s4_a, 1))),
        ("b", npy("|u1", &[2, 64, 8], false, &le(s4.iter().flat_map(|c| c.b.clone()), 1))),
        ("c", npy("<u4", &[2, 16, 8], false, &le(s4.iter().flat_map(|c| c.c.clone()), 4))),
        ("header", header(r#"{"a_fmt": "s4", "c_fmt": "s32"}"#)),
    ];
    // (file, its members, what its error says)
    type Malformed<'a> = (&'a str, Vec<(&'a str, Vec<u8>)>, &'a [&'a str]);
    let files: Vec<Malformed> = vec![
        ("two_d.npz", with("a", Some(npy("<u2", &[n * 16, 16], false, &le(a.clone(), 2)))), &["member 'a'", "is not N×m×k"]),
        ("tiles.npz", with("b", Some(npy("<u2", &[3, 16, 8], false, &le(b[..3 * 128].to_vec(), 2)))), &["member 'b'", "has 3 tiles, 'c' has 4"]),
        ("dtype.npz", with("a", Some(npy("<u4", &[n, 16, 16], false, &le(a.clone(), 4)))), &["member 'a'", "dtype uint32 does not hold f16"]),
        ("typed_bf16.npz", with("header", Some(header(r#"{"a_fmt": "bf16", "c_fmt": "f32"}"#))).into_iter().map(|(k, v)| if k == "a" { (k, npy("<f2", &[n, 16, 16], false, &le(a.clone(), 2))) } else { (k, v) }).collect(), &["member 'a'", "dtype float16 does not hold bf16"]),
        ("k.npz", with("a", Some(npy("<u2", &[n, 16, 8], false, &le(a[..n * 128].to_vec(), 2)))), &["member 'a'", "not 16x16", "k = 16 from 'b'"]),
        ("n.npz", with("b", Some(npy("<u2", &[n, 16, 4], false, &le(b[..n * 64].to_vec(), 2)))), &["member 'b'", "n = 8"]),
        ("fortran.npz", with("c", Some(npy("<u4", &[n, 16, 8], true, &le(c.clone(), 4)))), &["member 'c'", "Fortran-ordered"]),
        ("missing.npz", with("b", None), &["member 'b'", "missing"]),
        ("no_header.npz", with("header", None), &["member 'a'", "dtype uint16 does not say which format", "add a 'header' member"]),
        ("header_json.npz", with("header", Some(header("{a_fmt: f16"))), &["member 'header'", "is not JSON"]),
        ("header_format.npz", with("header", Some(header(r#"{"a_fmt": "f17", "c_fmt": "f32"}"#))), &["member 'header'", "a_fmt", "f17"]),
        ("header_op.npz", with("header", Some(header(r#"{"a_fmt": "f16", "c_fmt": "f32", "op": "xor"}"#))), &["member 'header'", "xor"]),
        ("header_dtype.npz", with("header", Some(npy("<f4", &[1], false, &[0; 4]))), &["member 'header'", "1-D uint8"]),
        ("meta_order.npz", sparse_members(npy("|u1", &[n, 16, 16], false, &le(unordered, 1)), 16), &["member 'meta'", "tile 2", "pair 3"]),
        ("meta_shape.npz", sparse_members(npy("|u1", &[n, 16, 8], false, &le(meta.clone(), 1)[..n * 128]), 16), &["member 'meta'", "is not A's"]),
        ("meta_dense_a.npz", sparse_members(npy("|u1", &[n, 16, 16], false, &le(meta.clone(), 1)), 32), &["member 'a'", "k/2 = 16 kept values"]),
        ("too_wide.npz", too_wide, &["member 'a'", "tile 1", "element 5 does not fit in s4"]),
    ];
    for (name, members, expect) in files {
        npz(&at(name), &members, false);
        let out = at("out.npz");
        let err = fails(&["emulate", "--model", "h100", "--in", s(&at(name)), "--out", s(&out)]);
        assert!(err.contains(&format!("{}: ", at(name).display())), "{name}: names the file: {err}");
        for e in expect {
            assert!(err.contains(e), "{name}: {e:?} in {err}");
        }
        assert!(!out.exists(), "{name}: no output");
        // The library says the same.
        let lib = read_cases(&at(name)).unwrap_err().to_string();
        assert!(err.contains(&lib), "{name}: {lib} / {err}");
    }
    std::fs::write(at("text.npz"), "{\"a_fmt\": \"f16\"}\n").unwrap();
    let err = fails(&["emulate", "--model", "h100", "--in", s(&at("text.npz")), "--out", s(&at("out.npz"))]);
    assert!(err.contains("text.npz: not an npz file"), "{err}");
    // A tile the path does not take is named before any GPU is looked for.
    npz(&at("good.npz"), &good(), false);
    let err = fails(&["run", "--path", "mma.m16n8k32.f32.e4m3.e4m3.f32", "--in", s(&at("good.npz")), "--out", s(&at("out.npz"))]);
    assert!(err.contains("good.npz: tile 0: path mma.m16n8k32.f32.e4m3.e4m3.f32 takes 16x8x32 tiles"), "{err}");
}

/// JSONL cases of two shapes cannot share an npz: the error names the line; bad lines are
/// rejected one by one as ever, and the npz holds the rest.
#[test]
fn jsonl_into_npz_keeps_the_line_semantics() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let mut cases = tiles("mma.m16n8k16.f32.f16.f16.f32", 3, 2);
    cases.extend(tiles("mma.m16n8k8.f32.f16.f16.f32", 1, 2));
    write_jsonl(&at("mixed.jsonl"), &cases);
    let err = fails(&["emulate", "--model", "h100", "--in", s(&at("mixed.jsonl")), "--out", s(&at("out.npz"))]);
    assert!(err.contains("out.npz: line 4: the case is 16x8x8 f16/f16 into f32, the first is 16x8x16"), "{err}");
    assert!(!at("out.npz").exists());

    let good = tiles("mma.m16n8k16.f32.f16.f16.f32", 3, 2);
    write_jsonl(&at("some_bad.jsonl"), &good);
    let text = std::fs::read_to_string(at("some_bad.jsonl")).unwrap().replacen("\"k\":16", "\"k\":\"x\"", 1);
    std::fs::write(at("some_bad.jsonl"), text).unwrap();
    let out = mmafuzz(&["emulate", "--model", "h100", "--in", s(&at("some_bad.jsonl")), "--out", s(&at("out.npz"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: line 1: field 'k'"));
    let got: Vec<MmaCase> = read_results(&at("out.npz")).unwrap().into_iter().map(|(c, _)| c).collect();
    assert_eq!(got, good[1..].iter().map(bare).collect::<Vec<_>>());
}

#[test]
fn library_models_stay_with_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let input: PathBuf = dir.path().join("cases.npz");
    write_cases(&input, &tiles("mma.m16n8k16.f32.f16.f16.f32", 1, 1)).unwrap();
    let err = fails(&["emulate", "--model", "h100:cublas.gemm.f32.f16.f16.f32", "--in", s(&input), "--out", "-"]);
    assert!(err.contains("library model") && err.contains("no .npz"), "{err}");
}

/// `emulate` converts an npz in chunks into cases whose buffers the next chunk reuses: every
/// reused case equals the tile read afresh, whatever shape, formats, sparsity or pairing the
/// cases held before; and a bad tile's error is the first bad tile's, as with fresh cases.
#[test]
fn reused_cases_equal_fresh_ones() {
    let batches: Vec<Batch> = ["mma.sp.m16n8k32.f32.f16.f16.f32", "mma.m16n8k256.s32.b1.b1.s32.xor.popc", "mma.m16n8k16.f32.f16.f16.f32", "wgmma.m64n8k32.f32.e4m3.e5m2"]
        .iter()
        .map(|p| Batch::from_cases(&tiles(p, 9, 4)).unwrap())
        .collect();
    let mut reused = Vec::new();
    for batch in batches.iter().chain(batches.iter().rev()) {
        for range in [0..5, 5..9, 2..3] {
            batch.cases_into(range.clone(), &mut reused).unwrap();
            let fresh: Vec<MmaCase> = range.map(|t| batch.case(t).unwrap()).collect();
            assert_eq!(reused, fresh);
        }
    }
    // Tiles 3 and 6 made bad: metadata pairs out of order (checked on reading a tile).
    let mut cases = tiles("mma.sp.m16n8k32.f32.f16.f16.f32", 9, 4);
    for t in [6, 3] {
        let meta = cases[t].meta.as_mut().unwrap();
        meta.swap(0, 1);
        meta[0] = meta[0].max(1);
        meta[1] = meta[0];
    }
    let batch = Batch::from_cases(&cases.iter().map(bare).collect::<Vec<_>>()).expect("the batch holds what it is given");
    let message = batch.cases_into(0..9, &mut reused).unwrap_err().to_string();
    assert!(message.contains("tile 3") && message.contains("meta"), "{message}");
}
