#!/usr/bin/env python3
"""Tiles that pin the window floor of a block-scaled FP4 path with ue8m0 scales.

Where the scales are tiny, a block-scaled dot product's alignment window may stop at a fixed
exponent below f32's smallest normal (`align.floor_below_emin`): terms below its lowest place are
dropped. Edge-biased generation meets such sums about once in 10^4 tiles, too rarely to tell the
floors apart (`infer` left floor_below_emin in {0, 5, 6, 7, 8, 13} for MMA-Sim's K = 64 paths).
These tiles do it directly: every element sums one term of scale 2^E1 (value ±1, or ±36 from
6·6) and one small term ∓2^E2 of the opposite sign from another scale block, C = 0 (or a tiny C,
or -0); a floor keeps the small term (the result is one ulp nearer zero under truncation) exactly
when E2 is at or above its lowest place. Rows and columns sweep E2 from -197 to -150, across
every floor candidate's lowest place (-161 - n for floor n, E1 - 35 for none).

    python3 scripts/window-floor-cases.py --path tcgen05.mma.m128n8k64.mxf4.block32.f32.e2m1.e2m1.ue8m0 > cases.jsonl
    mmafuzz record --path PATH --in cases.jsonl --oracle external-npz:... --corpus corpus/mmasim/blackwell --label "..."

Cases are JSONL in `mmafuzz gen`'s layout (a: m×k, b: k×n, c: m×n row-major raw-bit hex; scale_a
m × (k/block), scale_b (k/block) × n).
"""
import argparse
import json
import re
import sys

E2M1 = {1.0: 0x2, -1.0: 0xA, 6.0: 0x7, -6.0: 0xF}


def shape(pid):
    m = re.search(r"m(\d+)n(\d+)k(\d+)", pid)
    blk = re.search(r"\.block(\d+)\.", pid)
    if not m or not blk or not pid.endswith("ue8m0") or "e2m1.e2m1" not in pid:
        sys.exit(f"error: {pid} is not a block-scaled e2m1 x e2m1 path with ue8m0 scales")
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), int(blk.group(1))


def ue8m0(e):
    if not -127 <= e <= 127:
        raise ValueError(f"scale 2^{e} out of ue8m0's range")
    return e + 127


def tile(m, n, k, block, e1, big, sign, c_bits, second_k, e2_of):
    """One tile: A[i][0]·B[0][j] = sign·big at scale 2^e1, A[i][second_k]·B[second_k][j] = -sign at
    scale 2^e2_of(i, j); every other element of A and B is zero."""
    nb = k // block
    a = [0] * (m * k)
    b = [0] * (k * n)
    root = 6.0 if big == 36 else 1.0
    for i in range(m):
        a[i * k] = E2M1[sign * root]
        a[i * k + second_k] = E2M1[-sign * 1.0]
    for j in range(n):
        b[j] = E2M1[root]
        b[second_k * n + j] = E2M1[1.0]
    blk2 = second_k // block
    # Scale exponents: row i's A scale and column j's B scale multiply, so split each target
    # exponent between them (both within ue8m0's 2^-127..2^127).
    sa = [0] * (m * nb)
    sb = [0] * (nb * n)
    for i in range(m):
        for t in range(nb):
            sa[i * nb + t] = ue8m0(0)
        sa[i * nb] = ue8m0(e1 + 40)
    for j in range(n):
        for t in range(nb):
            sb[t * n + j] = ue8m0(0)
        sb[j] = ue8m0(-40)
    for i in range(m):
        for j in range(n):
            ea, eb = e2_of(i, j)
            sa[i * nb + blk2] = ue8m0(ea)
            sb[blk2 * n + j] = ue8m0(eb)
    hexes = lambda xs, w: [format(x, f"0{w}x") if w > 1 else format(x, "x") for x in xs]
    return {"a_fmt": "e2m1", "c_fmt": "f32", "m": m, "n": n, "k": k, "a": hexes(a, 1), "b": hexes(b, 1),
            "c": [format(c_bits, "08x")] * (m * n), "scale_fmt": "ue8m0", "scale_block": block,
            "scale_a": hexes(sa, 2), "scale_b": hexes(sb, 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", required=True)
    args = ap.parse_args()
    m, n, k, block = shape(args.path)
    second_k = k // 2  # another scale block (and another group of 16) than k = 0's
    out = []
    # E2 = ea_i + eb_j: rows take ea_i = base - (i mod 6), columns eb_j = -60 - 6j, so the m×n
    # elements sweep E2 over 48 consecutive exponents ending at base - 60 (rows beyond 6 repeat).
    def sweep(top):
        return lambda i, j: (top + 60 - (i % 6), -60 - 6 * j)
    for e1 in (-126, -130, -134, -139, -142, -146, -150, -160):
        for sign in (-1, 1):
            out.append(tile(m, n, k, block, e1, 1, sign, 0, second_k, sweep(-150)))
    for e1 in (-139, -146):  # a group sum of 36: the window hangs from the scale, not the value
        out.append(tile(m, n, k, block, e1, 36, -1, 0, second_k, sweep(-150)))
    for c_bits in (0x00000001, 0x80000001, 0x80000000):  # a tiny C, and -0
        for e1 in (-142, -150):
            out.append(tile(m, n, k, block, e1, 1, -1, c_bits, second_k, sweep(-150)))
    for case in out:
        print(json.dumps(case, separators=(",", ":")))


if __name__ == "__main__":
    main()
