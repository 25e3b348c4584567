#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there; the release binary built here travels in .gpu/):
# hunts every mma.sync path against its sm90 model, all paths at once on the one GPU, for
# SECONDS each, writing findings and each hunt's state under findings/ of the copy that
# travelled. `first` also runs the planted check (the V100 hypothesis against the real GPU,
# 10 s) and the end-to-end throughput hunt (60 s, all cores, m16n8k16 f16); `resume` continues
# the saved hunts (bring their state back into findings/ first: scripts/gpu-hunt-collect.sh).
# Everything returns in $OUT as log.txt and findings.tgz.
#   here:   bash scripts/gpu-prepare.sh
#   there:  bash scripts/gpu-hunt.sh first 400     then     bash scripts/gpu-hunt.sh resume 300 [PATH-REGEX]
#           bash scripts/gpu-hunt.sh guided 120 [PATH-REGEX]   (guided hunts; populations in /tmp/mmafuzz-pop)
#   here:   bash scripts/gpu-hunt-collect.sh DIR    (unpacks DIR/findings.tgz over findings/)
set -uo pipefail
bin=${MMAFUZZ_BIN:-.gpu/mmafuzz}
# gpu-prepare.sh stages the binary gzipped (a smaller copy to the GPU machine).
[ -x "$bin" ] || { [ -f "$bin.gz" ] && gunzip -f "$bin.gz" && chmod +x "$bin"; }
mode=${1:-first}
secs=${2:-400}
only=${3:-}
out=${OUT:-/tmp/mmafuzz-out}
mkdir -p "$out" findings
log="$out/log.txt"
paths=$("$bin" devices | awk '/^  mma\..* yes$/ {print $1}' | grep -E "$only")
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  echo "cores: $(nproc)"
  if [ "$mode" = first ]; then
    echo "== planted: the V100 hypothesis against the real GPU, 10 s"
    "$bin" hunt --path mma.m16n8k16.f32.f16.f16.f32 --model v100 --against gpu --time 10s --per-class 1 --findings findings/planted
    echo "== throughput: sm90 model against the GPU, 60 s, every core, counting only"
    "$bin" hunt --path mma.m16n8k16.f32.f16.f16.f32 --against gpu --time 60s --per-class 0 --findings /tmp/throughput
  fi
  echo "== $secs s hunts, one per mma.sync path, all at once ($mode)"
  mode_args() {
    case "$mode" in
      resume) echo "--resume" ;;
      guided) echo "--guided --population /tmp/mmafuzz-pop/$1" ;;
    esac
  }
  for p in $paths; do
    # Two rayon threads each: seven hunts share sixteen cores. SIGINT after a grace period
    # stops a hunt cleanly if a batch or a minimisation runs long.
    RAYON_NUM_THREADS=2 timeout -s INT $((secs + 45)) "$bin" hunt --path "$p" --against gpu --time "${secs}s" --per-class 1 $(mode_args "$p") --findings findings > "$out/hunt-$p.txt" 2>&1 &
  done
  wait
  for p in $paths; do echo "---- $p"; cat "$out/hunt-$p.txt"; rm -f "$out/hunt-$p.txt"; done
} 2>&1 | tee "$log"
tar czf "$out/findings.tgz" findings
