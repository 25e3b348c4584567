#!/usr/bin/env python3
"""Runs on the GPU machine (python3 with PyTorch): library GEMMs as PyTorch runs them.

    python3 scripts/torch-lib.py configs OUT.jsonl [PATH ...]   kernel configuration per shape
    python3 scripts/torch-lib.py record OUTDIR SEED [PATH ...]    GEMMs of generated matrices

`configs` runs torch.mm at a grid of shapes in a child process with cuBLASLt's log on and reads
the algorithm cuBLASLt ran for each call (tile, stages, split-K, reduction scheme, ...).
`record` runs GEMMs on matrices made by the shared generator (mmafuzz's `libgen`: element i of
operand X of seed s is a function of (s, X, i), so a GEMM is stored by reference) and writes,
per GEMM, D's bits (all of them for small D, a fixed sample of elements otherwise) with the
configuration that produced them.
"""
import json, os, re, subprocess, sys, time
import numpy as np

# path -> (A dtype name, D dtype name, allow_tf32, torch call)
PATHS = {
    "cublas.gemm.f32.f16.f16.f32": ("float16", "float32", False),
    "cublas.gemm.f16.f16.f16.f16": ("float16", "float16", False),
    "cublas.gemm.f32.bf16.bf16.f32": ("bfloat16", "float32", False),
    "cublas.gemm.bf16.bf16.bf16.bf16": ("bfloat16", "bfloat16", False),
    "cublas.gemm.f32.tf32.tf32.f32": ("float32", "float32", True),
    "cublas.gemm.f32.f32.f32.f32": ("float32", "float32", False),
    "cublas.gemm.f64.f64.f64.f64": ("float64", "float64", False),
}

# ---- the shared generator (src/library/libgen.rs implements the same) -------------------------
M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def splitmix64(x):
    x = x + np.uint64(0x9E3779B97F4A7C15)
    z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


# format -> (storage bits, mantissa bits, exponent bias)
FMT = {"float16": (16, 10, 15), "bfloat16": (16, 7, 127), "float32": (32, 23, 127), "float64": (64, 52, 1023)}


def gen_bits(fmt, seed, operand, count):
    """Raw bits of `count` elements: random sign and significand, exponent 2^-4 .. 2^3."""
    with np.errstate(over="ignore"):
        idx = np.arange(count, dtype=np.uint64)
        key = (np.uint64(seed) << np.uint64(40)) + (np.uint64(operand) << np.uint64(36)) + idx
        r = splitmix64(key)
    width, mant, bias = FMT[fmt]
    sign = r >> np.uint64(63)
    e = (r >> np.uint64(56)) & np.uint64(7)
    field = np.uint64(bias - 4) + e
    bits = (sign << np.uint64(width - 1)) | (field << np.uint64(mant)) | (r & np.uint64((1 << mant) - 1))
    return bits.astype({16: np.uint16, 32: np.uint32, 64: np.uint64}[width])


def tensor(torch, fmt, bits, shape):
    t = torch.from_numpy(bits.view({16: np.int16, 32: np.int32, 64: np.int64}[bits.dtype.itemsize * 8]).copy())
    return t.view(getattr(torch, fmt)).reshape(shape).cuda()


def to_bits(torch, d):
    width = d.element_size() * 8
    return d.contiguous().view({16: torch.int16, 32: torch.int32, 64: torch.int64}[width]).cpu().numpy().view(
        {16: np.uint16, 32: np.uint32, 64: np.uint64}[width])


# ---- the cuBLASLt log -------------------------------------------------------------------------
TRACE = re.compile(r"\[Trace\]\[cublasLt(\w*)Matmul\].*?Adesc=\[type=(\w+) rows=(\d+) cols=(\d+).*?Bdesc=\[type=(\w+) rows=(\d+) cols=(\d+).*?Ddesc=\[type=(\w+) rows=(\d+) cols=(\d+).*?computeDesc=\[([^\]]*)\] algo=\[([^\]]*)\].*?workSpaceSizeInBytes=(\d+) beta=(\d+)")


def parse_log(path):
    out = []
    for line in open(path, errors="replace"):
        mt = TRACE.search(line)
        if not mt:
            continue
        algo = dict(kv.split("=", 1) for kv in mt.group(12).split())
        out.append({"fn": mt.group(1), "a": [mt.group(2), int(mt.group(3)), int(mt.group(4))],
                    "d": [mt.group(8), int(mt.group(9)), int(mt.group(10))], "compute": mt.group(11),
                    "algo": algo, "workspace": int(mt.group(13)), "beta": int(mt.group(14))})
    return out


def grid():
    ms = [1, 2, 8, 16, 17, 31, 32, 64, 100, 127, 128, 129, 192, 256, 384, 512, 768, 1000, 1024, 1536, 2048, 3072, 4096, 8192]
    ks = [8, 16, 24, 31, 32, 48, 64, 100, 128, 256, 257, 512, 1000, 1024, 1025, 1536, 2048, 3000, 4096, 4097, 5000,
          6144, 8192, 12288, 16384, 32768]
    return [(m, n, k) for m in ms for n in ms for k in ks if m * n * k <= 2 ** 34]


