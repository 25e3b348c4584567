#!/usr/bin/env python3
"""Runs on the GPU machine (python3 with PyTorch): library GEMMs as PyTorch runs them.

    python3 scripts/torch-lib.py configs OUT.jsonl [--big] [PATH ...]   kernel configuration per shape
    python3 scripts/torch-lib.py record OUT.jsonl.gz SEED PER_FAMILY FRESH [PATH ...] [--shapes STEER.json]

`configs` runs torch.mm at a grid of shapes in a child process with cuBLASLt's log on and reads
the algorithm cuBLASLt ran for each call (tile, stages, split-K, reduction scheme, ...).
`record` runs GEMMs on matrices made by the shared generator (mmafuzz's `libgen`: element i of
operand X of seed s is a function of (s, X, i), so a GEMM is stored by reference): per path,
PER_FAMILY shapes of each kernel family of the learned table and FRESH shapes off the grid,
each with beta 0 and 1, under cuBLASLt's trace; each record line carries the configuration the
log names for that call and D's bits (all for small D, 1,024 sampled elements otherwise), in
the format of `mmafuzz library replay`.
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


# format -> (storage bits, mantissa bits, exponent bias), and the special values planted:
# scripts/libgen.py's, the one NumPy/PyTorch copy of the shared generator's tables.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from libgen import FMT, special_table  # noqa: E402


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
    return bits.astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width])


# ---- special values planted into the operands (records with "values": "special") -------------
# src/library/libgen.rs implements the same functions: a line (a row of A, a column of B) is
# left alone, made all signed zeros (the element's own sign), or gets one special at one place,
# each decided by (seed, operand, line) alone; C (and the bias) element by element.
def line_plant(seed, operand, line, length):
    """None, ("zeros",) or ("one", position, table index) for one line of A (operand 0) or B (1)."""
    key = (np.uint64(seed) << np.uint64(40)) + (np.uint64(operand + 4) << np.uint64(36)) + np.uint64(line)
    u = int(splitmix64(np.array([key], dtype=np.uint64))[0])
    kind = u % 8
    if kind == 0:
        return ("zeros",)
    if kind in (1, 2):
        return ("one", (u >> 8) % length, (u >> 40) % 9)
    return None


def plant_specials(fmt, seed, operand, bits, rows, cols):
    """`bits` (rows x cols, row-major, logical layout: A as m x k, B as k x n) with specials
    planted: A by rows, B by columns."""
    width = FMT[fmt][0]
    sign = np.uint64(1 << (width - 1))
    table = special_table(fmt)
    m = bits.reshape(rows, cols).copy()
    by_rows = operand == 0
    for line in range(rows if by_rows else cols):
        length = cols if by_rows else rows
        p = line_plant(seed, operand, line, length)
        if p is None:
            continue
        view = m[line, :] if by_rows else m[:, line]
        if p[0] == "zeros":
            view[:] = (view.astype(np.uint64) & sign).astype(m.dtype)
        else:
            view[p[1]] = table[p[2]]
    return m.reshape(-1)


def plant_c(fmt, seed, bits):
    """C (or the bias, C's first n elements): an eighth of the elements +-inf, NaN or +-0."""
    table = special_table(fmt)
    pick = [table[0], table[1], table[2], table[5], table[6]]
    with np.errstate(over="ignore"):
        idx = np.arange(bits.size, dtype=np.uint64)
        key = (np.uint64(seed) << np.uint64(40)) + (np.uint64(6) << np.uint64(36)) + idx
        u = splitmix64(key)
    out = bits.copy()
    hit = (u % np.uint64(8)) == 0
    out[hit] = np.array([pick[int(x)] for x in (u[hit] >> np.uint64(8)) % np.uint64(5)], dtype=bits.dtype)
    return out


def operand_bits(fmt, seed, operand, rows, cols, special, bt=False):
    """An operand's bits in storage order: A (m x k), B (k x n, or n x k stored with `bt`), C
    (m x n), planted with specials where the job says so."""
    if operand == 1 and bt:
        bits = gen_bits(fmt, seed, 1, rows * cols).reshape(cols, rows)
        if special:
            bits = plant_specials(fmt, seed, 1, np.ascontiguousarray(bits.T).reshape(-1), rows, cols).reshape(rows, cols).T
        return np.ascontiguousarray(bits).reshape(-1)
    bits = gen_bits(fmt, seed, operand, rows * cols)
    if not special:
        return bits
    return plant_c(fmt, seed, bits) if operand == 2 else plant_specials(fmt, seed, operand, bits, rows, cols)


def tensor(torch, fmt, bits, shape):
    t = torch.from_numpy(bits.view({8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[bits.dtype.itemsize * 8]).copy())
    return t.view(getattr(torch, fmt)).reshape(shape).cuda()


def to_bits(torch, d):
    width = d.element_size() * 8
    return d.contiguous().view({16: torch.int16, 32: torch.int32, 64: torch.int64}[width]).cpu().numpy().view(
        {16: np.uint16, 32: np.uint32, 64: np.uint64}[width])


# ---- the cuBLASLt log -------------------------------------------------------------------------
TRACE = re.compile(r"\[Trace\]\[cublasLt(\w*)Matmul\].*?Adesc=\[type=(\w+) rows=(\d+) cols=(\d+).*?Bdesc=\[type=(\w+) rows=(\d+) cols=(\d+).*?Ddesc=\[type=(\w+) rows=(\d+) cols=(\d+).*?computeDesc=\[([^\]]*)\] algo=\[([^\]]*)\].*?workSpaceSizeInBytes=(\d+) beta=(\S+)")


def parse_log(path):
    out = []
    for line in open(path, errors="replace"):
        mt = TRACE.search(line)
        if not mt:
            continue
        algo = dict(kv.split("=", 1) for kv in mt.group(12).split())
        out.append({"fn": mt.group(1), "a": [mt.group(2), int(mt.group(3)), int(mt.group(4))],
                    "d": [mt.group(8), int(mt.group(9)), int(mt.group(10))], "compute": mt.group(11),
                    "algo": algo, "workspace": int(mt.group(13)), "beta": mt.group(14)})
    return out


def grid(big=False):
    """The learned grid: m·n·k up to 2^34, or with `big` the shapes above that up to 2^40."""
    ms = [1, 2, 8, 16, 17, 31, 32, 64, 100, 127, 128, 129, 192, 256, 384, 512, 768, 1000, 1024, 1536, 2048, 3072, 4096, 8192]
    ks = [8, 16, 24, 31, 32, 48, 64, 100, 128, 256, 257, 512, 1000, 1024, 1025, 1536, 2048, 3000, 4096, 4097, 5000,
          6144, 8192, 12288, 16384, 32768]
    lo, hi = (2 ** 34, 2 ** 40) if big else (0, 2 ** 34)
    return [(m, n, k) for m in ms for n in ms for k in ks if lo < m * n * k <= hi]


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


def configs(out, paths, big=False):
    import torch
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    prov = {"gpu": torch.cuda.get_device_name(), "driver": drv, "torch": torch.__version__, "cublas": "13.1.0"}
    outdir = os.path.dirname(os.path.abspath(out))
    shapes = grid(big)
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
                    f.write(json.dumps({**prov, "path": path, "m": m, "n": n, "k": k, "beta": beta, "matched": ok,
                                        "fn": line["fn"], "algo": line["algo"], "workspace": line["workspace"]}) + "\n")
                print(f"{path} beta={beta}: {len(lines)} shapes in {time.time()-t:.1f}s", flush=True)
    os.remove(shape_file)



def table_shapes(path, per_family, rng):
    """Shapes of a path's learned table, up to `per_family` of each kernel family
    (algorithm, split or not, reduction scheme), cheapest first among a random draw."""
    import lzma
    name = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "h100", "cublas", f"{path}.configs.tsv.xz")
    if not os.path.exists(name):
        return []
    cfg, fam = {}, {}
    for line in lzma.open(name, "rt"):
        f = line.rstrip("\n").split("\t")
        if f[0].startswith("#"):
            continue
        if f[0] == "cfg":
            algo = dict(kv.split("=", 1) for kv in f[2].split())
            cfg[f[1]] = (algo["algoId"], algo.get("numSplitsK", "1") != "1", algo.get("reductionScheme", ""))
            continue
        m, n, k = int(f[0]), int(f[1]), int(f[2])
        if m * n * k <= 2 ** 31:
            fam.setdefault(cfg[f[4]], []).append((m, n, k))
    out = []
    for key in sorted(fam):
        shapes = fam[key]
        pick = rng.choice(len(shapes), min(per_family, len(shapes)), replace=False)
        out += [shapes[i] for i in sorted(pick)]
    return out


def fresh_shapes(rng, count):
    """Shapes off the learned grid: odd, prime and power-of-two-plus-minus-one sizes."""
    pool = [1, 2, 3, 5, 7, 13, 24, 33, 63, 65, 96, 127, 129, 200, 255, 257, 300, 511, 513, 640, 1023, 1025]
    kpool = [7, 9, 40, 63, 65, 120, 255, 257, 640, 1023, 1025, 1500, 2047, 2049, 2500, 3333, 4095, 4099, 6000, 8191, 10007, 16385]
    return [(int(rng.choice(pool)), int(rng.choice(pool)), int(rng.choice(kpool))) for _ in range(count)]


CHILD_RECORD = r"""
import sys, json, importlib.util, numpy as np, torch
spec = importlib.util.spec_from_file_location("torchlib", sys.argv[2])
lib = importlib.util.module_from_spec(spec); spec.loader.exec_module(lib)
PATHS, gen_bits, tensor, to_bits = lib.PATHS, lib.gen_bits, lib.tensor, lib.to_bits
jobs = json.load(open(sys.argv[3]))
arrays = {}
for ji, j in enumerate(jobs):
    adt, ddt, tf32 = PATHS[j["path"]] if j["path"] in PATHS else (None, None, False)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    m, n, k, s = j["m"], j["n"], j["k"], j["seed"]
    kind = j.get("kind", "mm")
    sp = j.get("values") == "special"
    ob = lambda fmt, operand, rows, cols, bt=False: lib.operand_bits(fmt, s, operand, rows, cols, sp, bt)
    if kind == "scaled_mm":
        f8 = getattr(torch, j["fp8"])
        a = tensor(torch, "uint8", ob(j["fp8"], 0, m, k), (m, k)).view(f8)
        b = tensor(torch, "uint8", ob(j.get("fp8_b", j["fp8"]), 1, k, n, True), (n, k)).view(getattr(torch, j.get("fp8_b", j["fp8"]))).t()
        one = torch.tensor(1.0, device="cuda")
        d = torch._scaled_mm(a, b, one, one, out_dtype=getattr(torch, j["out"]), use_fast_accum=j["fast"])
    else:
        a = tensor(torch, adt, ob(adt, 0, m, k), (m, k))
        if kind == "linear":
            w = tensor(torch, adt, ob(adt, 1, k, n, True), (n, k))
            if j.get("bias"):
                bias = tensor(torch, ddt, ob(ddt, 2, 1, n), (n,))
                d = torch.nn.functional.linear(a, w, bias)
            else:
                d = torch.nn.functional.linear(a, w)
        elif j["beta"]:
            b = tensor(torch, adt, ob(adt, 1, k, n), (k, n))
            c = tensor(torch, ddt, ob(ddt, 2, m, n), (m, n))
            d = torch.addmm(c, a, b) if adt == ddt else torch.addmm(c, a, b, out_dtype=getattr(torch, ddt))
        else:
            b = tensor(torch, adt, ob(adt, 1, k, n), (k, n))
            d = torch.mm(a, b) if adt == ddt else torch.mm(a, b, out_dtype=getattr(torch, ddt))
    torch.cuda.synchronize()
    print("DONE", ji, flush=True)
    bits = to_bits(torch, d).reshape(-1)
    arrays[f"j{ji}"] = bits[np.array(j["idx"], dtype=np.int64)] if j.get("idx") is not None else bits
np.savez(sys.argv[4], **arrays)
"""


def run_jobs(jobs, outdir, tag):
    """Run GEMM jobs in a child with cuBLASLt's trace on; each job gets the logged configuration
    of its call (matched by order and shape) and its D bits."""
    here = os.path.dirname(os.path.abspath(__file__))
    jf, nf, log = (os.path.join(outdir, f"{tag}.{x}") for x in ("jobs.json", "npz", "log"))
    with open(jf, "w") as f:
        json.dump(jobs, f)
    env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=log)
    r = subprocess.run([sys.executable, "-c", CHILD_RECORD, here, os.path.abspath(__file__), jf, nf], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"child failed: {r.stderr[-3000:]}")
    # Split the log by call: trace lines between consecutive calls belong to the earlier one.
    lines = parse_log(log)
    d = np.load(nf)
    if os.environ.get("TORCH_LIB_KEEP_LOG"):
        # Keep cuBLASLt's raw log (appended, call after call) for comparing whole trace lines.
        with open(os.environ["TORCH_LIB_KEEP_LOG"], "a") as keep, open(log, errors="replace") as raw:
            keep.write(raw.read())
    for x in (jf, nf, log):
        os.remove(x)
    if len(lines) != len(jobs):
        print(f"{tag}: {len(lines)} traced matmuls for {len(jobs)} calls: configurations not attached", flush=True)
        lines = [None] * len(jobs)
    return [(j, line, d[f"j{i}"]) for i, (j, line) in enumerate(zip(jobs, lines))]


