#!/usr/bin/env python3
"""Segment-K's split choice against every segment count FPRev measured (no GPU needed).

    python3 scripts/segk-fit.py [--overhead 22] [--area-power 0.5] [--max-cluster 16] [--none C]

Reads the thinned segment-K probes (corpus/library/fprev/*-tf32-segk*.json.xz and
corpus/library/fprev-gaps/*-segk-chain*.json.xz: the segment count of a shape is the size of its
"segment starts" probe, else 1) and the GPU's cluster residency
(corpus/library/probes/h100-cluster-occupancy.json, a block filling an SM). Prints, per file,
how many shapes the choice of src/library/segment_k.rs gives (S as measured, declined because
the cluster size is above --max-cluster, another S); then, over every shape, the overhead r in
k-tiles each tile size allows (the interval of r under which every shape of that tile gets its
measured S) and what that means for the power of the area ratio; and the residency each
cluster size allows with the given overhead. With --area-power 1 --max-cluster 8 it gives the
rule as it stood before the fresh draw of seed 62003.
"""
import argparse, glob, json, lzma, math, os, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def shapes_of(fn):
    with lzma.open(fn, "rt") as f:
        probes = json.load(f)["probes"]
    out = {}
    for p in probes:
        cfg = p.get("config") or ""
        if "algoId=43" not in cfg or "numSplitsK=-1" not in cfg or p.get("counts") is None:
            continue
        e = out.setdefault((p["path"], p["m"], p["n"], p["k"]), [cfg, 1])
        if p.get("probes") == p["anchors"]:
            e[1] = len(p["anchors"])
    return out


def geometry(path, m, n, cfg):
    """(tile m, tile n, cluster size key, blocks) as the model reads the log."""
    tile = cfg.split("tile=MATMUL_TILE_")[1].split()[0]
    tm, tn = map(int, tile.split("x"))
    cl = cfg.split("clusterShape=CLUSTER_SHAPE_")[1].split()[0].split("x")[:2] if "clusterShape=" in cfg else None
    cx, cy = (int(cl[0]), int(cl[1])) if cl else (1, 1)
    along_m = (".linear" in path) == (cl is None)
    rows, cols = (m, n) if along_m else (n, m)
    whole = lambda length, t, c: -(-(-(-length // t)) // c) * c
    return tm, tn, ("none" if cl is None else str(cx * cy)), whole(rows, tm, cx) * whole(cols, tn, cy)


def levels(s):
    return (s - 1).bit_length()


def choose(kt, most, r):
    return min(range(1, most + 1), key=lambda s: (kt / s + r * levels(s), s))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--overhead", type=float, default=22.0)
    ap.add_argument("--area-power", type=float, default=0.5)
    ap.add_argument("--max-cluster", type=int, default=16)
    ap.add_argument("--none", type=int)
    a = ap.parse_args()
    occ_file = os.path.join(ROOT, "corpus/library/probes/h100-cluster-occupancy.json")
    try:
        occ = json.load(open(occ_file))
    except (OSError, ValueError) as e:
        sys.exit(f"segk-fit.py: {occ_file}: {e}")
    measured = {}
    for c in occ["clusters"]:
        if c["smem"] == 204800 and c["error"] == "":
            measured.setdefault(str(c["x"] * c["y"]), c["blocks"])
    resident = {k: v for k, v in measured.items() if int(k) <= a.max_cluster}
    if a.none:
        resident["none"] = a.none
    files = sorted(glob.glob(os.path.join(ROOT, "corpus/library/fprev/*-tf32-segk*.json.xz"))) + sorted(glob.glob(os.path.join(ROOT, "corpus/library/fprev-gaps/*-segk-chain*.json.xz")))
    print(f"# scripts/segk-fit.py --overhead {a.overhead} --area-power {a.area_power} --max-cluster {a.max_cluster}" + (f" --none {a.none}" if a.none else ""))
    print(f"# residency ({occ['gpu']}, blocks filling an SM): " + ", ".join(f"{k}: {v}" for k, v in sorted(resident.items(), key=lambda kv: (kv[0] == 'none', int(kv[0]) if kv[0] != 'none' else 0))))
    every = {}
    for fn in files:
        shapes = shapes_of(fn)
        ok = declined = wrong = 0
        for (path, m, n, k), (cfg, s) in sorted(shapes.items()):
            tm, tn, size, blocks = geometry(path, m, n, cfg)
            every[(path, m, n, k)] = (cfg, s)
            if size not in resident:
                declined += 1
                continue
            r = a.overhead * (8192 / (tm * tn)) ** a.area_power
            chosen = choose(-(-k // 32), max(1, resident[size] // blocks), r)
            if chosen == s:
                ok += 1
            else:
                wrong += 1
                print(f"  {os.path.basename(fn)}: {path} {m}x{n}x{k} tile {tm}x{tn} cluster size {size}: measured {s}, chosen {chosen}")
        print(f"{os.path.relpath(fn, ROOT)}: {len(shapes)} shapes, {ok} as chosen, {declined} declined (no cluster shape, or its size not listed), {wrong} another S")
    # The overhead each tile allows: every other S must cost at least as much as the measured one.
    full = dict(measured, none=a.none or 120)
    bounds = {}
    for (path, m, n, k), (cfg, s) in every.items():
        tm, tn, size, blocks = geometry(path, m, n, cfg)
        most, kt = max(1, full[size] // blocks), -(-k // 32)
        lo, hi = bounds.get((tm, tn), (0.0, math.inf))
        for other in range(1, most + 1):
            dl, dk = levels(s) - levels(other), kt / other - kt / s
            if dl > 0:
                hi = min(hi, dk / dl)
            elif dl < 0:
                lo = max(lo, dk / dl)
        bounds[(tm, tn)] = (lo, hi)
    print("overhead r (k-tiles of the tile itself) every measured shape allows, per tile:")
    for (tm, tn), (lo, hi) in sorted(bounds.items()):
        print(f"  {tm}x{tn}: {lo:.2f} .. {hi:.2f}")
    r0 = bounds.get((128, 64), (a.overhead, a.overhead))
    small, large = bounds.get((64, 64)), bounds.get((128, 128))
    if small and large:
        lo_p = math.log2(r0[0] / large[1]) if large[1] < math.inf else 0.0
        hi_p = math.log2(small[1] / r0[0])
        print(f"power of the area ratio these allow with r(128x64) = {r0[0]:.2f}: {lo_p:.2f} .. {hi_p:.2f}")
    print(f"residency every measured shape allows per cluster size (overhead {a.overhead}, area power {a.area_power}):")
    for size in sorted({geometry(p, m, n, c)[2] for (p, m, n, k), (c, s) in every.items()}, key=lambda x: (x == "none", int(x) if x != "none" else 0)):
        fits = []
        for cand in range(16, 200):
            good = True
            for (path, m, n, k), (cfg, s) in every.items():
                tm, tn, sz, blocks = geometry(path, m, n, cfg)
                if sz != size:
                    continue
                r = a.overhead * (8192 / (tm * tn)) ** a.area_power
                if choose(-(-k // 32), max(1, cand // blocks), r) != s:
                    good = False
                    break
            if good:
                fits.append(cand)
        span = f"{fits[0]} .. {fits[-1]}" if fits else "none"
        print(f"  cluster size {size}: {span} (listed: {resident.get(size, 'not listed')})")


if __name__ == "__main__":
    main()
