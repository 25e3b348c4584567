//! Block-scaled MMAs (`mma ... kind::mxf8f6f4.block32 ... .ue8m0`): the scales travel through
//! every interchange (JSONL, npz, the corpus codec) unchanged, malformed scales are clear
//! errors, and the emulator folds each scale into its element exactly as MPFR's reference does.

use mmafuzz::blockscale::ScaleFormat;
use mmafuzz::corpus::codec::{decode_line, encode_line};
use mmafuzz::exact::exact_tile;
use mmafuzz::exec::path_by_id;
use mmafuzz::format::{Class, Format, Rounding};
use mmafuzz::npz::Batch;
use mmafuzz::{gen, Emulator, MmaCase, Model};

const PATH: &str = "mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0";

fn tiles(path: &str, count: u64, seed: u64) -> Vec<MmaCase> {
    let p = path_by_id(path).unwrap();
    (0..count).map(|i| gen::case_at(p, seed, i)).collect()
}

#[test]
fn generated_tiles_carry_edge_biased_scales_of_the_path() {
    let p = path_by_id(PATH).unwrap();
    assert_eq!(p.block_scale(), Some((ScaleFormat::Ue8m0, 32)));
    assert_eq!(path_by_id("mma.m16n8k32.f32.e4m3.e2m1.f32").unwrap().block_scale(), None);
    let cases = tiles(PATH, 400, 3);
    let all: Vec<u8> = cases.iter().flat_map(|c| {
        let s = c.scales.as_ref().expect("a block-scaled path's tiles carry scales");
        assert_eq!((s.fmt, s.block, s.a.len(), s.b.len()), (ScaleFormat::Ue8m0, 32, 16, 8));
        assert!(p.check(c).is_ok());
        s.a.iter().chain(&s.b).copied().collect::<Vec<u8>>()
    }).collect();
    for (what, wanted) in [("1.0", 127u8), ("the smallest", 0), ("the largest", 254), ("NaN", 255)] {
        assert!(all.contains(&wanted), "no scale of {what} ({wanted:02x}) in 400 tiles");
    }
    // A tile without scales is refused by the path, and scales by a path without them.
    let mut bare = cases[0].clone();
    bare.scales = None;
    assert!(p.check(&bare).unwrap_err().contains("block-scaled"));
    let unscaled = path_by_id("mma.m16n8k32.f32.e4m3.e2m1.f32").unwrap();
    assert!(unscaled.check(&cases[0]).unwrap_err().contains("no block scales"));
}

#[test]
fn scales_round_trip_through_jsonl_npz_and_the_corpus_codec() {
    let p = path_by_id(PATH).unwrap();
    let cases = tiles(PATH, 20, 5);
    for c in &cases {
        let again = MmaCase::from_json_line(&serde_json::Value::Object(c.to_json()).to_string()).unwrap();
        assert_eq!(&again, c);
        // By reference (seed and hash) and with its inputs written out.
        let d = vec![0u64; c.m * c.n];
        for path in [Some(p), None] {
            let line = encode_line(c, &d, path, true);
            assert_eq!(line.contains("\"scale_a\""), path.is_none(), "{line}");
            let (back, d_back) = decode_line(&line, Some(p)).unwrap();
            assert_eq!((back.scales.as_ref(), &back.a, &back.b, &back.c, d_back), (c.scales.as_ref(), &c.a, &c.b, &c.c, d.clone()));
        }
    }
    let batch = Batch::from_cases(&cases).unwrap();
    let back = Batch::from_bytes(&batch.to_bytes(), "memory").unwrap().cases().unwrap();
    assert_eq!(back.iter().map(|c| c.scales.clone()).collect::<Vec<_>>(), cases.iter().map(|c| c.scales.clone()).collect::<Vec<_>>());
    // Another tile's scales make another hash: a changed generator cannot go unnoticed.
    let mut other = cases[0].clone();
    other.scales.as_mut().unwrap().b[3] ^= 1;
    let line = encode_line(&cases[0], &[0; 128], Some(p), true).replace(
        &mmafuzz::corpus::codec::inputs_hash(&cases[0]),
        &mmafuzz::corpus::codec::inputs_hash(&other),
    );
    assert_eq!(decode_line(&line, Some(p)).unwrap_err().field, "inputs");
}

