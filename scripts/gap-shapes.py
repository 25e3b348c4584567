#!/usr/bin/env python3
"""Shapes to record for kernels the models do not run yet, from traces of PyTorch's calls.

    python3 scripts/gap-shapes.py FIT.json HELD.json --seed S [--per 40] [--max-mnk 5e7] \
        --kernel PATH_PART:CALLS:REGEX [--kernel ...] TRACE.tsv.gz [TRACE ...]

`mmafuzz library check-predict` ends with the logged kernels the models refuse. Each `--kernel`
names one: a part of the path (`f64`, `f32.f32`, `bf16.bf16.bf16`), the calls (`mm,addmm,
linear_bias`) and a regular expression over cuBLASLt's algorithm line (`algoId=12 .*numSplitsK=-1`).
FIT.json gets up to --per traced shapes per path, call and kernel (cuBLASLt's heuristic picks
the same kernel for the same shape), to fit a rule on; HELD.json gets --per fresh shapes per
path, call and kernel near the traced ones (a traced shape with each dimension above 2 scaled
by a log-uniform factor in 1/2..2, within the range of the traced ones; drawn with --seed, half of
them with planted specials), to check the rule on after it is fitted; some of these land on
other kernels, and the record of each GEMM names the kernel it ran. Both are
`scripts/torch-lib.py record ... --shapes FILE` input (F.linear with or without a bias:
`linear_bias`, `linear`).
"""
import argparse, gzip, json, math, re

import numpy as np

BETA_BIAS = {"mm": (0, 0), "addmm": (1, 0), "linear_bias": (0, 1), "linear": (0, 0)}


def traced(files, kernels):
    """(path, call, kernel index) -> traced shapes, from the trace files."""
    out = {}
    for fn in files:
        path, cfg = None, {}
        with gzip.open(fn, "rt") if fn.endswith(".gz") else open(fn) as f:
            next(f)
            for line in f:
                c = line.rstrip("\n").split("\t")
                if c[0] == "path":
                    path, cfg = c[1], {}
                elif c[0] == "cfg":
                    cfg[c[1]] = c[2]
                elif path and c[0] in BETA_BIAS and len(c) >= 5:
                    for ki, (part, calls, rx) in enumerate(kernels):
                        if part in path and c[0] in calls and rx.search(cfg.get(c[4], "")):
                            out.setdefault((path, c[0], ki), set()).add((int(c[1]), int(c[2]), int(c[3])))
    return out


def job(path, call, shape, values=None):
    beta, bias = BETA_BIAS[call]
    j = {"path": path, "m": shape[0], "n": shape[1], "k": shape[2], "beta": beta}
    if bias:
        j["bias"] = 1
    elif call == "linear":
        j["linear"] = 1
    if values:
        j["values"] = values
    return j


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fit")
    ap.add_argument("held")
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--per", type=int, default=40)
    ap.add_argument("--max-mnk", type=float, default=5e7)
    ap.add_argument("--kernel", action="append", required=True)
    a = ap.parse_args()
    kernels = []
    for spec in a.kernel:
        part, calls, rx = spec.split(":", 2)
        kernels.append((part, calls.split(","), re.compile(rx)))
    rng = np.random.default_rng(a.seed)
    fit, held = [], []
    for (path, call, ki), shapes in sorted(traced(a.traces, kernels).items()):
        shapes = sorted(s for s in shapes if s[0] * s[1] * s[2] <= a.max_mnk and s[0] * s[1] <= a.max_mnk)
        if not shapes:
            continue
        pick = rng.choice(len(shapes), min(a.per, len(shapes)), replace=False)
        fit += [job(path, call, shapes[i]) for i in sorted(pick)]
        lo = [min(s[d] for s in shapes) for d in range(3)]
        hi = [max(s[d] for s in shapes) for d in range(3)]
        drawn, tries = 0, 0
        # A kernel traced at one shape only (or a narrow range) may have no fresh shape near it.
        while drawn < a.per and tries < 1000 * a.per:
            tries += 1
            # A traced shape, each dimension above 2 scaled by a log-uniform factor in 1/2..2
            # (kept within the traced range); dimensions of 1 or 2 stay, as GEMV-like kernels need them.
            t = shapes[rng.integers(len(shapes))]
            s = tuple(x if x <= 2 else min(hi[d], max(lo[d], int(round(x * math.exp(rng.uniform(-math.log(2), math.log(2))))))) for d, x in enumerate(t))
            if s in shapes or s[0] * s[1] * s[2] > a.max_mnk or s[0] * s[1] > a.max_mnk:
                continue
            held.append(job(path, call, s, "special" if drawn % 2 else None))
            drawn += 1
        print(f"{path} {call} kernel {ki + 1}: {len(shapes)} traced shapes, m {lo[0]}..{hi[0]} n {lo[1]}..{hi[1]} k {lo[2]}..{hi[2]}"
              + ("" if drawn == a.per else f"; only {drawn} fresh shapes near them"))
    for fn, jobs in ((a.fit, fit), (a.held, held)):
        with open(fn, "w") as f:
            json.dump(jobs, f, separators=(",", ":"))
        print(f"{fn}: {len(jobs)} GEMMs")


if __name__ == "__main__":
    main()
