#!/usr/bin/env python3
"""Runs on the GPU machine (python3 with PyTorch): which NaN DGEMM writes when the sum and C
are both NaN, per kernel configuration, torch against `mmafuzz gemm`.

    python3 scripts/torch-nan-duel.py MMAFUZZ OUTDIR SEED [STEER.json ...]

DGEMM carries NaN payloads into D (the f32/f16/bf16 paths write all fraction bits), so where
A·B and C are both NaN, D shows which one the kernel kept. For each shape (torch-specials.py's
and the f64 entries of the steer files) one torch.addmm runs on matrices drawn as
scripts/torch-lib.py draws them, with a duel planted: row k0 of B is +inf (k0 random per GEMM,
so the NaN lands in different split-K slices), and in column k0 of A a third of the rows hold
+-0 (0 * inf: the invalid operation's NaN), a third an input NaN with payload a1, the rest
stay finite (an infinite sum); half of C's elements are NaN with payload c3, random sign.
Prints per GEMM how many elements took the sum's NaN and how many C's, on the GPU and in the
model, and a summary; every element is compared bit for bit.
"""
import json, os, subprocess, sys, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import importlib.util


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


lib = load("torchlib", "torch-lib.py")
sp = load("torchspecials", "torch-specials.py")

PATH = "cublas.gemm.f64.f64.f64.f64"
INF, SIGN = 0x7FF0000000000000, 1 << 63
A_NAN, C_NAN = 0x7FF80000000000A1, 0x7FF80000000000C3


def duel(rng, seed, m, n, k):
    a = lib.gen_bits("float64", seed, 0, m * k).reshape(m, k)
    b = lib.gen_bits("float64", seed, 1, k * n).reshape(k, n)
    c = lib.gen_bits("float64", seed, 2, m * n)
    k0 = int(rng.integers(k))
    b[k0, :] = INF
    kind = rng.integers(0, 3, m)
    sign = rng.integers(0, 2, m).astype(np.uint64) << np.uint64(63)
    a[kind == 0, k0] = sign[kind == 0]
    a[kind == 1, k0] = np.uint64(A_NAN) | sign[kind == 1]
    hit = rng.random(m * n) < 0.5
    c[hit] = np.uint64(C_NAN) | (rng.integers(0, 2, int(hit.sum())).astype(np.uint64) << np.uint64(63))
    return a.reshape(-1), b.reshape(-1), c, k0


def shapes(files):
    out = list(sp.SHAPES)
    for f in files:
        for s in json.load(open(f)):
            if s["path"] == PATH and (s["m"], s["n"], s["k"]) not in out:
                out.append((s["m"], s["n"], s["k"]))
    return out


def main():
    mmafuzz, outdir, seed = os.path.abspath(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(seed)
    jobs = []
    for m, n, k in shapes(sys.argv[4:]):
        s = seed * 100000 + len(jobs)
        a, b, c, k0 = duel(rng, s, m, n, k)
        tag = f"{m}x{n}x{k}"
        npz = os.path.join(outdir, tag + ".npz")
        np.savez(npz, a=a, b=b, c=c)
        jobs.append({"path": PATH, "adt": "float64", "ddt": "float64", "tf32": False, "m": m, "n": n, "k": k, "beta": 1,
                     "k0": k0, "npz": npz, "d": os.path.join(outdir, tag + ".d.npy"), "tag": tag})
    jf, log = os.path.join(outdir, "jobs.json"), os.path.join(outdir, "lt.log")
    json.dump(jobs, open(jf, "w"))
    env = dict(os.environ, CUBLASLT_LOG_LEVEL="5", CUBLASLT_LOG_FILE=log)
    r = subprocess.run([sys.executable, "-c", sp.CHILD, jf], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"child failed: {r.stderr[-3000:]}")
    lines = lib.parse_log(log)
    if len(lines) != len(jobs):
        raise SystemExit(f"{len(lines)} log lines for {len(jobs)} GEMMs")
    total = {"elements": 0, "equal": 0, "duels": 0, "gpu_sum": 0, "gpu_c": 0, "model_sum": 0, "model_c": 0, "refused": 0}
    results = []
    for j, line in zip(jobs, lines):
        config = " ".join(f"{key}={v}" for key, v in line["algo"].items())
        z = np.load(j["npz"])
        emu_file = os.path.join(outdir, j["tag"] + ".emu.npy")
        args = [mmafuzz, "gemm", "--model", "h100:" + PATH, "--config", config, "--out", emu_file]
        for name, shape in (("a", (j["m"], j["k"])), ("b", (j["k"], j["n"])), ("c", (j["m"], j["n"]))):
            f = os.path.join(outdir, f"{j['tag']}.{name}.npy")
            np.save(f, z[name].view(np.float64).reshape(shape))
            args += ["--" + name, f]
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            total["refused"] += 1
            print(f"{j['tag']} [{config}]: mmafuzz: {(p.stderr or p.stdout).strip().splitlines()[-1:]}", flush=True)
            continue
        gpu = np.load(j["d"]).reshape(-1).view(np.uint64)
        emu = np.load(emu_file).reshape(-1).view(np.uint64)
        cbits = z["c"]
        # Elements where the sum is a NaN (a zero or an input NaN met +inf at k0) and C is NaN.
        kind_rows = z["a"].reshape(j["m"], j["k"])[:, j["k0"]]
        low = kind_rows & np.uint64(~SIGN & (2**64 - 1))
        sum_nan = np.repeat((low == 0) | (low == np.uint64(A_NAN)), j["n"])
        c_nan = sp.is_nan(cbits, "float64")
        duel_at = sum_nan & c_nan
        res = {"tag": j["tag"], "config": config, "k0": j["k0"], "elements": int(gpu.size), "equal": int((gpu == emu).sum()),
               "duels": int(duel_at.sum()), "gpu_c": int((gpu[duel_at] == cbits[duel_at]).sum()),
               "model_c": int((emu[duel_at] == cbits[duel_at]).sum())}
        res["gpu_sum"], res["model_sum"] = res["duels"] - res["gpu_c"], res["duels"] - res["model_c"]
        if res["equal"] != res["elements"]:
            i = int(np.nonzero(gpu != emu)[0][0])
            res["first"] = {"index": i, "gpu": hex(int(gpu[i])), "model": hex(int(emu[i])), "c": hex(int(cbits[i]))}
        for key in total:
            total[key] += res.get(key, 0)
        print(f"{j['tag']} k0={j['k0']} [{config}]: {res['equal']}/{res['elements']} equal; {res['duels']} duels: "
              f"GPU kept C's NaN {res['gpu_c']}, the sum's {res['gpu_sum']}; model C's {res['model_c']}, the sum's "
              f"{res['model_sum']}{' first ' + str(res['first']) if 'first' in res else ''}", flush=True)
        results.append(res)
    print("summary: " + json.dumps(total))
    json.dump(results, open(os.path.join(outdir, "duel.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
