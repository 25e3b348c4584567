#!/usr/bin/env bash
# A GPU's predictors checked on the GEMMs of a validation trace that nothing they were made from
# held: the trace (scripts/torch-trace.py validate, drawn after the predictors were learned)
# without every GEMM whose path, call and shape the dense draw asked cuBLASLt's heuristic about
# or a calibration trace holds (scripts/lt-heuristic.py exclude), then `mmafuzz library
# check-predict` on the rest. Prints both commands and the check's table. No GPU needed.
#
#     bash scripts/check-fresh.sh GPU DENSE-SEED DENSE-LOG TRACE [CALIBRATION-TRACE...]
#
# GPU: h100 or h200. DENSE-SEED and DENSE-LOG: the draw the predictors were learned from and the
# log scripts/device-heuristic.sh wrote for it (its `PATH CALL: N shapes` lines give the draw's
# size). PREDICTORS (environment): a directory of predictors to check instead of the embedded
# ones (`library fit --out`). Exits as check-predict does (1 where any GEMM is wrong).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 4 ] || { sed -n 2,13p "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
gpu=$1 seed=$2 log=$3 trace=$4; shift 4
for f in "$log" "$trace" "$@"; do [ -f "$f" ] || { echo "check-fresh.sh: no file $f" >&2; exit 2; }; done
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
traced=$(IFS=,; echo "$*")
exclude=(python3 scripts/lt-heuristic.py exclude "$trace" "$log" --seed "$seed")
[ -n "$traced" ] && exclude+=(--traced "$traced")
echo "# ${exclude[*]} FRESH.tsv.gz"
"${exclude[@]}" "$W/FRESH.tsv.gz" | sed 's/^/# /'
check=(target/release/mmafuzz library check-predict "$W/FRESH.tsv.gz" --gpu "$gpu")
[ -n "${PREDICTORS:-}" ] && check+=(--predictors "$PREDICTORS")
echo "# mmafuzz library check-predict FRESH.tsv.gz --gpu $gpu${PREDICTORS:+ --predictors DIR}"
set +e
"${check[@]}" | sed "s|$W/||g"
exit "${PIPESTATUS[0]}"
