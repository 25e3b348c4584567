#!/usr/bin/env bash
# On the GPU machine: cuBLASLt's heuristic checked against real PyTorch calls and asked densely,
# a sealed validation trace, `mmafuzz library trace` on scripts/example-model.py and the
# whole-GEMM benchmark. Results go to $OUT (a few files).
#
#   bash scripts/device-heuristic.sh CHECK_SEED DENSE_SEED DENSE_SECONDS VALIDATE_SEED STEPS
# STEPS: comma-separated, of check (real calls at CHECK_SEED's shapes under the log, and the
# heuristic asked for each: scripts/lt-heuristic.py check), dense (the heuristic asked at
# DENSE_SEED's shapes, DENSE_SECONDS per call kind), validate (torch-trace.py validate at
# VALIDATE_SEED), example, bench. Without check, dense asks with the recorded templates
# (corpus/library/traces/lt-templates-h200.json); DENSE_JOBS (14) calls at once. Needs .gpu/mmafuzz.xz (the release binary, stripped, xz'd)
# for example and bench.
set -uo pipefail
cd "$(dirname "$0")/.."
check_seed=$1 dense_seed=$2 dense_s=$3 validate_seed=$4 steps=",$5,"
W=$(mktemp -d)
export PYTHONUNBUFFERED=1
log=$OUT/device-heuristic.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$log"
python3 scripts/lt-heuristic.py build "$W/lth" 2>&1 | tee -a "$log"
if [[ $steps == *,check,* ]]; then
    echo "== real calls, seed $check_seed" | tee -a "$log"
    python3 scripts/torch-trace.py validate "$OUT/h200-check-$check_seed.tsv.gz" 25 --seed "$check_seed" --jobs 4 --raw "$W/raw.jsonl.gz" 2>&1 | tee -a "$log"
    rm -f "$OUT/raw-trace-lines.json"
    echo "== heuristic against the log" | tee -a "$log"
    python3 scripts/lt-heuristic.py check "$W/lth" "$W/raw.jsonl.gz" "$OUT/lt-templates.json" "$OUT/lt-check-$check_seed.jsonl.gz" 2>&1 | tee -a "$log"
fi
if [[ $steps == *,validate,* ]]; then
    echo "== validation trace, seed $validate_seed" | tee -a "$log"
    python3 scripts/torch-trace.py validate "$OUT/h200-validate-$validate_seed.tsv.gz" 60 --seed "$validate_seed" --jobs 4 2>&1 | tee -a "$log"
    rm -f "$OUT/raw-trace-lines.json"
fi
if [[ $steps == *,example,* || $steps == *,bench,* ]]; then
    xz -dc .gpu/mmafuzz.xz >"$W/mmafuzz" && chmod +x "$W/mmafuzz"
fi
if [[ $steps == *,example,* ]]; then
    echo "== example program under mmafuzz library trace" | tee -a "$log"
    (cd "$W" && ./mmafuzz library trace --out prog --keep-log prog.log -- python3 "$OLDPWD/scripts/example-model.py" "$OUT/example-gemms.npz") 2>&1 | tee -a "$log"
    tar -C "$W" -czf "$OUT/example-trace.tar.gz" prog prog.log
fi
if [[ $steps == *,bench,* ]]; then
    echo "== whole-GEMM benchmark" | tee -a "$log"
    python3 scripts/bench-gemm.py "$W/mmafuzz" 1024 4096 2>&1 | tee -a "$log"
fi
if [[ $steps == *,dense,* ]]; then
    echo "== dense heuristic, seed $dense_seed, ${dense_s}s per call kind" | tee -a "$log"
    templates=$OUT/lt-templates.json
    [[ -f $templates ]] || templates=corpus/library/traces/lt-templates-h200.json
    python3 scripts/lt-heuristic.py dense "$W/lth" "$templates" "$OUT/dense-$dense_seed" "$dense_s" --seed "$dense_seed" --jobs "${DENSE_JOBS:-14}" 2>&1 | tee -a "$log"
fi
ls -la "$OUT" | tee -a "$log"
