#!/usr/bin/env python3
"""Runs on the GPU machine (python3 with PyTorch): which kernel cuBLASLt runs for each call
PyTorch makes, densely over shapes, for learning a GPU's kernel tables and predictors.

    python3 scripts/torch-trace.py learn OUT.tsv.gz SECONDS [--seed S] [--jobs J] [PATH ...]
    python3 scripts/torch-trace.py validate OUT.tsv.gz SECONDS [--seed S] [--jobs J] [--raw LINES.jsonl.gz] [PATH ...]

For every path and every call PyTorch makes on it (`mm`: torch.mm; `addmm`: torch.addmm with a
full C; `linear`: F.linear without a bias, x·wᵀ with w (n, k) as nn.Linear holds it;
`linear_bias`: F.linear with a bias; `scaled_mm`: torch._scaled_mm on FP8 with unit scales)
it runs shapes drawn from the learning distributions below, for at most SECONDS per call kind,
on uninitialised operands (cuBLASLt's choice depends on the shape, types, layout and alignment,
not on the values), in a child process under cuBLASLt's trace log, and writes each GEMM's
path, op, m, n, k and the logged kernel (`algo=[...]`), after a first line with the
provenance (GPU name, SM count, driver, torch and cuBLAS versions).

The learning distributions (seed S, 58001 by default) never produce a shape of the validation
set: `family_shapes()` is removed from the draw. `validate` draws the validation set after the
predictors were learned (seed 58101 by default): per path 2,000 shapes with m, n, k log-uniform in
1..16384, each with one of the path's calls in turn, and every model-family layer
(`FAMILIES`) at decode and prefill sizes through F.linear with and without a bias (FP8 paths:
torch._scaled_mm, m, n, k rounded up to multiples of 16, as it needs); any shape of the learning draw is left out of it.
`mmafuzz library check-predict` compares the predictors with what cuBLASLt logged for them.
"""
import ctypes, gzip, json, math, os, subprocess, sys, time
import numpy as np

# path -> (A dtype, D dtype, allow_tf32, the ops PyTorch makes on it)
PATHS = {
    "cublas.gemm.f32.f16.f16.f32": ("float16", "float32", False, ["mm", "addmm"]),
    "cublas.gemm.f16.f16.f16.f16": ("float16", "float16", False, ["mm", "addmm", "linear", "linear_bias"]),
    "cublas.gemm.f32.bf16.bf16.f32": ("bfloat16", "float32", False, ["mm", "addmm"]),
    "cublas.gemm.bf16.bf16.bf16.bf16": ("bfloat16", "bfloat16", False, ["mm", "addmm", "linear", "linear_bias"]),
    "cublas.gemm.f32.tf32.tf32.f32": ("float32", "float32", True, ["mm", "addmm", "linear", "linear_bias"]),
    "cublas.gemm.f32.f32.f32.f32": ("float32", "float32", False, ["mm", "addmm", "linear", "linear_bias"]),
    "cublas.gemm.f64.f64.f64.f64": ("float64", "float64", False, ["mm", "addmm", "linear", "linear_bias"]),
    "cublaslt.matmul.f32.e4m3.e4m3.f32": ("float8_e4m3fn", "float32", False, ["scaled_mm"]),
    "cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum": ("float8_e4m3fn", "float32", False, ["scaled_mm"]),
    "cublaslt.matmul.f32.e4m3.e5m2.f32": ("float8_e4m3fn", "float32", False, ["scaled_mm"]),
    "cublaslt.matmul.f32.e5m2.e4m3.f32": ("float8_e5m2", "float32", False, ["scaled_mm"]),
}
FP8_B = {"cublaslt.matmul.f32.e4m3.e5m2.f32": "float8_e5m2", "cublaslt.matmul.f32.e5m2.e4m3.f32": "float8_e4m3fn"}

# Largest m·n·k traced, and largest operand (elements), to keep each call short.
MAX_MNK = 2 ** 41
MAX_OPERAND = 2 ** 29

