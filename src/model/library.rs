//! The model library shipped inside the binary, so `--model h100` works from any directory.
//! The files themselves live in `models/`, where they are read, cited and reviewed.

const EMBEDDED: &[(&str, &str)] = &[
    ("exact-rne", include_str!("../../models/exact-rne.toml")),
    ("fma-chain-rne", include_str!("../../models/fma-chain-rne.toml")),
    ("v100", include_str!("../../models/v100.toml")),
    ("v100-hickmann", include_str!("../../models/v100-hickmann.toml")),
    ("a100", include_str!("../../models/a100.toml")),
    ("h100", include_str!("../../models/h100.toml")),
    ("s32-exact", include_str!("../../models/s32-exact.toml")),
];

// Per-path models, named `ARCH:PATH` (files `models/<arch>/<path>.toml`): `sm90` measured on
// the H100, the others MMA-Sim's architectures (discovered against it, not hardware).
include!(concat!(env!("OUT_DIR"), "/embedded_arch.rs"));

/// Names of the embedded models, in library order (the per-path `ARCH:PATH` ones are listed by
/// [`embedded_arch_model_names`]).
pub fn embedded_model_names() -> Vec<&'static str> {
    EMBEDDED.iter().map(|(n, _)| *n).collect()
}

/// Names of the embedded per-path models, `ARCH:PATH`.
pub fn embedded_arch_model_names() -> Vec<&'static str> {
    EMBEDDED_ARCH.iter().map(|(n, _)| *n).collect()
}

/// The TOML text of an embedded model.
pub fn embedded_model_source(name: &str) -> Option<&'static str> {
    EMBEDDED.iter().chain(EMBEDDED_ARCH).find(|(n, _)| *n == name).map(|(_, s)| *s)
}
