#!/usr/bin/env bash
# Runs on the GPU machine: `mmafuzz discover` from the whole knob space for each PATH, at most
# SECONDS each; the discovered models and logs come back in $OUT/discover.tgz, the deciding tiles
# (with provenance) as corpus files inside it.
#   there:  bash scripts/gpu-discover.sh SECONDS PATH...
#   here:   compare DIR/discover/models/*.toml with models/sm90/;
#           bash scripts/gpu-corpus-collect.sh DIR/discover.tgz   (adds the deciding tiles)
set -uo pipefail
bin=${MMAFUZZ_BIN:-.gpu/mmafuzz}
# gpu-prepare.sh stages the binary gzipped (a smaller copy to the GPU machine).
[ -x "$bin" ] || { [ -f "$bin.gz" ] && gunzip -f "$bin.gz" && chmod +x "$bin"; }
secs=${1:?usage: gpu-discover.sh SECONDS PATH...}
shift
out=${OUT:-/tmp/mmafuzz-out}
work=$(mktemp -d)/discover
mkdir -p "$out" "$work/models" "$work/corpus"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for p in "$@"; do
    echo "== $p"
    start=$(date +%s%N)
    "$bin" discover --path "$p" --seconds "$secs" --write "$work/models/$p.toml" --corpus "$work/corpus"
    echo "  rc $?, $(( ($(date +%s%N) - start) / 1000000 )) ms with start-up"
  done
} 2>&1 | tee "$work/log.txt"
tar czf "$out/discover.tgz" -C "$(dirname "$work")" discover
