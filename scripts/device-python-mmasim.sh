#!/usr/bin/env bash
# On the GPU machine (no Rust, python3 with torch): the Python package and MMA-Sim as an
# external oracle, in one run. Copy along a directory (default target/devpy) holding the
# stripped mmafuzz binary (or mmafuzz.gz), the package's wheel (maturin build) and MMA-Sim's wheel.
#
#   bash scripts/device-python-mmasim.sh [DIR] [STEPS]     (STEPS: comma list, default all)
#
# Steps, each logged to $OUT/<step>.log:
#   pytest    the package's tests on this machine's Python (the abi3 wheel installed with --no-deps)
#   torch     examples/python/check_torch.py: torch.mm/addmm on fresh inputs vs mmafuzz.matmul
#   replay    MMA-Sim (REPLAY_ARCH, default Hopper) against the H100's recorded tiles, every
#             path it has (REPLAY_PATHS to choose; REPLAY_FLAGS e.g. --any-nan)
#   hunt      our sm90 models against MMA-Sim (Hopper) on fresh edge-biased tiles
#   record    MMA-Sim's answers into $OUT/mmasim/<arch>/ (ARCHS: comma list of its architectures;
#             no --instruction and no --nan-as: for the Hopper paths; the models step records the
#             other architectures' answers as their models were checked, MODEL_FLAGS=--record-missing)
#   devcheck  MMA-Sim on the GPU (mmasim-oracle.py --device cuda) against its CPU answers recorded
#             in corpus/mmasim/<arch>/ (DEVCHECK_ARCHS, default Blackwell and RTX Blackwell; files
#             whose path contains DEVCHECK_FILTER, default "block"): the replay's table, and the
#             time of the same replay with the oracle on the CPU (THREADS threads) and on the GPU
#   models    scripts/mmasim-models.py (a model per MMA-Sim architecture and instruction, found
#             by discover against MMA-Sim and hunted) for MODEL_ARCHS (comma list, default
#             Blackwell and RTX Blackwell), MODEL_JOBS pairs at once (default 14); the models,
#             each pair's work (deciding tiles, findings, logs) and the results come back in
#             $OUT/models.tgz, MMA-Sim's answers recorded into corpus/mmasim in $OUT/records.tgz
set -uo pipefail
dir=${1:-target/devpy}
steps=${2:-pytest,torch,replay,hunt,record}
out=${OUT:-/tmp/out}
mkdir -p "$out"
site=$(mktemp -d)
bin="$dir/mmafuzz"
if [ -f "$dir/mmafuzz.gz" ]; then  # copied along compressed, to keep the copy small
  bin="$site/bin/mmafuzz"; mkdir -p "$site/bin"
  gunzip -c "$dir/mmafuzz.gz" > "$bin"
