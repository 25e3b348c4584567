#!/usr/bin/env bash
# Runs on the GPU machine: hunts each path whose model reproduces its whole corpus against the
# GPU for SECONDS, with fresh seeds (tiles the corpus never saw): a model that is really the
# hardware's finds nothing. Findings, if any, come back in $OUT/validate.tgz.
#   there:  bash scripts/gpu-validate.sh [SECONDS]
set -uo pipefail
bin=${MMAFUZZ_BIN:-.gpu/mmafuzz}
secs=${1:-60}
out=${OUT:-/tmp/mmafuzz-out}
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for p in mma.m16n8k16.f32.f16.f16.f32 mma.m16n8k16.f16.f16.f16.f16 mma.m8n8k4.f64.f64.f64.f64 \
           wgmma.m64n8k16.f32.f16.f16 wgmma.m64n8k16.f16.f16.f16 wgmma.m64n8k32.f32.e4m3.e4m3 wgmma.m64n8k32.f32.e5m2.e5m2; do
    echo "== $p"
    "$bin" hunt --path "$p" --against gpu --time "${secs}s" --seed 777 --per-class 1 --findings /tmp/validate \
      | grep -E "this run|divergent:|minimised cases|findings:"
  done
} 2>&1 | tee "$out/validate-log.txt"
[ -d /tmp/validate ] && tar czf "$out/validate.tgz" -C /tmp validate
