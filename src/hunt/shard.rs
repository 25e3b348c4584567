//! Sharded hunts: part I of N of a hunt's tile index space, so that N machines hunting with the
//! same seed run exactly the tiles one hunt runs (tile i of shard I is tile i·N + I of the
//! whole hunt), and their findings merge into what one hunt would have written.

use serde::{Deserialize, Serialize};

/// Shard `index` of `count` (`0/1`: the whole hunt).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl std::str::FromStr for Shard {
    type Err = String;
    /// `I/N`, 0 ≤ I < N (Slurm's array task id and count).
    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("'{s}' is no shard: write I/N, e.g. 0/4"))?;
        let num = |x: &str| x.trim().parse::<u64>().map_err(|_| format!("'{s}' is no shard: '{x}' is not a whole number"));
        let (index, count) = (num(i)?, num(n)?);
        if count == 0 || index >= count {
            return Err(format!("shard {index}/{count}: need 0 <= I < N"));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The hunt-wide index of this shard's tile `local`.
    pub fn global(&self, local: u64) -> u64 {
        local * self.count + self.index
    }

    /// How many of the whole hunt's first `total` tiles fall to this shard.
    pub fn share(&self, total: u64) -> u64 {
        total.saturating_sub(self.index).div_ceil(self.count)
    }

    pub fn is_whole(&self) -> bool {
        self.count == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shards of any count partition the whole hunt's first T tiles exactly.
    #[test]
    fn shards_partition_the_tile_indices() {
        for count in 1..=7u64 {
            for total in [0u64, 1, 5, 100, 1001] {
                let mut seen: Vec<u64> = (0..count).flat_map(|i| {
                    let s = Shard { index: i, count };
                    (0..s.share(total)).map(move |l| s.global(l))
                }).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..total).collect::<Vec<_>>(), "{count} shards of {total}");
            }
        }
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "3", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard::default().to_string(), "0/1");
    }
}