def record(out, seed, per_family, fresh, paths, steered=None):
    import torch
    rng = np.random.default_rng(seed)
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    provenance = {"gpu": info["gpu"], "driver": drv, "torch": info["torch"], "cublas": "13.1.0"}
    n_out = 0
    with gzip_open(out) as f:
        for path in paths:
            t = time.time()
            jobs = []
            if steered is not None:
                # Shapes chosen by `mmafuzz library coverage --steer` (each with its own beta), or
                # written by `mmafuzz library record --jobs-out` (with "seed", "idx", "bias": 1
                # for F.linear, and the _scaled_mm paths): the same GEMMs as our executor's.
                for s in (s for s in steered if s["path"] == path):
                    m, n, k = s["m"], s["n"], s["k"]
                    idx = s["idx"] if "idx" in s else (None if m * n <= 4096 else sorted(rng.choice(m * n, 1024, replace=False).tolist()))
                    job = {"path": path, "seed": s.get("seed", seed * 100000 + len(jobs)), "m": m, "n": n, "k": k, "beta": s.get("beta", 0), "idx": idx}
                    if s.get("values"):
                        job["values"] = s["values"]
                    if path in SCALED_BY_PATH:
                        fa, fb, fast = SCALED_BY_PATH[path]
                        job.update(beta=0, kind="scaled_mm", fp8=fa, fp8_b=fb, out="float32", fast=fast, layout="bt")
                    elif s.get("bias") or s.get("linear"):
                        # F.linear (the weight n x k, B made as its transpose), with or without a bias.
                        job.update(beta=0, kind="linear", layout="bt")
                        if s.get("bias"):
                            job["bias"] = 1
                    jobs.append(job)
                if jobs:
                    ok = write_records(f, jobs, os.path.dirname(os.path.abspath(out)), provenance)
                    n_out += len(jobs)
                    print(f"{path}: {len(jobs)} steered GEMMs ({ok} with a matching logged configuration) in {time.time()-t:.1f}s", flush=True)
                continue
            shapes = table_shapes(path, per_family, rng) + fresh_shapes(rng, fresh)
            for gi, (m, n, k) in enumerate(shapes):
                idx = lambda: None if m * n <= 4096 else sorted(rng.choice(m * n, 1024, replace=False).tolist())
                for beta in (0, 1):
                    jobs.append({"path": path, "seed": seed * 100000 + len(jobs), "m": m, "n": n, "k": k, "beta": beta, "idx": idx()})
                if PATHS[path][0] == PATHS[path][1] and PATHS[path][0] in ("float16", "bfloat16") and gi % 2 == 0:
                    jobs.append({"path": path, "seed": seed * 100000 + len(jobs), "m": m, "n": n, "k": k, "beta": 0, "idx": idx(),
                                 "kind": "linear", "bias": 1, "layout": "bt"})
            ok = write_records(f, jobs, os.path.dirname(os.path.abspath(out)), provenance)
            n_out += len(jobs)
            print(f"{path}: {len(jobs)} GEMMs ({ok} with a matching logged configuration) in {time.time()-t:.1f}s", flush=True)
        for path, fa, fb, fast in ([] if steered is not None else SCALED):
            t = time.time()
            jobs = []
            for (m, n, k) in scaled_shapes(rng, per_family + fresh):
                idx = None if m * n <= 4096 else sorted(rng.choice(m * n, 1024, replace=False).tolist())
                jobs.append({"path": path, "seed": seed * 100000 + len(jobs), "m": m, "n": n, "k": k, "beta": 0, "idx": idx,
                             "kind": "scaled_mm", "fp8": fa, "fp8_b": fb, "out": "float32", "fast": fast, "layout": "bt"})
            ok = write_records(f, jobs, os.path.dirname(os.path.abspath(out)), provenance)
            n_out += len(jobs)
            print(f"{path}: {len(jobs)} GEMMs ({ok} with a matching logged configuration) in {time.time()-t:.1f}s", flush=True)
    print(f"{n_out} records in {out}")


