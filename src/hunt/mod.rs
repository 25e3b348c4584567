//! Hunts: generate edge-biased tiles, run them on two sides (GPU, model, or exact), compare bit
//! for bit, classify each divergence against the exact value, minimise a few per class, and
//! store them as findings. A hunt's state is saved after every batch so it can be resumed, and
//! every file it writes is replaced atomically: killing it loses nothing already reported.

pub mod compare;
mod engine;
mod gpu_tiles;
pub mod launches;
pub mod explain;
pub mod external;
pub mod finding;
pub mod guided;
pub mod minimise;
pub mod probe;
pub mod results;
pub mod shard;
pub mod side;
mod stats;

pub use shard::Shard;
pub use side::{Side, SideError};
pub use stats::{ClassCount, ExactStats, HuntState};

use crate::case::{hex, MmaCase};
use crate::exact::{self, Exact};
use crate::exec::PathSpec;
use crate::gen;
use compare::{agree, Divergence};
use finding::{Finding, SideOutput, Stored};
use rayon::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Divergent elements per batch whose class is computed (each needs an exact MPFR sum).
const CLASSIFIED_PER_BATCH: usize = 4096;

/// What a hunt does and when it stops.
#[derive(Clone, Debug)]
pub struct HuntConfig {
    pub path: &'static PathSpec,
    pub seed: u64,
    /// Tiles per batch (one GPU launch pair).
    pub batch: usize,
    /// Stop when this many tiles have been generated in total (resumed runs included).
    pub max_tiles: Option<u64>,
    /// Stop after this much time in this run.
    pub max_time: Option<Duration>,
    /// Divergences minimised per class (the rest are counted).
    pub per_class: u64,
    /// Minimiser rounds per divergence.
    pub max_rounds: usize,
    /// One tile in this many is also compared with the exact value and checked for monotonicity.
    pub exact_every: u64,
    /// One tile in this many (by hunt-wide number) has its arithmetic features mapped in an
    /// unguided hunt; a guided hunt maps every tile (the features are its guidance).
    pub features_every: u64,
    /// Where findings (and the hunt's state) go.
    pub findings: PathBuf,
    /// End at the first batch with a divergence (its first divergent tile is in the state).
    pub stop_at_first: bool,
    /// Guided: the population's directory (libFuzzer's corpus of the path's GPU target).
    pub guided: Option<PathBuf>,
    /// The part of the tile index space this hunt runs (unguided hunts only); `max_tiles`
    /// counts this shard's tiles.
    pub shard: Shard,
    /// Where tiles are made and the model computed; both engines use the GPU engine's own
    /// tile generator, so they keep their own state.
    pub engine: Engine,
}

/// Where a hunt's tiles are made and its model runs (`hunt --engine`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// Tiles from the CPU's generator, both sides run on them ([`Hunt::run`]).
    #[default]
    Cpu,
    /// Tiles made, run, modelled and compared on the GPU ([`Hunt::run_engine`]).
    Gpu,
    /// Tiles made and run on the GPU, the model on the CPU ([`Hunt::run_gpu_tiles`]).
    GpuTiles,
}

impl HuntConfig {
    fn kind(&self) -> &'static str {
        match (self.guided.is_some(), self.engine) {
            (true, _) => "guided",
            (false, Engine::Gpu | Engine::GpuTiles) => "engine",
            (false, Engine::Cpu) => "hunt",
        }
    }
}

/// Why a hunt stopped early.
#[derive(Debug, thiserror::Error)]
pub enum HuntError {
    #[error(transparent)]
    Side(#[from] SideError),
    #[error("cannot write {file}: {source}")]
    Write { file: String, source: std::io::Error },
    #[error("cannot resume from {file}: {message}")]
    Resume { file: String, message: String },
    #[error("--engine gpu-tiles compares the GPU with a model, not {0}")]
    NotAModel(String),
}

/// A running hunt.
pub struct Hunt<'s> {
    pub cfg: HuntConfig,
    pub a: &'s Side,
    pub b: &'s Side,
    pub state: HuntState,
    /// Findings files that could not be read (reported, skipped).
    pub problems: Vec<String>,
    /// A guided hunt's population.
    pub population: Option<guided::Population>,
    /// Where this run's wall time went, phase by phase (see [`Phases`]).
    pub phases: Phases,
}

