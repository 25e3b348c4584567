//! Any bytes as a `.npy` file of any format: a clear error, or exactly as many elements as the
//! header's shape holds, each within the format's bits. Never a panic, never an allocation the
//! bytes do not back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmafuzz::library::npy;
use mmafuzz::Format;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else { return };
    let formats: Vec<Format> = Format::ALL.into_iter().chain(Format::INTEGERS).collect();
    let format = formats[pick as usize % formats.len()];
    let Ok(m) = npy::read_from(bytes, "fuzz.npy", format) else { return };
    let count: usize = m.shape.iter().product();
    assert!((1..=2).contains(&m.shape.len()), "{:?}", m.shape);
    assert_eq!(m.bits.len(), count, "{:?}", m.shape);
    assert!(m.bits.iter().all(|&b| b & !format.mask() == 0), "{format}");
});
