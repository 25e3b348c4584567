#!/usr/bin/env bash
# Runs on the GPU machine: brings up new instruction paths in one run. gpu-check (layouts,
# determinism) of each PATH, then for each PATH, JOBS at a time: TILES fresh tiles recorded (seed SEED),
# `discover` from the whole knob space (at most SECS seconds), and a validation hunt of
# HUNT seconds on tiles of another seed under the discovered model. Everything comes back in
# $OUT/bringup.tgz: record/<path>.jsonl.xz (for gpu-corpus-collect.sh), discover/<path>.toml,
# discover/<path>.jsonl.xz (deciding tiles), findings, and one log per path.
#   here:   bash scripts/gpu-prepare.sh
#   there:  [JOBS=3] [BUDGET=540] [CHECK=0] bash scripts/gpu-bringup.sh TILES SECS HUNT SEED PATH...
#   here:   bash scripts/gpu-corpus-collect.sh DIR/bringup.tgz; compare DIR/.../discover/*.toml
set -uo pipefail
bin=${MMAFUZZ_BIN:-.gpu/mmafuzz}
# gpu-prepare.sh stages the binary gzipped (a smaller copy to the GPU machine).
[ -x "$bin" ] || { [ -f "$bin.gz" ] && gunzip -f "$bin.gz" && chmod +x "$bin"; }
tiles=${1:?usage: gpu-bringup.sh TILES SECS HUNT SEED PATH...}
secs=${2:?}
hunt=${3:?}
seed=${4:?}
shift 4
out=${OUT:-/tmp/mmafuzz-out}
work=$(mktemp -d)/bringup
mkdir -p "$out" "$work/record" "$work/discover" "$work/findings" "$work/logs"
# CHECK=0 skips gpu-check (paths already layout-checked in an earlier run).
{ nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader; [ "${CHECK:-1}" = 0 ] || for p in "$@"; do timeout 120 "$bin" gpu-check --path "$p" | tail -n 1; done; } 2>&1 | tee "$work/logs/gpu-check.txt"
one() {
  p=$1
  {
    start=$(date +%s)
    "$bin" record --path "$p" --count "$tiles" --seed "$seed" --corpus "$work/record"
    echo "== record $(( $(date +%s) - start )) s"
    timeout $((secs + 60)) "$bin" discover --path "$p" --seconds "$secs" --write "$work/discover/$p.toml" --corpus "$work/discover"
    echo "== discover rc $? at $(( $(date +%s) - start )) s"
    model="$work/discover/$p.toml"
    [ -f "$model" ] || model="sm90:$p" # discover ran out of time: hunt the path's current model
    echo "== hunting with $model"
    "$bin" hunt --path "$p" --against gpu --model "$model" --time "${hunt}s" --seed $((seed + 1)) \
      --per-class 1 --findings "$work/findings"
    echo "== hunt rc $? at $(( $(date +%s) - start )) s"
  } > "$work/logs/$p.txt" 2>&1
  echo "$p done: $(grep -E '^== ' "$work/logs/$p.txt" | tr '\n' ' ')"
}
export -f one
export bin tiles secs hunt seed work
# The whole bring-up (gpu-check included) ends by BUDGET seconds from its start (default 540,
# for a run limited to 10 minutes), so the archive below is always written with whatever finished.
left=$(( ${BUDGET:-540} - SECONDS ))
[ "$left" -gt 0 ] || left=1
printf '%s\n' "$@" | timeout "$left" xargs -P "${JOBS:-3}" -I{} bash -c 'one {}'
tar czf "$out/bringup.tgz" -C "$(dirname "$work")" bringup
