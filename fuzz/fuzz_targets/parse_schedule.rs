//! Any text as a library model's `[schedule]` table: a clear error on load, or rules whose every
//! plan (each algorithm the rules name, unsplit and split, at a few shapes) either declines
//! with a reason or chains each k of K exactly once. Never a panic (a zero length reaching a
//! division, `step_by(0)`), never a plan that drops or repeats part of K.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmafuzz::library::{KernelConfig, ScheduleRules};

fuzz_target!(|text: &str| {
    let Ok(table) = text.parse::<toml::Table>() else { return };
    let Ok(rules) = ScheduleRules::from_table(&table) else { return };
    let mut algos: Vec<u32> = rules.slices.iter().chain(&rules.gemv).flat_map(|r| r.algos.clone()).chain(rules.unsplit.iter().copied()).chain(rules.runtime_split.iter().flat_map(|r| r.algos.clone())).collect();
    algos.sort_unstable();
    algos.dedup();
    for &algo in algos.iter().take(4) {
        for split in [1, 2, 3, 7, -1] {
            for custom in [0, 1] {
                let text = format!("algoId={algo} tile=MATMUL_TILE_64x64 stages=MATMUL_STAGES_32x3 customOption={custom} reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK={split}");
                let config = KernelConfig::from_log(&text).expect("a valid configuration");
                for (m, n, k) in [(1, 1, 1), (64, 64, 7), (1, 4096, 1000), (300, 1, 4097)] {
                    for (bias, linear) in [(false, false), (true, true), (false, true)] {
                        let Ok(plan) = rules.plan_layout(m, n, k, &config, bias, linear) else { continue };
                        let mut ks: Vec<std::ops::Range<usize>> = plan.slices.iter().flatten().filter(|r| !r.is_empty()).cloned().collect();
                        ks.sort_by_key(|r| r.start);
                        let mut next = 0;
                        for r in &ks {
                            assert_eq!(r.start, next, "{config} at {m}x{n}x{k}: K covered as {ks:?}\n{text}");
                            next = r.end;
                        }
                        assert_eq!(next, k, "{config} at {m}x{n}x{k}: K covered as {ks:?}\n{text}");
                    }
                }
            }
        }
    }
});
