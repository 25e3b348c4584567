//! The knobs MMA-Sim's AMD models needed, each on a dot product worked out by hand:
//! `blocks.c = "staged"` (CDNA3's second adder), `blocks.normalise = "pairwise"` (CDNA2's tree of
//! rounded additions), `products.inf_above` (CDNA3's products of 2^128 or more) and the FP8
//! variant of the staged adder (`blocks.staged.even_odd`, `drop_c`: CDNA3's FP8 `mfma`).

use mmafuzz::format::Format;
use mmafuzz::probes::bits_of;
use mmafuzz::{Emulator, MmaCase, Model};

/// D of a 1x1xK dot product of `fmt` values (C in f32) under `model`.
fn dot(model: &str, a: &[f64], b: &[f64], c: f32, fmt: Format) -> f32 {
    let mut case = MmaCase::zeros(fmt, Format::F32, 1, 1, a.len());
    case.a = a.iter().map(|&x| bits_of(fmt, x)).collect();
    case.b = b.iter().map(|&x| bits_of(fmt, x)).collect();
    case.c = vec![c.to_bits() as u64];
    let emu = Emulator::new(Model::from_toml("t", model).unwrap());
    f32::from_bits(emu.run(&case).unwrap()[0] as u32)
}

const STAGED: &str = r#"
[accumulator]
format = "f32"
rounding = "rne"
[align]
mode = "truncate"
exponent = "field_sum"
extra_bits = 1
[blocks]
width = 8
c = "staged"
"#;

#[test]
fn staged_floors_the_block_sum_below_the_running_sums_exponent() {
    // C = 1; products 2^-24 and 2^-33. Exactly 1 + 2^-24 + 2^-33: just above the tie between
    // 1 and 1 + 2^-23, so round to nearest gives 1 + 2^-23. The second adder keeps 32 bits
    // below C's exponent (0): 2^-33 falls off, 1 + 2^-24 is a tie, and the even side is 1.
    let a = [2f64.powi(-12), 2f64.powi(-11)];
    let b = [2f64.powi(-12), 2f64.powi(-22)];
    assert_eq!(dot(STAGED, &a, &b, 1.0, Format::F16), 1.0);
    // 40 bits for the block's sum keep 2^-33: the sum rounds up.
    let wide = format!("{STAGED}\n[blocks.staged]\ndot_bits = 40\nc_bits = 24\nkeep = 40\n");
    assert_eq!(dot(&wide, &a, &b, 1.0, Format::F16), 1.0 + 2f32.powi(-23));
    // The block's own window (24 bits below its largest product, 2^-24) keeps 2^-33 too: with
    // C = 0 the sum is 2^-24 + 2^-33, rounded to nearest f32.
    assert_eq!(dot(STAGED, &a, &b, 0.0, Format::F16), (2f64.powi(-24) + 2f64.powi(-33)) as f32);
}

#[test]
fn staged_floors_toward_minus_infinity() {
    // C = 1, product -2^-33: exactly 1 - 2^-33, which rounds to 1 whatever the second adder
    // keeps at 32 bits. With 22 bits below E = 0 the floor takes -2^-33 down to -2^-22 (toward
    // minus infinity, not toward zero, which would drop it): 1 - 2^-22, exactly an f32.
    let a = [2f64.powi(-11)];
    let b = [-(2f64.powi(-22))];
    assert_eq!(dot(STAGED, &a, &b, 1.0, Format::F16), 1.0);
    let narrow = format!("{STAGED}\n[blocks.staged]\ndot_bits = 22\nc_bits = 24\nkeep = 32\n");
    assert_eq!(dot(&narrow, &a, &b, 1.0, Format::F16), 1.0 - 2f32.powi(-22));
}

const PAIRWISE: &str = r#"
[accumulator]
format = "f32"
rounding = "rne"
[align]
mode = "exact"
[blocks]
width = 4
c = "separate"
normalise = "pairwise"
"#;

#[test]
fn pairwise_adds_in_a_tree_in_k_order() {
    // Products 2^-24, 2^-24, 1, 0: (2^-24 + 2^-24) + (1 + 0) = 1 + 2^-23 exactly.
    let a = [2f64.powi(-12), 2f64.powi(-12), 1.0, 0.0];
    let b = [2f64.powi(-12), 2f64.powi(-12), 1.0, 1.0];
    assert_eq!(dot(PAIRWISE, &a, &b, 0.0, Format::F16), 1.0 + 2f32.powi(-23));
    // Largest first, every partial sum rounded: 1 + 2^-24 is a tie that goes to 1, twice.
    let every_add = PAIRWISE.replace("pairwise", "every_add");
    assert_eq!(dot(&every_add, &a, &b, 0.0, Format::F16), 1.0);
    // The tree follows K: 1, 2^-24, 2^-24, 0 pairs 1 with 2^-24 (a tie: 1), then adds 2^-24.
    let a2 = [1.0, 2f64.powi(-12), 2f64.powi(-12), 0.0];
    let b2 = [1.0, 2f64.powi(-12), 2f64.powi(-12), 1.0];
    assert_eq!(dot(PAIRWISE, &a2, &b2, 0.0, Format::F16), 1.0);
}

