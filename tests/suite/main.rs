//! The integration tests, one module per subject, built as one test binary (one link of the
//! crate instead of one per subject). Run one subject with `cargo test --test suite NAME::`.

mod blockscale;
mod cli;
mod composed_models;
mod corpus_cmds;
mod corpus_replay;
mod engine_replay;
mod exact_vs_mpfr;
mod example_model;
mod external;
mod fast_path;
mod guided;
mod h200_kernels;
mod hunt;
mod hygiene;
mod infer;
mod lane_inference;
mod library_replay;
mod library_trace;
mod mixed_fp8;
mod mmasim_corpus;
mod mmasim_models;
mod npz;
mod seed_probes;
mod shard;
mod staged_pairwise;
mod widened_d;
