#!/usr/bin/env bash
# The GPU hunt engine on the GPU machine (after scripts/gpu-prepare.sh; with .gpu/ copied along):
#   bash scripts/gpu-engine.sh check TILES OTHER            engine-check of the three engine paths,
#                                                           recordings in $OUT/corpus/engine
#   bash scripts/gpu-engine.sh hunt SECS CPU_SECS SEED      hunts with --engine gpu, then --engine cpu
#                                                           on the same machine (the ratio), each path
#   bash scripts/gpu-engine.sh plant SECS SEED PLANT PATH   a planted model with --engine gpu: found,
#                                                           minimised (findings in $OUT/plant)
#   bash scripts/gpu-engine.sh fuzz SECS                    the gpu_engine fuzz target (.gpu/gpu_engine.gz)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/engine-out}
mkdir -p "$out"
[ -x .gpu/mmafuzz ] || { gunzip -f .gpu/mmafuzz.gz && chmod +x .gpu/mmafuzz; }
bin=.gpu/mmafuzz
paths="mma.m16n8k16.f32.f16.f16.f32 mma.m16n8k16.f32.bf16.bf16.f32 mma.m16n8k16.f16.f16.f16.f16"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "cpu cores: $(nproc)"
case "$1" in
  check)
    mkdir -p "$out/corpus/engine"
    for p in $paths; do
      "$bin" engine-check --path "$p" --seed 20261125 --tiles "$2" --other-tiles "$3" --record "$out/corpus/engine/$p.json"
    done ;;
  hunt)
    for p in $paths; do
      "$bin" hunt --path "$p" --engine gpu --time "$2s" --seed "$4" --findings "$out/findings" 2>&1 | grep -v "^\[" | tail -12
      "$bin" hunt --path "$p" --engine cpu --time "$3s" --seed "$4" --findings "$out/findings" 2>&1 | grep -E "^(hunt|this run|divergent)"
    done ;;
  plant)
    "$bin" hunt --path "$5" --engine gpu --model "$4" --time "$2s" --seed "$3" --per-class 1 --stop-at-first --findings "$out/plant" 2>&1 | grep -E "^(this run|divergent|first divergence|findings:|GPU engine)"
    for f in "$out"/plant/"$5"/*.json; do
      case "$f" in *state.json) ;; *) python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['class'], '|', d['summary']); print('  A:', d['a']['value'], ' B:', d['b']['value'])" "$f" ;; esac
    done ;;
  fuzz)
    gunzip -c .gpu/gpu_engine.gz > /tmp/gpu_engine && chmod +x /tmp/gpu_engine
    "$bin" gen --path mma.m16n8k16.f32.f16.f16.f32 --count 64 --seed 1 --out /tmp/seed.jsonl
    mkdir -p /tmp/engine-corpus
    "$bin" fuzz encode --path mma.m16n8k16.f32.f16.f16.f32 --in /tmp/seed.jsonl --out /tmp/engine-corpus
    for p in $paths; do
      MMAFUZZ_PATH=$p /tmp/gpu_engine /tmp/engine-corpus -max_len=262144 -max_total_time="$2" -artifact_prefix="$out/engine-$p-" 2>&1 | tail -3
    done ;;
esac
