#!/usr/bin/env python3
"""Runs on the GPU machine (python3 with PyTorch): reveals cuBLAS's summation tree with FPRev.

    python3 scripts/torch-fprev.py OUT.json[.gz|.xz] SPEC [SPEC ...] [--max-gemms N] [--no-config] [--only REGEX]
    python3 scripts/torch-fprev.py OUT.json[.gz|.xz] --specs FILE ...   (specs one per line)

SPEC is PATH:MxNxK:ANCHORS, PATH one of f64, f32, tf32, f16.f32, bf16.f32, f16 (K <= 8), bf16 (K <= 257),
f32.linear, tf32.linear, f64.linear, bf16.linear (F.linear with a zero bias; see `PATHS`), the same
with .linear_nobias (F.linear without a bias), f16.addmm
(torch.addmm with beta = 1 and a large alpha: f16 D at K <= 2049; see `PATHS`), f64.addmm, f32.addmm,
tf32.addmm, f16.f32.addmm, bf16.f32.addmm (torch.addmm with a zero C), ANCHORS
`all`, a comma list of k positions, `spread:N` (N positions over 0..K-1: 0, 1, K/2, K-1, a few
around multiples of 32 and 64, the rest evenly spaced) or `starts:D` (t and t+1 for every t = 0, D, 2D, ... below K, and K-1: with `@`, count(t, t+1) shows
where each chain over D-deep k-tiles starts, i.e. split-K segments, in a few GEMMs) or
`every:D:N` (0, D, 2D, .., (N-1)D, D-1
and K-1: one anchor in each of the first N D-deep k-tiles, enough to see how split-K slices that
deal k-tiles round robin are combined). ANCHORS ending in `@` probes only at the anchors, not
at every k (count(q,p) for anchor pairs only: how slices are combined, at a fraction of the GEMMs).
Example:

    python3 scripts/torch-fprev.py out.json.xz f64:384x384x1024:all f32:1x384x48:all f16.f32:1x2x1536:spread:48

The method (FPRev). D[i,j] = sum_k A[i,k] B[k,j]. Row i gets one anchor q_i: A = a everywhere but
A[i,q_i] = -BIG; column j gets one probe p_j: B = a everywhere but B[p_j,j] = +BIG. Element (i,j)
then sums -M at k=q_i, +M at k=p_j (M = BIG a) and s = a*a at every other k. With BIG/a large
enough, every partial sum that holds M (or -M) absorbs the small terms added to it, and M and -M
cancel exactly at their lowest common ancestor in the summation tree, so
    count(q,p) = K - D[i,j]/s = number of leaves (terms) under LCA(q,p).
count(q,q) is meaningless and written -1. One torch.mm measures m*n pairs: the anchors go over the
rows in chunks of m (cycled, so extra rows repeat anchors), the probes over all of 0..K-1 in chunks
of n (the last chunk wraps round to 0). Every pair measured more than once is checked to agree.

--only REGEX probes only shapes whose logged configuration matches (the configuration is
recorded for the others). Before the probes one child process runs one torch.mm of every probed shape under cuBLASLt's
trace (CUBLASLT_LOG_LEVEL=5) and the `algo=[...]` it logs is stored with the probe (the
heuristic's choice depends only on the shape, the types and the flags, which the child copies).

Output: {"info": {...}, "probes": [{"path","m","n","k","config","compute","kernels","anchors",
"counts": [[count(q,p) for p in 0..K-1 (or the anchors, with "probes")] for q in anchors], "stats": {...}}]}. In `counts`,
-1: q == p; -2: some measurement of the pair was not an integer (see stats.nonint_examples);
-3: not finite. When measurements of one pair disagree the smallest is written and the pair is
listed in stats.inconsistent_examples.
"""
import gzip, importlib.util, json, lzma, os, re, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))

