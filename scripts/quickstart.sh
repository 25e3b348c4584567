#!/usr/bin/env bash
# From a fresh clone, one command: install the build needs, build the release binary, and run
# the main job on its embedded default: every experiment of the seed papers against every
# published model, then the example cases and FTTN's D = C - A·B GEMM under the H100 hypothesis.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release
bin=target/release/mmafuzz
echo "== seed-paper probes against the published models"
$bin probes
echo "== examples/cases.jsonl under the H100 hypothesis"
$bin emulate --model h100 --in examples/cases.jsonl
echo "== FTTN GEMM (m = n = k = 8192), 8 elements, each a full K chain"
$bin gemm --model h100 --elements 8
