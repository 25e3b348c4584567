//! Any text as a library record line (`corpus/library/*.jsonl`): a clear error, or a record
//! whose dimensions are in bounds, whose values fit its elements, and which writes back to a
//! line that reads as the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmafuzz::library::gemm::MAX_DIM;
use mmafuzz::library::record::GemmRecord;

fuzz_target!(|text: &str| {
    let Ok(r) = GemmRecord::parse(text) else { return };
    for d in [r.m, r.n, r.k] {
        assert!((1..=MAX_DIM).contains(&d), "{text}");
    }
    let count = r.idx.as_ref().map_or(r.m * r.n, |i| i.len());
    assert_eq!(r.d_steps.as_ref().map_or(r.d.len(), |s| s.len()), count, "{text}");
    let _ = r.kernel_config();
    let again = serde_json::to_string(&r).expect("a record serialises");
    let back = GemmRecord::parse(&again).unwrap_or_else(|e| panic!("{again}: {e}"));
    assert_eq!(serde_json::to_string(&back).unwrap(), again);
});