# ---- the validation's model-family layers ------------------------------------------------------
# (family, [(n, k) of each linear layer]): attention's fused QKV and output projections, the
# FFN's up/gate and down projections, the vocabulary head, from each family's published config.
FAMILIES = [
    ("llama-2-7b", [(12288, 4096), (4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096)]),
    ("llama-2-13b", [(15360, 5120), (5120, 5120), (13824, 5120), (5120, 13824), (32000, 5120)]),
    ("llama-3-8b", [(6144, 4096), (4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096)]),
    ("llama-3-70b", [(10240, 8192), (8192, 8192), (28672, 8192), (8192, 28672)]),
    ("mistral-7b", [(6144, 4096), (4096, 4096), (14336, 4096), (4096, 14336), (32000, 4096)]),
    ("qwen2-7b", [(4608, 3584), (3584, 3584), (18944, 3584), (3584, 18944)]),
    ("gemma-7b", [(12288, 3072), (3072, 4096), (24576, 3072), (3072, 24576)]),
    ("phi-3-mini", [(9216, 3072), (3072, 3072), (16384, 3072), (3072, 8192), (32064, 3072)]),
    ("gpt2", [(2304, 768), (768, 768), (3072, 768), (768, 3072), (50257, 768)]),
    ("bert-large", [(3072, 1024), (1024, 1024), (4096, 1024), (1024, 4096)]),
    ("opt-6.7b", [(4096, 4096), (16384, 4096), (4096, 16384), (50272, 4096)]),
    ("falcon-7b", [(4672, 4544), (4544, 4544), (18176, 4544), (4544, 18176)]),
]
# Tokens a call holds: decode (a batch of 1-8 sequences) and prefill.
DECODE_M = [1, 2, 3, 4, 5, 6, 7, 8]
PREFILL_M = [128, 256, 512, 1024, 2048, 4096]


def family_shapes():
    """Every (m, n, k) of the model-family layers at decode and prefill sizes."""
    return {(m, n, k) for _, layers in FAMILIES for (n, k) in layers for m in DECODE_M + PREFILL_M}


def log_uniform(rng, lo, hi, size):
    """Integers in lo..hi, log-uniform."""
    return np.clip(np.floor(np.exp(rng.uniform(math.log(lo), math.log(hi + 1), size))), lo, hi).astype(np.int64)


def learning_shapes(rng, count, fp8=False):
    """`count` shapes (in random order) from four distributions: log-uniform m, n, k in
    1..65536 (40%); layer-like n, k multiples of 64 in 256..32768 with m log-uniform in 1..16384
    (30%); decode, m in 1..16 (20%); n in 1..16 (10%). FP8 shapes are rounded up to multiples of
    16 (torch._scaled_mm needs them)."""
    parts = []
    a = int(count * 0.4)
    parts.append(np.stack([log_uniform(rng, 1, 65536, a) for _ in range(3)], 1))
    b = int(count * 0.3)
    nk = lambda: (log_uniform(rng, 4, 512, b) * 64)
    parts.append(np.stack([log_uniform(rng, 1, 16384, b), nk(), nk()], 1))
    c = int(count * 0.2)
    parts.append(np.stack([rng.integers(1, 17, c), log_uniform(rng, 1, 65536, c), log_uniform(rng, 1, 65536, c)], 1))
    d = count - a - b - c
    parts.append(np.stack([log_uniform(rng, 1, 65536, d), rng.integers(1, 17, d), log_uniform(rng, 1, 65536, d)], 1))
    shapes = np.concatenate(parts)
    if fp8:
        shapes = (shapes + 15) // 16 * 16
    rng.shuffle(shapes)
    held_out = family_shapes()
    out, seen = [], set()
    for m, n, k in shapes.tolist():
        s = (m, n, k)
        if s in held_out or s in seen or m * n * k > MAX_MNK or max(m * k, k * n, m * n) > MAX_OPERAND:
            continue
        seen.add(s)
        out.append(s)
    return out


# ---- the child: one path's calls under the trace log -------------------------------------------
CHILD = r'''
import torch, sys, json, time
spec = json.load(open(sys.argv[1]))
adt, ddt = getattr(torch, spec["a"]), getattr(torch, spec["d"])
torch.backends.cuda.matmul.allow_tf32 = spec["tf32"]
shapes, deadline = spec["shapes"], spec["seconds"]
done = open(spec["done"], "w")
plan = [(op, [s for s in shapes]) for op in spec["ops"]] if spec["calls"] is None else [(None, spec["calls"])]
for op0, items in plan:
    t0 = time.time()
    for item in items:
        op, (m, n, k), cls = (op0, item, "") if op0 is not None else (item[0], item[1:4], " " + item[4])
        if time.time() - t0 > deadline:
            break
        if op == "scaled_mm":
            a = torch.empty(m, k, dtype=torch.uint8, device="cuda").view(adt)
            b = torch.empty(n, k, dtype=torch.uint8, device="cuda").view(getattr(torch, spec["b"])).t()
            one = torch.tensor(1.0, device="cuda")
            torch._scaled_mm(a, b, one, one, out_dtype=ddt, use_fast_accum=spec["fast"])
        else:
            x = torch.empty(m, k, dtype=adt, device="cuda")
            if op in ("mm", "addmm"):
                b = torch.empty(k, n, dtype=adt, device="cuda")
                if op == "mm":
                    torch.mm(x, b) if adt == ddt else torch.mm(x, b, out_dtype=ddt)
                else:
                    c = torch.empty(m, n, dtype=ddt, device="cuda")
                    torch.addmm(c, x, b) if adt == ddt else torch.addmm(c, x, b, out_dtype=ddt)
            else:
                w = torch.empty(n, k, dtype=adt, device="cuda")
                bias = torch.empty(n, dtype=adt, device="cuda") if op == "linear_bias" else None
                torch.nn.functional.linear(x, w, bias)
        done.write(f"{op} {m} {n} {k}{cls}\n")
    torch.cuda.synchronize()
    done.flush()
'''


