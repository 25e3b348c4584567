#!/usr/bin/env python3
"""Runs on the GPU machine (python3 with PyTorch): what cuBLAS does inside torch.mm at each shape.

For every path and shape it measures the *chain profile* of K: element p of the profile is
D for a GEMM whose only products are X = 2^24 at k = 0, a small s at k = p and -X at k = K-1.
Within one accumulation chain s meets X (and is cut by the chain's rounding); in another chain
it survives until the partial sums are reduced. The profile therefore shows where split-K
slices start and how the partial sums are combined. Each element of D probes a different p
(p -> row p % m, column (p // m) % n), so one GEMM probes up to m*n positions.

    python3 scripts/torch-probe.py OUT.json [--log] [--only PATH:MxNxK,...]
        --log: also cuBLASLt/cuBLAS logs of a few calls; --only: just these profiles
"""
import json, os, subprocess, sys, time
import torch

DEV = "cuda"

PATHS = {
    # name: (input dtype, output dtype, allow_tf32, small s)
    "f16.f32": (torch.float16, torch.float32, False, 3.0),
    "f16.f16": (torch.float16, torch.float16, False, 3.0),
    "bf16.f32": (torch.bfloat16, torch.float32, False, 3.0),
    "bf16.bf16": (torch.bfloat16, torch.bfloat16, False, 3.0),
    "tf32": (torch.float32, torch.float32, True, 3.0),
    "f32": (torch.float32, torch.float32, False, 1.0),
    "f64": (torch.float64, torch.float64, False, 1.0),
}


def mm(a, b, out_dtype):
    if out_dtype != a.dtype:
        return torch.mm(a, b, out_dtype=out_dtype)
    return torch.mm(a, b)


def profile(path, m, n, k):
    dt, odt, tf32, s = PATHS[path]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    big = 2.0 ** 12 if dt != torch.float64 else 2.0 ** 26
    out = []
    per = m * n
    positions = list(range(1, k - 1))
    for g in range(0, len(positions), per):
        ps = torch.tensor(positions[g:g + per], device=DEV)
        a = torch.zeros(m, k, dtype=torch.float64, device=DEV)
        b = torch.zeros(k, n, dtype=torch.float64, device=DEV)
        a[:, 0], b[0, :] = big, big * (2.0 if dt == torch.float64 else 1.0)
        a[:, k - 1], b[k - 1, :] = -big, big * (2.0 if dt == torch.float64 else 1.0)
        rows, cols = ps % m, (ps // m) % n
        a[rows, ps] = 1.0
        b[ps, cols] = s
        d = mm(a.to(dt), b.to(dt), odt).to(torch.float64)
        out.extend(d[rows, cols].tolist())
    return out


def partition(path, m, n, k, qs):
    """Which k share a chain with q: element (i, j) has s = 1 at k = 0, X at k = q_i (one q per
    row) and -X at its own p. X and -X cancel exactly only inside one chain; anywhere else the
    reduction (or an earlier rounding) absorbs s. Result 1: p is in q_i's chain."""
    dt, odt, tf32, _ = PATHS[path]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    hi, lo = (2.0 ** 27, 2.0 ** 27) if dt == torch.float64 else (2.0 ** 13, 2.0 ** 12)
    rows = {}
    for i, q in enumerate(qs[:m]):
        rows[i] = q
    out = {q: [] for q in rows.values()}
    per = n  # one row per q; each column j of row i probes one p
    positions = [p for p in range(1, k) if p not in out]
    for g in range(0, len(positions), per):
        ps = positions[g:g + per]
        a = torch.zeros(m, k, dtype=torch.float64, device=DEV)
        b = torch.zeros(k, n, dtype=torch.float64, device=DEV)
        a[:, 0], b[0, :] = 1.0, 1.0
        for i, q in rows.items():
            a[i, q] = hi
        for j, p in enumerate(ps):
            b[p, j] = -lo
        for i, q in rows.items():
            b[q, :] = lo
        # element (i, j): 1·1 + hi·lo at q_i + a[i, p_j]·(-lo); a[i, p_j] must be hi for every
        # row: set the whole column p_j of A to hi except where p_j is another row's q.
        for j, p in enumerate(ps):
            a[:, p] = hi
        d = mm(a.to(dt), b.to(dt), odt).to(torch.float64)
        for i, q in rows.items():
            out[q].extend(d[i, :len(ps)].tolist())
    return {str(q): rle([1.0 if v == 1.0 else 0.0 for v in vals]) for q, vals in out.items()}


def rle(xs):
    runs = []
    for x in xs:
        x = float(x)
        if runs and runs[-1][0] == x:
            runs[-1][1] += 1
        else:
            runs.append([x, 1])
    return runs


SHAPES = [
    (128, 128, 64), (128, 128, 512), (128, 128, 1024), (128, 128, 1040), (128, 128, 2048),
    (128, 128, 3000), (128, 128, 4096), (128, 128, 8192), (128, 128, 16384),
    (64, 64, 4096), (16, 16, 16384), (32, 32, 64), (256, 256, 4096), (512, 512, 4096),
    (1024, 1024, 4096), (4096, 4096, 4096), (1024, 1024, 1024), (2048, 2048, 8192),
    (100, 100, 5000), (17, 33, 2049), (1, 128, 4096), (128, 1, 4096), (8, 8, 1024),
    (1000, 1000, 1000), (4096, 64, 8192), (64, 4096, 8192), (8192, 8192, 8192),
]


def log_run(outdir):
    """cuBLAS/cuBLASLt logs of a few calls, in a child process (the variables act at load)."""
    env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=f"{outdir}/lt.log",
               CUBLAS_LOGINFO_DBG="1", CUBLAS_LOGDEST_DBG=f"{outdir}/cublas.log")
    code = r'''
import torch
for (m,n,k) in [(128,128,1024),(128,128,4096),(16,16,16384),(4096,4096,4096),(1000,1000,1000)]:
    for dt, odt in [(torch.float16, torch.float32),(torch.float16, None),(torch.float64, None),(torch.float32,None)]:
        a = torch.randn(m,k,device="cuda").to(dt); b = torch.randn(k,n,device="cuda").to(dt)
        print("CALL", m, n, k, dt, odt, flush=True)
        (torch.mm(a,b,out_dtype=odt) if odt else torch.mm(a,b)); torch.cuda.synchronize()
x = torch.randn(64,256,device="cuda",dtype=torch.float16); w = torch.randn(128,256,device="cuda",dtype=torch.float16); bias=torch.randn(128,device="cuda",dtype=torch.float16)
print("CALL linear", flush=True); torch.nn.functional.linear(x,w,bias); torch.cuda.synchronize()
a8 = torch.randn(64,256,device="cuda").to(torch.float8_e4m3fn); b8 = torch.randn(128,256,device="cuda").to(torch.float8_e4m3fn).t()
one = torch.tensor(1.0, device="cuda")
print("CALL scaled_mm", flush=True); torch._scaled_mm(a8,b8,one,one,out_dtype=torch.float32); torch.cuda.synchronize()
print("CALL scaled_mm fast", flush=True); torch._scaled_mm(a8,b8,one,one,out_dtype=torch.float32,use_fast_accum=True); torch.cuda.synchronize()
'''
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    with open(f"{outdir}/log-run.txt", "w") as f:
        f.write(r.stdout + "\n---stderr---\n" + r.stderr)


