//! Mixed FP8 (A e4m3, B e5m2): the H100 reads an e4m3 subnormal's exponent field as f16 would
//! (`inputs.field_format = "f16"`). The case is a minimised GPU finding
//! (findings/mma.m16n8k32.f32.e4m3.e5m2.f32/): 1.125·2^-15 + 2^-9·2^14, which the GPU returns
//! exactly, 2^5 + 2^-15 + 2^-18 = 0x42000009; read with e4m3's own emin the alignment anchors
//! three places too high and drops the low bits.

use mmafuzz::{exec::path_by_id, Emulator, Model};

fn finding() -> mmafuzz::MmaCase {
    let p = path_by_id("mma.m16n8k32.f32.e4m3.e5m2.f32").unwrap();
    let mut c = p.zeros();
    let (k, n) = (c.k, c.n);
    c.a[8] = 0x39; // e4m3 1.125
    c.b[8 * n] = 0x02; // e5m2 2^-15 (subnormal)
    c.a[10] = 0x01; // e4m3 2^-9 (subnormal)
    c.b[10 * n] = 0x74; // e5m2 2^14
    assert_eq!(k, 32);
    c
}

#[test]
fn e4m3_subnormal_fields_read_as_f16_reproduce_the_gpu() {
    let model = Model::load("sm90:mma.m16n8k32.f32.e4m3.e5m2.f32").unwrap();
    let case = finding();
    // Both the lane kernel and the general block code.
    for emu in [Emulator::new(model.clone()), Emulator::general_only(model.clone())] {
        assert_eq!(emu.run(&case).unwrap()[0], 0x4200_0009);
    }
    // Without the knob, the model of the same-format path loses the low bits.
    let text = mmafuzz::model::embedded_model_source("sm90:mma.m16n8k32.f32.e4m3.e5m2.f32").unwrap().replace("field_format = \"f16\"\n", "");
    let own_fields = Model::from_toml("own-fields", &text).unwrap();
    for emu in [Emulator::new(own_fields.clone()), Emulator::general_only(own_fields)] {
        assert_ne!(emu.run(&case).unwrap()[0], 0x4200_0009);
    }
}
