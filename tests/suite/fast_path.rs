//! The vectorised lane kernel must match the general block code bit for bit, for every model
//! and format, on edge-biased tiles of the real instruction shapes (the general code is itself
//! held to MPFR and to the seed probes).

use mmafuzz::bench::SHAPES;
use mmafuzz::model::{embedded_arch_model_names, embedded_model_names};
use mmafuzz::{gen, Emulator, Model};
use rand::{Rng, SeedableRng};

/// Every embedded model and measured per-path model, and knob settings the library does not
/// use yet, one per distinct arithmetic on the benchmark shapes.
fn distinct_models() -> Vec<Model> {
    let mut models: Vec<Model> = embedded_model_names().iter().map(|n| Model::load(n).unwrap()).collect();
    // The measured per-path models (instruction chains of the library models among them).
    models.extend(embedded_arch_model_names().iter().map(|n| Model::load(n).unwrap()));
    // Knob settings the library does not use yet, so that every lane-kernel branch is exercised.
    for (name, knobs) in [
        ("floor-fieldsum", "[blocks]\nwidth = 8\nc = \"fused\"\n[align]\nmode = \"floor\"\nexponent = \"field_sum\"\nextra_bits = 2\n[accumulator]\nformat = \"f32\"\nrounding = \"rne\""),
        ("sticky-carry", "[blocks]\nwidth = 16\nc = \"fused\"\norder = \"reverse\"\n[align]\nmode = \"sticky\"\nextra_bits = 1\ncarry_bits = 1\n[accumulator]\nformat = \"f32\"\nrounding = \"ru\"\n[output]\nrounding = \"rz\""),
        ("emin-floor-fieldsum", "[blocks]\nwidth = 16\nc = \"fused\"\n[align]\nmode = \"truncate\"\nexponent = \"field_sum\"\nextra_bits = 2\nemin_floor = true\n[accumulator]\nformat = \"f32\"\nrounding = \"rz\"\noverflow = \"infinity\"\n[specials]\nzero_sign = \"unsigned\""),
        ("unbounded-range", "[blocks]\nwidth = 8\nc = \"fused\"\n[align]\nmode = \"truncate\"\nexponent = \"field_sum\"\nextra_bits = 2\n[accumulator]\nformat = \"f32\"\nrounding = \"rz\"\nrange = \"unbounded\"\n[output]\nrounding = \"rne\""),
        ("f32-window-f16-acc", "[blocks]\nwidth = 16\nc = \"fused\"\n[align]\nmode = \"truncate\"\nexponent = \"field_sum\"\nextra_bits = 2\nwindow = \"f32\"\n[accumulator]\nformat = \"f16\"\nrounding = \"rne\""),
        ("emin-floor-leading", "[blocks]\nwidth = 8\nc = \"fused\"\n[align]\nmode = \"floor\"\nextra_bits = 3\nemin_floor = true\n[accumulator]\nformat = \"f32\"\nrounding = \"rne\""),
        ("c-after", "[blocks]\nwidth = 8\nc = \"after\"\nseparate_rounding = \"rz\"\n[align]\nmode = \"truncate\"\nexponent = \"field_sum\"\nextra_bits = 2\nfloor_below_emin = 7\n[accumulator]\nformat = \"f32\"\nrounding = \"rz\"\n[specials]\nzero_sign = \"unsigned\""),
        ("c-after-f16-out", "[blocks]\nwidth = 16\nc = \"after\"\n[align]\nmode = \"floor\"\nextra_bits = 3\n[accumulator]\nformat = \"f32\"\nrounding = \"rne\"\n[output]\nrounding = \"rz\""),
        ("narrow-acc", "[blocks]\nwidth = 4\nc = \"fused\"\n[align]\nmode = \"truncate\"\nextra_bits = -10\n[accumulator]\nrounding = \"rd\"\nsubnormals = \"flush\""),
    ] {
        models.push(Model::from_toml(name, knobs).unwrap());
    }
    // One model per distinct arithmetic on these shapes (many MMA-Sim models of other
    // architectures share their knobs): the comparison is per arithmetic, not per name.
    let mut seen = std::collections::HashSet::new();
    models.retain(|m| seen.insert(format!("{:?}", SHAPES.iter().map(|s| m.arithmetic(s.a_fmt)).collect::<Vec<_>>())));
    models
}

