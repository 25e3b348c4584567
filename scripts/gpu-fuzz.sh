#!/usr/bin/env bash
# On the GPU machine: libFuzzer's GPU target on every mma.sync path at once, then a planted
# model difference found and minimised with libFuzzer's crash minimiser (what `cargo fuzz tmin`
# runs; there is no cargo there), then decoded. Binaries are copied along gzipped:
#   target/dev/mmafuzz.gz (release CLI) and target/dev/gpu_path.gz (cargo fuzz build -O -s none
#   --no-trace-compares gpu_path, stripped).
#
#   bash scripts/gpu-fuzz.sh fuzz SECONDS [WORKERS]  # every mma.sync path, SECONDS each, all at
#                                                    # once, WORKERS (2) libFuzzer workers each
#   bash scripts/gpu-fuzz.sh plant SECONDS    # planted f16-accflush, then minimise and decode
#   bash scripts/gpu-fuzz.sh rate SECONDS [PATH] [WORKERS]  # one path (14 workers): tiles per second
#   bash scripts/gpu-fuzz.sh scale SECONDS [PATH]  # rate with 1, 2, 7 and 14 workers, and one
#                                                  # worker with a model where the GPU stood
# Binaries built without libFuzzer's code coverage (`cargo build --release --bin gpu_path` in
# fuzz/): the arithmetic situations are the coverage, and the model runs ~1.4x faster.
# Logs and artifacts go to $OUT; corpora stay in fuzz/corpus/ for the next run.
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
  workers=${3:-2}
  root=$PWD
  for p in $PATHS; do
    dir=$root/$(seed "$p")
    mkdir -p "$OUT/artifacts/$p" "$OUT/logs/$p"
    # The workers of a path share its corpus directory (7 paths x 2 = 14 of the 16 cores); each
    # path works in its own directory, where libFuzzer writes the workers' fuzz-N.log.
    (cd "$OUT/logs/$p" && MMAFUZZ_PATH=$p /tmp/gpu_path "$dir" -max_len=$((1 << 18)) -max_total_time="$secs" -jobs=$workers -workers=$workers \
      -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$p/" > main.log 2>&1) &
  done
  wait
  echo "| path | workers | inputs | tiles per input | tiles/s | situations reached (libFuzzer ft) | corpus files | divergences (artifacts) |"
  echo "|---|---|---|---|---|---|---|---|"
  for p in $PATHS; do
    logs="$OUT/logs/$p"
    inputs=$(grep -h "stat::number_of_executed_units" "$logs"/fuzz-*.log | awk '{s+=$2} END {print s+0}')
    per=$(grep -h "^mmafuzz: .* tiles of" "$logs"/fuzz-*.log | awk '{i=$2; t=$4} END {if (i) printf "%.2f", t/i; else print 0}')
    ft=$(grep -hoE "ft: [0-9]+" "$logs"/fuzz-*.log | awk '{if ($2>m) m=$2} END {print m+0}')
    tps=$(awk -v n="$inputs" -v p="$per" -v s="$secs" 'BEGIN {printf "%.0f", n*p/s}')
    echo "| $p | $workers | $inputs | $per | $tps | $ft | $(ls "fuzz/corpus/gpu_${p//./_}" | wc -l) | $(ls "$OUT/artifacts/$p" | wc -l) |"
  done
  tar czf "$OUT/corpora.tgz" fuzz/corpus 2>/dev/null
elif [ "$mode" = rate ] || [ "$mode" = scale ]; then
  p=${3:-mma.m16n8k16.f32.f16.f16.f32}
  dir=$PWD/$(seed "$p")
  rate() {  # $1 workers, $2 label: inputs and tiles (the target says tiles every 2^14 inputs)
    local run="$OUT/rate-$2"
    mkdir -p "$run"
    (cd "$run" && MMAFUZZ_PATH=$p /tmp/gpu_path "$dir" -max_len=$((1 << 18)) -max_total_time="$secs" -jobs="$1" -workers="$1" \
      -print_final_stats=1 -artifact_prefix="$run/" > main.log 2>&1)
    local inputs=0 per
    for w in "$run"/fuzz-*.log; do
      n=$(grep -h "stat::number_of_executed_units" "$w" | awk '{print $2}')
      inputs=$((inputs + ${n:-0}))
    done
    per=$(grep -h "^mmafuzz: .* tiles of" "$run"/fuzz-*.log | awk '{i+=$2; t+=$4} END {if (i) printf "%.2f", t/i; else print "?"}')
    echo "$p [$2]: $1 worker(s), $inputs inputs in $secs s = $((inputs / secs)) inputs/s, $per tiles per input"
  }
  if [ "$mode" = rate ]; then
    rate "${4:-14}" "gpu-${4:-14}"
  else
    for w in 1 2 7 14; do rate $w gpu-$w; done
    MMAFUZZ_AGAINST=sm90:$p rate 1 model-1
  fi
  echo "corpus $(ls "$dir" | wc -l) files of $(du -sb "$dir" | cut -f1) bytes"
elif [ "$mode" = plant ]; then
  p=mma.m16n8k16.f32.f16.f16.f32
  dir=$(seed "$p")
  mkdir -p "$OUT/plant" /tmp/plantcorpus
  cp "$dir"/* /tmp/plantcorpus/
  MMAFUZZ_PATH=$p MMAFUZZ_MODEL=fuzz/plants/f16-accflush.toml /tmp/gpu_path /tmp/plantcorpus -max_len=$((1 << 18)) \
    -max_total_time="$secs" -artifact_prefix="$OUT/plant/" > "$OUT/plant-fuzz.log" 2>&1
  art=$(ls "$OUT"/plant/crash-* | head -1)
  echo "artifact: $art ($(stat -c %s "$art") bytes)"
  MMAFUZZ_PATH=$p MMAFUZZ_MODEL=fuzz/plants/f16-accflush.toml /tmp/gpu_path -minimize_crash=1 -runs=3000 \
    -max_total_time=240 -exact_artifact_path="$OUT/plant/minimised" "$art" > "$OUT/plant-tmin.log" 2>&1
  ls -la "$OUT/plant/"
  /tmp/mmafuzz fuzz decode "$OUT/plant/minimised" --path $p --model fuzz/plants/f16-accflush.toml | tee "$OUT/plant-decoded.txt" | tail -30
fi
