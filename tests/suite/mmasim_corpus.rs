//! MMA-Sim 2.1.1's Hopper answers (recorded on the device through `scripts/mmasim-oracle.py`
//! as an external oracle, `corpus/mmasim/hopper/`), replayed without PyTorch: our sm90 models
//! agree with MMA-Sim on every element of every tile, except FP64 NaN payloads, where MMA-Sim
//! gives other NaN bits than the H100 (and our models, which follow the H100).

use mmafuzz::replay::{corpus_files, corpus_path_id, read_corpus};
use mmafuzz::{Emulator, Model};
use rayon::prelude::*;
use std::path::Path;

#[test]
fn sm90_models_agree_with_mmasim_hopper() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/mmasim/hopper");
    let files = corpus_files(&dir).unwrap();
    assert!(files.len() >= 22, "{} files", files.len());
    let mut nan_only = 0;
    for file in files {
        let path = corpus_path_id(&file);
        let (cases, bad) = read_corpus(&file).unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        assert!(cases.len() >= 2048, "{path}: {} tiles", cases.len());
        for (c, _) in &cases {
            let oracle = c.extra["provenance"]["oracle"].as_str().unwrap_or_default();
            assert_eq!(oracle, "MMA-Sim 2.1.1 Hopper model, not hardware", "{path}");
        }
        let emu = Emulator::new(Model::load(&mmafuzz::model::default_name(&path)).unwrap());
        // (elements differing, of which both sides are NaN)
        let (differ, both_nan) = cases
            .par_iter()
            .map(|(c, d)| {
                let ours = emu.run(c).unwrap();
                let nan = |b: u64| c.c_fmt.decode(b).is_nan();
                ours.iter().zip(d).filter(|(a, b)| a != b).fold((0, 0), |(n, m), (&a, &b)| (n + 1, m + (nan(a) && nan(b)) as usize))
            })
            .reduce(|| (0, 0), |x, y| (x.0 + y.0, x.1 + y.1));
        assert_eq!(differ, both_nan, "{path}: {differ} elements differ from MMA-Sim, {both_nan} of them NaN against NaN");
        if path.contains(".f64.") {
            nan_only += (differ > 0) as usize;
        } else {
            assert_eq!(differ, 0, "{path}");
        }
    }
    // The FP64 files do hold NaN payloads the two sides disagree on: the replay can tell.
    assert_eq!(nan_only, 4);
}
