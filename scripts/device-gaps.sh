#!/usr/bin/env bash
# On the GPU machine: record D and the logged kernel of the GEMMs in shape files written by
# scripts/gap-shapes.py, each path of each file in its own process (the operands are made on
# the CPU, so the paths run side by side). Writes DIR/<file stem>.<path>.jsonl.gz and DIR/record.log.
#
#     bash scripts/device-gaps.sh DIR SEED SHAPES.json [SEED SHAPES.json ...]
set -u
[ $# -ge 3 ] || { echo "usage: bash scripts/device-gaps.sh DIR SEED SHAPES.json [SEED SHAPES.json ...]" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "device-gaps.sh: no NVIDIA GPU here (nvidia-smi not found)" >&2; exit 2; }
out=$1; shift
mkdir -p "$out"
scratch=$(mktemp -d)
while [ $# -ge 2 ]; do
    seed=$1 shapes=$2; shift 2
    stem=$(basename "$shapes" .json)
    for path in $(python3 -c "import json,sys; print(' '.join(sorted({j['path'] for j in json.load(open(sys.argv[1]))})))" "$shapes"); do
        dir="$scratch/$stem.$path"; mkdir -p "$dir"
        python3 scripts/torch-lib.py record "$dir/records.jsonl.gz" "$seed" 0 0 "$path" --shapes "$shapes" > "$dir/log" 2>&1 &
    done
done
wait
for dir in "$scratch"/*/; do
    name=$(basename "$dir")
    mv "$dir/records.jsonl.gz" "$out/$name.jsonl.gz" 2>/dev/null || echo "$name: no records" >&2
    sed "s/^/$name: /" "$dir/log"
done | tee "$out/record.log"
rm -rf "$scratch"
