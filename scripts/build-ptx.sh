#!/usr/bin/env bash
# Regenerate src/exec/kernels/*.ptx.xz from the .cu sources with CUDA 13.0's nvcc from PyPI (no
# GPU needed), and check that ptxas assembles them for sm_90a. The PTX stays at .version 9.0,
# which the 13.0 driver loads. The crate holds it xz-compressed (a fifteenth of the text's size)
# and unpacks it on first use (src/exec/ptx.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
nv=${CUDA_WHEELS:-.cuda}
if [ ! -x "$nv/nvidia/cu13/bin/nvcc" ]; then
  python3 -m pip install -q --target "$nv" nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 \
    nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96
fi
bin="$nv/nvidia/cu13/bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for cu in src/exec/kernels/*.cu; do
  ptx="$tmp/$(basename "${cu%.cu}").ptx"
  "$bin/nvcc" -I "$nv/nvidia/cu13/include" -ptx -gencode=arch=compute_90a,code=compute_90a -o "$ptx" "$cu"
  "$bin/ptxas" --gpu-name sm_90a -o /dev/null "$ptx"
  xz -9e -c "$ptx" > "${cu%.cu}.ptx.xz"
  echo "${cu%.cu}.ptx.xz: $(grep -c 'mma.sync' "$ptx") mma.sync, $(head -20 "$ptx" | grep -E '^\.(version|target)' | tr '\n' ' ')"
done
