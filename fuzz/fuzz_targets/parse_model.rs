//! Any text as a model TOML: a clear error, or a model whose arithmetic for every input format
//! writes back to a TOML model with the same arithmetic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmafuzz::model::knobs::model_of;
use mmafuzz::{Format, Model};

fuzz_target!(|text: &str| {
    let Ok(model) = Model::from_toml("fuzz", text) else { return };
    for f in Format::ALL {
        let ar = model.arithmetic(f);
        let again = model_of("again", ar).unwrap_or_else(|e| panic!("{f}: the arithmetic does not write back: {e}\n{text}"));
        assert_eq!(again.arithmetic(f), ar, "{f}\n{text}");
    }
});
