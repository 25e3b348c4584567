#!/usr/bin/env python3
"""Tiles that tell apart how a path treats zeros of either sign and subnormal operands.

Whether a flushed operand keeps its sign, whether -0 enters as -0 or +0, and which sign an exact
zero sum takes (`inputs.subnormals` = keep / flush / flush_positive, `inputs.c_subnormals`,
`specials.zero_sign`) show only where every product of an element is a zero or tiny and C is a
zero or subnormal, or where a product cancels C exactly. Edge-biased generation rarely makes a
whole dot product of such terms (20,000 CDNA2 bf16 tiles did not split keep from flush_positive);
these tiles are made of nothing else, in seven families that take turns: every A and B element
±0, ±the smallest or largest subnormal, ±1, ±the smallest normal or ±2^(p + 1) (a subnormal
times it is normal; half or more zeros), C likewise in its format; four families of products that are all zeros or subnormals times a
normal, of one sign per tile (B of that sign throughout, or B's sign chosen per product, for
either sign), over C a zero or subnormal of either sign; C cancelled exactly by one product
(x·1 against C = -x) among zero products; and C cancelled into the subnormal range by one
product (a flushing accumulator makes it a zero of its sign) before zero products of one sign.

    python3 scripts/signed-zero-cases.py --path mfma.m16n16k8.f32.bf16.bf16.f32 > cases.jsonl
    mmafuzz record --path P --in cases.jsonl --oracle external-npz:... --corpus corpus/mmasim/cdna2 --label "..."

Cases are JSONL in `mmafuzz gen`'s layout (a: m×k, b: k×n, c: m×n, row-major raw-bit hex). Dense
paths with IEEE-style formats (f64, f32, tf32, f16, bf16, e5m2, e4m3, e3m2, e2m3, e2m1); not
block-scaled, sparse or fnuz paths (fnuz formats have no -0).
"""
import argparse
import json
import random
import re
import sys

# exponent bits, fraction bits, container bits (tf32 sits in f32's container, low 13 bits 0)
FORMATS = {"f64": (11, 52, 64), "f32": (8, 23, 32), "tf32": (8, 10, 32), "f16": (5, 10, 16), "bf16": (8, 7, 16),
           "e5m2": (5, 2, 8), "e4m3": (4, 3, 8), "e3m2": (3, 2, 8), "e2m3": (2, 3, 8), "e2m1": (2, 1, 8)}


def parse(pid):
    """(m, n, k, a_fmt, b_fmt, c_fmt) of a dense path id (`mma.m16n8k16.f32.f16.f16.f32`,
    `wgmma.m64n8k16.f32.bf16.bf16`, `mfma.m32n32k4.f32.bf16.bf16.f32`)."""
    if ".sp." in pid or ".block" in pid or "fnuz" in pid:
        sys.exit(f"error: {pid}: sparse, block-scaled and fnuz paths are not covered")
    parts = pid.split(".")
    at = next((i for i, p in enumerate(parts) if re.fullmatch(r"m\d+n\d+k\d+", p)), None)
    if at is None or len(parts) < at + 4:
        sys.exit(f"error: {pid} is not a path id with a shape and formats")
    m, n, k = map(int, re.fullmatch(r"m(\d+)n(\d+)k(\d+)", parts[at]).groups())
    d, a, b = parts[at + 1:at + 4]
    c = parts[at + 4] if len(parts) > at + 4 and parts[at + 4] in FORMATS else d
    for f in (a, b, c):
        if f not in FORMATS:
            sys.exit(f"error: {pid}: format {f} is not covered")
    return m, n, k, a, b, c


def bits(fmt, neg, kind):
    """The bit pattern of a zero, the smallest or largest subnormal, the smallest normal, 1 or a
    big power of two."""
    e, f, width = FORMATS[fmt]
    shift = 13 if fmt == "tf32" else 0
    bias = (1 << (e - 1)) - 1
    # "big": 2^(f + 2) (or the largest binade below the top): a subnormal times it is normal.
    big = min(bias + f + 2, (1 << e) - 2)
    mag = {"zero": 0, "min_sub": 1 << shift, "max_sub": ((1 << f) - 1) << shift, "min_normal": 1 << (f + shift),
           "one": bias << (f + shift), "big": big << (f + shift)}[kind]
    sign = 1 << (f + e + shift) if fmt not in ("e3m2", "e2m3", "e2m1") else 1 << (e + f)
    return (sign if neg else 0) | mag, width


def hexes(vals, fmt):
    width = FORMATS[fmt][2]
    digits = 1 if fmt == "e2m1" else width // 4
    return [format(v, f"0{digits}x") for v in vals]


