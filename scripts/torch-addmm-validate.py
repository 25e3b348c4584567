#!/usr/bin/env python3
"""Held-out calls of torch.addmm with alpha and beta on the GPU, for checking
mmafuzz.torch.addmm: fresh shapes, scalars and operands, each call's kernel from cuBLASLt's log
and D at sampled elements.

    python3 scripts/torch-addmm-validate.py OUT.jsonl.xz [--seed S] [--calls N]

Shapes: the linear layers of public model families (Llama 2 and 3, Mistral, Qwen2, TinyLlama)
at decode (1-16 tokens) and prefill (128-4,096 tokens), and log-uniform shapes up to 8,192.
float16, bfloat16 (into their own dtype or float32) and float32 (TF32 off); alpha and beta from
a fixed list (0.3 and 0.7, -1, 2, 0.5, beta 0 and 1) and log-uniform draws of either sign;
operands of four styles (scripts/torch-bmm-probe.py's generator: triangular, wide, cancelling,
small integers), so that a record holds none of them. One JSON line per call: shape, dtype,
out dtype, alpha, beta, style, the kernel cuBLASLt logged for it (through its logger callback,
call by call), sampled rows and columns and D's bits there, with the GPU, driver, torch and
cuBLAS versions.
"""
import ctypes
import importlib.util
import json
import lzma
import os
import subprocess
import sys

import numpy as np

LAYERS = [(4096, 4096), (14336, 4096), (4096, 14336), (6144, 4096), (1024, 4096), (8192, 8192), (3584, 3584),
          (18944, 3584), (2048, 2048), (5632, 2048), (11008, 4096), (4096, 11008)]
TOKENS = [1, 2, 4, 8, 16, 128, 512, 2048, 4096]
SCALARS = [(0.3, 0.7), (0.3, 1.0), (-1.0, 1.0), (2.0, 1.0), (1.0, 0.5), (0.5, 0.0), (1.0, -1.0), (0.3, 0.0)]
# (operand dtype, out dtype)
TYPES = [("float16", "float16"), ("bfloat16", "bfloat16"), ("float32", "float32"), ("float16", "float32"), ("bfloat16", "float32")]
SAMPLED = 8
MAX_ELEMENTS = 1 << 26


def generator():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch-bmm-probe.py")
    spec = importlib.util.spec_from_file_location("bmm_probe", path)
    g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g)
    return g


def draw(rng, count):
    styles = generator().STYLES
    calls = []
    for c in range(count):
        if c % 2 == 0:
            k, n = LAYERS[rng.integers(len(LAYERS))]
            m, kind = int(rng.choice(TOKENS)), "layer"
        else:
            m, n, k = (max(1, round(2 ** rng.uniform(0, 13))) for _ in range(3))
            kind = "random"
        while max(m * k, k * n, m * n) > MAX_ELEMENTS:
            m = max(1, m // 2)
            if max(k * n, m * n) > MAX_ELEMENTS:
                n = max(1, n // 2)
        if rng.random() < 0.6:
            alpha, beta = SCALARS[rng.integers(len(SCALARS))]
        else:
            alpha, beta = (float(np.float32(rng.choice([-1, 1]) * 2 ** rng.uniform(-4, 4))) for _ in range(2))
        dtype, out = TYPES[rng.integers(len(TYPES))]
        calls.append({"call": c, "m": m, "n": n, "k": k, "class": kind, "dtype": dtype, "out": out, "alpha": alpha, "beta": beta,
                      "style": styles[rng.integers(len(styles))]})
    return calls


def operands(g, seed, c):
    """A (m x k), B (k x n, row-major) and C (m x n) of a call, float32 before the cast."""
    m, n, k, st = c["m"], c["n"], c["k"], c["style"]
    a = g.rows(seed, c["call"], 0, 0, 0, m, k, st)
    b = g.rows(seed, c["call"], 1, 0, 0, n, k, st).T
    cc = g.rows(seed, c["call"], 2, 0, 0, m, n, st)
    return a, b, cc


def sampled(seed, c):
    rng = np.random.default_rng([seed, c["call"], 9])
    rows = np.sort(rng.choice(c["m"], min(c["m"], SAMPLED), replace=False))
    cols = np.sort(rng.choice(c["n"], min(c["n"], SAMPLED), replace=False))
    return rows, cols


def lt_library():
    with open("/proc/self/maps") as f:
        for line in f:
            if "libcublasLt.so" in line:
                return line.split()[-1]
    raise SystemExit("libcublasLt is not loaded")


def run(calls, seed):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    g = generator()
    torch.mm(torch.ones(16, 16, device="cuda"), torch.ones(16, 16, device="cuda"))
    lt = ctypes.CDLL(lt_library())
    messages = []
    callback_type = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)
    keep = callback_type(lambda level, fn, msg: messages.append(((fn or b"").decode(errors="replace"), (msg or b"").decode(errors="replace"))))
    assert lt.cublasLtLoggerSetCallback(keep) == 0 and lt.cublasLtLoggerSetLevel(5) == 0
    out = []
    for c in calls:
        a, b, cc = (torch.from_numpy(np.ascontiguousarray(x)).cuda().to(getattr(torch, c["dtype"] if i < 2 else c["out"])) for i, x in enumerate(operands(g, seed, c)))
        torch.cuda.synchronize()
        messages.clear()
        kw = {} if c["out"] == c["dtype"] else {"out_dtype": getattr(torch, c["out"])}
        d = torch.addmm(cc, a, b, beta=c["beta"], alpha=c["alpha"], **kw)
        torch.cuda.synchronize()
        kernels = [msg.split("algo=[", 1)[1].split("]", 1)[0] for fn, msg in messages if "algo=[" in msg and "Matmul" in (fn + msg)]
        rows, cols = sampled(seed, c)
        sub = d[torch.from_numpy(rows).cuda()][:, torch.from_numpy(cols).cuda()].contiguous().cpu()
        w = {4: torch.int32, 2: torch.int16}[sub.element_size()]
        bits = sub.view(w).numpy().astype(np.int64) & ((1 << (8 * sub.element_size())) - 1)
        out.append(dict(c, rows=rows.tolist(), cols=cols.tolist(), d=[f"{x:x}" for x in bits.reshape(-1)], kernels=kernels))
        del a, b, cc, d
    lt.cublasLtLoggerSetLevel(0)
    return out


def main():
    out = sys.argv[1]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 60301
    count = int(sys.argv[sys.argv.index("--calls") + 1]) if "--calls" in sys.argv else 160
    import torch
    calls = draw(np.random.default_rng(seed), count)
    recs = run(calls, seed)
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    prov = {"gpu": torch.cuda.get_device_name(), "driver": drv, "torch": torch.__version__, "cublas": generator().cublas_version(), "seed": seed,
            "tool": "scripts/torch-addmm-validate.py"}
    with lzma.open(out, "wt") as f:
        for r in recs:
            f.write(json.dumps(dict(r, seed=seed, provenance=prov)) + "\n")
    one = sum(len(r["kernels"]) == 1 for r in recs)
    print(f"{len(recs)} calls ({one} with one logged kernel) -> {out}")


if __name__ == "__main__":
    main()
