#!/usr/bin/env python3
"""Held-out calls of torch._scaled_mm on the GPU, for checking mmafuzz.torch._scaled_mm: fresh
FP8 shapes and scales, each call's kernel from cuBLASLt's log and D at sampled elements.

    python3 scripts/torch-scaled-validate.py OUT.jsonl.xz [--seed S] [--calls N]

Shapes: the FP8 linear layers of public model families (Llama 2 and 3, Mistral and Mixtral,
Qwen2, TinyLlama) at decode (1-16 tokens) and prefill (128-4096 tokens), and log-uniform
ones up to 16,384 (K and N multiples of 16, as torch wants them; M any). Per call: per-tensor
scales (two log-uniform float32 values) or row-wise ones ((m, 1) and (1, n), uniform in
[0.25, 4)), out_dtype float32, bfloat16 or float16, use_fast_accum on or off, operands of
one of three styles: normal, wide (a normal times 2^u, u an integer in [-8, 8]) and cancelling
(B's second half of K the first half negated, A's repeated). Every value is drawn from the seed
(row i of A from numpy's default_rng([seed, call, 0, i]), row j of B, stored n x k, from
[seed, call, 1, j]), so a record holds no operands: `regenerate` below rebuilds the rows a
sampled element needs. One JSON line per call: shape, style, scales (sampled row-wise entries
as f32 bits), out dtype, fast, the logged kernel, sampled rows and columns, D's bits there,
with the GPU, driver and torch version.
"""
import json
import lzma
import os
import subprocess
import sys

import numpy as np

LAYERS = [(4096, 4096), (14336, 4096), (4096, 14336), (6144, 4096), (1024, 4096), (8192, 8192), (28672, 8192),
          (8192, 28672), (3584, 3584), (18944, 3584), (3584, 18944), (2048, 2048), (5632, 2048), (11008, 4096)]
TOKENS = [1, 2, 4, 8, 16, 128, 512, 2048, 4096]
STYLES = ["normal", "wide", "cancel"]
OUTS = ["float32", "bfloat16", "float16"]
SAMPLED = 8


def row_values(seed, call, operand, line, k, style):
    """Row `line` of A (operand 0) or of B stored n x k (operand 1), as float32 before the cast."""
    rng = np.random.default_rng([seed, call, operand, line])
    x = rng.standard_normal(k).astype(np.float32)
    if style == "wide":
        x = np.ldexp(x, rng.integers(-8, 9, k)).astype(np.float32)
    elif style == "cancel":
        half = k // 2
        x[half:2 * half] = x[:half] if operand == 0 else -x[:half]
    return x


def regenerate(rec, operand, lines):
    """The float8_e4m3fn rows `lines` of A (0) or B (1, n x k) of a record."""
    import ml_dtypes
    k = rec["k"]
    rows = [row_values(rec["seed"], rec["call"], operand, int(i), k, rec["style"]) for i in lines]
    return np.clip(np.stack(rows), -448, 448).astype(ml_dtypes.float8_e4m3fn)


def draw(rng, count):
    calls = []
    for c in range(count):
        if c % 2 == 0:
            n, k = LAYERS[rng.integers(len(LAYERS))]
            m = int(rng.choice(TOKENS))
            kind = "layer"
        else:
            m, n, k = (int(16 * max(1, round(2 ** rng.uniform(0, 10)))) for _ in range(3))
            m = max(1, m - int(rng.integers(16))) if rng.random() < 0.5 else m
            kind = "random"
        rowwise = bool(rng.random() < 0.4)
        calls.append({"call": c, "m": m, "n": n, "k": k, "class": kind, "style": STYLES[rng.integers(3)],
                      "scales": "rowwise" if rowwise else "tensor", "out": OUTS[rng.integers(3)], "fast": bool(rng.random() < 0.5),
                      "sa": float(np.float32(2 ** rng.uniform(-6, 2))), "sb": float(np.float32(2 ** rng.uniform(-6, 2)))})
    return calls


def parse_kernels(log):
    out = []
    with open(log, errors="replace") as f:
        for line in f:
            if "[Trace][cublasLtMatmul]" in line and "R_8F_E4M3" in line:
                out.append(line.split("algo=[", 1)[1].split("]", 1)[0])
    return out