def tile(rng, t, m, n, k, a, b, c):
    """Tile t: the families take turns (t mod 7)."""
    def draw(fmt, zero_share):
        kind = "zero" if rng.random() < zero_share else rng.choice(["min_sub", "max_sub", "min_sub", "min_normal", "one", "big"])
        return bits(fmt, rng.random() < 0.5, kind)[0]
    zeros = rng.choice([0.5, 0.75, 0.9])
    av = [draw(a, zeros) for _ in range(m * k)]
    bv = [draw(b, zeros) for _ in range(k * n)]
    cv = [draw(c, 0.4) for _ in range(m * n)]
    family = t % 7
    if family in (1, 2, 3, 4):
        # Every product a zero (or a subnormal times 1) of one sign, the tile's: A[i][kk] is
        # ±0 or a ±subnormal with one sign per kk, B[kk][j] ±1 or ± the smallest normal of the
        # sign that makes each product's sign the target. Under exact arithmetic the sum is a
        # zero (or tiny) of that sign; an adder that flushes operands to +0 changes the products'
        # signs, one that keeps them does not. C is a zero or subnormal of either sign.
        # Or B of the target sign throughout (A's zeros of either sign): products that an adder
        # flushing operands to +0 makes all of B's sign, and one keeping them mixes.
        target, b_signed = family in (1, 3), family in (1, 2)
        for kk in range(k):
            neg_a = rng.random() < 0.5
            kind_a = rng.choice(["zero", "zero", "min_sub", "max_sub"])
            for i in range(m):
                av[i * k + kk] = bits(a, neg_a, kind_a)[0]
            for j in range(n):
                bv[kk * n + j] = bits(b, target if b_signed else neg_a != target, rng.choice(["one", "min_normal"]))[0]
        cv = [bits(c, rng.random() < 0.5, rng.choice(["zero", "zero", "min_sub", "max_sub"]))[0] for _ in range(m * n)]
    elif family == 6:
        # A sum that cancels into the subnormal range: A[i][0]·B[0][j] = ±1 · ±(b's smallest
        # normal plus one unit) against C = ∓ b's smallest normal (where C's format holds it as
        # a normal), leaving ± one unit, which a flushing accumulator makes a zero of its sign;
        # every later product a zero of the tile's sign (B of that sign, A's zeros of either).
        target = bool(t // 7 % 2)
        e_b, f_b, _ = FORMATS[b]
        e_c, f_c, _ = FORMATS[c]
        lowest = 2 - (1 << (e_b - 1))  # b's smallest normal exponent
        field = lowest + (1 << (e_c - 1)) - 1  # that exponent in C's format
        shift_b = 13 if b == "tf32" else 0
        for kk in range(1, k):
            neg_a = rng.random() < 0.5
            for i in range(m):
                av[i * k + kk] = bits(a, neg_a, "zero")[0]
            for j in range(n):
                bv[kk * n + j] = bits(b, target, "one")[0]
        neg_rows = [rng.random() < 0.5 for _ in range(m)]
        neg_cols = [rng.random() < 0.5 for _ in range(n)]
        for i in range(m):
            av[i * k] = bits(a, neg_rows[i], "one")[0]
        for j in range(n):
            bv[j] = bits(b, neg_cols[j], "min_normal")[0] | (1 << shift_b)
        if 1 <= field < (1 << e_c) - 1:
            shift_c = 13 if c == "tf32" else 0
            for i in range(m):
                for j in range(n):
                    cv[i * n + j] = bits(c, not (neg_rows[i] != neg_cols[j]), "zero")[0] | (field << (f_c + shift_c))
    elif family == 5:
        # Every product zero but A[i][0]·B[0][j] = ±1·±1 (or ±1·±min normal), and C = -that
        # product exactly: an exact zero sum, whose sign the rounding and the zero rule decide.
        for i in range(m):
            for kk in range(k):
                if kk and av[i * k + kk] & ~bits(a, True, "zero")[0]:
                    av[i * k + kk] = bits(a, rng.random() < 0.5, "zero")[0]
            av[i * k] = bits(a, rng.random() < 0.5, "one")[0]
        for j in range(n):
            bv[j] = bits(b, rng.random() < 0.5, "one")[0]
        for i in range(m):
            for j in range(n):
                neg = (av[i * k] != bits(a, False, "one")[0]) != (bv[j] != bits(b, False, "one")[0])
                cv[i * n + j] = bits(c, not neg, "one")[0]
    return {"a_fmt": a, "b_fmt": b, "c_fmt": c, "m": m, "n": n, "k": k,
            "a": hexes(av, a), "b": hexes(bv, b), "c": hexes(cv, c)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", required=True)
    ap.add_argument("--tiles", type=int, default=56)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    m, n, k, a, b, c = parse(args.path)
    rng = random.Random(f"{args.seed}:{args.path}")
    for t in range(args.tiles):
        case = tile(rng, t, m, n, k, a, b, c)
        if a == b:
            del case["b_fmt"]
        print(json.dumps(case, separators=(",", ":")))


if __name__ == "__main__":
    main()
