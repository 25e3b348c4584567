#!/usr/bin/env python3
"""Probe tiles for the f16-output mma.sync path (mma.m16n8k16.f16.f16.f16.f16) where the sum of
an element is small: products near f16's subnormal quantum (2^-24) and its half, with tiny
terms far below them (2^-30 ... 2^-50), both signs, C zero or a small f16. The GPU fuzz target
found such an element (an exact value just above half a quantum that the H100 rounds to zero);
these tiles, recorded on the GPU, tell the candidate models apart.

    python3 scripts/probe-f16-small-sums.py COUNT SEED [M [K]] > probes.jsonl

M = 16 (mma.m16n8k16.f16.f16.f16.f16, the default) or 64 (wgmma.m64n8k16.f16.f16.f16);
K = 16 (default) or 8 (mma.m16n8k8.f16.f16.f16.f16).
"""
import json, random, struct, sys

import numpy as np


def f16_bits(x):
    return int(np.array(x, dtype=np.float16).view(np.uint16))


def f16(bits):
    return float(np.array(bits, dtype=np.uint16).view(np.float16))


def a_for(rng, lead):
    """An f16 value (bits) whose exponent leaves room for b to bring a product to 2^lead."""
    lo, hi = max(-14, lead - 15), min(15, lead + 24)
    ea = rng.randint(lo, hi) if lo <= hi else -14
    sig = rng.choice([1.0, 1.5, 1.25, 1.0 + 2 ** -10, 2 - 2 ** -10, 1.0 + rng.randint(0, 1023) / 1024])
    return f16_bits(rng.choice([1, -1]) * sig * 2.0 ** ea)


def tile(rng, m, k=16):
    n = 8
    a = [[0] * k for _ in range(m)]
    b = [[0] * n for _ in range(k)]
    c = [[0] * n for _ in range(m)]
    # Each row of A has three nonzero places (one main product near the f16 quantum or above it,
    # tiny ones far below); B's values at those places bring every element's products there.
    # Places are shared between rows, so elements also see other rows' values: that is fine.
    for i in range(m):
        main = rng.choice([-25, -26, -24, -23, -27, -20, -16, -12, -8])
        tiny = rng.randint(main - 26, main - 4)
        for idx, lead in zip(rng.sample(range(k), 3), [main, tiny, rng.choice([tiny, main - 1, main - 30])]):
            x = a_for(rng, lead)
            a[i][idx] = x
            for j in range(n):
                if b[idx][j]:
                    continue
                target = rng.choice([1.0, 1.0 + 2 ** -10, 2 - 2 ** -10, 1.5]) * 2.0 ** lead
                v = np.float16(target / abs(f16(x)))
                b[idx][j] = f16_bits(rng.choice([1, -1]) * float(v)) if np.isfinite(v) else 0
    for i in range(m):
        for j in range(n):
            r = rng.random()
            if r < 0.6:
                c[i][j] = 0
            elif r < 0.8:
                c[i][j] = rng.randint(1, 3) | (0x8000 if rng.random() < 0.5 else 0)  # tiny subnormal
            else:
                c[i][j] = f16_bits(rng.choice([1, -1]) * 2.0 ** rng.randint(-24, -14))
    hexs = lambda rows: ["%04x" % v for row in rows for v in row]
    return {"a_fmt": "f16", "c_fmt": "f16", "m": m, "n": n, "k": k, "a": hexs(a), "b": hexs(b), "c": hexs(c)}


def main():
    count, seed = int(sys.argv[1]), int(sys.argv[2])
    m = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    k = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    rng = random.Random(seed)
    import warnings
    warnings.simplefilter("ignore")
    for _ in range(count):
        print(json.dumps(tile(rng, m, k), separators=(",", ":")))


if __name__ == "__main__":
    main()
