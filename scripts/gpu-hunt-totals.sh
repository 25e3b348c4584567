#!/usr/bin/env bash
# Fresh-tile hunts of every instruction path against the GPU, each run logged in the results
# log (FINDINGS/hunts.jsonl) that `mmafuzz report` totals into report/hunts.md.
#   here:   bash scripts/gpu-prepare.sh            (the release binary, xz-compressed in .gpu/)
#   there:  bash scripts/gpu-hunt-totals.sh ENGINE_SECS PATH_SECS SEED [PARALLEL]
#           ENGINE_SECS per path of the GPU engine (`--engine gpu`: tiles made and compared on
#           the GPU), then PATH_SECS per path for every path the GPU runs (`--against gpu`:
#           tiles made on the CPU, the model on the CPU), PARALLEL hunts at once.
#   here:   mmafuzz findings merge --into findings DIR/findings; cat DIR/hunts.jsonl >> findings/hunts.jsonl
# Writes OUT/hunts.jsonl, OUT/log.txt and OUT/findings.tgz (any divergence, minimised); OUT is
# $OUT, or target/hunt-totals.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=.gpu/mmafuzz
# The binary travels compressed: xz or gzip.
[ -x "$bin" ] || { if [ -f "$bin.xz" ]; then xz -dc "$bin.xz" > "$bin"; else gunzip -c "$bin.gz" > "$bin"; fi; chmod +x "$bin"; }
engine_secs=${1:?ENGINE_SECS}
path_secs=${2:?PATH_SECS}
seed=${3:?SEED}
parallel=${4:-8}
out=${OUT:-target/hunt-totals}
found="$out/findings"
mkdir -p "$found"
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  echo "cores: $(nproc)"
  for p in mma.m16n8k16.f32.f16.f16.f32 mma.m16n8k16.f32.bf16.bf16.f32 mma.m16n8k16.f16.f16.f16.f16; do
    echo "== --engine gpu, $p, ${engine_secs} s"
    "$bin" hunt --path "$p" --engine gpu --time "${engine_secs}s" --seed "$seed" --per-class 1 --findings "$found" 2>&1 | grep -E "^(this run|divergent|findings:)"
  done
  paths=$("$bin" devices | awk '$NF == "yes" && $1 ~ /^(mma|wgmma)\./ {print $1}')
  echo "== --against gpu, $(echo "$paths" | wc -w) paths, ${path_secs} s each, $parallel at once"
  cores=$(( $(nproc) / parallel )); [ "$cores" -ge 1 ] || cores=1
  echo "$paths" | xargs -P "$parallel" -I{} sh -c "RAYON_NUM_THREADS=$cores timeout -s INT $((path_secs + 60)) $bin hunt --path {} --against gpu --time ${path_secs}s --seed $seed --per-class 1 --findings $found > $out/{}.txt 2>&1; echo \"{}: \$(grep -E '^divergent' $out/{}.txt | head -1)\"; rm -f $out/{}.txt"
} 2>&1 | tee "$out/log.txt"
cp "$found/hunts.jsonl" "$out/hunts.jsonl"
tar czf "$out/findings.tgz" --exclude=hunts.jsonl -C "$out" findings
rm -rf "$found"
