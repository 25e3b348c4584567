//! Tiles of one path as the bytes libFuzzer mutates, and as the files of a guided hunt's
//! population (`fuzz/corpus/<target>/`, libFuzzer's layout, so both share one corpus).
//!
//! An input is a list of entries, each a position (2 bytes, little-endian) and a value (the
//! widest storage of the path's formats: 4 bytes, or 8 for f64; little-endian). Positions run
//! over up to [`max_tiles`] tiles laid end to end, each A (m×k), B (k×n), C (m×n) row-major as
//! in the interchange (on a sparse path A's m×(k/2) kept values, then after C one entry per
//! group of four along K naming its pair of kept positions; on a block-scaled path, after C, A's
//! m×(k/block) scales and B's (k/block)×n, each value XORed with the unit scale so that a scale
//! no entry names is 1); a position past them wraps around. Every element no entry names is +0;
//! a later entry for the same position wins; a trailing partial entry is ignored. Values are
//! masked to their format's storage.
//!
//! Sparse entries make libFuzzer's own minimisation (`cargo fuzz tmin`, which shortens
//! inputs) minimise the number of nonzero terms: a shorter input names fewer elements.

use crate::case::MmaCase;
use crate::exec::PathSpec;

/// Tiles one input holds at most, on any path: enough that the GPU's fixed cost per input
/// (a launch, copies, a context switch among the fuzzing processes) is shared by many tiles.
pub const MAX_TILES: usize = 32;

/// Tiles one input of this path holds at most: [`MAX_TILES`], or fewer where that many tiles
/// have more elements than a 2-byte position can name (wgmma k32).
pub fn max_tiles(path: &PathSpec) -> usize {
    ((u16::MAX as usize + 1) / tile_len(path)).min(MAX_TILES)
}

/// Bytes of one entry's value for a path.
pub fn value_bytes(path: &PathSpec) -> usize {
    (path.a_fmt.storage_bits().max(path.c_fmt.storage_bits()) as usize).div_ceil(8).max(4)
}

/// Elements of A (kept values on a sparse path), B, C, metadata groups (sparse paths: one
/// per group of four along K per row, its value naming one of [`crate::sparse::PAIRS`]), and
/// block scales (block-scaled paths: A's m×(k/block), then B's (k/block)×n).
fn parts(path: &PathSpec) -> [usize; 5] {
    let (m, n, k) = (path.m, path.n, path.k);
    let scales = path.block_scale().map_or(0, |(_, block)| (m + n) * (k / block));
    if path.sparse() {
        [m * k / 2, k * n, m * n, m * k / 4, scales]
    } else {
        [m * k, k * n, m * n, 0, scales]
    }
}

fn tile_len(path: &PathSpec) -> usize {
    parts(path).iter().sum()
}

/// The tiles an input holds (at least one: an empty input is a tile of zeros).
pub fn decode(path: &PathSpec, bytes: &[u8]) -> Vec<MmaCase> {
    let w = value_bytes(path);
    let len = tile_len(path);
    let span = len * max_tiles(path);
    let mut entries: Vec<(usize, u64)> = Vec::with_capacity(bytes.len() / (2 + w));
    let mut tiles = 1;
    for e in bytes.chunks_exact(2 + w) {
        let pos = u16::from_le_bytes([e[0], e[1]]) as usize % span;
        let mut v = [0u8; 8];
        v[..w].copy_from_slice(&e[2..]);
        entries.push((pos, u64::from_le_bytes(v)));
        tiles = tiles.max(pos / len + 1);
    }
    let mut out: Vec<MmaCase> = (0..tiles).map(|_| path.zeros()).collect();
    let [na, nb, nc, ng, _] = parts(path);
    let pairs = crate::sparse::pair_count(path.one_of_two()) as u64;
    for (pos, v) in entries {
        let t = &mut out[pos / len];
        let at = pos % len;
        if at < na {
            t.a[at] = v & path.a_fmt.mask();
        } else if at < na + nb {
            t.b[at - na] = v & path.b_fmt.mask();
        } else if at < na + nb + nc {
            t.c[at - na - nb] = v & path.c_fmt.mask();
        } else if at < na + nb + nc + ng {
            if let Some(meta) = t.meta.as_mut() {
                let g = at - na - nb - nc;
                meta[2 * g..2 * g + 2].copy_from_slice(&crate::sparse::PAIRS[(v % pairs) as usize]);
            }
        } else if let Some(scales) = t.scales.as_mut() {
            let s = at - na - nb - nc - ng;
            let bits = v as u8 ^ scales.fmt.one();
            match s.checked_sub(scales.a.len()) {
                None => scales.a[s] = bits,
                Some(j) => scales.b[j] = bits,
            }
        }
    }
    out.iter_mut().for_each(|t| path.conform(t));
    out
}

