#!/usr/bin/env bash
# Runs on the GPU machine: the same library GEMMs recorded through mmafuzz's own cuBLAS/cuBLASLt
# executor (`mmafuzz library record`) and through PyTorch (`scripts/torch-lib.py record
# --shapes`), all 11 paths, ~15-19 shapes each (K >= 4096, m or n <= 2, sizes not multiples of 16
# where the path allows them, beta 0/1 and F.linear's bias); per record: D's bits equal? the
# logged kernel configuration equal? A table per path, and the first trace line of each path
# from both logs (pointers blanked) for whatever differs.
#
#   bash scripts/lib-exec-check.sh [OUTDIR] [SEED]
#
# Uses ./mmafuzz (or MMAFUZZ=...) and the torch-lib.py beside this script; cuBLAS is taken from
# PyTorch's own wheel (nvidia/cu*/lib) so both sides load the same library.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-lib-exec-check}}
seed=${2:-12}
bin=${MMAFUZZ:-$here/mmafuzz}
[ -x "$bin" ] || bin=$(command -v mmafuzz)
mkdir -p "$out"

libdir=$(python3 - <<'EOF'
import glob, os, site, torch
roots = site.getsitepackages() + [os.path.dirname(os.path.dirname(torch.__file__))]
hits = [h for r in roots for h in glob.glob(os.path.join(r, "nvidia", "**", "libcublasLt.so*"), recursive=True)]
print(os.path.dirname(sorted(hits)[0]) if hits else "")
EOF
)
if [ -n "$libdir" ]; then
  # mmafuzz opens libcublas.so and libcublasLt.so first: make those names PyTorch's copies
  # (the same files, so the same loaded library as libcublas's own libcublasLt.so.13).
  links="$out/libs"; mkdir -p "$links"
  for l in libcublas libcublasLt; do ln -sf "$(ls "$libdir/$l.so".* | head -1)" "$links/$l.so"; done
  export LD_LIBRARY_PATH="$links:$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  . "$here/cublas-path.sh" 2>/dev/null || true
fi
echo "cuBLAS from: ${libdir:-system}"

python3 - "$out/shapes.json" <<'EOF'
import json, sys
paths16 = ["cublas.gemm.f32.f16.f16.f32", "cublas.gemm.f16.f16.f16.f16", "cublas.gemm.f32.bf16.bf16.f32",
           "cublas.gemm.bf16.bf16.bf16.bf16", "cublas.gemm.f32.tf32.tf32.f32", "cublas.gemm.f32.f32.f32.f32",
           "cublas.gemm.f64.f64.f64.f64"]
bias_ok = {"cublas.gemm.f16.f16.f16.f16", "cublas.gemm.bf16.bf16.bf16.bf16", "cublas.gemm.f32.tf32.tf32.f32",
           "cublas.gemm.f32.f32.f32.f32", "cublas.gemm.f64.f64.f64.f64"}
# (m, n, k, what): what = 0, 1 or "bias"
gemm = [(64, 64, 64, 0), (128, 96, 4096, 0), (33, 65, 4097, 1), (1, 300, 257, 0), (2, 129, 1025, 1),
        (257, 1, 513, 0), (127, 129, 255, 1), (96, 200, 40, 0), (512, 512, 1024, 1), (16, 16, 16384, 0),
        (200, 3, 2047, "bias"), (63, 65, 127, "bias"), (384, 256, 8192, "bias"), (1000, 100, 100, 1), (5, 7, 9, "bias"),
        # F.linear with one input row (cuBLASLt's bias epilogue) and with one output feature
        # (no epilogue: addmm broadcasts the bias and runs the beta = 1 GEMM).
        (1, 200, 1025, "bias"), (1, 64, 4096, "bias"), (640, 1, 640, "bias"), (300, 1, 4096, "bias")]
fp8 = [(16, 16, 32), (32, 64, 128), (64, 64, 4096), (128, 128, 8192), (16, 32, 16384), (256, 512, 1024),
       (1024, 1024, 2048), (48, 96, 256), (96, 48, 512), (512, 16, 4096), (16, 512, 2048), (128, 256, 64),
       (1024, 512, 4096), (32, 32, 32768), (256, 256, 256)]