fi
chmod +x "$bin"
# The package's wheel is needed by the pytest and torch steps only: install what was copied along.
python3 -m pip install --no-deps --no-index --target "$site" $(ls "$dir"/mmafuzz-*.whl "$dir"/mmasim-*.whl 2>/dev/null) > "$out/install.log" 2>&1 || { cat "$out/install.log"; exit 1; }
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
python3 -c "import mmafuzz, sys; print('mmafuzz', mmafuzz.__file__, sys.version.split()[0])" 2>&1 | tee -a "$out/install.log"
oracle() { echo "external-npz:python3 scripts/mmasim-oracle.py --arch '$1' --protocol npz --threads ${THREADS:-16} --batch 4096"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
has() { [[ ",$steps," == *",$1,"* ]]; }

# Hopper paths MMA-Sim 2.1.1 models too (its lists in mmasim/nv_ptx/isa_*.py), by our names.
HOPPER_PATHS="mma.m16n8k16.f32.f16.f16.f32 mma.m16n8k16.f16.f16.f16.f16 mma.m16n8k16.f32.bf16.bf16.f32
mma.m16n8k8.f32.f16.f16.f32 mma.m16n8k8.f16.f16.f16.f16 mma.m16n8k8.f32.bf16.bf16.f32
mma.m16n8k8.f32.tf32.tf32.f32 mma.m16n8k4.f32.tf32.tf32.f32
mma.m16n8k32.f32.e4m3.e4m3.f32 mma.m16n8k32.f32.e5m2.e5m2.f32 mma.m16n8k32.f32.e4m3.e5m2.f32 mma.m16n8k32.f32.e5m2.e4m3.f32
mma.m16n8k32.f16.e4m3.e4m3.f16 mma.m16n8k32.f16.e5m2.e5m2.f16
mma.m16n8k16.f32.e4m3.e4m3.f32 mma.m16n8k16.f32.e5m2.e5m2.f32 mma.m16n8k16.f16.e4m3.e4m3.f16 mma.m16n8k16.f16.e5m2.e5m2.f16
mma.m8n8k4.f64.f64.f64.f64 mma.m16n8k4.f64.f64.f64.f64 mma.m16n8k8.f64.f64.f64.f64 mma.m16n8k16.f64.f64.f64.f64
wgmma.m64n8k16.f32.f16.f16 wgmma.m64n8k16.f16.f16.f16 wgmma.m64n8k16.f32.bf16.bf16 wgmma.m64n8k8.f32.tf32.tf32
wgmma.m64n8k32.f32.e4m3.e4m3 wgmma.m64n8k32.f32.e5m2.e5m2 wgmma.m64n8k32.f32.e4m3.e5m2 wgmma.m64n8k32.f32.e5m2.e4m3
wgmma.m64n8k32.f16.e4m3.e4m3 wgmma.m64n8k32.f16.e5m2.e5m2"

if has pytest; then
  python3 -m pytest -q python/tests > "$out/pytest.log" 2>&1; echo "pytest rc=$?" | tee -a "$out/pytest.log"
fi
if has torch; then
  python3 examples/python/check_torch.py --shapes ${SHAPES:-12} --seed ${SEED:-7} > "$out/torch.log" 2>&1; echo "check_torch rc=$?" | tee -a "$out/torch.log"
  tail -1 "$out/torch.log" | head -2
fi
if has replay; then
  mkdir -p "$out/replay"
  for p in ${REPLAY_PATHS:-$HOPPER_PATHS}; do
    timeout 120 "$bin" replay --models "sm90:$p" --filter "$p" --oracle "$(oracle "${REPLAY_ARCH:-Hopper}")" ${REPLAY_FLAGS:-} > "$out/replay/$p.log" 2>&1
    grep -A2 "^$p " "$out/replay/$p.log" | cut -c1-400
  done > "$out/replay.log" 2>&1
fi
if has hunt; then
  for p in ${HUNT_PATHS:-$HOPPER_PATHS}; do
    echo "== $p"
    timeout ${HUNT_S:-20} "$bin" hunt --path "$p" --model "sm90:$p" --against "$(oracle Hopper)" --tiles ${HUNT_TILES:-100000} --per-class 2 \
      --findings "$out/mmasim-findings/hopper" 2>&1 | grep -E "divergent|tiles/s|error|findings" | tail -4
  done > "$out/hunt.log" 2>&1
fi
if has record; then
  IFS=',' read -ra archs <<< "${ARCHS:-Hopper}"
  for arch in "${archs[@]}"; do
    slug=$(echo "$arch" | tr 'A-Z ' 'a-z-')
    for p in ${RECORD_PATHS:-$HOPPER_PATHS}; do
      timeout 120 "$bin" record --path "$p" --count ${RECORD_TILES:-2048} --seed 7 --corpus "$out/mmasim/$slug" \
        --oracle "$(oracle "$arch")" --label "MMA-Sim 2.1.1 $arch model, not hardware" 2>&1 | grep -v "^serve" | tail -1
    done
  done > "$out/record.log" 2>&1
fi
if has devcheck; then
  IFS=',' read -ra archs <<< "${DEVCHECK_ARCHS:-Blackwell,RTX Blackwell}"
  for arch in "${archs[@]}"; do
    slug=$(echo "$arch" | tr 'A-Z ' 'a-z-')
    for dev in cuda cpu; do
      start=$(date +%s%N)
      timeout ${DEVCHECK_S:-200} "$bin" replay --corpus "corpus/mmasim/$slug" --models exact-rne --filter "${DEVCHECK_FILTER:-block}" \
        --oracle "$(oracle "$arch") --device $dev" > "$out/devcheck-$slug-$dev.log" 2>&1
      rc=$?
      echo "$arch, MMA-Sim on $dev: rc $rc, $(( ($(date +%s%N) - start) / 1000000 )) ms"
    done
    head -80 "$out/devcheck-$slug-cuda.log" | cut -c1-220
  done > "$out/devcheck.log" 2>&1
  grep -E "MMA-Sim on" "$out/devcheck.log"
fi
if has models; then
  stamp=$(mktemp); sleep 1
  IFS=',' read -ra archs <<< "${MODEL_ARCHS:-Blackwell,RTX Blackwell}"
  margs=(); for a in "${archs[@]}"; do margs+=(--arch "$a"); done
  RAYON_NUM_THREADS=${MODEL_THREADS:-2} timeout ${MODEL_SECONDS:-520} python3 scripts/mmasim-models.py --mmafuzz "$bin" --python python3 "${margs[@]}" \
    --jobs ${MODEL_JOBS:-14} --out "$out/models-work" ${MODEL_FLAGS:-} > "$out/models.log" 2>&1
  echo "models rc=$?" >> "$out/models.log"; tail -60 "$out/models.log"
  # The pairs' deciding tiles and findings come back with their models (models-work/<arch>/<path>/
  # corpus: `infer --corpus` can pick among a discovery's survivors here, without the GPU machine).
  tar czf "$out/models.tgz" models findings/mmasim -C "$out" models-work && rm -rf "${out:?}/models-work"
  # MMA-Sim's answers recorded by this step (the tar above leaves the corpus files out).
  find corpus/mmasim \( -name '*.jsonl.gz' -o -name '*.jsonl.xz' \) -newer "$stamp" -print0 | tar czf "$out/records.tgz" --null -T -
fi
# Few files come back from the machine: the recorded corpus and the findings as one archive each.
for d in mmasim mmasim-findings; do
  [ -d "$out/$d" ] && tar czf "$out/$d.tgz" -C "$out" "$d" && rm -rf "${out:?}/$d"
done
exit 0
