#!/usr/bin/env bash
# Build the release binary here and stage it (stripped) in .gpu/, which the device call carries.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
mkdir -p .gpu
cp target/release/mmafuzz .gpu/mmafuzz
strip .gpu/mmafuzz
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
ls -la .gpu/mmafuzz
