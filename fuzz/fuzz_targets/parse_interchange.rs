//! Any bytes as a JSONL interchange line: a clear error or a case that writes back to a line
//! that reads as the same case (no panic, no silent misread).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmafuzz::MmaCase;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    let Ok(case) = MmaCase::from_json_line(line) else { return };
    let text = serde_json::to_string(&case.to_json()).unwrap();
    let again = MmaCase::from_json_line(&text).unwrap_or_else(|e| panic!("{text} does not read back: {e}"));
    assert_eq!(again, case, "{text}");
    assert_eq!(case.a.len(), case.m * case.k);
    assert_eq!(case.b.len(), case.k * case.n);
    assert_eq!(case.c.len(), case.m * case.n);
});