#[test]
fn malformed_scales_are_clear_errors() {
    let c = &tiles(PATH, 1, 1)[0];
    let line = serde_json::Value::Object(c.to_json()).to_string();
    let edit = |f: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)| {
        let mut obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&line).unwrap();
        f(&mut obj);
        MmaCase::from_json_line(&serde_json::Value::Object(obj).to_string()).unwrap_err()
    };
    let e = edit(&|o| {
        o.remove("scale_b");
    });
    assert_eq!(e.field, "scale_b");
    assert!(e.message.contains("missing"), "{e}");
    assert_eq!(edit(&|o| o["scale_fmt"] = "e8m0".into()).field, "scale_fmt");
    assert_eq!(edit(&|o| o["scale_block"] = 24.into()).field, "scale_block");
    assert_eq!(edit(&|o| o["scale_a"].as_array_mut().unwrap().truncate(3)).field, "scale_a");
    assert_eq!(edit(&|o| o["scale_a"][0] = "1ff".into()).field, "scale_a");
    // ue4m3 scales are 7 bits: 0x80 and above is no scale.
    let e = edit(&|o| {
        o["scale_fmt"] = "ue4m3".into();
        o["scale_a"].as_array_mut().unwrap().iter_mut().for_each(|x| *x = "38".into());
        o["scale_b"].as_array_mut().unwrap().iter_mut().for_each(|x| *x = "38".into());
        o["scale_b"][2] = "80".into();
    });
    assert_eq!(e.field, "scale_b");
    assert!(e.message.contains("ue4m3"), "{e}");
}

/// The emulator under an exactly rounding model equals MPFR on every element of scaled tiles:
/// both fold the scales in independently (the emulator into its operands' significands,
/// exponents and fields, MPFR into exact products), NaN scales and all.
#[test]
fn an_exactly_rounding_model_matches_mpfr_on_scaled_tiles() {
    let emu = Emulator::new(Model::load("exact-rne").unwrap());
    let mut nans = 0;
    for c in tiles(PATH, 300, 11).iter().chain(&tiles("mma.m16n8k32.mxf8f6f4.block32.f32.e2m3.e5m2.f32.ue8m0", 300, 12)) {
        let d = emu.run(c).unwrap();
        for (idx, x) in exact_tile(c).iter().enumerate() {
            let want = x.round(Format::F32, Rounding::Rne);
            let is_nan = |b: u64| Format::F32.decode(b).class == Class::Nan;
            if is_nan(want) {
                nans += 1;
                assert!(is_nan(d[idx]), "element {idx}: want NaN, got {:08x}", d[idx]);
            } else {
                assert_eq!(d[idx], want, "element {idx} of {}", c.to_json().get("seed").unwrap());
            }
        }
    }
    assert!(nans > 0, "NaN scales were drawn");
}

/// Raising a row's scale of A by 2^t and lowering every column's scale of B by 2^t changes no
/// product, no alignment key (leading bit or field sum) and so no element of D, under every
/// RTX Blackwell f8f6f4 model; a NaN scale turns its whole row (or column) into NaN.
#[test]
fn opposite_scales_cancel_and_a_nan_scale_poisons_its_row() {
    for (path, model) in [(PATH, "rtx-blackwell:mma.m16n8k32.f32.e4m3.e2m1.f32"), ("mma.m16n8k32.mxf8f6f4.block32.f32.e5m2.e3m2.f32.ue8m0", "rtx-blackwell:mma.m16n8k32.f32.e5m2.e3m2.f32")] {
        let emu = Emulator::new(Model::load(model).unwrap());
        for mut c in tiles(path, 60, 21) {
            let s = c.scales.as_mut().unwrap();
            s.a.iter_mut().for_each(|x| *x = 127);
            s.b.iter_mut().for_each(|x| *x = 127);
            let base = emu.run(&c).unwrap();
            for t in [-20i32, 9, 90] {
                let s = c.scales.as_mut().unwrap();
                s.a.iter_mut().for_each(|x| *x = (127 + t) as u8);
                s.b.iter_mut().for_each(|x| *x = (127 - t) as u8);
                assert_eq!(emu.run(&c).unwrap(), base, "2^{t} and 2^-{t}");
            }
            let s = c.scales.as_mut().unwrap();
            s.a.iter_mut().for_each(|x| *x = 127);
            s.b.iter_mut().for_each(|x| *x = 127);
            s.a[5] = 0xff;
            let d = emu.run(&c).unwrap();
            for (idx, &x) in d.iter().enumerate() {
                let nan = Format::F32.decode(x).class == Class::Nan;
                assert_eq!(nan, idx / c.n == 5 || base[idx] == x && Format::F32.decode(base[idx]).class == Class::Nan, "element {idx}");
            }
        }
    }
}

