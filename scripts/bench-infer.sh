#!/usr/bin/env bash
# Times `mmafuzz infer` over a 10,000-tile corpus of the m16n8k16 f16 path: tiles from the
# hunt's generators, outputs from the path's current model standing in for the GPU (the GPU
# corpus holds about 8,000 tiles of this path: `mmafuzz infer --path P` times that). Prints one
# table row.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/mmafuzz
cargo build --release -q
p=mma.m16n8k16.f32.f16.f16.f32
tiles=${1:-10000}
dir=$(mktemp -d)
"$bin" gen --path $p --count "$tiles" --seed 5 | "$bin" emulate --model "sm90:$p" | gzip > "$dir/$p.jsonl.gz"
start=$(date +%s.%N)
"$bin" infer --path $p --corpus "$dir" --findings "$dir/none" > "$dir/out.txt" || true
end=$(date +%s.%N)
printf '%-32s %8s %12s %10s\n' path tiles survivors seconds
printf '%-32s %8s %12s %10.1f\n' $p "$tiles" "$(grep -o 'full survivors: [0-9]*' "$dir/out.txt" | awk '{print $3}')" "$(echo "$end - $start" | bc)"
rm -rf "$dir"
