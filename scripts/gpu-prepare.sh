#!/usr/bin/env bash
# Build the release binary here and stage it, stripped and gzipped, in .gpu/ (ignored by git),
# to be copied with the repository to the GPU machine; the gpu-*.sh scripts unpack it there.
# Gzipped to keep that copy small: the corpus already takes most of it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
mkdir -p .gpu
rm -f .gpu/mmafuzz .gpu/mmafuzz.gz
cp target/release/mmafuzz .gpu/mmafuzz
strip .gpu/mmafuzz
gzip -9 .gpu/mmafuzz
ls -la .gpu/mmafuzz.gz
