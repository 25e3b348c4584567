#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there): the release binary built here is copied along in .gpu/.
# Checks every path's layout and determinism, records edge-biased tiles per path into a corpus
# (a quarter as many for the 64x8 wgmma tiles),
# times `mmafuzz run` and the GPU side alone, and leaves under $OUT one log and one corpus file
# (gzipped JSONL) per path: few files, each small, to copy back.
#   here:   bash scripts/gpu-prepare.sh          (builds and stages .gpu/mmafuzz)
#   there:  bash scripts/gpu-run.sh [tiles-per-path]
#   here:   bash scripts/gpu-collect.sh DIR       (copies DIR/*.jsonl.{xz,gz} into corpus/)
set -uo pipefail
bin=${MMAFUZZ_BIN:-.gpu/mmafuzz}
# gpu-prepare.sh stages the binary gzipped (a smaller copy to the GPU machine).
[ -x "$bin" ] || { [ -f "$bin.gz" ] && gunzip -f "$bin.gz" && chmod +x "$bin"; }
tiles=${1:-2048}
out=${OUT:-/tmp/mmafuzz-out}
log="$out/log.txt"
work=$(mktemp -d)
source "$(dirname "$0")/cublas-path.sh"
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  "$bin" devices
  "$bin" gpu-check --tiles 4096
  for p in $("$bin" devices | awk '/yes$/ {print $1}'); do
    n=$tiles
    case "$p" in
      wgmma.*) n=$((tiles / 4)) ;;    # a 64x8 tile holds four 16x8 tiles' data
      cublas.*) n=$((tiles / 16)) ;;  # a 32x32x64 GEMM holds sixteen
    esac
    "$bin" gen --path "$p" --count "$n" --seed 2026 --out "$work/$p.jsonl"
    "$bin" record --path "$p" --in "$work/$p.jsonl" --corpus "$work/corpus"
  done
  # Throughput of `mmafuzz run` on the m16n8k16 f16 path (generation excluded).
  "$bin" gen --path mma.m16n8k16.f32.f16.f16.f32 --count 262144 --seed 3 --out "$work/bench.jsonl"
  start=$(date +%s%N)
  "$bin" run --path mma.m16n8k16.f32.f16.f16.f32 --in "$work/bench.jsonl" --out "$work/bench-out.jsonl"
  end=$(date +%s%N)
  echo "run: 262144 tiles in $(( (end - start) / 1000000 )) ms (parse + launch + transfer + write)"
  "$bin" gpu-bench
} 2>&1 | tee "$log"
cp "$work"/corpus/*.jsonl.* "$out/"
