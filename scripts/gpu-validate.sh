#!/usr/bin/env bash
# Runs on the GPU machine: hunts each path whose model reproduces its whole corpus against the
# GPU for SECONDS, with fresh seeds (tiles the corpus never saw): a model that is really the
# hardware's finds nothing. Findings, if any, come back in $OUT/validate.tgz.
#   there:  bash scripts/gpu-validate.sh [SECONDS] [SEED] [PATH ...]   (default: the exact paths)
set -uo pipefail
bin=${MMAFUZZ_BIN:-.gpu/mmafuzz}
# gpu-prepare.sh stages the binary gzipped (a smaller copy to the GPU machine).
[ -x "$bin" ] || { [ -f "$bin.gz" ] && gunzip -f "$bin.gz" && chmod +x "$bin"; }
secs=${1:-60}
seed=${2:-777}
shift 2 2>/dev/null || shift $#
paths=("$@")
[ ${#paths[@]} -eq 0 ] && paths=($("$bin" devices | awk '/yes$/ {print $1}' | grep -v '^cublas'))
out=${OUT:-/tmp/mmafuzz-out}
source "$(dirname "$0")/cublas-path.sh"
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for p in "${paths[@]}"; do
    echo "== $p"
    "$bin" hunt --path "$p" --against gpu --time "${secs}s" --seed "$seed" --per-class 1 --findings /tmp/validate \
      | grep -E "this run|divergent:|minimised cases|findings:"
  done
} 2>&1 | tee "$out/validate-log.txt"
[ -d /tmp/validate ] && tar czf "$out/validate.tgz" -C /tmp validate
