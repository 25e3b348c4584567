#!/usr/bin/env python3
"""Where the scales of torch._scaled_mm and the alpha/beta of baddbmm/addmm enter, on the GPU:
designed calls whose outputs tell the candidate formulas apart, recorded for offline analysis.

    python3 scripts/torch-scaled-probe.py OUT.npz [--seed S]

For each FP8 shape: the same e4m3 operands through `_scaled_mm` with unit scales into f32 (the
accumulation alone), with per-tensor scales that are not powers of two into f32, bf16 and f16,
with row-wise scales into bf16, each with and without use_fast_accum; for bmm/baddbmm and addmm:
alpha and beta that are not powers of two. Operands and outputs are stored as raw bits; the
cuBLASLt log (CUBLASLT_LOG_LEVEL=5, set here before torch loads) names each call's kernel and
goes beside OUT as OUT.lt.log. corpus/library/probes/h200-epilogue-60002.npz is this script's
output on an H200 (seed 60002) with fewer of the sampled rows and columns kept.
"""
import os, sys
out = sys.argv[1]
seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 60001
os.environ.setdefault("CUBLASLT_LOG_LEVEL", "5")
os.environ.setdefault("CUBLASLT_LOG_FILE", out + ".lt.log")
import numpy as np
import torch

torch.manual_seed(seed)
dev = "cuda"
rec = {}
meta = []

def bits(t):
    t = t.detach().cpu().contiguous()
    w = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(w).numpy()

def put(key, t):
    rec[key] = bits(t)

def sample(n, count, gen):
    """count indices of 0..n: the first few and random others, sorted (a large GEMM is kept as the
    rows and columns its sampled elements need)."""
    if n <= count:
        return torch.arange(n)
    rest = torch.randperm(n - 8, generator=gen)[: count - 8] + 8
    return torch.cat([torch.arange(8), rest]).sort().values

gen = torch.Generator().manual_seed(seed)

def e4m3(shape, spread):
    x = torch.randn(shape, device=dev) * spread
    return x.clamp(-448, 448).to(torch.float8_e4m3fn)

fp8_shapes = [(16, 4096, 4096), (64, 6144, 2048), (128, 14336, 4096), (1024, 1024, 8192), (7, 512, 1000), (1, 4096, 4096)]
# Per GEMM: rows R of A (and D), columns C of B (and D): 24 x 24 elements of each D recorded.
sa, sb = 0.3, 1.7  # not powers of two: their product rounds in f32
for i, (m, n, k) in enumerate(fp8_shapes):
    a = e4m3((m, k), 2.0)
    b = e4m3((n, k), 2.0)  # B stored n x k row-major: b.t() is column-major k x n
    R, C = sample(m, 24, gen).to(dev), sample(n, 24, gen).to(dev)
    put(f"fp8/{i}/rows", R); put(f"fp8/{i}/cols", C)
    put(f"fp8/{i}/a", a[R])
    put(f"fp8/{i}/b", b[C])
    one = torch.tensor(1.0, device=dev)
    ta, tb = torch.tensor(sa, device=dev), torch.tensor(sb, device=dev)
    row_a = (torch.rand(m, 1, device=dev) + 0.5)
    row_b = (torch.rand(1, n, device=dev) + 0.5)
    put(f"fp8/{i}/row_a", row_a[R])
    put(f"fp8/{i}/row_b", row_b[:, C])
    for fast in (False, True):
        f = int(fast)
        calls = [
            ("unit_f32", one, one, torch.float32),
            ("scaled_f32", ta, tb, torch.float32),
            ("scaled_bf16", ta, tb, torch.bfloat16),
            ("scaled_f16", ta, tb, torch.float16),
            ("row_bf16", row_a, row_b, torch.bfloat16),
        ]
        for name, xa, xb, od in calls:
            try:
                d = torch._scaled_mm(a, b.t(), scale_a=xa, scale_b=xb, out_dtype=od, use_fast_accum=fast)
                torch.cuda.synchronize()
                put(f"fp8/{i}/{name}/fast{f}", d[R][:, C])
                meta.append(f"fp8 {i} {m}x{n}x{k} {name} fast{f} ok")
            except Exception as e:  # noqa: BLE001 - record what torch refuses
                meta.append(f"fp8 {i} {m}x{n}x{k} {name} fast{f} refused: {str(e).splitlines()[0][:200]}")

