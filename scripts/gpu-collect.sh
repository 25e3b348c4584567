#!/usr/bin/env bash
# Copy the corpus files a device run brought back (DIR/*.jsonl.gz) into corpus/, replacing each
# path's file (the run recorded the whole set), and show the run's log.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/gpu-collect.sh DIR}
for f in "$dir"/*.jsonl.gz; do
  name=$(basename "$f")
  cp "$f" "corpus/.$name.tmp" && mv "corpus/.$name.tmp" "corpus/$name"
  echo "corpus/$name: $(gunzip -c "corpus/$name" | wc -l) tiles"
done
[ -f "$dir/log.txt" ] && tail -5 "$dir/log.txt"
