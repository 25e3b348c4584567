#!/usr/bin/env python3
"""mmafuzz's emulator against MMA-Sim 2.1.1 on the same tiles, one core each.

    python3 scripts/bench-mmasim.py target/release/mmafuzz \\
        [--path mma.m16n8k16.f32.f16.f16.f32 wgmma.m64n8k16.f32.f16.f16 ...] \\
        [--tiles 10000] [--seed 1] [--mmasim-tiles M]

For each path:
1. `mmafuzz gen --path P --count N --seed S --out tiles.npz` (raw bit patterns);
2. `mmafuzz emulate --model sm90:P --in tiles.npz --out d.npz --d-only` timed as a whole process
   on one core (RAYON_NUM_THREADS=1, `taskset -c 0` where there is one), best of 3; and the same
   without --d-only (the npz out then copies the input's a, b, c beside d), for its own column;
3. MMA-Sim's MMA or WGMMA ("Hopper") on the same tiles on one core (torch.set_num_threads(1)),
   best of 3. Its `__call__` takes one tile (A m×k, B k×n, C m×n); its `dpa` takes the dot
   products as [..., K] vectors, so the tiles go through `dpa` in batches (checked against
   `__call__` on tile 0). --mmasim-tiles M times the first M tiles and scales to N;
4. D compared bit for bit (a NaN against a NaN counts as equal, and is reported).

Needs numpy; torch (>= 2.9) and MMA-Sim only for step 3 (--mmafuzz-only skips it). When
`import mmasim` fails, the wheel (--wheel) is installed with `pip install --no-deps` into a
temporary directory. MMA-Sim builds a C++ FMA for its f64 paths when imported; where that
cannot be built (no ninja or compiler), the other paths run without it.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

# Interchange format -> (torch dtype name, bytes per element).
FORMATS = {
    "f16": ("float16", 2),
    "bf16": ("bfloat16", 2),
    "f32": ("float32", 4),
    "tf32": ("float32", 4),
    "f64": ("float64", 8),
    "e4m3": ("float8_e4m3fn", 1),
    "e5m2": ("float8_e5m2", 1),
}
# Integer views torch.from_numpy takes, per width; and NumPy's floats, for NaN tests.
SIGNED = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
FLOAT = {2: np.float16, 4: np.float32, 8: np.float64}


def best_of(repeat, work):
    """The shortest wall time of `repeat` runs of work(), and the last run's result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def run_mmafuzz(binary, path, model, tiles, seed, work_dir, repeat):
    """Generate the tiles, time emulate on one core; returns (tiles.npz, D bits, seconds with
    --d-only, seconds writing the whole npz)."""
    tiles_npz = os.path.join(work_dir, f"{path}.tiles.npz")
    d_npz = os.path.join(work_dir, f"{path}.d.npz")
    gen = [binary, "gen", "--path", path, "--count", str(tiles), "--seed", str(seed), "--out", tiles_npz]
    subprocess.run(gen, check=True)
    one_core = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    emulate = one_core + [binary, "emulate", "--model", model, "--in", tiles_npz, "--out", d_npz]
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    whole_s, _ = best_of(repeat, lambda: subprocess.run(emulate, env=env, check=True))
    whole_d = np.load(d_npz)["d"]
    seconds, _ = best_of(repeat, lambda: subprocess.run(emulate + ["--d-only"], env=env, check=True))
    d = np.load(d_npz)["d"]
    assert (d == whole_d).all(), f"{path}: --d-only wrote another d"
    return tiles_npz, d, seconds, whole_s


