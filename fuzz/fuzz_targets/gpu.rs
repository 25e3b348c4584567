//! Shared body of the GPU targets: the input is a few tiles of one path
//! (`mmafuzz::fuzzing::codec`); they run on the GPU (or `MMAFUZZ_AGAINST`) and the path's model
//! (or `MMAFUZZ_MODEL`); the arithmetic situations the model went through become libFuzzer's
//! extra coverage counters (one per situation, its value the count, which libFuzzer buckets
//! into the same levels as the hunt's feature map); a divergence panics with every side's
//! output and the exact value, which libFuzzer saves as a crash artifact.

use mmafuzz::exec::{path_by_id, PathSpec};
use mmafuzz::features::SITUATIONS;
use mmafuzz::fuzzing::{describe, Differential};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// libFuzzer reads every byte of this section as an 8-bit coverage counter, cleared before
/// each input (its "extra counters").
#[used]
#[link_section = "__libfuzzer_extra_counters"]
static mut COUNTERS: [u8; SITUATIONS] = [0; SITUATIONS];

static SIDES: OnceLock<Differential> = OnceLock::new();

fn sides(path: &'static PathSpec) -> &'static Differential {
    SIDES.get_or_init(|| match Differential::from_env(path) {
        Ok(d) => {
            eprintln!("fuzzing {}: A = {} | B = {}", path.id, d.a.describe(), d.b.describe());
            d
        }
        Err(e) => {
            eprintln!("mmafuzz fuzz target for {}: {e}", path.id);
            std::process::exit(2);
        }
    })
}

pub fn run(path_id: &str, data: &[u8]) {
    let Some(path) = path_by_id(path_id) else {
        eprintln!("mmafuzz fuzz target: unknown path '{path_id}'");
        std::process::exit(2);
    };
    // An input is at most 32 tiles, run on this thread (`Side::execute`); a pool of one thread
    // for whatever else asks rayon.
    static ONE_THREAD: std::sync::Once = std::sync::Once::new();
    ONE_THREAD.call_once(|| {
        let _ = rayon::ThreadPoolBuilder::new().num_threads(1).build_global();
    });
    let d = sides(path);
    let outcome = match d.run(data) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mmafuzz fuzz target for {}: {e}", path.id);
            std::process::exit(2);
        }
    };
    // Tiles run, said every 2^14 inputs (libFuzzer counts inputs; an input is 1 to 32 tiles).
    static INPUTS: AtomicU64 = AtomicU64::new(0);
    static TILES: AtomicU64 = AtomicU64::new(0);
    let inputs = INPUTS.fetch_add(1, Ordering::Relaxed) + 1;
    let tiles = TILES.fetch_add(outcome.tiles.len() as u64, Ordering::Relaxed) + outcome.tiles.len() as u64;
    if inputs % (1 << 14) == 0 {
        eprintln!("mmafuzz: {inputs} inputs, {tiles} tiles of {}", path.id);
    }
    let counters = std::ptr::addr_of_mut!(COUNTERS) as *mut u8;
    for &(s, c) in &outcome.counts.0 {
        // SAFETY: s < SITUATIONS; libFuzzer reads the counters only between inputs.
        unsafe { counters.add(s as usize).write_volatile(c.min(255) as u8) };
    }
    if !outcome.divergent.is_empty() {
        panic!("{} divergent element(s)\n{}", outcome.divergent.len(), describe(d, &outcome));
    }
}
