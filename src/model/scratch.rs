//! Buffers the emulator needs for one tile and gives back after it, kept per thread so that a
//! tile's operand arrays cost no allocation: a hunt runs millions of tiles of one shape, and
//! `malloc`/`free` of a tile's five arrays was a tenth of a small tile's time.

use std::cell::RefCell;

/// At most this many buffers of a kind are kept per thread (a tile takes five at once).
const KEEP: usize = 16;

thread_local! {
    static VALUES: RefCell<Vec<Vec<f64>>> = const { RefCell::new(Vec::new()) };
    static LANE_ROWS: RefCell<Vec<Vec<[f64; super::lanes::LANES]>>> = const { RefCell::new(Vec::new()) };
}

/// A vector of `len` zeros, reusing a buffer given back on this thread where there is one.
pub(super) fn values(len: usize) -> Vec<f64> {
    let mut v = VALUES.with(|p| p.borrow_mut().pop()).unwrap_or_default();
    v.clear();
    v.resize(len, 0.0);
    v
}

/// [`values`] for rows of lanes.
pub(super) fn lane_rows(len: usize) -> Vec<[f64; super::lanes::LANES]> {
    let mut v = LANE_ROWS.with(|p| p.borrow_mut().pop()).unwrap_or_default();
    v.clear();
    v.resize(len, [0.0; super::lanes::LANES]);
    v
}

/// A vector of `len` values for a caller that writes every one of them: a reused buffer keeps
/// its old values (only growth is zeroed), which saves zeroing what is written next anyway.
pub(super) fn values_to_fill(len: usize) -> Vec<f64> {
    let mut v = VALUES.with(|p| p.borrow_mut().pop()).unwrap_or_default();
    v.resize(len, 0.0);
    v
}

/// [`values_to_fill`] for rows of lanes.
pub(super) fn lane_rows_to_fill(len: usize) -> Vec<[f64; super::lanes::LANES]> {
    let mut v = LANE_ROWS.with(|p| p.borrow_mut().pop()).unwrap_or_default();
    v.resize(len, [0.0; super::lanes::LANES]);
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

    #[test]
    fn a_buffer_given_back_is_reused_zeroed_at_the_new_length() {
        let mut v = values(40);
        v.iter_mut().for_each(|x| *x = 7.0);
        let ptr = v.as_ptr();
        give_values(v);
        let w = values(24);
        assert_eq!(w.as_ptr(), ptr, "the same allocation comes back");
        assert_eq!(w, vec![0.0; 24]);
        let mut r = lane_rows(3);
        r[1][5] = 1.0;
        give_lane_rows(r);
        assert_eq!(lane_rows(5), vec![[0.0; super::super::lanes::LANES]; 5]);
    }

    #[test]
    fn a_buffer_to_fill_has_the_length_asked_for() {
        let mut v = values_to_fill(8);
        v.iter_mut().for_each(|x| *x = 7.0);
        let ptr = v.as_ptr();
        give_values(v);
        let w = values_to_fill(3);
        assert_eq!((w.as_ptr(), w.len()), (ptr, 3), "the same allocation, shortened");
        give_values(w);
        assert_eq!(values_to_fill(20).len(), 20);
        give_lane_rows(lane_rows_to_fill(4));
        assert_eq!(lane_rows_to_fill(9).len(), 9);
    }
}
