#!/usr/bin/env bash
# A hunt spread over many GPU nodes with a Slurm job array: N shards of one hunt (the same seed
# and --tiles; shard I runs tiles I, I+N, I+2N, ... so together they run exactly the tiles of
# the unsharded hunt), then one job that merges their findings (`mmafuzz findings merge`).
#
#   bash scripts/slurm-hunt.sh submit N PATH TILES SEED OUT [extra hunt arguments]
#     runs:  sbatch --array=0-(N-1) --export=... scripts/slurm-hunt.sh shard
#            sbatch --dependency=afterany:<array job> scripts/slurm-hunt.sh merge
#   (array task I, one GPU):  mmafuzz hunt --path PATH --against gpu --tiles TILES --seed SEED
#                               --shard I/N --findings OUT/shard-I [extra]
#   (merge job):              mmafuzz findings merge --into OUT/findings OUT/shard-*
#
# MMAFUZZ (default: mmafuzz on PATH) is the binary; each shard's hunt state and log stay in
# OUT/shard-I. A shard's exit status 1 means it found divergences, so the merge runs afterany.
#SBATCH --job-name=mmafuzz-hunt
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=16
#SBATCH --time=04:00:00
set -euo pipefail
bin=${MMAFUZZ:-mmafuzz}
mode=${1:?usage: slurm-hunt.sh submit N PATH TILES SEED OUT [hunt args...] (shard and merge are the jobs it submits)}
case "$mode" in
  submit)
    n=${2:?N}; path=${3:?PATH}; tiles=${4:?TILES}; seed=${5:?SEED}; out=${6:?OUT}
    shift 6
    mkdir -p "$out"
    export MMAFUZZ_N=$n MMAFUZZ_PATH=$path MMAFUZZ_TILES=$tiles MMAFUZZ_SEED=$seed MMAFUZZ_OUT=$out MMAFUZZ_EXTRA="$*"
    array=$(sbatch --parsable --array=0-$((n - 1)) --output="$out/shard-%a.log" --export=ALL "$0" shard)
    merge=$(sbatch --parsable --dependency=afterany:"$array" --gres=gpu:0 --output="$out/merge.log" --export=ALL "$0" merge)
    echo "submitted shards $array (0-$((n - 1))) and merge $merge; results in $out/findings"
    ;;
  shard)
    i=${SLURM_ARRAY_TASK_ID:?run by sbatch --array}
    # shellcheck disable=SC2086 # MMAFUZZ_EXTRA holds separate arguments
    "$bin" hunt --path "$MMAFUZZ_PATH" --against gpu --tiles "$MMAFUZZ_TILES" --seed "$MMAFUZZ_SEED" \
      --shard "$i/$MMAFUZZ_N" --findings "$MMAFUZZ_OUT/shard-$i" $MMAFUZZ_EXTRA || [ $? -eq 1 ]
    ;;
  merge)
    "$bin" findings merge --into "$MMAFUZZ_OUT/findings" "$MMAFUZZ_OUT"/shard-*/
    ;;
  *) echo "unknown mode '$mode' (submit, shard, merge)" >&2; exit 2 ;;
esac
