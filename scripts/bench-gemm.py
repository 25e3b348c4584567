#!/usr/bin/env python3
"""Benchmark (GPU machine, python3 with PyTorch): emulate whole FP16 GEMMs with `mmafuzz gemm`
and check every element against torch.mm on the GPU.

    python3 scripts/bench-gemm.py MMAFUZZ_BINARY N [N ...]

For each N: A and B are N×N float16 (randn), D = torch.mm(A, B, out_dtype=float32) on the GPU
under cuBLASLt's trace; the logged kernel is passed to `mmafuzz gemm --config` (so sizes
outside the learned table work too), timed on all cores and on one (RAYON_NUM_THREADS=1, only
for N <= 1024), and D is compared bit for bit. Prints a table.
"""
import importlib.util, os, subprocess, sys, tempfile, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("torchlib", os.path.join(HERE, "torch-lib.py"))
lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib)

CHILD = r"""
import sys, numpy as np, torch
a = torch.from_numpy(np.load(sys.argv[1])).cuda(); b = torch.from_numpy(np.load(sys.argv[2])).cuda()
d = torch.mm(a, b, out_dtype=torch.float32); torch.cuda.synchronize()
np.save(sys.argv[3], d.cpu().numpy())
"""


def main(binary, sizes):
    work = tempfile.mkdtemp(prefix="bench-gemm-")
    cores = os.cpu_count()
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        pa, pb, pg, pd, log = (os.path.join(work, x) for x in ("a.npy", "b.npy", "gpu.npy", "d.npy", "lt.log"))
        np.save(pa, rng.standard_normal((n, n)).astype(np.float16))
        np.save(pb, rng.standard_normal((n, n)).astype(np.float16))
        env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=log)
        r = subprocess.run([sys.executable, "-c", CHILD, pa, pb, pg], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"torch failed: {r.stderr[-2000:]}")
        calls = lib.parse_log(log)
        os.remove(log)
        config = " ".join(f"{k}={v}" for k, v in calls[-1]["algo"].items())
        runs = [("all", cores, {})] + ([("one", 1, {"RAYON_NUM_THREADS": "1"})] if n <= 1024 else [])
        for label, threads, extra in runs:
            t = time.time()
            r = subprocess.run([binary, "gemm", "--model", "h200:cublas.gemm.f32.f16.f16.f32", "--a", pa, "--b", pb, "--out", pd,
                                "--config", config], env=dict(os.environ, **extra), capture_output=True, text=True)
            secs = time.time() - t
            if r.returncode != 0:
                raise SystemExit(f"mmafuzz failed: {r.stdout[-1000:]} {r.stderr[-2000:]}")
            gpu, emu = np.load(pg).view(np.uint32), np.load(pd).view(np.uint32)
            rows.append((n, threads, secs, n ** 3 / secs, int((gpu == emu).sum()), gpu.size, config))
        for x in (pa, pb, pg, pd):
            os.remove(x)
    print(f"mmafuzz gemm, h200:cublas.gemm.f32.f16.f16.f32, whole process wall time (reading .npy, emulating, writing D); {cores} cores")
    print(f"{'N':>6} {'threads':>7} {'seconds':>8} {'terms/s':>10} {'bitwise equal to torch.mm':>28}  kernel")
    for n, th, secs, rate, eq, tot, cfg in rows:
        print(f"{n:>6} {th:>7} {secs:>8.2f} {rate:>10.3e} {eq:>16}/{tot:<11}  {cfg}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], [int(x) for x in sys.argv[2:]])
