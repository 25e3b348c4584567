#!/usr/bin/env bash
# On the GPU machine: the segment-K probes of scripts/segk-shapes.py (FPRev, `starts:32@`, only
# where cuBLASLt runs TF32 algorithm 43 with its run-time split), the GPU's cluster occupancy
# (scripts/probes/cluster-occupancy.cu), then D recorded (seed SEED) at every shape probed and at
# the shapes of JOBS.json ("-": none); all into one archive.
#
#     bash scripts/device-segk.sh OUT.tar SEED JOBS.json|- SPECS.txt [SPECS.txt ...]
set -u
[ $# -ge 4 ] || { echo "usage: bash scripts/device-segk.sh OUT.tar SEED JOBS.json|- SPECS.txt [SPECS.txt ...]" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "device-segk.sh: no NVIDIA GPU here (nvidia-smi not found)" >&2; exit 2; }
out=$1 seed=$2 jobs=$3; shift 3
work=$(mktemp -d)
nvcc -arch=sm_90a -o "$work/cluster-occupancy" scripts/probes/cluster-occupancy.cu && "$work/cluster-occupancy" > "$work/cluster-occupancy.json"
rm -f "$work/cluster-occupancy"
for specs in "$@"; do
    stem=$(basename "$specs" .txt)
    timeout 300 python3 scripts/torch-fprev.py "$work/$stem.json.xz" --specs "$specs" --only 'algoId=43 .*numSplitsK=-1' > "$work/$stem.log" 2>&1 &
done
wait
python3 scripts/segk-shapes.py "$work/probed.jobs.json" --probed "$work"/*.json.xz
set -- "$seed" "$work/probed.jobs.json"
[ "$jobs" = - ] || set -- "$@" "$seed" "$jobs"
timeout 240 bash scripts/device-gaps.sh "$work/records" "$@" > "$work/records.log" 2>&1
tar -C "$work" -cf "$out" .
rm -rf "$work"
