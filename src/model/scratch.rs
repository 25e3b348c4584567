//! Buffers the emulator needs for one tile and gives back after it, kept per thread so that a
//! tile's operand arrays cost no allocation: a hunt runs millions of tiles of one shape, and
//! `malloc`/`free` of a tile's five arrays was a tenth of a small tile's time. A buffer comes
//! back as it was given (its length and values the last user's): its taker sizes it and
//! writes it whole, so nothing is zeroed for nothing.

use std::cell::RefCell;

/// At most this many buffers of a kind are kept per thread (a tile takes five at once).
const KEEP: usize = 16;

thread_local! {
    static VALUES: RefCell<Vec<Vec<f64>>> = const { RefCell::new(Vec::new()) };
    static LANE_ROWS: RefCell<Vec<Vec<[f64; super::lanes::LANES]>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer given back on this thread (or a new one), as it was: its length and values are the
/// last user's, for a caller that sizes it and writes it whole.
pub(super) fn take_values() -> Vec<f64> {
    VALUES.with(|p| p.borrow_mut().pop()).unwrap_or_default()
}

/// [`take_values`] for rows of lanes.
pub(super) fn take_lane_rows() -> Vec<[f64; super::lanes::LANES]> {
    LANE_ROWS.with(|p| p.borrow_mut().pop()).unwrap_or_default()
}

/// A vector of `len` values for a caller that writes every one of them: a reused buffer keeps
/// its old values (only growth is zeroed), which saves zeroing what is written next anyway.
pub(super) fn values_to_fill(len: usize) -> Vec<f64> {
    let mut v = take_values();
    v.resize(len, 0.0);
    v
}

/// Hands a buffer back for the next tile on this thread (dropped when enough are kept).
pub(super) fn give_values(v: Vec<f64>) {
    if v.capacity() > 0 {
        VALUES.with(|p| keep(&mut p.borrow_mut(), v));
    }
}

/// [`give_values`] for rows of lanes.
pub(super) fn give_lane_rows(v: Vec<[f64; super::lanes::LANES]>) {
    if v.capacity() > 0 {
        LANE_ROWS.with(|p| keep(&mut p.borrow_mut(), v));
    }
}

fn keep<T>(pool: &mut Vec<Vec<T>>, v: Vec<T>) {
    if pool.len() < KEEP {
        pool.push(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::lanes::LANES;

    #[test]
    fn a_buffer_given_back_comes_back_as_it_was() {
        let v = vec![7.0; 40];
        let ptr = v.as_ptr();
        give_values(v);
        let w = take_values();
        assert_eq!(w.as_ptr(), ptr, "the same allocation comes back");
        assert_eq!(w, vec![7.0; 40], "length and values as given back");
        give_lane_rows(vec![[1.0; LANES]; 3]);
        assert_eq!(take_lane_rows(), vec![[1.0; LANES]; 3]);
        // Nothing kept: a new, empty one.
        assert!(take_lane_rows().is_empty());
    }

    #[test]
    fn a_buffer_to_fill_has_the_length_asked_for() {
        let v = vec![7.0; 8];
        let ptr = v.as_ptr();
        give_values(v);
        let w = values_to_fill(3);
        assert_eq!((w.as_ptr(), w.len()), (ptr, 3), "the same allocation, shortened");
        give_values(w);
        assert_eq!(values_to_fill(20).len(), 20);
    }
}
