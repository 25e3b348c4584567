#!/usr/bin/env bash
# The CPU side's speed on the GPU machine (after scripts/gpu-prepare.sh; with .gpu/ copied along):
#   bash scripts/gpu-speed.sh bench SECS              `mmafuzz bench --paths sm90` on one core: every
#                                                     path's model against MPFR, and on hunt tiles
#   bash scripts/gpu-speed.sh bench-vs SECS OLD.xz   the same with an older build (xz-compressed, in
#                                                     .gpu/) on another core at the same time, twice
#                                                     with the cores swapped; scripts/bench-compare.py
#                                                     prints both side by side
#   bash scripts/gpu-speed.sh hunt SECS SEED          CPU-engine hunts against the GPU on all cores,
#                                                     features sampled (default) and on every tile
#   bash scripts/gpu-speed.sh engines SECS SEED       the CPU engine and --engine gpu-tiles (the same
#                                                     emulator on GPU-made tiles) side by side, a table
#   bash scripts/gpu-speed.sh plant SECS SEED PLANT PATH
#                                                     a planted model (ENGINE=cpu|gpu-tiles, default
#                                                     cpu): found, minimised
#   bash scripts/gpu-speed.sh mmasim TILES MMASIM_TILES PATH...
#                                                     emulate from .npz on one core against MMA-Sim
#                                                     (scripts/bench-mmasim.py; wheel in .gpu/;
#                                                     REPEAT=N: best of N runs a side, default 3)
#   bash scripts/gpu-speed.sh emulate-vs OLD.xz TILES RUNS PATH...
#                                                     `emulate --d-only` from .npz on one core, an
#                                                     older build and this one alternating RUNS
#                                                     times each: every run's seconds, and whether
#                                                     both wrote the same d
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/speed-out}
mkdir -p "$out"
[ -x .gpu/mmafuzz ] || { gunzip -f .gpu/mmafuzz.gz && chmod +x .gpu/mmafuzz; }
bin=.gpu/mmafuzz
paths="mma.m16n8k16.f32.f16.f16.f32 mma.m16n8k16.f32.bf16.bf16.f32 mma.m16n8k16.f16.f16.f16.f16"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "cpu: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
case "$1" in
  bench)
    taskset -c 0 "$bin" bench --paths sm90 --seconds "$2" 2>/dev/null | tee "$out/bench-paths.txt" ;;
  bench-vs)
    xz -dc "$3" > "$out/mmafuzz-old" && chmod +x "$out/mmafuzz-old"
    for round in 1 2; do
      cores=(0 8)
      [ "$round" = 2 ] && cores=(8 0)
      taskset -c "${cores[0]}" "$bin" bench --paths "${PATHS:-sm90}" --seconds "$2" > "$out/bench-new-$round.txt" 2>/dev/null &
      taskset -c "${cores[1]}" "$out/mmafuzz-old" bench --paths "${PATHS:-sm90}" --seconds "$2" > "$out/bench-old-$round.txt" 2>/dev/null &
      wait
    done
    rm -f "$out/mmafuzz-old"
    python3 scripts/bench-compare.py "$out"/bench-old-*.txt -- "$out"/bench-new-*.txt | tee "$out/bench-vs.txt" ;;
  hunt)
    for p in $paths; do
      for every in ${FEATURES_EVERY:-16 1}; do
        echo "== $p, features of one tile in $every"
        "$bin" hunt --path "$p" --engine cpu --time "$2s" --seed "$3" --features-every "$every" --findings "$out/findings" 2>&1 | grep -E "^(this run|divergent)"
      done
    done ;;
  engines)
    printf '%-32s %14s %14s %7s  %s\n' path "cpu dot/s" "gpu-tiles dot/s" ratio "divergent (cpu, gpu-tiles)"
    for p in $paths; do
      for e in cpu gpu-tiles; do
        "$bin" hunt --path "$p" --engine "$e" --time "$2s" --seed "$3" --findings "$out/engines-$e" > "$out/engines-$e-$p.txt" 2>&1
      done
      rate() { grep -m1 '^this run' "$out/engines-$1-$p.txt" | sed -E 's/.* = ([0-9.e+]+) dot products.*/\1/'; }
      div() { grep -m1 '^divergent' "$out/engines-$1-$p.txt" | sed -E 's/divergent: //'; }
      printf '%-32s %14s %14s %6.1fx  %s; %s\n' "$p" "$(rate cpu)" "$(rate gpu-tiles)" "$(python3 -c "print($(rate gpu-tiles)/$(rate cpu))")" "$(div cpu)" "$(div gpu-tiles)"
    done ;;
  plant)
    "$bin" hunt --path "$5" --engine "${ENGINE:-cpu}" --model "$4" --time "$2s" --seed "$3" --per-class 1 --stop-at-first --findings "$out/plant" 2>&1 | grep -E "^(this run|divergent|first divergence|findings:)"
    for f in "$out"/plant/"$5"/*.json; do
      case "$f" in *state.json) ;; *) python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['class'], '|', d['summary']); print('  A:', d['a']['value'], ' B:', d['b']['value'])" "$f" ;; esac
    done ;;
  emulate-vs)
    old="$out/mmafuzz-old" tiles=$3 runs=$4
    xz -dc "$2" > "$old" && chmod +x "$old"
    shift 4
    for p in "$@"; do
      "$bin" gen --path "$p" --count "$tiles" --seed 1 --out "$out/vs-tiles.npz" > /dev/null 2>&1
      declare -A secs=([old]="" [new]="")
      for r in $(seq "$runs"); do
        for side in old new; do
          b=$bin; [ "$side" = old ] && b=$old
          start=$(date +%s.%N)
          RAYON_NUM_THREADS=1 taskset -c 0 "$b" emulate --model "sm90:$p" --in "$out/vs-tiles.npz" --out "$out/vs-d-$side.npz" --d-only > /dev/null 2>&1
          secs[$side]+=" $(python3 -c "print(f'{$(date +%s.%N) - $start:.3f}')")"
        done
      done
      same=differ; cmp -s "$out/vs-d-old.npz" "$out/vs-d-new.npz" && same="same d"
      printf '%-32s old:%s | new:%s | %s\n' "$p" "${secs[old]}" "${secs[new]}" "$same"
    done
    rm -f "$old" "$out"/vs-*.npz ;;
  mmasim)
    tiles=$2 mmasim_tiles=$3
    shift 3
    python3 scripts/bench-mmasim.py "$bin" --wheel .gpu/mmasim-2.1.1-py3-none-any.whl --tiles "$tiles" --mmasim-tiles "$mmasim_tiles" ${PER_TILE:+--per-tile "$PER_TILE"} ${REPEAT:+--repeat "$REPEAT"} --path "$@" ;;
esac
