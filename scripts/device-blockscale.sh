#!/usr/bin/env bash
# On the GPU machine (python3 with torch; no Rust): block-scaled MMAs against MMA-Sim, a quick
# look before discovery. For each block-scaled path given (default: one of each adder), hunts
# TILES tiles (default 2000) of a starting model against MMA-Sim and keeps the findings:
#   - kind::mxf8f6f4 (K = 32, MMA-Sim's ST_FDPA): the architecture's unscaled model of the pair;
#   - FP4 at K = 64 (GST_FDPA): a model written from MMA-Sim's description (runs of 16 summed
#     exactly, keyed by their scales, F = 35, round toward zero into f32, infinity past it).
#
#   bash scripts/device-blockscale.sh [DIR] [PATH...]     (DIR: the carried mmafuzz.gz and MMA-Sim wheel)
#
# The paths run side by side (THREADS oracle threads each, default 4).
# Writes $OUT/blockscale.log and $OUT/findings.tgz.
set -uo pipefail
dir=${1:-target/devpy}
shift || true
out=${OUT:-/tmp/out}
mkdir -p "$out"
site=$(mktemp -d)
gunzip -c "$dir/mmafuzz.gz" > "$site/mmafuzz" && chmod +x "$site/mmafuzz"
python3 -m pip install --no-deps --no-index --target "$site" "$dir"/mmasim-*.whl > /dev/null 2>&1 || { echo "cannot install MMA-Sim's wheel"; exit 1; }
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
cat > "$site/gst.toml" <<'EOF'
name = "gst-start"
description = "MMA-Sim's GST_FDPA as its source describes it (G = 16, F = 35, RZ-FP32, e_zero = -139)"
[blocks]
width = 64
c = "fused"
group = 16
[align]
mode = "truncate"
exponent = "scale"
extra_bits = 12
floor_below_emin = 13
[accumulator]
format = "f32"
rounding = "rz"
overflow = "infinity"
[specials]
nan = "all_ones"
zero_sign = "positive"
EOF
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0 tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e2m3.e4m3.ue8m0
  mma.m16n8k64.mxf4.block32.f32.e2m1.e2m1.f32.ue8m0 mma.m16n8k64.mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3)
for p in "${paths[@]}"; do
  case "$p" in
    tcgen05.*) arch="Blackwell"; dir_arch=blackwell ;;
    *) arch="RTX Blackwell"; dir_arch=rtx-blackwell ;;
  esac
  if [[ "$p" == *k64.* ]]; then
    model="$site/gst.toml"
  else
    plain=$(echo "$p" | sed -E 's/\.mxf[a-z0-9]+\.block[0-9]+\././; s/\.[a-z0-9]+$//; s/\.m128n/.m64n/')
    model="$dir_arch:$plain"
  fi
  log="$site/$p.log"
  ( echo "== $p (model $model)"
    timeout ${SECONDS_EACH:-60} "$site/mmafuzz" hunt --path "$p" --model "$model" --tiles ${TILES:-2000} --per-class 2 --findings "$out/findings/$p" \
      --against "external-npz:python3 scripts/mmasim-oracle.py --arch '$arch' --protocol npz --threads ${THREADS:-4}" 2>&1
    echo "[exit $?]" ) > "$log" &
done
wait
for p in "${paths[@]}"; do cat "$site/$p.log" >> "$out/blockscale.log"; done
grep -E "^==|divergent:|^\[exit|rror" "$out/blockscale.log"
tar czf "$out/findings.tgz" -C "$out" findings 2>/dev/null && rm -rf "${out:?}/findings"
