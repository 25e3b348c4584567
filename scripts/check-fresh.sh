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
# size); where some paths' predictors come from another draw, both comma-separated, in the same
# order (58402,63103 and LOG1,LOG2), and the GEMMs of every draw are left out. PREDICTORS (environment): a directory of predictors to check instead of the embedded
# ones (`library fit --out`). Exits as check-predict does (1 where any GEMM is wrong).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 4 ] || { sed -n 2,13p "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
gpu=$1 seed=$2 log=$3 trace=$4; shift 4
for f in "$trace" "$@"; do [ -f "$f" ] || { echo "check-fresh.sh: no file $f" >&2; exit 2; }; done
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
traced=$(IFS=,; echo "$*")
IFS=, read -r -a seeds <<<"$seed"
IFS=, read -r -a logs <<<"$log"
[ ${#seeds[@]} -eq ${#logs[@]} ] || { echo "check-fresh.sh: ${#seeds[@]} dense seed(s) but ${#logs[@]} log(s)" >&2; exit 2; }
for f in "${logs[@]}"; do [ -f "$f" ] || { echo "check-fresh.sh: no file $f" >&2; exit 2; }; done
from=$trace
for i in "${!seeds[@]}"; do
    exclude=(python3 scripts/lt-heuristic.py exclude "$from" "${logs[$i]}" --seed "${seeds[$i]}")
    [ "$i" -eq 0 ] && [ -n "$traced" ] && exclude+=(--traced "$traced")
    echo "# ${exclude[*]} FRESH-$i.tsv.gz" | sed "s|$W/||g"
    "${exclude[@]}" "$W/FRESH-$i.tsv.gz" | sed -e "s|$W/||g" -e 's/^/# /'
    from=$W/FRESH-$i.tsv.gz
done
mv "$from" "$W/FRESH.tsv.gz"
check=(target/release/mmafuzz library check-predict "$W/FRESH.tsv.gz" --gpu "$gpu")
[ -n "${PREDICTORS:-}" ] && check+=(--predictors "$PREDICTORS")
echo "# mmafuzz library check-predict FRESH.tsv.gz --gpu $gpu${PREDICTORS:+ --predictors DIR}"
set +e
"${check[@]}" | sed "s|$W/||g"
exit "${PIPESTATUS[0]}"
