#!/usr/bin/env bash
# Every test: the Rust crate (`cargo test`) and the Python package (scripts/test-python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test
bash scripts/test-python.sh