jobs = []
for p in paths16:
    for m, n, k, w in gemm:
        bias = w == "bias" and p in bias_ok
        jobs.append({"path": p, "m": m, "n": n, "k": k, "beta": 0 if bias or w == 0 else 1, "bias": int(bias)})
for p in ["cublaslt.matmul.f32.e4m3.e4m3.f32", "cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum",
          "cublaslt.matmul.f32.e4m3.e5m2.f32", "cublaslt.matmul.f32.e5m2.e4m3.f32"]:
    jobs += [{"path": p, "m": m, "n": n, "k": k, "beta": 0} for m, n, k in fp8]
json.dump(jobs, open(sys.argv[1], "w"))
print(len(jobs), "GEMMs")
EOF

t=$(date +%s)
"$bin" library record --shapes "$out/shapes.json" --seed "$seed" --out "$out/ours.jsonl.gz" --jobs-out "$out/jobs.json" --trace "$out/ours.log" || echo "our executor failed"
echo "ours: $(( $(date +%s) - t ))s"
t=$(date +%s)
rm -f "$out/torch.log"
TORCH_LIB_KEEP_LOG="$out/torch.log" python3 "$here/torch-lib.py" record "$out/torch.jsonl.gz" "$seed" 0 0 --shapes "$out/jobs.json" || echo "torch-lib.py failed"
echo "torch: $(( $(date +%s) - t ))s"

python3 - "$out" <<'EOF'
import gzip, json, re, sys, collections
out = sys.argv[1]
load = lambda f: [json.loads(l) for l in gzip.open(f, "rt") if l.strip()]
ours = {(r["path"], r["seed"]): r for r in load(f"{out}/ours.jsonl.gz")}
torch = {(r["path"], r["seed"]): r for r in load(f"{out}/torch.jsonl.gz")}
rows = collections.OrderedDict()
miss = []
for key, o in ours.items():
    t = torch.get(key)
    row = rows.setdefault(key[0], [0, 0, 0, 0])
    row[0] += 1
    if t is None:
        miss.append(f"{key}: no torch record")
        continue
    row[1] += 1
    d_eq = o["d"] == t["d"] and o.get("idx") == t.get("idx")
    c_eq = o.get("config") is not None and o.get("config") == t.get("config")
    row[2] += d_eq
    row[3] += c_eq
    if not (d_eq and c_eq):
        kind = "bias" if o.get("bias") else f"beta {o['beta']}"
        nd = sum(a != b for a, b in zip(o["d"], t["d"]))
        dtext = "equal" if d_eq else "%d/%d differ" % (nd, len(o["d"]))
        miss.append(f"{key[0]} {o['m']}x{o['n']}x{o['k']} {kind}: D {dtext}; config "
                    + ("equal" if c_eq else f"ours [{o.get('config')}] torch [{t.get('config')}]"))
print()
print(f"{'path':<46} {'GEMMs':>6} {'paired':>7} {'D equal':>8} {'config equal':>13}")
for p, (n, paired, d, c) in rows.items():
    print(f"{p:<46} {n:>6} {paired:>7} {d:>8} {c:>13}")
tot = [sum(r[i] for r in rows.values()) for i in range(4)]
print(f"{'all':<46} {tot[0]:>6} {tot[1]:>7} {tot[2]:>8} {tot[3]:>13}")
print()
for m in miss[:60]:
    print("  " + m)
# Whole trace lines, call by call (both logs hold one matmul line per GEMM, in job order),
# pointers blanked: what differs besides the kernel, if anything.
norm = lambda s: re.sub(r"0[xX][0-9a-fA-F]+", "0x", re.sub(r"^.*?\[(cublasLt\w*Matmul)\]", r"\1", s.strip()))
pick = lambda f: [norm(l) for l in open(f, errors="replace") if "Matmul]" in l and "algo=[" in l]
ot, tt = pick(f"{out}/ours.log"), pick(f"{out}/torch.log")
diff = [(a, b) for a, b in zip(ot, tt) if a != b]
print(f"\nwhole trace lines (pointers blanked): ours {len(ot)}, torch {len(tt)}, {len(diff)} pairs differ")
words = collections.Counter(f"ours {x} / torch {y}" for a, b in diff for x, y in zip(a.split(), b.split()) if x != y)
for w, count in words.most_common(10):
    print(f"  {count:4} {w}")
EOF
gzip -f "$out/ours.log" "$out/torch.log" 2>/dev/null || true