/// Wall time of an unguided or guided hunt's batch loop by phase, in seconds: both sides run
/// at once with the next batch's generation (`sides`; inside it, each side alone), then the
/// feature map, the comparison (with classification and minimising), the exact sample and the
/// state file. What a user reads to see what bounds a hunt.
#[derive(Clone, Debug, Default)]
pub struct Phases {
    pub sides: f64,
    pub side_a: f64,
    pub side_b: f64,
    pub next_batch: f64,
    pub features: f64,
    pub compare: f64,
    pub exact: f64,
    pub state: f64,
    /// The engines' launches per GPU of side A (in `--devices` order): tiles settled and the
    /// seconds its launches took.
    pub per_gpu: Vec<(u64, f64)>,
}

impl Phases {
    /// With more than one GPU: each one's tiles and their rate while it ran them.
    pub fn per_gpu_summary(&self) -> Option<String> {
        (self.per_gpu.len() > 1).then(|| {
            let parts: Vec<String> = self.per_gpu.iter().enumerate().map(|(g, (tiles, s))| format!("GPU {g}: {tiles} tiles in {s:.1} s of launches ({:.3e} tiles/s)", *tiles as f64 / s.max(1e-9))).collect();
            parts.join("; ")
        })
    }

    /// One line: each phase's share of the loop's time, and each side's own time.
    pub fn summary(&self) -> String {
        let total = self.sides + self.features + self.compare + self.exact + self.state;
        if total <= 0.0 {
            return String::new();
        }
        let pct = |x: f64| 100.0 * x / total;
        format!(
            "sides and next batch {:.0}% (side A {:.0}%, side B {:.0}%, generating {:.0}%, at once), features {:.0}%, comparison {:.0}%, exact sample {:.0}%, state file {:.0}%",
            pct(self.sides),
            pct(self.side_a),
            pct(self.side_b),
            pct(self.next_batch),
            pct(self.features),
            pct(self.compare),
            pct(self.exact),
            pct(self.state)
        )
    }
}

