#!/usr/bin/env bash
# Hunts and checks spread over the GPUs of one host, on the GPU machine (the release binary
# stripped and xz'd in .gpu/mmafuzz.xz; optionally the one before a change in
# .gpu/mmafuzz-before.xz, run on GPU 0 for its rate beside the new one's).
#
#   bash scripts/gpu-multi.sh DEVICES TILES SEED
#
# DEVICES: the GPUs to spread over (0,1 or all; 0,0 runs two engines on one GPU: the spread's
# bookkeeping checked where there is one GPU, not its speed). For each GPU-engine path:
# gpu-check and engine-check on DEVICES; the GPU engine's hunt of TILES tiles of SEED on GPU 0
# and on DEVICES, rates side by side; a planted model hunted on GPU 0 and on DEVICES for TILES/8
# tiles with both engines (gpu, gpu-tiles: a tenth of that), whose states and findings must be
# the same. Summary in $OUT/gpu-multi.log, the findings in $OUT/multi-findings.tar.gz ($OUT: multi-out/ where unset).
# PATHS (environment) limits the paths (space-separated); STEPS (default checks,sm90,planted) which
# of the three parts run.
set -uo pipefail
cd "$(dirname "$0")/.."
devices=$1 tiles=$2 seed=$3
out=${OUT:-multi-out}
mkdir -p "$out"
W=$(mktemp -d)
xz -dc .gpu/mmafuzz.xz >"$W/mmafuzz" && chmod +x "$W/mmafuzz"
bin=$W/mmafuzz
before=
if [ -f .gpu/mmafuzz-before.xz ]; then xz -dc .gpu/mmafuzz-before.xz >"$W/before" && chmod +x "$W/before" && before=$W/before; fi
declare -A plant=([mma.m16n8k16.f32.f16.f16.f32]=f16-extra3 [mma.m16n8k16.f32.bf16.bf16.f32]=bf16-floor6 [mma.m16n8k16.f16.f16.f16.f16]=f16h-floor6)
paths=${PATHS:-mma.m16n8k16.f32.f16.f16.f32 mma.m16n8k16.f32.bf16.bf16.f32 mma.m16n8k16.f16.f16.f16.f16}
steps=",${STEPS:-checks,sm90,planted},"
keep='^(this run|divergent|spread over|GPU engine|GPU-made|findings:)'
{
    nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
    echo "cpu cores: $(nproc)"
    if [[ $steps == *,checks,* ]]; then
        echo "== gpu-check --device $devices"
        for p in $paths; do "$bin" gpu-check --path "$p" --device "$devices" --tiles 1024; done >"$W/gpu-check.txt" 2>&1
        echo "gpu-check: $(grep -c ' ok' "$W/gpu-check.txt") lines ok, $(grep -c FAILED "$W/gpu-check.txt") FAILED"
        grep -E "FAILED|same D|^GPU" "$W/gpu-check.txt" | head -40
        for p in $paths; do
            echo "== engine-check $p --device $devices"
            "$bin" engine-check --path "$p" --device "$devices" --tiles 262144 --other-tiles 65536 2>&1 | grep -v "^engine check on"
        done
    fi
    for p in $paths; do
        if [[ $steps == *,sm90,* ]]; then
            echo "== $p: the sm90 model, $tiles tiles of seed $seed"
            if [ -n "$before" ]; then
                echo "-- the binary before, GPU 0"
                "$before" hunt --path "$p" --engine gpu --tiles "$tiles" --seed "$seed" --findings "$W/before-$p" 2>&1 | grep -E "$keep"
            fi
            for d in 0 "$devices"; do
                echo "-- --devices $d"
                "$bin" hunt --path "$p" --engine gpu --devices "$d" --tiles "$tiles" --seed "$seed" --findings "$W/sm90-$d" 2>&1 | grep -E "$keep"
            done
        fi
        [[ $steps == *,planted,* ]] || continue
        for engine in gpu gpu-tiles; do
            n=$((tiles / 8)); [ "$engine" = gpu-tiles ] && n=$((tiles / 80))
            echo "== $p: planted ${plant[$p]}, --engine $engine, $n tiles of seed $seed"
            for d in 0 "$devices"; do
                echo "-- --devices $d"
                "$bin" hunt --path "$p" --engine "$engine" --model "fuzz/plants/${plant[$p]}.toml" --devices "$d" --tiles "$n" --seed "$seed" \
                    --per-class 2 --findings "$W/plant-$engine-$d" 2>&1 | grep -E "$keep"
            done
            python3 - "$W/plant-$engine-0/$p" "$W/plant-$engine-$devices/$p" <<'EOF'
import json, pathlib, re, sys
one, many = (pathlib.Path(d) for d in sys.argv[1:])
# What may differ between one GPU and several: time, and side A's description (its GPU count).
skip = {"elapsed_s", "side_a"}
def state(d):
    (f,) = [f for f in d.glob("*.state.json")]
    return {k: v for k, v in json.loads(f.read_text()).items() if k not in skip}
def findings(d):
    # A finding names side A with its GPU count ("... x2 (cc 9.0 ..."): masked.
    out = {}
    for f in sorted(d.glob("*.md")):
        out[f.name] = re.sub(r" x[0-9]+ \(cc", " xN (cc", f.read_text())
        out[f.name] = re.sub(r'"(first|last)_seen":"[^"]*"', "", out[f.name])
    return out
s1, s2 = state(one), state(many)
diff = sorted(k for k in s1.keys() | s2.keys() if s1.get(k) != s2.get(k))
f1, f2 = findings(one), findings(many)
print(f"states: {'the same' if not diff else 'DIFFER in ' + ', '.join(diff)} ({s1['tiles']} tiles, {s1['divergent_tiles']} divergent tiles, {s1['divergent_elements']} elements, {len(s1['classes'])} classes, first divergence {s1.get('first_divergence')})")
print(f"findings: {len(f1)} on GPU 0, {len(f2)} spread; {'the same files and contents' if f1 == f2 else 'DIFFER'}")
EOF
        done
    done
} 2>&1 | tee "$out/gpu-multi.log"
tar -C "$W" -czf "$out/multi-findings.tar.gz" $(cd "$W" && ls -d plant-* 2>/dev/null)