#[test]
fn lane_kernel_equals_general_path() {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(99);
    let mut compared = 0usize;
    for model in distinct_models() {
        let fast = Emulator::new(model.clone());
        let slow = Emulator::general_only(model.clone());
        for shape in SHAPES {
            for _ in 0..120 {
                let k = if rng.gen_bool(0.8) { shape.k } else { rng.gen_range(1..=40) };
                let case = gen::case(&mut rng, shape.a_fmt, shape.c_fmt, shape.m, shape.n, k);
                let (f, s) = (fast.run(&case).unwrap(), slow.run(&case).unwrap());
                compared += f.len();
                if let Some(idx) = (0..f.len()).find(|&i| f[i] != s[i]) {
                    panic!("{} {}: element {idx}: lanes {:x}, general {:x}\n{}", model.name, shape.name, f[idx], s[idx], case.result_json(&s));
                }
            }
        }
    }
    assert!(compared > 400_000, "{compared}");
}

/// `Emulator::run_diagonal` (independent dot products, a lane of the float kernel each, their
/// products formed before the kernel) gives exactly what `run` gives on the diagonal of a
/// square tile, for every arithmetic, on edge-biased tiles (NaN, infinities, subnormals,
/// cancellation), through the fast and the general-only emulator.
#[test]
fn diagonal_is_the_whole_tiles_diagonal() {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
    let mut compared = 0usize;
    for model in distinct_models() {
        let (fast, slow) = (Emulator::new(model.clone()), Emulator::general_only(model.clone()));
        for shape in SHAPES {
            for t in 0..24 {
                let p = [1, 3, 8, 13, 24][t % 5];
                let k = if rng.gen_bool(0.7) { shape.k } else { rng.gen_range(1..=40) };
                let case = gen::case(&mut rng, shape.a_fmt, shape.c_fmt, p, p, k);
                let whole = fast.run(&case).unwrap();
                let want: Vec<u64> = (0..p).map(|q| whole[q * p + q]).collect();
                for (how, emulator) in [("fast", &fast), ("general", &slow)] {
                    let got = emulator.run_diagonal(&case).unwrap();
                    if let Some(q) = (0..p).find(|&q| got[q] != want[q]) {
                        panic!("{} {} ({how}): element ({q}, {q}): diagonal {:x}, tile {:x}\n{}", model.name, shape.name, got[q], want[q], case.result_json(&whole));
                    }
                }
                compared += p;
            }
        }
    }
    assert!(compared > 50_000, "{compared}");
}

/// `Emulator::run_many_validated` (what depends on the shape and formats worked out once, D
/// straight into one slice) gives every tile what `run` gives alone: for every arithmetic on
/// edge-biased tiles (NaN, infinities, zero sums whose sign needs the zero rules, subnormals:
/// the tiles whose kernel hands elements back go to the general path), on every path's own
/// tiles (sparse, block-scaled, integer, FP64: the paths it leaves to `run_validated`), and in a
/// run whose tiles differ in formats and K from the first one's.
#[test]
fn many_tiles_at_once_are_each_tile_alone() {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(2026_11_29);
    let check = |emulator: &Emulator, cases: &[mmafuzz::MmaCase], what: &str| {
        let size = cases[0].m * cases[0].n;
        let mut out = vec![0u64; cases.len() * size];
        emulator.run_many_validated(cases, &mut out).unwrap();
        for (t, (case, d)) in cases.iter().zip(out.chunks(size)).enumerate() {
            let want = emulator.run(case).unwrap();
            assert_eq!(d, &want[..], "{what}: tile {t}\n{}", case.result_json(&want));
        }
        cases.len()
    };
    let mut tiles = 0;
    for model in distinct_models() {
        let emulator = Emulator::new(model.clone());
        for shape in SHAPES {
            let cases: Vec<_> = (0..24).map(|_| gen::case(&mut rng, shape.a_fmt, shape.c_fmt, shape.m, shape.n, shape.k)).collect();
            tiles += check(&emulator, &cases, &format!("{} {}", model.name, shape.name));
        }
    }
    for path in mmafuzz::exec::PATHS.iter().filter(|p| p.module != mmafuzz::exec::Module::Cublas) {
        let Ok(model) = Model::load(&mmafuzz::model::default_name(&path.id)) else { continue };
        let cases: Vec<_> = (0..16).map(|_| gen::path_case(&mut rng, path)).collect();
        tiles += check(&Emulator::new(model), &cases, path.id);
    }
    // f16 and bf16 tiles of 16x8 with K = 16 and 8, interleaved: each runs as itself.
    let mixed: Vec<_> = (0..40).map(|t| {
        let fmt = if t % 2 == 0 { mmafuzz::Format::F16 } else { mmafuzz::Format::Bf16 };
        gen::case(&mut rng, fmt, mmafuzz::Format::F32, 16, 8, if t % 3 == 0 { 8 } else { 16 })
    }).collect();
    tiles += check(&Emulator::new(Model::load("h100").unwrap()), &mixed, "h100, mixed");
    assert!(tiles > 3_000, "{tiles}");
}

