#!/usr/bin/env bash
# Runs on the GPU machine: records TILES fresh edge-biased tiles of each PATH (default: every
# mma.sync and wgmma path; cuBLAS paths record whole GEMMs) with seed SEED (tile i of seed s is
# `gen::case_at(s, i)`, so the corpus stores each by reference) into new corpus files, packed as
# $OUT/record.tgz with a log.
#   here:   bash scripts/gpu-prepare.sh
#   there:  bash scripts/gpu-record.sh [TILES] [SEED] [PATH...]
#   here:   bash scripts/gpu-corpus-collect.sh DIR/record.tgz   (appends them to corpus/)
set -uo pipefail
bin=${MMAFUZZ_BIN:-.gpu/mmafuzz}
# gpu-prepare.sh stages the binary gzipped (a smaller copy to the GPU machine).
[ -x "$bin" ] || { [ -f "$bin.gz" ] && gunzip -f "$bin.gz" && chmod +x "$bin"; }
tiles=${1:-5000}
seed=${2:-20261122}
shift 2 2>/dev/null || shift $#
paths=("$@")
[ ${#paths[@]} -eq 0 ] && paths=($("$bin" devices | awk '/yes$/ {print $1}' | grep -v '^cublas'))
source "$(dirname "$0")/cublas-path.sh"
out=${OUT:-/tmp/mmafuzz-out}
work=$(mktemp -d)
mkdir -p "$out" "$work/record"
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  for p in "${paths[@]}"; do
    start=$(date +%s%N)
    "$bin" gen --path "$p" --count "$tiles" --seed "$seed" --out "$work/$p.jsonl" &&
      "$bin" record --path "$p" --in "$work/$p.jsonl" --corpus "$work/record"
    echo "  $p: $(( ($(date +%s%N) - start) / 1000000 )) ms"
    rm -f "$work/$p.jsonl"
  done
} 2>&1 | tee "$out/record-log.txt"
tar czf "$out/record.tgz" -C "$work" record
