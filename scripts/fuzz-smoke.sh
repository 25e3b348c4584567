#!/usr/bin/env bash
# CI's fuzzing step (no GPU): build the fuzz targets with cargo-fuzz (nightly, installed if
# absent), run each CPU and parser target briefly, run the GPU target with a model standing
# where the GPU stands (against itself: no crash allowed; against a planted one-knob change:
# the crash must come, and `mmafuzz fuzz decode` must show the mismatch). With `--build-only`
# it stops after the build.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${SECONDS_PER_TARGET:-6}
if ! rustup toolchain list | grep -q nightly; then
  rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null; then
  cargo install cargo-fuzz --locked
fi
# fuzz/Cargo.lock must hold every package (a stale one sends cargo to the index first).
if ! (cd fuzz && cargo +nightly metadata --locked --format-version 1 > /dev/null); then
  echo "fuzz-smoke: fuzz/Cargo.lock is out of date: run 'cargo +nightly metadata --format-version 1 > /dev/null' in fuzz/ and commit it" >&2
  exit 1
fi
targets="exact_vs_mpfr lanes_vs_general generated_models parse_interchange parse_corpus_line parse_finding parse_model parse_npy parse_library_record parse_schedule gpu_path gpu_engine"
# Unoptimised, with debug assertions and overflow checks: half the build time of `-O` (2.7
# against 5.2 minutes on 2 cores), and a brief run needs checks more than speed. Hunts build
# with -O (docs/src/guided.md, "Fuzz targets").
for t in $targets; do (cd fuzz && cargo +nightly fuzz build --dev -s none "$t"); done
# `--build-only`: install, check and build, run nothing (.ci/run builds while the tests run).
[ "${1:-}" = --build-only ] && exit 0
bin=fuzz/target/x86_64-unknown-linux-gnu/debug
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The CPU and parser targets two at a time (each libFuzzer process uses one core); a target
# that fails fails the step, its last lines shown.
run_target() {
  local t=$1 seeds=""
  mkdir -p "$work/$t"
  [ -d "fuzz/seeds/$t" ] && seeds="fuzz/seeds/$t"
  if "$bin/$t" "$work/$t" $seeds -max_total_time="$SECONDS_PER_TARGET" -artifact_prefix="$work/$t-" > "$work/$t.log" 2>&1; then
    echo "$t: $(tail -1 "$work/$t.log")"
  else
    echo "fuzz-smoke: target $t failed:" >&2
    tail -30 "$work/$t.log" >&2
    return 1
  fi
}
export -f run_target
export bin work SECONDS_PER_TARGET
printf '%s\n' exact_vs_mpfr lanes_vs_general generated_models parse_interchange parse_corpus_line parse_finding parse_model parse_npy parse_library_record parse_schedule | xargs -P 2 -I{} bash -c 'run_target {}'
# The CLI as `cargo test` built it for the tests (nothing to compile after scripts/test.sh).
cargo test --workspace --profile suite --no-run --quiet
mmafuzz=./target/suite/mmafuzz
$mmafuzz gen --path mma.m16n8k16.f16.f16.f16.f16 --count 64 --seed 1 --out "$work/seed.jsonl"
$mmafuzz fuzz encode --path mma.m16n8k16.f16.f16.f16.f16 --in "$work/seed.jsonl" --out "$work/seeds"
export MMAFUZZ_PATH=mma.m16n8k16.f16.f16.f16.f16
mkdir -p "$work/same" "$work/plant"
MMAFUZZ_AGAINST=sm90:$MMAFUZZ_PATH "$bin/gpu_path" "$work/same" "$work/seeds" -max_len=262144 -max_total_time="$SECONDS_PER_TARGET" -artifact_prefix="$work/same-" 2>&1 | tail -1
# The plant flushes subnormal f16 outputs: about one generated tile in 23 shows it.
if MMAFUZZ_AGAINST=fuzz/plants/f16h-outsub.toml "$bin/gpu_path" "$work/plant" "$work/seeds" -max_len=262144 -max_total_time=120 -artifact_prefix="$work/plant-" > "$work/plant.log" 2>&1; then
  echo "fuzz-smoke: the GPU target did not find the planted change" >&2
  exit 1
fi
artifact=$(ls "$work"/plant-crash-* | head -1)
if $mmafuzz fuzz decode "$artifact" --path "$MMAFUZZ_PATH" --against fuzz/plants/f16h-outsub.toml > "$work/decoded.txt"; then
  echo "fuzz-smoke: the artifact does not diverge when decoded" >&2
  exit 1
fi
grep -c MISMATCH "$work/decoded.txt" | sed 's/^/fuzz-smoke: planted change found; mismatched elements in the artifact: /'