CHILD = r"""
import sys, json, numpy as np, torch, importlib.util
spec = importlib.util.spec_from_file_location("v", sys.argv[1]); v = importlib.util.module_from_spec(spec); spec.loader.exec_module(v)
calls = json.load(open(sys.argv[2])); seed = int(sys.argv[3]); out = {}
f8 = torch.float8_e4m3fn
for c in calls:
    m, n, k, st = c["m"], c["n"], c["k"], c["style"]
    a = np.stack([v.row_values(seed, c["call"], 0, i, k, st) for i in range(m)])
    b = np.stack([v.row_values(seed, c["call"], 1, j, k, st) for j in range(n)])
    a = torch.from_numpy(a).cuda().clamp(-448, 448).to(f8)
    b = torch.from_numpy(b).cuda().clamp(-448, 448).to(f8)
    rng = np.random.default_rng([seed, c["call"], 2])
    if c["scales"] == "rowwise":
        sa = torch.from_numpy(rng.uniform(0.25, 4, (m, 1)).astype(np.float32)).cuda()
        sb = torch.from_numpy(rng.uniform(0.25, 4, (1, n)).astype(np.float32)).cuda()
    else:
        sa = torch.tensor(c["sa"], dtype=torch.float32, device="cuda")
        sb = torch.tensor(c["sb"], dtype=torch.float32, device="cuda")
    rows = np.sort(rng.choice(m, min(m, v.SAMPLED), replace=False)); cols = np.sort(rng.choice(n, min(n, v.SAMPLED), replace=False))
    try:
        d = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=getattr(torch, c["out"]), use_fast_accum=c["fast"])
        torch.cuda.synchronize()
    except Exception as e:
        out[c["call"]] = {"refused": str(e).splitlines()[0][:200]}
        continue
    d = d[torch.from_numpy(rows).cuda()][:, torch.from_numpy(cols).cuda()].contiguous().cpu()
    w = {4: torch.int32, 2: torch.int16}[d.element_size()]
    bits = d.view(w).numpy().astype(np.int64) & ((1 << (8 * d.element_size())) - 1)
    rec = {"rows": rows.tolist(), "cols": cols.tolist(), "d": [f"{x:x}" for x in bits.reshape(-1)]}
    if c["scales"] == "rowwise":
        rec["ra"] = [f"{x:08x}" for x in sa[torch.from_numpy(rows).cuda()].cpu().numpy().view(np.uint32).reshape(-1)]
        rec["rb"] = [f"{x:08x}" for x in sb[:, torch.from_numpy(cols).cuda()].cpu().numpy().view(np.uint32).reshape(-1)]
    out[c["call"]] = rec
    del a, b, d
    print("DONE", c["call"], flush=True)
json.dump(out, open(sys.argv[4], "w"))
"""


def main():
    out = sys.argv[1]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 60101
    count = int(sys.argv[sys.argv.index("--calls") + 1]) if "--calls" in sys.argv else 120
    import torch
    calls = draw(np.random.default_rng(seed), count)
    base = out + ".work"
    json.dump(calls, open(base + ".calls.json", "w"))
    env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=base + ".log")
    r = subprocess.run([sys.executable, "-c", CHILD, os.path.abspath(__file__), base + ".calls.json", str(seed), base + ".json"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"child failed: {r.stderr[-3000:]}")
    got = json.load(open(base + ".json"))
    kernels = parse_kernels(base + ".log")
    ran = [c for c in calls if "refused" not in got[str(c["call"])]]
    if len(kernels) != len(ran):
        raise SystemExit(f"{len(kernels)} logged FP8 calls for {len(ran)} calls made")
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    prov = {"gpu": torch.cuda.get_device_name(), "driver": drv, "torch": torch.__version__, "seed": seed, "tool": "scripts/torch-scaled-validate.py"}
    it = iter(kernels)
    with lzma.open(out, "wt") as f:
        for c in calls:
            rec = dict(c, seed=seed, provenance=prov, **got[str(c["call"])])
            if "refused" not in rec:
                rec["kernel"] = next(it)
            f.write(json.dumps(rec) + "\n")
    for x in (".calls.json", ".json", ".log"):
        os.remove(base + x)
    print(f"{len(calls)} calls, {len(ran)} ran, {len(calls) - len(ran)} refused by torch -> {out}")


if __name__ == "__main__":
    main()