def load_mmasim(wheel, need_fma):
    """torch and mmasim.nv_ptx, on one core; installs the wheel where mmasim is missing."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch
    except ImportError:
        sys.exit("error: MMA-Sim needs torch (>= 2.9), which is not installed here: "
                 "pip install torch, or run with --mmafuzz-only")
    torch.set_num_threads(1)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    try:
        import mmasim  # noqa: F401
    except ImportError:
        if not os.path.exists(wheel):
            sys.exit(f"error: mmasim is not installed and its wheel {wheel} is not there (--wheel)")
        target = tempfile.mkdtemp(prefix="mmasim-")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, wheel], check=True)
        sys.path.insert(0, target)
    try:
        from mmasim import nv_ptx
    except Exception as e:  # its C++ FMA (f64 paths) is built at import: ninja, a compiler
        if need_fma:
            sys.exit(f"error: MMA-Sim's f64 FMA cannot be built here: {e}")
        print(f"note: MMA-Sim's C++ FMA did not build ({str(e).splitlines()[0]}); f64 paths are off", file=sys.stderr)
        import types
        import mmasim.arithmetic
        for name in [m for m in sys.modules if m.startswith("mmasim.nv_ptx")]:
            del sys.modules[name]
        stub = types.ModuleType("mmasim.arithmetic.fma")
        stub.MMA_FMA = None
        sys.modules["mmasim.arithmetic.fma"] = mmasim.arithmetic.fma = stub
        from mmasim import nv_ptx
    return torch, nv_ptx


def run_mmasim(torch, nv_ptx, arch, path, tiles_npz, count, batch, repeat):
    """Time MMA-Sim on the first `count` tiles; returns (D bits, seconds)."""
    z = np.load(tiles_npz)
    header = json.loads(bytes(z["header"]))
    kind, shape_and_type = path.split(".", 1)
    op = {"mma": nv_ptx.MMA, "wgmma": nv_ptx.WGMMA}[kind](arch, shape_and_type)

    def tensor(member, fmt):
        name, width = FORMATS[fmt]
        raw = np.ascontiguousarray(z[member][:count]).view(SIGNED[width])
        return torch.from_numpy(raw).view(getattr(torch, name))

    A, B, C = tensor("a", header["a_fmt"]), tensor("b", header["b_fmt"]), tensor("c", header["c_fmt"])
    m, n = C.shape[1:]

    def simulate(a, b, c):
        # Row i of A and column j of B as the [..., K] vectors of D[i][j].
        a_vectors = a[:, :, None, :].expand(-1, -1, n, -1)
        b_vectors = b.transpose(1, 2)[:, None, :, :].expand(-1, m, -1, -1)
        return op.dpa(a_vectors, b_vectors, c)

    def run():
        return torch.cat([simulate(A[i:i + batch], B[i:i + batch], C[i:i + batch]) for i in range(0, count, batch)])

    width = FORMATS[header["c_fmt"]][1]
    bits = lambda d: d.contiguous().view(getattr(torch, f"int{8 * width}") if width > 1 else torch.uint8).numpy().view(UNSIGNED[width])
    one = op(A[0], B[0], C[0])
    assert (bits(one) == bits(simulate(A[:1], B[:1], C[:1])[0])).all(), "MMA-Sim: dpa in batches differs from __call__"
    seconds, d = best_of(repeat, run)
    return bits(d), seconds


def time_per_tile_calls(torch, nv_ptx, arch, path, tiles_npz, count):
    """Seconds for MMA-Sim's own per-tile API, `op(A, B, C)` once per tile, on `count` tiles."""
    z = np.load(tiles_npz)
    header = json.loads(bytes(z["header"]))
    kind, shape_and_type = path.split(".", 1)
    op = {"mma": nv_ptx.MMA, "wgmma": nv_ptx.WGMMA}[kind](arch, shape_and_type)
    tensors = []
    for member, fmt in (("a", header["a_fmt"]), ("b", header["b_fmt"]), ("c", header["c_fmt"])):
        name, width = FORMATS[fmt]
        raw = np.ascontiguousarray(z[member][:count]).view(SIGNED[width])
        tensors.append(torch.from_numpy(raw).view(getattr(torch, name)))
    A, B, C = tensors
    start = time.perf_counter()
    for i in range(count):
        op(A[i], B[i], C[i])
    return time.perf_counter() - start


