#!/usr/bin/env python3
"""Batched GEMMs and GEMMs with alpha and beta as PyTorch runs them on the GPU, recorded for
checking the emulation: torch.bmm, torch.baddbmm, batched torch.matmul and torch.addmm with
alpha and beta, each call's kernels (CUDA kernel names from torch.profiler; cuBLASLt's log
lines where cuBLAS logs any) and D at sampled elements of sampled batches.

    python3 scripts/torch-bmm-probe.py OUT.jsonl.xz [--seed S] [--calls N]

Shapes: attention's two batched GEMMs (Q·Kᵀ: m = query length, n = key length, k = head dim,
Kᵀ a transposed view; P·V: n = head dim, k = key length) with head dims 64 and 128, batch
counts 1-256 (batch x heads folded), query lengths 1-2,048 and key lengths 16-4,096, and
log-uniform shapes up to 4,096 with batch counts up to 64. float16, bfloat16 and float32 (TF32
off). alpha and beta from a fixed list and log-uniform draws.

Operands are drawn from the seed so that a record holds none: element (i, l) of A in batch b
is made of uniforms from PCG64([seed, call, 0, b]) advanced to row i; column j of B
(stored as row j of Bᵀ, n x k) from [seed, call, 1, b]; row i of C from [seed, call, 2, b].
Values use only additions and multiplications of uniforms (no transcendental functions), so
every NumPy rebuilds them bit for bit: `rows` below is the one generator.
"""
import json
import lzma
import os
import subprocess
import sys

import numpy as np

STYLES = ["normal", "wide", "cancel", "int"]
DTYPES = ["float16", "bfloat16", "float32"]
ALPHA_BETA = [(1.0, 1.0), (0.3, 1.0), (0.3, 0.7), (0.3, 0.0), (1.0, 0.5), (-1.0, 1.0), (2.0, -1.0)]
SAMPLED = 8
BATCHES = 3
# Uniforms per value: two for the sum, one for the exponent.
DRAWS = 3
MAX_ELEMENTS = 1 << 24


def rows(seed, call, operand, batch, first, count, k, style):
    """Rows first..first+count of operand 0 (A, m x k), 1 (Bᵀ, n x k) or 2 (C, m x n; k = n)
    of one batch, as float32 values before the cast to the call's dtype."""
    import numpy.random as npr
    bg = npr.PCG64([seed, call, operand, batch])
    bg.advance(first * k * DRAWS)
    u = npr.Generator(bg).random((count, k, DRAWS))
    if style == "int":
        x = np.floor(u[..., 0] * 9.0) - 4.0
    else:
        # A sum of two uniforms, centred (triangular, exact in float64).
        x = (u[..., 0] + u[..., 1] - 1.0) * 2.5
        if style == "wide":
            x = x * np.exp2(np.floor(u[..., 2] * 17.0) - 8.0)
    x = x.astype(np.float32)
    if style == "cancel" and operand in (0, 1):
        half = k // 2
        x[:, half:2 * half] = x[:, :half] if operand == 0 else -x[:, :half]
    return x


