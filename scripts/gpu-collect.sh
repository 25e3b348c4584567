#!/usr/bin/env bash
# Copy the corpus files a run on the GPU machine brought back (DIR/*.jsonl.xz or *.jsonl.gz)
# into corpus/, replacing each path's file (the run recorded the whole set), and show the run's
# log.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/gpu-collect.sh DIR}
shopt -s nullglob
for f in "$dir"/*.jsonl.xz "$dir"/*.jsonl.gz; do
  name=$(basename "$f")
  stem=${name%.jsonl.*}
  cp "$f" "corpus/.$name.tmp" && mv "corpus/.$name.tmp" "corpus/$name"
  # One file per path: the other ending, if any, is the old copy.
  for other in "corpus/$stem.jsonl.xz" "corpus/$stem.jsonl.gz"; do
    [ "$other" != "corpus/$name" ] && rm -f "$other"
  done
  case $name in *.xz) n=$(xz -dc "corpus/$name" | wc -l) ;; *) n=$(gunzip -c "corpus/$name" | wc -l) ;; esac
  echo "corpus/$name: $n tiles"
done
[ -f "$dir/log.txt" ] && tail -5 "$dir/log.txt"