def write_records(f, jobs, outdir, provenance):
    """Run `jobs` under the trace and write one record line each (the format `mmafuzz library
    replay` reads); returns how many got a logged configuration of their own shape."""
    ok = 0
    for j, line, bits in run_jobs(jobs, outdir, "rec"):
        rec = dict(provenance, path=j["path"], seed=j["seed"], m=j["m"], n=j["n"], k=j["k"], beta=j["beta"])
        if line is not None:
            ok += line["d"][1] == j["n"] and line["d"][2] == j["m"]
            rec["config"] = " ".join(f"{a}={b}" for a, b in line["algo"].items())
        for key in ("bias", "layout", "values"):
            if key in j:
                rec[key] = j[key]
        if j["idx"] is not None:
            rec["idx"] = j["idx"]
        rec["d"] = [format(int(x), f"0{2 * bits.dtype.itemsize}x") for x in bits]
        f.write(json.dumps(rec) + "\n")
    return ok


SCALED = [("cublaslt.matmul.f32.e4m3.e4m3.f32", "float8_e4m3fn", "float8_e4m3fn", False),
          ("cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum", "float8_e4m3fn", "float8_e4m3fn", True),
          ("cublaslt.matmul.f32.e4m3.e5m2.f32", "float8_e4m3fn", "float8_e5m2", False),
          ("cublaslt.matmul.f32.e5m2.e4m3.f32", "float8_e5m2", "float8_e4m3fn", False)]
SCALED_BY_PATH = {p: (fa, fb, fast) for p, fa, fb, fast in SCALED}


def scaled_shapes(rng, count):
    """_scaled_mm needs every dimension a multiple of 16."""
    dims = [16, 32, 48, 64, 96, 128, 256, 512, 1024]
    ks = [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    return [(int(rng.choice(dims)), int(rng.choice(dims)), int(rng.choice(ks))) for _ in range(count)]


def gzip_open(path):
    import gzip
    return gzip.open(path, "wt")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "configs":
        # configs OUT.jsonl [--big] [PATH ...]
        rest = [a for a in sys.argv[3:] if a != "--big"]
        configs(sys.argv[2], rest or list(PATHS), big="--big" in sys.argv[3:])
    elif mode == "record":
        # record OUT.jsonl.gz SEED PER_FAMILY FRESH [PATH ...] [--shapes STEER.json]
        args = sys.argv[6:]
        steered = None
        if "--shapes" in args:
            i = args.index("--shapes")
            steered = json.load(open(args[i + 1]))
            args = args[:i] + args[i + 2:]
        default = list(PATHS) + ([p for p, *_ in SCALED] if steered is not None else [])
        record(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), args or default, steered)
    else:
        raise SystemExit(__doc__)
