#!/usr/bin/env python3
"""Runs on the GPU machine (python3 with PyTorch): library GEMMs with special values, torch
against `mmafuzz gemm`, element by element.

    python3 scripts/torch-specials.py MMAFUZZ OUTDIR [SEED]

For every cublas.gemm path and a few shapes (GEMV-like, odd, K >= 4096), torch.mm and
torch.addmm (beta = 1) run on matrices drawn as scripts/torch-lib.py draws them (random sign and
significand, exponent 2^-4 .. 2^3) with special values planted: in a quarter of A's rows and of
B's columns one element is +-inf, NaN, +-max, +-0 or a +-subnormal; an eighth of A's rows and
of B's columns are all zeros of random sign; an eighth of C's elements are +-0, +-inf or NaN.
The configuration cuBLASLt logs for each call is handed to `mmafuzz gemm --config`, and D is
compared bit for bit (NaN against NaN with other bits counted apart). Prints one line per GEMM
and a summary; writes OUTDIR/specials.json with the mismatches' first examples.
"""
import json, os, subprocess, sys, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import importlib.util
spec = importlib.util.spec_from_file_location("torchlib", os.path.join(HERE, "torch-lib.py"))
lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib)

UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}
SHAPES = [(7, 5, 9), (33, 17, 257), (64, 64, 64), (1, 129, 1025), (129, 1, 1025), (256, 256, 4096), (16, 24, 8192)]


def plant(rng, bits, fmt, rows, cols, along_rows):
    """One special in a quarter of the rows (A) or columns (B); an eighth all signed zeros."""
    width = lib.FMT[fmt][0]
    sp = lib.special_table(fmt)
    m = bits.reshape(rows, cols)
    lines = rows if along_rows else cols
    length = cols if along_rows else rows
    for i in range(lines):
        u = rng.random()
        if u < 0.25:
            j = rng.integers(length)
            v = sp[rng.integers(len(sp))]
            if along_rows:
                m[i, j] = v
            else:
                m[j, i] = v
        elif u < 0.375:
            z = (rng.integers(0, 2, length).astype(np.uint64) << np.uint64(width - 1)).astype(m.dtype)
            if along_rows:
                m[i, :] = z
            else:
                m[:, i] = z
    return m.reshape(-1)


def plant_c(rng, bits, fmt):
    sp = lib.special_table(fmt)
    pick = [sp[0], sp[1], sp[2], sp[5], sp[6]]
    for i in np.nonzero(rng.random(bits.size) < 0.125)[0]:
        bits[i] = pick[rng.integers(len(pick))]
    return bits


CHILD = r"""
import sys, json, numpy as np, torch
jobs = json.load(open(sys.argv[1]))
for j in jobs:
    torch.backends.cuda.matmul.allow_tf32 = j["tf32"]
    z = np.load(j["npz"])
    def t(name, dt):
        a = z[name]
        x = torch.from_numpy(a.view({2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]).copy())
        return x.view(getattr(torch, dt)).cuda()
    a = t("a", j["adt"]).reshape(j["m"], j["k"])
    b = t("b", j["adt"]).reshape(j["k"], j["n"])
    if "c" in z.files:
        c = t("c", j["ddt"]).reshape(j["m"], j["n"])
        d = torch.addmm(c, a, b) if j["adt"] == j["ddt"] else torch.addmm(c, a, b, out_dtype=getattr(torch, j["ddt"]))
    else:
        d = torch.mm(a, b) if j["adt"] == j["ddt"] else torch.mm(a, b, out_dtype=getattr(torch, j["ddt"]))
    torch.cuda.synchronize()
    w = d.element_size() * 8
    bits = d.contiguous().view({16: torch.int16, 32: torch.int32, 64: torch.int64}[w]).cpu().numpy().view({16: np.uint16, 32: np.uint32, 64: np.uint64}[w])
    np.save(j["d"], bits.reshape(j["m"], j["n"]))
    print("DONE", flush=True)
"""


def is_nan(bits, fmt):
    width, mant, _ = lib.FMT[fmt]
    exp_all = ((1 << (width - 1 - mant)) - 1) << mant
    b = bits.astype(np.uint64)
    return ((b & np.uint64(exp_all)) == np.uint64(exp_all)) & ((b & np.uint64((1 << mant) - 1)) != 0)


