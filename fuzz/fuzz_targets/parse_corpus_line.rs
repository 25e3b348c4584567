//! Any bytes as a corpus line (the compact codec: tiles by seed, D as steps), with and without
//! a path: a clear error, or a tile and D that encode to a line decoding to the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmafuzz::corpus::codec::{decode_line, encode_line};
use mmafuzz::exec::PATHS;

fuzz_target!(|input: (u8, bool, &str)| {
    let (which, compact, line) = input;
    let path = PATHS.get(which as usize % (PATHS.len() + 1));
    let Ok((case, d)) = decode_line(line, path) else { return };
    assert_eq!(d.len(), case.m * case.n, "{line}");
    let text = encode_line(&case, &d, path, compact);
    let (again, d2) = decode_line(&text, path).unwrap_or_else(|e| panic!("{text} does not read back: {e}"));
    assert_eq!((&again.a, &again.b, &again.c, &d2), (&case.a, &case.b, &case.c, &d), "{line} -> {text}");
});
