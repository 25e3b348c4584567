#!/usr/bin/env bash
# Every test: the repository's hygiene (scripts/hygiene.sh, first: it takes seconds), the Rust
# crate (`cargo test`) and the Python package (scripts/test-python.sh).
# `--workspace` resolves the Python package's dependency features too and the `suite` profile
# (Cargo.toml: the test profile by another name) is one maturin can build a library with, so
# the Python package's build reuses this one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/hygiene.sh
cargo test --workspace --profile suite
bash scripts/test-python.sh