# path -> (input dtype, output dtype, allow_tf32, a, BIG, accumulator precision p)
PATHS = {
    "f64": ("float64", "float64", False, 2.0 ** -40, 2.0 ** 35, 53),
    "f32": ("float32", "float32", False, 2.0 ** -30, 2.0 ** 15, 24),
    "tf32": ("float32", "float32", True, 2.0 ** -30, 2.0 ** 15, 24),
    "f16.f32": ("float16", "float32", False, 2.0 ** -24, 2.0 ** 15, 24),
    "bf16.f32": ("bfloat16", "float32", False, 2.0 ** -60, 1.0, 24),
    # f16 in and out (D in f16): s = 2^-24 (f16's least subnormal), M = 12 (not a power of two:
    # just below 8 the f32 spacing halves, and -8 + 5s rounds to -8 + 8s); the f32 accumulator
    # absorbs up to 7 tiny terms into M (ulp(12) = 2^-20), so counts are right for K <= 8 only
    # (algorithm 56 runs at K = 8).
    "f16": ("float16", "float16", False, 2.0 ** -12, 3.0 * 2.0 ** 14, 24),
    # bf16 in and out (D in bf16): as bf16.f32, but D = (K - count) s is exact in bf16 only while
    # K - count <= 256, so counts are right for K <= 257.
    "bf16": ("bfloat16", "bfloat16", False, 2.0 ** -60, 1.0, 24),
}
# PATH.linear (f32.linear, tf32.linear, f64.linear, bf16.linear): F.linear(A, W, bias) with W = B^T stored
# (n, k) as F.linear's weight and a zero bias, which reaches cuBLASLt's bias epilogue and its
# own kernel choice; adding +0 leaves the counts as they are.
# PATH.linear_nobias: F.linear(A, W) without a bias (PyTorch's mm with the weight transposed, a
# kernel choice of its own at some shapes).
for _p in ("f32", "tf32", "f64", "bf16"):
    PATHS[_p + ".linear"] = PATHS[_p]
    PATHS[_p + ".linear_nobias"] = PATHS[_p]
# PATH.addmm: torch.addmm(0, A, B, beta=1, alpha=ALPHA) (the beta = 1 GEMM, whose kernels differ
# from torch.mm's), D = alpha * sum. f16.addmm reads the tree of f16-D kernels at any K <= 2049:
# a = 2^-24 (f16's least subnormal, exact in the f32 accumulator), s = a^2 = 2^-48, M = BIG a =
# 2^-9 absorbs up to 2^15 tiny terms, and alpha = 2^48 brings D = K - count to integers that f16
# holds exactly up to 2048 (f16.f32 and f16 need M/s > 2^25 K, which f16's range caps at K <= 8).
PATHS["f16.addmm"] = ("float16", "float16", False, 2.0 ** -24, 2.0 ** 15, 24)
# f64.addmm: DGEMM through torch.addmm with a zero C (alpha = 1), whose GEMV-like kernels at
# 1 x n differ from torch.mm's (algorithm 13 customOption 1).
PATHS["f64.addmm"] = PATHS["f64"]
# f32.addmm, tf32.addmm, f16.f32.addmm, bf16.f32.addmm: the same with f32 D (alpha = 1), the
# beta = 1 kernels of those paths (GEMV variants of their own at 1 x n and m x 1).
for _p in ("f32", "tf32", "f16.f32", "bf16.f32"):
    PATHS[_p + ".addmm"] = PATHS[_p]
ALPHA = {"f16.addmm": 2.0 ** 48, "f64.addmm": 1.0, "f32.addmm": 1.0, "tf32.addmm": 1.0, "f16.f32.addmm": 1.0, "bf16.f32.addmm": 1.0}

CHILD = r'''
import torch, sys, json
jobs = json.load(open(sys.argv[1]))
for din, dout, tf32, m, n, k, linear, alpha in jobs:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.zeros(m, k, dtype=getattr(torch, din), device="cuda")
    b = torch.zeros(k, n, dtype=getattr(torch, din), device="cuda")
    if alpha is not None:
        c = torch.zeros(m, n, dtype=getattr(torch, dout), device="cuda")
        d = torch.addmm(c, a, b, beta=1, alpha=alpha) if din == dout else torch.addmm(c, a, b, beta=1, alpha=alpha, out_dtype=getattr(torch, dout))
    elif linear == 2:
        d = torch.nn.functional.linear(a, b.t().contiguous())
    elif linear:
        d = torch.nn.functional.linear(a, b.t().contiguous(), torch.zeros(n, dtype=getattr(torch, dout), device="cuda"))
    else:
        d = torch.mm(a, b) if din == dout else torch.mm(a, b, out_dtype=getattr(torch, dout))
    torch.cuda.synchronize()
print(len(jobs))
'''