def main():
    out = sys.argv[1]
    outdir = os.path.dirname(os.path.abspath(out))
    if "--log" in sys.argv:
        log_run(outdir)
    import glob
    libs = sorted(set(glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "*", "lib", "libcublas*"))))
    info = {
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
        "cublas_libs": [os.path.realpath(p) for p in libs],
        "flags": {k: getattr(torch.backends.cuda.matmul, k) for k in
                  ["allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"]},
    }
    result = {"info": info, "profiles": []}
    t0 = time.time()
    todo = [(p, s) for p in PATHS for s in SHAPES]
    if "--only" in sys.argv:
        spec = sys.argv[sys.argv.index("--only") + 1]
        todo = [(p, tuple(int(x) for x in s.split("x"))) for p, s in (item.split(":") for item in spec.split(","))]
    for path, (m, n, k) in todo:
        if True:
            t = time.time()
            prof = profile(path, m, n, k)
            result["profiles"].append({"path": path, "m": m, "n": n, "k": k, "rle": rle(prof)})
            print(f"{path} {m}x{n}x{k}: {len(rle(prof))} runs {time.time()-t:.2f}s", flush=True)
    if "--partition" in sys.argv:
        spec = sys.argv[sys.argv.index("--partition") + 1]
        result["partitions"] = []
        for item in spec.split(","):
            path, shape = item.split(":")
            m, n, k = (int(x) for x in shape.split("x"))
            qs = sorted(set(int(k * f) for f in (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95)) - {0})
            t = time.time()
            result["partitions"].append({"path": path, "m": m, "n": n, "k": k, "chains": partition(path, m, n, k, qs)})
            print(f"partition {path} {m}x{n}x{k}: {time.time()-t:.2f}s", flush=True)
    result["seconds"] = time.time() - t0
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