# baddbmm / bmm / addmm with alpha and beta that are not powers of two.
for dt, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16"), (torch.float32, "f32")):
    for j, (bt, m, n, k) in enumerate([(32, 128, 128, 128), (8, 512, 64, 512), (4, 1, 4096, 4096)]):
        a = torch.randn(bt, m, k, device=dev).to(dt)
        b = torch.randn(bt, k, n, device=dev).to(dt)
        c = torch.randn(bt, m, n, device=dev).to(dt)
        key = f"bmm/{name}/{j}"
        # Batches 0 and the last; rows R, columns C of each.
        R, C, Bs = sample(m, 16, gen).to(dev), sample(n, 16, gen).to(dev), torch.tensor([0, bt - 1], device=dev)
        cut = lambda d: d[Bs][:, R][:, :, C]
        put(key + "/rows", R); put(key + "/cols", C); put(key + "/batches", Bs)
        put(key + "/a", a[Bs][:, R]); put(key + "/b", b[Bs][:, :, C]); put(key + "/c", cut(c))
        put(key + "/bmm", cut(torch.bmm(a, b)))
        put(key + "/baddbmm_a", cut(torch.baddbmm(c, a, b, beta=1.0, alpha=0.3)))
        put(key + "/baddbmm_ab", cut(torch.baddbmm(c, a, b, beta=0.7, alpha=0.3)))
        put(key + "/baddbmm_b0", cut(torch.baddbmm(c, a, b, beta=0.0, alpha=0.3)))
        put(key + "/addmm_ab", torch.addmm(c[0], a[0], b[0], beta=0.7, alpha=0.3)[R][:, C])
        put(key + "/mm0", torch.mm(a[0], b[0])[R][:, C])
        torch.cuda.synchronize()
        meta.append(f"bmm {name} {j} {bt}x{m}x{n}x{k} ok")

# Designed 16-bit baddbmm: small integer operands make acc exact in f32, so where alpha, beta
# and the rounding to 16 bits enter can be told apart from D alone.
for dt, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
    bt, m, n, k = 4, 64, 64, 128
    a = torch.randint(-8, 9, (bt, m, k), device=dev).to(dt)
    b = torch.randint(-8, 9, (bt, k, n), device=dev).to(dt)
    c = (torch.randn(bt, m, n, device=dev) * 100).to(dt)
    key = f"ibmm/{name}"
    put(key + "/a", a); put(key + "/b", b); put(key + "/c", c)
    put(key + "/baddbmm_ab", torch.baddbmm(c, a, b, beta=0.7, alpha=0.3))
    put(key + "/baddbmm_a", torch.baddbmm(c, a, b, beta=1.0, alpha=0.3))
    put(key + "/addmm_ab", torch.addmm(c[0], a[0], b[0], beta=0.7, alpha=0.3))
    torch.cuda.synchronize()
    meta.append(f"ibmm {name} {bt}x{m}x{n}x{k} ok")

# Row-wise scales into f32 where torch allows it (the order of the three factors shows there).
for i, (m, n, k) in enumerate([(64, 512, 1024)]):
    a = e4m3((m, k), 2.0)
    b = e4m3((n, k), 2.0)
    ra = torch.rand(m, 1, device=dev) + 0.5
    rb = torch.rand(1, n, device=dev) + 0.5
    put(f"row/{i}/a", a); put(f"row/{i}/b", b); put(f"row/{i}/ra", ra); put(f"row/{i}/rb", rb)
    one = torch.tensor(1.0, device=dev)
    put(f"row/{i}/unit_f32", torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.float32))
    for od, nm in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        try:
            put(f"row/{i}/row_{nm}", torch._scaled_mm(a, b.t(), scale_a=ra, scale_b=rb, out_dtype=od))
            meta.append(f"row {i} {m}x{n}x{k} {nm} ok")
        except Exception as e:  # noqa: BLE001
            meta.append(f"row {i} {m}x{n}x{k} {nm} refused: {str(e).splitlines()[0][:200]}")

# _int_mm: int8 x int8 -> int32.
for j, (m, n, k) in enumerate([(32, 64, 1024), (64, 4096, 4096)]):
    a = torch.randint(-128, 128, (m, k), device=dev, dtype=torch.int8)
    b = torch.randint(-128, 128, (k, n), device=dev, dtype=torch.int8)
    R, C = sample(m, 16, gen).to(dev), sample(n, 16, gen).to(dev)
    put(f"int/{j}/a", a[R]); put(f"int/{j}/b", b[:, C])
    put(f"int/{j}/d", torch._int_mm(a, b)[R][:, C])
    meta.append(f"int {j} {m}x{n}x{k} ok")

prov = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda, "seed": seed, "sa": sa, "sb": sb}
rec["meta"] = np.frombuffer(("\n".join(meta) + "\n" + repr(prov)).encode(), dtype=np.uint8)
np.savez_compressed(out, **rec)
print("\n".join(meta))
print(prov)
