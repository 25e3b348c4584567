//! Any text as a findings file: a clear error, or a finding that renders to a file reading back
//! as the same finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmafuzz::hunt::finding::Finding;

fuzz_target!(|text: &str| {
    let Ok(f) = Finding::parse(text) else { return };
    let rendered = f.render();
    let again = Finding::parse(&rendered).unwrap_or_else(|e| panic!("rendered finding does not read back: {e}\n{rendered}"));
    assert_eq!(again, f);
});