CHILD = r'''
import torch, sys, json
path, adt, ddt, tf32 = sys.argv[1], getattr(torch, sys.argv[2]), getattr(torch, sys.argv[3]), sys.argv[4] == "1"
shapes = json.load(open(sys.argv[5])); beta = sys.argv[6] == "1"
torch.backends.cuda.matmul.allow_tf32 = tf32
big = max(m * k for m, n, k in shapes), max(k * n for m, n, k in shapes), max(m * n for m, n, k in shapes)
ba, bb, bc = (torch.zeros(x, dtype=adt, device="cuda") for x in big)
bd = torch.zeros(big[2], dtype=ddt, device="cuda")
for m, n, k in shapes:
    a, b = ba[: m * k].view(m, k), bb[: k * n].view(k, n)
    if beta:
        c = bd[: m * n].view(m, n)
        torch.addmm(c, a, b) if adt == ddt else torch.addmm(c, a, b, out_dtype=ddt)
    else:
        torch.mm(a, b) if adt == ddt else torch.mm(a, b, out_dtype=ddt)
torch.cuda.synchronize()
print(len(shapes))
'''


def configs(out, paths):
    outdir = os.path.dirname(os.path.abspath(out))
    shapes = grid()
    shape_file = os.path.join(outdir, "shapes.json")
    with open(shape_file, "w") as f:
        json.dump(shapes, f)
    with open(out, "w") as f:
        for path in paths:
            adt, ddt, tf32 = PATHS[path]
            for beta in (0, 1):
                t = time.time()
                env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=os.path.join(outdir, "lt-cfg.log"))
                r = subprocess.run([sys.executable, "-c", CHILD, path, adt, ddt, "1" if tf32 else "0", shape_file, str(beta)],
                                   env=env, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{path}: child failed: {r.stderr[-1500:]}", flush=True)
                    continue
                lines = parse_log(os.path.join(outdir, "lt-cfg.log"))
                os.remove(os.path.join(outdir, "lt-cfg.log"))
                if len(lines) != len(shapes):
                    print(f"{path} beta={beta}: {len(lines)} log lines for {len(shapes)} calls", flush=True)
                for (m, n, k), line in zip(shapes, lines):
                    # cuBLAS sees the transposed problem: its A is our B (rows = n), its B our A.
                    ok = line["d"][1] == n and line["d"][2] == m
                    f.write(json.dumps({"path": path, "m": m, "n": n, "k": k, "beta": beta, "matched": ok,
                                        "fn": line["fn"], "algo": line["algo"], "workspace": line["workspace"]}) + "\n")
                print(f"{path} beta={beta}: {len(lines)} shapes in {time.time()-t:.1f}s", flush=True)
    os.remove(shape_file)


def record_shapes():
    s = [(128, 128, 64), (128, 128, 1024), (128, 128, 1040), (128, 128, 2048), (128, 128, 3000), (128, 128, 4096),
         (128, 128, 8192), (64, 64, 4096), (16, 16, 16384), (32, 32, 64), (256, 256, 4096), (100, 100, 5000),
         (17, 33, 2049), (1, 128, 4096), (128, 1, 4096), (8, 8, 1024), (64, 96, 777), (48, 80, 6144), (31, 31, 31),
         (1, 1, 8192), (7, 9, 12288), (192, 64, 2500), (96, 128, 1536), (64, 64, 32768), (16, 64, 100),
         (1024, 1024, 1024), (512, 512, 4096), (1000, 1000, 1000), (4096, 64, 8192), (2048, 2048, 2048)]
    return s


def record(outdir, seed, paths):
    import torch
    os.makedirs(outdir, exist_ok=True)
    env_info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    rng = np.random.default_rng(seed)
    meta = []
    for path in paths:
        adt, ddt, tf32 = PATHS[path]
        torch.backends.cuda.matmul.allow_tf32 = tf32
        arrays = {}
        for gi, (m, n, k) in enumerate(record_shapes()):
            gseed = seed * 1000 + gi
            for beta in (0, 1):
                a = tensor(torch, adt, gen_bits(adt, gseed, 0, m * k), (m, k))
                b = tensor(torch, adt, gen_bits(adt, gseed, 1, k * n), (k, n))
                if beta:
                    c = tensor(torch, ddt, gen_bits(ddt, gseed, 2, m * n), (m, n))
                    d = torch.addmm(c, a, b) if adt == ddt else torch.addmm(c, a, b, out_dtype=getattr(torch, ddt))
                else:
                    d = torch.mm(a, b) if adt == ddt else torch.mm(a, b, out_dtype=getattr(torch, ddt))
                bits = to_bits(torch, d).reshape(-1)
                if m * n <= 16384:
                    which = np.arange(m * n)
                else:
                    which = np.sort(rng.choice(m * n, 2048, replace=False))
                name = f"g{gi}b{beta}"
                arrays[name + "_idx"] = which.astype(np.uint32)
                arrays[name + "_d"] = bits[which]
                meta.append({"path": path, "name": name, "seed": gseed, "m": m, "n": n, "k": k, "beta": beta})
        np.savez_compressed(os.path.join(outdir, f"{path}.npz"), **arrays)
        print(f"{path}: {len(record_shapes()) * 2} GEMMs", flush=True)
    with open(os.path.join(outdir, "record.json"), "w") as f:
        json.dump({"info": env_info, "gemms": meta}, f)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "configs":
        configs(sys.argv[2], sys.argv[3:] or list(PATHS))
    elif mode == "record":
        record(sys.argv[2], int(sys.argv[3]), sys.argv[4:] or list(PATHS))
    else:
        raise SystemExit(__doc__)