/// The input holding `tiles` (at most [`max_tiles`]; each of the path's shape and formats):
/// one entry per nonzero element, in position order.
pub fn encode(path: &PathSpec, tiles: &[MmaCase]) -> Result<Vec<u8>, String> {
    if tiles.len() > max_tiles(path) {
        return Err(format!("{} tiles: one input of {} holds at most {}", tiles.len(), path.id, max_tiles(path)));
    }
    let w = value_bytes(path);
    let len = tile_len(path);
    let mut out = Vec::new();
    for (t, tile) in tiles.iter().enumerate() {
        if (tile.a_fmt, tile.b_fmt, tile.c_fmt, tile.m, tile.n, tile.k) != (path.a_fmt, path.b_fmt, path.c_fmt, path.m, path.n, path.k) {
            return Err(format!("tile {t} is not a {} tile ({}x{}x{} {}/{})", path.id, tile.m, tile.n, tile.k, tile.a_fmt, tile.c_fmt));
        }
        if tile.meta.is_some() || path.sparse() {
            // Metadata where the path wants it, and only pairs its sparsity can express.
            path.check(tile).map_err(|e| format!("tile {t}: {e}"))?;
        }
        // Metadata groups by their pair's number (the default pair, 0, takes no entry).
        let groups: Vec<u64> = tile.meta.iter().flat_map(|m| m.chunks_exact(2)).map(|p| crate::sparse::PAIRS.iter().position(|q| q == p).unwrap_or(0) as u64).collect();
        // Block scales where the path has them, of its format and block (1 takes no entry).
        let scales: Vec<u64> = match (&tile.scales, path.block_scale()) {
            (None, None) => Vec::new(),
            (Some(s), Some(want)) if (s.fmt, s.block) == want && s.a.len() + s.b.len() == parts(path)[4] => {
                s.a.iter().chain(&s.b).map(|&x| (x ^ s.fmt.one()) as u64).collect()
            }
            (Some(s), _) => return Err(format!("tile {t}: {} scales per {} do not fit {}", s.fmt.name(), s.block, path.id)),
            (None, Some((fmt, block))) => return Err(format!("tile {t}: {} takes {} scales per {block}, the tile has none", path.id, fmt.name())),
        };
        for (at, &v) in tile.a.iter().chain(&tile.b).chain(&tile.c).chain(&groups).chain(&scales).enumerate() {
            if v != 0 {
                let pos = (t * len + at) as u16;
                out.extend_from_slice(&pos.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes()[..w]);
            }
        }
    }
    Ok(out)
}