def load_torchlib():
    spec = importlib.util.spec_from_file_location("torchlib", os.path.join(HERE, "torch-lib.py"))
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    return lib


def configs(specs):
    """cuBLASLt's logged configuration for one torch.mm of each (path, m, n, k), in one child."""
    lib = load_torchlib()
    tmp = tempfile.mkdtemp(prefix="fprev-")
    jf, log = os.path.join(tmp, "jobs.json"), os.path.join(tmp, "lt.log")
    jobs = []
    for path, m, n, k, _, _ in specs:
        din, dout, tf32 = PATHS[path][:3]
        jobs.append([din, dout, tf32, m, n, k, 2 if path.endswith(".linear_nobias") else int(path.endswith(".linear")), ALPHA.get(path)])
    with open(jf, "w") as f:
        json.dump(jobs, f)
    env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=log)
    r = subprocess.run([sys.executable, "-c", CHILD, jf], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"config child failed: {r.stderr[-2000:]}", flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
        return [None] * len(specs)
    traced = []
    for line in open(log, errors="replace"):
        mt = lib.TRACE.search(line)
        if mt:
            traced.append({"fn": mt.group(1), "d": [mt.group(8), int(mt.group(9)), int(mt.group(10))],
                           "compute": mt.group(11), "algo": mt.group(12), "workspace": int(mt.group(13))})
    # Match in order: cuBLAS sees the transposed problem, so its D has rows = n, cols = m.
    out, at = [], 0
    for path, m, n, k, _, _ in specs:
        hit = None
        while at < len(traced):
            t = traced[at]
            at += 1
            if t["d"][1] == n and t["d"][2] == m:
                hit = t
                break
        out.append(hit)
    if len(traced) != len(specs):
        print(f"note: {len(traced)} traced matmuls for {len(specs)} calls", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def anchors_of(spec, k):
    if spec == "all":
        return list(range(k))
    if spec.startswith("spread:"):
        want = int(spec.split(":")[1])
        pri = [0, 1, k // 2, k - 1, 2, 31, 32, 33, 63, 64, 65, k // 2 - 1, k // 2 + 1, k - 2, 127, 128, 255, 256,
               k - 33, k - 32, k - 64]
        out = []
        for q in pri:
            if 0 <= q < k and q not in out and len(out) < want:
                out.append(q)
        import numpy as np
        for extra in range(want, 4 * want + 8):
            if len(out) >= want:
                break
            for q in np.linspace(0, k - 1, extra).round().astype(int).tolist():
                if q not in out and len(out) < want:
                    out.append(q)
        return sorted(out)
    if spec.startswith("starts:"):
        step = int(spec.split(":")[1])
        return sorted({q for t in range(0, k, step) for q in (t, t + 1) if q < k} | {k - 1})
    if spec.startswith("every:"):
        step, count = (int(x) for x in spec.split(":")[1:3])
        return sorted(q for q in set(range(0, step * count, step)) | {step - 1, k - 1} if q < k)
    return sorted({int(x) for x in spec.split(",")})


def parse_spec(s):
    path, shape, anc = s.split(":", 2)
    at_anchors = anc.endswith("@")
    anc = anc.rstrip("@")
    if path not in PATHS:
        raise SystemExit(f"unknown path {path!r}: one of {', '.join(PATHS)}")
    m, n, k = (int(x) for x in shape.lower().split("x"))
    anchors = anchors_of(anc, k)
    return path, m, n, k, anchors, (anchors if at_anchors else None)


def kernels_of(torch, fn):
    """Names of the GPU kernels one call of fn launches (empty if the profiler is unavailable)."""
    try:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        names = []
        for e in prof.events():
            dt = str(getattr(e, "device_type", ""))
            if "CUDA" in dt and e.name not in names and not e.name.startswith("Memcpy") and not e.name.startswith("Memset"):
                names.append(e.name)
        return names
    except Exception as ex:  # the profiler is an extra
        return [f"(profiler failed: {ex})"]


def probe(torch, path, m, n, k, anchors, probes=None):
    din, dout, tf32, aval, big, prec = PATHS[path]
    din, dout = getattr(torch, din), getattr(torch, dout)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    s = aval * aval
    dev = "cuda"
    nanch = len(anchors)
    pos = list(probes) if probes else list(range(k))                     # probed k positions
    npr = len(pos)
    ncA, ncP = -(-nanch // m), -(-npr // n)
    anc = torch.tensor(anchors, dtype=torch.int64, device=dev)
    arow = torch.arange(ncA * m, device=dev).view(ncA, m) % nanch      # anchor index of each row
    aq = anc[arow]                                                      # its k position
    pidx = torch.arange(ncP * n, device=dev).view(ncP, n) % npr         # probe index of each column
    pcol = torch.tensor(pos, dtype=torch.int64, device=dev)[pidx]       # its k position
    a_flat = (torch.arange(m, device=dev) * k + aq).contiguous()        # A[i, q_i] in A (m x k)
    b_flat = (pcol * n + torch.arange(n, device=dev)).contiguous()      # B[p_j, j] in B (k x n)
    A = torch.empty(m, k, dtype=din, device=dev)
    B = torch.empty(k, n, dtype=din, device=dev)
    buf = torch.empty(ncA * ncP, m, n, dtype=dout, device=dev)
    mm = (lambda: torch.mm(A, B)) if din == dout else (lambda: torch.mm(A, B, out_dtype=dout))
    if path.endswith(".linear"):
        zero_bias = torch.zeros(n, dtype=dout, device=dev)
        mm = lambda: torch.nn.functional.linear(A, B.t().contiguous(), zero_bias)
    if path.endswith(".linear_nobias"):
        mm = lambda: torch.nn.functional.linear(A, B.t().contiguous())
    if path in ALPHA:
        zero_c, alpha = torch.zeros(m, n, dtype=dout, device=dev), ALPHA[path]
        mm = (lambda: torch.addmm(zero_c, A, B, beta=1, alpha=alpha)) if din == dout else (lambda: torch.addmm(zero_c, A, B, beta=1, alpha=alpha, out_dtype=dout))
        s = s * alpha
    torch.cuda.synchronize()
    t0 = time.time()
    g = 0
    for c in range(ncA):
        A.fill_(aval)
        A.view(-1).scatter_(0, a_flat[c], -big)
        for d in range(ncP):
            B.fill_(aval)
            B.view(-1).scatter_(0, b_flat[d], big)
            buf[g].copy_(mm())
            g += 1
    torch.cuda.synchronize()
    t_gemm = time.time() - t0
    kern = kernels_of(torch, mm)
    # counts, reduced on the GPU over repeated measurements of a pair
    v = (k - buf.double() / s).view(ncA, ncP, m, n)
    keys = (arow[:, None, :, None] * npr + pidx[None, :, None, :]).expand(ncA, ncP, m, n)
    same = (aq[:, None, :, None] == pcol[None, :, None, :]).expand(ncA, ncP, m, n)
    v, keys, same = v.reshape(-1), keys.reshape(-1), same.reshape(-1)
    finite = torch.isfinite(v)
    nonint = finite & (v != torch.round(v)) & ~same
    stats = {"gemms": ncA * ncP, "gemm_seconds": round(t_gemm, 3)}
    stats["nonfinite"] = int((~finite & ~same).sum())
    stats["nonint"] = int(nonint.sum())
    if stats["nonint"]:
        idx = nonint.nonzero().view(-1)[:100]
        stats["nonint_examples"] = [[anchors[int(keys[i]) // npr], pos[int(keys[i]) % npr], float(v[i])] for i in idx.tolist()]
    w = torch.where(same, torch.full_like(v, -1.0), torch.where(finite, torch.where(nonint, torch.full_like(v, -2.0), v), torch.full_like(v, -3.0)))
    lo = torch.zeros(nanch * npr, dtype=torch.float64, device=dev).scatter_reduce(0, keys, w, "amin", include_self=False)
    hi = torch.zeros(nanch * npr, dtype=torch.float64, device=dev).scatter_reduce(0, keys, w, "amax", include_self=False)
    reps = torch.bincount(keys, minlength=nanch * npr)
    stats["repeats_min"], stats["repeats_max"] = int(reps.min()), int(reps.max())
    diff = (lo != hi).nonzero().view(-1)
    stats["inconsistent"] = int(diff.numel())
    if diff.numel():
        stats["inconsistent_examples"] = [[anchors[i // npr], pos[i % npr], float(lo[i]), float(hi[i])] for i in diff[:100].tolist()]
    counts = lo.view(nanch, npr).round().to(torch.int64).cpu().tolist()
    stats["total_seconds"] = round(time.time() - t0, 3)
    del buf, v, keys, same, w
    return counts, stats, kern


def main():
    args = sys.argv[1:]
    max_gemms, want_cfg = 50000, True
    if "--max-gemms" in args:
        i = args.index("--max-gemms")
        max_gemms = int(args[i + 1])
        del args[i:i + 2]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = re.compile(args[i + 1])
        del args[i:i + 2]
    if "--no-config" in args:
        args.remove("--no-config")
        want_cfg = False
    if "--specs" in args:
        i = args.index("--specs")
        args[i:i + 2] = [l.strip() for l in open(args[i + 1]) if l.strip() and not l.startswith("#")]
    if len(args) < 2:
        raise SystemExit(__doc__)
    out, specs = args[0], [parse_spec(s) for s in args[1:]]
    for path, m, n, k, anchors, _ in specs:
        din, dout, tf32, aval, big, prec = PATHS[path]
        if big / aval <= 2.0 ** (prec + 1) * k:
            print(f"warning: {path} K={k}: BIG/a = {big / aval:.3g} <= 2^(p+1) K = {2.0 ** (prec + 1) * k:.3g}: counts may be wrong", flush=True)
    import torch
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda, "driver": drv}
    t = time.time()
    cfgs = configs(specs) if want_cfg else [None] * len(specs)
    print(f"configs: {time.time() - t:.1f}s", flush=True)
    probes = []
    for (path, m, n, k, anchors, at), cfg in zip(specs, cfgs):
        gemms = -(-len(anchors) // m) * -(-(len(at) if at else k) // n)
        rec = {"path": path, "m": m, "n": n, "k": k, "config": cfg["algo"] if cfg else None,
               "compute": cfg["compute"] if cfg else None, "fn": cfg["fn"] if cfg else None, "anchors": anchors}
        if at:
            rec["probes"] = at
        tag = f"{path}:{m}x{n}x{k} ({len(anchors)} anchors, {gemms} GEMMs)"
        if only and not (cfg and only.search(cfg["algo"] or "")):
            print(f"{tag}: skipped, configuration {cfg['algo'] if cfg else None!r} does not match --only", flush=True)
            rec["skipped"] = "configuration does not match --only"
            probes.append(rec)
            continue
        if gemms > max_gemms:
            print(f"{tag}: skipped, more than --max-gemms {max_gemms}", flush=True)
            rec["skipped"] = f"{gemms} GEMMs > {max_gemms}"
            probes.append(rec)
            continue
        try:
            counts, stats, kern = probe(torch, path, m, n, k, anchors, at)
        except Exception as ex:
            print(f"{tag}: failed: {ex!r}", flush=True)
            rec["error"] = repr(ex)
            probes.append(rec)
            torch.cuda.empty_cache()
            continue
        rec.update({"kernels": kern, "stats": stats, "counts": counts})
        probes.append(rec)
        flags = " ".join(f"{x}={stats[x]}" for x in ("nonint", "nonfinite", "inconsistent") if stats[x])
        print(f"{tag}: {stats['total_seconds']:.2f}s (GEMMs {stats['gemm_seconds']:.2f}s) repeats {stats['repeats_min']}..{stats['repeats_max']}"
              f" {flags or 'clean'} | {rec['config']} | {' '.join(kern)}", flush=True)
        torch.cuda.empty_cache()
    text = json.dumps({"info": info, "probes": probes}, separators=(",", ":"))
    with (gzip.open(out, "wt") if out.endswith(".gz") else lzma.open(out, "wt", preset=9) if out.endswith(".xz") else open(out, "w")) as f:
        f.write(text)
    print(f"wrote {out}: {len(probes)} probes, {time.time() - t:.1f}s", flush=True)


if __name__ == "__main__":
    main()