/// Tiles read in place from an npz batch (`Batch::le_tiles`, `Emulator::run_many_le`: no case
/// made unless the kernel hands an element back) give every tile what `run` gives alone, for
/// every arithmetic on edge-biased tiles and on every path's own tiles; batches whose tiles
/// need their cases (sparse, block-scaled, integer) are not read in place.
#[test]
fn tiles_read_in_place_are_each_tile_alone() {
    use mmafuzz::npz::Batch;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(2026_11_30);
    let (mut in_place, mut alone_tiles) = (0, 0);
    let mut check = |emulator: &Emulator, cases: &[mmafuzz::MmaCase], what: &str| {
        let batch = Batch::from_cases(cases).unwrap();
        let plain = cases[0].meta.is_none() && cases[0].scales.is_none() && !cases[0].c_fmt.is_integer() && cases[0].a_fmt.storage_bits() % 8 == 0;
        let Some(le) = batch.le_tiles() else {
            assert!(!plain, "{what}: a plain float batch is read in place");
            return;
        };
        assert!(plain, "{what}: read in place");
        let size = cases[0].m * cases[0].n;
        let mut out = vec![0u64; cases.len() * size];
        let alone = |t: usize, d: &mut [u64]| {
            alone_tiles += 1;
            d.copy_from_slice(&emulator.run_validated(&batch.case(t).unwrap()).unwrap());
            Ok::<(), ()>(())
        };
        emulator.run_many_le(&le.like, (0..cases.len()).map(|t| le.tile(t)), &mut out, alone).unwrap();
        for (t, (case, d)) in cases.iter().zip(out.chunks(size)).enumerate() {
            let want = emulator.run(case).unwrap();
            assert_eq!(d, &want[..], "{what}: tile {t}\n{}", case.result_json(&want));
        }
        in_place += cases.len();
    };
    for model in distinct_models() {
        let emulator = Emulator::new(model.clone());
        for shape in SHAPES {
            let cases: Vec<_> = (0..24).map(|_| gen::case(&mut rng, shape.a_fmt, shape.c_fmt, shape.m, shape.n, shape.k)).collect();
            check(&emulator, &cases, &format!("{} {}", model.name, shape.name));
        }
    }
    for path in mmafuzz::exec::PATHS.iter().filter(|p| p.module != mmafuzz::exec::Module::Cublas) {
        let Ok(model) = Model::load(&mmafuzz::model::default_name(&path.id)) else { continue };
        let cases: Vec<_> = (0..16).map(|_| gen::path_case(&mut rng, path)).collect();
        check(&Emulator::new(model), &cases, path.id);
    }
    assert!(in_place > 2_000, "{in_place}");
    // Edge-biased tiles hand elements back (NaN payloads, signed zeros) on some models.
    assert!(alone_tiles > 0 && alone_tiles < in_place, "{alone_tiles} of {in_place}");
}

