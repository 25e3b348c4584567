#!/usr/bin/env bash
# On the GPU machine: libFuzzer's GPU target on every mma.sync path at once, then a planted
# model difference found and minimised with libFuzzer's crash minimiser (what `cargo fuzz tmin`
# runs; there is no cargo there), then decoded. Binaries are carried gzipped:
#   target/dev/mmafuzz.gz (release CLI) and target/dev/gpu_path.gz (cargo fuzz build -O -s none
#   --no-trace-compares gpu_path, stripped).
#
#   bash scripts/gpu-fuzz.sh fuzz SECONDS     # every mma.sync path, SECONDS each, all at once
#   bash scripts/gpu-fuzz.sh plant SECONDS    # planted f16-accflush, then minimise and decode
#   bash scripts/gpu-fuzz.sh rate SECONDS [PATH]  # one path, 14 workers: tiles per second
# Logs and artifacts go to $OUT; corpora stay in fuzz/corpus/ for the next call.
set -uo pipefail
mode=$1; secs=$2
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
gunzip -c target/dev/mmafuzz.gz > /tmp/mmafuzz && chmod +x /tmp/mmafuzz
gunzip -c target/dev/gpu_path.gz > /tmp/gpu_path && chmod +x /tmp/gpu_path
PATHS="mma.m16n8k16.f32.f16.f16.f32 mma.m16n8k16.f32.bf16.bf16.f32 mma.m16n8k16.f16.f16.f16.f16 mma.m16n8k8.f32.tf32.tf32.f32 mma.m16n8k32.f32.e4m3.e4m3.f32 mma.m16n8k32.f32.e5m2.e5m2.f32 mma.m8n8k4.f64.f64.f64.f64"
seed() {  # $1 path: 256 generator tiles as 32 inputs, once
  local dir=fuzz/corpus/gpu_${1//./_}
  if [ ! -d "$dir" ]; then
    /tmp/mmafuzz gen --path "$1" --count 256 --seed 11 --out /tmp/seed-$1.jsonl >/dev/null
    /tmp/mmafuzz fuzz encode --path "$1" --in /tmp/seed-$1.jsonl --out "$dir" >/dev/null
  fi
  echo "$dir"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "$mode" = fuzz ]; then
  root=$PWD
  for p in $PATHS; do
    dir=$root/$(seed "$p")
    mkdir -p "$OUT/artifacts/$p" "$OUT/logs/$p"
    # Two workers per path share its corpus directory (7 paths x 2 = 14 of the 16 cores); each
    # path works in its own directory, where libFuzzer writes the workers' fuzz-N.log.
    (cd "$OUT/logs/$p" && MMAFUZZ_PATH=$p /tmp/gpu_path "$dir" -max_len=32768 -max_total_time="$secs" -jobs=2 -workers=2 \
      -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$p/" > main.log 2>&1) &
  done
  wait
  for p in $PATHS; do
    echo "== $p: corpus $(ls "fuzz/corpus/gpu_${p//./_}" | wc -l) files, artifacts: $(ls "$OUT/artifacts/$p" | wc -l)"
    for w in "$OUT/logs/$p"/fuzz-*.log; do
      grep -E "^#[0-9]+.*(pulse|NEW|REDUCE|DONE)" "$w" | tail -1
      grep -E "stat::(number_of_executed_units|average_exec_per_sec)" "$w"
    done
  done
  tar czf "$OUT/corpora.tgz" fuzz/corpus 2>/dev/null
elif [ "$mode" = rate ]; then
  p=${3:-mma.m16n8k16.f32.f16.f16.f32}
  dir=$PWD/$(seed "$p")
  mkdir -p "$OUT/rate"
  (cd "$OUT/rate" && MMAFUZZ_PATH=$p /tmp/gpu_path "$dir" -max_len=32768 -max_total_time="$secs" -jobs=14 -workers=14 \
    -print_final_stats=1 -artifact_prefix="$OUT/rate/" > main.log 2>&1)
  total=0
  for w in "$OUT"/rate/fuzz-*.log; do
    n=$(grep -h "stat::number_of_executed_units" "$w" | awk '{print $2}')
    total=$((total + ${n:-0}))
  done
  echo "$p: $total inputs in $secs s over 14 workers; corpus $(ls "$dir" | wc -l) files of $(du -sb "$dir" | cut -f1) bytes"
  grep -h "DONE" "$OUT"/rate/fuzz-*.log | head -3
elif [ "$mode" = plant ]; then
  p=mma.m16n8k16.f32.f16.f16.f32
  dir=$(seed "$p")
  mkdir -p "$OUT/plant" /tmp/plantcorpus
  cp "$dir"/* /tmp/plantcorpus/
  MMAFUZZ_PATH=$p MMAFUZZ_MODEL=fuzz/plants/f16-accflush.toml /tmp/gpu_path /tmp/plantcorpus -max_len=32768 \
    -max_total_time="$secs" -artifact_prefix="$OUT/plant/" > "$OUT/plant-fuzz.log" 2>&1
  art=$(ls "$OUT"/plant/crash-* | head -1)
  echo "artifact: $art ($(stat -c %s "$art") bytes)"
  MMAFUZZ_PATH=$p MMAFUZZ_MODEL=fuzz/plants/f16-accflush.toml /tmp/gpu_path -minimize_crash=1 -runs=3000 \
    -max_total_time=240 -exact_artifact_path="$OUT/plant/minimised" "$art" > "$OUT/plant-tmin.log" 2>&1
  ls -la "$OUT/plant/"
  /tmp/mmafuzz fuzz decode "$OUT/plant/minimised" --path $p --model fuzz/plants/f16-accflush.toml | tee "$OUT/plant-decoded.txt" | tail -30
fi
