#!/usr/bin/env python3
"""Runs on the GPU machine (python3 with PyTorch): the precision refinement of Markidis et al.
and the plain GEMMs beside it, as PyTorch users write them, under cuBLASLt's trace.

    python3 scripts/torch-scheme.py OUT.jsonl.gz SEED SIZE [SIZE ...]

For each square size N: A and B are f32 matrices from the shared generator (mmafuzz's libgen,
seed SEED·1000 + N, operands 0 and 1). Schemes (src/library/scheme.rs models the same steps):

    f16        D = mm(A16, B16, out_dtype=f32)
    markidis3  D = f16; D = addmm(D, R_A, B16, out_dtype=f32); D = addmm(D, A16, R_B, ...)
    markidis4  markidis3, then D = addmm(D, R_A, R_B, ...)
    f32        D = mm(A, B) with TF32 off (SGEMM)
    tf32       D = mm(A, B) with TF32 on

with A16 = A.half() and R_A = (A - A16.float()).half(). Each output line holds a 32×32 block of
D (rows and columns drawn at random) as f32 bits and the kernel configuration cuBLASLt logged for
each GEMM of the scheme; `mmafuzz library scheme OUT.jsonl.gz` emulates the same steps and
compares, and reports each scheme's error against MPFR.
"""
import importlib.util, json, os, subprocess, sys, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("torchlib", os.path.join(HERE, "torch-lib.py"))
lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib)

SCHEMES = {"f16": 1, "markidis3": 3, "markidis4": 4, "f32": 1, "tf32": 1}

CHILD = r"""
import sys, json, importlib.util, numpy as np, torch
spec = importlib.util.spec_from_file_location("torchlib", sys.argv[1])
lib = importlib.util.module_from_spec(spec); spec.loader.exec_module(lib)
jobs = json.load(open(sys.argv[2]))
out = {}
f32 = torch.float32
for ji, j in enumerate(jobs):
    n, s = j["n"], j["seed"]
    a = lib.tensor(torch, "float32", lib.gen_bits("float32", s, 0, n * n), (n, n))
    b = lib.tensor(torch, "float32", lib.gen_bits("float32", s, 1, n * n), (n, n))
    a16, b16 = a.half(), b.half()
    ra, rb = (a - a16.float()).half(), (b - b16.float()).half()
    sch = j["scheme"]
    torch.backends.cuda.matmul.allow_tf32 = sch == "tf32"
    if sch in ("f32", "tf32"):
        d = torch.mm(a, b)
    else:
        d = torch.mm(a16, b16, out_dtype=f32)
        if sch != "f16":
            d = torch.addmm(d, ra, b16, out_dtype=f32)
            d = torch.addmm(d, a16, rb, out_dtype=f32)
        if sch == "markidis4":
            d = torch.addmm(d, ra, rb, out_dtype=f32)
    torch.cuda.synchronize()
    rows, cols = torch.tensor(j["rows"], device="cuda"), torch.tensor(j["cols"], device="cuda")
    out[f"j{ji}"] = lib.to_bits(torch, d[rows][:, cols].contiguous()).reshape(-1)
np.savez(sys.argv[3], **out)
"""


def main(out, seed, sizes):
    import torch
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    prov = {"gpu": torch.cuda.get_device_name(), "driver": drv, "torch": torch.__version__, "cublas": "13.1.0"}
    rng = np.random.default_rng(seed)
    jobs = []
    for n in sizes:
        rows = sorted(rng.choice(n, min(n, 32), replace=False).tolist())
        cols = sorted(rng.choice(n, min(n, 32), replace=False).tolist())
        for sch in SCHEMES:
            jobs.append({"scheme": sch, "n": n, "seed": seed * 1000 + n, "rows": rows, "cols": cols})
    outdir = os.path.dirname(os.path.abspath(out))
    jf, nf, log = (os.path.join(outdir, f"scheme.{x}") for x in ("jobs.json", "npz", "log"))
    with open(jf, "w") as f:
        json.dump(jobs, f)
    t = time.time()
    env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=log)
    r = subprocess.run([sys.executable, "-c", CHILD, os.path.join(HERE, "torch-lib.py"), jf, nf], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"child failed: {r.stderr[-3000:]}")
    calls = lib.parse_log(log)
    d = np.load(nf)
    want = sum(SCHEMES[j["scheme"]] for j in jobs)
    if len(calls) != want:
        raise SystemExit(f"{len(calls)} traced matmuls for {want} GEMM calls: cannot attach configurations")
    with lib.gzip_open(out) as f:
        at = 0
        for ji, j in enumerate(jobs):
            steps = calls[at:at + SCHEMES[j["scheme"]]]
            at += len(steps)
            rec = dict(prov, **j)
            rec["configs"] = [" ".join(f"{a}={b}" for a, b in c["algo"].items()) for c in steps]
            rec["d"] = [format(int(x), "08x") for x in d[f"j{ji}"]]
            f.write(json.dumps(rec) + "\n")
    for x in (jf, nf, log):
        os.remove(x)
    print(f"{len(jobs)} scheme runs ({len(sizes)} sizes) in {time.time() - t:.1f}s -> {out}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    main(sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3:]])
