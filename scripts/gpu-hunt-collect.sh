#!/usr/bin/env bash
# Unpacks the findings.tgz of a run on the GPU machine (scripts/gpu-hunt.sh) over findings/
# here: new findings and the hunts' saved state, ready for `gpu-hunt.sh resume` and for
# committing.
set -euo pipefail
dir=${1:?usage: gpu-hunt-collect.sh DIR-with-findings.tgz}
tar xzf "$dir/findings.tgz"
find findings -name '*.md' | wc -l | xargs echo "findings files:"