const EXACT: &str = r#"
[accumulator]
format = "f32"
rounding = "rne"
[align]
mode = "exact"
[blocks]
width = 8
c = "fused"
"#;

#[test]
fn products_beyond_f32_become_infinities_with_inf_above() {
    // bf16 products 2^100·2^100 and -(2^100·2^100): exact, they cancel to C.
    let a = [2f64.powi(100), -(2f64.powi(100))];
    let b = [2f64.powi(100), 2f64.powi(100)];
    assert_eq!(dot(EXACT, &a, &b, 3.0, Format::Bf16), 3.0);
    // Each beyond f32's range is an infinity first: +inf - inf is NaN.
    let inf = EXACT.replace("[blocks]", "[products]\ninf_above = \"f32\"\n[blocks]");
    assert!(dot(&inf, &a, &b, 3.0, Format::Bf16).is_nan());
    // One of them alone: +inf.
    assert_eq!(dot(&inf, &a[..1], &b[..1], 3.0, Format::Bf16), f32::INFINITY);
    // Staged, the cancelled products still set the second adder's exponent (2^200): C = 3 is
    // floored away 24 bits below it, and D is 0.
    assert_eq!(dot(STAGED, &a, &b, 3.0, Format::Bf16), 0.0);
}

/// CDNA3's FP8 adder (MMA-Sim's GTR_FDPA): `staged` with even and odd k summed apart and a far
/// smaller C dropped. The values below are what MMA-Sim 2.1.1's `gtr_fdpa` returns for them.
fn staged_fp8() -> String {
    STAGED.replace("width = 8", "width = 16") + "[blocks.staged]\ndot_bits = 32\nc_bits = 24\nkeep = 32\neven_odd = true\ndrop_c = true\n"
}

#[test]
fn even_and_odd_k_are_summed_in_windows_of_their_own() {
    // Products 1 (k = 0) and -2^-30 (k = 1). One window (24 bits below 1) truncates -2^-30 to
    // zero: D = 1. Apart, the odd sum is exactly -2^-30, then floored onto the even sum's grid
    // 2^-24: -2^-24, and D = 1 - 2^-24 (0x3f7fffff).
    let (a, b) = ([1.0, -(2f64.powi(-15))], [1.0, 2f64.powi(-15)]);
    assert_eq!(dot(&staged_fp8(), &a, &b, 0.0, Format::E5m2fnuz).to_bits(), 0x3f7f_ffff);
    let one_window = staged_fp8().replace("even_odd = true", "even_odd = false");
    assert_eq!(dot(&one_window, &a, &b, 0.0, Format::E5m2fnuz), 1.0);
}

#[test]
fn a_running_sum_far_below_is_dropped_not_floored() {
    // Product 1, C = -2^-40: 40 places below E = 0, more than c_bits + 1 = 25: dropped, D = 1.
    // Floored instead (drop_c off, or C = -2^-25, just inside), it costs 2^-24: D = 1 - 2^-24.
    let (a, b) = ([1.0, 0.0], [1.0, 0.0]);
    assert_eq!(dot(&staged_fp8(), &a, &b, -(2f32.powi(-40)), Format::E5m2fnuz), 1.0);
    assert_eq!(dot(&staged_fp8(), &a, &b, -(2f32.powi(-25)), Format::E5m2fnuz).to_bits(), 0x3f7f_ffff);
    let floored = staged_fp8().replace("drop_c = true", "drop_c = false");
    assert_eq!(dot(&floored, &a, &b, -(2f32.powi(-40)), Format::E5m2fnuz).to_bits(), 0x3f7f_ffff);
}