/// `blocks.group` and `align.exponent = "scale"` (MMA-Sim's GST_FDPA for FP4 at K = 64), on a
/// dot product worked out by hand: 16 products of 6·6 (576) and 16 of -6·6 cancel exactly, and
/// one product 0.5·0.5 under scales 2^-14 and 2^-14 is 2^-30. Keyed by the scales (0 for the
/// big runs), the window reaches 35 bits below 2^0 and keeps 2^-30; keyed by each run's leading
/// bit (576 leads at 2^9) it ends at 2^-26 and drops it.
#[test]
fn runs_keyed_by_their_scales_keep_what_leading_bits_would_drop() {
    let p = path_by_id("mma.m16n8k64.mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue8m0").unwrap();
    let mut c = p.zeros();
    let (six, neg_six, half) = (0x7u64, 0xfu64, 0x1u64); // e2m1: 6, -6, 0.5
    for kk in 0..16 {
        c.a[kk] = six;
        c.b[kk * c.n] = six;
        c.a[16 + kk] = neg_six;
        c.b[(16 + kk) * c.n] = six;
    }
    c.a[32] = half;
    c.b[32 * c.n] = half;
    let s = c.scales.as_mut().unwrap();
    s.a[2] = 127 - 14; // row 0's third block of 16
    s.b[2 * c.n] = 127 - 14; // column 0's third block
    let gst = |exponent: &str, group: usize| {
        let text = format!(
            "name = \"gst\"\n[blocks]\nwidth = 64\nc = \"fused\"\ngroup = {group}\n[align]\nmode = \"truncate\"\nexponent = \"{exponent}\"\nextra_bits = 12\nfloor_below_emin = 13\n\
             [accumulator]\nformat = \"f32\"\nrounding = \"rz\"\noverflow = \"infinity\"\n[specials]\nnan = \"all_ones\"\nzero_sign = \"positive\"\n"
        );
        Emulator::new(Model::from_toml("gst", &text).unwrap()).run(&c).unwrap()[0]
    };
    assert_eq!(exact_tile(&c)[0].round(Format::F32, Rounding::Rz), 0x3080_0000, "2^-30 exactly");
    assert_eq!(gst("scale", 16), 0x3080_0000);
    assert_eq!(gst("leading_bit", 16), 0);
    // Ungrouped, each product keyed by its own leading bit (36 leads at 2^5): the window ends
    // at 2^-30 and keeps it; keyed by the scales, too.
    assert_eq!(gst("leading_bit", 0), 0x3080_0000);
    assert_eq!(gst("scale", 0), 0x3080_0000);
}

/// Discovery and inference check models on single elements cut out of tiles (1×1×k cases):
/// such an element keeps its row's and column's scales, and so its D.
#[test]
fn an_element_cut_from_a_scaled_tile_keeps_its_scales() {
    let emu = Emulator::new(Model::load("rtx-blackwell:mma.m16n8k32.f32.e4m3.e2m1.f32").unwrap());
    for c in tiles(PATH, 20, 31) {
        let d = emu.run(&c).unwrap();
        for (i, j) in [(0, 0), (7, 3), (15, 7)] {
            let one = mmafuzz::infer::observe::element_case(&c, i, j);
            assert!(one.scales.is_some());
            assert_eq!(emu.run(&one).unwrap()[0], d[i * c.n + j], "element ({i}, {j})");
        }
    }
}

/// `scripts/window-floor-cases.py` designs tiles that tell the window floors apart on a
/// block-scaled FP4 path (what `infer` could not do from generated tiles): under the current
/// K = 64 ue8m0 model with each `floor_below_emin` candidate (and none), every two candidates
/// give different D on them, and the tiles parse as the path's cases.
#[test]
fn designed_window_floor_tiles_split_every_floor_candidate() {
    for path in ["mma.m16n8k64.mxf4.block32.f32.e2m1.e2m1.f32.ue8m0", "mma.m16n8k64.mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue8m0"] {
        let out = std::process::Command::new("python3")
            .args(["scripts/window-floor-cases.py", "--path", path])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("python3 runs the script");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let p = path_by_id(path).unwrap();
        let cases: Vec<MmaCase> = String::from_utf8(out.stdout).unwrap().lines().map(|l| MmaCase::from_json_line(l).unwrap()).collect();
        assert_eq!(cases.len(), 24);
        cases.iter().for_each(|c| p.check(c).unwrap());
        // The path's model file with its floor replaced by each candidate's (none: no floor).
        let file = std::fs::read_to_string(format!("{}/models/rtx-blackwell/{path}.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let without: String = file.lines().filter(|l| !l.starts_with("floor_below_emin")).map(|l| format!("{l}\n")).collect();
        let floors = ["none", "0", "5", "6", "7", "8", "13"];
        let outputs: Vec<Vec<u64>> = floors.iter().map(|f| {
            let text = if *f == "none" { without.clone() } else { without.replace("[align]\n", &format!("[align]\nfloor_below_emin = {f}\n")) };
            let emu = Emulator::new(Model::from_toml("floor", &text).unwrap());
            cases.iter().flat_map(|c| emu.run(c).unwrap()).collect()
        }).collect();
        for i in 0..floors.len() {
            for j in 0..i {
                let apart = outputs[i].iter().zip(&outputs[j]).filter(|(x, y)| x != y).count();
                assert!(apart > 0, "{path}: floor {} and {} agree on every designed tile", floors[i], floors[j]);
            }
        }
    }
}
