#!/usr/bin/env bash
# Add the GPU tiles a run on the GPU machine brought back in ARCHIVE (record.tgz from
# gpu-record.sh, or discover.tgz from gpu-discover.sh: <path>.jsonl.xz / .jsonl.gz files inside)
# to each path's corpus file with `mmafuzz corpus merge` (repeats dropped), and show the per-path counts.
set -euo pipefail
cd "$(dirname "$0")/.."
archive=${1:?usage: scripts/gpu-corpus-collect.sh ARCHIVE.tgz}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf "$archive" -C "$work"
find "$work" \( -name '*.jsonl.gz' -o -name '*.jsonl.xz' \) -printf '%h\n' | sort -u | while read -r d; do
  cargo run --release -q -- corpus merge --into corpus "$d"
done