def main():
    mmafuzz, outdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(seed)
    jobs = []
    for path, (adt, ddt, tf32) in lib.PATHS.items():
        for si, (m, n, k) in enumerate(SHAPES):
            for beta in (0, 1):
                s = seed * 100000 + len(jobs)
                a = plant(rng, lib.gen_bits(adt, s, 0, m * k), adt, m, k, True)
                b = plant(rng, lib.gen_bits(adt, s, 1, k * n), adt, k, n, False)
                tag = f"{path}-{m}x{n}x{k}-b{beta}"
                arrays = {"a": a, "b": b}
                if beta:
                    arrays["c"] = plant_c(rng, lib.gen_bits(ddt, s, 2, m * n), ddt)
                npz = os.path.join(outdir, tag + ".npz")
                np.savez(npz, **arrays)
                jobs.append({"path": path, "adt": adt, "ddt": ddt, "tf32": tf32, "m": m, "n": n, "k": k, "beta": beta,
                             "npz": npz, "d": os.path.join(outdir, tag + ".d.npy"), "tag": tag})
    jf, log = os.path.join(outdir, "jobs.json"), os.path.join(outdir, "lt.log")
    json.dump(jobs, open(jf, "w"))
    env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=log)
    r = subprocess.run([sys.executable, "-c", CHILD, jf], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"child failed: {r.stderr[-3000:]}")
    lines = lib.parse_log(log)
    if len(lines) != len(jobs):
        print(f"warning: {len(lines)} log lines for {len(jobs)} GEMMs: configurations matched by order", flush=True)
    results = []
    for j, line in zip(jobs, lines):
        algo = line["algo"]
        config = " ".join(f"{key}={v}" for key, v in algo.items())
        z = np.load(j["npz"])
        args = [mmafuzz, "gemm", "--model", "h100:" + j["path"], "--config", config, "--out", os.path.join(outdir, j["tag"] + ".emu.npy")]
        for name in ("a", "b", "c"):
            if name in z.files:
                shape = {"a": (j["m"], j["k"]), "b": (j["k"], j["n"]), "c": (j["m"], j["n"])}[name]
                f = os.path.join(outdir, f"{j['tag']}.{name}.npy")
                np.save(f, z[name].reshape(shape))
                args += ["--" + name, f]
        t = time.time()
        p = subprocess.run(args, capture_output=True, text=True)
        res = {"tag": j["tag"], "config": config, "elements": j["m"] * j["n"]}
        if p.returncode != 0:
            res["error"] = (p.stderr or p.stdout).strip().splitlines()[-1:] if (p.stderr or p.stdout) else ["rc %d" % p.returncode]
            print(f"{j['tag']} [{config}]: mmafuzz: {res['error']}", flush=True)
            results.append(res)
            continue
        gpu = np.load(j["d"]).reshape(-1)
        emu = np.load(os.path.join(outdir, j["tag"] + ".emu.npy")).reshape(-1)
        emu = emu.view(UINT[emu.dtype.itemsize * 8]) if emu.dtype.kind != "u" else emu
        gpu = gpu.view(UINT[gpu.dtype.itemsize * 8]) if gpu.dtype.kind != "u" else gpu
        ddt = j["ddt"]
        gn, en = is_nan(gpu, ddt), is_nan(emu, ddt)
        equal = gpu == emu
        nan_other = gn & en & ~equal
        wrong = ~equal & ~nan_other
        res.update(equal=int(equal.sum()), nan_other_bits=int(nan_other.sum()), differ=int(wrong.sum()),
                   gpu_nan=int(gn.sum()), seconds=round(time.time() - t, 2))
        if wrong.any():
            i = int(np.nonzero(wrong)[0][0])
            res["first"] = {"index": i, "gpu": hex(int(gpu[i])), "model": hex(int(emu[i]))}
        if nan_other.any():
            i = int(np.nonzero(nan_other)[0][0])
            res["first_nan"] = {"gpu": hex(int(gpu[i])), "model": hex(int(emu[i]))}
        print(f"{j['tag']} [{config}]: {res['equal']}/{res['elements']} equal, {res['nan_other_bits']} NaN vs NaN other bits, "
              f"{res['differ']} differ ({res['gpu_nan']} NaN on the GPU){' first ' + str(res.get('first')) if 'first' in res else ''}", flush=True)
        results.append(res)
    tot = sum(r["elements"] for r in results if "equal" in r)
    eq = sum(r["equal"] for r in results if "equal" in r)
    nano = sum(r["nan_other_bits"] for r in results if "equal" in r)
    diff = sum(r["differ"] for r in results if "equal" in r)
    errs = sum(1 for r in results if "error" in r)
    print(f"summary: {len(results)} GEMMs, {errs} refused by mmafuzz; {eq}/{tot} elements equal, {nano} NaN vs NaN with other bits, {diff} differ")
    json.dump(results, open(os.path.join(outdir, "specials.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