/// `inputs.subnormals = "flush_positive"` (MMA-Sim's CDNA2 adder: `where(|x| < 2^emin, +0, x)`
/// on A, B and C): a flushed operand and a zero of either sign enter as +0, where `"flush"`
/// keeps the sign; the products' zero signs then follow the other factor, and so does an
/// all-zero dot product's sign. Only operands take it: an accumulator or output rule of that
/// name is an error.
#[test]
fn flush_positive_makes_every_tiny_or_zero_operand_plus_zero() {
    let model = |inputs: &str| format!("{PAIRWISE}[inputs]\nsubnormals = \"{inputs}\"\nc_subnormals = \"keep\"\n[specials]\nzero_sign = \"ieee\"\n");
    let neg_zero = -0.0f32;
    // -0·1 + -0·1 + C = -0: -0 under "flush" (and "keep"), +0 when -0 enters as +0.
    let a = [-0.0, -0.0];
    let b = [1.0, 1.0];
    for (rule, sign_bit) in [("keep", true), ("flush", true), ("flush_positive", false)] {
        let d = dot(&model(rule), &a, &b, neg_zero, Format::Bf16);
        assert_eq!((d, d.is_sign_negative()), (0.0, sign_bit), "{rule}");
    }
    // A negative subnormal bf16 times 1, twice, over C = -0: the exact sum is tiny and negative
    // (kept), a flush keeps its sign (-0), flush_positive makes it +0.
    let tiny = [-(2f64.powi(-130)), -(2f64.powi(-131))];
    assert_eq!(dot(&model("keep"), &tiny, &b, neg_zero, Format::Bf16), -(2f32.powi(-130) + 2f32.powi(-131)));
    let flushed = dot(&model("flush"), &tiny, &b, neg_zero, Format::Bf16);
    assert!(flushed == 0.0 && flushed.is_sign_negative());
    let positive = dot(&model("flush_positive"), &tiny, &b, neg_zero, Format::Bf16);
    assert!(positive == 0.0 && positive.is_sign_positive());
    // C flushed to +0 as well: C = -0 over products +0·-1 = -0 gives +0 (-0 + -0 would be -0).
    let c_rule = |rule: &str| format!("{PAIRWISE}[inputs]\nsubnormals = \"flush_positive\"\nc_subnormals = \"{rule}\"\n[specials]\nzero_sign = \"ieee\"\n");
    let zeros = [0.0, 0.0];
    let minus = [-1.0, -1.0];
    assert!(dot(&c_rule("flush"), &zeros, &minus, neg_zero, Format::Bf16).is_sign_negative());
    assert!(dot(&c_rule("flush_positive"), &zeros, &minus, neg_zero, Format::Bf16).is_sign_positive());
    let on_accumulator = PAIRWISE.replace("rounding = \"rne\"\n", "rounding = \"rne\"\nsubnormals = \"flush_positive\"\n");
    let on_output = format!("{PAIRWISE}[output]\nrounding = \"rne\"\nsubnormals = \"flush_positive\"\n");
    for text in [on_accumulator, on_output] {
        let err = Model::from_toml("t", &text).unwrap_err().to_string();
        assert!(err.contains("for operands"), "{err}");
    }
}

/// `scripts/signed-zero-cases.py` designs tiles of signed zeros, subnormals and ±1 that tell
/// the operand rules apart where edge-biased tiles rarely do: under CDNA2's bf16 model with each
/// combination of `inputs.subnormals` and `inputs.c_subnormals`, every two combinations give
/// different D on them.
#[test]
fn designed_signed_zero_tiles_split_the_operand_flush_rules() {
    let path = "mfma.m16n16k8.f32.bf16.bf16.f32";
    let out = std::process::Command::new("python3")
        .args(["scripts/signed-zero-cases.py", "--path", path])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("python3 runs the script");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p = mmafuzz::exec::path_by_id(path).unwrap();
    let cases: Vec<MmaCase> = String::from_utf8(out.stdout).unwrap().lines().map(|l| MmaCase::from_json_line(l).unwrap()).collect();
    assert_eq!(cases.len(), 56);
    cases.iter().for_each(|c| p.check(c).unwrap());
    let rules = ["keep", "flush", "flush_positive"];
    let mut outputs = vec![];
    for ab in rules {
        for c in rules {
            let text = format!("base = \"cdna2:{path}\"\nname = \"t\"\n[inputs]\nsubnormals = \"{ab}\"\nc_subnormals = \"{c}\"\n");
            let emu = Emulator::new(Model::from_toml("t", &text).unwrap());
            let d: Vec<u64> = cases.iter().flat_map(|c| emu.run(c).unwrap()).collect();
            outputs.push((format!("{ab}/{c}"), d));
        }
    }
    for i in 0..outputs.len() {
        for j in 0..i {
            assert_ne!(outputs[i].1, outputs[j].1, "{} and {} agree on every designed tile", outputs[i].0, outputs[j].0);
        }
    }
}
