#!/usr/bin/env python3
"""Python package vs the CLI's binary interchange on the same tiles, side by side in one run.

    python scripts/bench-python.py [--tiles 100000] [--path mma.m16n8k16.f32.f16.f16.f32]
                                   [--bin target/release/mmafuzz] [--repeat 3]

Generates edge-biased tiles of the path with `mmafuzz gen` into an npz, then times, with one
thread and with every core (RAYON_NUM_THREADS):
  cli     `mmafuzz emulate --in tiles.npz --out d.npz` (whole command: read, emulate, write)
  python  mmafuzz.emulate(model, a, b, c) on the arrays (the call)
  py+io   np.load of the npz, the call, np.savez of D (what the CLI's command does)
and checks that both give the same D bit for bit. Prints a table; the best of --repeat runs.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import mmafuzz

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--tiles", type=int, default=100000)
p.add_argument("--path", default="mma.m16n8k16.f32.f16.f16.f32")
p.add_argument("--bin", default="target/release/mmafuzz")
p.add_argument("--repeat", type=int, default=3)
args = p.parse_args()

model = f"sm90:{args.path}"
tmp = tempfile.mkdtemp(prefix="bench-python-")
tiles = os.path.join(tmp, "tiles.npz")
subprocess.run([args.bin, "gen", "--path", args.path, "--count", str(args.tiles), "--seed", "7", "--out", tiles], check=True)


def load(path):
    z = np.load(path)
    header = json.loads(bytes(z["header"]).decode())
    return z["a"], z["b"], z["c"], header


def best(f):
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


rows = []
cores = os.cpu_count()
for threads in sorted({1, cores}):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    out = os.path.join(tmp, f"d{threads}.npz")
    cli, _ = best(lambda: subprocess.run([args.bin, "emulate", "--model", model, "--in", tiles, "--out", out], env=env, check=True, stderr=subprocess.DEVNULL))
    # The Python side runs in a child with the same thread count (rayon reads it once per process).
    code = f"""
import json, time, numpy as np, mmafuzz
z = np.load({tiles!r}); h = json.loads(bytes(z["header"]).decode())
a, b, c = z["a"], z["b"], z["c"]
best_call = best_io = 1e9
for _ in range({args.repeat}):
    t = time.perf_counter(); d = mmafuzz.emulate({model!r}, a, b, c, a_fmt=h["a_fmt"], b_fmt=h["b_fmt"], c_fmt=h["c_fmt"]); best_call = min(best_call, time.perf_counter() - t)
    t = time.perf_counter()
    z2 = np.load({tiles!r}); h2 = json.loads(bytes(z2["header"]).decode())
    d2 = mmafuzz.emulate({model!r}, z2["a"], z2["b"], z2["c"], a_fmt=h2["a_fmt"], b_fmt=h2["b_fmt"], c_fmt=h2["c_fmt"])
    np.savez({os.path.join(tmp, "py.npz")!r}, d=d2)
    best_io = min(best_io, time.perf_counter() - t)
ref = np.load({out!r})["d"]
print(json.dumps({{"call": best_call, "io": best_io, "equal": bool((ref.view(ref.dtype.str.replace("f", "u")) == d.view(d.dtype.str.replace("f", "u"))).all())}}))
"""
    r = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    py = json.loads(r.stdout.strip().splitlines()[-1])
    rows.append((threads, cli, py["call"], py["io"], py["equal"]))

print(f"\n{args.tiles} tiles of {args.path} ({model}), best of {args.repeat}; {cores} cores here\n")
print(f"| threads | CLI npz->npz (s) | Python call (s) | Python load+call+save (s) | CLI / Python call | CLI / Python+io | same D |")
print(f"|---:|---:|---:|---:|---:|---:|:---:|")
for threads, cli, call, io, equal in rows:
    print(f"| {threads} | {cli:.3f} | {call:.3f} | {io:.3f} | {cli / call:.2f} | {cli / io:.2f} | {'yes' if equal else 'NO'} |")
if not all(r[4] for r in rows):
    sys.exit("D differs between the CLI and Python")
