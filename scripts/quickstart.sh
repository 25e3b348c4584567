#!/usr/bin/env bash
# From a fresh clone, one command: install the build needs, build the release binary, and run
# the main job on its embedded default: every experiment of the seed papers against every
# published model, then a 30-second hunt of the m16n8k16 f16 path's model against the GPU
# (against the exact value where there is no GPU), findings in target/quickstart-findings/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release
bin=target/release/mmafuzz
echo "== seed-paper probes against the published models"
$bin probes
echo "== 30-second hunt: sm90:mma.m16n8k16.f32.f16.f16.f32 against the GPU, or the exact value"
# Exit status 1 means divergences were found, which is the point here.
$bin hunt --path mma.m16n8k16.f32.f16.f16.f32 --time 30s --findings target/quickstart-findings || [ $? -eq 1 ]
echo "findings: target/quickstart-findings/mma.m16n8k16.f32.f16.f16.f32/"
