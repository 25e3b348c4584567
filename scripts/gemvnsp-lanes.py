#!/usr/bin/env python3
"""The lane count of gemvNSP (cuBLAS's GEMV kernel behind algorithm 13 customOption 10) in each
probe of an FPRev file (scripts/torch-fprev.py), read from anchor 0's row of the measured tree:
a lane chains 4-k blocks, so k = 0's chain holds k 0..3 and then the first k of its lane's next
block, whose count is 5; that k over 4 is the number of lanes. Where no count is 5, the lanes hold
one block each (at least K / 4 lanes). Prints the kernel's instance too (its template's second
integer argument: 32, 16 or 8).

    python3 scripts/gemvnsp-lanes.py FPREV.json.xz
"""
import json, lzma, re, sys


def main(path):
    opener = lzma.open if path.endswith(".xz") else open
    try:
        with opener(path, "rt") as f:
            probes = json.load(f)["probes"]
    except (OSError, lzma.LZMAError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"gemvnsp-lanes.py: {path}: not a readable FPRev file (scripts/torch-fprev.py's output): {e}")
    for p in probes:
        if not p.get("counts") or not p.get("kernels"):
            continue
        row = p["counts"][0]
        nxt = [j for j in range(4, len(row)) if row[j] == 5]
        m = re.search(r"gemvNSP_kernel<(?:[^,]+, ){4}\d+, (\d+),", p["kernels"][0])
        if not m:
            continue
        lanes = f"{nxt[0] // 4} lanes" if nxt else f"at least {len(row) // 4} lanes"
        print(f"{p['m']}x{p['n']}x{p['k']}: {lanes}, gemvNSP<..., 1, {m.group(1)}, 4, ...>")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 scripts/gemvnsp-lanes.py FPREV.json.xz")
    main(sys.argv[1])