/// `Emulator::agrees` stops at the first differing element; it must still say exactly what
/// comparing `run`'s whole tile says, through the lane kernels, the float kernel and the
/// general code, and ignore the elements it is told not to care about.
#[test]
fn agrees_is_run_compared_element_by_element() {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    let mut checked = 0usize;
    for name in ["h100", "exact-rne", "fma-chain-rne", "sm90:mma.m16n8k16.f16.f16.f16.f16", "sm90:wgmma.m64n8k16.f32.f16.f16", "sm90:mma.m8n8k4.f64.f64.f64.f64"] {
        let model = Model::load(name).unwrap();
        for emulator in [Emulator::new(model.clone()), Emulator::general_only(model)] {
            for shape in SHAPES {
                for _ in 0..20 {
                    let case = gen::case(&mut rng, shape.a_fmt, shape.c_fmt, shape.m, shape.n, shape.k);
                    let d = emulator.run(&case).unwrap();
                    assert!(emulator.agrees(&case, &d, |_| true).unwrap(), "{name}: a tile agrees with its own D");
                    let at = rng.gen_range(0..d.len());
                    let mut wrong = d.clone();
                    wrong[at] ^= 1;
                    assert!(!emulator.agrees(&case, &wrong, |_| true).unwrap(), "{name}: element {at} differs");
                    assert!(emulator.agrees(&case, &wrong, |i| i != at).unwrap(), "{name}: element {at} is not cared about");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "{checked} tiles");
}

/// Every instruction path's own measured model on the hunt's own tiles of that path (NaN,
/// infinities, overflow, zero sums, subnormals, sparse rows, wide wgmma tiles): the lane kernel
/// must equal the general code on all of them, special results included.
#[test]
fn lane_kernel_equals_general_path_on_every_paths_tiles() {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(2026_11_25);
    let mut compared = 0usize;
    for path in mmafuzz::exec::PATHS.iter().filter(|p| p.module != mmafuzz::exec::Module::Cublas) {
        let Ok(model) = Model::load(&mmafuzz::model::default_name(&path.id)) else { continue };
        let (fast, slow) = (Emulator::new(model.clone()), Emulator::general_only(model));
        // About 40,000 elements per path.
        for _ in 0..(40_000 / (path.m * path.n)).max(8) {
            let case = gen::path_case(&mut rng, path);
            let (f, s) = (fast.run(&case).unwrap(), slow.run(&case).unwrap());
            compared += f.len();
            if let Some(idx) = (0..f.len()).find(|&i| f[i] != s[i]) {
                panic!("{}: element {idx}: lanes {:x}, general {:x}\n{}", path.id, f[idx], s[idx], case.result_json(&s));
            }
        }
    }
    assert!(compared > 3_000_000, "{compared}");
}

/// The formats of other architectures' operands (FP6 e3m2/e2m3, FP4 e2m1, AMD's fnuz FP8) on
/// the fast paths: every simulated path in them, under each architecture's model of it, on its
/// own edge-biased tiles, equals the general code.
#[test]
fn lane_kernel_equals_general_path_on_fp6_fp4_and_fnuz_tiles() {
    use mmafuzz::format::Format;
    let small = [Format::E3m2, Format::E2m3, Format::E2m1, Format::E4m3fnuz, Format::E5m2fnuz];
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(2026_11_26);
    let (mut compared, mut models) = (0usize, 0usize);
    for name in embedded_arch_model_names() {
        let Some((_, id)) = name.split_once(':') else { continue };
        let Some(path) = mmafuzz::exec::path_by_id(id) else { continue };
        if !small.contains(&path.a_fmt) && !small.contains(&path.b_fmt) {
            continue;
        }
        let model = Model::load(name).unwrap();
        let (fast, slow) = (Emulator::new(model.clone()), Emulator::general_only(model));
        models += 1;
        for _ in 0..(4_000 / (path.m * path.n)).max(4) {
            let case = gen::path_case(&mut rng, path);
            let (f, s) = (fast.run(&case).unwrap(), slow.run(&case).unwrap());
            compared += f.len();
            if let Some(idx) = (0..f.len()).find(|&i| f[i] != s[i]) {
                panic!("{name}: element {idx}: lanes {:x}, general {:x}\n{}", f[idx], s[idx], case.result_json(&s));
            }
        }
    }
    assert!(models >= 43, "{models} models of FP6/FP4/fnuz paths");
    assert!(compared > 150_000, "{compared}");
}