def compare(ours, theirs):
    """(elements equal, of which NaN vs NaN with other bits, elements)."""
    floats = FLOAT[ours.dtype.itemsize]
    same = ours == theirs
    nans = np.isnan(ours.view(floats)) & np.isnan(theirs.view(floats))
    return int((same | nans).sum()), int((nans & ~same).sum()), ours.size


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mmafuzz", help="the mmafuzz binary (cargo build --release: target/release/mmafuzz)")
    p.add_argument("--path", nargs="+", default=["mma.m16n8k16.f32.f16.f16.f32"],
                   help="mmafuzz paths that MMA-Sim has too (mma.* and wgmma.* of its Hopper lists)")
    p.add_argument("--tiles", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mmasim-tiles", type=int, help="time MMA-Sim on the first M tiles and scale to --tiles")
    p.add_argument("--model", help="mmafuzz's model (default sm90:PATH)")
    p.add_argument("--arch", default="Hopper", help="MMA-Sim's architecture")
    p.add_argument("--batch", type=int, default=1000, help="tiles per MMA-Sim call")
    p.add_argument("--repeat", type=int, default=3, help="runs timed on each side; the best counts")
    p.add_argument("--wheel", default="/tmp/mmasim/mmasim-2.1.1-py3-none-any.whl")
    p.add_argument("--mmafuzz-only", action="store_true", help="time mmafuzz alone (no torch needed)")
    p.add_argument("--per-tile", type=int, default=0, metavar="M",
                   help="also time MMA-Sim's per-tile API (op(A, B, C) for one tile) on M tiles, scaled to --tiles")
    args = p.parse_args()
    sim_tiles = min(args.mmasim_tiles or args.tiles, args.tiles)

    if not args.mmafuzz_only:
        torch, nv_ptx = load_mmasim(args.wheel, need_fma=any(".f64." in path for path in args.path))
    rows, scaled, per_tile = [], False, []
    with tempfile.TemporaryDirectory() as work_dir:
        for path in args.path:
            model = args.model or f"sm90:{path}"
            tiles_npz, ours, ours_s, whole_s = run_mmafuzz(args.mmafuzz, path, model, args.tiles, args.seed, work_dir, args.repeat)
            if args.mmafuzz_only:
                rows.append((path, args.tiles, ours_s, None, None, "", whole_s))
                continue
            theirs, theirs_s = run_mmasim(torch, nv_ptx, args.arch, path, tiles_npz, sim_tiles, args.batch, args.repeat)
            equal, nan_pairs, total = compare(ours[:sim_tiles], theirs)
            nan_note = f" ({nan_pairs} NaN vs NaN, other bits)" if nan_pairs else ""
            scaled |= sim_tiles < args.tiles
            theirs_s *= args.tiles / sim_tiles
            rows.append((path, args.tiles, ours_s, theirs_s, theirs_s / ours_s, f"{equal}/{total}{nan_note}", whole_s))
            if args.per_tile:
                calls = min(args.per_tile, args.tiles)
                per_tile_s = time_per_tile_calls(torch, nv_ptx, args.arch, path, tiles_npz, calls) * args.tiles / calls
                per_tile.append((path, per_tile_s, per_tile_s / ours_s))

    star = "*" if scaled else ""
    print(f"{'path':<36} {'tiles':>7} {'mmafuzz s':>10} {'MMA-Sim s' + star:>11} {'ratio':>8} {'whole npz s':>12} {'ratio':>8}  elements equal")
    fmt = lambda r: f"{r:8.{1 if r >= 1 else 2}f}" if r is not None else f"{'-':>8}"
    for path, tiles, ours_s, theirs_s, ratio, equal, whole_s in rows:
        theirs = f"{theirs_s:11.3f}" if theirs_s is not None else f"{'-':>11}"
        whole_ratio = theirs_s / whole_s if theirs_s is not None else None
        print(f"{path:<36} {tiles:>7} {ours_s:10.3f} {theirs} {fmt(ratio)} {whole_s:12.3f} {fmt(whole_ratio)}  {equal or '-'}")
    if scaled:
        print(f"* MMA-Sim timed on the first {sim_tiles} tiles and scaled to {args.tiles}; equality over those {sim_tiles}")
    print("one core each: mmafuzz as a whole process (RAYON_NUM_THREADS=1) writing d alone (--d-only), "
          "or the whole npz (a, b, c copied beside d); MMA-Sim its calls alone "
          f"(torch.set_num_threads(1)); best of {args.repeat}; ratio = MMA-Sim s / mmafuzz s")
    for path, seconds, ratio in per_tile:
        print(f"MMA-Sim's per-tile API on {path}: {seconds:.3f} s for {args.tiles} tiles "
              f"(timed on {min(args.per_tile, args.tiles)}, once), {ratio:.1f}x mmafuzz's time")


if __name__ == "__main__":
    main()
