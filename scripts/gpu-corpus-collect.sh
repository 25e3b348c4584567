#!/usr/bin/env bash
# Append the GPU tiles a device run brought back in ARCHIVE (record.tgz from gpu-record.sh, or
# discover.tgz from gpu-discover.sh: every <path>.jsonl.gz inside) to each path's corpus file,
# then drop repeats and show the per-path counts.
set -euo pipefail
cd "$(dirname "$0")/.."
archive=${1:?usage: scripts/gpu-corpus-collect.sh ARCHIVE.tgz}
work=$(mktemp -d)
tar xzf "$archive" -C "$work"
find "$work" -name '*.jsonl.gz' | while read -r f; do
  name=$(basename "$f")
  { [ -f "corpus/$name" ] && gunzip -c "corpus/$name"; gunzip -c "$f"; } | gzip -9 > "corpus/.$name.tmp"
  mv "corpus/.$name.tmp" "corpus/$name"
  echo "added $(gunzip -c "$f" | wc -l) tiles to corpus/$name"
done
cargo run --release -q -- corpus dedup
rm -rf "$work"
