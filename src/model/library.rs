//! The model library shipped inside the binary, so `--model h100` works from any directory.
//! The files themselves live in `models/`, where they are read, cited and reviewed.

const EMBEDDED: &[(&str, &str)] = &[
    ("exact-rne", include_str!("../../models/exact-rne.toml")),
    ("fma-chain-rne", include_str!("../../models/fma-chain-rne.toml")),
    ("v100", include_str!("../../models/v100.toml")),
    ("v100-hickmann", include_str!("../../models/v100-hickmann.toml")),
    ("a100", include_str!("../../models/a100.toml")),
    ("h100", include_str!("../../models/h100.toml")),
];

/// Names of the embedded models, in library order.
pub fn embedded_model_names() -> Vec<&'static str> {
    EMBEDDED.iter().map(|(n, _)| *n).collect()
}

/// The TOML text of an embedded model.
pub fn embedded_model_source(name: &str) -> Option<&'static str> {
    EMBEDDED.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}
