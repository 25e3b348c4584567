#!/usr/bin/env bash
# Learn a GPU's predictors again from a dense draw of its cuBLASLt heuristic
# (scripts/device-heuristic.sh ... dense, on that GPU), then calibrate them on traces of real
# calls: the local half of the recipe the reports report/fit-*-dense.txt and
# report/calibrate-*.txt were made with. No GPU needed.
#
#     bash scripts/refit-predictors.sh GPU SEED DENSE-DIR CALIBRATION-TRACE...
#
# GPU: h100 or h200 (its models, models/GPU/cublas, are replaced). SEED: the dense draw's seed
# (its files DENSE-DIR/dense-SEED-*.txt.xz; also the fit's deal seed). PATHS (environment, a
# regular expression, default every path) limits which paths are learned; the others keep their
# predictors. MOST (environment) caps the shapes learned per path and call (default: every one;
# the largest path, about 5.8 million shapes, fits in 4 GB; learning from all of them rather
# than 300,000 per call answered 72.5% rather than 59.8% of the held-out heuristic answers on
# the H100's f32 path, report/fit-h100-f32-all-shapes.txt, with trees three times the size).
# Writes the fit and calibration reports to
# DENSE-DIR/fit.txt and DENSE-DIR/calibrate.txt; check the result with `mmafuzz library
# check-predict` on a trace not given here.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 4 ] || { sed -n 2,15p "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
gpu=$1 seed=$2 dir=$3; shift 3
case $gpu in h100|h200) ;; *) echo "refit-predictors.sh: GPU is h100 or h200, not '$gpu'" >&2; exit 2 ;; esac
shopt -s nullglob
dense=("$dir"/dense-"$seed"-*.txt.xz)
[ ${#dense[@]} -gt 0 ] || { echo "refit-predictors.sh: no $dir/dense-$seed-*.txt.xz (scripts/device-heuristic.sh writes them)" >&2; exit 2; }
for t in "$@"; do [ -f "$t" ] || { echo "refit-predictors.sh: no calibration trace $t" >&2; exit 2; }; done
out=models/$gpu/cublas
cargo build --release --quiet
bin=target/release/mmafuzz
if [ ! -f "$dir/DENSE.tsv.gz" ]; then
    python3 scripts/lt-heuristic.py expand "${dense[@]}" "$dir/DENSE.tsv.gz.part"
    mv "$dir/DENSE.tsv.gz.part" "$dir/DENSE.tsv.gz"
fi
python3 scripts/lt-heuristic.py split "$dir/DENSE.tsv.gz" "$dir/per-path"
: > "$dir/fit.txt"
for trace in "$dir"/per-path/*.tsv.gz; do
    path=$(basename "$trace" .tsv.gz)
    [[ $path =~ ${PATHS:-.} ]] || continue
    most=${MOST:-18446744073709551615}
    echo "== $path (at most $most shapes per call)" | tee -a "$dir/fit.txt"
    "$bin" library fit corpus/library/traces/unpredicted-h200.tsv.gz "$trace" --gpu "$gpu" --out "$out" \
        --seed "$seed" --max-per-call "$most" --trees 2 | tee -a "$dir/fit.txt"
done
# Calibration walks the embedded predictors: build with the new ones, calibrate, build again.
cargo build --release --quiet
"$bin" library calibrate "$@" --gpu "$gpu" --out "$out" | tee "$dir/calibrate.txt"
cargo build --release --quiet
echo "refit-predictors.sh: $out learned from seed $seed and calibrated on $# trace(s); reports in $dir/fit.txt, $dir/calibrate.txt"