/// libFuzzer's name for a file of a corpus: the SHA-1 of its bytes, in hex.
pub fn corpus_name(bytes: &[u8]) -> String {
    use sha1::{Digest, Sha1};
    Sha1::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The fuzz target (and corpus directory) of a path: `gpu_` and the path with `_` for `.`.
pub fn target_name(path: &PathSpec) -> String {
    format!("gpu_{}", path.id.replace('.', "_"))
}

/// The path a target (or an artifact's directory) names.
pub fn path_of_target(name: &str) -> Option<&'static PathSpec> {
    let id = name.strip_prefix("gpu_")?;
    crate::exec::PATHS.iter().find(|p| p.id.replace('.', "_") == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::path_by_id;
    use crate::format::Format;

    #[test]
    fn round_trips_and_sparse_entries() {
        let path = path_by_id("mma.m16n8k16.f32.f16.f16.f32").unwrap();
        let mut rng = <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(3);
        let tiles: Vec<MmaCase> = (0..3)
            .map(|_| {
                let mut t = crate::gen::case(&mut rng, path.a_fmt, path.c_fmt, path.m, path.n, path.k);
                t.extra.clear();
                t
            })
            .collect();
        let bytes = encode(path, &tiles).unwrap();
        assert_eq!(decode(path, &bytes), tiles);
        assert_eq!(encode(path, &decode(path, &bytes)).unwrap(), bytes);
        // One nonzero element is one 6-byte entry; later entries win; partial entries are ignored.
        let mut one = MmaCase::zeros(path.a_fmt, path.c_fmt, 16, 8, 16);
        one.c[5] = 0x3f80_0000;
        let b = encode(path, std::slice::from_ref(&one)).unwrap();
        assert_eq!(b.len(), 6);
        let mut twice = b.clone();
        twice.extend_from_slice(&[b[0], b[1], 0, 0, 0, 0x40, 9]);
        let d = decode(path, &twice);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].c[5], 0x4000_0000);
        assert_eq!(decode(path, &[]).len(), 1, "an empty input is one zero tile");
        // A position past the last tile wraps; f16 values are masked to 16 bits.
        let far = ((MAX_TILES * 512 + 3) as u16).to_le_bytes();
        let d = decode(path, &[far[0], far[1], 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(d[0].a[3], 0xffff);
    }

    /// Sparse tiles round-trip with their metadata, and a group no entry names keeps the first pair.
    #[test]
    fn sparse_tiles_round_trip_with_their_metadata() {
        let mut rng = <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(4);
        for id in ["mma.sp.m16n8k32.f32.f16.f16.f32", "mma.sp.m16n8k16.f32.tf32.tf32.f32"] {
            let path = path_by_id(id).unwrap();
            let tiles: Vec<MmaCase> = (0..3)
                .map(|_| {
                    let mut t = crate::gen::path_case(&mut rng, path);
                    t.extra.clear();
                    t
                })
                .collect();
            assert!(tiles.iter().any(|t| t.meta.as_ref().unwrap().chunks_exact(2).any(|p| p != crate::sparse::PAIRS[0])));
            let bytes = encode(path, &tiles).unwrap();
            assert_eq!(decode(path, &bytes), tiles, "{id}");
            let zero = decode(path, &[]);
            assert_eq!(zero[0].meta.as_ref().unwrap()[..2], crate::sparse::PAIRS[0]);
        }
        // A dense tile is no tile of a sparse path.
        let sparse = path_by_id("mma.sp.m16n8k32.f32.f16.f16.f32").unwrap();
        assert!(encode(sparse, &[MmaCase::zeros(Format::F16, Format::F32, 16, 8, 32)]).is_err());
    }

    /// Block-scaled tiles round-trip with their scales; a scale no entry names is 1.
    #[test]
    fn block_scaled_tiles_round_trip_with_their_scales() {
        let mut rng = <rand_xoshiro::Xoshiro256PlusPlus as rand::SeedableRng>::seed_from_u64(5);
        for id in ["mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0", "mma.m16n8k64.mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3"] {
            let path = path_by_id(id).unwrap();
            let tiles: Vec<MmaCase> = (0..4)
                .map(|_| {
                    let mut t = crate::gen::path_case(&mut rng, path);
                    t.extra.clear();
                    t
                })
                .collect();
            let one = path.block_scale().unwrap().0.one();
            assert!(tiles.iter().any(|t| t.scales.as_ref().unwrap().a.iter().any(|&x| x != one)), "{id}: gen draws scales");
            let bytes = encode(path, &tiles).unwrap();
            assert_eq!(decode(path, &bytes), tiles, "{id}");
            let zero = decode(path, &[]);
            assert!(zero[0].scales.as_ref().unwrap().a.iter().chain(&zero[0].scales.as_ref().unwrap().b).all(|&x| x == one));
            // A tile without scales, or with another block, is no tile of the path.
            let mut bare = tiles[0].clone();
            bare.scales = None;
            assert!(encode(path, &[bare]).is_err());
        }
        // One entry sets B's last scale of the tile: the value is XORed with the unit scale.
        let path = path_by_id("mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0").unwrap();
        let last = ((tile_len(path) - 1) as u16).to_le_bytes();
        let t = decode(path, &[last[0], last[1], 127 ^ 130, 0, 0, 0]);
        assert_eq!(*t[0].scales.as_ref().unwrap().b.last().unwrap(), 130);
    }

    #[test]
    fn target_names_name_paths() {
        for p in crate::exec::PATHS {
            assert_eq!(path_of_target(&target_name(p)).map(|q| q.id), Some(p.id));
        }
        assert!(path_of_target("gpu_nothing").is_none());
        assert_eq!(value_bytes(path_by_id("mma.m8n8k4.f64.f64.f64.f64").unwrap()), 8);
    }

    #[test]
    fn positions_reach_every_tile() {
        for p in crate::exec::PATHS {
            // The last element of the last tile has a 2-byte position, and decodes there.
            let n = max_tiles(p);
            assert!(n * tile_len(p) <= 1 << 16, "{}", p.id);
            let last = ((n * tile_len(p) - 1) as u16).to_le_bytes();
            let mut bytes = vec![last[0], last[1]];
            bytes.resize(2 + value_bytes(p), 0x01);
            let tiles = decode(p, &bytes);
            assert_eq!(tiles.len(), n, "{}", p.id);
            let value = 0x0101_0101_0101_0101u64 & (u64::MAX >> (64 - 8 * value_bytes(p)));
            if let Some(scales) = &tiles[n - 1].scales {
                // A block-scaled path's last entries are B's scales, XORed with the unit scale.
                assert_eq!(*scales.b.last().unwrap(), value as u8 ^ scales.fmt.one(), "{}", p.id);
                continue;
            }
            if let Some(meta) = &tiles[n - 1].meta {
                // A sparse path's last entries are metadata groups: the value numbers the pair.
                let pair = crate::sparse::PAIRS[(value % crate::sparse::pair_count(p.one_of_two()) as u64) as usize];
                assert_eq!(meta[meta.len() - 2..], pair, "{}", p.id);
                p.check(&tiles[n - 1]).unwrap();
                continue;
            }
            // A path that ignores C decodes every C element as +0, whatever the bytes say.
            let want = if p.ignores_c() { p.c_ignored() } else { value & p.c_fmt.mask() };
            assert_eq!(*tiles[n - 1].c.last().unwrap(), want, "{}", p.id);
        }
        assert_eq!(max_tiles(path_by_id("mma.m16n8k16.f32.f16.f16.f32").unwrap()), MAX_TILES);
        assert_eq!(max_tiles(path_by_id("wgmma.m64n8k32.f32.e4m3.e4m3").unwrap()), 23);
    }
}
