#!/usr/bin/env python3
"""A small PyTorch program for `mmafuzz library trace` (GPU machine, python3 with PyTorch):
a two-layer MLP block with a vocabulary head, in bf16, f16, TF32 and f32, at decode and prefill
sizes, plus torch.mm and torch.addmm, and every GEMM's operands and result saved.

    mmafuzz library trace --out TABLES -- python3 scripts/example-model.py GEMMS.npz

GEMMS.npz holds `calls` (JSON: per GEMM its op (mm, addmm, linear), dtype, tf32 and the keys
of its operands: x, w as F.linear takes them, bias; a, b, c for mm/addmm) and the arrays:
operands (each saved once) and `i.y`, torch's result of GEMM i; bf16 as raw 16-bit integers. `mmafuzz.torch` and `mmafuzz gemm --table TABLES`
emulate each of them from these.
"""
import json, sys
import numpy as np
import torch
import torch.nn.functional as F

saved = {}
calls = []
first = {}


def raw(t):
    t = t.detach().cpu().contiguous()
    return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


def keep(op, dtype, tf32, y, **operands):
    i = len(calls)
    names = {}
    for name, t in operands.items():
        # A weight used by several calls is saved once; later calls name the first's key.
        key = first.setdefault(id(t), (f"{i}.{name}", t))[0]
        if key == f"{i}.{name}":
            saved[key] = raw(t)
        names[name] = key
    calls.append({"op": op, "dtype": dtype, "tf32": tf32, "operands": names})
    saved[f"{i}.y"] = raw(y)
    return y


def block(x, p, dtype, tf32):
    """x (batch, tokens, 64) -> logits (batch, tokens, 160): up (bias) -> GELU -> down (bias),
    residual, head (no bias)."""
    h = keep("linear", dtype, tf32, F.linear(x, p["up"], p["up_b"]), x=x, w=p["up"], bias=p["up_b"])
    h = F.gelu(h)
    d = keep("linear", dtype, tf32, F.linear(h, p["down"], p["down_b"]), x=h, w=p["down"], bias=p["down_b"])
    r = x + d
    return keep("linear", dtype, tf32, F.linear(r, p["head"]), x=r, w=p["head"])


def main(out):
    g = torch.Generator().manual_seed(2026)
    for name, dtype, tf32 in (("bf16", torch.bfloat16, False), ("f16", torch.float16, False), ("tf32", torch.float32, True), ("f32", torch.float32, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        rnd = lambda *s, scale=1.0: (torch.randn(*s, generator=g) * scale).to(dtype).cuda()
        p = {"up": rnd(128, 64, scale=0.1), "up_b": rnd(128, scale=0.1), "down": rnd(64, 128, scale=0.05),
             "down_b": rnd(64, scale=0.1), "head": rnd(160, 64, scale=0.1)}
        for batch, tokens in ((1, 1), (3, 1), (2, 9)):
            block(rnd(batch, tokens, 64), p, name, tf32)
        a, b, c = rnd(24, 200), rnd(200, 40), rnd(24, 40)
        keep("mm", name, tf32, torch.mm(a, b), a=a, b=b)
        keep("addmm", name, tf32, torch.addmm(c, a, b), c=c, a=a, b=b)
    torch.cuda.synchronize()
    saved["calls"] = np.array(json.dumps(calls))
    np.savez_compressed(out, **saved)
    print(f"{len(calls)} GEMMs saved to {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