impl<'s> Hunt<'s> {
    /// A new hunt, or (with `resume`) the saved one with the same path and sides.
    pub fn new(cfg: HuntConfig, a: &'s Side, b: &'s Side, resume: bool) -> Result<Hunt<'s>, HuntError> {
        let file = stats::state_file(&cfg.findings, cfg.path.id, &a.name(), &b.name(), cfg.kind(), cfg.shard);
        let mut state = if resume {
            let s = HuntState::load(&file).map_err(|message| HuntError::Resume { file: file.display().to_string(), message })?;
            if s.seed != cfg.seed && cfg.seed != 0 {
                eprintln!("resuming with the saved seed {} (not {})", s.seed, cfg.seed);
            }
            if s.shard != cfg.shard {
                return Err(HuntError::Resume { file: file.display().to_string(), message: format!("it is shard {}, not {}", s.shard, cfg.shard) });
            }
            s
        } else {
            HuntState { shard: cfg.shard, ..HuntState::new(cfg.path.id, &a.name(), &b.name(), cfg.seed) }
        };
        if !state.features.fits() {
            state.features = Default::default();
        }
        state.guided = cfg.guided.is_some();
        remove_stale_temporaries(&cfg.findings.join(cfg.path.id));
        let (_, mut problems) = finding::read_all(&cfg.findings.join(cfg.path.id));
        let population = match &cfg.guided {
            Some(dir) => {
                remove_stale_temporaries(dir);
                let p = guided::Population::open(cfg.path, dir).map_err(|source| HuntError::Write { file: dir.display().to_string(), source })?;
                problems.extend(p.problems.iter().cloned());
                Some(p)
            }
            None => None,
        };
        Ok(Hunt { cfg, a, b, state, problems, population, phases: Phases::default() })
    }

    pub fn state_file(&self) -> PathBuf {
        stats::state_file(&self.cfg.findings, self.cfg.path.id, &self.a.name(), &self.b.name(), self.cfg.kind(), self.cfg.shard)
    }

    /// Run until the tile or time budget is spent, `stop` is set, or (with `stop_at_first`) a
    /// batch diverges; `progress` sees the state after every batch and every finding.
    /// Unguided, tile i is generator tile i of the seed, and the next batch is generated while
    /// both sides run the current one; guided, each batch is made from the population after the
    /// previous one's features are in.
    pub fn run(&mut self, stop: &AtomicBool, mut progress: impl FnMut(&HuntState)) -> Result<(), HuntError> {
        let started = Instant::now();
        let base_elapsed = self.state.elapsed_s;
        let (path, seed, shard) = (self.cfg.path, self.state.seed, self.cfg.shard);
        // Tile i of a shard is tile shard.global(i) of the whole hunt (and records that index).
        let make = |from: u64, n: u64| -> Vec<MmaCase> { (from..from + n).into_par_iter().map(|i| gen::case_at(path, seed, shard.global(i))).collect() };
        let (max_tiles, batch) = (self.cfg.max_tiles, self.cfg.batch as u64);
        // Batches end at the tile budget and at every power of ten (the feature curve's points).
        // A guided hunt starts small and doubles (16, 16, 32, 64, … up to the batch size): the
        // population learns from the first tiles before many more are drawn blindly.
        let ramp = if self.population.is_some() { guided::FIRST_BATCH } else { u64::MAX };
        let size = move |tiles: u64| -> u64 { max_tiles.map_or(u64::MAX, |m| m.saturating_sub(tiles)).min(batch).min(tiles.max(ramp)).min(stats::next_checkpoint(tiles) - tiles) };
        let arithmetic = self.b.arithmetic(path.a_fmt).cloned();
        let mut prefetched: Option<Vec<MmaCase>> = None;
        loop {
            let n = size(self.state.tiles);
            if n == 0 || stop.load(Ordering::Relaxed) || self.cfg.max_time.is_some_and(|t| started.elapsed() >= t) {
                break;
            }
            let tiles = match (prefetched.take(), &mut self.population) {
                (Some(t), _) => t,
                (None, Some(p)) => p.next_batch(n as usize, seed, self.state.tiles, &mut self.state.next_tile),
                (None, None) => make(self.state.next_tile, n),
            };
            if self.population.is_none() {
                self.state.next_tile += n;
            }
            let n_next = size(self.state.tiles + n);
            let (next_from, unguided) = (self.state.next_tile, self.population.is_none());
            // Both sides run while the next unguided batch is generated.
            let timed = |f: &dyn Fn() -> Result<Vec<Vec<u64>>, SideError>| {
                let t = Instant::now();
                (f(), t.elapsed().as_secs_f64())
            };
            let t = Instant::now();
            let (((da, ta), (db, tb)), (next, tn)) = rayon::join(
                || rayon::join(|| timed(&|| self.a.execute(&tiles)), || timed(&|| self.b.execute(&tiles))),
                || {
                    let t = Instant::now();
                    ((unguided && n_next > 0).then(|| make(next_from, n_next)), t.elapsed().as_secs_f64())
                },
            );
            let p = &mut self.phases;
            (p.sides, p.side_a, p.side_b, p.next_batch) = (p.sides + t.elapsed().as_secs_f64(), p.side_a + ta, p.side_b + tb, p.next_batch + tn);
            prefetched = next;
            let (da, db) = (da?, db?);
            let first = self.state.tiles;
            let t = Instant::now();
            self.observe_features(arithmetic.as_ref(), &tiles, &db, first, self.cfg.features_every)?;
            self.phases.features += t.elapsed().as_secs_f64();
            let t = Instant::now();
            let divergent = self.compare_batch(&tiles, &da, &db, stop, &mut progress)?;
            self.phases.compare += t.elapsed().as_secs_f64();
            let t = Instant::now();
            self.check_against_exact(&tiles, &da, &db, first)?;
            self.phases.exact += t.elapsed().as_secs_f64();
            self.state.tiles += n;
            self.state.dot_products += n * (path.m * path.n) as u64;
            self.state.elapsed_s = base_elapsed + started.elapsed().as_secs_f64();
            self.state.note_features();
            self.state.never_reached = self.state.features.never_reached();
            self.state.population = self.population.as_ref().map_or(0, |p| p.tiles.len());
            if let (Some(t), None) = (divergent, self.state.first_divergence) {
                self.state.first_divergence = Some(shard.global(first + t as u64));
            }
            let t = Instant::now();
            self.save()?;
            self.phases.state += t.elapsed().as_secs_f64();
            progress(&self.state);
            if divergent.is_some() && self.cfg.stop_at_first {
                break;
            }
        }
        self.state.elapsed_s = base_elapsed + started.elapsed().as_secs_f64();
        self.save()
    }

    /// Classify, count and minimise (into findings) the divergences of tiles already run on both
    /// sides (a fuzz artifact); the number of divergent elements.
    pub fn record_divergences(&mut self, tiles: &[MmaCase], da: &[Vec<u64>], db: &[Vec<u64>]) -> Result<u64, HuntError> {
        let before = self.state.divergent_elements;
        self.compare_batch(tiles, da, db, &AtomicBool::new(false), &mut |_: &HuntState| {})?;
        Ok(self.state.divergent_elements - before)
    }

    /// Situations of the tiles under side B's model, into the feature map (one tile in
    /// `every` unguided, by hunt-wide number so shards map what one hunt would; every
    /// tile guided); a guided hunt keeps each tile that reached a new feature.
    fn observe_features(&mut self, arithmetic: Option<&crate::model::Arithmetic>, tiles: &[MmaCase], db: &[Vec<u64>], first: u64, every: u64) -> Result<(), HuntError> {
        let Some(ar) = arithmetic else { return Ok(()) };
        let probe = crate::features::FeatureProbe::new(ar);
        let every = if self.population.is_some() { 1 } else { every.max(1) };
        let shard = self.cfg.shard;
        let picked: Vec<usize> = (0..tiles.len()).filter(|&t| shard.global(first + t as u64) % every == 0).collect();
        let counts: Vec<_> = picked.par_iter().map(|&t| probe.tile(&tiles[t], &db[t])).collect();
        if let Some(p) = &mut self.population {
            p.count_hits(&counts);
        }
        for (&t, c) in picked.iter().zip(&counts) {
            if self.state.features.observe(c) > 0 {
                if let Some(p) = &mut self.population {
                    p.admit(&tiles[t], c).map_err(|source| HuntError::Write { file: p.dir.display().to_string(), source })?;
                }
            }
        }
        Ok(())
    }

    fn save(&self) -> Result<(), HuntError> {
        let file = self.state_file();
        self.state.save(&file).map_err(|source| HuntError::Write { file: file.display().to_string(), source })
    }

    /// Find, classify and count every disagreeing element; minimise the first ones of each class
    /// that still has budget. Returns the index of the first divergent tile of the batch.
    fn compare_batch(&mut self, tiles: &[MmaCase], da: &[Vec<u64>], db: &[Vec<u64>], stop: &AtomicBool, progress: &mut impl FnMut(&HuntState)) -> Result<Option<usize>, HuntError> {
        let fmt = self.cfg.path.d_fmt();
        let nan_is_any = self.a.nan_is_any() || self.b.nan_is_any();
        let width = self.cfg.path.n;
        let mismatched: Vec<(usize, usize)> = tiles
            .par_iter()
            .enumerate()
            .flat_map_iter(|(t, _)| {
                let (x, y) = (&da[t], &db[t]);
                (0..x.len()).filter(move |&e| !agree(fmt, x[e], y[e], nan_is_any)).map(move |e| (t, e))
            })
            .collect();
        let first_divergent = mismatched.first().map(|&(t, _)| t);
        let mut last_tile = usize::MAX;
        for &(t, _) in &mismatched {
            self.state.divergent_elements += 1;
            if t != last_tile {
                self.state.divergent_tiles += 1;
                last_tile = t;
            }
        }
        // Classes need the exact value (MPFR): at most CLASSIFIED_PER_BATCH elements of a full
        // batch, so a model that diverges everywhere does not make the hunt MPFR-bound. The
        // budget is per tile (spread over each tile's divergent elements), so which elements
        // are classified depends on the tile alone, not on the batch it ran in: the shards of
        // a hunt classify, and so find, what the whole hunt does.
        let per_tile = CLASSIFIED_PER_BATCH.div_ceil(self.cfg.batch.max(1)).max(1);
        let sampled: Vec<(usize, usize)> = mismatched
            .chunk_by(|x, y| x.0 == y.0)
            .flat_map(|run| run.iter().step_by(run.len().div_ceil(per_tile).max(1)).copied())
            .collect();
        let divergent: Vec<(usize, usize, String)> = sampled
            .par_iter()
            .map(|&(t, e)| {
                let exact = exact::exact_element(&tiles[t], e / width, e % width);
                (t, e, Divergence::classify(fmt, da[t][e], db[t][e], &exact).class())
            })
            .collect();
        for (_, _, class) in &divergent {
            self.state.classified += 1;
            self.state.classes.entry(class.clone()).or_default().elements += 1;
        }
        for (t, e, class) in divergent {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let count = self.state.classes.get_mut(&class).expect("counted above");
            if count.minimised >= self.cfg.per_class {
                continue;
            }
            count.minimised += 1;
            let mut original = tiles[t].clone();
            original.extra.insert("d".into(), hex_list(&da[t], fmt));
            original.extra.insert("d_b".into(), hex_list(&db[t], fmt));
            let mut f = self.minimise_into_finding(&tiles[t], original, e / width, e % width)?;
            f.hunt_class = Some(class.clone());
            let id = f.id.clone();
            let mut problems = Vec::new();
            let stored = finding::store(&self.cfg.findings, f, &mut problems).map_err(|source| HuntError::Write { file: self.cfg.findings.display().to_string(), source })?;
            self.problems.extend(problems);
            match stored {
                Stored::New => self.state.findings_new += 1,
                Stored::Merged => self.state.findings_merged += 1,
            }
            self.state.classes.get_mut(&class).expect("counted above").findings.insert(id);
            progress(&self.state);
        }
        Ok(first_divergent)
    }

    fn minimise_into_finding(&mut self, tile: &MmaCase, original: MmaCase, i: usize, j: usize) -> Result<Finding, HuntError> {
        let m = minimise::minimise(self.a, self.b, tile, i, j, self.cfg.max_rounds)?;
        self.state.minimiser_rounds += m.rounds as u64;
        let fmt = self.cfg.path.d_fmt();
        let last = &m.last;
        let (probe, mut minimised) = if m.needs_whole_tile {
            self.state.whole_tile_divergences += 1;
            (probe::Probe::from_tile(tile, i, j), { let mut t = tile.clone(); t.extra.clear(); t })
        } else {
            (last.probe.clone(), last.probe.tile())
        };
        *self.state.minimised_terms.entry(probe.simplicity().terms).or_default() += 1;
        let (explanation, knob_changes) = explain::explain(self.a, self.b, &minimised, probe.i, probe.j, last.a, last.b);
        let mut dm = vec![0u64; minimised.m * minimised.n];
        let mut dm_b = dm.clone();
        dm[probe.i * minimised.n + probe.j] = last.a;
        dm_b[probe.i * minimised.n + probe.j] = last.b;
        // Outputs of the other elements are those of the zero rows: computed, not assumed.
        if let (Ok(mut x), Ok(mut y)) = (self.a.execute(std::slice::from_ref(&minimised)), self.b.execute(std::slice::from_ref(&minimised))) {
            dm = x.remove(0);
            dm_b = y.remove(0);
        }
        minimised.extra.insert("d_b".into(), hex_list(&dm_b, fmt));
        let mut min_json = serde_json::Value::Object(minimised.to_json());
        min_json["d"] = hex_list(&dm, fmt);
        let element = [probe.i, probe.j];
        let (sa, sb) = (self.a.name(), self.b.name());
        let id = finding::finding_id(self.cfg.path.id, &sa, &sb, &min_json, element);
        let class = last.divergence.as_ref().map_or_else(|| "needs the whole tile".to_string(), |d| d.class());
        let out = |side: &Side, bits: u64| SideOutput { side: side.name(), detail: side.describe(), bits: hex(bits, fmt), value: probe::value_text(fmt, bits) };
        let today = crate::store::today_utc();
        Ok(Finding {
            id,
            path: self.cfg.path.id.into(),
            class,
            hunt_class: None,
            summary: probe.describe(),
            a: out(self.a, last.a),
            b: out(self.b, last.b),
            exact: last.exact.describe(),
            exact_nearest: hex(last.exact.round(fmt, crate::Rounding::Rne), fmt),
            explanation,
            knob_changes,
            minimised: min_json,
            minimised_element: element,
            original: serde_json::Value::Object(original.to_json()),
            original_element: [i, j],
            rounds: m.rounds,
            evaluated: m.evaluated,
            seen: 1,
            first_seen: today.clone(),
            last_seen: today,
        })
    }

    /// On one tile in `exact_every`: each side against the exact value (nearest, faithful, ulp
    /// error), and monotonicity: raising every C element by one ulp must not lower any output.
    fn check_against_exact(&mut self, tiles: &[MmaCase], da: &[Vec<u64>], db: &[Vec<u64>], first: u64) -> Result<(), HuntError> {
        let every = self.cfg.exact_every.max(1);
        // By hunt-wide index, so that shards check the tiles one whole hunt would.
        let ids: Vec<u64> = (0..tiles.len() as u64).map(|t| self.cfg.shard.global(first + t)).collect();
        let picked: Vec<usize> = (0..tiles.len()).filter(|&t| ids[t] % every == 0).collect();
        let pick = |v: &[Vec<u64>]| picked.iter().map(|&t| v[t].clone()).collect::<Vec<_>>();
        let tiles: Vec<MmaCase> = picked.iter().map(|&t| tiles[t].clone()).collect();
        let ids: Vec<u64> = picked.iter().map(|&t| ids[t]).collect();
        self.check_exact_tiles(&tiles, &pick(da), &pick(db), &ids)
    }

    /// [`Hunt::check_against_exact`] on every one of `tiles` (hunt-wide numbers `ids`).
    fn check_exact_tiles(&mut self, tiles: &[MmaCase], da: &[Vec<u64>], db: &[Vec<u64>], ids: &[u64]) -> Result<(), HuntError> {
        if tiles.is_empty() {
            return Ok(());
        }
        let fmt = self.cfg.path.d_fmt();
        let exacts: Vec<Vec<Exact>> = tiles.par_iter().map(exact::exact_tile).collect();
        // Each tile's elements on every core (an exact comparison costs as much as emulating).
        for (side, d) in [da, db].into_iter().enumerate() {
            let part = exacts
                .par_iter()
                .zip(d)
                .map(|(ex, d)| {
                    let mut s = ExactStats::default();
                    ex.iter().zip(d).for_each(|(x, &bits)| s.record(x, fmt, bits));
                    s
                })
                .reduce(ExactStats::default, ExactStats::merged);
            self.state.exact[side] = std::mem::take(&mut self.state.exact[side]).merged(part);
        }
        if self.cfg.path.ignores_c() || fmt.is_integer() {
            // C is not read (scale-d = 0): raising it cannot change D, and the path's cases keep
            // +0. Integer sums wrap around: D is not monotone in C there, by design.
            return Ok(());
        }
        let raised: Vec<MmaCase> = tiles.iter().map(raise_c).collect();
        let (ra, rb) = rayon::join(|| self.a.execute(&raised), || self.b.execute(&raised));
        for (side, (base, up)) in [(da, ra?), (db, rb?)].into_iter().enumerate() {
            for (t, d_up) in up.iter().enumerate() {
                for (e, (&lo, &hi)) in base[t].iter().zip(d_up).enumerate() {
                    let (lo, hi) = (fmt.to_f64(lo), fmt.to_f64(hi));
                    if lo.is_nan() || hi.is_nan() {
                        continue;
                    }
                    self.state.monotonic_checked[side] += 1;
                    if hi < lo {
                        self.state.monotonic_violations[side] += 1;
                        if self.state.monotonic_examples.len() < 8 {
                            self.state.monotonic_examples.push(format!("side {} tile {} element {e}: {lo:e} then {hi:e} after raising C", [&self.state.side_a, &self.state.side_b][side], ids[t]));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Temporary files (`.NAME.PID.tmp`) left by a hunt that was killed mid-write: the file they
/// were replacing is intact, so they are deleted once their process is gone.
fn remove_stale_temporaries(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else { continue };
        let Some(pid) = stem.rsplit('.').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn hex_list(d: &[u64], fmt: crate::Format) -> serde_json::Value {
    d.iter().map(|&x| serde_json::Value::String(hex(x, fmt))).collect()
}

/// The tile with every finite C element moved one ulp up (toward +inf), staying finite.
fn raise_c(tile: &MmaCase) -> MmaCase {
    let f = tile.c_fmt;
    let sign = 1u64 << (f.storage_bits() - 1);
    let mut t = tile.clone();
    for c in &mut t.c {
        let d = f.decode(*c);
        let up = match d.class {
            crate::format::Class::Zero => 1,
            crate::format::Class::Finite if d.neg => *c - 1,
            crate::format::Class::Finite => *c + 1,
            _ => continue,
        };
        let up = if up == sign { 0 } else { up };
        if matches!(f.decode(up).class, crate::format::Class::Finite | crate::format::Class::Zero) {
            *c = up;
        }
    }
    t
}