def provenance():
    import torch
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    props = torch.cuda.get_device_properties(0)
    torch.mm(torch.zeros(8, 8, device="cuda"), torch.zeros(8, 8, device="cuda"))
    lt = None
    for line in open("/proc/self/maps"):
        if "libcublasLt.so" in line:
            lt = line.split()[-1]
            break
    version = None
    if lt:
        v = ctypes.CDLL(lt).cublasLtGetVersion
        v.restype = ctypes.c_size_t
        raw = v()
        version = f"{raw // 10000}.{raw // 100 % 100}.{raw % 100}"
    return {"gpu": torch.cuda.get_device_name(), "sm_count": props.multi_processor_count, "driver": drv,
            "torch": torch.__version__, "cublas": version, "cuda": torch.version.cuda}


def parse_log(path):
    """(op-free) trace records: cuBLAS's D rows/cols and the algo text, in call order; and
    the raw lines."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import re
    trace = re.compile(r"\[Trace\]\[cublasLt(\w*)Matmul\].*?Ddesc=\[type=\w+ rows=(\d+) cols=(\d+).*?algo=\[([^\]]*)\].*?workSpaceSizeInBytes=(\d+)")
    out = []
    for line in open(path, errors="replace"):
        mt = trace.search(line)
        if mt:
            out.append((int(mt.group(2)), int(mt.group(3)), mt.group(4), int(mt.group(5)), line.rstrip("\n")))
    return out


def run_path(path, shapes, seconds, workdir, calls=None):
    adt, ddt, tf32, ops = PATHS[path]
    tag = path.replace(".", "_")
    spec = {"a": adt, "d": ddt, "b": FP8_B.get(path, adt), "tf32": tf32, "fast": path.endswith("fast_accum"),
            "shapes": shapes, "seconds": seconds, "ops": ops, "done": os.path.join(workdir, tag + ".done"), "calls": calls}
    sf, log = os.path.join(workdir, tag + ".json"), os.path.join(workdir, tag + ".log")
    json.dump(spec, open(sf, "w"))
    env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=log)
    return subprocess.Popen([sys.executable, "-c", CHILD, sf], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), spec, log


def collect(path, spec, log):
    calls = [l.split() for l in open(spec["done"])] if os.path.exists(spec["done"]) else []
    lines = parse_log(log) if os.path.exists(log) else []
    out, raw, j = [], {}, 0
    for op, m, n, k, *cls in calls:
        m, n, k = int(m), int(n), int(k)
        # cuBLAS sees the transposed problem: its D is n rows by m columns. A call the log
        # missed (none seen) is skipped, not paired with the next call's line.
        if j < len(lines) and lines[j][0] == n and lines[j][1] == m:
            out.append({"path": path, "op": op, "m": m, "n": n, "k": k, "config": lines[j][2], "workspace": lines[j][3], "cls": cls[0] if cls else None, "line": lines[j][4]})
            raw.setdefault(op, lines[j][4])
            j += 1
    return out, raw, len(calls), len(lines)


def validation_jobs(path, seed):
    """(op, m, n, k) of the validation set of `path`, and the shape class of each."""
    _, _, _, ops = PATHS[path]
    fp8 = path.startswith("cublaslt")
    rng = np.random.default_rng([seed, list(PATHS).index(path)])
    learned = set(learning_shapes(np.random.default_rng([58001, list(PATHS).index(path)]), 60000, fp8=fp8))
    jobs = []
    shapes = np.stack([log_uniform(rng, 1, 16384, 3200) for _ in range(3)], 1)
    if fp8:
        shapes = (shapes + 15) // 16 * 16
    for i, (m, n, k) in enumerate(shapes.tolist()):
        if (m, n, k) in learned or m * n * k > MAX_MNK or max(m * k, k * n, m * n) > MAX_OPERAND:
            continue
        jobs.append((ops[len(jobs) % len(ops)], m, n, k, "random"))
        if len(jobs) == 2000:
            break
    fam_ops = ["scaled_mm"] if fp8 else [o for o in ops if o.startswith("linear")] or ["mm"]
    for (m, n, k) in sorted(family_shapes()):
        if fp8:
            m, n, k = ((x + 15) // 16 * 16 for x in (m, n, k))
        if m * n * k > MAX_MNK * 4:
            continue
        cls = "decode" if m <= 16 else "prefill"
        for op in fam_ops:
            jobs.append((op, m, n, k, cls))
    return jobs


def learn(out, seconds, seed, jobs, paths, validate=False, raw_out=None):
    """Trace every path's calls and write OUT: a JSON first line (provenance, seed), then per
    path `path<TAB>NAME`, its kernels `cfg<TAB>ID<TAB>ALGO` and its GEMMs `OP<TAB>M<TAB>N<TAB>K<TAB>ID`
    (the form `mmafuzz library fit` reads). With `raw_out`, every GEMM's logged line is also
    written there (gzipped JSON lines: path, op, m, n, k, line)."""
    import tempfile
    prov = provenance()
    workdir = tempfile.mkdtemp(prefix="torch-trace-")
    todo = list(paths)
    running, n_total = [], 0
    raw_all = {}
    raw_f = gzip.open(raw_out, "wt") if raw_out else None
    with gzip.open(out, "wt") as f:
        f.write(json.dumps({"provenance": prov, ("validate_seed" if validate else "learn_seed"): seed, "seconds_per_op": seconds}) + "\n")
        while todo or running:
            while todo and len(running) < jobs:
                p = todo.pop(0)
                if validate:
                    vj = validation_jobs(p, seed)
                    proc, spec, log = run_path(p, [j[1:4] for j in vj], seconds, workdir, calls=[list(j) for j in vj])
                else:
                    shapes = learning_shapes(np.random.default_rng([seed, list(PATHS).index(p)]), 60000, fp8=p.startswith("cublaslt"))
                    proc, spec, log = run_path(p, shapes, seconds, workdir)
                running.append((p, proc, spec, log, time.time()))
            time.sleep(0.5)
            for r in list(running):
                p, proc, spec, log, t = r
                if proc.poll() is None:
                    continue
                running.remove(r)
                recs, raw, calls, lines = collect(p, spec, log)
                if proc.returncode != 0:
                    print(f"{p}: child failed ({proc.returncode}): {proc.stderr.read()[-1500:]}", flush=True)
                ids = {}
                f.write(f"path\t{p}\n")
                for rec in recs:
                    if rec["config"] not in ids:
                        ids[rec["config"]] = len(ids)
                        f.write(f"cfg\t{ids[rec['config']]}\t{rec['config']}\n")
                    cls = f"\t{rec['cls']}" if rec["cls"] else ""
                    f.write(f"{rec['op']}\t{rec['m']}\t{rec['n']}\t{rec['k']}\t{ids[rec['config']]}{cls}\n")
                n_total += len(recs)
                raw_all[p] = raw
                for rec in recs if raw_f else []:
                    raw_f.write(json.dumps({k: rec[k] for k in ("path", "op", "m", "n", "k", "line")}) + "\n")
                by_op = {}
                for rec in recs:
                    by_op[rec["op"]] = by_op.get(rec["op"], 0) + 1
                print(f"{p}: {calls} calls, {lines} trace lines, {len(recs)} paired {by_op}, {len(ids)} kernels, in {time.time()-t:.0f}s", flush=True)
    with open(os.path.join(os.path.dirname(os.path.abspath(out)), "raw-trace-lines.json"), "w") as f:
        json.dump(raw_all, f, indent=1)
    if raw_f:
        raw_f.close()
    import shutil
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"{n_total} traced GEMMs in {out} on {prov}")


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("learn", "validate"):
        raise SystemExit(__doc__)
    args = sys.argv[4:]
    opt = lambda name, default: int(args[args.index(name) + 1]) if name in args else default
    validate = sys.argv[1] == "validate"
    seed, jobs = opt("--seed", 58101 if validate else 58001), opt("--jobs", 3)
    rest = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or not args[i - 1].startswith("--"))]
    raw = args[args.index("--raw") + 1] if "--raw" in args else None
    rest = [a for a in rest if a != raw]
    learn(sys.argv[2], float(sys.argv[3]), seed, jobs, rest or list(PATHS), validate, raw)
