//! A hunt's launches spread over the GPUs it was given. The tile index space (of the hunt's
//! shard) is cut into windows of one launch each, in order; window w goes to GPU w mod G. Each
//! GPU runs its windows in order on its own thread, at most one launch ahead of what has been
//! settled, and the hunt settles the windows strictly in order. So a hunt on G GPUs runs every
//! tile once and settles exactly the launches, in the same order, that a one-GPU hunt of the
//! same seed, batch and tile budget settles: the same state and the same findings. On one GPU
//! the next launch runs while the current one is settled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;

/// The windows of a hunt from where it stands: window w is `batch` tiles from
/// `first + w·batch`, the last one cut to what the tile budget leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    /// The shard-local number of the first tile not yet run.
    pub first: u64,
    /// Tiles already counted against the budget.
    pub done: u64,
    pub batch: u64,
    pub max_tiles: Option<u64>,
}

impl Windows {
    /// Window `w` as (first tile, tile count); `None` once the budget is spent.
    pub fn get(&self, w: u64) -> Option<(u64, u64)> {
        let before = w.checked_mul(self.batch)?;
        let done = self.done.checked_add(before)?;
        let n = self.max_tiles.map_or(u64::MAX, |m| m.saturating_sub(done)).min(self.batch);
        (n > 0).then_some((self.first.checked_add(before)?, n))
    }
}

/// Run the windows on `gpus` (`launch(gpu, first, n)`) and hand each result to `settle(g, first,
/// n, result)` (g: the index in `gpus` of the one that ran it) in window order, until the windows run out, `settle` answers `false` (stop: the
/// launches already made past it are dropped, a resumed hunt makes them again) or either side
/// fails (the first error in window order is returned; nothing past it is settled).
pub fn in_order<G: Sync, R: Send, E: Send>(
    gpus: &[G],
    windows: Windows,
    launch: impl Fn(&G, u64, u64) -> Result<R, E> + Sync,
    mut settle: impl FnMut(usize, u64, u64, R) -> Result<bool, E>,
) -> Result<(), E> {
    let count = gpus.len() as u64;
    if count == 0 {
        return Ok(());
    }
    let halt = AtomicBool::new(false);
    let (halt, launch) = (&halt, &launch);
    std::thread::scope(|s| {
        let results: Vec<_> = gpus
            .iter()
            .enumerate()
            .map(|(g, gpu)| {
                // Capacity 1: a GPU runs at most one launch past the one waiting to be settled.
                let (tx, rx) = sync_channel::<(u64, u64, Result<R, E>)>(1);
                s.spawn(move || {
                    let mut w = g as u64;
                    while !halt.load(Ordering::Relaxed) {
                        let Some((first, n)) = windows.get(w) else { break };
                        let r = launch(gpu, first, n);
                        let failed = r.is_err();
                        if tx.send((first, n, r)).is_err() || failed {
                            break;
                        }
                        w += count;
                    }
                });
                rx
            })
            .collect();
        let mut w = 0u64;
        let outcome = loop {
            // A GPU's thread ends when its next window is past the budget: so are all later ones.
            let g = (w % count) as usize;
            let Ok((first, n, r)) = results[g].recv() else { break Ok(()) };
            match r.and_then(|r| settle(g, first, n, r)) {
                Ok(true) => w += 1,
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        halt.store(true, Ordering::Relaxed);
        // Dropping the receivers frees a GPU thread blocked on a full channel.
        drop(results);
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn windows(max_tiles: Option<u64>) -> Windows {
        Windows { first: 40, done: 7, batch: 10, max_tiles }
    }

    #[test]
    fn windows_cover_the_budget_once_and_in_order() {
        let w = windows(Some(35));
        assert_eq!((0..5).map(|i| w.get(i)).collect::<Vec<_>>(), [Some((40, 10)), Some((50, 10)), Some((60, 8)), None, None]);
        assert_eq!(windows(None).get(1_000), Some((10_040, 10)));
        assert_eq!(windows(None).get(u64::MAX), None, "past the index space is no window");
    }

    /// Three "GPUs" that finish their launches out of order: every tile runs once, on the GPU
    /// its window names, and the settled sequence is the one-GPU sequence.
    #[test]
    fn several_gpus_settle_what_one_settles_in_the_same_order() {
        let run = |gpus: &[u64]| {
            let ran = Mutex::new(Vec::new());
            let mut settled = Vec::new();
            in_order::<u64, (u64, u64), ()>(
                gpus,
                windows(Some(95)),
                |&g, first, n| {
                    std::thread::sleep(std::time::Duration::from_millis(if g == 1 { 3 } else { 1 }));
                    ran.lock().unwrap().push((g, first, n));
                    Ok((first * 2, n))
                },
                |g, first, n, r| {
                    assert_eq!(g as u64, (first - 40) / 10 % gpus.len() as u64);
                    settled.push((first, n, r));
                    Ok(true)
                },
            )
            .unwrap();
            let mut ran = ran.into_inner().unwrap();
            ran.sort_by_key(|x| x.1);
            (ran, settled)
        };
        let (one_ran, one) = run(&[0]);
        let (three_ran, three) = run(&[0, 1, 2]);
        assert_eq!(one, three);
        assert_eq!(one.len(), 9);
        assert_eq!(one.iter().map(|x| x.1).sum::<u64>(), 88);
        assert!(one_ran.iter().all(|x| x.0 == 0));
        for (i, (g, first, _)) in three_ran.iter().enumerate() {
            assert_eq!((*g, *first), (i as u64 % 3, 40 + 10 * i as u64));
        }
    }

    /// `settle` saying stop ends the hunt there; a failed launch ends it with its error, after
    /// the windows before it were settled and none after.
    #[test]
    fn a_stop_or_an_error_ends_at_its_window() {
        for gpus in [&[0u64][..], &[0, 1]] {
            let mut settled = Vec::new();
            in_order::<u64, u64, String>(gpus, windows(None), |_, first, _| Ok(first), |_, first, _, _| {
                settled.push(first);
                Ok(settled.len() < 4)
            })
            .unwrap();
            assert_eq!(settled, [40, 50, 60, 70]);
            let mut settled = Vec::new();
            let err = in_order::<u64, u64, String>(
                gpus,
                windows(None),
                |_, first, _| if first == 80 { Err(format!("launch at {first} failed")) } else { Ok(first) },
                |_, first, _, _| {
                    settled.push(first);
                    Ok(true)
                },
            )
            .unwrap_err();
            assert_eq!((err.as_str(), &settled[..]), ("launch at 80 failed", &[40, 50, 60, 70][..]));
        }
    }
}
