#!/usr/bin/env bash
# On the GPU machine: record D and the logged kernel of the GEMMs in shape files written by
# scripts/gap-shapes.py, each path of each file in its own process (the operands are made on
# the CPU, so the paths run side by side). Writes $OUT/gaps/<file stem>.<path>.jsonl.gz and a log.
#
#     bash scripts/device-gaps.sh SEED SHAPES.json [SEED SHAPES.json ...]
set -u
[ $# -ge 2 ] || { echo "usage: bash scripts/device-gaps.sh SEED SHAPES.json [SEED SHAPES.json ...]" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "device-gaps.sh: no NVIDIA GPU here (nvidia-smi not found)" >&2; exit 2; }
mkdir -p "$OUT/gaps"
while [ $# -ge 2 ]; do
    seed=$1 shapes=$2; shift 2
    stem=$(basename "$shapes" .json)
    for path in $(python3 -c "import json,sys; print(' '.join(sorted({j['path'] for j in json.load(open(sys.argv[1]))})))" "$shapes"); do
        dir="$OUT/gaps/work/$stem.$path"; mkdir -p "$dir"
        python3 scripts/torch-lib.py record "$dir/records.jsonl.gz" "$seed" 0 0 "$path" --shapes "$shapes" > "$dir/log" 2>&1 &
    done
done
wait
for dir in "$OUT"/gaps/work/*/; do
    name=$(basename "$dir")
    mv "$dir/records.jsonl.gz" "$OUT/gaps/$name.jsonl.gz" 2>/dev/null || echo "$name: no records" >&2
    sed "s/^/$name: /" "$dir/log"
done | tee "$OUT/gaps/record.log"
rm -rf "$OUT/gaps/work"
