//! The generator of the first recordings (2026-11-22, before hunts drew each tile from its own
//! seed): one Xoshiro256++ stream per recording, seeded with the recording's seed, tiles drawn
//! one after another, each from one of four recipes (no `c_dominant`, no `extremes`, big-plus-tiny
//! gaps 8 below to 10 above the accumulator width). Only the choice of recipe differs from
//! today's [`gen`](crate::gen); the recipes themselves are [`gen::case_with`].
//!
//! Tile `i` of such a stream cannot be made without the `i` before it, so a corpus line stores
//! the stream's state before its tile (`"gen_state"`, 64 hex digits) instead of the tile; with
//! the `"inputs"` hash, a generator that has drifted is an error, as for seeded lines.

use crate::case::MmaCase;
use crate::format::Format;
use crate::gen::{self, Recipe};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The first recordings' choice of recipe.
fn pick_recipe<R: Rng>(rng: &mut R, acc_precision: u32) -> Recipe {
    match rng.gen_range(0..4) {
        0 => Recipe::Independent,
        1 => Recipe::Cancellation,
        2 => Recipe::BigPlusTiny { gap: acc_precision as i32 + rng.gen_range(-8..=10) },
        _ => Recipe::Band,
    }
}

/// The next tile of a first-recording stream.
pub fn next_case(rng: &mut Xoshiro256PlusPlus, a_fmt: Format, c_fmt: Format, (m, n, k): (usize, usize, usize)) -> MmaCase {
    let acc_p = if c_fmt == Format::F64 { 53 } else { 24 };
    let recipe = pick_recipe(rng, acc_p);
    gen::case_with(rng, (a_fmt, a_fmt), c_fmt, m, n, k, recipe)
}

/// The stream's state as 64 hex digits (its four words, least significant first).
pub fn state_hex(rng: &Xoshiro256PlusPlus) -> String {
    let v = serde_json::to_value(rng).expect("the generator state serialises");
    v["s"].as_array().expect("xoshiro state words").iter().map(|w| format!("{:016x}", w.as_u64().expect("a 64-bit word"))).collect()
}

/// The stream at a state written by [`state_hex`]; `None` for anything else (the all-zero
/// state included, which Xoshiro never reaches).
pub fn from_state_hex(s: &str) -> Option<Xoshiro256PlusPlus> {
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let words: Vec<u64> = (0..4).map(|i| u64::from_str_radix(&s[16 * i..16 * i + 16], 16).ok()).collect::<Option<_>>()?;
    if words.iter().all(|&w| w == 0) {
        return None;
    }
    serde_json::from_value(serde_json::json!({ "s": words })).ok()
}

/// The first `count` tiles of the recording with `seed`, each with the state it starts from.
pub fn stream(seed: u64, a_fmt: Format, c_fmt: Format, shape: (usize, usize, usize), count: usize) -> Vec<(String, MmaCase)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let state = state_hex(&rng);
            (state, next_case(&mut rng, a_fmt, c_fmt, shape))
        })
        .collect()
}

/// The tile that starts at `state`.
pub fn case_from_state(state: &str, a_fmt: Format, c_fmt: Format, shape: (usize, usize, usize)) -> Option<MmaCase> {
    let mut rng = from_state_hex(state)?;
    Some(next_case(&mut rng, a_fmt, c_fmt, shape))
}

/// Give every tile of `cases` that is tile `i` of the first-recording stream of its `"seed":
/// [s, i]` its `"gen_state"`, so that the codec stores it by reference; returns how many.
pub fn attach_states(cases: &mut [(MmaCase, Vec<u64>)], p: &crate::exec::PathSpec) -> usize {
    // Tiles that today's seeded generator makes are not the first recordings'.
    let candidates: Vec<Option<(u64, usize)>> = cases
        .iter()
        .map(|(c, _)| {
            let s = c.extra.get("seed")?.as_array()?;
            let (seed, i) = (s.first()?.as_u64()?, s.get(1)?.as_u64()?);
            let fits = s.len() == 2 && !c.extra.contains_key("gen_state") && (c.a_fmt, c.b_fmt, c.c_fmt, c.m, c.n, c.k) == (p.a_fmt, p.a_fmt, p.c_fmt, p.m, p.n, p.k);
            let seeded = || {
                let again = gen::case_at(p, seed, i);
                (again.a, again.b, again.c) == (c.a.clone(), c.b.clone(), c.c.clone())
            };
            (fits && !seeded()).then_some((seed, i as usize))
        })
        .collect();
    let mut longest: std::collections::BTreeMap<u64, usize> = Default::default();
    for &(s, i) in candidates.iter().flatten() {
        {
            let e = longest.entry(s).or_default();
            *e = (*e).max(i + 1);
        }
    }
    let streams: std::collections::BTreeMap<u64, Vec<(String, MmaCase)>> =
        longest.into_iter().filter(|&(_, n)| n <= 1 << 20).map(|(s, n)| (s, stream(s, p.a_fmt, p.c_fmt, (p.m, p.n, p.k), n))).collect();
    let mut attached = 0;
    for ((c, _), at) in cases.iter_mut().zip(&candidates) {
        let Some((s, i)) = *at else { continue };
        if let Some((state, made)) = streams.get(&s).and_then(|t| t.get(i)) {
            if (&made.a, &made.b, &made.c) == (&c.a, &c.b, &c.c) {
                c.extra.insert("gen_state".into(), state.clone().into());
                attached += 1;
            }
        }
    }
    attached
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_restart_the_stream() {
        let s = stream(7, Format::F16, Format::F32, (16, 8, 16), 5);
        for (state, case) in &s {
            let again = case_from_state(state, Format::F16, Format::F32, (16, 8, 16)).unwrap();
            assert_eq!((&again.a, &again.b, &again.c), (&case.a, &case.b, &case.c));
        }
        assert_ne!(s[0].1.a, s[1].1.a);
        assert!(from_state_hex(&"0".repeat(64)).is_none());
        assert!(from_state_hex("12").is_none());
        assert!(from_state_hex(&"g".repeat(64)).is_none());
    }

    #[test]
    fn only_the_four_first_recipes_occur() {
        let kinds: std::collections::BTreeSet<String> =
            stream(2026, Format::Bf16, Format::F32, (16, 8, 16), 400).iter().map(|(_, c)| c.extra["recipe"]["kind"].as_str().unwrap().to_string()).collect();
        assert_eq!(kinds.into_iter().collect::<Vec<_>>(), ["band", "big_plus_tiny", "cancellation", "independent"]);
    }
}