def shape_draw(rng, c):
    kind = ["qk", "pv", "random"][c % 3]
    if kind == "random":
        m, n, k = (max(1, round(2 ** rng.uniform(0, 12))) for _ in range(3))
        b = max(1, round(2 ** rng.uniform(0, 6)))
    else:
        d = int(rng.choice([64, 128]))
        sq = int(rng.choice([1, 1, 4, 16, 128, 512, 1024, 2048]))
        skv = sq if sq >= 128 and rng.random() < 0.6 else max(16, round(2 ** rng.uniform(4, 12)))
        b = max(1, round(2 ** rng.uniform(0, 8)))
        m, n, k = (sq, skv, d) if kind == "qk" else (sq, d, skv)
    while b > 1 and b * max(m * k, k * n, m * n) > MAX_ELEMENTS:
        b //= 2
    while b * max(m * k, k * n, m * n) > MAX_ELEMENTS:
        m, n, k = max(1, m // 2), max(1, n // 2), max(1, k // 2)
    return kind, b, m, n, k


def draw(rng, count):
    calls = []
    for c in range(count):
        kind, b, m, n, k = shape_draw(rng, c)
        op = str(rng.choice(["bmm", "bmm", "baddbmm", "baddbmm", "matmul", "addmm"]))
        if op == "addmm":
            b = 1
        ab = ALPHA_BETA[rng.integers(len(ALPHA_BETA))] if rng.random() < 0.7 else (float(np.float32(2 ** rng.uniform(-3, 3))), float(np.float32(2 ** rng.uniform(-3, 3))))
        if op in ("bmm", "matmul"):
            ab = (1.0, 0.0)
        # Bᵀ as a transposed view (attention's Kᵀ, F.linear-like) or B contiguous (P·V).
        b_layout = "t" if kind == "qk" or (kind == "random" and rng.random() < 0.5) else "n"
        calls.append({"call": c, "op": op, "class": kind, "batch": b, "m": m, "n": n, "k": k, "dtype": DTYPES[rng.integers(3)],
                      "style": STYLES[rng.integers(4)], "alpha": ab[0], "beta": ab[1], "b_layout": b_layout})
    return calls


CHILD = r"""
import sys, json, os, numpy as np, torch, importlib.util
spec = importlib.util.spec_from_file_location("v", sys.argv[1]); v = importlib.util.module_from_spec(spec); spec.loader.exec_module(v)
calls = json.load(open(sys.argv[2])); seed = int(sys.argv[3]); out = {}
torch.backends.cuda.matmul.allow_tf32 = False
from torch.profiler import profile, ProfilerActivity
def operand(c, which, n_rows, k):
    dt = getattr(torch, c["dtype"])
    mats = [torch.from_numpy(v.rows(seed, c["call"], which, bi, 0, n_rows, k, c["style"])) for bi in range(c["batch"])]
    return torch.stack(mats).cuda().to(dt)
def bits(t):
    w = {4: torch.int32, 2: torch.int16}[t.element_size()]
    return [f"{x:x}" for x in (t.contiguous().cpu().view(w).numpy().astype(np.int64) & ((1 << (8 * t.element_size())) - 1)).reshape(-1)]
# cuBLASLt's log through its callback, call by call (its log file is written late).
import ctypes
torch.mm(torch.ones(16, 16, device="cuda"), torch.ones(16, 16, device="cuda"))
lib = ctypes.CDLL([l.split()[-1] for l in open("/proc/self/maps") if "libcublasLt.so" in l][0])
messages = []
callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)(lambda level, fn, msg: messages.append((msg or b"").decode(errors="replace")))
lib.cublasLtLoggerSetCallback(callback); lib.cublasLtLoggerSetLevel(5)
# The kernels cuBLASLt logged since the last call.
def lt_lines():
    new = [m.split("algo=[", 1)[1].split("]", 1)[0] for m in messages if "algo=[" in m]
    messages.clear()
    return new
for c in calls:
    b, m, n, k = c["batch"], c["m"], c["n"], c["k"]
    A = operand(c, 0, m, k)
    Bt = operand(c, 1, n, k)
    B = Bt.transpose(1, 2) if c["b_layout"] == "t" else Bt.transpose(1, 2).contiguous()
    C = operand(c, 2, m, n) if c["op"] in ("baddbmm", "addmm") else None
    al, be = c["alpha"], c["beta"]
    def run():
        if c["op"] == "bmm":
            return torch.bmm(A, B)
        if c["op"] == "baddbmm":
            return torch.baddbmm(C, A, B, beta=be, alpha=al)
        if c["op"] == "addmm":
            return torch.addmm(C[0], A[0], B[0], beta=be, alpha=al).unsqueeze(0)
        # Batched matmul as attention writes it: (1, b, m, k) @ (1, b, k, n).
        return torch.matmul(A.unsqueeze(0), B.unsqueeze(0))[0]
    torch.cuda.synchronize()
    lt_lines()
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            D = run(); torch.cuda.synchronize()
    except Exception as e:
        out[c["call"]] = {"refused": str(e).splitlines()[0][:200]}
        continue
    lt = lt_lines()
    kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    rng = np.random.default_rng([seed, c["call"], 9])
    bs = np.sort(rng.choice(b, min(b, v.BATCHES), replace=False))
    rs = np.sort(rng.choice(m, min(m, v.SAMPLED), replace=False)); cs = np.sort(rng.choice(n, min(n, v.SAMPLED), replace=False))
    ix = lambda a: torch.from_numpy(a).cuda()
    sub = D[ix(bs)][:, ix(rs)][:, :, ix(cs)]
    rec = {"batches": bs.tolist(), "rows": rs.tolist(), "cols": cs.tolist(), "d": bits(sub), "kernels": kernels, "lt": lt,
           "a0": bits(A[int(bs[0]), int(rs[0]), :4]), "b0": bits(Bt[int(bs[0]), int(cs[0]), :4])}
    # The same batch as one 2-D call (mm, or addmm with the call's alpha and beta): equal bits?
    i = int(bs[0])
    if c["op"] != "addmm":
        mm = torch.mm(A[i], B[i]) if C is None else torch.addmm(C[i], A[i], B[i], beta=be, alpha=al)
        torch.cuda.synchronize()
        rec["as_mm_equal"] = bool(torch.equal(mm.view(torch.int16 if mm.element_size() == 2 else torch.int32), D[i].contiguous().view(torch.int16 if mm.element_size() == 2 else torch.int32)))
        rec["as_mm_lt"] = lt_lines()
    out[c["call"]] = rec
    del A, B, Bt, C, D
print("done", len(out), flush=True)
json.dump(out, open(sys.argv[4], "w"))
"""


def cublas_version():
    from importlib import metadata
    for d in metadata.distributions():
        if (d.metadata["Name"] or "").lower().startswith("nvidia-cublas"):
            return d.version
    return ""


def main():
    out = sys.argv[1]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 60201
    count = int(sys.argv[sys.argv.index("--calls") + 1]) if "--calls" in sys.argv else 240
    import torch
    calls = draw(np.random.default_rng(seed), count)
    base = out + ".work"
    json.dump(calls, open(base + ".calls.json", "w"))
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", CHILD, os.path.abspath(__file__), base + ".calls.json", str(seed), base + ".json"],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"child failed: {r.stderr[-3000:]}")
    got = json.load(open(base + ".json"))
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    prov = {"gpu": torch.cuda.get_device_name(), "driver": drv, "torch": torch.__version__, "cublas": cublas_version(),
            "seed": seed, "tool": "scripts/torch-bmm-probe.py"}
    with lzma.open(out, "wt") as f:
        for c in calls:
            f.write(json.dumps(dict(c, seed=seed, provenance=prov, **got[str(c["call"])])) + "\n")
    for x in (".calls.json", ".json"):
        if os.path.exists(base + x):
            os.remove(base + x)
    print(f"{len(calls)} calls -> {out}")


if __name__ == "__main__":
    main()
